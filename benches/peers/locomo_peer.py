#!/usr/bin/env python3
"""Peer retrievers for the locomo bench (benches/src/bin/locomo.rs), on the same items and
questions memdb ranks, following ../shared/reference/README.md:

- dense: sentence-transformers all-MiniLM-L6-v2, exact cosine (normalised embeddings, dot);
- bm25: rank_bm25 BM25Okapi with its defaults over re.findall(r"\\w+", text.lower());
- rrf: reciprocal-rank fusion of the two full rankings, k = 60.

Input (--input): JSON {"conversations": [{"items": [[ext_id, text], ...],
"questions": [text, ...]}, ...]}. Output (stdout): JSON {"conversations": [{"dense": [[ext_id,
...] per question], "bm25": [...], "rrf": [...]}]}, each ranking cut at --depth.
"""

import argparse
import json
import os
import re
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", required=True)
    parser.add_argument("--model", required=True, help="all-MiniLM-L6-v2 folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--depth", type=int, default=20)
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"

    import numpy as np
    import torch
    from rank_bm25 import BM25Okapi
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model, device="cpu")
    with open(args.input, encoding="utf-8") as f:
        data = json.load(f)

    def tokens(text):
        return re.findall(r"\w+", text.lower())

    out = []
    for conv in data["conversations"]:
        ids = [i for i, _ in conv["items"]]
        texts = [t for _, t in conv["items"]]
        questions = conv["questions"]
        item_vecs = model.encode(texts, batch_size=32, normalize_embeddings=True)
        q_vecs = model.encode(questions, batch_size=32, normalize_embeddings=True)
        bm25 = BM25Okapi([tokens(t) for t in texts])
        dense_all, bm25_all, rrf_all = [], [], []
        for q, qv in zip(questions, q_vecs):
            dense_scores = item_vecs @ qv
            # Stable sorts: ties keep item order, as memdb breaks ties by id (item order).
            dense_order = sorted(range(len(ids)), key=lambda i: -dense_scores[i])
            bm25_scores = bm25.get_scores(tokens(q))
            bm25_order = sorted(range(len(ids)), key=lambda i: -bm25_scores[i])
            fused = {}
            for order in (dense_order, bm25_order):
                for rank, i in enumerate(order):
                    fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank + 1)
            rrf_order = sorted(range(len(ids)), key=lambda i: -fused[i])
            dense_all.append([ids[i] for i in dense_order[: args.depth]])
            bm25_all.append([ids[i] for i in bm25_order[: args.depth]])
            rrf_all.append([ids[i] for i in rrf_order[: args.depth]])
        out.append({"dense": dense_all, "bm25": bm25_all, "rrf": rrf_all})
        print(f"peer: conversation {len(out)} done", file=sys.stderr)
    json.dump({"conversations": out}, sys.stdout)


if __name__ == "__main__":
    main()
