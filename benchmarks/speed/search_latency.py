"""Warm search latency in one process holding the index in memory (`LiveIndex`, as the app and
the MCP server do): distinct queries (as `oboyu eval` runs them), then every prefix of other
queries as a person types them (the caches of recent queries and passages then help).

    python -m benchmarks.speed.search_latency --db INDEX [--model DIR] [--queries FILE] [--distinct 400] [--typed 60]

INDEX: an index of the queries' documents, e.g. the `--db` of `oboyu eval` on manpages-ja (and
`--model` the model folder it was built with, when not the default). Each set runs twice in the
same process: with the in-memory caches emptied before every search, and with them kept.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import harness
from oboyu.documents import keywords
from oboyu.models import token_match
from oboyu.models.embedding import Embedder
from oboyu.models.loading import load_default_embedder
from oboyu.search import snippets
from oboyu.search.evaluate import read_queries
from oboyu.search.live import LiveIndex


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=harness.dev_set("manpages-ja") / "queries.jsonl")
    parser.add_argument("--distinct", type=int, default=400)
    parser.add_argument("--typed", type=int, default=60)
    parser.add_argument("--model", type=Path, default=None, help="Model folder (default: the default model).")
    args = parser.parse_args()
    embedder = Embedder(args.model) if args.model else load_default_embedder()
    live = LiveIndex(args.db, embedder.load())
    queries = [q.text for q in read_queries(args.queries)]
    live.search(queries[0])  # loads the index into memory

    def empty_caches() -> None:
        snippets._sentences.cache_clear()
        snippets._normalised_sentence.cache_clear()
        snippets._sentence_bigrams.cache_clear()
        keywords._snippet_terms.cache_clear()
        embedder.recent_queries.clear()
        embedder.recent_query_states.clear()
        token_match._recent.clear()

    def measure(texts: list[str], cached: bool) -> str:
        empty_caches()
        times = []
        for text in texts:
            if not cached:
                empty_caches()
            times.append(harness.seconds(lambda: live.search(text, k=10)) * 1000)
        return f"{len(texts)} searches: {harness.latency(times)}"

    rest = queries[1 + args.distinct : 1 + args.distinct + args.typed]
    sets = {"distinct queries": queries[1 : 1 + args.distinct],
            "typed prefixes": [q[:n] for q in rest for n in range(2, len(q) + 1)]}
    for name, texts in sets.items():
        for cached in (False, True):
            print(f"{name}, caches {'kept' if cached else 'emptied'}: {measure(texts, cached)}")


if __name__ == "__main__":
    main()
