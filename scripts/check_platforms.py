"""Does oboyu install everywhere it claims, without a compiler? uv resolves the package's
dependencies for each platform and Python it supports from the package index, wheels only (a
pure-Python source, which needs no compiler, where one is named below), from this machine.

    python -m scripts.check_platforms            # every platform and Python; exit 1 on any failure
    python -m scripts.check_platforms --python 3.12 --platform x86_64-pc-windows-msvc
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-pc-windows-msvc",
    "aarch64-apple-darwin",
    "x86_64-apple-darwin",
]
PYTHONS = ["3.11", "3.12", "3.13"]
# sources that are data or Python only: installed from the source package with no compiler
PURE_SOURCES = ["unidic-lite"]


def resolve(platform: str, python: str, cache: str) -> tuple[bool, str]:
    """(resolved, uv's last lines) for the package's own dependencies on that platform."""
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    done = subprocess.run(
        [uv, "pip", "compile", str(ROOT / "pyproject.toml"), "--python-platform", platform, "--python-version", python,
         "--only-binary", ":all:", *[arg for name in PURE_SOURCES for arg in ("--no-binary", name)],
         "--quiet"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "UV_CACHE_DIR": cache},
    )
    said = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, " ".join(line.strip() for line in said if "cause:" in line or "error:" in line)[:300]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", action="append", choices=PLATFORMS, help="one platform (repeatable); all by default")
    parser.add_argument("--python", action="append", choices=PYTHONS, help="one Python version (repeatable); all by default")
    args = parser.parse_args()
    failures = 0
    started = time.perf_counter()
    # a cache of its own, removed after: uv unpacks unidic-lite's source (250 MB) anew for each
    # platform and keeps every copy, 3.7 GB a run in the user's cache (51 GB here after some weeks)
    with tempfile.TemporaryDirectory(prefix="oboyu-uv-") as cache:
        for platform in args.platform or PLATFORMS:
            for python in args.python or PYTHONS:
                ok, said = resolve(platform, python, cache)
                failures += not ok
                print(f"{platform:<28} {python:<5} {'wheels' if ok else 'FAILS: ' + said}")
    print(f"{failures} failing, in {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
