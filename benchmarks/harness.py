"""What every benchmark shares: the command line, timing (warm-ups, medians, interleaved rounds),
the CPU class, the development sets, peak memory, and reports (Markdown tables, JSON and charts
in benchmarks/results/).

Run a benchmark as a module from the repository's root: `python -m benchmarks.GROUP.NAME --help`.
Only the standard library is imported here; oboyu's modules are imported where they are used.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent  # the repository
RESULTS = ROOT / "benchmarks" / "results"
DEV = ROOT.parent / "shared" / "eval" / "dev"  # the development sets, beside the clone
# set by benchmarks.hardware.avx2_only for the command it runs: reports name the CPU class by it
AVX512_HIDDEN = "OBOYU_BENCH_AVX512_HIDDEN"
# a Python expression for a process's own peak RSS in MB (VmHWM; not ru_maxrss, which Linux
# carries over exec from a large forking parent): child processes' code embeds it
PEAK_RSS_MB = "int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024"
OBOYU = (sys.executable, "-m", "oboyu.cli")  # the `oboyu` command, as a new process

T = TypeVar("T")


# the command line


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser whose help is the benchmark's docstring, as written, and whose usage names the
    module as it is run (`python -m benchmarks.GROUP.NAME`)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return argparse.ArgumentParser(prog=f"python -m {spec.name}" if spec else None, description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def add_dev_sets(parser: argparse.ArgumentParser, default: Sequence[str] = ("personal", "debian-reference", "manpages-ja")) -> None:
    """--sets (development sets by name) and --db-dir (where their `oboyu eval` indexes live)."""
    parser.add_argument("--sets", nargs="+", default=list(default), help="development sets, by name")
    parser.add_argument("--db-dir", type=Path, default=Path(tempfile.gettempdir()),
                        help="where each set's index is (eval-SET.duckdb, built when absent)")


def log(message: str) -> None:
    """Progress, on stderr (stdout holds the report)."""
    print(message, file=sys.stderr, flush=True)


# timing


def seconds(run: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def timed(run: Callable[[], T]) -> tuple[T, float]:
    """One call's value and its wall seconds."""
    started = time.perf_counter()
    value = run()
    return value, time.perf_counter() - started


def repeat(run: Callable[[], object], runs: int, warmups: int = 0) -> list[float]:
    """Wall seconds of `runs` calls, after `warmups` untimed ones."""
    for _ in range(warmups):
        run()
    return [seconds(run) for _ in range(runs)]


def interleaved(runs: Mapping[Any, Callable[[], T]], rounds: int, *, measure: Callable[[Callable[[], T]], Any] = seconds,
                alternate: bool = False, on_result: Callable[[int, Any, Any], None] | None = None) -> dict[Any, list]:
    """Each round runs every one of `runs` once, so that a busy moment of the machine is shared
    among them; `measure` turns a run into its figure (default: its wall seconds; `call` when the
    run times itself). With `alternate`, every other round goes in the reverse order."""
    out: dict[Any, list] = {name: [] for name in runs}
    for round_ in range(rounds):
        names = list(runs)
        if alternate and round_ % 2:
            names.reverse()
        for name in names:
            out[name].append(measure(runs[name]))
            if on_result:
                on_result(round_, name, out[name][-1])
    return out


def call(run: Callable[[], T]) -> T:
    """The run's own value: for `interleaved` with runs that time themselves."""
    return run()


class Steps:
    """Milliseconds of named steps over repeated runs: `steps.time("embed", fn)` returns fn's value."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = {}

    def time(self, step: str, run: Callable[[], T]) -> T:
        value, took = timed(run)
        self.ms.setdefault(step, []).append(took * 1000)
        return value

    def medians(self) -> dict[str, float]:
        return {step: statistics.median(values) for step, values in self.ms.items()}


median = statistics.median


def p95(values: Sequence[float]) -> float:
    """The 95th percentile by nearest rank, as `oboyu eval` reports it."""
    from oboyu.search.evaluate import p95 as nearest_rank

    return nearest_rank(list(values))


def latency(ms: Sequence[float]) -> str:
    """`p50 X ms, p95 Y ms` of a list of milliseconds."""
    return f"p50 {median(ms):.1f} ms, p95 {p95(ms):.1f} ms"


def runs_text(values: Iterable[float], digits: int = 2) -> str:
    """Each run's figure, `a / b / c`."""
    return " / ".join(f"{v:.{digits}f}" for v in values)


# the machine


def cpu_class() -> str:
    """The CPU's best INT8 instructions, which set the engine's speed (what `oboyu doctor` lists
    as the CPU's features): amx, avx512-vnni, avx-vnni, avx2 (or the machine's architecture
    elsewhere); avx2-emulated under benchmarks.hardware.avx2_only. Figures of different classes
    do not compare."""
    from oboyu.models.providers import cpu_description

    if os.environ.get(AVX512_HIDDEN):
        return "avx2-emulated"
    features = cpu_description()[1]
    for feature, name in (("AMX-INT8", "amx"), ("AVX-512 VNNI", "avx512-vnni"), ("AVX-VNNI", "avx-vnni"), ("AVX2", "avx2")):
        if feature in features:
            return name
    return platform.machine().lower() or "cpu"


def machine(extra: str = "") -> str:
    """One line for a report: the CPU and its INT8 features as `oboyu doctor` reports them, the
    cores, onnxruntime and Python (`extra`, more versions, goes after onnxruntime's)."""
    import onnxruntime

    from oboyu.models.providers import cpu_description, physical_cores

    name, features = cpu_description()
    hidden = "; AVX-512, AVX-VNNI and AMX hidden from the libraries by benchmarks.hardware.avx2_only" if os.environ.get(AVX512_HIDDEN) else ""
    return (f"{name} ({', '.join(features) or 'no AVX2'}{hidden}); {os.cpu_count()} logical cores, {physical_cores()} physical; "
            f"onnxruntime {onnxruntime.__version__}{extra}, Python {platform.python_version()}, {platform.system()} {platform.machine()}")


# memory


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux; the same as PEAK_RSS_MB)."""
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


# the development sets


def dev_set(name: str) -> Path:
    """A development set's folder (docs.jsonl.gz, queries.jsonl, absent.jsonl)."""
    return DEV / name


def dev_docs(name: str) -> list[dict]:
    """A development set's documents, each a dict with `id`, `text` and perhaps `title`."""
    from oboyu.search.evaluate import read_jsonl

    return read_jsonl(dev_set(name) / "docs.jsonl.gz")


def dev_queries(name: str) -> list:
    """A development set's queries (`oboyu.search.evaluate.Query`: id, text, relevant ids)."""
    from oboyu.search.evaluate import read_queries

    return read_queries(dev_set(name) / "queries.jsonl")


def dev_absent(name: str) -> list:
    """The questions a set cannot answer (absent.jsonl), as queries with no relevant document."""
    from oboyu.search.evaluate import Query, read_jsonl

    path = dev_set(name) / "absent.jsonl"
    return [Query(str(row.get("id")), row["query"], frozenset()) for row in read_jsonl(path)] if path.exists() else []


def write_docs(folder: Path, docs: Iterable[dict]) -> int:
    """Each document as one file, named as `oboyu eval` names it; the bytes written."""
    from oboyu.search.evaluate import doc_file_name

    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for doc in docs:
        (folder / doc_file_name(str(doc["id"]))).write_text(doc["text"], encoding="utf-8")
        total += len(doc["text"].encode("utf-8"))
    return total


def eval_index(name: str, db_dir: Path, embedder) -> Path:
    """The index `oboyu eval --db DIR/eval-SET.duckdb` makes of a development set, built here
    when absent."""
    from oboyu.index.store import Store
    from oboyu.progress import ProgressLine
    from oboyu.search.evaluate import index_corpus, write_corpus

    db = db_dir / f"eval-{name}.duckdb"
    if not db.exists():
        with tempfile.TemporaryDirectory() as folder, Store(db) as store:
            write_corpus(dev_set(name) / "docs.jsonl.gz", Path(folder) / "docs")
            index_corpus(store, embedder, Path(folder) / "docs", ProgressLine())
    return db


def indexed_passages(db: Path) -> list[str]:
    """The text of each chunk of an index as the indexer embedded it (title and heading
    included, before the model's prefix), in chunk-id order."""
    from oboyu.index.records import embedding_text
    from oboyu.index.store import Store

    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT d.title, c.heading, c.text FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.id"
        ).fetchall()
    return [embedding_text(title, heading, text) for title, heading, text in rows]


# reports


def table_head(columns: Sequence[str], align: str = "") -> str:
    """A Markdown table's header and rule; `align` has an `r` for each right-aligned column."""
    rule = ["---:" if align[i:i + 1] == "r" else "---" for i in range(len(columns))]
    return table_row(columns) + "\n" + table_row(rule)


def table_row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def table(columns: Sequence[str], rows: Iterable[Iterable[object]], align: str = "") -> str:
    return "\n".join([table_head(columns, align), *(table_row(row) for row in rows)])


def result_path(name: str, out: Path | None = None) -> Path:
    """Where a report file goes: benchmarks/results/ unless `out` is given (made if missing)."""
    folder = out or RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def write_json(name: str, data: object, out: Path | None = None) -> Path:
    path = result_path(name, out)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_text(name: str, text: str, out: Path | None = None) -> Path:
    path = result_path(name, out)
    path.write_text(text, encoding="utf-8")
    return path


def chart(path: Path, draw: Callable[[Any], Any]) -> bool:
    """Draw a chart with matplotlib's pyplot (`draw(plt)` returns the figure) and save it as
    `path`; where matplotlib is not installed, a one-line note instead (`pip install -e
    '.[bench]'`). Whether the chart was written."""
    try:
        import matplotlib
    except ImportError:
        log(f"no chart {path.name}: matplotlib is not installed (pip install -e '.[bench]')")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = draw(plt)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
