"""Search at archive size: how a query, the long-lived processes and `status` fare on indexes of
100,000 to 10,000,000 passages, and what they cost in memory and disk.

    python -m benchmarks.scale.archive build SOURCE.duckdb OUT.duckdb --passages 1000000
    python -m benchmarks.scale.archive measure OUT.duckdb [--queries 20] [--json NAME]
    python -m benchmarks.scale.archive churn COPY.duckdb [--files 10] [--rounds 3] [--json NAME]

`build` grows a real index (one `oboyu index` made of real text, e.g. a development set's) inside
DuckDB to --passages passages: each copy of the source's files gets its own paths under the same
root, its chunks new ids, its vectors the source's with uniform noise of ±0.01 a dimension,
normalized again (cosine to the original about 0.99), and its rare words (those in a single
passage of the source) renamed per copy, so that the vocabulary grows with the archive as a
person's does (new names, codes and typos in every year of notes) rather than staying the
source's. Every table is filled by DuckDB itself (INSERT ... SELECT from the attached source):
about a minute per million passages on 2 cores.

`measure` runs, on the index as it stands (no server running: OBOYU_NO_HANDOFF=1):
  - one-shot `oboyu query` per mode: CPU seconds (user + system) and peak resident memory,
    medians over --rounds runs of different queries;
  - `oboyu query --stdin` (the loop the app and MCP share): seconds to the first answer, then
    each further query's latency (p50, p95) and the resident memory after the last, with its
    peak (VmHWM) and the part of it that is not mapped files (RssAnon); twice: first after a
    change (the index's search arrays removed: from 50,000 passages they are made beside the
    process while it answers in the index file, and the figures say when they were ready and
    how long the first few answers took before that), then as every later start finds them;
  - `oboyu status` wall seconds; the index's size on disk, its arrays', and its passage count.
The queries are the source's passages' first words (--queries of them), so every one has a match.

`churn` CHANGES the index it is given (run it on a copy): each round removes --files files' rows,
as `oboyu index` does for files deleted, then times bringing the search arrays up to date from
the last generation's, and making them anew from the same index; and the update's peak memory,
in a process of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from benchmarks import harness
from oboyu.index.arrays import homes
from oboyu.modes import Mode

NOISE = 0.01  # each dimension's uniform noise, either way
RARE_DF = 1  # words in at most this many of the source's passages are renamed per copy
MEANWHILE = 5  # queries asked while the arrays are made beside `--stdin` (each slows their making)


def build(source: Path, out: Path, passages: int) -> dict:
    """A copy of `source` grown to at least `passages` passages; what was made."""
    if out.exists():
        raise SystemExit(f"{out} exists: remove it first")
    shutil.copyfile(source, out)
    started = time.perf_counter()
    con = duckdb.connect(str(out))
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
    (chunks,) = con.execute("SELECT count(*) FROM src.chunks").fetchone() or (0,)
    (stride,) = con.execute("SELECT max(id) + 1 FROM src.documents").fetchone() or (1,)
    (root,) = con.execute("SELECT path FROM src.roots LIMIT 1").fetchone() or ("",)
    (dimensions,) = con.execute("SELECT value FROM src.meta WHERE key = 'dimensions'").fetchone() or ("384",)
    copies = max(1, -(-passages // max(1, chunks)))
    con.execute(f"CREATE TEMP TABLE rare AS SELECT term FROM src.kw_postings GROUP BY term HAVING count(*) <= {RARE_DF}")
    for copy in range(1, copies):
        con.execute("BEGIN")
        tag = f"c{copy:05d}"
        con.execute(f"""INSERT INTO documents SELECT id + {copy * stride}, ? || '/{tag}' || substr(path, {len(root) + 1}),
                        root, size, mtime_ns, sha256 || '{tag}', encoding, file_type, title, indexed_at FROM src.documents""", [root])
        con.execute(f"""INSERT INTO chunks SELECT id || '.{tag}', document_id + {copy * stride}, ordinal, heading, start_line,
                        end_line, start_char, end_char, text, page_start, page_end FROM src.chunks""")
        con.execute(f"INSERT INTO kw_lengths SELECT chunk_id || '.{tag}', length FROM src.kw_lengths")
        con.execute(f"""INSERT INTO kw_postings SELECT p.chunk_id || '.{tag}',
                        CASE WHEN r.term IS NULL THEN p.term ELSE p.term || '{tag}' END, p.tf
                        FROM src.kw_postings p LEFT JOIN rare r ON p.term = r.term""")
        con.execute(f"""INSERT INTO embeddings SELECT chunk_id || '.{tag}', list_transform(w, x -> x / n)::FLOAT[{int(dimensions)}]
                        FROM (SELECT chunk_id, w, sqrt(list_dot_product(w, w)) AS n FROM (
                            SELECT chunk_id, list_transform(vector::FLOAT[], x -> x + (random()::FLOAT - 0.5) * {2 * NOISE}) AS w
                            FROM src.embeddings))""")
        con.execute("COMMIT")
        harness.log(f"copy {copy + 1}/{copies}: {(copy + 1) * chunks:,} passages, {time.perf_counter() - started:.0f}s")
    con.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", [os.urandom(16).hex()])
    con.execute("DETACH src")
    con.execute("CHECKPOINT")
    con.close()
    return {"passages": copies * chunks, "copies": copies, "seconds": round(time.perf_counter() - started, 1)}


def _queries(db: Path, count: int) -> list[str]:
    """The first words of `count` passages spread over the index (so each has a match)."""
    with duckdb.connect(str(db), read_only=True) as con:
        texts = [row[0] for row in con.execute(
            f"SELECT text FROM chunks USING SAMPLE reservoir({count} ROWS) REPEATABLE (7)").fetchall()]
    return [" ".join(text.split())[:24] for text in texts]


def _env(db: Path) -> dict[str, str]:
    return {**os.environ, "OBOYU_DB": str(db), "OBOYU_NO_HANDOFF": "1"}


def one_shot(db: Path, query: str, mode: Mode) -> tuple[float, float]:
    """CPU seconds and peak resident MB of one `oboyu query` process (its own, from wait4)."""
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen([*harness.OBOYU, "query", "--mode", str(mode), "--json", "--all", "--", query],
                                   env=_env(db), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(err.read().decode(errors="replace"))
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _memory(pid: int) -> tuple[float, float, float]:
    """Resident, peak resident and anonymous resident MB of a running process (the rest of
    what is resident is pages of files it maps, the arrays and the graph: the system's cache,
    given back under pressure)."""
    status = Path(f"/proc/{pid}/status").read_text()
    field = {line.split(":")[0]: line.split()[1] for line in status.splitlines()
             if line.startswith(("VmRSS", "VmHWM", "RssAnon"))}
    return int(field["VmRSS"]) / 1024, int(field["VmHWM"]) / 1024, int(field["RssAnon"]) / 1024


def _arrays_made(db: Path) -> bool:
    from oboyu.index.arrays_cache import made_arrays
    from oboyu.index.store import Store

    try:
        with Store(db, read_only=True) as store:
            return made_arrays(store) is not None
    except duckdb.Error:
        return False


def warm_loop(db: Path, queries: list[str]) -> dict:
    """`oboyu query --stdin`: first answer, per-query latency, memory. Where the arrays are
    being made beside it, a few queries meanwhile (one every 5 s) and when they were ready."""
    started = time.perf_counter()
    process = subprocess.Popen([*harness.OBOYU, "query", "--stdin", "-k", "10"], env=_env(db), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert process.stdin is not None and process.stdout is not None

    def ask(query: str) -> float:
        asked = time.perf_counter()
        process.stdin.write(query + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        process.stdout.readline()  # type: ignore[union-attr]
        return time.perf_counter() - asked

    figures: dict = {}
    try:
        ask(queries[0])
        figures["first_answer_s"] = round(time.perf_counter() - started, 2)
        meanwhile = []
        while not _arrays_made(db):  # made beside it: a few answered in the index file meanwhile
            if len(meanwhile) < MEANWHILE:
                meanwhile.append(1000 * ask(queries[1 + len(meanwhile) % (len(queries) - 1)]))
            time.sleep(5)
        if meanwhile:
            figures["arrays_ready_s"] = round(time.perf_counter() - started, 1)
            figures["meanwhile_p50_ms"] = round(statistics.median(meanwhile), 1)
        rest = [1000 * ask(query) for query in queries[1:]]
        resident, peak, anonymous = _memory(process.pid)
    finally:
        process.stdin.close()
        process.wait()
    return {**figures, "p50_ms": round(statistics.median(rest), 1), "p95_ms": round(harness.p95(rest), 1),
            "resident_mb": round(resident), "peak_mb": round(peak), "anonymous_mb": round(anonymous)}


def _one_shots(db: Path, queries: list[str], figures: dict, suffix: str) -> None:
    for mode in (Mode.KEYWORD, Mode.VECTOR, Mode.HYBRID):
        runs = [one_shot(db, query, mode) for query in queries]
        figures[f"one_shot_{mode}{suffix}"] = {"cpu_s": round(statistics.median(c for c, _ in runs), 2),
                                               "peak_mb": round(max(m for _, m in runs))}
        harness.log(f"one-shot {mode}{suffix}: {figures[f'one_shot_{mode}{suffix}']}")


def measure(db: Path, queries: int, rounds: int) -> dict:
    asked = _queries(db, max(queries, rounds))
    with duckdb.connect(str(db), read_only=True) as con:
        (passages,) = con.execute("SELECT count(*) FROM chunks").fetchone() or (0,)
    figures: dict = {"passages": passages, "disk_mb": round(db.stat().st_size / 2**20)}
    beside = homes(db)[0]
    shutil.rmtree(beside, ignore_errors=True)  # as after a change no `oboyu index` has finished
    _one_shots(db, asked[:rounds], figures, "")
    figures["stdin_after_a_change"] = warm_loop(db, asked[:queries])
    harness.log(f"--stdin, arrays made first: {figures['stdin_after_a_change']}")
    figures["stdin"] = warm_loop(db, asked[:queries])
    harness.log(f"--stdin: {figures['stdin']}")
    figures["arrays_mb"] = round(sum(f.stat().st_size for f in beside.rglob("*") if f.is_file()) / 2**20)
    _one_shots(db, asked[:rounds], figures, "_from_arrays")  # as after `oboyu index`, which makes them
    started = time.perf_counter()
    subprocess.run([*harness.OBOYU, "status"], env=_env(db), capture_output=True, check=True)
    figures["status_s"] = round(time.perf_counter() - started, 2)
    return figures


CHURN = f"""
import sys, time
from pathlib import Path
from oboyu.index.arrays_cache import arrays_of
from oboyu.index.store import Store
with Store(Path(sys.argv[1]), read_only=True) as store:
    started = time.perf_counter()
    arrays_of(store)
    print("made", time.perf_counter() - started, {harness.PEAK_RSS_MB})
"""


def _arrays_in_own_process(db: Path) -> tuple[float, float]:
    """Seconds to open or make the arrays, and the process's peak MB."""
    done = subprocess.run([sys.executable, "-c", CHURN, str(db)], capture_output=True, text=True, check=True)
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("made ")]  # DuckDB may draw progress
    _, seconds, peak = line.split()
    return float(seconds), float(peak)


def churn(db: Path, files: int, rounds: int) -> dict:
    from oboyu.index.store import Store

    _arrays_in_own_process(db)  # the arrays of the index as it stands
    updates, anew, peaks = [], [], []
    for round_ in range(rounds):
        with Store(db) as store:
            paths = [p for (p,) in store.con.execute("SELECT path FROM documents ORDER BY id LIMIT ? OFFSET ?",
                                                     [files, 1000 * (round_ + 1)]).fetchall()]
            store.delete_paths(paths)
        seconds, peak = _arrays_in_own_process(db)
        updates.append(seconds)
        peaks.append(peak)
        for folder in homes(db)[0].iterdir():  # the same generation, made anew
            shutil.rmtree(folder)
        anew.append(_arrays_in_own_process(db)[0])
        harness.log(f"round {round_ + 1}: updated in {seconds:.1f} s (peak {peak:.0f} MB), made anew in {anew[-1]:.1f} s")
    return {"files_removed_a_round": files, "update_s": round(statistics.median(updates), 1),
            "anew_s": round(statistics.median(anew), 1), "update_peak_mb": round(max(peaks))}


def main() -> None:
    cli = harness.parser(__doc__)
    verbs = cli.add_subparsers(dest="verb", required=True)
    grow = verbs.add_parser("build", help="grow a real index to --passages passages")
    grow.add_argument("source", type=Path)
    grow.add_argument("out", type=Path)
    grow.add_argument("--passages", type=int, default=100_000)
    gauge = verbs.add_parser("measure", help="query, load, memory and status figures of an index")
    gauge.add_argument("db", type=Path)
    gauge.add_argument("--queries", type=int, default=20, help="queries through --stdin")
    gauge.add_argument("--rounds", type=int, default=3, help="one-shot queries per mode")
    gauge.add_argument("--json", metavar="NAME", help="also write results/NAME.json")
    changes = verbs.add_parser("churn", help="remove files from the index (a copy!) and time its arrays' update")
    changes.add_argument("db", type=Path)
    changes.add_argument("--files", type=int, default=10)
    changes.add_argument("--rounds", type=int, default=3)
    changes.add_argument("--json", metavar="NAME", help="also write results/NAME.json")
    args = cli.parse_args()
    if args.verb == "build":
        print(json.dumps(build(args.source, args.out, args.passages)))
        return
    measured = churn(args.db, args.files, args.rounds) if args.verb == "churn" else measure(args.db, args.queries, args.rounds)
    figures = {"machine": harness.machine(), **measured}
    print(json.dumps(figures, indent=1))
    if args.json:
        print(f"wrote {harness.write_json(f'{args.json}.json', figures)}", file=sys.stderr)


if __name__ == "__main__":
    main()
