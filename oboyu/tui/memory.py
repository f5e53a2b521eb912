"""What the app remembers between runs, for each index file: the searches made (history, for ↑ and
Ctrl+↑/↓), the documents opened (recent), and the last query and mode (restored on start when the
setting `app.restore_last_search` asks for it).

One JSON file in the user state dir (`OBOYU_STATE_DIR` elsewhere), an entry per index. It is
written whole to a temporary file and renamed over the old one, so a killed app leaves the old file
or the new, never half of one; before writing, the file is read again and only this index's entry
replaced, so two apps on two indexes keep each other's. A file that cannot be read as JSON is set
aside (renamed, never deleted) and the app starts with nothing remembered."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from oboyu.paths import state_dir

log = logging.getLogger(__name__)

HISTORY_KEPT = 200  # searches kept per index, the oldest dropped first
RECENT_KEPT = 30  # documents kept in the recent list per index
STATE_FILE = "app-memory.json"


@dataclass(frozen=True)
class Opened:
    """A document opened from the app: where, at which line, when (ISO 8601, local time)."""

    path: str
    line: int = 1
    file_type: str = ""
    opened: str = ""


@dataclass
class IndexMemory:
    history: list[str] = field(default_factory=list)  # oldest first
    recent: list[Opened] = field(default_factory=list)  # newest first
    last_query: str = ""
    last_mode: str = ""

    def remember_search(self, query: str) -> bool:
        """Add `query` as the newest search (an earlier copy moves up); False when there is nothing
        to add."""
        query = " ".join(query.split())
        if not query or (self.history and self.history[-1] == query):
            return False
        self.history = [q for q in self.history if q != query][-(HISTORY_KEPT - 1):] + [query]
        return True

    def remember_opened(self, path: str, line: int, file_type: str) -> None:
        entry = Opened(path, line, file_type, datetime.now().isoformat(timespec="seconds"))
        self.recent = [entry] + [o for o in self.recent if o.path != path][: RECENT_KEPT - 1]


class AppMemory:
    """The remembered state of one index, read at start and saved after each change."""

    def __init__(self, index: Path, file: Path | None = None):
        self.file = file if file is not None else state_dir() / STATE_FILE
        self.key = str(index.expanduser().resolve())
        self.of_index = _entry(_read(self.file).get(self.key))

    def save(self) -> None:
        """Write this index's entry, keeping every other index's as the file has it now. A state
        dir that cannot be written costs only the memory, logged once a save."""
        try:
            everything = _read(self.file)
            everything[self.key] = asdict(self.of_index)
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=self.file.parent,
                                             prefix=".app-memory-", suffix=".tmp", delete=False) as out:
                json.dump(everything, out, indent=1)  # ensure_ascii: a name's lone surrogates survive
            os.replace(out.name, self.file)
        except OSError as exc:
            log.warning("cannot save the app's memory in %s: %s", self.file, exc)


def _read(file: Path) -> dict:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        aside = file.with_name(f"{file.name}.unreadable-{datetime.now():%Y%m%d-%H%M%S}")
        log.warning("cannot read the app's memory %s (%s); set aside as %s", file, exc, aside.name)
        try:
            file.rename(aside)
        except OSError:
            pass
        return {}


def _entry(data: object) -> IndexMemory:
    """An index's entry as written by any version: what does not fit is left out, never fatal."""
    if not isinstance(data, dict):
        return IndexMemory()
    history = [q for q in data.get("history", []) if isinstance(q, str) and q.strip()][-HISTORY_KEPT:]
    recent = []
    for item in data.get("recent", []):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            line = item.get("line")
            recent.append(Opened(item["path"], line if isinstance(line, int) and line > 0 else 1,
                                 str(item.get("file_type") or ""), str(item.get("opened") or "")))
    last_query, last_mode = data.get("last_query"), data.get("last_mode")
    return IndexMemory(history, recent[:RECENT_KEPT], last_query if isinstance(last_query, str) else "",
                       last_mode if isinstance(last_mode, str) else "")
