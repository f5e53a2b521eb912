"""The `oboyu` command: a thin layer over the library. Errors are one line on stderr.

Exit status: 0 success (query: results found), 1 query with no results, 2 error.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

import click

from . import __version__
from .errors import OboyuError
from .paths import default_db_path
from .progress import ProgressLine, format_duration

EXIT_NO_RESULTS = 1
EXIT_ERROR = 2


def _db_option(func):
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Index file (default: $OBOYU_DB or the user data dir).",
    )(func)


def highlight(text: str, spans: list[tuple[int, int]]) -> str:
    """Matched words in bold yellow."""
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(click.style(text[start:end], fg="yellow", bold=True))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _colour(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, prog_name="oboyu")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """oboyu (覚ゆ): semantic search over your own documents, offline.

    With no command on a terminal, opens the interactive app (`oboyu tui`)."""
    # --debug is read by main(), which must know it before any command runs
    if ctx.invoked_subcommand is None:
        if sys.stdin.isatty() and sys.stdout.isatty():
            ctx.invoke(tui)
        else:
            click.echo(ctx.get_help())


@cli.command()
@_db_option
def tui(db: Path | None) -> None:
    """The interactive app: search as you type, preview, open, manage indexes."""
    from .tui import run

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise OboyuError("the interactive app needs a terminal; use `oboyu query` in scripts")
    run(db or default_db_path())


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_db_option
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary.")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file with its reason.")
@click.option("--follow-symlinks", is_flag=True, help="Follow symbolic links.")
def index(paths: tuple[Path, ...], db: Path | None, quiet: bool, verbose: bool, follow_symlinks: bool) -> None:
    """Index (or update the index of) files and folders."""
    from .engine import load_default_embedder
    from .indexer import Indexer
    from .store import Store

    progress = ProgressLine(enabled=not quiet)
    with Store(db or default_db_path()) as store:
        for path in paths:  # a path that is gone is fine when it was indexed: its rows go
            if not path.exists() and not store.files_under(os.path.abspath(path)):
                raise OboyuError(f"no such file or folder: {path}")
        embedder = load_default_embedder(progress)
        stats = Indexer(store, embedder, progress, follow_symlinks=follow_symlinks).index(list(paths))
    if quiet:
        return
    err = click.get_text_stream("stderr")
    err.write(
        f"indexed in {format_duration(stats.seconds)}: {stats.added} added, {stats.changed} changed, "
        f"{stats.removed} removed, {stats.unchanged} unchanged, {len(stats.skipped)} skipped; "
        f"{stats.chunks} chunks embedded\n"
    )
    if stats.skipped:
        reasons: dict[str, int] = {}
        for item in stats.skipped:
            reasons[item.reason] = reasons.get(item.reason, 0) + 1
        if verbose:
            for item in stats.skipped:
                err.write(f"  skipped {item.path}: {item.reason}\n")
        else:
            summary = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda r: -r[1]))
            err.write(f"  skipped: {summary} (-v lists them)\n")


@cli.command()
@click.argument("text", required=False)
@_db_option
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Number of results.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--path", "paths", multiple=True, metavar="GLOB", help="Only paths matching GLOB (`!GLOB` excludes); repeatable.")
@click.option("--type", "types", metavar="EXT,...", help="Only these extensions or file types, e.g. md,txt.")
@click.option("--since", metavar="DATE", help="Only files modified since DATE (2026-01-31, or an age like 7d).")
@click.option("--until", metavar="DATE", help="Only files modified before DATE.")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "keyword"]), default="hybrid", show_default=True,
              help="Meaning (vector), words (keyword), or both fused.")
@click.option("--chunks", "by_chunk", is_flag=True, help="List passages rather than one result per file.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score for every result.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read one query a line; write one JSON line of results each.")
def query(text: str | None, db: Path | None, k: int, as_json: bool, paths: tuple[str, ...], types: str | None,
          since: str | None, until: str | None, mode: str, by_chunk: bool, explain: bool, from_stdin: bool) -> None:
    """Search the index."""
    from .engine import load_default_embedder
    from .resident import ResidentIndex
    from .search import make_filters, search
    from .store import Store

    if (text is None) == (not from_stdin):
        raise click.UsageError("give either a query TEXT or --stdin")
    filters = make_filters(paths, types, since, until)
    with Store(db or default_db_path(), read_only=True) as store:
        embedder = load_default_embedder(ProgressLine()) if mode != "keyword" else None
        if from_stdin:  # the model and the index are loaded once for all the queries
            resident = ResidentIndex()
            out = click.get_text_stream("stdout")
            for line in click.get_text_stream("stdin"):
                if line.strip():
                    batch = search(store, embedder, line.strip(), k, filters, mode, not by_chunk, resident)
                    out.write(json.dumps([r.to_json() for r in batch], ensure_ascii=False) + "\n")
                    out.flush()
            return
        results = search(store, embedder, text, k, filters, mode=mode, group=not by_chunk)
    out = click.get_text_stream("stdout")
    if as_json:
        out.write(json.dumps([r.to_json() for r in results], ensure_ascii=False, indent=2) + "\n")
    else:
        colour = _colour(sys.stdout)
        for r in results:
            location = f"{r.path}:{r.start_line}-{r.end_line}"
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
    if not results:
        raise SystemExit(EXIT_NO_RESULTS)


@cli.command()
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def status(db: Path | None, as_json: bool) -> None:
    """Show what the index holds."""
    from .engine import DEFAULT_PROVIDER
    from .store import Store, file_bytes

    path = db or default_db_path()
    with Store(path, read_only=True) as store:
        documents, chunks = store.counts()
        model = store.get_meta("model_id")
    info = {
        "db": str(path.resolve()),
        "model": model,
        "provider": DEFAULT_PROVIDER,
        "documents": documents,
        "chunks": chunks,
        "bytes": file_bytes(path),
    }
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False, indent=2))
        return
    for key, value in info.items():
        click.echo(f"{key:>10}: {value}")


@cli.command()
@_db_option
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port for --http.")
@click.option("--allow-index", is_flag=True, help="Offer an `index` tool, limited to folders already indexed.")
def mcp(db: Path | None, http: bool, port: int, allow_index: bool) -> None:
    """Serve the index to AI assistants over the Model Context Protocol."""
    from .engine import load_default_embedder
    from .mcp_server import OboyuTools, serve

    path = db or default_db_path()
    if not path.exists():
        raise OboyuError(f"no index at {path}; run `oboyu index PATH` first")
    # progress to stderr only: on stdio, stdout carries the protocol
    tools = OboyuTools(path, load_default_embedder(ProgressLine()), allow_index)
    serve(tools, http=http, port=port)


@cli.command("eval")
@click.option("--docs", "docs", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Documents (JSON lines, gzip allowed): id, text.")
@click.option("--queries", "queries", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Queries (JSON lines): query, relevant_doc_id or relevant_doc_ids.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "vector", "keyword"]),
              help="Modes to measure (default: all three); repeatable.")
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def eval_command(docs: Path, queries: Path, modes: tuple[str, ...], db: Path | None, as_json: bool) -> None:
    """Measure search quality: Recall@1, Recall@10, MRR@10, nDCG@10 and latency per mode.

    Indexes the documents' text into a temporary index, or into --db (reused when it exists)."""
    import dataclasses
    import tempfile

    from .engine import load_default_embedder
    from .evaluate import evaluate, index_corpus, read_queries, write_corpus
    from .store import Store

    query_list = read_queries(queries)
    progress = ProgressLine()
    embedder = load_default_embedder(progress)
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
            scores = evaluate(store, embedder, query_list, list(modes) or ["hybrid", "vector", "keyword"])
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in scores], indent=2))
        return
    click.echo(f"{'mode':<8} {'queries':>7} {'R@1':>6} {'R@10':>6} {'MRR@10':>7} {'nDCG@10':>8} {'p50 ms':>7} {'p95 ms':>7}")
    for s in scores:
        click.echo(
            f"{s.mode:<8} {s.queries:>7} {s.recall_at_1:6.3f} {s.recall_at_10:6.3f} {s.mrr_at_10:7.3f} "
            f"{s.ndcg_at_10:8.3f} {s.latency_p50_ms:7.1f} {s.latency_p95_ms:7.1f}"
        )


def main() -> None:
    debug = "--debug" in sys.argv[1:]
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        click.echo(f"oboyu: error: {exc.format_message()}{hint}", err=True)
        sys.exit(EXIT_ERROR)
    except click.ClickException as exc:
        click.echo(f"oboyu: error: {exc.format_message()}", err=True)
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort:
        click.echo("oboyu: interrupted", err=True)
        sys.exit(130)
    except OboyuError as exc:
        if debug:
            traceback.print_exc()
        click.echo(f"oboyu: error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("oboyu: interrupted", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if debug:
            traceback.print_exc()
        click.echo(f"oboyu: unexpected error: {type(exc).__name__}: {exc} (--debug shows the traceback)", err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
