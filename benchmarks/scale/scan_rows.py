"""How the exact vector search's first pass grows with rows: one query against every row's int8
codes (`oboyu.search.int8_scan`), at a real index's rows and at that many times over.

    python -m benchmarks.scale.scan_rows ARRAYS_FOLDER [--times 10] [--queries 8]

ARRAYS_FOLDER is one generation's search arrays (`NAME.duckdb.arrays/GENERATION/`). Its codes,
scales and bounds are tiled --times over in memory (no index that large is made), and each query
(a row's vector with noise, normalised) is timed through the same steps as `CodeScan` and
`candidates` take them: the integer product, the scores and bounds, the rows the bound cannot
rule out for the best 100. Medians over the queries after two warm-ups; the process's peak memory.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks import harness
from oboyu.index.arrays import QUERY_LIMIT, ZERO_POINT
from oboyu.index.arrays_build import scan_model
from oboyu.search.int8_scan import ROUNDING, candidates

WARMUPS = 2


def main() -> None:
    p = harness.parser(__doc__)
    p.add_argument("folder", type=Path)
    p.add_argument("--times", type=int, default=10)
    p.add_argument("--queries", type=int, default=8)
    args = p.parse_args()
    import onnxruntime as ort

    def tiled(name: str) -> np.ndarray:
        kept = np.load(args.folder / f"{name}.npy", mmap_mode="r")
        return np.concatenate([kept] * args.times, axis=-1) if args.times > 1 else np.asarray(kept)

    codes, scale, code_sum = tiled("codes"), tiled("code_scale"), tiled("code_sum")
    residual, error = tiled("residual_norm"), tiled("code_error")
    centre, vectors = np.load(args.folder / "centre.npy"), np.load(args.folder / "vectors.npy", mmap_mode="r")
    session = ort.InferenceSession(scan_model(codes.shape[0]), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    steps: dict[str, list[float]] = {"product": [], "scores and bounds": [], "candidates": [], "first pass": []}
    kept_rows = []
    for i in range(args.queries + WARMUPS):
        query = np.asarray(vectors[rng.integers(len(vectors))], dtype=np.float64) + rng.normal(0, 0.02, codes.shape[0])
        query /= np.linalg.norm(query)
        t0 = time.perf_counter()
        step = float(np.abs(query).max()) / QUERY_LIMIT
        code = np.rint(query / step)
        (product,) = session.run(None, {"query": (code + ZERO_POINT).astype(np.uint8)[None, :], "codes": codes})
        t1 = time.perf_counter()
        score = (step * scale) * (product[0] - ZERO_POINT * code_sum).astype(np.float32) + np.float32(query @ centre)
        bound = float(np.linalg.norm(query - step * code)) * residual + step * float(np.linalg.norm(code)) * error + ROUNDING
        t2 = time.perf_counter()
        kept = candidates(score, bound, None, 100)
        t3 = time.perf_counter()
        if i >= WARMUPS:
            for name, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                steps[name].append(seconds * 1000)
            kept_rows.append(len(kept))
    medians = {name: round(statistics.median(ms), 1) for name, ms in steps.items()}
    print(f"{codes.shape[1]:,} rows ({codes.nbytes / 1e9:.2f} GB of codes), {harness.machine()}")
    print(", ".join(f"{name} {ms} ms" for name, ms in medians.items()),
          f"(medians of {args.queries}); rows rescored: median {statistics.median(kept_rows):.0f}; "
          f"peak {harness.peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
