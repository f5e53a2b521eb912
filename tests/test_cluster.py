"""Indexing on a real Ray cluster started on this machine: `--cluster local` (Ray inside the
indexer's process tree) and two nodes started with `ray start` (a head and a worker). The index a
cluster writes is the one a single process writes; a worker killed in the middle of its work is
restarted and its task retried; a killed indexer leaves an index the next run finishes; files the
workers cannot see are read by the indexer and sent to them."""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import oboyu.index.cluster as cluster_module
import oboyu.index.indexer as indexer_module
from oboyu.errors import OboyuError
from oboyu.index.cluster import Cluster
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.reports import IndexProgress
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from tests.conftest import run_oboyu
from tests.test_crash_and_concurrency import assert_same_index, make_tree, run_env, snapshot, start_index
from tests.test_progressive import wait_for_meaning_pass

pytestmark = pytest.mark.slow
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a cluster of this machine's own
ATOL = 1e-5  # vectors: a worker's one ONNX thread against the single process's two


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_processes(marks: list[str]) -> set[int]:
    """Processes whose command line names one of `marks` (the cluster's folder, its port), and
    their children (Ray's agents, its workers), whose names Ray rewrites."""
    parents: dict[int, int] = {}
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if any(mark.encode() in (entry / "cmdline").read_bytes() for mark in marks):
                    found.add(int(entry.name))
    while True:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        if not children:
            return found
        found |= children


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[tuple[str, dict]]:
    """A head node and a worker node, one CPU each, started with `ray start` as a person would;
    stopped by killing this cluster's processes only (`ray stop` would stop every Ray here)."""
    ray_cli = Path(sys.executable).with_name("ray")
    env = {**os.environ, **RAY_ENV, "OBOYU_CACHE_DIR": str(cache_dir)}
    temp = Path(tempfile.mkdtemp(prefix="oboyu-ray-"))  # short: Ray's socket paths have a length limit
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    try:
        subprocess.run([str(ray_cli), "start", "--head", f"--port={port}", f"--temp-dir={temp}",
                        f"--ray-client-server-port={_free_port()}", "--include-dashboard=false", *common],
                       env=env, check=True, capture_output=True, timeout=120)
        subprocess.run([str(ray_cli), "start", f"--address={address}", *common],
                       env=env, check=True, capture_output=True, timeout=120)
        yield address, {**env, **RAY_ENV}
    finally:
        processes = _cluster_processes([str(temp), f":{port}\x00"])
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            time.sleep(1)
        shutil.rmtree(temp, ignore_errors=True)


def _single_process_index(db: Path, embedder: Embedder, tree: Path) -> dict:
    Indexer(IndexFile(db), embedder).index([tree])
    return snapshot(db)


@pytest.fixture(scope="module")
def cluster_tree(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> tuple[Path, dict]:
    """The folder the clusters index (never changed by a test), and the index one process writes
    of it: built once, each cluster's index compared with it."""
    folder = tmp_path_factory.mktemp("cluster") / "tree"
    make_tree(folder, random.Random(11), 40)
    (folder / "part-0" / "broken.pdf").write_bytes(b"%PDF-1.7 not really")  # skipped with its reason, on a worker
    return folder, _single_process_index(folder.with_name("single.duckdb"), embedder, folder)


def test_local_cluster_writes_the_index_a_single_process_writes(tmp_path: Path, cluster_tree: tuple[Path, dict],
                                                                oboyu_env: dict) -> None:
    tree, single = cluster_tree
    env = {**run_env(oboyu_env, tmp_path), **RAY_ENV}
    done = run_oboyu(env, "index", str(tree), "--cluster", "local", "-v")
    assert done.returncode == 0, done.stderr
    assert re.search(r"\d+ workers on 1 node ready", done.stderr), done.stderr
    assert "40 added" in done.stderr and "broken.pdf" in done.stderr
    assert "could not open" not in done.stderr  # the workers read every file themselves
    with Store(Path(env["OBOYU_DB"]), read_only=True) as store:
        assert store.integrity_problems() == []
    assert_same_index(snapshot(Path(env["OBOYU_DB"])), single, atol=ATOL)

    # a second run has nothing to do and never starts Ray's workers
    again = run_oboyu(env, "index", "--cluster", "local")
    assert again.returncode == 0 and "0 added" in again.stderr and "workers" not in again.stderr
    # a new index of the same folder: the cache is asked first, and no passage is sent to be embedded
    warm = run_oboyu(env, "index", str(tree), "--cluster", "local", "--db", str(tmp_path / "warm.duckdb"))
    assert warm.returncode == 0, warm.stderr
    assert re.search(r"; 0 chunks embedded, \d+ reused from the cache", warm.stderr), warm.stderr


def test_an_indexer_killed_while_the_cluster_embeds_is_finished_by_a_plain_run(tmp_path: Path, cluster_tree: tuple[Path, dict],
                                                                               oboyu_env: dict) -> None:
    tree, single = cluster_tree
    env = {**run_env(oboyu_env, tmp_path), **RAY_ENV}
    db = Path(env["OBOYU_DB"])
    process = start_index(env, str(tree), "--cluster", "local")
    try:
        wait_for_meaning_pass(process)
        process.send_signal(signal.SIGKILL)  # the driver: Ray's workers die with it
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
        process.stderr.close()
    with Store(db, read_only=True) as store:
        assert store.integrity_problems(vectors_made=False) == []
        embedded, total = store.vector_coverage()
        assert embedded < total and store.counts()[0] == 40
    resumed = run_oboyu(env, "index")  # no cluster this time
    assert resumed.returncode == 0, resumed.stderr
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
    assert_same_index(snapshot(db), single, atol=ATOL)


def test_two_nodes_index_together_and_a_killed_worker_is_restarted(tmp_path: Path, embedder: Embedder,
                                                                 cluster_tree: tuple[Path, dict], two_nodes: tuple[str, dict],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    address, _ = two_nodes
    for name, value in RAY_ENV.items():  # this test's process is the indexer
        monkeypatch.setenv(name, value)
    tree, single = cluster_tree
    # many small tasks in both passes: each kill lands in the middle of one
    monkeypatch.setattr(indexer_module, "EMBED_GROUP_CHUNKS", 16)
    monkeypatch.setattr(cluster_module, "FILES_PER_TASK", 2)
    said: list[str] = []
    killed: list[int] = []
    with Cluster(address, embedder, said.append) as cluster:
        before = dict(enumerate(cluster.worker_processes()))
        assert len({node for node, _ in before.values()}) == 2, "a worker on each node"

        def on_progress(step: IndexProgress) -> None:
            if step.phase == "keywords" and step.files_done >= 6 and not killed:  # one worker while it prepares
                killed.append(before[1][1])
                os.kill(before[1][1], signal.SIGKILL)
            if step.phase == "meaning" and step.vectors_done >= 16 and len(killed) == 1:  # the other while it embeds
                killed.append(before[0][1])
                os.kill(before[0][1], signal.SIGKILL)

        db = tmp_path / "cluster.duckdb"
        stats = Indexer(IndexFile(db), embedder, on_progress=on_progress, cache=EmbeddingCache(tmp_path / "cache.sqlite3"),
                        workers=cluster).index([tree])
        after = dict(enumerate(cluster.worker_processes()))
    assert len(killed) == 2 and stats.added == 40 and not stats.stopped
    for worker in (0, 1):
        assert after[worker][1] != before[worker][1] and after[worker][0] == before[worker][0], "restarted on its node"
    assert not any("prepared here" in line or "could not open" in line for line in said), said
    assert "2 workers on 2 nodes ready" in said
    assert_same_index(snapshot(db), single, atol=ATOL)


def _can_unshare() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-m", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs a private mount namespace (unshare -m) for a folder the workers cannot see")
def test_files_only_the_indexer_sees_are_read_by_it_and_sent(tmp_path: Path, two_nodes: tuple[str, dict],
                                                              oboyu_env: dict) -> None:
    """The indexer runs in a mount namespace where `tree/private` is a tmpfs of its own: the
    cluster's workers find that folder empty, as a worker finds a drive only the indexer mounts."""
    address, ray_env = two_nodes
    tree, staged = tmp_path / "tree", tmp_path / "staged"
    make_tree(tree, random.Random(14), 12)
    make_tree(staged, random.Random(15), 8)
    (tree / "private").mkdir()

    def index_privately(db: str, *extra: str) -> subprocess.CompletedProcess:
        script = (f'mount -t tmpfs oboyu-private "{tree}/private" && cp -a "{staged}/." "{tree}/private/" && '
                  f'exec "{sys.executable}" -m oboyu.cli index "{tree}" --db "{db}" "$@"')
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *extra], capture_output=True, text=True,
                              env={**run_env(oboyu_env, tmp_path), **ray_env}, timeout=600)

    on_cluster = index_privately(str(tmp_path / "cluster.duckdb"), "--cluster", address)
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert "the workers could not open 8 files (or saw other files at their paths); they were read here" in on_cluster.stderr
    assert "20 added" in on_cluster.stderr
    single = index_privately(str(tmp_path / "single.duckdb"))
    assert single.returncode == 0, single.stderr
    assert not any((tree / "private").iterdir()), "the private files never showed outside the namespace"
    assert_same_index(snapshot(tmp_path / "cluster.duckdb"), snapshot(tmp_path / "single.duckdb"), atol=ATOL)


def test_a_cluster_that_is_not_there_is_one_line(oboyu_env: dict, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# メモ\n\n本文。\n", encoding="utf-8")
    for address, expected in ((f"127.0.0.1:{_free_port()}", "cannot reach the Ray cluster at"),
                              ("nonsense", "--cluster takes `local`, `auto` or a Ray address")):
        result = run_oboyu(oboyu_env, "index", str(tmp_path / "notes"), "--cluster", address)
        assert result.returncode != 0 and expected in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr

    # without the extra: Ray cannot be imported
    script = ("import sys; sys.modules['ray'] = None; from oboyu.cli.main import main; "
              f"sys.argv = ['oboyu', 'index', {str(tmp_path / 'notes')!r}, '--cluster', 'local']; main()")
    missing = subprocess.run([sys.executable, "-c", script], env=oboyu_env, capture_output=True, text=True, timeout=300)
    assert missing.returncode != 0 and "--cluster needs Ray: pip install 'oboyu[cluster]'" in missing.stderr
    assert "Traceback" not in missing.stderr, missing.stderr


def test_workers_refuse_a_model_whose_files_differ_from_its_manifest(tmp_path: Path, model_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The model reaches the workers with its manifest; a file changed on the way (here: at the
    source) is caught by its sha256 on the node, and no worker embeds with it."""
    for name, value in RAY_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OBOYU_CACHE_DIR", str(tmp_path / "cache"))  # this node has no copy yet
    changed = tmp_path / "model"
    shutil.copytree(model_dir, changed)
    tokenizer = changed / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes() + b" ")  # still valid JSON: only its hash tells
    tree = tmp_path / "tree"
    make_tree(tree, random.Random(16), 3)
    with Cluster("local", Embedder(changed)) as cluster, pytest.raises(OboyuError) as refused:
        Indexer(IndexFile(tmp_path / "index.duckdb"), cluster.embedder, workers=cluster).index([tree])
    assert "a worker cannot index: the model intfloat/multilingual-e5-small@" in str(refused.value)
    assert "arrived damaged" in str(refused.value)
