"""`oboyu query` and `oboyu eval`: searching the index, and measuring how well it finds."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TextIO

import click

from oboyu.cli.common import EXIT_NO_RESULTS, db_option, db_path, index_model, open_reading
from oboyu.progress import ProgressLine
from oboyu.search.query import MODES, Result


def highlight(text: str, spans: list[tuple[int, int]]) -> str:
    """Matched words in bold yellow."""
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(click.style(text[start:end], fg="yellow", bold=True))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


@click.command()
@click.argument("text", required=False)
@db_option
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Number of results.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--path", "paths", multiple=True, metavar="GLOB", help="Only paths matching GLOB (`!GLOB` excludes); repeatable.")
@click.option("--type", "types", metavar="EXT,...", help="Only these extensions or file types, e.g. md,txt.")
@click.option("--since", metavar="DATE", help="Only files modified since DATE (2026-01-31, or an age like 7d).")
@click.option("--until", metavar="DATE", help="Only files modified before DATE.")
@click.option("--root", "roots", multiple=True, metavar="NAME",
              help="Only files of this indexed folder (its name or path; `oboyu status` lists them); repeatable.")
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="Meaning (vector), words (keyword), or both fused.")
@click.option("--chunks", "by_chunk", is_flag=True, help="List passages rather than one result per file.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score for every result.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read one query a line; write one JSON line of results each.")
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the best passages with the installed reranker (default: when one is installed).")
def query(text: str | None, db: Path | None, k: int, as_json: bool, paths: tuple[str, ...], types: str | None,
          since: str | None, until: str | None, roots: tuple[str, ...], mode: str, by_chunk: bool, explain: bool,
          from_stdin: bool, rerank: bool | None) -> None:
    """Search the index."""
    from oboyu.models.loading import load_embedder, load_reranker
    from oboyu.search.filters import make_filters
    from oboyu.search.query import search
    from oboyu.search.resident import ResidentIndex

    if (text is None) == (not from_stdin):
        raise click.UsageError("give either a query TEXT or --stdin")
    with open_reading(db_path(db)) as store:
        folders = [root.path for root in store.roots_named(list(roots))]
        filters = make_filters(paths, types, since, until, folders)
        embedder = load_embedder(store.model_id(), progress=ProgressLine()) if mode != "keyword" else None
        reranker = load_reranker(rerank)
        if from_stdin:  # the model and the index are loaded once for all the queries
            ranker = ResidentIndex().refresh(store) if filters.is_empty() else store
            out = sys.stdout
            for line in sys.stdin:
                if line.strip():
                    batch = search(ranker, embedder, line.strip(), k, filters, mode, not by_chunk, reranker)
                    out.write(json.dumps([r.to_json() for r in batch], ensure_ascii=False) + "\n")
                    out.flush()
            return
        results = search(store, embedder, text or "", k, filters, mode=mode, group=not by_chunk, reranker=reranker)
    if as_json:
        sys.stdout.write(json.dumps([r.to_json() for r in results], ensure_ascii=False, indent=2) + "\n")
    else:
        _print_results(results, explain)
    if not results:
        raise SystemExit(EXIT_NO_RESULTS)


def _print_results(results: list[Result], explain: bool) -> None:
    out = sys.stdout
    colour = _colour(out)
    for r in results:
        location = r.location
        out.write(f"{r.rank:>2}. {r.score:.3f}  {click.style(location, bold=True) if colour else location}\n")
        heading = r.heading or r.title
        if r.other_matches:
            heading = f"{heading}  (+{r.other_matches} more in this file)" if heading else f"(+{r.other_matches} more in this file)"
        if heading:
            out.write(f"    {click.style(heading, fg='cyan') if colour else heading}\n")
        out.write(f"    {highlight(r.snippet, r.matches) if colour else r.snippet}\n")
        if explain:
            legs = ", ".join(
                f"{leg} rank {r.ranks[leg] if r.ranks[leg] else '-'} score {r.leg_scores[leg] if r.leg_scores[leg] is not None else '-'}"
                for leg in r.ranks
            )
            out.write(f"    [{r.mode}: {legs}]\n")
    if not results:
        click.echo("no results", err=True)


@click.command("eval")
@click.option("--docs", "docs", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Documents (JSON lines, gzip allowed): id, text.")
@click.option("--queries", "queries", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Queries (JSON lines): query, relevant_doc_id or relevant_doc_ids.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(MODES),
              help="Modes to measure (default: all three); repeatable.")
@db_option
@click.option("--model", metavar="ID", help="Embed with this installed model (default: the --db index's, or the default model).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def eval_command(docs: Path, queries: Path, modes: tuple[str, ...], db: Path | None, model: str | None,
                 as_json: bool) -> None:
    """Measure search quality: Recall@1, Recall@10, MRR@10, nDCG@10 and latency per mode.

    Indexes the documents' text into a temporary index, or into --db (reused when it exists)."""
    import dataclasses
    import tempfile

    from oboyu.index.store import Store
    from oboyu.models.loading import load_embedder
    from oboyu.search.evaluate import evaluate, index_corpus, read_queries, write_corpus

    query_list = read_queries(queries)
    progress = ProgressLine()
    embedder = load_embedder(index_model(db) if db else None, model, progress)
    with tempfile.TemporaryDirectory(prefix="oboyu-eval-") as tmp:
        path = db or Path(tmp) / "eval.duckdb"
        with Store(path) as store:
            if store.counts()[0] == 0:
                folder = (path.parent / (path.stem + "-docs")) if db else Path(tmp) / "docs"
                count = write_corpus(docs, folder)
                progress.message(f"indexing {count} documents into {path}")
                stats = index_corpus(store, embedder, folder, progress)
                chunks = store.counts()[1]
                progress.message(
                    f"indexed {count} documents, {chunks} chunks in {stats.seconds:.1f}s "
                    f"({chunks / max(stats.seconds, 1e-9):.1f} chunks/s)"
                )
            scores = evaluate(store, embedder, query_list, list(modes) or list(MODES))
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in scores], indent=2))
        return
    click.echo(f"{'mode':<8} {'queries':>7} {'R@1':>6} {'R@10':>6} {'MRR@10':>7} {'nDCG@10':>8} {'p50 ms':>7} {'p95 ms':>7}")
    for s in scores:
        click.echo(
            f"{s.mode:<8} {s.queries:>7} {s.recall_at_1:6.3f} {s.recall_at_10:6.3f} {s.mrr_at_10:7.3f} "
            f"{s.ndcg_at_10:8.3f} {s.latency_p50_ms:7.1f} {s.latency_p95_ms:7.1f}"
        )
