"""oboyu's benchmarks, one harness (`harness.py`): run one as `python -m benchmarks.GROUP.NAME` from the
repository's root (README.md lists them)."""
