"""`oboyu query` and `oboyu eval`: searching the index, and measuring how well it finds."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import click

from oboyu.api import READ_WAIT_SECONDS
from oboyu.cli.common import EXIT_NO_RESULTS, db_option, db_path, index_model, open_reading
from oboyu.cli.missing import say_missing
from oboyu.cli.output import FORMATS, not_on_disk, write_results
from oboyu.config import settings
from oboyu.errors import OboyuError
from oboyu.index.store import Store
from oboyu.modes import MODE_NAMES, Mode
from oboyu.progress import ProgressLine
from oboyu.search.filters import Filters, describe_age, make_filters
from oboyu.search.languages import ACROSS_LANGUAGES
from oboyu.search.live import LiveIndex
from oboyu.search.query import Result
from oboyu.search.rankers import SqlRanker
from oboyu.text import json_safe, valid_text, visible


def _not_nan(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """click's FloatRange lets `nan` through (every comparison with it is false)."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("nan is not a number from 0 to 1", ctx, param)
    return value


@click.command()
@click.argument("text", required=False)
@db_option
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=None,
              help="Number of results (default: 10, or query.k in the settings).")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default=None,
              help="text (default); json (an array); jsonl (an object a line); csv (a header row, a row a result); "
                   "md (a Markdown list to paste into notes); files (each file once, one a line, for xargs); files0 (each "
                   "ended by NUL, for xargs -0: any name, as it is).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--min-score", "min_score", type=click.FloatRange(0, 1), default=None, metavar="X", callback=_not_nan,
              help="Only results whose confidence is at least X (0 to 1), of those shown (weak ones too with --all).")
@click.option("--path", "paths", multiple=True, metavar="PATTERN", help="Only files matching PATTERN, as in .gitignore "
              "(*.md, drafts/, /top.md; `!PATTERN` leaves out), inside each indexed folder; repeatable.")
@click.option("--type", "types", metavar="EXT,...", help="Only these extensions or file types, e.g. md,txt.")
@click.option("--since", metavar="DATE", help="Only files modified since DATE (2026-01-31, today, yesterday, or an "
              "age: 30min, 12h, 7d, 2w, 6mo, 1y; m is minutes).")
@click.option("--until", metavar="DATE", help="Only files modified before DATE.")
@click.option("--root", "roots", multiple=True, metavar="NAME",
              help="Only files of this indexed folder (its name or path; `oboyu status` lists them); repeatable.")
@click.option("--mode", "mode_name", type=click.Choice(MODE_NAMES), default=None,
              help="Meaning (vector), words (keyword), or both fused (default: hybrid, or query.mode in the settings).")
@click.option("--chunks", "by_chunk", is_flag=True, help="List passages rather than one result per file.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score, and the evidence of the confidence.")
@click.option("--all", "show_all", is_flag=True,
              help="List every ranked result, weak matches too (by default only confident ones are shown).")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read one query a line; write one JSON line of results each.")
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the best passages with the installed reranker (default: when one is installed).")
def query(text: str | None, db: Path | None, k: int | None, output_format: str | None, as_json: bool,
          min_score: float | None, paths: tuple[str, ...], types: str | None, since: str | None, until: str | None,
          roots: tuple[str, ...], mode_name: str | None, by_chunk: bool, explain: bool, from_stdin: bool,
          rerank: bool | None, show_all: bool) -> None:
    """Search the index.

    Each result's score is its confidence: the estimated probability that it is what you asked
    for. Weak matches are left out unless --all (beside a good match, only those far under it);
    when none is left, oboyu says "no good match" (exit 1). Results kept in case but under the
    good-match line come after a "less likely" divider (all of them, when none is over it). Asked
    in English of Japanese notes, their scores are `?`: how sure each is cannot be told. On a
    terminal, each path is a link to its file. While `oboyu serve`, the app or `oboyu mcp` holds
    this index, the query is answered there, warm, with the same output."""
    from oboyu.models.loading import load_embedder, load_reranker

    if (text is None) == (not from_stdin):
        raise click.UsageError("give either a query TEXT or --stdin")
    if from_stdin and output_format not in (None, "json"):
        raise click.UsageError("--stdin always writes one JSON array a line; leave out --format")
    asked = Asked.of(text or "", k, output_format, as_json, min_score, paths, types, since, until, roots, mode_name,
                     by_chunk, explain, show_all)
    path = db_path(db)
    if not from_stdin:
        code = answer_once(asked, path, rerank, sys.stdout, sys.stderr)
        if code:
            raise SystemExit(code)
        return
    with open_reading(path) as store:  # the model is loaded once; the index is held like the app holds it
        filters = asked.filters(store, sys.stderr)
        embedder = load_embedder(store.model_id(), progress=ProgressLine()) if asked.mode.uses_vectors else None
        _say_coverage(asked.mode, *store.vector_coverage(), sys.stderr)
    _answer_lines(LiveIndex(path, embedder, load_reranker(rerank), read_wait=READ_WAIT_SECONDS), filters, asked.mode,
                  asked.k, asked.group, asked.show_all, asked.min_score)


@dataclass(frozen=True)
class Asked:
    """One `oboyu query TEXT`, its options checked and the settings' defaults filled in."""

    text: str
    k: int
    mode: Mode
    output_format: str
    explain: bool
    min_score: float | None
    paths: tuple[str, ...]
    types: str | None
    since: str | None
    until: str | None
    roots: tuple[str, ...]
    group: bool
    show_all: bool

    @classmethod
    def of(cls, text: str, k: int | None, output_format: str | None, as_json: bool, min_score: float | None,
           paths: tuple[str, ...], types: str | None, since: str | None, until: str | None, roots: tuple[str, ...],
           mode_name: str | None, by_chunk: bool, explain: bool, show_all: bool) -> Asked:
        if as_json and output_format not in (None, "json"):
            raise click.UsageError(f"--json is --format json; give one of them, not --format {output_format} too")
        output_format = "json" if as_json else output_format or "text"
        if explain and output_format in ("csv", "md", "files", "files0"):
            raise click.UsageError(f"--explain shows in --format text (JSON always holds the evidence), not in {output_format}")
        return cls(text, k or settings().k, Mode(mode_name) if mode_name else settings().mode, output_format, explain,
                   min_score, paths, types, since, until, roots, not by_chunk, show_all)

    @property
    def is_plain(self) -> bool:
        """No filter asked for."""
        return not self.paths and self.types is None and self.since is None and self.until is None and not self.roots

    def filters(self, store: Store, err: TextIO) -> Filters:
        """The filters asked for (the folders named looked up in the index), saying what an age means."""
        folders = [root.path for root in store.roots_named(list(self.roots))]
        filters = make_filters(self.paths, self.types, self.since, self.until, folders)
        for option, value in (("--since", self.since), ("--until", self.until)):
            if value and (meaning := describe_age(value)):
                click.echo(f"oboyu: {option} {meaning} ago", file=err)  # 6m is minutes, 6mo months
        return filters


def answer_once(asked: Asked, path: Path, rerank: bool | None, out: TextIO, err: TextIO) -> int:
    """Answer from the index file, loading the model for this one query; returns the exit code."""
    from oboyu.models.loading import load_embedder, load_reranker
    from oboyu.search.query import search
    from oboyu.search.resident import ResidentIndex

    with open_reading(path) as store:
        filters = asked.filters(store, err)
        embedder = load_embedder(store.model_id(), progress=ProgressLine()) if asked.mode.uses_vectors else None
        _say_coverage(asked.mode, *store.vector_coverage(), err)
        # the index's arrays when made: a large index then costs a scan of its int8 codes, not of its tables
        resident = ResidentIndex.if_made(store)
        ranker = (resident if asked.is_plain else None) or SqlRanker(store)
        results = search(ranker, embedder, asked.text, asked.k, filters, mode=asked.mode, group=asked.group,
                         reranker=load_reranker(rerank), everywhere_ranker=resident)
    return show_answer(asked, results, out, err)


def answer_warm(asked: Asked, live: LiveIndex, out: TextIO, err: TextIO, env: Mapping[str, str]) -> int:
    """Answer from an index held in memory with its model loaded (`oboyu serve`, the app, `oboyu
    mcp`); the same output as answer_once."""
    filters = None
    if not asked.is_plain:  # a plain query never opens the file: the index in memory answers it
        with live.reading() as store:
            filters = asked.filters(store, err)
    _say_coverage(asked.mode, *live.coverage(), err)
    results = live.search(asked.text, asked.mode, asked.k, filters, asked.group).results
    return show_answer(asked, results, out, err, env)


def show_answer(asked: Asked, results: list[Result], out: TextIO, err: TextIO,
                env: Mapping[str, str] | None = None) -> int:
    shown = _shown(results, asked.show_all, asked.min_score)
    gone = not_on_disk(shown)
    write_results(shown, asked.output_format, asked.explain, out, env, gone)
    if any(r.across_languages for r in shown):
        click.echo(f"oboyu: {ACROSS_LANGUAGES}", file=err)
    say_missing(len(gone), err)
    if not shown:
        _say_no_match(asked, results, err)
        return EXIT_NO_RESULTS
    return 0


def _say_coverage(mode: Mode, embedded: int, chunks: int, err: TextIO) -> None:
    from oboyu.index.reports import meaning_share

    if mode.uses_vectors and embedded < chunks:
        click.echo(f"oboyu: meaning search reaches {meaning_share(embedded, chunks)} of passages so far; the rest are "
                   "found by their words until their vectors are made (by the `oboyu index` under way, or by "
                   "`oboyu index` after an interrupted one)", file=err)


def _shown(results: list[Result], show_all: bool, min_score: float | None = None) -> list[Result]:
    """The confident results in rank order, then (with --all) the weak ones, as the app lists them;
    with --min-score, only those whose confidence reaches it. Each is ranked by its place in
    this list, as the text numbers it (JSON and CSV gave 1, 2, 3, 4, 6 where a weak one was left out)."""
    strong = [r for r in results if not r.weak]
    shown = strong + [r for r in results if r.weak] if show_all else strong
    shown = shown if min_score is None else [r for r in shown if r.confidence >= min_score]
    return [replace(r, rank=place) for place, r in enumerate(shown, start=1)]


def _say_no_match(asked: Asked, results: list[Result], err: TextIO) -> None:
    question = visible(valid_text(asked.text))
    if not results:  # nothing even weak: say why there can be nothing
        if not asked.is_plain:
            why = "no indexed passage passes the filters" + (" and holds its words" if asked.mode is Mode.KEYWORD else "")
        elif asked.mode is Mode.KEYWORD:
            why = "keyword search: no passage holds its words; hybrid, the default, also finds by meaning"
        else:
            why = "the index holds no passage that search reaches yet"
        click.echo(f'no match for "{question}" ({why})', file=err)
        return
    closest = results[0]
    where = f"closest: {visible(closest.location)}, confidence {closest.confidence:.2f}"
    if asked.min_score is not None and (asked.show_all or any(not r.weak for r in results)):
        across = f"; {ACROSS_LANGUAGES}, so --min-score cannot judge them" if closest.across_languages else ""
        click.echo(f'no result for "{question}" reaches --min-score {asked.min_score:g} ({where}{across})', file=err)
        return
    click.echo(f'no good match for "{question}" ({where}; --all lists the weak matches)', file=err)


def _answer_lines(live: LiveIndex, filters: Filters, mode: Mode, k: int, group: bool, show_all: bool,
                  min_score: float | None) -> None:
    """One JSON array a line of standard input, always: a blank or failing line gets `[]`, and its
    error goes to stderr as a JSON object with the line's number, so answers stay aligned with
    questions. Lines are read as bytes; what is not UTF-8 becomes U+FFFD."""
    out, err = sys.stdout, sys.stderr
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        question = raw.decode("utf-8", "replace").strip()
        results: list[Result] = []
        try:
            results = _shown(live.search(question, mode, k, filters, group).results, show_all, min_score)
        except OboyuError as exc:
            err.write(json_safe(json.dumps({"line": number, "error": str(exc)}, ensure_ascii=False)) + "\n")
            err.flush()
        out.write(json_safe(json.dumps([r.to_json() for r in results], ensure_ascii=False)) + "\n")
        out.flush()


@click.command("eval")
@click.option("--docs", "docs", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Documents (JSON lines, gzip allowed): id, text.")
@click.option("--queries", "queries", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Queries (JSON lines): query, relevant_doc_id or relevant_doc_ids.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(MODE_NAMES),
              help="Modes to measure (default: all three); repeatable.")
@click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Index the documents into this file, reused when it holds them (default: a temporary index; "
              "never $OBOYU_DB).")
@click.option("--model", metavar="ID", help="Embed with this installed model (default: the --db index's, or the default model).")
@click.option("--absent", "absent_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Questions the documents cannot answer (JSON lines: query): report how often each mode says "
                   "\"no good match\" to them.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def eval_command(docs: Path, queries: Path, modes: tuple[str, ...], db: Path | None, model: str | None,
                 absent_file: Path | None, as_json: bool) -> None:
    """Measure search quality: Recall@1, Recall@10, MRR@10, nDCG@10 and latency per mode, and
    how often a query gets "no good match" (wrongly; and rightly, for --absent questions).

    Indexes the documents' text into a temporary index, or into --db (reused when it holds these
    documents; one that holds others is refused)."""
    import dataclasses
    import tempfile

    from oboyu.index.store import Store
    from oboyu.models.loading import load_embedder
    from oboyu.search.evaluate import (
        doc_id_of,
        document_ids,
        evaluate,
        index_corpus,
        read_absent,
        read_queries,
        write_corpus,
    )

    query_list = read_queries(queries)
    absent = read_absent(absent_file) if absent_file else None
    ids = set(document_ids(docs))
    unknown = [q for q in query_list if not q.relevant & ids]
    if unknown:  # scored as misses: say so, rather than let a typo pass for a poor ranking
        click.echo(f"oboyu: {len(unknown)} of {len(query_list)} queries name no document of {docs} (first: "
                   f"{visible(sorted(unknown[0].relevant)[0])!r}); they count as misses", err=True)
    progress = ProgressLine()
    embedder = load_embedder(index_model(db) if db else None, model, progress, indexing=True)
    with tempfile.TemporaryDirectory(prefix="oboyu-eval-") as tmp:
        path = db or Path(tmp) / "eval.duckdb"
        folder = (path.parent / (path.stem + "-docs")) if db else Path(tmp) / "docs"
        with Store(path) as store:
            if store.counts()[0] and db:  # reused: only when made of these very documents
                held = {doc_id_of(row[0]) for row in store.con.execute("SELECT path FROM documents").fetchall()}
                written = {doc_id_of(file.name) for file in folder.glob("*.txt")}
                if not held <= ids or written != ids:  # (a document the indexer skipped is written, not held)
                    raise OboyuError(f"the index {path} was made of other documents than {docs}; delete it, or "
                                     "give another --db, to index these")
                progress.message(f"reusing the index {path}: it holds the {len(ids)} documents of {docs}")
            if store.counts()[0] == 0:
                count = write_corpus(docs, folder)
                progress.message(f"indexing {count} documents into {path}")
                stats = index_corpus(store, embedder, folder, progress)
                chunks = store.counts()[1]
                progress.message(
                    f"indexed {count} documents, {chunks} chunks in {stats.seconds:.1f}s "
                    f"({chunks / max(stats.seconds, 1e-9):.1f} chunks/s)"
                )
            scores = evaluate(store, embedder, query_list, [Mode(name) for name in modes] or list(Mode), absent)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in scores], indent=2))
        return
    click.echo(f"{'mode':<8} {'queries':>7} {'R@1':>6} {'R@10':>6} {'MRR@10':>7} {'nDCG@10':>8} {'p50 ms':>7} {'p95 ms':>7}"
               f" {'shown@10':>8} {'no match':>8}" + (f" {'absent caught':>13}" if absent is not None else ""))
    for s in scores:
        click.echo(
            f"{s.mode:<8} {s.queries:>7} {s.recall_at_1:6.3f} {s.recall_at_10:6.3f} {s.mrr_at_10:7.3f} "
            f"{s.ndcg_at_10:8.3f} {s.latency_p50_ms:7.1f} {s.latency_p95_ms:7.1f} {s.shown_at_10:8.3f} {s.present_no_match:8.1%}"
            + (f" {s.absent_no_match:13.1%}" if s.absent_no_match is not None else "")
        )
