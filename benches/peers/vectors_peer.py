#!/usr/bin/env python3
"""Peer for benches/src/bin/vectors.rs: faiss-cpu IndexFlatIP (exact inner-product search),
hnswlib and USearch (HNSW, inner product, M = 16, ef_construction = 200, searched at ef = 50, 100
and 200; USearch with f32 storage, its `connectivity`, `expansion_add` and `expansion_search`).

Reads the .fvecs files the Rust bench wrote (per vector: an int32 dimension, then the float32
values, little-endian) and measures
  - faiss single: one query per call with faiss limited to 1 thread (its fastest per-query
    setting on these machines, see shared/reference/vectors/README.md); batch: all queries in one
    call on every core;
  - hnswlib build on every core; single: one query per call, 1 thread; batch: knn_query on all
    queries, every core. Above --hnswlib-max rows hnswlib is not built on everything (it does not
    finish 1M rows in 10 minutes on 2 cores): it is built on the first 100,000 rows only, to
    measure its insert rate, and not searched.
Peak memory: growth of VmHWM (reset through /proc/self/clear_refs) over the RSS before each build.
  - USearch likewise (`Index.add` and `Index.search` with `threads`), under the same cap.
Writes result ids as little-endian int64, queries x k, to OUT/faiss_{single,batch}.i64,
OUT/hnswlib_{single,batch}_<ef>.i64 and OUT/usearch_{single,batch}_<ef>.i64, and prints one JSON
object on stdout.
"""

import argparse
import json
import os
import sys
import time

import faiss
import hnswlib
import numpy as np

try:
    import usearch
    from usearch.index import Index as USearchIndex
except ImportError:  # the bench prints hnswlib alone and says why
    usearch = None

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_EFS = (50, 100, 200)
RATE_SAMPLE = 100_000


def read_fvecs(path: str) -> np.ndarray:
    raw = np.fromfile(path, dtype="<i4")
    if raw.size == 0:
        return np.zeros((0, 0), dtype=np.float32)
    dim = int(raw[0])
    rows = raw.reshape(-1, dim + 1)
    if not (rows[:, 0] == dim).all():
        sys.exit(f"{path}: vectors of mixed dimension")
    return np.ascontiguousarray(rows[:, 1:]).view("<f4").astype(np.float32, copy=False)


def status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Peak:
    def __init__(self) -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        self.base = status_kib("VmRSS") / 1024.0

    def growth_mib(self) -> float:
        return status_kib("VmHWM") / 1024.0 - self.base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", required=True, help="folder for the result-id files")
    parser.add_argument("--hnswlib-max", type=int, default=200_000)
    args = parser.parse_args()

    data = read_fvecs(args.data)
    queries = read_fvecs(args.queries)
    n, dim = data.shape
    all_threads = os.cpu_count() or 1

    peak = Peak()
    start = time.perf_counter()
    index = faiss.IndexFlatIP(dim)
    index.add(data)
    build_s = time.perf_counter() - start

    faiss.omp_set_num_threads(1)
    for q in queries[:3]:  # warm-up, as the Rust side does
        index.search(q[None, :], args.k)
    single = np.empty((len(queries), args.k), dtype="<i8")
    start = time.perf_counter()
    for i in range(len(queries)):
        _, ids = index.search(queries[i : i + 1], args.k)
        single[i] = ids[0]
    qps_single = len(queries) / (time.perf_counter() - start)

    faiss.omp_set_num_threads(all_threads)
    start = time.perf_counter()
    _, batch = index.search(queries, args.k)
    qps_batch = len(queries) / (time.perf_counter() - start)
    faiss_peak = peak.growth_mib()
    single.tofile(os.path.join(args.out, "faiss_single.i64"))
    batch.astype("<i8").tofile(os.path.join(args.out, "faiss_batch.i64"))
    faiss_bytes = int(index.ntotal) * index.d * 4
    del index

    searched = n <= args.hnswlib_max
    build_rows = n if searched else min(n, RATE_SAMPLE)
    print(f"hnswlib: building {build_rows} of {n} rows on {all_threads} threads", file=sys.stderr)
    peak = Peak()
    h = hnswlib.Index(space="ip", dim=dim)
    h.init_index(max_elements=build_rows, M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION, random_seed=100)
    h.set_num_threads(all_threads)
    start = time.perf_counter()
    h.add_items(data[:build_rows], np.arange(build_rows))
    h_build_s = time.perf_counter() - start
    runs = []
    if searched:
        for ef in HNSW_EFS:
            h.set_ef(ef)
            h.set_num_threads(1)
            for q in queries[:3]:
                h.knn_query(q[None, :], k=args.k)
            hs = np.empty((len(queries), args.k), dtype="<i8")
            start = time.perf_counter()
            for i in range(len(queries)):
                labels, _ = h.knn_query(queries[i : i + 1], k=args.k)
                hs[i] = labels[0]
            h_single = len(queries) / (time.perf_counter() - start)
            h.set_num_threads(all_threads)
            start = time.perf_counter()
            labels, _ = h.knn_query(queries, k=args.k)
            h_batch = len(queries) / (time.perf_counter() - start)
            hs.tofile(os.path.join(args.out, f"hnswlib_single_{ef}.i64"))
            labels.astype("<i8").tofile(os.path.join(args.out, f"hnswlib_batch_{ef}.i64"))
            runs.append({"ef": ef, "qps_single": h_single, "qps_batch": h_batch})
    hnsw = {
        "version": getattr(hnswlib, "__version__", "0.8.0"),
        "searched": searched,
        "rows_built": build_rows,
        "build_s": h_build_s,
        "inserts_per_s": build_rows / h_build_s,
        "bytes": int(h.index_file_size()),
        "peak_mib": peak.growth_mib(),
        "runs": runs,
    }
    del h
    usearch_result = None
    if usearch is not None:
        usearch_result = usearch_run(data, queries, args, all_threads, searched, build_rows)
    print(
        json.dumps(
            {
                "faiss_version": faiss.__version__,
                "build_s": build_s,
                "qps_single": qps_single,
                "qps_batch": qps_batch,
                "batch_threads": all_threads,
                "bytes": faiss_bytes,
                "peak_mib": faiss_peak,
                "hnswlib": hnsw,
                "usearch": usearch_result,
            }
        )
    )
    return 0


def usearch_run(data, queries, args, all_threads, searched, build_rows) -> dict:
    """USearch: built on every core, searched one query per call on 1 thread and in one call on
    every core, at the same ef values as hnswlib."""
    print(f"usearch: building {build_rows} rows on {all_threads} threads", file=sys.stderr)
    dim = data.shape[1]
    peak = Peak()
    index = USearchIndex(
        ndim=dim,
        metric="ip",
        dtype="f32",
        connectivity=HNSW_M,
        expansion_add=HNSW_EF_CONSTRUCTION,
        expansion_search=HNSW_EFS[0],
    )
    start = time.perf_counter()
    index.add(np.arange(build_rows), data[:build_rows], threads=all_threads)
    build_s = time.perf_counter() - start
    runs = []
    if searched:
        for ef in HNSW_EFS:
            index.expansion_search = ef
            for q in queries[:3]:
                index.search(q, args.k, threads=1)
            single = np.empty((len(queries), args.k), dtype="<i8")
            start = time.perf_counter()
            for i in range(len(queries)):
                single[i] = index.search(queries[i], args.k, threads=1).keys
            qps_single = len(queries) / (time.perf_counter() - start)
            start = time.perf_counter()
            batch = index.search(queries, args.k, threads=all_threads).keys
            qps_batch = len(queries) / (time.perf_counter() - start)
            single.tofile(os.path.join(args.out, f"usearch_single_{ef}.i64"))
            np.asarray(batch).astype("<i8").tofile(os.path.join(args.out, f"usearch_batch_{ef}.i64"))
            runs.append({"ef": ef, "qps_single": qps_single, "qps_batch": qps_batch})
    return {
        "version": usearch.__version__,
        "searched": searched,
        "rows_built": build_rows,
        "build_s": build_s,
        "inserts_per_s": build_rows / build_s,
        "bytes": int(index.memory_usage),
        "peak_mib": peak.growth_mib(),
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
