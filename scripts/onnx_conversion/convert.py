"""Convert a BERT-family encoder (BERT-Japanese, XLM-R, ModernBERT) to a validated ONNX model and
install it: the pipeline behind `oboyu models pull` / `oboyu models convert`.

    python scripts/onnx_conversion/convert.py MODEL [--revision REV] [--name ID]
        [--quantization dynamic|static|none] [--calibration PATH] [--calibration-method minmax|entropy|percentile]
        [--fp16] [--eval-set DIR] [--min-cosine 0.98] [--no-optimize] [--root DIR]

MODEL is a Hugging Face id (fetched into the hub cache; HF_HUB_OFFLINE=1 uses the cache only) or a
local transformers folder. Steps: fetch, tokenizer check against transformers, ONNX export checked
against PyTorch (mean cosine >= 0.9999), onnxruntime fusions, INT8 quantization, the gate (mean
cosine with fp32 >= --min-cosine; Recall@10 on --eval-set within 0.03 of fp32's), install with a
manifest. Prints the manifest as JSON. Needs torch and transformers (pip install torch==2.13.0
'oboyu[convert]').
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.models.catalogue import catalogue_entry
from oboyu.models.convert.pipeline import Options, convert


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a Hugging Face model id or a local model folder")
    parser.add_argument("--revision", help="hub branch, tag or commit")
    parser.add_argument("--name", help="the installed model's id (default: the hub id or folder name)")
    parser.add_argument("--quantization", choices=["dynamic", "static", "none"], default="dynamic")
    parser.add_argument("--calibration", type=Path, help="texts for static quantization (.txt/.md, .jsonl(.gz))")
    parser.add_argument("--calibration-method", choices=["minmax", "entropy", "percentile"], default="minmax")
    parser.add_argument("--fp16", action="store_true", help="also install a float16 variant for GPUs")
    parser.add_argument("--eval-set", type=Path, help="docs.jsonl.gz + queries.jsonl folder, for Recall@10")
    parser.add_argument("--min-cosine", type=float, default=0.98)
    parser.add_argument("--no-optimize", action="store_true")
    parser.add_argument("--root", type=Path, help="install under this folder (default: oboyu's models dir)")
    args = parser.parse_args()
    options = Options(quantization=args.quantization, calibration=args.calibration,
                      calibration_method=args.calibration_method, fp16=args.fp16, eval_set=args.eval_set,
                      min_cosine=args.min_cosine, optimize=not args.no_optimize, name=args.name)
    started = time.perf_counter()
    try:
        manifest = convert(args.model, args.revision, options,
                           lambda step: print(f"{time.perf_counter() - started:7.1f}s  {step}", file=sys.stderr),
                           catalogue_entry=catalogue_entry(args.model), root=args.root)
    except OboyuError as exc:
        print(f"convert: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(manifest, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
