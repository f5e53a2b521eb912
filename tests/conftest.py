"""Shared fixtures and helpers: the default model is built once per test session into a
temporary cache; `run_oboyu` runs the real command in a child process."""

from __future__ import annotations

import compileall
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from oboyu.models.default.build import ensure_default_model
from oboyu.models.embedding import Embedder

EXAMPLE_NOTES = Path(__file__).resolve().parent.parent / "examples" / "notes"  # the demo's documents


def pytest_configure(config: pytest.Config) -> None:
    """The package's bytecode, written once as pip writes it at install: where
    PYTHONDONTWRITEBYTECODE is set (as on the project's machines), each `oboyu` a test starts
    would otherwise compile every module it imports again, about 0.1 s a process over some
    hundreds of processes."""
    if not hasattr(config, "workerinput"):  # the controller, before pytest-xdist starts its workers
        compileall.compile_dir(Path(__file__).resolve().parent.parent / "oboyu", quiet=1)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-xdist's controller builds the default model before it starts the workers: built by
    the first worker to need it, it kept the other waiting idle (45 s of a 10-minute run)."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    run_folder = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    ensure_default_model(root=shared_cache(run_folder) / "models")


def shared_cache(run_folder: Path) -> Path:
    """The run's model cache: OBOYU_TEST_CACHE (reused across runs), else `cache` in the run's
    folder (the controller's basetemp, above each worker's)."""
    reuse = os.environ.get("OBOYU_TEST_CACHE")
    shared = Path(reuse) if reuse else run_folder / "cache"
    shared.mkdir(parents=True, exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model cache for the whole session, shared by pytest-xdist's workers (the controller builds
    the default model in it before they start: pytest_sessionstart)."""
    if "PYTEST_XDIST_WORKER" not in os.environ and not os.environ.get("OBOYU_TEST_CACHE"):
        return tmp_path_factory.mktemp("cache")
    return shared_cache(tmp_path_factory.getbasetemp().parent)


@pytest.fixture(scope="session", autouse=True)
def _caches_in_the_session_cache(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """In-process code keeps what it learns (provider verdicts, OpenVINO's compiled models) in the
    session's cache, and the app what it remembers in the session's state dir, never the user's."""
    wanted = {"OBOYU_CACHE_DIR": str(cache_dir), "OBOYU_STATE_DIR": str(tmp_path_factory.mktemp("state"))}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def model_dir(cache_dir: Path) -> Path:
    return ensure_default_model(root=cache_dir / "models")


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> Embedder:
    return Embedder(model_dir)


@pytest.fixture
def oboyu_env(cache_dir: Path, model_dir: Path, tmp_path: Path) -> dict[str, str]:
    """Environment for running the `oboyu` command against the session's model and a fresh index."""
    env = dict(os.environ)
    env["OBOYU_CACHE_DIR"] = str(cache_dir)
    env["OBOYU_DB"] = str(tmp_path / "index.duckdb")
    env.pop("NO_COLOR", None)
    return env


def run_oboyu(env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`oboyu ARGS` as a person runs it, in a child process with this environment."""
    return subprocess.run([sys.executable, "-m", "oboyu.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, input=stdin)


@dataclass
class Done:
    """What an in-process run of the command gave: as subprocess.CompletedProcess has it."""

    returncode: int
    stdout: str
    stderr: str


def oboyu_in_process(capfd: pytest.CaptureFixture[str], *argv: str) -> Done:
    """`oboyu ARGV` by the command's own main() in this process (a child process costs 0.7 s of
    imports a call): exit status, stdout and stderr as a person sees them."""
    from oboyu.cli.main import main

    capfd.readouterr()
    library = logging.getLogger("oboyu")
    saved = sys.argv, list(library.handlers), library.level, library.propagate  # main() sets them
    sys.argv = ["oboyu", *argv]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.argv, library.handlers, library.level, library.propagate = saved
    out, err = capfd.readouterr()
    return Done(code, out, err)
