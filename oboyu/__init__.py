"""oboyu (覚ゆ): Japanese-first semantic search over the documents on your own machine."""

import os

# Nothing leaves the machine. onnxruntime (1.31 on Linux) otherwise writes a device id and an
# event store under ~/.cache/Microsoft and ~/.ses, and may upload telemetry; the variable must
# be set before onnxruntime is imported, which every oboyu module does after this one.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

__version__ = "0.1.0"
