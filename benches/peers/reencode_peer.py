#!/usr/bin/env python3
"""Peer for benches/src/bin/footprint.rs: JPEG re-encoding with Pillow.

Reads every .jpg in --dir (the pages the Rust bench wrote), and --repeat times decodes each,
resizes it by --scale with Lanczos and encodes it at --quality with 4:2:0 chroma (as memdb does),
timing the whole loop. Prints one JSON object on stdout:

  {"files": N, "input_bytes": B, "output_bytes": O, "seconds": S, "mb_per_s": B*repeat/S/1e6,
   "pillow": "<version>"}
"""

import argparse
import io
import json
import os
import sys
import time

from PIL import Image
import PIL


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--quality", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".jpg"))
    blobs = [open(f, "rb").read() for f in files]
    subsampling = 2  # 4:2:0
    out_bytes = 0
    start = time.perf_counter()
    for _ in range(args.repeat):
        out_bytes = 0
        for data in blobs:
            image = Image.open(io.BytesIO(data))
            image.load()
            w = max(1, round(image.width * args.scale))
            h = max(1, round(image.height * args.scale))
            if (w, h) != image.size:
                image = image.resize((w, h), Image.LANCZOS)
            buf = io.BytesIO()
            image.save(buf, "JPEG", quality=args.quality, subsampling=subsampling)
            out_bytes += buf.tell()
    seconds = time.perf_counter() - start
    input_bytes = sum(len(b) for b in blobs)
    print(json.dumps({
        "files": len(blobs), "input_bytes": input_bytes, "output_bytes": out_bytes,
        "seconds": seconds, "mb_per_s": input_bytes * args.repeat / seconds / 1e6,
        "pillow": PIL.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
