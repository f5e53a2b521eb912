"""The documentation stays true: docs/cli.md is what scripts/cli_reference.py makes from the
commands now, every relative link in README.md and docs/ leads to a file (and heading) that
exists, and the README stays a front page."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def cli_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)  # a code block: no links, no headings


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where links are not links."""
    return re.sub(r"(`+).*?\1", "", FENCED.sub("", text), flags=re.DOTALL)


@functools.cache
def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the page's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCED.sub("", path.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading[1])  # a link's text only
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # https:, mailto: ... are not checked


def test_cli_reference_is_current():
    expected = cli_reference().render()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == expected, (
        "docs/cli.md is out of date: run python scripts/cli_reference.py")


def test_cli_reference_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch):
    module = cli_reference()
    wide = module.render()
    monkeypatch.setenv("COLUMNS", "40")
    assert module.render() == wide


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page: Path):
    broken = []
    for target in links(page):
        file, _, fragment = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: no heading #{fragment} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_finder_finds_links():
    text = "See [the guide](docs/guide.md#searching), ![shot](docs/tui.png) and `[not](a/link.md)`."
    assert LINK.findall(prose(text)) == ["docs/guide.md#searching", "docs/tui.png"]


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move detail to docs/"
