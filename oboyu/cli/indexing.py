"""`oboyu index`, `reindex`, `remove`, `describe` and `status`: keeping the index in step with the folders."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from rich.cells import cell_len

from oboyu import api
from oboyu.cli.common import NonEmptyPath, db_option, db_path, index_model, open_reading
from oboyu.cli.missing import say_moved
from oboyu.documents.crawl import Hidden, JunkFolder
from oboyu.documents.filetypes import SNIFF_BYTES, UNSUPPORTED, looks_like_text
from oboyu.errors import OboyuError
from oboyu.index.arrays_cache import arrays_of, arrays_state, made_arrays
from oboyu.index.index_file import IndexFile, file_signature
from oboyu.index.indexer import Indexer
from oboyu.index.lock import index_busy
from oboyu.index.reports import FOUND_NOTHING, IndexStats
from oboyu.index.roots import checked_description, checked_name
from oboyu.models.loading import load_embedder
from oboyu.paths import disk_path
from oboyu.progress import ProgressLine
from oboyu.text import SURROGATE, counted, json_safe, visible

cluster_option = click.option(
    "--cluster", metavar="ADDRESS", help="Read, chunk and embed on a Ray cluster: `local` (Ray on this machine, "
    "every core), `auto`, host:port or ray://host:10001. Needs the cluster extra; the index is written here.")

SKIPS_SHOWN = 5  # a root's files that could not be indexed, listed by `status` (all in --json)
NAME_CELLS = 16  # the least width of the folders' names in `status`, in terminal cells


@click.command()
@click.argument("paths", nargs=-1, type=NonEmptyPath(path_type=Path, readable=False))  # said below, in our words
@db_option
@click.option("--name", help="A name for the folder (one PATH), for reindex, remove and status.")
@click.option("--describe", "description", metavar="TEXT", help="What the folder holds, in a line (one PATH): shown "
              "by status and with its results, to you and to assistants; \"\" clears it. `oboyu describe` changes it "
              "without indexing.")
@click.option("--full", is_flag=True, help="Re-read and re-chunk every file (vectors come from the cache).")
@click.option("--watch", is_flag=True, help="Then keep the index current as files change, until Ctrl+C.")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary.")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file with its reason, and what the walk left out (hidden entries, junk folders, links).")
@click.option("--follow-symlinks", is_flag=True, help="Follow symbolic links (remembered for the folder).")
@click.option("--model", metavar="ID", help="Embed with this installed model (`oboyu models list`); an index "
              "built with another is embedded again. Default: the index's own model.")
@cluster_option
def index(paths: tuple[Path, ...], db: Path | None, name: str | None, description: str | None, full: bool, watch: bool,
          quiet: bool, verbose: bool, follow_symlinks: bool, model: str | None, cluster: str | None) -> None:
    """Index files and folders, or with no PATH update every indexed folder.

    Only new, changed, renamed and deleted files cost anything; folders are remembered."""
    for option, value in (("--name", name), ("--describe", description)):
        if value is not None and len(paths) != 1:
            raise click.UsageError(f"{option} goes with exactly one PATH")
    if description is not None:
        checked_description(description)  # before the model loads
    if name is not None:
        checked_name(name)
    if watch and cluster:
        raise click.UsageError("--watch keeps the index current from this machine: drop --cluster")
    path = db_path(db)
    paths = _check_paths(path, paths)
    if not paths and not path.exists():
        raise click.UsageError("no folders are indexed yet: give a PATH")
    started = time.perf_counter()
    with _indexer(path, quiet, follow_symlinks, full, model, cluster) as indexer:
        stats = indexer.index(paths, name, description) if paths else indexer.update()
    stats.seconds = time.perf_counter() - started  # with what the model's loading cost (a first use's probe, build)
    _report(stats, quiet, verbose)
    if paths and not quiet:
        with contextlib.suppress(OboyuError):  # advice only: an index busy meanwhile fails no finished run
            say_moved(path)
    _make_search_arrays(path, quiet)
    if watch:
        _watch(indexer, path, quiet, verbose)


@click.command()
@click.argument("names", nargs=-1)
@db_option
@click.option("--full", is_flag=True, help="Rebuild: re-read and re-chunk every file (vectors come from the cache).")
@click.option("--quiet", "-q", is_flag=True, help="No progress or summary.")
@click.option("--verbose", "-v", is_flag=True, help="List every skipped file with its reason, and what the walk left out (hidden entries, junk folders, links).")
@cluster_option
def reindex(names: tuple[str, ...], db: Path | None, full: bool, quiet: bool, verbose: bool, cluster: str | None) -> None:
    """Update the indexed folders NAMES (names or paths; all when none are given)."""
    path = db_path(db)
    if not path.exists():
        raise OboyuError(f"no index at {path}; run `oboyu index PATH` first")
    started = time.perf_counter()
    with _indexer(path, quiet, False, full, None, cluster) as indexer:
        stats = indexer.update(names)
    stats.seconds = time.perf_counter() - started
    _report(stats, quiet, verbose)
    _make_search_arrays(path, quiet)


@click.command()
@click.argument("names", nargs=-1, required=True)
@db_option
def remove(names: tuple[str, ...], db: Path | None) -> None:
    """Forget indexed folders (by name or path) and drop their rows from the index."""
    from oboyu.index.lock import IndexLock
    from oboyu.index.store import Store

    path = db_path(db)
    if not path.exists():
        raise OboyuError(f"no index at {path}")
    with IndexLock(path), Store.open_writer(path) as store:
        for root in store.roots_named(list(names)):
            files = store.remove_root(root.path)
            click.echo(visible(f"removed {root.name} ({root.path}): {counted(files, 'file')}"), err=True)
    _make_search_arrays(path, quiet=False)


@click.command()
@click.argument("name")
@click.argument("text")
@db_option
def describe(name: str, text: str, db: Path | None) -> None:
    """Say what an indexed folder (NAME: its name or path) holds, in one line of TEXT of up to 500
    characters; "" clears it. `status` shows it, and each result of the folder carries it (JSON,
    MCP), so that an assistant knows what the folder is. Nothing is indexed again."""
    from oboyu.index.store import Store

    path = db_path(db)
    if not path.exists():
        raise OboyuError(f"no index at {path}; run `oboyu index PATH` first")
    with Store.open_writer(path) as store:
        root = store.describe_root(store.roots_named([name])[0], text)
    if root.description:
        click.echo(visible(f"described {root.name} ({root.path}): {root.description}"), err=True)
    else:
        click.echo(visible(f"cleared the description of {root.name} ({root.path})"), err=True)


def _check_paths(db: Path, paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """The paths to index: a path that is gone is fine when it was indexed (its rows go), and one
    that is no path here but an indexed folder's name (as `status` lists it) is that folder, as
    for `reindex` (a user trial's `oboyu index docs` from elsewhere said "indexed", did nothing
    and exited 0). A name that is not UTF-8 is indexed inside a folder, but cannot name a folder
    of its own (roots are kept by name). A device or FIFO named is refused: it became a root of
    no files."""
    odd = [p for p in paths if SURROGATE.search(str(p))]
    if odd:
        with contextlib.ExitStack() as opened:
            store = opened.enter_context(open_reading(db)) if db.exists() else None
            outside = [p for p in odd if store is None or store.root_holding(os.path.abspath(p)) is None]
        if outside:
            raise OboyuError(f"{visible(str(outside[0]))}: a name that is not UTF-8 cannot be a folder of its own; "
                             "index the folder that holds it")
    special = [p for p in paths if p.exists() and not (p.is_file() or p.is_dir())]
    if special:  # a device or a FIFO: no text to read, and no folder to keep as a root
        raise OboyuError(f"{visible(str(special[0]))} is neither a file nor a folder (a device, pipe or socket); "
                         "name a folder or the files to index")
    unreadable = [p for p in paths if p.exists() and not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0))]
    if unreadable:
        raise OboyuError(f"{visible(str(unreadable[0]))}: permission denied; check its permissions")
    missing = [p for p in paths if not p.exists()]
    if not missing:
        return paths
    named: dict[Path, Path] = {}
    if db.exists():
        with open_reading(db) as store:
            for p in missing:
                root = store.root_named(str(p))
                if store.files_under(os.path.abspath(p)) or (root is not None and root.path == os.path.abspath(p)):
                    named[p] = p  # indexed, and gone from disk: its rows go
                elif root is not None and os.path.exists(root.path):
                    named[p] = Path(root.path)  # an indexed folder's name
                elif root is not None:  # a name is no request to drop a folder an unmounted drive holds
                    raise OboyuError(f"{visible(str(p))}: the indexed folder of that name ({visible(root.path)}) is "
                                     f"missing; `oboyu remove {visible(str(p))}` drops it")
        missing = [p for p in missing if p not in named]
    if missing:
        raise OboyuError(f"{visible(str(missing[0]))}: {_why_missing(missing[0])}")
    return tuple(named.get(p, p) for p in paths)


def _why_missing(path: Path) -> str:
    """What is at a path that does not exist: nothing, or a link that leads nowhere."""
    if not path.is_symlink():
        return "no such file or folder"
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links; point the link at a file or folder"
    return f"a broken symbolic link (to {visible(os.readlink(path))})"


@contextlib.contextmanager
def _indexer(db: Path, quiet: bool, follow_symlinks: bool, full: bool, model: str | None,
             cluster: str | None = None) -> Iterator[Indexer]:
    """The indexer for one run; with `cluster`, its workers there, stopped when the run ends."""
    progress = ProgressLine(enabled=not quiet)
    indexed_with = index_model(db)
    embedder = load_embedder(indexed_with, model, progress, indexing=True)
    if indexed_with is not None and indexed_with != embedder.info.model_id and not quiet:
        progress.message(f"oboyu: the index was built with {indexed_with}; every file is embedded again "
                         f"with {embedder.info.model_id}")
    if cluster is not None and not cluster.strip():
        raise click.UsageError("--cluster needs an address: local, auto, host:port or ray://host:10001")
    with contextlib.ExitStack() as stack:
        workers = None
        if cluster:
            notify = progress.message if not quiet else None
            workers = stack.enter_context(api.open_cluster(cluster, embedder, notify))
        # the model loads only when something needs embedding; the index opens only to write
        yield api.open_indexer(IndexFile(db), embedder, progress=progress, full=full, follow_symlinks=follow_symlinks, workers=workers)


SAY_ARRAYS_FROM = 50_000  # passages: below this the arrays take a few seconds at most, said nothing of


def _make_search_arrays(db: Path, quiet: bool) -> None:
    """The index's search arrays (oboyu.index.arrays) for what this run left, so that the next
    query, and the app or MCP server when they open the index, rank from them at once. A failure
    costs only that: whoever opens the index next makes them."""
    try:
        with open_reading(db) as store:
            if made_arrays(store) is not None:
                return
            (_, passages) = store.counts()
            started = time.perf_counter()
            if passages >= SAY_ARRAYS_FROM and not quiet:
                click.echo(f"making the search arrays of {passages:,} passages", err=True)
            arrays_of(store)
            if passages >= SAY_ARRAYS_FROM and not quiet:
                click.echo(f"made the search arrays in {time.perf_counter() - started:.0f} s", err=True)
    except OboyuError as error:
        click.echo(f"oboyu: the search arrays were not made ({error}); the app or a search will make them", err=True)


def _report(stats: IndexStats, quiet: bool, verbose: bool) -> None:
    if quiet:
        return
    err = sys.stderr
    err.write(stats.summary() + "\n")
    if stats.found_nothing():  # a fuzzing trial's `*` in .oboyuignore: the summary alone said nothing
        err.write(f"  {FOUND_NOTHING}\n")
    for root in stats.missing_roots:
        err.write(visible(f"  {root.name} ({root.path}) is missing (unmounted?); its rows are kept; "
                          f"`oboyu remove {root.name}` drops them") + "\n")
    if verbose:
        for item in stats.hidden + stats.junk:
            err.write(visible(f"  left out {item.path}: {item.reason}") + "\n")
    elif stats.junk:
        names = ", ".join(sorted({item.path.name for item in stats.junk}))
        err.write(visible(f"  left out: {counted(len(stats.junk), 'junk folder')} (dependencies, build output or caches: "
                          f"{names}); a `!NAME/` line in .oboyuignore brings one back") + "\n")
    if stats.skipped:
        if verbose:
            for item in stats.skipped:
                err.write(visible(f"  skipped {item.path}: {item.reason}") + "\n")
        else:
            reasons: dict[str, int] = {}
            for item in stats.skipped:
                reasons[item.reason] = reasons.get(item.reason, 0) + 1
            summary = "; ".join(f"{reason} ({n:,})" for reason, n in sorted(reasons.items(), key=lambda r: -r[1]))
            err.write(visible(f"  skipped: {summary} (-v lists them)") + "\n")
        unsupported = _text_suffixes([item.path for item in stats.skipped if item.reason == UNSUPPORTED])
        if unsupported:  # a trial's .log files: the way to read them was in the guide only
            names = ", ".join(unsupported[:3]) + (", ..." if len(unsupported) > 3 else "")
            err.write(visible(f"  to read {names} files as text: a line such as `\"{unsupported[0]}\" = \"text\"` under "
                              "[file_types] in the settings file (`oboyu config` names it)") + "\n")
    err.flush()


def _text_suffixes(paths: list[Path]) -> list[str]:
    """The extensions among these files' whose files read as text (a trial's .zip and .npy were
    offered as text too): one file of each looked at, none of a kind that is no text by name (a
    photo folder's thousands, which a cloud drive may fetch to be read)."""
    import mimetypes

    first: dict[str, Path] = {}
    for path in paths:
        suffix = path.suffix.lower()
        if suffix and suffix not in first:
            first[suffix] = path
    found = []
    for suffix, path in sorted(first.items()):
        kind = mimetypes.guess_type("x" + suffix)[0] or ""
        if kind.startswith(("image/", "audio/", "video/", "font/")) or kind in BINARY_KINDS:
            continue
        try:
            with open(path, "rb") as file:
                if looks_like_text(file.read(SNIFF_BYTES)):
                    found.append(suffix)
        except OSError:
            continue
    return found


BINARY_KINDS = {"application/zip", "application/gzip", "application/x-tar", "application/octet-stream",
                "application/x-7z-compressed", "application/vnd.rar", "application/x-sqlite3"}


# a change's progress line and notices wait this long: a saved file says only its one summary line
WATCH_PROGRESS_AFTER = 2.0


def _watch(indexer: Indexer, db: Path, quiet: bool, verbose: bool) -> None:
    from oboyu.index.watch import watch

    folders = _indexed_folders(db)
    if not folders():
        raise OboyuError("nothing to watch: no indexed folder exists")
    err = sys.stderr
    indexer.embedder.load(passages=True)  # now, so that the first change is not the one that waits for it
    indexer.progress.delay = WATCH_PROGRESS_AFTER
    said: list[Path] = []

    def on_roots(roots: list[Path], gone: list[Path]) -> None:
        if not said:
            err.write(f"watching {counted(len(roots), 'folder')} for changes (Ctrl+C stops)\n")
            said.extend(roots)
        for root in gone:
            err.write(time.strftime("%H:%M:%S ") + f"{visible(str(root))} is gone; watched again once it is back\n")
        for root in roots:
            if root not in said:
                if said:
                    err.write(time.strftime("%H:%M:%S ") + f"watching {visible(str(root))}\n")
                said.append(root)
        err.flush()

    def on_batch(stats: IndexStats) -> None:
        if quiet or not (stats.added or stats.changed or stats.removed or stats.renamed or verbose):
            return
        err.write(time.strftime("%H:%M:%S ") + stats.summary() + "\n")
        err.flush()

    try:
        watch(indexer, folders, on_batch, on_roots)
    except KeyboardInterrupt:
        pass
    err.write("stopped watching\n")


def _indexed_folders(db: Path) -> Callable[[], list[Path]]:
    """The index's folders (and files indexed by name) that exist now: the list read again when
    the index changed (another `oboyu index` added one), each one's existence looked at each time."""
    read: dict[tuple, list[Path]] = {}

    def now() -> list[Path]:
        signature = file_signature(db)
        if signature not in read:
            try:
                with open_reading(db) as store:
                    listed = [Path(r.path) for r in store.roots()]
            except OboyuError:  # busy a long while: the list as it was
                listed = next(iter(read.values()), [])
            read.clear()
            read[signature] = listed
        return [path for path in read[signature] if os.path.exists(path)]

    return now


@click.command()
@click.argument("names", nargs=-1)
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--pending", is_flag=True, help="List what an update would change, changing nothing.")
def status(names: tuple[str, ...], db: Path | None, as_json: bool, pending: bool) -> None:
    """Show what the index holds: its folders, files, chunks, model and search arrays."""
    from oboyu.index.reports import meaning_share
    from oboyu.models.manifest import OPENVINO, split_engine
    from oboyu.models.providers import choose_here

    path = db_path(db)
    if pending:
        _pending(path, names, as_json)
        return
    with open_reading(path) as store:
        documents, chunks = store.counts()
        embedded, _ = store.vector_coverage()
        model = store.model_id()
        wanted = {root.path for root in store.roots_named(list(names))} if names else None  # unknown: an error
        summaries = [r for r in store.root_summaries() if wanted is None or r.path in wanted]
        skipped = {r.path: sorted(store.skipped_under(r.path, r.path).items()) for r in summaries}
        arrays = arrays_state(store)
        run_started = store.get_meta("run_started")
    busy = index_busy(path)
    roots = [
        {"name": r.name, "path": r.path, "documents": r.documents, "chunks": r.chunks,
         "last_update": str(r.last_update)[:19] if r.last_update else None, "exists": os.path.exists(r.path),
         "description": r.description, "left_out": [disk_path(folder) for folder in r.left_out],
         "skipped": [{"path": disk_path(p), "reason": known.reason} for p, known in skipped[r.path]]}
        for r in summaries
    ]
    info = {
        "db": str(path.resolve()),
        "model": model,
        "provider": "OpenVINO CPU" if model and split_engine(model)[1] == OPENVINO else choose_here().provider,
        "documents": documents,
        "chunks": chunks,
        "meaning": "no passages" if not chunks else f"{meaning_share(embedded, chunks)} of passages" + (
            "" if embedded >= chunks else f" ({embedded:,}/{chunks:,}; " + (
                "the `oboyu index` under way makes the rest)" if busy else "`oboyu index` makes the rest)")),
        "indexing": (f"under way since {run_started}" if busy else
                     f"cut short (started {run_started}); `oboyu index` finishes it") if run_started else None,
        "embedded_chunks": embedded,
        "bytes": file_bytes(path),
        "search_arrays": {"path": str(arrays[0]), "current": arrays[1], "bytes": arrays[2]} if arrays else None,
        "roots": roots,
    }
    if as_json:
        click.echo(json_safe(json.dumps(info, ensure_ascii=False, indent=2)))
        return
    for key, value in info.items():
        if key not in ("roots", "embedded_chunks", "search_arrays") and not (key == "indexing" and value is None):
            click.echo(visible(f"{key:>10}: {f'{value:,}' if isinstance(value, int) else value}"))  # 1,629 chunks
    click.echo(visible(f"{'arrays':>10}: {_arrays_line(arrays)}"))
    click.echo(f"{'folders':>10}:{'' if roots else ' none'}")
    # names padded by the cells a terminal gives them: a Japanese character takes two
    width = max([NAME_CELLS, *(cell_len(visible(summary.name)) for summary in summaries)])
    under = " " * width
    for row, summary in zip(roots, summaries):
        missing = "" if row["exists"] else "  (missing)"
        name = visible(summary.name)
        click.echo(visible(f"  {name}{' ' * (width - cell_len(name))} {summary.path}  {counted(summary.documents, 'file')}, "
                           f"{counted(summary.chunks, 'chunk')}, last changed {row['last_update'] or '-'}{missing}"))
        if summary.description:
            click.echo(visible(f"  {under} {summary.description}"))
        if summary.left_out:
            folders = ", ".join(os.path.relpath(folder, summary.path) for folder in summary.left_out)
            click.echo(visible(f"  {under} left out (junk folders; `oboyu index FOLDER` or .oboyuignore brings one in): {folders}"))
        for stored, known in skipped[summary.path][:SKIPS_SHOWN]:
            where = os.path.relpath(stored, summary.path)  # a file indexed on its own: by its name, not "."
            click.echo(visible(f"  {under} skipped {os.path.basename(stored) if where == '.' else where}: {known.reason}"))
        if len(skipped[summary.path]) > SKIPS_SHOWN:
            click.echo(f"  {under} ... {len(skipped[summary.path]) - SKIPS_SHOWN} more skipped (`oboyu status --json` lists each)")


def _arrays_line(arrays: tuple[Path, bool, int] | None) -> str:
    """The search arrays as `status` says them: where, how big, whether they follow the index."""
    if arrays is None:
        return "none yet (the next `oboyu index`, or the app when it opens the index, makes them)"
    folder, current, size = arrays
    state = "current" if current else "behind the index (brought up to date by the next `oboyu index` or the app)"
    return f"{folder.parent} ({size:,} bytes, {state})"


def _pending(db: Path, names: tuple[str, ...], as_json: bool) -> None:
    plan = Indexer(IndexFile(db), load_embedder(index_model(db))).plan(names)
    # left out, not skipped, as `index` says them: hidden entries (with -v) and junk folders (status lists them)
    plan.skipped = [s for s in plan.skipped if not isinstance(s, (Hidden, JunkFolder))]
    if as_json:
        click.echo(json_safe(json.dumps({
            "added": [str(e.path) for e in plan.added],
            "changed": [str(e.path) for e, _ in plan.changed],
            "removed": [disk_path(p) for p in plan.removed],
            "renamed": [{"from": disk_path(m.old_path), "to": disk_path(m.new_path)} for m in plan.renamed],
            "unchanged": plan.unchanged,
            "skipped": [{"path": str(s.path), "reason": s.reason} for s in plan.skipped],
            "missing_roots": [r.path for r in plan.missing_roots],
        }, ensure_ascii=False, indent=2)))
        return
    for entry in plan.added:
        click.echo(visible(f"added    {entry.path}"))
    for entry, _ in plan.changed:
        click.echo(visible(f"changed  {entry.path}"))
    for removed in plan.removed:
        click.echo(visible(f"removed  {removed}"))
    for move in plan.renamed:
        click.echo(visible(f"renamed  {move.old_path} -> {move.new_path}"))
    for root in plan.missing_roots:
        click.echo(visible(f"missing  {root.path} (its rows are kept)"))
    click.echo(
        f"{len(plan.added)} to add, {len(plan.changed)} to change, {len(plan.removed)} to remove, "
        f"{len(plan.renamed)} renamed, {plan.unchanged} unchanged, {len(plan.skipped)} skipped"
    )


def file_bytes(path: Path) -> int:
    """Size of the index on disk, its write-ahead log included."""
    total = 0
    for candidate in (Path(path), Path(str(path) + ".wal")):
        with contextlib.suppress(OSError):  # the log comes and goes with checkpoints
            total += candidate.stat().st_size
    return total
