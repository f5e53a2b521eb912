"""oboyu (覚ゆ): Japanese-first semantic search over the documents on your own machine."""

import os

# Nothing leaves the machine. onnxruntime (1.31 on Linux) otherwise writes a device id and an
# event store under ~/.cache/Microsoft and ~/.ses, and may upload telemetry; the variable must
# be set before onnxruntime is imported, which every oboyu module does after this one.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
# NumPy's OpenBLAS threads wait spinning after each product and take cores from onnxruntime's;
# oboyu's NumPy work is small (a query against the index's vectors), so one thread is faster:
# hybrid query p50 15.7-16.7 -> 13.5-14.1 ms, p95 25-28 -> 17 ms on manpages-ja. Must precede
# NumPy's import; a value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
