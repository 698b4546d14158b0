#!/usr/bin/env python3
"""Peer for benches/src/bin/encode.rs: sentence-transformers all-MiniLM-L6-v2 on CPU.

Reads the texts the Rust bench wrote (a JSON list of strings), encodes them at each batch size
with torch limited to --threads threads, optionally writes the vectors of the first batch size
(--vectors-out, raw little-endian float32) so the bench can compare them with its own, and prints
one JSON object on stdout:

  {"cold_start_s": ..., "load_s": ..., "threads": ..., "versions": {...},
   "runs": [{"batch_size": 32, "texts": 2760, "seconds": ..., "sentences_per_s": ...}, ...],
   "peak_rss_kib": ...}

cold_start_s counts from interpreter start to a loaded model (imports included), load_s only the
SentenceTransformer(...) call. Each run is preceded by an untimed warm-up on 64 texts. Nothing is
fetched from a model hub: the model is loaded from --model with HF_HUB_OFFLINE=1.
"""

import argparse
import json
import os
import resource
import sys
import time

START = time.perf_counter()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", required=True, help="JSON file: a list of strings")
    parser.add_argument("--model", required=True, help="all-MiniLM-L6-v2 folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", default="32,128")
    parser.add_argument(
        "--vectors-out",
        help="write the first run's vectors here as little-endian float32, row-major",
    )
    args = parser.parse_args()

    # Must be set before torch is imported to bound its OpenMP/MKL pools.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

    import torch
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    load_start = time.perf_counter()
    model = SentenceTransformer(args.model, device="cpu")
    loaded = time.perf_counter()

    with open(args.texts, encoding="utf-8") as f:
        texts = json.load(f)

    runs = []
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        model.encode(texts[:64], batch_size=batch_size, normalize_embeddings=True)
        t0 = time.perf_counter()
        vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
        seconds = time.perf_counter() - t0
        assert vectors.shape == (len(texts), 384), vectors.shape
        if args.vectors_out and not runs:
            vectors.astype("<f4").tofile(args.vectors_out)
        runs.append(
            {
                "batch_size": batch_size,
                "texts": len(texts),
                "seconds": seconds,
                "sentences_per_s": len(texts) / seconds,
            }
        )

    json.dump(
        {
            "cold_start_s": loaded - START,
            "load_s": loaded - load_start,
            "threads": torch.get_num_threads(),
            "versions": {
                "python": sys.version.split()[0],
                "torch": torch.__version__,
                "sentence_transformers": sentence_transformers.__version__,
            },
            "runs": runs,
            "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        },
        sys.stdout,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
