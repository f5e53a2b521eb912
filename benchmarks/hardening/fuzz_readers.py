"""Does any reader fail on a hostile file? The generators of tests/test_reader_fuzz.py (every
reader, plus random bytes behind every extension), run for many more examples than CI's, with
fresh random seeds, under the same contract: text that UTF-8 holds, or `Unextractable` with a
reason, within the time and memory limits.

    python -m benchmarks.hardening.fuzz_readers [--examples 2000] [--cases pdf docx ...] [--seed N] [--jobs 2]

Each case runs in its own process, so that a reader that kills the interpreter (a crash in PDFium,
calamine or libxml2) is reported with the file that did it instead of ending the run. Prints a
Markdown table (examples, read, refused with a reason, failures, seconds, the most memory one file
took) and each distinct failure (exception and where it was raised) with its smallest input, saved
under --save as a file to open or to turn into a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

from benchmarks import harness

TESTS = harness.ROOT / "tests"


def fuzz_module() -> ModuleType:
    """tests/test_reader_fuzz.py, whose imports (`office_files`, `pdfs`, `conftest`) are the test
    folder's own modules, as pytest finds them."""
    sys.path.insert(0, str(TESTS))
    import test_reader_fuzz

    return test_reader_fuzz


def signature(exc: BaseException) -> str:
    """What tells two failures apart: the exception, and the last line of oboyu (else the last
    line) it passed through."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/oboyu/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    message = re.sub(r"\d+", "N", str(exc).splitlines()[0][:100]) if str(exc).strip() else ""  # 5000 digits, 5001 digits: one failure
    return f"{type(exc).__name__} at {where}: {message}"


def worker(case: str, examples: int, seed: int, save: Path) -> dict:
    """One case's examples in this process; the counts and failures as a dict."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    fuzz = fuzz_module()
    strategy = fuzz.any_extension() if case == "any" else fuzz.CASES[case]
    counts = {"examples": 0, "read": 0, "refused": 0, "peak_mb": 0.0}
    failures: dict[str, dict] = {}
    current = save / f"{case}.current"

    @with_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(file=strategy)
    def run(file: tuple[str, bytes]) -> None:
        name, data = file
        current.write_bytes(data)  # what a crash of the interpreter leaves behind
        (save / f"{case}.current-name").write_text(name, errors="surrogateescape")
        counts["examples"] += 1
        usage: dict[str, float] = {}
        try:
            extracted = fuzz.read_or_refuse(fuzz.case_type(case, name), name, data, usage)
        except (Exception, fuzz.ReaderHang) as exc:
            key = signature(exc)
            seen = failures.setdefault(key, {"count": 0, "bytes": None, "file": None})
            seen["count"] += 1
            if seen["bytes"] is None or len(data) < seen["bytes"]:
                kept = save / f"{case}-{len(failures)}{Path(name).suffix or '.bin'}"
                kept.write_bytes(data)
                seen.update(bytes=len(data), file=str(kept), name=name)
        else:
            counts["read" if extracted is not None else "refused"] += 1
        counts["peak_mb"] = max(counts["peak_mb"], usage.get("mb", 0.0))

    run()
    current.unlink(missing_ok=True)
    (save / f"{case}.current-name").unlink(missing_ok=True)
    fuzz.SECRET_FILE.unlink(missing_ok=True)
    return {"case": case, **counts, "failures": failures}


def run_case(case: str, examples: int, seed: int, save: Path) -> dict:
    started = time.perf_counter()
    child = subprocess.run([sys.executable, "-m", "benchmarks.hardening.fuzz_readers", "--worker", case,
                            "--examples", str(examples), "--seed", str(seed), "--save", str(save)],
                           cwd=harness.ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
    if child.returncode == 0 and lines:
        return {**json.loads(lines[-1]), "seconds": seconds}
    # the interpreter died (a signal) or the worker failed: the file it was reading is the input
    kept = save / f"{case}-crash.bin"
    if (save / f"{case}.current").exists():
        shutil.copy(save / f"{case}.current", kept)
    why = f"process ended with {child.returncode}: {child.stderr.strip().splitlines()[-1] if child.stderr.strip() else ''}"
    return {"case": case, "examples": None, "read": None, "refused": None, "peak_mb": None, "seconds": seconds,
            "failures": {why: {"count": 1, "bytes": kept.stat().st_size if kept.exists() else None,
                               "file": str(kept) if kept.exists() else None}}}


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--examples", type=int, default=2000, help="examples per case")
    parser.add_argument("--cases", nargs="+", help="cases by name (default: all, and `any`: random bytes behind every extension)")
    parser.add_argument("--seed", type=int, help="the first case's seed (default: random; each case gets the next)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    parser.add_argument("--save", type=Path, help="where failing inputs are kept (default: a new temporary folder)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one case, in the child process
    args = parser.parse_args()
    save = args.save or Path(tempfile.mkdtemp(prefix="oboyu-fuzz-readers-"))
    save.mkdir(parents=True, exist_ok=True)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    if args.worker:
        print(json.dumps(worker(args.worker, args.examples, seed, save)))
        return
    cases = args.cases or [*sorted(fuzz_module().CASES), "any"]
    harness.log(f"{len(cases)} cases x {args.examples} examples, seeds from {seed}, {args.jobs} at once; inputs kept in {save}")
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda pair: run_case(pair[1], args.examples, seed + pair[0], save), enumerate(cases)))
    print(harness.machine())
    print()
    print(harness.table(
        ["case", "examples", "read", "refused", "failures", "seconds", "most MB one file took"],
        [[r["case"], r["examples"], r["read"], r["refused"], sum(f["count"] for f in r["failures"].values()),
          f"{r['seconds']:.0f}", f"{r['peak_mb']:.0f}" if r["peak_mb"] is not None else "-"] for r in results],
        align="lrrrrrr",
    ))
    total = sum(r["examples"] or 0 for r in results)
    distinct = [(r["case"], key, f) for r in results for key, f in r["failures"].items()]
    print(f"\n{total:,} examples, {len(distinct)} distinct failures (seeds {seed}-{seed + len(cases) - 1})")
    for case, key, found in distinct:
        print(f"- {case}: {key} ({found['count']}x; smallest {found['bytes']} bytes: {found['file']})")


if __name__ == "__main__":
    main()
