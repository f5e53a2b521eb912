import os
from pathlib import Path

from oboyu.documents.crawl import FileEntry, Hidden, IgnoredFolder, Skipped, crawl


def write(path: Path, text: str = "text\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def found(root: Path, **kw) -> tuple[set[str], dict[str, str]]:
    files, skipped = set(), {}
    for item in crawl([root], **kw):
        if isinstance(item, FileEntry):
            files.add(item.path.relative_to(root).as_posix())
        else:
            assert isinstance(item, Skipped)
            skipped[item.path.relative_to(root).as_posix()] = item.reason
    return files, skipped


def test_gitignore_nested_and_junk(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "*.log.md\nsecret/\n")
    write(tmp_path / "keep.md")
    write(tmp_path / "debug.log.md")
    write(tmp_path / "secret" / "a.md")
    write(tmp_path / "sub" / ".gitignore", "!important.log.md\ndrafts/\n")
    write(tmp_path / "sub" / "important.log.md")
    write(tmp_path / "sub" / "other.log.md")
    write(tmp_path / "sub" / "drafts" / "d.md")
    write(tmp_path / "sub" / "notes.txt")
    write(tmp_path / ".hidden" / "h.md")
    write(tmp_path / "node_modules" / "pkg" / "readme.md")
    write(tmp_path / "__pycache__" / "x.py")
    write(tmp_path / "image.png")
    files, skipped = found(tmp_path)
    assert files == {"keep.md", "sub/important.log.md", "sub/notes.txt"}
    assert skipped["image.png"] == "unsupported file type"
    # junk folders and hidden entries are reported, with how to bring them back; ignore files are not
    assert set(skipped) == {"image.png", "node_modules", "__pycache__", ".hidden"}
    assert skipped["node_modules"].startswith("junk folder") and "!node_modules/" in skipped["node_modules"]
    assert skipped[".hidden"] == Hidden(tmp_path / ".hidden").reason and "!NAME" in skipped[".hidden"]


def test_a_bang_line_inside_an_ignored_folder_is_said_to_do_nothing(tmp_path: Path) -> None:
    """As in git, `drafts/` then `!drafts/keep.md` leaves keep.md out: a user trial expected it
    indexed and heard nothing. The walk now says why (with -v), and how to write it instead."""
    write(tmp_path / "drafts" / "keep.md")
    write(tmp_path / "drafts" / "other.md")
    write(tmp_path / "old" / "a.md")
    write(tmp_path / "top.md")
    write(tmp_path / ".gitignore", "drafts/\n!drafts/keep.md\nold/\n")
    files, skipped = found(tmp_path)
    assert files == {"top.md"} and set(skipped) == {"drafts"}  # old/: ignored, and no line asks for it back
    said = skipped["drafts"]
    assert "`!drafts/keep.md` cannot bring back" in said and "`drafts/*`" in said
    assert all(isinstance(item, IgnoredFolder) for item in crawl([tmp_path]) if isinstance(item, Skipped))
    write(tmp_path / ".gitignore", "drafts/*\n!drafts/keep.md\nold/\n")  # the way the note says
    assert found(tmp_path) == ({"top.md", "drafts/keep.md"}, {})
    write(tmp_path / "drafts" / "deeper" / "x.md")
    # `drafts/**` names what is inside drafts, not drafts (git keeps keep.md; a user trial's folder
    # was left out whole, and told to write `drafts/*`); a folder inside it stays ignored, as in git
    write(tmp_path / ".gitignore", "drafts/**\n!drafts/keep.md\nold/\n")
    assert found(tmp_path) == ({"top.md", "drafts/keep.md"}, {})
    # without such a line, `name/**` leaves the folder out whole and unsaid, a junk folder too
    write(tmp_path / "build" / "out.md")
    write(tmp_path / ".gitignore", "drafts/**\nold/\nbuild/**\n")
    assert found(tmp_path) == ({"top.md"}, {})


def test_a_bang_line_brings_a_hidden_entry_back(tmp_path: Path) -> None:
    write(tmp_path / ".notes" / "plan.md")
    write(tmp_path / ".draft.md")
    write(tmp_path / ".cache" / "x.md")
    write(tmp_path / "visible.md")
    assert found(tmp_path)[0] == {"visible.md"}
    write(tmp_path / ".oboyuignore", "!.notes/\n!.draft.md\n")
    files, skipped = found(tmp_path)
    assert files == {"visible.md", ".notes/plan.md", ".draft.md"} and set(skipped) == {".cache"}
    hidden = [item for item in crawl([tmp_path]) if isinstance(item, Hidden)]
    assert [item.path.name for item in hidden] == [".cache"]


def test_a_gitignore_bang_line_speaks_to_git_not_of_hidden_entries(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", ".*\n!.gitignore\n!.github/\ndata/*\n!data/.gitkeep\n")
    write(tmp_path / ".github" / "workflows" / "ci.md")
    write(tmp_path / "data" / ".gitkeep")
    write(tmp_path / "notes.md")
    files, skipped = found(tmp_path)
    assert files == {"notes.md"}  # not .gitignore, .github/ or data/.gitkeep
    assert set(skipped) == {".github", "data/.gitkeep"} and all(isinstance(i, Hidden) for i in crawl([tmp_path]) if i.path.name != "notes.md")


def test_size_cap(tmp_path: Path) -> None:
    write(tmp_path / "big.txt", "x" * 2000)
    write(tmp_path / "small.txt")
    files, skipped = found(tmp_path, max_bytes=1000)
    assert files == {"small.txt"}
    assert "size cap" in skipped["big.txt"]


def test_symlinks_not_followed_unless_asked(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "o.md")
    root = tmp_path / "root"
    write(root / "a.md")
    os.symlink(outside, root / "link")
    os.symlink(root, root / "loop")
    os.symlink(tmp_path / "missing.md", root / "broken.md")
    files, skipped = found(root)
    assert files == {"a.md"}
    files, skipped = found(root, follow_symlinks=True)
    assert files == {"a.md", "link/o.md"}
    assert skipped["broken.md"] == "broken symlink"
    assert "already visited" in skipped["loop"]


def test_gitignore_above_a_nested_root_applies(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "sub/secret.md\n")
    write(tmp_path / "sub" / "secret.md")
    write(tmp_path / "sub" / "open.md")
    files, _ = found(tmp_path / "sub")
    assert files == {"open.md"}


def test_a_file_reached_twice_through_links_is_listed_once_at_its_real_path(tmp_path: Path) -> None:
    """A user trial: the walk kept whichever path came first in name order, here the link, and
    skipped the real file as "same file as another path"."""
    write(tmp_path / "z" / "real.md")
    os.symlink(tmp_path / "z" / "real.md", tmp_path / "a-link.md")
    files, skipped = found(tmp_path, follow_symlinks=True)
    assert files == {"z/real.md"} and skipped == {"a-link.md": "same file as another path (symlink)"}


def test_a_symlink_not_followed_is_said_with_v_not_counted(tmp_path: Path) -> None:
    write(tmp_path / "a.md")
    os.symlink(tmp_path / "a.md", tmp_path / "link.md")
    os.symlink(tmp_path / "gone.md", tmp_path / "broken.md")
    items = [item for item in crawl([tmp_path]) if isinstance(item, Skipped)]
    assert {item.path.name for item in items} == {"link.md", "broken.md"}
    assert all(isinstance(item, Hidden) and "--follow-symlinks" in item.reason for item in items)


def test_a_file_given_by_name_is_its_own_root(tmp_path: Path) -> None:
    note = write(tmp_path / "note.md")
    (entry,) = list(crawl([note]))
    assert entry.root == note
