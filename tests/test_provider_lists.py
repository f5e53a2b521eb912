"""The provider choice on onnxruntime's real provider lists: what each platform's wheel offers,
recorded from the wheels themselves by `python -m scripts.onnxruntime_providers` (the Linux
wheels run, x86-64 here and aarch64 under qemu; the macOS and Windows wheels read: the libraries
their native module links). Nothing is downloaded here; tests/data/onnxruntime-providers.json says
which wheels and how."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from oboyu.models.providers import CPU, choose, linux_cpu

DATA = Path(__file__).parent / "data" / "onnxruntime-providers.json"
RECORDED: dict[str, dict] = json.loads(DATA.read_text(encoding="utf-8"))["platforms"]
COREML, DML = "CoreMLExecutionProvider", "DmlExecutionProvider"

# what oboyu must pick with each wheel, on the machine that wheel is for
EXPECTED = {
    "macos-arm64": COREML,  # Apple silicon: CoreML, which its wheel offers
    "macos-x86_64": CPU,  # an Intel mac: its wheel offers CoreML too, but the CPU path is kept
    "linux-aarch64": CPU,
    "linux-x86_64": CPU,
    "linux-x86_64-gpu": "CUDAExecutionProvider",  # onnxruntime-gpu: it lists TensorRT too, used only when asked
    "windows-amd64": CPU,
    "windows-amd64-directml": DML,  # onnxruntime-directml, installed instead of onnxruntime
}


def test_every_platform_is_recorded() -> None:
    assert set(RECORDED) == set(EXPECTED)


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_choice_with_each_wheels_own_list(label: str) -> None:
    wheel = RECORDED[label]
    choice = choose(wheel["providers"], wheel["system"], wheel["machine"])
    assert choice.provider == EXPECTED[label], f"{wheel['wheel']} offers {wheel['providers']}"
    assert choice.provider in wheel["providers"]


def test_the_lists_hold_what_each_wheel_ships() -> None:
    """CoreML only in the macOS wheels, DirectML only in onnxruntime-directml, NVIDIA's providers
    only in onnxruntime-gpu (none in a wheel that a plain `pip install onnxruntime` takes), the CPU
    in all."""
    for label, wheel in RECORDED.items():
        offered = set(wheel["providers"])
        assert CPU in offered, label
        assert (COREML in offered) == (wheel["system"] == "Darwin"), label
        assert (DML in offered) == label.endswith("directml"), label
        nvidia = {"CUDAExecutionProvider", "TensorrtExecutionProvider"}
        assert (offered & nvidia == nvidia) == wheel["wheel"].startswith("onnxruntime_gpu-"), label
        assert offered & nvidia in (set(), nvidia), label


def test_apple_silicon_without_coreml_keeps_the_cpu() -> None:
    """The macOS arm64 wheel's list less CoreML (an onnxruntime built without it), and the Linux
    aarch64 wheel's list on a Mac: the CPU, never a provider the list lacks."""
    mac = RECORDED["macos-arm64"]
    assert choose([p for p in mac["providers"] if p != COREML], "Darwin", "arm64").provider == CPU
    assert choose(RECORDED["linux-aarch64"]["providers"], "Darwin", "arm64").provider == CPU


def test_the_recorded_list_of_this_platform_is_what_runs_here() -> None:
    """Where this machine is a recorded platform with the recorded onnxruntime, its own list is
    the recorded one (the recording is stale or wrong otherwise: rerun the recipe)."""
    import onnxruntime

    here = [w for w in RECORDED.values() if (w["system"], w["machine"]) == (platform.system(), platform.machine())
            and w["wheel"].startswith(f"onnxruntime-{onnxruntime.__version__}-")]
    if not here:
        pytest.skip(f"onnxruntime {onnxruntime.__version__} on {platform.system()} {platform.machine()} is not recorded")
    assert onnxruntime.get_available_providers() == here[0]["providers"]


def test_doctor_reads_an_arm64_kernels_cpuinfo() -> None:
    """An arm64 kernel's /proc/cpuinfo (as Linux on a Neoverse N1 writes it) has no model name and
    no `flags`: the CPU is named by its codes and its INT8 features come from `Features`."""
    arm = ("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
           "asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
           "CPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\n")
    name, features = linux_cpu(arm)
    assert "0x41" in name and "0xd0c" in name
    assert features == ["NEON", "NEON dot product"]
    x86 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512_vnni\n"
    assert linux_cpu(x86) == ("AMD EPYC", ["AVX2", "AVX-512", "AVX-512 VNNI"])
