"""`oboyu tui`, `doctor`, `cache` and `mcp`: the app, the machine, the embedding cache and the
server for AI assistants."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from oboyu.cli.common import db_option, db_path, index_model
from oboyu.errors import OboyuError
from oboyu.progress import ProgressLine
from oboyu.text import visible

if TYPE_CHECKING:
    from oboyu.index.embedding_cache import EmbeddingCache

RERANK_HELP = "Reorder the best passages with the installed reranker (default: when one is installed)."


@click.command()
@db_option
@click.option("--rerank/--no-rerank", default=None, help=RERANK_HELP)
def tui(db: Path | None, rerank: bool | None) -> None:
    """The interactive app: search as you type, preview, open, manage indexes."""
    from oboyu.tui import run

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise OboyuError("the interactive app needs a terminal; use `oboyu query` in scripts")
    run(db_path(db), rerank)


@click.group()
def cache() -> None:
    """The embedding cache: vectors kept so that unchanged text is never embedded twice."""


def _opened_cache() -> EmbeddingCache:
    """The embedding cache, for `cache stats` and `clear`: one that exists but cannot be opened is
    an error there (an indexing run goes on without it), never a false "0 vectors" or "removed 0"
    (a user trial's read-only cache held 866)."""
    from oboyu.index.embedding_cache import EmbeddingCache

    told: list[str] = []  # a damaged one moved aside is said; one that cannot be opened is the error
    cache = EmbeddingCache.default(notify=told.append)
    if cache.con is None and cache.path.exists():
        raise OboyuError(f"cannot open the embedding cache {cache.path} ({cache.problem or 'no reason given'}); check the "
                         "permissions of it and its folder (OBOYU_EMBEDDING_CACHE or OBOYU_CACHE_DIR chooses another)")
    for notice in told:
        click.echo(visible(f"oboyu: {notice}"), err=True)
    return cache


@cache.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def cache_stats(as_json: bool) -> None:
    """Show the cache's location, size and number of vectors."""
    stats = _opened_cache().stats()
    info = {"path": str(stats.path), "vectors": stats.vectors, "models": stats.models, "bytes": stats.bytes}
    if as_json:
        click.echo(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            click.echo(f"{key:>8}: {value}")


@cache.command("clear")
def cache_clear() -> None:
    """Empty the cache (indexes keep their vectors)."""
    cache = _opened_cache()
    copies = cache.damaged_copies()
    removed = cache.clear()
    also = f" and {len(copies)} damaged cop{'y' if len(copies) == 1 else 'ies'} moved aside earlier" if copies else ""
    click.echo(f"removed {removed} cached vectors{also}", err=True)


@click.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--seconds", type=click.FloatRange(0.2, 60), default=2.0, show_default=True,
              help="Length of the self-benchmark.")
def doctor(db: Path | None, as_json: bool, seconds: float) -> None:
    """Show the version, platform, CPU features, onnxruntime providers (available and chosen),
    threads, model and cache locations, then time the engine here (the index's model, else the default)."""
    from oboyu.models.doctor import machine_report, self_benchmark
    from oboyu.models.loading import load_embedder

    path = db_path(db)
    report = machine_report(path)
    if not as_json:
        _print_fields(report)
    notices: list[str] = []
    embedder = load_embedder(index_model(path), progress=ProgressLine(enabled=not as_json), notify=notices.append)
    benchmark = self_benchmark(embedder, seconds) | {"notices": notices}
    if as_json:
        click.echo(json.dumps(report | {"benchmark": benchmark}, ensure_ascii=False, indent=2))
    else:
        click.echo()
        _print_fields(benchmark)


# what each provider line is about, said in words: "chosen provider: CPUExecutionProvider" above
# "provider: OpenVINO CPU" read as a contradiction (a user trial); --json keeps the keys
DOCTOR_LABELS = {"available_providers": "onnxruntime providers", "chosen_provider": "onnxruntime's pick",
                 "provider": "passages made on", "query_provider": "queries made on"}


def _print_fields(fields: dict) -> None:
    for key, value in fields.items():
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "none"
        click.echo(f"{DOCTOR_LABELS.get(key, key.replace('_', ' ')):>22}: {value}")


@click.command()
@db_option
@click.option("--http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port for --http.")
@click.option("--allow-index", is_flag=True, help="Offer an `index` tool, limited to folders already indexed.")
@click.option("--rerank/--no-rerank", default=None, help=RERANK_HELP)
def mcp(db: Path | None, http: bool, port: int, allow_index: bool, rerank: bool | None) -> None:
    """Serve the index to AI assistants over the Model Context Protocol."""
    from oboyu.mcp import OboyuTools, serve
    from oboyu.models.loading import load_embedder, load_reranker

    path = db_path(db)
    if not path.exists():  # an assistant is often set up first: its tools say so until the index is made
        click.echo(f"oboyu: no index at {path} yet; its tools say so until `oboyu index FOLDER` makes it", err=True)
    # progress to stderr only: on stdio, stdout carries the protocol
    embedder = load_embedder(index_model(path), progress=ProgressLine()).load()
    serve(OboyuTools(path, embedder, allow_index, load_reranker(rerank)), http=http, port=port)


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def config_command(as_json: bool) -> None:
    """Show each setting, its value and where it came from (the settings file, the environment,
    or oboyu's default), and where the settings file is."""
    import os

    from oboyu.config import settings
    from oboyu.index.embedding_cache import EmbeddingCache
    from oboyu.paths import cache_dir, config_file, default_db_path, state_dir

    current = settings()
    file = str(config_file())

    def source(key: str, env: str | None = None) -> str:
        if env and os.environ.get(env):
            return f"${env}"
        return file if key in current.given else "default"

    rows = {
        "exclude": (list(current.exclude), source("exclude")),
        "file_types": (current.file_types, source("file_types")),
        "query.mode": (current.mode, source("query.mode")),
        "query.k": (current.k, source("query.k")),
        "app.restore_last_search": (current.restore_last_search, source("app.restore_last_search")),
        "db": (str(default_db_path()), source("db", "OBOYU_DB")),
        "cache_dir": (str(cache_dir()), source("cache_dir", "OBOYU_CACHE_DIR")),
        "state_dir": (str(state_dir()), source("state_dir", "OBOYU_STATE_DIR")),
        "embedding_cache": (str(EmbeddingCache.path_of_default()), source("embedding_cache", "OBOYU_EMBEDDING_CACHE")),
    }
    state = "read" if current.path else "not found; oboyu's defaults apply"
    if as_json:
        click.echo(json.dumps({"file": file, "found": current.path is not None,
                               "settings": {k: {"value": v, "from": s} for k, (v, s) in rows.items()}},
                              ensure_ascii=False, indent=2))
        return
    click.echo(visible(f"settings file: {file} ({state})"))
    width = max(map(len, rows))
    for key, (value, where) in rows.items():
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)
        click.echo(visible(f"{key:>{width}} = {shown}  ({where})"))
