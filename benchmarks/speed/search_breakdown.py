"""Where the time of one hybrid query goes, step by step, in one warm process.

    python -m benchmarks.speed.search_breakdown INDEX.duckdb [--runs 3]

Runs four Japanese queries `runs` times each and prints the median of every step.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import harness
from oboyu.documents.keywords import words
from oboyu.index.store import Store
from oboyu.models.loading import load_default_embedder
from oboyu.modes import Mode
from oboyu.search.query import best_per_file, fuse, search
from oboyu.search.rankers import SqlRanker
from oboyu.search.snippets import make_snippet

QUERIES = ["絶対パスを表示する", "ファイルをコピーする", "ネットワークインターフェースを設定する", "ソケットへの接続を受ける"]


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("db", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    embedder = load_default_embedder()
    steps = harness.Steps()
    timed = steps.time

    with Store(args.db, read_only=True) as store:
        ranker = SqlRanker(store)
        for query in QUERIES * args.runs:
            vector = timed("embed query", lambda: embedder.embed_queries([query])[0])
            by_vector = timed("vector leg", lambda: ranker.vector_scores(vector, 100))
            by_lead = timed("lead leg", lambda: ranker.vector_scores(vector, 100, leads_only=True))
            by_words = timed("keyword leg", lambda: ranker.keyword_scores(words(query), 100))
            by_lead_words = timed("lead words leg", lambda: ranker.keyword_scores(words(query), 100, leads_only=True))
            legs = {"vector": by_vector, "lead": by_lead, "keyword": by_words, "lead_words": by_lead_words}
            files = timed("files of chunks", lambda: ranker.files_of_chunks(list({c for leg in legs.values() for c, _ in leg})))
            fused = timed("fusion", lambda: fuse(legs, Mode.HYBRID, files))
            chosen, _ = timed("group per file", lambda: best_per_file(files, fused, 10))
            hits = timed("fetch passages", lambda: ranker.chunks_by_id([cid for cid, _ in chosen]))
            timed("snippets", lambda: [make_snippet(hit.text, query) for hit in hits.values()])
            timed("whole search()", lambda: search(ranker, embedder, query, 10))
    for step, ms in steps.medians().items():
        print(f"{step:>16} {ms:7.1f} ms")


if __name__ == "__main__":
    main()
