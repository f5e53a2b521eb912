"""Remakes docs/tui.svg and docs/tui.png, the README's picture: the real app (`oboyu`) searching the
example notes in a real terminal.

    python scripts/tui_screenshot.py [--query TEXT] [--cols 120] [--rows 32]

It indexes a copy of examples/notes into a fresh home folder (so that paths read ~/notes/...),
starts `oboyu` in a tmux session of a fixed size (TERM=xterm-256color, COLORTERM=truecolor),
types the query, waits until the screen stops changing, captures the pane with its colours
(`tmux capture-pane -e`) and draws that with rich as an SVG. rich sizes each text run by its
length in characters, so a run of Japanese (two cells a character) came out at half its width
and highlights had gaps; the runs are resized by their width in cells here. The PNG is made from
the SVG by headless Chromium, else rsvg-convert, else cairosvg; with none of them only the SVG is
written.

Needs tmux, and for the PNG `apt-get install chromium fonts-noto-cjk` (a CJK font is what draws
the Japanese). The model comes from OBOYU_CACHE_DIR (else the user cache dir) and is built there
on first use.
"""

from __future__ import annotations

import argparse
import html
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.cells import cell_len
from rich.console import CONSOLE_SVG_FORMAT, Console
from rich.terminal_theme import TerminalTheme
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oboyu.paths import cache_dir  # noqa: E402

QUERY = "確定申告の期限"  # one good answer, one weaker one above the line, the rest under "weak matches"
READY = "Search your documents"  # the search box's placeholder: the app has started
FONT_ASPECT = 0.61  # rich's cell width / height; DejaVu Sans Mono is 0.60
# A CJK font draws a character 1 em wide, where two cells are 1.22 em: enlarged to fill them, or
# each run of Japanese is spaced out to its width
CJK = """
    @font-face {{
        font-family: "CJK cells";
        src: local("Noto Sans Mono CJK JP"), local("NotoSansMonoCJKjp-Regular"), local("Noto Sans CJK JP");
        font-weight: 400;
        size-adjust: 122%;
    }}
    @font-face {{
        font-family: "CJK cells";
        src: local("Noto Sans Mono CJK JP Bold"), local("NotoSansMonoCJKjp-Bold"), local("Noto Sans CJK JP Bold");
        font-weight: 700;
        size-adjust: 122%;
    }}
"""
FONTS = "'DejaVu Sans Mono', Menlo, Consolas, 'CJK cells', monospace"
# the terminal's default colours: those of Textual's dark theme, for cells the app leaves unset
THEME = TerminalTheme((18, 18, 18), (224, 224, 224), [(0, 0, 0)] * 8, [(255, 255, 255)] * 8)


class Tmux:
    """A tmux server of our own (its own socket), so that nothing else's sessions are touched."""

    def __init__(self, env: dict[str, str]):
        self.base = ["tmux", "-L", f"oboyu-shot-{os.getpid()}", "-f", "/dev/null"]
        self.env = env

    def __call__(self, *args: str) -> str:
        done = subprocess.run([*self.base, *args], env=self.env, check=True, capture_output=True, text=True)
        return done.stdout

    def capture(self, colours: bool = False) -> str:
        return self("capture-pane", "-p", "-N", *(["-e"] if colours else []), "-t", "shot")

    def wait_for(self, text: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while text not in self.capture():
            if time.monotonic() > end:
                sys.exit(f"tui_screenshot: {text!r} did not appear in {timeout:.0f} s; the screen:\n{self.capture()}")
            time.sleep(0.1)

    def wait_still(self, quiet: float, timeout: float) -> str:
        """The coloured screen once its text has not changed for `quiet` seconds (colours alone
        keep changing: the cursor blinks)."""
        end = time.monotonic() + timeout
        last, since = self.capture(), time.monotonic()
        while time.monotonic() - since < quiet:
            if time.monotonic() > end:
                sys.exit(f"tui_screenshot: the screen kept changing for {timeout:.0f} s")
            time.sleep(0.1)
            screen = self.capture()
            if screen != last:
                last, since = screen, time.monotonic()
        return self.capture(colours=True)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], env=self.env, capture_output=True)


def shoot(query: str, cols: int, rows: int) -> str:
    """The screen of `oboyu` answering `query`, as ANSI text."""
    oboyu = Path(sys.executable).with_name("oboyu")
    if not oboyu.exists():
        oboyu = Path(shutil.which("oboyu") or sys.exit("tui_screenshot: no oboyu command beside this Python or on PATH"))
    if not shutil.which("tmux"):
        sys.exit("tui_screenshot: needs tmux (apt-get install tmux)")
    cache = cache_dir()  # before HOME changes
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        notes = home / "notes"
        shutil.copytree(ROOT / "examples" / "notes", notes)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("XDG_", "OBOYU_", "TMUX")) and key not in ("TERM", "COLORTERM")}
        env.update(HOME=str(home), LANG="C.UTF-8", OBOYU_CACHE_DIR=str(cache))
        subprocess.run([str(oboyu), "index", str(notes), "-q"], env=env, check=True)  # the default index file
        tmux = Tmux(env)
        try:
            app = ["env", "TERM=xterm-256color", "COLORTERM=truecolor", str(oboyu)]
            tmux("new-session", "-d", "-s", "shot", "-x", str(cols), "-y", str(rows), shlex.join(app))
            tmux.wait_for(READY, timeout=60)
            tmux("send-keys", "-t", "shot", "-l", query)
            tmux.wait_for(f"{query} ", timeout=10)
            tmux.wait_for("Results ·", timeout=60)
            return tmux.wait_still(quiet=1.5, timeout=60)
        finally:
            tmux.close()


def to_svg(screen: str, cols: int) -> str:
    console = Console(record=True, width=cols, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      legacy_windows=False)
    console.print(Text.from_ansi(screen.rstrip("\n")), no_wrap=True, overflow="crop", soft_wrap=False)
    template = CONSOLE_SVG_FORMAT.replace("font-family: Fira Code, monospace;", f"font-family: {FONTS};")
    template = template.replace("    <style>\n", "    <style>\n" + CJK, 1)
    assert template.count("CJK cells") == 3, "rich's SVG template changed: set the fonts anew"
    svg = console.export_svg(title="oboyu", theme=THEME, code_format=template, font_aspect_ratio=FONT_ASPECT)
    return fit_wide_text(svg, 20 * FONT_ASPECT)


def fit_wide_text(svg: str, char_width: float) -> str:
    """Size each text run by its width in cells (rich uses its length in characters). Trailing
    spaces are dropped: backgrounds are drawn apart, and the file is smaller."""

    def refit(match: re.Match[str]) -> str:
        text = re.sub("(&#160;)+$", "", match["text"])
        cells = cell_len(html.unescape(text).replace("\xa0", " "))
        return f'{match["head"]}textLength="{format(char_width * cells, "g")}"{match["tail"]}>{text}</text>'

    return re.sub(r'(?P<head><text [^>]*?)textLength="[^"]*"(?P<tail>[^>]*)>(?P<text>[^<]*)</text>', refit, svg)


def to_png(svg: Path, png: Path) -> str | None:
    """Draws the SVG as a PNG with whatever can; says what did it, or None."""
    box = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg.read_text())
    assert box, "rich's SVG has no viewBox"
    width, height = float(box[1]), float(box[2])
    size = f"{round(width)},{round(height)}"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if browser := shutil.which(name):
            png.unlink(missing_ok=True)
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--force-device-scale-factor=1", "--default-background-color=00000000",
                            f"--window-size={size}", f"--screenshot={png}", svg.as_uri()],
                           check=True, capture_output=True)
            if png.exists():
                return name
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", "-w", str(round(width)), str(svg), "-o", str(png)], check=True)
        return "rsvg-convert"
    try:
        import cairosvg
    except ImportError:
        return None
    cairosvg.svg2png(url=str(svg), write_to=str(png))
    return "cairosvg"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--query", default=QUERY)
    parser.add_argument("--cols", type=int, default=120)
    parser.add_argument("--rows", type=int, default=32)
    args = parser.parse_args()
    screen = shoot(args.query, args.cols, args.rows)
    svg = ROOT / "docs" / "tui.svg"
    svg.write_text(to_svg(screen, args.cols), encoding="utf-8")
    print(f"wrote {svg.relative_to(ROOT)}")
    png = svg.with_suffix(".png")
    tool = to_png(svg, png)
    print(f"wrote {png.relative_to(ROOT)} with {tool}" if tool else
          f"no PNG: install chromium (or rsvg-convert, or cairosvg); {png.relative_to(ROOT)} left as it was")


if __name__ == "__main__":
    main()
