"""The index survives SIGKILL at random moments, answers queries from other processes while
`oboyu index` runs, and `oboyu index --watch` follows the disk. Real processes, real files."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from oboyu.errors import IndexBusyError, OboyuError
from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.lock import IndexLock
from oboyu.index.store import Store, open_for_reading
from oboyu.models.embedding import Embedder
from oboyu.modes import Mode
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker

KILLS = 20
WORDS = ["議事録", "予算", "会議", "確定申告", "領収書", "バックアップ", "復元", "データベース", "玉ねぎ", "味噌", "旅行", "新幹線", "backup", "restore", "database", "meeting", "budget", "travel", "kernel", "network", "schedule", "invoice"]


def paragraph(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) + ("。" if rng.random() < 0.2 else "の") for _ in range(rng.randint(30, 70)))


def note(rng: random.Random) -> str:
    return "\n\n".join(f"## {rng.choice(WORDS)} {i}\n\n{paragraph(rng)}" for i in range(rng.randint(2, 5))) + "\n"


def make_tree(root: Path, rng: random.Random, files: int) -> None:
    for i in range(files):
        path = root / f"part-{i % 4}" / f"note-{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(rng), encoding="utf-8")


def mutate(root: Path, rng: random.Random) -> None:
    """Edits, a deletion, additions and a rename: every kind of change the next run meets."""
    files = sorted(root.rglob("*.md"))
    for path in rng.sample(files, 2):
        path.write_text(note(rng), encoding="utf-8")
    rng.choice(files).unlink(missing_ok=True)
    for _ in range(2):
        (root / f"part-{rng.randrange(4)}" / f"new-{rng.randrange(10**6)}.md").write_text(note(rng), encoding="utf-8")
    survivors = [p for p in sorted(root.rglob("*.md")) if p.exists()]
    moved = rng.choice(survivors)
    moved.rename(root / f"part-{rng.randrange(4)}" / f"moved-{rng.randrange(10**6)}.md")


def snapshot(db: Path) -> dict:
    """Everything an index holds, in a comparable form."""
    with Store(db, read_only=True) as store:
        q = store.con.execute
        return {
            "documents": q("SELECT path, root, size, mtime_ns, sha256, title FROM documents ORDER BY path").fetchall(),
            "chunks": q(
                "SELECT d.path, c.ordinal, c.id, c.heading, c.start_line, c.end_line, c.text "
                "FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.ordinal"
            ).fetchall(),
            "postings": sorted(q("SELECT chunk_id, term, tf FROM kw_postings").fetchall()),
            "vectors": {cid: np.array(v) for cid, v in q("SELECT chunk_id, vector FROM embeddings").fetchall()},
            "roots": [r.path for r in store.roots()],
        }


def assert_same_index(a: dict, b: dict, atol: float = 1e-6) -> None:
    for key in ("documents", "chunks", "postings", "roots"):
        assert a[key] == b[key], key
    assert a["vectors"].keys() == b["vectors"].keys()
    for cid, vector in a["vectors"].items():
        assert np.allclose(vector, b["vectors"][cid], atol=atol), cid


def run_env(oboyu_env: dict, tmp_path: Path) -> dict:
    env = dict(oboyu_env)
    env["OBOYU_EMBEDDING_CACHE"] = str(tmp_path / "embeddings.sqlite3")
    return env


def start_index(env: dict, *args: str) -> subprocess.Popen:
    # Ctrl+C must reach it even when the tests run as a background job, which ignores SIGINT
    # (a shell without job control does that, and children inherit it)
    return subprocess.Popen([sys.executable, "-m", "oboyu.cli", "index", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.slow
def test_sigkill_at_random_moments_never_corrupts_the_index(tmp_path: Path, embedder: Embedder, oboyu_env: dict) -> None:
    rng = random.Random(20261122)
    tree = tmp_path / "tree"
    make_tree(tree, rng, 30)
    env = run_env(oboyu_env, tmp_path)
    db = Path(env["OBOYU_DB"])
    killed, finished, horizon = 0, 0, 4.0
    generations: list[str | None] = []  # the index's generation after each round: did the run write?
    for round_ in range(KILLS):
        if round_:
            mutate(tree, rng)
        process = start_index(env, str(tree), "-q")
        started = time.monotonic()
        delay = rng.uniform(0.1, horizon)
        try:
            process.wait(delay)
            finished += 1
            assert process.returncode == 0, process.stderr.read()
            horizon = max(1.0, 1.2 * (time.monotonic() - started))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
            killed += 1
            horizon *= 1.2  # reach further into the run next time, whatever this one reached
        process.stdout.close()
        process.stderr.close()
        if not db.exists():
            continue
        with Store(db, read_only=True) as store:  # opens, is consistent, answers
            # killed between its keyword and meaning passes, a run leaves chunks waiting for vectors
            assert store.integrity_problems(vectors_made=False) == [], f"round {round_}, killed after {delay:.2f}s"
            search(SqlRanker(store), embedder, "バックアップの復元", k=5)
            generations.append(store.get_meta("generation"))
        with IndexLock(db):  # the killed process left no lock behind
            pass
    assert killed >= KILLS // 2, f"only {killed} of {KILLS} runs were killed before they finished"
    wrote = sum(a != b for a, b in itertools.pairwise(generations))
    assert 0 < wrote < len(generations) - 1, "kills should land both before and after some writes"
    final = subprocess.run([sys.executable, "-m", "oboyu.cli", "index", str(tree), "-q"], env=env, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []
    fresh = tmp_path / "fresh.duckdb"
    cache = EmbeddingCache(Path(env["OBOYU_EMBEDDING_CACHE"]))
    Indexer(IndexFile(fresh), embedder, cache=cache).index([tree])
    assert_same_index(snapshot(db), snapshot(fresh))
    print(f"{killed} killed, {finished} finished before the kill; {wrote} of {len(generations) - 1} rounds wrote")


@pytest.mark.slow
def test_queries_from_another_process_answer_while_indexing(tmp_path: Path, embedder: Embedder, oboyu_env: dict) -> None:
    rng = random.Random(7)
    small, big = tmp_path / "small", tmp_path / "big"
    make_tree(small, rng, 2)
    make_tree(big, rng, 60)
    env = run_env(oboyu_env, tmp_path)
    Indexer(IndexFile(Path(env["OBOYU_DB"])), embedder).index([small])
    indexer = start_index(env, str(big), "-q")
    answers = []
    try:
        while indexer.poll() is None:
            query = subprocess.run([sys.executable, "-m", "oboyu.cli", "query", "会議の予算", "--json", "-k", "50", "--chunks"],
                                   env=env, capture_output=True, text=True, timeout=120)
            answers.append((query, indexer.poll() is None))
    finally:
        indexer.wait(300)
    assert indexer.returncode == 0, indexer.stderr.read()
    during = [q for q, running in answers if running]
    assert len(during) >= 2, "the index finished before two queries ran"
    for query in during:
        assert query.returncode == 0, query.stderr  # an answer from the last committed state
        assert "Traceback" not in query.stderr and "IO Error" not in query.stderr
        notes = [line for line in query.stderr.splitlines()
                 if line != "oboyu: waiting: another oboyu process is writing the index"
                 and not line.startswith("oboyu: meaning search reaches ")]  # files whose vectors are still being made
        assert notes == []
    seen = [len(json.loads(q.stdout)) for q in during]
    assert seen == sorted(seen)  # batches land one after another, never lost


@contextlib.contextmanager
def watching(env: dict, folder: Path) -> Iterator[list[str]]:
    """Index `folder`, then run `oboyu index --watch` for the block, its stderr lines gathering in
    the list; Ctrl+C (SIGINT) at the end must stop it with status 0."""
    assert subprocess.run([sys.executable, "-m", "oboyu.cli", "index", str(folder), "-q"], env=env).returncode == 0
    watcher = start_index(env, "--watch")
    lines: list[str] = []

    def pump() -> None:
        for line in watcher.stderr:
            lines.append(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        wait_for(lambda: any(line.startswith("watching") for line in lines))
        yield lines
    except AssertionError as exc:  # what the watcher said is what tells why it did not do its part
        raise AssertionError(f"{exc}; the watcher (exit status {watcher.poll()}) said:\n{''.join(lines)}") from exc
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(30)
    assert watcher.returncode == 0, "".join(lines)


def paths_found(db: Path, embedder: Embedder, query: str) -> set[str]:
    try:
        with open_for_reading(db, wait_seconds=2) as store:
            return {r.path for r in search(SqlRanker(store), embedder, query, k=20, mode=Mode.KEYWORD)}
    except IndexBusyError:
        return set()


def wait_for(condition, timeout: float = 60.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError("timed out")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_at_any_moment_says_interrupted_and_leaves_a_consistent_index(tmp_path: Path, embedder: Embedder,
                                                                            oboyu_env: dict) -> None:
    """Ctrl+C during a run said "unexpected error: RuntimeError: Query interrupted" (DuckDB's
    word for it) now and then, and once in about twelve the process died of a segmentation fault.
    Each round starts afresh (no cache), so the signal lands in another step of the run."""
    rng = random.Random(20261128)
    tree = tmp_path / "tree"
    make_tree(tree, rng, 24)
    interrupted = 0
    for round_, delay in enumerate((0.3, 1.0, 2.0, 3.0, 4.5, 6.0)):
        env = dict(oboyu_env, OBOYU_DB=str(tmp_path / f"index-{round_}.duckdb"),
                   OBOYU_EMBEDDING_CACHE=str(tmp_path / f"cache-{round_}.sqlite3"))
        process = start_index(env, str(tree))
        try:
            process.wait(delay)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            process.wait(60)
        _, err = process.communicate()
        if process.returncode == 0:
            continue  # finished first
        if process.returncode == -signal.SIGINT and not err:
            continue  # came before Python's own handler (a loaded machine starts slowly): nothing ran
        interrupted += 1
        assert process.returncode == 130, (delay, process.returncode, err)
        assert err.rstrip().splitlines()[-1] == "oboyu: interrupted" and "unexpected" not in err, err
        assert "\n\n" not in err and not err.startswith("\n"), err  # click's blank line for a terminal's ^C: not in a log
        db = Path(env["OBOYU_DB"])
        try:
            with Store(db, read_only=True) as store:
                assert store.integrity_problems(vectors_made=False) == []
        except OboyuError as exc:  # stopped before the schema was made: the next run makes it
            assert str(exc).endswith("holds no index yet: `oboyu index FOLDER` makes it") or not db.exists(), exc
    assert interrupted >= 3  # the signal reached most runs


def a_note_to_watch(tmp_path: Path, oboyu_env: dict) -> tuple[Path, dict, Path]:
    """A folder with one note, the environment to index and watch it, and its index."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old.md").write_text("# 古いメモ\n\n既存の内容。\n", encoding="utf-8")
    env = run_env(oboyu_env, tmp_path)
    return notes, env, Path(env["OBOYU_DB"])


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_watch_follows_new_renamed_and_deleted_files(tmp_path: Path, embedder: Embedder, oboyu_env: dict) -> None:
    notes, env, db = a_note_to_watch(tmp_path, oboyu_env)
    with watching(env, notes) as lines:
        assert any(line.startswith("watching 1 folder") for line in lines)
        (notes / "garden.md").write_text("# 庭\n\nトマトの苗を植えた。\n", encoding="utf-8")
        wait_for(lambda: str(notes / "garden.md") in paths_found(db, embedder, "トマト"))
        (notes / "sub").mkdir()
        (notes / "garden.md").rename(notes / "sub" / "tomato.md")
        wait_for(lambda: paths_found(db, embedder, "トマト") == {str(notes / "sub" / "tomato.md")})
        (notes / "sub" / "tomato.md").unlink()
        wait_for(lambda: not paths_found(db, embedder, "トマト"))
        assert any("1 renamed" in line for line in lines), "".join(lines)
    wait_for(lambda: lines and lines[-1] == "stopped watching\n", 5)
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []


SLOW = 180.0  # seconds: each step waits for a run of the watcher on a loaded 2-core machine


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process; no file locks")
def test_watch_waits_while_another_process_updates_the_index(tmp_path: Path, embedder: Embedder,
                                                             oboyu_env: dict) -> None:
    """An `oboyu index` beside the watch (a test's adding a folder, on a loaded machine) ended it:
    "another oboyu process is updating the index". A change made meanwhile waits for that update,
    then goes in. (The lock held here for 5 s, several of the watcher's batches: a run that never
    tried in that time would pass without showing anything, never fail.)"""
    notes, env, db = a_note_to_watch(tmp_path, oboyu_env)
    with watching(env, notes) as lines:
        held = IndexLock(db)

        def taken() -> bool:  # once the watcher's own first update lets go
            try:
                held.acquire()
                return True
            except IndexBusyError:
                return False

        wait_for(taken, SLOW)
        try:
            (notes / "garden.md").write_text("# 庭\n\nトマトの苗を植えた。\n", encoding="utf-8")
            time.sleep(5)
            assert not any("error" in line for line in lines), lines
        finally:
            held.release()
        wait_for(lambda: str(notes / "garden.md") in paths_found(db, embedder, "トマト"), SLOW)
    assert not any("error" in line for line in lines), lines


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_watch_follows_ignore_files_and_folders_that_go_and_come(tmp_path: Path, embedder: Embedder,
                                                                oboyu_env: dict) -> None:
    """A user trial: a file just put in .gitignore stayed searchable under --watch; a watched
    folder deleted and made again was never watched again, and nor was one another `oboyu index`
    added; an index kept inside the folder indexed its own files."""
    notes, other = tmp_path / "notes", tmp_path / "other"
    notes.mkdir()
    (notes / "secret.md").write_text("# 暗証番号\n\n銀行のカードは 4242。\n", encoding="utf-8")
    env = dict(run_env(oboyu_env, tmp_path), OBOYU_DB=str(notes / "index.duckdb"))  # inside the folder it indexes
    db = Path(env["OBOYU_DB"])
    with watching(env, notes) as lines:
        # (the watcher's first update may hold the index a moment: looked at until it lets go)
        wait_for(lambda: paths_found(db, embedder, "暗証番号") == {str(notes / "secret.md")}, SLOW)
        (notes / ".gitignore").write_text("secret.md\n", encoding="utf-8")
        wait_for(lambda: not paths_found(db, embedder, "暗証番号"), SLOW)
        (notes / ".gitignore").unlink()
        wait_for(lambda: paths_found(db, embedder, "暗証番号") == {str(notes / "secret.md")}, SLOW)
        other.mkdir()
        (other / "plan.md").write_text("# 旅行\n\n京都に行く。\n", encoding="utf-8")
        assert subprocess.run([sys.executable, "-m", "oboyu.cli", "index", str(other), "-q"], env=env).returncode == 0
        wait_for(lambda: any(line.endswith(f"watching {other}\n") for line in lines), SLOW)
        shutil.rmtree(other)
        wait_for(lambda: any(f"{other} is gone" in line for line in lines), SLOW)
        other.mkdir()
        (other / "back.md").write_text("# 戻った\n\n北海道に行く。\n", encoding="utf-8")
        wait_for(lambda: paths_found(db, embedder, "北海道") == {str(other / "back.md")}, SLOW)
        (other / "more.md").write_text("# 追記\n\n沖縄にも行く。\n", encoding="utf-8")
        wait_for(lambda: paths_found(db, embedder, "沖縄") == {str(other / "more.md")}, SLOW)
        shutil.rmtree(other)  # made again at once, between two looks: the same path, another folder
        other.mkdir()
        (other / "quick.md").write_text("# 急ぎ\n\n札幌に行く。\n", encoding="utf-8")
        wait_for(lambda: paths_found(db, embedder, "札幌") == {str(other / "quick.md")}, SLOW)
        time.sleep(2)
        (other / "later.md").write_text("# 後で\n\n仙台に行く。\n", encoding="utf-8")
        wait_for(lambda: paths_found(db, embedder, "仙台") == {str(other / "later.md")}, SLOW)
    with Store(db, read_only=True) as store:
        indexed = {path for path, in store.con.execute("SELECT path FROM documents").fetchall()}
    assert not any(path.startswith(str(db)) for path in indexed), indexed
    assert not any("Traceback" in line for line in lines), lines
    assert [line.split(" ", 1)[1] for line in lines if " watching " in line] == [f"watching {other}\n"], lines


def document_count(db: Path) -> int:
    try:
        with open_for_reading(db, wait_seconds=2) as store:
            return store.counts()[0]
    except IndexBusyError:
        return -1


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_watch_survives_a_burst_like_a_checkout(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "repo"
    notes.mkdir()
    (notes / "README.md").write_text("# リポジトリ\n\n説明。\n", encoding="utf-8")
    env = run_env(oboyu_env, tmp_path)
    db = Path(env["OBOYU_DB"])
    burst = 300  # more than watch.BURST_PATHS: the burst becomes one update of the root
    with watching(env, notes):
        for i in range(burst):  # as fast as a checkout writes them
            folder = notes / "src" / f"pkg{i % 7}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"module{i}.md").write_text(f"# モジュール {i}\n\n番号 {i} の説明。\n", encoding="utf-8")
        wait_for(lambda: document_count(db) == burst + 1, timeout=240)
        shutil.rmtree(notes / "src")  # and back again
        wait_for(lambda: document_count(db) == 1, timeout=60)
    with Store(db, read_only=True) as store:
        assert store.integrity_problems() == []


@pytest.mark.parametrize("raised", ["RuntimeError('Query interrupted')",
                                    "Exception('Error: KeyboardInterrupt: <EMPTY MESSAGE>\\n\\nAt:\\n  x.py(1): f')"])
def test_duckdbs_word_for_ctrl_c_is_said_as_interrupted(raised: str) -> None:
    """Ctrl+C during a DuckDB query reaches Python as RuntimeError('Query interrupted') (duckdb
    1.5.5, seen with SIGINT during a long count), which `oboyu index` said as "unexpected error:
    RuntimeError: Query interrupted" (exit 2). Raised here as DuckDB raises it: the signal takes
    DuckDB tens of seconds to notice in a query long enough to be sure of catching it. The second
    is a KeyboardInterrupt in Python code DuckDB called back, as its binding wraps it."""
    script = ("from oboyu.cli import main as entry\n"
              "def run(**_):\n"
              f"    raise {raised}\n"
              "entry.cli.main = run\n"
              "entry.main()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "oboyu: interrupted\n")


def run_entry(prologue: str, *args: str) -> subprocess.CompletedProcess:
    """`oboyu ARGS` through the command's real entry point, after `prologue` has run."""
    script = f"import sys\n{prologue}\nsys.argv = ['oboyu', *{list(args)!r}]\nfrom oboyu.cli.handoff import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          preexec_fn=None if sys.platform == "win32" else lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to one's own process")
def test_ctrl_c_while_the_commands_load_ends_at_once_as_interrupted() -> None:
    """Ctrl+C while the commands load came back, when it landed in a C extension's set-up, as
    "ImportError: initialization failed" and a segmentation fault, or (caught) as an end by the
    signal with "interrupted" printed. It lands here as DuckDB's module is about to load."""
    prologue = ("import os, signal\n"
                "class Interrupt:\n"
                "    def find_spec(self, name, path=None, target=None):\n"
                "        if name == 'duckdb':\n"
                "            os.kill(os.getpid(), signal.SIGINT)\n"
                "sys.meta_path.insert(0, Interrupt())\n")
    done = run_entry(prologue, "status")
    assert (done.returncode, done.stderr) == (130, "oboyu: interrupted\n")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to one's own process")
def test_ctrl_c_after_the_command_has_finished_leaves_its_exit_status() -> None:
    """A Ctrl+C in the interpreter's shutdown, after the command had said it was done, ended the
    process by the signal (or, with threads still in native code, a crash): a finished run looked
    failed. It lands here in an exit handler, which waits to see whether it is interrupted."""
    prologue = ("import atexit, os, signal, time\n"
                "def late():\n"
                "    os.kill(os.getpid(), signal.SIGINT)\n"
                "    time.sleep(0.2)\n"
                "    sys.stderr.write('shut down\\n')\n"
                "atexit.register(late)\n")
    done = run_entry(prologue, "--version")
    assert (done.returncode, done.stderr) == (0, "shut down\n")
    assert done.stdout.startswith("oboyu, version")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to one's own process")
def test_ctrl_c_during_an_import_lands_after_it(tmp_path: Path) -> None:
    """A Ctrl+C inside a native library's first import (OpenVINO's, mid-run) came back as
    "ImportError: initialization failed", said as "openvino is not installed". The command holds
    it back until the import is done; here the module being imported is interrupted itself."""
    (tmp_path / "slow_to_load.py").write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                                              "for _ in range(20):\n    time.sleep(0.01)\nLOADED = True\n")
    script = ("import signal, sys, time\n"
              "from oboyu.cli.interrupts import interrupt_outside_imports\n"
              "signal.signal(signal.SIGINT, interrupt_outside_imports)\n"
              f"sys.path.insert(0, {str(tmp_path)!r})\n"
              "try:\n"
              "    import slow_to_load\n"
              "    time.sleep(10)\n"
              "except KeyboardInterrupt:\n"
              "    print('interrupted, loaded:', getattr(sys.modules.get('slow_to_load'), 'LOADED', False))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "interrupted, loaded: True\n")
