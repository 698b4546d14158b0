#!/usr/bin/env python3
"""Peer for benches/src/bin/encode.rs: sentence-transformers all-MiniLM-L6-v2 on CPU, and the
same weights through ONNX Runtime.

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

When onnxruntime can be imported, the loaded model's transformer is exported with
torch.onnx.export (opset 17, dynamic batch and sequence axes) into a temporary folder and run by an
onnxruntime InferenceSession (CPU, --threads intra-op threads, graph optimizations on), with the
same tokenizer, the same length-sorted batches as sentence-transformers' encode, mean pooling and
L2 normalisation in numpy; its runs and its agreement with the torch vectors (min cosine) go under
"onnx" (or the reason it did not run under "onnx_skipped").
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
    vectors_first = None
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        model.encode(texts[:64], batch_size=batch_size, normalize_embeddings=True)
        t0 = time.perf_counter()
        vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
        seconds = time.perf_counter() - t0
        assert vectors.shape == (len(texts), 384), vectors.shape
        if not runs:
            vectors_first = vectors
            if args.vectors_out:
                vectors.astype("<f4").tofile(args.vectors_out)
        runs.append(
            {
                "batch_size": batch_size,
                "texts": len(texts),
                "seconds": seconds,
                "sentences_per_s": len(texts) / seconds,
            }
        )

    onnx = None
    onnx_skipped = None
    try:
        if vectors_first is not None:
            onnx = onnx_runs(model, texts, args, vectors_first)
    except ImportError as e:
        onnx_skipped = f"onnxruntime not importable: {e}"
    except Exception as e:  # an export or runtime failure is reported, not fatal to the torch runs
        onnx_skipped = f"{type(e).__name__}: {e}"

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
            "onnx": onnx,
            "onnx_skipped": onnx_skipped,
        },
        sys.stdout,
    )
    print()
    return 0


def onnx_runs(model, texts, args, torch_vectors) -> dict:
    """Exports the model's transformer to ONNX and encodes `texts` with ONNX Runtime at each batch
    size; returns the runs, versions, export and session-load times and the min cosine against
    the torch vectors."""
    import tempfile

    import numpy as np
    import onnxruntime as ort
    import torch

    transformer = model[0]
    bert = transformer.auto_model.eval()
    tokenizer = transformer.tokenizer
    max_len = transformer.max_seq_length

    def tokenize(batch):
        return tokenizer(batch, padding=True, truncation=True, max_length=max_len, return_tensors="np")

    folder = tempfile.mkdtemp(prefix="memdb-onnx-")
    path = os.path.join(folder, "minilm.onnx")
    sample = tokenize(texts[:2])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    inputs = tuple(torch.from_numpy(sample[n].astype("int64")) for n in names)
    export_start = time.perf_counter()
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        try:
            torch.onnx.export(
                bert, inputs, path, input_names=names, output_names=["last_hidden_state"],
                dynamic_axes=axes, opset_version=17, dynamo=False,
            )
        except TypeError:  # a torch without the dynamo switch
            torch.onnx.export(
                bert, inputs, path, input_names=names, output_names=["last_hidden_state"],
                dynamic_axes=axes, opset_version=17,
            )
    export_s = time.perf_counter() - export_start

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    load_start = time.perf_counter()
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    load_s = time.perf_counter() - load_start
    wanted = {i.name for i in session.get_inputs()}

    def encode(batch_texts):
        enc = tokenize(batch_texts)
        feed = {n: enc[n].astype("int64") for n in names if n in wanted}
        hidden = session.run(None, feed)[0]
        mask = enc["attention_mask"].astype(np.float32)[:, :, None]
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    # sentence-transformers' order: longest first, batches cut from that order.
    order = np.argsort([-len(t) for t in texts], kind="stable")

    def encode_all(batch_size):
        out = np.empty((len(texts), 384), dtype=np.float32)
        for at in range(0, len(texts), batch_size):
            ids = order[at : at + batch_size]
            out[ids] = encode([texts[i] for i in ids])
        return out

    runs = []
    first = None
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        encode(texts[:64])
        t0 = time.perf_counter()
        vectors = encode_all(batch_size)
        seconds = time.perf_counter() - t0
        if first is None:
            first = vectors
        runs.append(
            {"batch_size": batch_size, "texts": len(texts), "seconds": seconds, "sentences_per_s": len(texts) / seconds}
        )
    cosines = (first * torch_vectors).sum(axis=1)
    return {
        "version": ort.__version__,
        "export_s": export_s,
        "load_s": load_s,
        "threads": args.threads,
        "min_cosine_vs_torch": float(cosines.min()),
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
