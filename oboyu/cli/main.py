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

from oboyu import __version__
from oboyu.cli.models import models
from oboyu.errors import OboyuError
from oboyu.paths import default_db_path
from oboyu.progress import ProgressLine

EXIT_NO_RESULTS = 1
EXIT_ERROR = 2
READ_WAIT_SECONDS = 15.0  # an indexer holds the file for one batch's write at a time


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
@click.option("--provider", metavar="NAME", help="Embed with this onnxruntime provider (cpu, cuda, tensorrt, "
              "coreml, directml) rather than the platform's choice; also $OBOYU_PROVIDER.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, provider: str | None) -> None:
    """oboyu (覚ゆ): semantic search over your own documents, offline.

    With no command on a terminal, opens the interactive app (`oboyu tui`)."""
    # --debug is read by main(), which must know it before any command runs
    if provider:
        from oboyu.models.providers import ENV_OVERRIDE

        os.environ[ENV_OVERRIDE] = provider  # read where a session is made, in this process and its children
    if ctx.invoked_subcommand is None:
        if sys.stdin.isatty() and sys.stdout.isatty():
            ctx.invoke(tui)
        else:
            click.echo(ctx.get_help())


@cli.command()
@_db_option
def tui(db: Path | None) -> None:
    """The interactive app: search as you type, preview, open, manage indexes."""
    from oboyu.tui import run

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise OboyuError("the interactive app needs a terminal; use `oboyu query` in scripts")
    run(db or default_db_path())


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_db_option
@click.option("--name", help="A name for the folder (one PATH), for reindex, remove and status.")
@click.option("--full", is_flag=True, help="Re-read and re-chunk every file (vectors come from the cache).")
@click.option("--watch", is_flag=True, help="Then keep the index current as files change, until Ctrl+C.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary.")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file with its reason.")
@click.option("--follow-symlinks", is_flag=True, help="Follow symbolic links (remembered for the folder).")
@click.option("--model", metavar="ID", help="Embed with this installed model (`oboyu models list`); an index "
              "built with another is embedded again. Default: the index's own model.")
def index(paths: tuple[Path, ...], db: Path | None, name: str | None, full: bool, watch: bool, quiet: bool,
          verbose: bool, follow_symlinks: bool, model: str | None) -> None:
    """Index files and folders, or with no PATH update every indexed folder.

    Only new, changed, renamed and deleted files cost anything; folders are remembered."""
    if name is not None and len(paths) != 1:
        raise click.UsageError("--name goes with exactly one PATH")
    path = db or default_db_path()
    _check_paths(path, paths)
    if not paths and not path.exists():
        raise click.UsageError("no folders are indexed yet: give a PATH")
    indexer = _indexer(path, quiet, follow_symlinks, full, model)
    stats = indexer.index(paths, name) if paths else indexer.update()
    _report(stats, quiet, verbose)
    if watch:
        _watch(indexer, path, quiet, verbose)


@cli.command()
@click.argument("names", nargs=-1)
@_db_option
@click.option("--full", is_flag=True, help="Rebuild: re-read and re-chunk every file (vectors come from the cache).")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary.")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file with its reason.")
def reindex(names: tuple[str, ...], db: Path | None, full: bool, quiet: bool, verbose: bool) -> None:
    """Update the indexed folders NAMES (names or paths; all when none are given)."""
    path = db or default_db_path()
    if not path.exists():
        raise OboyuError(f"no index at {path}; run `oboyu index PATH` first")
    _report(_indexer(path, quiet, False, full, None).update(names), quiet, verbose)


@cli.command()
@click.argument("names", nargs=-1, required=True)
@_db_option
def remove(names: tuple[str, ...], db: Path | None) -> None:
    """Forget indexed folders (by name or path) and drop their rows from the index."""
    from oboyu.index.lock import IndexLock
    from oboyu.index.store import Store

    path = db or default_db_path()
    if not path.exists():
        raise OboyuError(f"no index at {path}")
    with IndexLock(path), Store.open_writer(path) as store:
        for root in store.roots_named(list(names)):
            files = store.remove_root(root.path)
            click.echo(f"removed {root.name} ({root.path}): {files} files", err=True)


def _open_for_reading(path: Path):
    """The index for reading; while an indexer writes a batch, wait (saying so) rather than fail."""
    from oboyu.index.store import open_for_reading

    def say() -> None:
        click.echo("oboyu: waiting: another oboyu process is writing the index", err=True)

    return open_for_reading(path, wait_seconds=READ_WAIT_SECONDS, on_wait=say)


def _check_paths(db: Path, paths: tuple[Path, ...]) -> None:
    """A path that is gone is fine when it was indexed: its rows go."""
    missing = [p for p in paths if not p.exists()]
    if not missing:
        return
    if db.exists():
        with _open_for_reading(db) as store:
            missing = [p for p in missing if not store.files_under(os.path.abspath(p)) and store.find_root(str(p)) is None]
    if missing:
        raise OboyuError(f"no such file or folder: {missing[0]}")


def _indexer(db: Path, quiet: bool, follow_symlinks: bool, full: bool, model: str | None):
    from oboyu.index.embedding_cache import EmbeddingCache
    from oboyu.models.loading import load_embedder
    from oboyu.index.indexer import Indexer

    progress = ProgressLine(enabled=not quiet)
    indexed_with = _index_model(db)
    embedder = load_embedder(indexed_with, model, progress)
    if indexed_with is not None and indexed_with != embedder.info.model_id and not quiet:
        progress.message(f"oboyu: the index was built with {indexed_with}; every file is embedded again "
                         f"with {embedder.info.model_id}")
    # the model loads only when something needs embedding; the index opens only to write
    return Indexer(db, embedder, progress, follow_symlinks=follow_symlinks, cache=EmbeddingCache.default(), full=full)


def _index_model(db: Path) -> str | None:
    """The model an index was built with (`id@fingerprint`), or None for a new or empty one."""
    if not db.exists():
        return None
    with _open_for_reading(db) as store:
        return store.get_meta("model_id")


def _report(stats, quiet: bool, verbose: bool) -> None:
    if quiet:
        return
    err = sys.stderr
    err.write(stats.summary() + "\n")
    for root in stats.missing_roots:
        err.write(f"  {root.name} ({root.path}) is missing (unmounted?); its rows are kept; "
                  f"`oboyu remove {root.name}` drops them\n")
    if stats.skipped:
        if verbose:
            for item in stats.skipped:
                err.write(f"  skipped {item.path}: {item.reason}\n")
        else:
            reasons: dict[str, int] = {}
            for item in stats.skipped:
                reasons[item.reason] = reasons.get(item.reason, 0) + 1
            summary = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda r: -r[1]))
            err.write(f"  skipped: {summary} (-v lists them)\n")
    err.flush()


def _watch(indexer, db: Path, quiet: bool, verbose: bool) -> None:
    import time

    from oboyu.index.watch import watch

    with _open_for_reading(db) as store:
        roots = [Path(r.path) for r in store.list_roots() if os.path.exists(r.path)]
    if not roots:
        raise OboyuError("nothing to watch: no indexed folder exists")
    err = sys.stderr
    indexer.embedder.load()  # now, so that the first change is not the one that waits for it

    def on_ready() -> None:
        err.write(f"watching {len(roots)} folder{'s' if len(roots) != 1 else ''} for changes (Ctrl+C stops)\n")
        err.flush()

    def on_batch(stats) -> None:
        if quiet or not (stats.added or stats.changed or stats.removed or stats.renamed or verbose):
            return
        err.write(time.strftime("%H:%M:%S ") + stats.summary() + "\n")
        err.flush()

    try:
        watch(indexer, roots, on_batch, on_ready)
    except KeyboardInterrupt:
        pass
    err.write("stopped watching\n")


@cli.command()
@click.argument("text", required=False)
@_db_option
@click.option("-k", "k", type=click.IntRange(min=1, max=1000), default=10, show_default=True, help="Number of results.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--path", "paths", multiple=True, metavar="GLOB", help="Only paths matching GLOB (`!GLOB` excludes); repeatable.")
@click.option("--type", "types", metavar="EXT,...", help="Only these extensions or file types, e.g. md,txt.")
@click.option("--since", metavar="DATE", help="Only files modified since DATE (2026-01-31, or an age like 7d).")
@click.option("--until", metavar="DATE", help="Only files modified before DATE.")
@click.option("--root", "roots", multiple=True, metavar="NAME",
              help="Only files of this indexed folder (its name or path; `oboyu status` lists them); repeatable.")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "keyword"]), default="hybrid", show_default=True,
              help="Meaning (vector), words (keyword), or both fused.")
@click.option("--chunks", "by_chunk", is_flag=True, help="List passages rather than one result per file.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score for every result.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read one query a line; write one JSON line of results each.")
@click.option("--rerank/--no-rerank", default=None,
              help="Reorder the best passages with the installed reranker (default: when one is installed).")
def query(text: str | None, db: Path | None, k: int, as_json: bool, paths: tuple[str, ...], types: str | None,
          since: str | None, until: str | None, roots: tuple[str, ...], mode: str, by_chunk: bool, explain: bool, from_stdin: bool,
          rerank: bool | None) -> None:
    """Search the index."""
    from oboyu.models.loading import load_embedder, load_reranker
    from oboyu.search.resident import ResidentIndex
    from oboyu.search.query import make_filters, search

    if (text is None) == (not from_stdin):
        raise click.UsageError("give either a query TEXT or --stdin")
    with _open_for_reading(db or default_db_path()) as store:
        folders = [root.path for root in store.roots_named(list(roots))]
        filters = make_filters(paths, types, since, until, folders)
        embedder = load_embedder(store.get_meta("model_id"), progress=ProgressLine()) if mode != "keyword" else None
        reranker = load_reranker(rerank)
        if from_stdin:  # the model and the index are loaded once for all the queries
            resident = ResidentIndex()
            out = sys.stdout
            for line in sys.stdin:
                if line.strip():
                    batch = search(store, embedder, line.strip(), k, filters, mode, not by_chunk, resident, reranker)
                    out.write(json.dumps([r.to_json() for r in batch], ensure_ascii=False) + "\n")
                    out.flush()
            return
        results = search(store, embedder, text, k, filters, mode=mode, group=not by_chunk, reranker=reranker)
    out = sys.stdout
    if as_json:
        out.write(json.dumps([r.to_json() for r in results], ensure_ascii=False, indent=2) + "\n")
    else:
        colour = _colour(sys.stdout)
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
    if not results:
        raise SystemExit(EXIT_NO_RESULTS)


@cli.command()
@click.argument("names", nargs=-1)
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--pending", is_flag=True, help="List what an update would change, changing nothing.")
def status(names: tuple[str, ...], db: Path | None, as_json: bool, pending: bool) -> None:
    """Show what the index holds: its folders, files, chunks and model."""
    from oboyu.models.providers import choose_here
    from oboyu.index.store import file_bytes

    path = db or default_db_path()
    if pending:
        _pending(path, names, as_json)
        return
    with _open_for_reading(path) as store:
        documents, chunks = store.counts()
        model = store.get_meta("model_id")
        names_of = {r.path: r.name for r in store.list_roots()}
        roots = [
            {"name": names_of.get(root, ""), "path": root, "documents": docs, "chunks": n,
             "last_update": str(last)[:19] if last else None, "exists": os.path.exists(root)}
            for root, docs, n, last in store.roots()
        ]
    info = {
        "db": str(path.resolve()),
        "model": model,
        "provider": choose_here().provider,
        "documents": documents,
        "chunks": chunks,
        "bytes": file_bytes(path),
        "roots": roots,
    }
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False, indent=2))
        return
    for key, value in info.items():
        if key != "roots":
            click.echo(f"{key:>10}: {value}")
    click.echo(f"{'folders':>10}:{'' if roots else ' none'}")
    for r in roots:
        missing = "" if r["exists"] else "  (missing)"
        click.echo(f"  {r['name']:<16} {r['path']}  {r['documents']} files, {r['chunks']} chunks, "
                   f"updated {r['last_update'] or '-'}{missing}")


def _pending(db: Path, names: tuple[str, ...], as_json: bool) -> None:
    from oboyu.models.loading import load_embedder
    from oboyu.index.indexer import Indexer

    plan = Indexer(db, load_embedder(_index_model(db))).plan(names)
    if as_json:
        click.echo(json.dumps({
            "added": [str(e.path) for e in plan.added],
            "changed": [str(e.path) for e, _ in plan.changed],
            "removed": plan.removed,
            "renamed": [{"from": m.old_path, "to": m.new_path} for m in plan.renamed],
            "unchanged": plan.unchanged,
            "skipped": [{"path": str(s.path), "reason": s.reason} for s in plan.skipped],
            "missing_roots": [r.path for r in plan.missing_roots],
        }, ensure_ascii=False, indent=2))
        return
    for entry in plan.added:
        click.echo(f"added    {entry.path}")
    for entry, _ in plan.changed:
        click.echo(f"changed  {entry.path}")
    for removed in plan.removed:
        click.echo(f"removed  {removed}")
    for move in plan.renamed:
        click.echo(f"renamed  {move.old_path} -> {move.new_path}")
    for root in plan.missing_roots:
        click.echo(f"missing  {root.path} (its rows are kept)")
    click.echo(
        f"{len(plan.added)} to add, {len(plan.changed)} to change, {len(plan.removed)} to remove, "
        f"{len(plan.renamed)} renamed, {plan.unchanged} unchanged, {len(plan.skipped)} skipped",
        err=True,
    )


@cli.group()
def cache() -> None:
    """The embedding cache: vectors kept so that unchanged text is never embedded twice."""


@cache.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_stats(as_json: bool) -> None:
    """Show the cache's location, size and number of vectors."""
    from oboyu.index.embedding_cache import EmbeddingCache

    stats = EmbeddingCache.default().stats()
    info = {"path": str(stats.path), "vectors": stats.vectors, "models": stats.models, "bytes": stats.bytes}
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            click.echo(f"{key:>8}: {value}")


@cache.command("clear")
def cache_clear() -> None:
    """Empty the cache (indexes keep their vectors)."""
    from oboyu.index.embedding_cache import EmbeddingCache

    removed = EmbeddingCache.default().clear()
    click.echo(f"removed {removed} cached vectors", err=True)


@cli.command()
@_db_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--seconds", type=click.FloatRange(0.2, 60), default=2.0, show_default=True,
              help="Length of the self-benchmark.")
def doctor(db: Path | None, as_json: bool, seconds: float) -> None:
    """Show the platform, CPU features, onnxruntime providers (available and chosen), threads,
    model and cache locations, then time the engine here (the index's model, else the default)."""
    from oboyu.models.doctor import machine_report, self_benchmark
    from oboyu.models.loading import load_embedder

    path = db or default_db_path()
    report = machine_report(path)
    if not as_json:
        _print_fields(report)
    notices: list[str] = []
    embedder = load_embedder(_index_model(path), progress=ProgressLine(enabled=not as_json),
                             notify=notices.append)
    benchmark = self_benchmark(embedder, seconds) | {"notices": notices}
    if as_json:
        click.echo(json.dumps(report | {"benchmark": benchmark}, ensure_ascii=False, indent=2))
    else:
        click.echo()
        _print_fields(benchmark)


def _print_fields(fields: dict) -> None:
    for key, value in fields.items():
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "none"
        click.echo(f"{key.replace('_', ' '):>20}: {value}")


@cli.command()
@_db_option
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port for --http.")
@click.option("--allow-index", is_flag=True, help="Offer an `index` tool, limited to folders already indexed.")
def mcp(db: Path | None, http: bool, port: int, allow_index: bool) -> None:
    """Serve the index to AI assistants over the Model Context Protocol."""
    from oboyu.models.loading import load_embedder
    from oboyu.mcp.server import OboyuTools, serve

    path = db or default_db_path()
    if not path.exists():
        raise OboyuError(f"no index at {path}; run `oboyu index PATH` first")
    # progress to stderr only: on stdio, stdout carries the protocol
    tools = OboyuTools(path, load_embedder(_index_model(path), progress=ProgressLine()).load(), allow_index)
    serve(tools, http=http, port=port)


@cli.command("eval")
@click.option("--docs", "docs", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Documents (JSON lines, gzip allowed): id, text.")
@click.option("--queries", "queries", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="Queries (JSON lines): query, relevant_doc_id or relevant_doc_ids.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "vector", "keyword"]),
              help="Modes to measure (default: all three); repeatable.")
@_db_option
@click.option("--model", metavar="ID", help="Embed with this installed model (default: the --db index's, or the default model).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def eval_command(docs: Path, queries: Path, modes: tuple[str, ...], db: Path | None, model: str | None,
                 as_json: bool) -> None:
    """Measure search quality: Recall@1, Recall@10, MRR@10, nDCG@10 and latency per mode.

    Indexes the documents' text into a temporary index, or into --db (reused when it exists)."""
    import dataclasses
    import tempfile

    from oboyu.models.loading import load_embedder
    from oboyu.search.evaluate import evaluate, index_corpus, read_queries, write_corpus
    from oboyu.index.store import Store

    query_list = read_queries(queries)
    progress = ProgressLine()
    embedder = load_embedder(_index_model(db) if db else None, model, progress)
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


cli.add_command(models)


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
