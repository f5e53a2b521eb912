"""Record which execution providers each platform's onnxruntime wheel offers, from the wheels
themselves, into tests/data/onnxruntime-providers.json (what tests/test_provider_lists.py checks
`oboyu.models.providers.choose` against, with no download at test time).

    python -m scripts.onnxruntime_providers                # download the wheels, inspect, write
    python -m scripts.onnxruntime_providers --check        # exit 1 unless the file says the same
    python -m scripts.onnxruntime_providers --arm-root ~/.cache/oboyu-arm/root   # aarch64 run, emulated

For each platform, `pip download --no-deps --only-binary=:all: --platform TAG` takes the newest
onnxruntime (or onnxruntime-directml) release up to the one installed here that has a wheel for it
(about 390 MB in all, a minute or two). Then:

- Linux wheels are run: the wheel unpacked into a temporary folder and imported by a Python of its
  machine, `onnxruntime.get_available_providers()` printed: this Python for x86-64, the arm64
  root of `scripts.arm_emulated` (qemu-user, as root) for aarch64 when `--arm-root` names one;
- macOS and Windows wheels cannot run here, so their accelerators are read from their binaries:
  CoreML where the native module links CoreML.framework (a Mach-O load command) and carries the
  CoreML provider's option key `MLComputeUnits`; DirectML where it ships DirectML.dll and its
  native module imports it (the PE import or delay-import table). Every build names every provider
  in its table of all providers (`get_all_providers()`), so a provider's name alone proves nothing.
  A list read this way holds the accelerators found and the CPU; providers that accelerate nothing
  (onnxruntime's Azure provider) are not inferred.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from oboyu.models.providers import ALIASES, CPU

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "onnxruntime-providers.json"
COREML, DML = ALIASES["coreml"], ALIASES["dml"]
# (label, package, pip platform tag, platform.system(), platform.machine() there)
TARGETS = (
    ("linux-x86_64", "onnxruntime", "manylinux_2_28_x86_64", "Linux", "x86_64"),
    ("linux-x86_64-gpu", "onnxruntime-gpu", "manylinux_2_28_x86_64", "Linux", "x86_64"),
    ("linux-aarch64", "onnxruntime", "manylinux_2_28_aarch64", "Linux", "aarch64"),
    ("macos-arm64", "onnxruntime", "macosx_14_0_arm64", "Darwin", "arm64"),
    ("macos-x86_64", "onnxruntime", "macosx_13_0_x86_64", "Darwin", "x86_64"),
    ("windows-amd64", "onnxruntime", "win_amd64", "Windows", "AMD64"),
    ("windows-amd64-directml", "onnxruntime-directml", "win_amd64", "Windows", "AMD64"),
)
PYTHON_VERSION = "3.11"


# --- what a native module links ------------------------------------------------------------------

MACHO_64 = 0xFEEDFACF
MACHO_DYLIB_COMMANDS = {0xC, 0x20, 0x80000018, 0x8000001F, 0x80000023}  # load, lazy, weak, re-export, upward


def macho_libraries(data: bytes) -> list[str]:
    """The libraries a thin 64-bit little-endian Mach-O file loads (its dylib load commands)."""
    magic, _cpu, _sub, _kind, ncmds, _size, _flags, _reserved = struct.unpack_from("<8I", data, 0)
    if magic != MACHO_64:
        raise ValueError(f"not a thin 64-bit Mach-O file (magic {magic:#x})")
    names, offset = [], 32
    for _ in range(ncmds):
        command, size = struct.unpack_from("<2I", data, offset)
        if command in MACHO_DYLIB_COMMANDS:
            (name_at,) = struct.unpack_from("<I", data, offset + 8)
            raw = data[offset + name_at : offset + size]
            names.append(raw.split(b"\0", 1)[0].decode())
        offset += size
    return names


def pe_imports(data: bytes) -> list[str]:
    """The DLLs a PE32+ file imports, directly or delay-loaded (its import directories)."""
    if data[:2] != b"MZ":
        raise ValueError("not a PE file")
    (pe_at,) = struct.unpack_from("<I", data, 0x3C)
    if data[pe_at : pe_at + 4] != b"PE\0\0":
        raise ValueError("no PE signature")
    sections_count, optional_size = struct.unpack_from("<H", data, pe_at + 6)[0], struct.unpack_from("<H", data, pe_at + 20)[0]
    optional = pe_at + 24
    if struct.unpack_from("<H", data, optional)[0] != 0x20B:
        raise ValueError("not PE32+")
    directories = optional + 112
    sections = [struct.unpack_from("<8x4I", data, optional + optional_size + 40 * i) for i in range(sections_count)]

    def file_offset(rva: int) -> int:
        for virtual_size, address, raw_size, raw_at in sections:
            if address <= rva < address + max(virtual_size, raw_size):
                return raw_at + rva - address
        raise ValueError(f"RVA {rva:#x} in no section")

    def name_at(rva: int) -> str:
        start = file_offset(rva)
        return data[start : data.index(b"\0", start)].decode()

    names = []
    for directory, entry_size, name_field in ((1, 20, 12), (13, 32, 4)):  # imports, delay imports
        rva, size = struct.unpack_from("<2I", data, directories + 8 * directory)
        if not rva or not size:
            continue
        at = file_offset(rva)
        while True:
            entry = data[at : at + entry_size]
            if len(entry) < entry_size or not any(entry):
                break
            (name_rva,) = struct.unpack_from("<I", entry, name_field)
            names.append(name_at(name_rva))
            at += entry_size
    return names


# --- one wheel ---------------------------------------------------------------------------------

def native_modules(wheel: zipfile.ZipFile) -> list[str]:
    return [n for n in wheel.namelist() if n.startswith("onnxruntime/capi/onnxruntime_pybind11_state.")
            and not n.endswith(".py")]


def static_providers(wheel_path: Path) -> tuple[list[str], list[str]]:
    """The accelerators a macOS or Windows wheel's binaries show, plus the CPU; and the evidence."""
    found, evidence = [], []
    with zipfile.ZipFile(wheel_path) as wheel:
        names = wheel.namelist()
        for module in native_modules(wheel):
            data = wheel.read(module)
            if data[:2] == b"MZ":
                imports = pe_imports(data)
                if any(i.lower() == "directml.dll" for i in imports) and any(n.endswith("/DirectML.dll") for n in names):
                    found.append(DML)
                    evidence.append(f"{Path(module).name} imports DirectML.dll, which the wheel ships")
            else:
                libraries = macho_libraries(data)
                coreml = [lib for lib in libraries if "/CoreML.framework/" in lib]
                if coreml and b"MLComputeUnits" in data:
                    found.append(COREML)
                    evidence.append(f"{Path(module).name} loads {coreml[0]} and has the CoreML provider's option MLComputeUnits")
    if not evidence:
        evidence.append("no accelerator library linked by the native module")
    return [*dict.fromkeys(found), CPU], evidence


def providers_code(folder: str) -> str:
    """Python that prints what the wheel unpacked in `folder` offers (and fails if another
    onnxruntime was imported)."""
    return (f"import sys; sys.path.insert(0, {folder!r}); import json, onnxruntime; "
            f"assert onnxruntime.__file__.startswith({folder!r}), onnxruntime.__file__; "
            "print(json.dumps(onnxruntime.get_available_providers()))")


def unpacked(wheel_path: Path, folder: Path) -> Path:
    with zipfile.ZipFile(wheel_path) as wheel:
        wheel.extractall(folder)
    return folder


def download(package: str, version: str, tag: str, into: Path) -> Path:
    """The newest wheel of `package` up to `version` for the platform tag."""
    into.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--platform", tag, "--python-version", PYTHON_VERSION, "--dest", str(into),
                    f"{package}<={version}"], check=True)
    (wheel,) = into.glob("*.whl")
    return wheel


def record(arm_root: Path | None) -> dict[str, Any]:
    import onnxruntime

    from scripts.arm_emulated import Root, ensure_binfmt

    version = onnxruntime.__version__
    platforms: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, package, tag, system, machine in TARGETS:
            wheel = download(package, version, tag, Path(scratch) / label)
            entry: dict[str, Any] = {"system": system, "machine": machine, "wheel": wheel.name,
                                     "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
            if system == "Linux" and machine == os.uname().machine:
                folder = unpacked(wheel, Path(scratch) / f"{label}-unpacked")
                out = subprocess.run([sys.executable, "-c", providers_code(str(folder))], capture_output=True,
                                     text=True, check=True, cwd="/").stdout
                entry["providers"] = json.loads(out.strip().splitlines()[-1])
                entry["how"] = "run: get_available_providers() of the unpacked wheel on this machine"
            elif system == "Linux" and machine == "aarch64" and arm_root is not None:
                ensure_binfmt()
                root = Root(arm_root)
                inside = f"/var/tmp/onnxruntime-{label}"
                folder = unpacked(wheel, root.host_path(inside))
                try:
                    out = root.run(["python", "-c", providers_code(inside)], capture=True)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                entry["providers"] = json.loads(out.strip().splitlines()[-1])
                entry["how"] = "run: get_available_providers() of the unpacked wheel on aarch64 (qemu-user, Debian bookworm)"
            elif system == "Linux":
                raise SystemExit(f"{label}: give --arm-root (the root of scripts.arm_emulated) to run the aarch64 wheel")
            else:
                entry["providers"], entry["evidence"] = static_providers(wheel)
                entry["how"] = "read: the native module's linked libraries and the provider's option key"
            platforms[label] = entry
            print(f"{label}: {wheel.name}: {entry['providers']}", flush=True)
    return {"onnxruntime_installed": version, "python": PYTHON_VERSION,
            "recipe": "python -m scripts.onnxruntime_providers --arm-root ~/.cache/oboyu-arm/root (as root)",
            "platforms": platforms}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.onnxruntime_providers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arm-root", type=Path, help="the arm64 root made by scripts.arm_emulated, to run the aarch64 wheel")
    parser.add_argument("--check", action="store_true", help="compare with the recorded file instead of writing it")
    args = parser.parse_args()
    found = record(args.arm_root.expanduser() if args.arm_root else None)
    if args.check:
        recorded = json.loads(DATA.read_text(encoding="utf-8"))
        same = all(recorded["platforms"].get(k, {}).get("providers") == v["providers"] for k, v in found["platforms"].items())
        print("the recorded lists hold" if same else "the recorded lists DIFFER")
        return 0 if same else 1
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    print(f"written to {DATA.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
