"""Random trees of bad files (hypothesis): every run ends cleanly, skips with reasons, and leaves
a consistent index that a second run finds up to date. Real files on disk, a real DuckDB file."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pdfs import make_pdf  # tests/pdfs.py

from oboyu.index.embedding_cache import EmbeddingCache
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.store import Store
from oboyu.models.embedding import Embedder
from oboyu.paths import disk_path

MAX_BYTES = 32 * 1024

KINDS = [
    "japanese", "english", "random_text", "binary", "invalid_bytes", "empty", "over_cap", "long_line",
    "unreadable", "broken_symlink", "symlink_loop", "bad_name", "spaces_and_japanese_name", "deep",
    "broken_pdf", "pdf", "latin1", "utf16", "many_sections", "control_characters", "fifo", "junk_folder",
    "late_nul",
]
CACHES = ["none", "fresh", "garbage", "truncated"]


def build(root: Path, kind: str, i: int, text: str, data: bytes) -> None:
    folder = root / f"d{i % 3}"
    folder.mkdir(parents=True, exist_ok=True)
    name = folder / f"f{i}.txt"
    if kind == "japanese":
        name.write_text(f"日本語のメモ {i}。{text}\n", encoding="utf-8")
    elif kind == "english":
        name.with_suffix(".md").write_text(f"# Note {i}\n\nPlain English text. {text}\n", encoding="utf-8")
    elif kind == "random_text":
        name.write_text(text, encoding="utf-8", errors="surrogatepass")
    elif kind == "binary":
        name.write_bytes(b"\x00\x01\x02" + data)
    elif kind == "invalid_bytes":
        name.write_bytes(b"\xff\xfe\xfd" + data + b"\x80\x81")
    elif kind == "empty":
        name.write_bytes(b"")
    elif kind == "over_cap":
        name.write_bytes(b"a" * (MAX_BYTES + 1))
    elif kind == "long_line":
        name.write_text("長い行" * 2500, encoding="utf-8")  # one 7,500-character line, no break
    elif kind == "unreadable":
        name.write_text("読めないはず。\n", encoding="utf-8")
        name.chmod(0)
    elif kind == "broken_symlink":
        name.symlink_to(root / "nowhere.txt")
    elif kind == "symlink_loop":
        (folder / f"loop{i}").symlink_to(folder, target_is_directory=True)
    elif kind == "bad_name":
        os.close(os.open(os.fsencode(folder) + b"/bad\xff" + str(i).encode() + b".txt", os.O_CREAT | os.O_WRONLY, 0o644))
    elif kind == "spaces_and_japanese_name":
        (folder / f"名前 に 空白 {i}.md").write_text(f"# 空白\n\n{text}\n", encoding="utf-8")
    elif kind == "deep":
        deep = folder.joinpath(*[f"level{n}" for n in range(40)])
        deep.mkdir(parents=True, exist_ok=True)
        (deep / "bottom.txt").write_text(f"深い場所のファイル {i}。\n", encoding="utf-8")
    elif kind == "broken_pdf":
        name.with_suffix(".pdf").write_bytes(b"%PDF-1.7\n" + data)
    elif kind == "pdf":
        name.with_suffix(".pdf").write_bytes(make_pdf([[f"Page one of file {i}."], [f"Page two {text.encode('ascii', 'ignore').decode()[:40]}"]]))
    elif kind == "latin1":
        name.write_bytes(f"Caf\xe9 cr\xe8me {i}\n".encode("latin-1"))
    elif kind == "utf16":
        name.write_bytes(f"UTF-16 のメモ {i}\n".encode("utf-16"))
    elif kind == "many_sections":
        sections = "".join(f"## 項目 {n}\n\n説明 {n}。\n\n" for n in range(300))
        name.with_suffix(".md").write_text(f"# 用語集 {i}\n\n{sections}", encoding="utf-8")
    elif kind == "control_characters":
        (folder / f"ctl\x1b[2J\x07{i}\nname.md").write_text(f"# \x1b]0;title\x07見出し\n\n{text}\x1b[31m\n", encoding="utf-8")
    elif kind == "fifo":
        os.mkfifo(folder / f"pipe{i}.md")
    elif kind == "junk_folder":
        (folder / "vendor").mkdir(exist_ok=True)
        (folder / "vendor" / f"lib{i}.md").write_text("# ライブラリ\n\n依存物。\n", encoding="utf-8")
    elif kind == "late_nul":
        name.write_bytes(b"a" * 9000 + b"\x00" + data)


def make_cache(tmp: Path, state: str) -> EmbeddingCache | None:
    """The embedding cache in the state drawn: none, or a file that is new, garbage or cut short."""
    if state == "none":
        return None
    path = tmp / "cache.sqlite3"
    if state != "fresh":
        EmbeddingCache(path).put_many("m", [(os.urandom(16), np.ones(4, np.float32)) for _ in range(500)])
        data = path.read_bytes() if state == "truncated" else os.urandom(8192)
        path.write_bytes(data[: len(data) // 3])
        Path(str(path) + "-wal").unlink(missing_ok=True)
    return EmbeddingCache(path, notify=lambda _message: None)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    files=st.lists(st.tuples(st.sampled_from(KINDS), st.text(max_size=200), st.binary(max_size=200)), min_size=1, max_size=12),
    follow=st.booleans(),
    delete_every=st.integers(min_value=2, max_value=4),
    cache_state=st.sampled_from(CACHES),
    db_via_symlink=st.booleans(),
)
def test_random_bad_trees_index_cleanly_and_stay_consistent(embedder: Embedder, files, follow: bool, delete_every: int,
                                                            cache_state: str, db_via_symlink: bool) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oboyu-fuzz-"))
    try:
        root = tmp / "tree"
        for i, (kind, text, data) in enumerate(files):
            build(root, kind, i, text, data)
        db = tmp / "index.duckdb"
        first_path = db
        if db_via_symlink:  # the same index through a link: one index, one lock
            (tmp / "real").mkdir()
            db.symlink_to(tmp / "real" / "index.duckdb")
            first_path = tmp / "real" / "index.duckdb"
        cache = make_cache(tmp, cache_state)
        first = Indexer(IndexFile(db), embedder, max_bytes=MAX_BYTES, follow_symlinks=follow, cache=cache).index([root])
        assert all(s.reason for s in first.skipped)
        assert all("\x1b" not in s.reason for s in first.skipped)
        with Store(db, read_only=True) as store:
            assert store.integrity_problems() == []
            indexed = {row[0] for row in store.con.execute("SELECT path FROM documents").fetchall()}
        again = Indexer(IndexFile(first_path), embedder, max_bytes=MAX_BYTES, cache=cache).update()
        assert (again.added, again.changed, again.removed, again.renamed) == (0, 0, 0, 0)
        doomed = sorted(indexed)[::delete_every]
        for path in doomed:
            os.unlink(disk_path(path))  # a name that is not UTF-8 is held in the index's own form
        after = Indexer(IndexFile(db), embedder, max_bytes=MAX_BYTES).update()
        assert after.removed == len(doomed)
        with Store(db, read_only=True) as store:
            assert store.integrity_problems() == []
            left = {row[0] for row in store.con.execute("SELECT path FROM documents").fetchall()}
        assert left == indexed - set(doomed)
    finally:
        for dirpath, _dirnames, _ in os.walk(tmp):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(tmp, ignore_errors=True)
