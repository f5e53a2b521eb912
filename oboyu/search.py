"""Vector search over the index, with a query-aware snippet for each result."""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime

from .chunking import split_sentences
from .embedding import Embedder
from .errors import OboyuError
from .store import Filters, Store

SNIPPET_CHARS = 200


@dataclass
class Result:
    rank: int
    score: float
    path: str
    start_line: int
    end_line: int
    heading: str
    title: str | None
    snippet: str
    chunk_id: str

    def to_json(self) -> dict:
        return asdict(self)


def search(store: Store, embedder: Embedder, query: str, k: int = 10, filters: Filters | None = None) -> list[Result]:
    if not query.strip():
        raise OboyuError("the query is empty")
    if k < 1:
        raise OboyuError("-k must be at least 1")
    indexed_with = store.get_meta("model_id")
    if indexed_with is None:
        return []
    if indexed_with != embedder.info.model_id:
        raise OboyuError(
            f"the index was built with model {indexed_with}, but {embedder.info.model_id} is loaded; "
            "run `oboyu index` again to re-embed it"
        )
    vector = embedder.embed_queries([query])[0]
    hits = store.search(vector, k, filters)
    return [
        Result(
            rank=i + 1,
            score=round(float(hit.score), 4),
            path=hit.path,
            start_line=hit.start_line,
            end_line=hit.end_line,
            heading=hit.heading,
            title=hit.title,
            snippet=make_snippet(hit.text, query),
            chunk_id=hit.chunk_id,
        )
        for i, hit in enumerate(hits)
    ]


def make_filters(
    paths: Iterable[str] = (), types: str | Iterable[str] | None = None, since: str | None = None, until: str | None = None
) -> Filters:
    """Filters from command-line style values: globs, `md,txt`, and dates (`2026-01-31`,
    an ISO time, or an age such as `7d` / `12h`)."""
    if isinstance(types, str):
        types = [t for t in (part.strip() for part in types.split(",")) if t]
    return Filters(
        path_globs=tuple(p for p in paths if p),
        types=tuple(types or ()),
        since_ns=parse_time(since) if since else None,
        until_ns=parse_time(until) if until else None,
    )


def parse_time(value: str) -> int:
    """A date, an ISO time or an age (`30m`, `12h`, `7d`, `2w`) as nanoseconds since the epoch."""
    age = re.fullmatch(r"(\d+)\s*([mhdw])", value.strip())
    if age:
        seconds = int(age.group(1)) * {"m": 60, "h": 3600, "d": 86400, "w": 604800}[age.group(2)]
        return int((time.time() - seconds) * 1e9)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise OboyuError(f"not a date: {value!r} (use 2026-01-31, 2026-01-31T09:00 or an age like 7d)") from None
    return int(moment.timestamp() * 1e9)


def _grams(text: str) -> set[str]:
    """Character bigrams (and words for spaced scripts) of NFKC, lower-cased text."""
    norm = unicodedata.normalize("NFKC", text).lower()
    grams = {norm[i : i + 2] for i in range(len(norm) - 1) if not norm[i : i + 2].isspace()}
    grams.update(w for w in re.findall(r"\w+", norm) if len(w) > 1)
    return grams


def make_snippet(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """The sentence that shares most with the query, widened with its neighbours up to `limit`."""
    spans = split_sentences(text) or [(0, len(text))]
    wanted = _grams(query)
    best = max(range(len(spans)), key=lambda i: (len(_grams(text[spans[i][0] : spans[i][1]]) & wanted), -i))
    lo = hi = best
    while True:
        grew = False
        if hi + 1 < len(spans) and spans[hi + 1][1] - spans[lo][0] <= limit:
            hi += 1
            grew = True
        if lo > 0 and spans[hi][1] - spans[lo - 1][0] <= limit:
            lo -= 1
            grew = True
        if not grew:
            break
    start, end = spans[lo][0], spans[hi][1]
    snippet = re.sub(r"\s+", " ", text[start:end]).strip()
    if len(snippet) > limit:
        snippet = snippet[: limit - 1].rstrip() + "…"
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(text.rstrip()) and not snippet.endswith("…") else ""
    return prefix + snippet + suffix
