"""The first, approximate pass of a vector search over the index's int8 codes (`IndexArrays`):
one query against every row in one integer matrix product, with a bound on each row's error, so
that only the rows the bound cannot rule out are scored exactly.

The product runs in onnxruntime's MatMulInteger (uint8 query x int8 codes; the graph is kept with
the arrays, `arrays_build.scan_model`), whose kernels use the CPU's integer dot products (AVX-512
VNNI, AVX2, ARM's dot product): 11 ms for a million rows of 384 here, against 67 ms for NumPy's
float32 product and 170 ms for NumPy's int8 one. The query is held to 7 bits (codes 1..127 around
64) so that AVX2's pairwise 16-bit sums of uint8 x int8 can never saturate, and the product is
exact on every CPU.
"""

from __future__ import annotations

import numpy as np

from oboyu.index.arrays import QUERY_LIMIT, ZERO_POINT, IndexArrays

ROUNDING = 1e-5  # float32 arithmetic in the bound and the exact scores, with room to spare


class CodeScan:
    def __init__(self, arrays: IndexArrays, threads: int | None = None):
        import onnxruntime as ort  # imported by the first vector search only

        self.arrays = arrays
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(arrays.scan_model, options, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged scan.onnx (onnxruntime raises its own kinds): the graph made anew
            from oboyu.index.arrays_build import scan_model

            self.session = ort.InferenceSession(scan_model(arrays.codes.shape[0]), options, providers=["CPUExecutionProvider"])
        self.codes = np.ascontiguousarray(arrays.codes)  # a memory map, as is: never copied

    def approximate(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(score, bound) a row: the row's exact cosine lies within score ± bound."""
        arrays = self.arrays
        query = query.astype(np.float64)
        step = float(np.abs(query).max()) / QUERY_LIMIT or 1.0
        code = np.rint(query / step)
        (product,) = self.session.run(None, {"query": (code + ZERO_POINT).astype(np.uint8)[None, :], "codes": self.codes})
        # q.v = q.centre + step*code.(scale*codes) + step*code.(residual error) + (q - step*code).residual
        exact_product = product[0] - ZERO_POINT * arrays.code_sum
        score = (step * arrays.code_scale) * exact_product.astype(np.float32) + np.float32(query @ arrays.centre)
        bound = (float(np.linalg.norm(query - step * code)) * arrays.residual_norm
                 + step * float(np.linalg.norm(code)) * arrays.code_error + ROUNDING)
        return score, bound


def candidates(score: np.ndarray, bound: np.ndarray, eligible: np.ndarray | None, n: int) -> np.ndarray:
    """The rows that may be among the n best eligible ones (all rows when `eligible` is None): n
    rows are sure to score at least the n-th best lower bound, so any row whose upper bound falls
    below it is not."""
    if eligible is None:
        low, high, rows = score - bound, score + bound, None
    else:
        rows = np.flatnonzero(eligible)
        low, high = score[rows] - bound[rows], score[rows] + bound[rows]
    if len(low) <= n:
        return np.arange(len(low)) if rows is None else rows
    floor = np.partition(low, len(low) - n)[len(low) - n]
    kept = np.flatnonzero(high >= floor)
    return kept if rows is None else rows[kept]
