"""Run a command with AVX-512, AVX-VNNI and AMX hidden from the inference libraries: the
AVX2-only CPU class, emulated on a machine that has more, for when no AVX2-only machine can be
reached. Every Python process the command starts is covered.

    python -m benchmarks.hardware.avx2_only python -m benchmarks.hardware.engine --docs 150 --rounds 3
    python -m benchmarks.hardware.avx2_only python -m oboyu doctor
    python -m benchmarks.hardware.avx2_only --check

Run it from the repository's root, as every benchmark: a module the command names
(`python -m benchmarks...`) is found there, beside the patched packages.

onnxruntime's MLAS and OpenVINO's CPU plugin choose their kernels from the CPUID instruction and
have no switch to cap them. So a copy of each package is made (once, in the user cache dir) with
every CPUID instruction of its libraries, found by objdump, replaced by UD2: the same length, and
it raises SIGILL. A sitecustomize module, put first on PYTHONPATH, loads avx2_only.c's handler,
which runs the real CPUID, clears the AVX-512, AVX-VNNI and AMX bits and steps over it. PyTorch
(ATen, oneDNN, MKL) and NumPy are capped by their own switches. The command also gets a cache
dir of its own (the built models shared), so engine verdicts and compiled kernels of the full CPU
are not reused. The cores, clocks and caches stay this machine's: an estimate of the class, not a
measurement of another CPU. Needs gcc, objdump and readelf (Linux x86-64). Ray cannot run
under it: its workers and drivers take SIGILL for their crash reports, so a masked CPUID kills
them (`pytest --ignore=tests/test_cluster.py` runs the rest of the suite this way).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata, util
from pathlib import Path

from benchmarks import harness

HERE = Path(__file__).resolve().parent
HANDLER_SOURCE = HERE / "avx2_only.c"
PATCHED_PACKAGES = ("onnxruntime", "openvino")
CPUID, UD2 = b"\x0f\xa2", b"\x0f\x0b"
# The switches the other libraries read before they choose kernels.
SWITCHES = {
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN, inside PyTorch (OpenVINO's copy is patched as well)
    "ATEN_CPU_CAPABILITY": "avx2",  # PyTorch's own vectorized kernels
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",  # its AVX-512 dispatch targets
}
MARKER = harness.AVX512_HIDDEN  # set for the command: the engine benchmark names its report's CPU class by it
SITECUSTOMIZE = """\
# Written by benchmarks.hardware.avx2_only: hide AVX-512, AVX-VNNI and AMX from patched libraries.
import ctypes
import faulthandler

_handler = ctypes.CDLL({handler!r})
if _handler.avx2_only_install() != 0:
    raise SystemExit("benchmarks.hardware.avx2_only: could not install the CPUID handler")
_enable = faulthandler.enable


def _enable_and_keep_cpuid(*args, **kwargs):
    # faulthandler takes SIGILL as well (pytest and Ray workers enable it): CPUID's stand-in needs it back
    _enable(*args, **kwargs)
    _handler.avx2_only_install()


faulthandler.enable = _enable_and_keep_cpuid
"""


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--check", action="store_true", help="show what the libraries see, then exit")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args()
    if not args.check and not args.command:
        parser.error("name a command to run, or --check")
    env = hidden_environment()
    command = [sys.executable, "-c", CHECK] if args.check else args.command
    os.execvpe(command[0], command, env)


def hidden_environment() -> dict[str, str]:
    """os.environ for a process that sees this CPU without AVX-512, AVX-VNNI and AMX."""
    root = prepared_root()
    cache = root / "cache"
    cache.mkdir(exist_ok=True)
    models = Path(os.environ.get("OBOYU_CACHE_DIR") or user_cache() / "oboyu") / "models"
    if models.is_dir() and not (cache / "models").exists():
        (cache / "models").symlink_to(models)
    python_path = [str(root / "site"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, **SWITCHES, MARKER: "1", "OBOYU_CACHE_DIR": str(cache),
            "PYTHONPATH": os.pathsep.join(p for p in python_path if p)}


def user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def prepared_root() -> Path:
    """The patched packages and the handler, made once per set of library versions."""
    versions = " ".join(f"{name}-{metadata.version(name)}" for name in PATCHED_PACKAGES)
    digest = hashlib.sha256((versions + HANDLER_SOURCE.read_text() + SITECUSTOMIZE).encode()).hexdigest()[:12]
    root = user_cache() / "oboyu-bench" / f"avx2-only-{digest}"
    if (root / "site" / "sitecustomize.py").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))  # renamed when whole
    handler = root / "avx2_only.so"  # the path it will have
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(building / handler.name), str(HANDLER_SOURCE)], check=True)
    for name in PATCHED_PACKAGES:
        source = Path(util.find_spec(name).origin).parent
        target = building / "site" / name
        shutil.copytree(source, target, symlinks=True)
        for library in sorted(target.rglob("*.so*")):
            if library.is_file() and not library.is_symlink():
                patched = patch_cpuid(library)
                if patched:
                    print(f"avx2_only: {library.relative_to(building / 'site')}: {patched} CPUID patched", file=sys.stderr)
    (building / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE.format(handler=str(handler)))
    try:
        building.rename(root)
    except OSError:  # another process finished first: use its copy
        shutil.rmtree(building, ignore_errors=True)
    return root


def patch_cpuid(library: Path) -> int:
    """Replace each CPUID instruction in an ELF library by UD2; how many were replaced."""
    data = bytearray(library.read_bytes())
    offsets = cpuid_file_offsets(library)
    for offset in offsets:
        if data[offset:offset + 2] != CPUID:  # objdump and the file disagree: leave the library as it was
            raise SystemExit(f"avx2_only: {library}: no CPUID at file offset {offset:#x}")
        data[offset:offset + 2] = UD2
    if offsets:
        library.write_bytes(data)
    return len(offsets)


def cpuid_file_offsets(library: Path) -> list[int]:
    """The file offsets of the CPUID instructions objdump finds in a library's code."""
    headers = subprocess.run(["readelf", "-lW", str(library)], capture_output=True, text=True, check=True).stdout
    segments = []  # (virtual address, file offset, size in the file) of each loaded segment
    for line in headers.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"]:
            segments.append((int(fields[2], 16), int(fields[1], 16), int(fields[4], 16)))
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)],
                             capture_output=True, text=True, check=True).stdout
    offsets = []
    for line in listing.splitlines():
        if line.rstrip().endswith("\tcpuid"):
            address = int(line.split(":", 1)[0], 16)
            offsets += [address - start + offset for start, offset, size in segments if start <= address < start + size]
    return offsets


CHECK = """
import ctypes, os, sys
import onnxruntime, openvino, numpy
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
handler = ctypes.CDLL(os.path.join(os.path.dirname(os.environ["OBOYU_CACHE_DIR"]), "avx2_only.so"))
handler.avx2_only_trapped.restype = ctypes.c_uint64
capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
print("onnxruntime from", onnxruntime.__file__)
print("OpenVINO CPU capabilities:", ", ".join(capabilities))
print("NumPy dispatch targets in use:", [k for k in __cpu_dispatch__ if __cpu_features__.get(k)])
print("CPUID instructions trapped:", handler.avx2_only_trapped())
"""


if __name__ == "__main__":
    raise SystemExit(main())
