"""The `oboyu` command: a thin layer over the library. Errors are one line on stderr.

Exit status: 0 success (query: results found), 1 query with no results (get: a glob or folder
that named no indexed file), 2 error, 130 interrupted, 141 the reader of stdout went away.
"""

from __future__ import annotations

import errno
import importlib
import logging
import os
import signal
import sys
import traceback
from typing import NoReturn

import click

from oboyu import __version__
from oboyu.cli.common import EXIT_ERROR
from oboyu.cli.interrupts import INTERRUPTED, interrupt_outside_imports, leave_closed_pipe, leave_now
from oboyu.errors import OboyuError
from oboyu.index.failures import explained
from oboyu.text import visible


class _Interrupted(Exception):
    """Ctrl+C during a command, carried past click's main(), which writes a blank line for a
    KeyboardInterrupt (to close a terminal's `^C`): a stray line where stderr is a log."""


# each command's name, module in oboyu.cli and function: a command's module is imported when it
# runs, so that `oboyu query` never reads the indexer's modules
COMMANDS = {
    "tui": ("system", "tui"), "index": ("indexing", "index"), "reindex": ("indexing", "reindex"),
    "remove": ("indexing", "remove"), "describe": ("indexing", "describe"), "query": ("searching", "query"),
    "serve": ("serving", "serve"), "get": ("getting", "get"), "status": ("indexing", "status"),
    "cache": ("system", "cache"), "config": ("system", "config_command"), "doctor": ("system", "doctor"),
    "mcp": ("system", "mcp"), "eval": ("searching", "eval_command"), "models": ("models", "models"),
}

# words a person may try for a command (a user trial typed `oboyu search`)
GUESSES = {"search": "query", "find": "query", "ask": "query", "show": "get", "cat": "get", "read": "get",
           "delete": "remove", "forget": "remove", "app": "tui", "info": "status"}


class _Group(click.Group):
    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if not name or name in COMMANDS or name.startswith("-") or ctx.resilient_parsing:  # the last: completing
            return super().resolve_command(ctx, args)
        import difflib  # only for a command that is not one: not at every start

        close = difflib.get_close_matches(name.lower(), [*COMMANDS, *GUESSES], n=1, cutoff=0.7)
        if close:
            raise click.UsageError(f"No such command {name!r}; did you mean `oboyu {GUESSES.get(close[0], close[0])}`?", ctx)
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f"oboyu.cli.{module}"), name)
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _Interrupted from exc
        except BrokenPipeError:  # the reader went away: not "no match" (click's own answer is exit 1)
            sys.exit(leave_closed_pipe())


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, prog_name="oboyu")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.option("--provider", metavar="NAME", help="Embed with this onnxruntime provider (cpu, cuda, tensorrt, "
              "coreml, directml) or with openvino, rather than the platform's choice; also $OBOYU_PROVIDER.")
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
            from oboyu.cli.system import tui

            ctx.invoke(tui)
        else:
            click.echo(ctx.get_help())


class _LibraryMessages(logging.Handler):
    """The library's messages (a cache moved aside, an accelerator dropped) as `oboyu: ...` lines
    on whatever stderr is at the time: the app redirects it while it owns the terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(visible(f"oboyu: {record.getMessage()}"), err=True)


# what DuckDB raises when Ctrl+C comes during one of its queries (a RuntimeError, not KeyboardInterrupt)
DUCKDB_INTERRUPTED = "Query interrupted"


def _is_interruption(exc: Exception) -> bool:
    """Ctrl+C as a native library passes it on: DuckDB's RuntimeError during one of its queries,
    or a KeyboardInterrupt raised in Python code a library called back, which DuckDB's binding
    wraps as "Error: KeyboardInterrupt: ... At: ..." (seen once in eighty runs cut short)."""
    if isinstance(exc, RuntimeError) and str(exc) == DUCKDB_INTERRUPTED:
        return True
    return str(exc).startswith(("KeyboardInterrupt", "Error: KeyboardInterrupt"))


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _interrupted() -> NoReturn:
    """Ctrl+C: one line, exit status 130, and no interpreter shutdown. A user trial saw Ctrl+C
    end in a segmentation fault about once in twelve; the shutdown, where threads still in
    onnxruntime, OpenVINO or DuckDB meet libraries being torn down, is one place that can happen.
    What the run stored is as safe as after a kill (the crash tests). On a terminal a line break
    first, past the `^C` it shows."""
    click.echo(("\n" if _is_terminal(sys.stderr) else "") + INTERRUPTED, err=True)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            pass
    os._exit(130)


def main() -> None:
    debug = "--debug" in sys.argv[1:]
    library = logging.getLogger("oboyu")
    if not any(isinstance(handler, _LibraryMessages) for handler in library.handlers):  # main() run again in one process
        library.addHandler(_LibraryMessages())
    library.setLevel(logging.DEBUG if debug else logging.WARNING)
    library.propagate = False
    try:
        if signal.getsignal(signal.SIGINT) is leave_now:  # from here Ctrl+C is caught below
            signal.signal(signal.SIGINT, interrupt_outside_imports)
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `oboyu models` alone (click 8.2+): its help, as written
            click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
            sys.exit(0)
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        if isinstance(exc, click.NoSuchOption) and exc.ctx and exc.ctx.command.name == "query":
            # a trial searched for `--dry-run`: text that starts with - goes after --
            hint = f"; to search for text that starts with -, put it after --: oboyu query -- {exc.option_name}"
        click.echo(visible(f"oboyu: error: {exc.format_message().removesuffix('.')}{hint}"), err=True)
        sys.exit(EXIT_ERROR)
    except click.ClickException as exc:
        click.echo(visible(f"oboyu: error: {exc.format_message()}"), err=True)
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort:
        _interrupted()
    except OboyuError as exc:
        if debug:
            traceback.print_exc()
        click.echo(visible(f"oboyu: error: {exc}"), err=True)
        sys.exit(EXIT_ERROR)
    except (KeyboardInterrupt, _Interrupted):
        _interrupted()
    except SystemExit:
        raise
    except OSError as exc:  # a full disk, a folder that cannot be written: the system's words, one line
        if debug:
            traceback.print_exc()
        where = f": {exc.filename}" if exc.filename else ""
        hint = {errno.ENOSPC: "; free some space and run it again", errno.EROFS: "; choose a writable place",
                errno.EACCES: "; check the permissions",
                errno.EEXIST: "; a file stands where a folder is needed: choose another place",
                errno.ENOTDIR: "; a part of the path is a file, not a folder"}.get(exc.errno or 0, "")
        if exc.errno == errno.ENOENT and exc.filename and os.path.isdir(os.path.dirname(os.fspath(exc.filename)) or "."):
            hint = "; that folder takes no new files: choose another place"  # /proc, /sys: the folder is there
        if hint and exc.filename:
            hint += _setting_for(os.fspath(exc.filename))
        click.echo(visible(f"oboyu: error: {exc.strerror or exc}{where}{hint}"), err=True)
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if _is_interruption(exc):
            _interrupted()
        if debug:
            traceback.print_exc()
        if (said := explained(exc)) is not None:  # DuckDB's: a full disk, a damaged index
            click.echo(visible(f"oboyu: error: {said}"), err=True)
            sys.exit(EXIT_ERROR)
        click.echo(visible(f"oboyu: unexpected error: {type(exc).__name__}: {exc} (--debug shows the traceback)"), err=True)
        sys.exit(EXIT_ERROR)


def _setting_for(path: str | bytes) -> str:
    """Which setting chooses the place a failed write was in (a trial's read-only cache folder
    read "choose a writable place", naming no way to)."""
    from oboyu.paths import cache_dir, is_within, state_dir

    path = os.path.abspath(os.fsdecode(path))
    for folder, what, variable in ((cache_dir(), "oboyu's cache of models and embeddings", "OBOYU_CACHE_DIR"),
                                   (state_dir(), "what the app remembers", "OBOYU_STATE_DIR")):
        if is_within(path, os.path.abspath(folder)):
            return f" ({what}: {variable} sets another folder)"
    return ""


if __name__ == "__main__":
    main()
