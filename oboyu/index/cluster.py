"""Indexing with a Ray cluster (`oboyu index --cluster ADDRESS`): the files that need work are
read, extracted, chunked and given their keyword terms by workers on the cluster, and the
passages the embedding cache lacks are embedded there; the indexer keeps the crawl, the plan,
the cache and every write, so the index is the one a single process makes.

Each worker is a Ray actor holding one ONNX session with a thread a CPU it was given, restarted
and its task retried by Ray when its process dies. The model travels once through Ray's object
store; each machine unpacks it into its cache folder and checks every file's hash and the model's
fingerprint against the indexer's before a worker loads it. A file a worker cannot open (a folder
only the indexer's machine mounts) is read by the indexer and sent as bytes.

Ray core actors rather than Ray Data: the indexer streams per-file results into its own
transactions, and Ray Data would add pyarrow and pandas for no part of that."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

import oboyu
from oboyu.documents.chunking import Chunker
from oboyu.errors import OboyuError
from oboyu.index.indexer import PrepareSettings, Todo
from oboyu.index.preparing import Content, NotReadableHere, Outcome, prepare_file, read_file
from oboyu.index.records import StoredFile
from oboyu.models.embedding import Embedder
from oboyu.models.manifest import split_engine
from oboyu.models.shipping import model_files, unpack_model

ACTOR_CPUS = 1  # CPUs (and ONNX threads) a worker takes: one worker a CPU also spreads the Python work
FILES_PER_TASK = 16  # files sent to a worker at once ...
BYTES_PER_TASK = 8 << 20  # ... or fewer, up to this many bytes
TASKS_PER_WORKER = 2  # in flight: one running, one waiting, so a worker never idles between tasks
TEXTS_PER_TASK = 64  # passages a worker embeds at once: a group of the meaning pass is cut into several
CONNECT_SECONDS = 5.0
READY_SECONDS = 600.0  # for the workers to start and load the model (sent over the network once)
TASK_RETRIES = 2  # a task whose worker died is run again this often; then its files are prepared here
WAIT_SECONDS = 0.5  # between looks at whether the run was stopped
LOCAL = "local"

Tag = TypeVar("Tag")
Job = tuple[Any, StoredFile | None, Content | None]  # a FileEntry, what the index holds, bytes the indexer read


@dataclass
class ModelParcel:
    """The model as the workers get it: its manifest, and each file as an object in Ray's store
    (inside a dataclass, so Ray hands the references over instead of the bytes: a machine that
    has the model already fetches nothing)."""

    model_id: str
    manifest: dict
    files: dict[str, Any]  # file name -> ray.ObjectRef of its bytes
    oboyu_version: str


class ClusterWorker:
    """What runs on the cluster, as a Ray actor: a model, a chunker, and the two kinds of work.
    Every call carries the parcel and the first one loads it, so that a worker Ray restarts
    loads it again (a constructor argument holding object references makes Ray warn that a
    restart may not find them)."""

    def __init__(self, threads: int):
        self.threads = threads
        self.embedder: Embedder | None = None
        self.chunker: Chunker | None = None
        self.problem: str | None = None  # said by `ready`: a worker that raised would only say it died

    def _load(self, parcel: ModelParcel) -> tuple[Embedder, Chunker]:
        if self.embedder is None or self.chunker is None:
            if parcel.oboyu_version != oboyu.__version__:
                raise OboyuError(f"this machine runs oboyu {oboyu.__version__}, the indexer {parcel.oboyu_version}")
            embedder = Embedder(receive_model(parcel), threads=self.threads, engine=split_engine(parcel.model_id)[1])
            if embedder.info.model_id != parcel.model_id:
                raise OboyuError(f"the model here is {embedder.info.model_id}, the indexer's {parcel.model_id}")
            self.embedder, self.chunker = embedder.load(passages=True), Chunker(embedder.count_tokens, embedder.split_by_tokens)
        return self.embedder, self.chunker

    def ready(self, parcel: ModelParcel) -> tuple[str, int, str | None]:
        """This worker's Ray node and process, its model loaded; or the problem that keeps it from working."""
        import ray

        try:
            self._load(parcel)
        except Exception as exc:
            self.problem = str(exc) if isinstance(exc, OboyuError) else f"{type(exc).__name__}: {exc}"
        return ray.get_runtime_context().get_node_id(), os.getpid(), self.problem

    def prepare(self, parcel: ModelParcel, jobs: list[Job], settings: PrepareSettings) -> list[Outcome | NotReadableHere]:
        embedder, chunker = self._load(parcel)
        return [prepare_file(entry, previous, embedder, chunker, settings.max_bytes, settings.full,
                             settings.bulk, content, on_worker=True)
                for entry, previous, content in jobs]

    def embed(self, parcel: ModelParcel, texts: list[str]) -> np.ndarray:
        embedder, _ = self._load(parcel)
        return embedder.embed(texts)


def receive_model(parcel: ModelParcel) -> Path:
    """The parcel's model in this machine's cache folder (`models.shipping.unpack_model`): each
    file fetched from Ray's object store only when this machine has no checked copy."""
    import ray

    return unpack_model(parcel.model_id, parcel.manifest, lambda name: ray.get(parcel.files[name]))


class Cluster:
    """A Ray cluster's workers for one indexing run (Workers, for oboyu.index.indexer.Indexer).
    `address`: "local" starts Ray on this machine; else a Ray address ("auto", "host:6379",
    "ray://host:10001"). `connect` (or entering it) joins the cluster; workers start on first
    use; `close` stops them."""

    def __init__(self, address: str, embedder: Embedder, notify: Callable[[str], None] | None = None):
        self.address = address
        self.embedder = embedder  # the indexer's: the model the workers must have
        self.notify = notify or logging.getLogger(__name__).info
        self._ray: Any = None
        self._workers: list[Any] = []
        self._parcel: ModelParcel | None = None  # its references keep the model in Ray's store for restarted workers
        self._empty = np.zeros((0, embedder.info.dimensions), np.float32)
        self._chunker: Chunker | None = None  # for a file that stops its workers

    # --- connecting ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Join the cluster (or start the local one); a one-line OboyuError when it cannot."""
        try:
            import ray
        except ImportError:
            raise OboyuError("--cluster needs Ray: pip install 'oboyu[cluster]'") from None
        self._ray = ray
        # Ray reports usage statistics to its makers unless told not to; nothing leaves the machine unasked
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        settings: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
        if self.address == LOCAL:
            settings.update(num_cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
                            include_dashboard=False)
        else:
            _check_reachable(self.address)
            settings["address"] = self.address
        try:
            ray.init(**settings)
        except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError for these
            raise OboyuError(f"cannot use the Ray cluster at {self.address}: {_first_line(exc)}") from None

    def _start(self) -> list[Any]:
        if self._workers:
            return self._workers
        if self._ray is None:  # not from here: this runs in the indexer's reader thread, and Ray
            # ties the life of the processes `local` starts to the thread that starts them
            raise RuntimeError("Cluster.connect() first, in a thread that outlives the run")
        ray = self._ray
        cpus = int(ray.available_resources().get("CPU", 0))  # a shared cluster's busy CPUs would never start a worker
        if cpus < ACTOR_CPUS:
            raise OboyuError(f"the Ray cluster at {self.address} has no free CPU for oboyu's workers")
        folder = self.embedder.model_dir
        manifest = self.embedder.manifest
        files = {name: ray.put((folder / name).read_bytes()) for name in model_files(manifest)}
        parcel = self._parcel = ModelParcel(self.embedder.info.model_id, manifest, files, oboyu.__version__)
        remote = ray.remote(num_cpus=ACTOR_CPUS, max_restarts=-1, max_task_retries=TASK_RETRIES)(ClusterWorker)
        workers = [remote.options(scheduling_strategy="SPREAD").remote(ACTOR_CPUS) for _ in range(max(1, cpus // ACTOR_CPUS))]
        self.notify(f"starting {len(workers)} workers on the Ray cluster at {self.address} (loading the model)")
        try:
            places = self._get([worker.ready.remote(parcel) for worker in workers], timeout=READY_SECONDS)
        except OboyuError:
            for worker in workers:
                ray.kill(worker)
            raise
        problems = sorted({problem for _, _, problem in places if problem})
        if problems:
            for worker in workers:
                ray.kill(worker)
            raise OboyuError(f"a worker cannot index: {problems[0]}")
        nodes = len({node for node, _, _ in places})
        self.notify(f"{len(workers)} workers on {nodes} node{'s' if nodes != 1 else ''} ready")
        self._workers = workers
        return workers

    def close(self) -> None:
        if self._ray is None:
            return
        for worker in self._workers:
            with contextlib.suppress(Exception):
                self._ray.kill(worker)
        self._workers = []
        self._ray.shutdown()
        self._ray = None

    def __enter__(self) -> Cluster:
        if self._ray is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def worker_processes(self) -> list[tuple[str, int]]:
        """(Ray node id, process id) of each worker, as it is now (a restarted worker has a new one)."""
        return [(node, pid) for node, pid, _ in self._get([w.ready.remote(self._parcel) for w in self._start()])]

    # --- the work ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def prepared(self, todo: Todo, settings: PrepareSettings, stop: threading.Event) -> Iterator[Iterator[Outcome]]:
        outcomes = self._prepared(todo, settings, stop)
        try:
            yield outcomes
        finally:
            outcomes.close()

    def _prepared(self, todo: Todo, settings: PrepareSettings, stop: threading.Event) -> Generator[Outcome, None, None]:
        workers = self._start()
        jobs: deque[list[Job]] = deque(_batches(todo))
        running: dict[Any, tuple[Any, list[Job]]] = {}  # task -> (worker, its files)
        sent = here = 0  # files the workers could not open, read here; files prepared here
        try:
            while (jobs or running) and not stop.is_set():
                while jobs and len(running) < TASKS_PER_WORKER * len(workers):
                    worker = _least_busy(workers, {task: w for task, (w, _) in running.items()})
                    batch = jobs.popleft()
                    running[worker.prepare.remote(self._parcel, batch, settings)] = (worker, batch)
                finished, _ = self._ray.wait(list(running), num_returns=1, timeout=WAIT_SECONDS)
                for task in finished:
                    _, batch = running.pop(task)
                    try:
                        outcomes = self._ray.get(task)
                    except self._ray.exceptions.RayError:
                        if len(batch) > 1:  # a file that takes its worker down: find it, one file a task
                            jobs.extendleft([job] for job in reversed(batch))
                            continue
                        # that file, after Ray's retries: prepared here, as a single run would
                        entry, previous, given = batch[0]
                        outcomes = [self._prepare_here(entry, previous, given, settings)]
                        here += 1
                    resend: list[Job] = []
                    for outcome in outcomes:
                        if isinstance(outcome, NotReadableHere):
                            content = read_file(outcome.entry, settings.max_bytes)
                            if isinstance(content, tuple):
                                resend.append((outcome.entry, outcome.previous, content))
                                sent += 1
                                continue
                            outcome = content  # Skipped or Vanished: it cannot be read here either
                        yield outcome
                    if resend:
                        jobs.appendleft(resend)
            if sent:
                self.notify(f"the workers could not open {sent:,} files (or saw other files at their paths); "
                            "they were read here and sent to them")
            if here:
                self.notify(f"{here:,} files stopped their workers again and again; they were prepared here")
        finally:
            for task in running:  # the run stopped: work not yet written is dropped
                with contextlib.suppress(Exception):
                    self._ray.cancel(task)

    def _prepare_here(self, entry: Any, previous: StoredFile | None, content: Content | None,
                      settings: PrepareSettings) -> Outcome:
        if self._chunker is None:
            self._chunker = Chunker(self.embedder.count_tokens, self.embedder.split_by_tokens)
        outcome = prepare_file(entry, previous, self.embedder, self._chunker, settings.max_bytes, settings.full,
                               content=content)
        assert not isinstance(outcome, NotReadableHere)  # only a worker's
        return outcome

    def embedded(self, groups: Iterator[tuple[Tag, list[str]]]) -> Iterator[tuple[Tag, np.ndarray]]:
        """Each group cut into tasks of at most TEXTS_PER_TASK texts, so that a group keeps
        several workers busy; a group is done when all its tasks are."""
        workers = self._start()
        running: dict[Any, tuple[int, int, Any]] = {}  # task -> (group, its part, worker)
        waiting: dict[int, tuple[Tag, list[np.ndarray | None]]] = {}  # group -> (tag, parts' vectors)
        drawn_all = False
        numbers = itertools.count()
        try:
            while True:
                while not drawn_all and len(running) < TASKS_PER_WORKER * len(workers):
                    try:
                        tag, texts = next(groups)
                    except StopIteration:
                        drawn_all = True
                        break
                    if not texts:  # the cache had them all
                        yield tag, self._empty
                        continue
                    parts = [texts[i : i + TEXTS_PER_TASK] for i in range(0, len(texts), TEXTS_PER_TASK)]
                    number = next(numbers)
                    waiting[number] = (tag, [None] * len(parts))
                    for index, part in enumerate(parts):
                        worker = _least_busy(workers, {task: w for task, (_, _, w) in running.items()})
                        running[worker.embed.remote(self._parcel, part)] = (number, index, worker)
                if not running:
                    return
                finished, _ = self._ray.wait(list(running), num_returns=1)
                for task in finished:
                    group, index, _ = running.pop(task)
                    tag, vectors = waiting[group]
                    vectors[index] = self._get(task)
                    done = [v for v in vectors if v is not None]
                    if len(done) == len(vectors):
                        del waiting[group]
                        yield tag, np.concatenate(done)
        finally:
            for task in running:
                with contextlib.suppress(Exception):
                    self._ray.cancel(task)

    def _get(self, tasks: Any, timeout: float | None = None) -> Any:
        """ray.get, its errors as one line: a task that failed even after Ray's retries."""
        try:
            return self._ray.get(tasks, timeout=timeout)
        except self._ray.exceptions.GetTimeoutError:
            raise OboyuError(f"oboyu's workers on the Ray cluster at {self.address} did not start within "
                             f"{timeout:.0f} s; is the cluster busy?") from None
        except self._ray.exceptions.RayError as exc:
            raise OboyuError(f"the Ray cluster at {self.address} failed: {_reason(exc)}") from None


def _batches(todo: Todo) -> Iterator[list[Job]]:
    batch: list[Job] = []
    size = 0
    for entry, previous in todo:
        if batch and (len(batch) >= FILES_PER_TASK or size + entry.size > BYTES_PER_TASK):
            yield batch
            batch, size = [], 0
        batch.append((entry, previous, None))
        size += entry.size
    if batch:
        yield batch


def _least_busy(workers: list[Any], running: dict[Any, Any]) -> Any:
    load = {id(w): 0 for w in workers}
    for worker in running.values():
        load[id(worker)] += 1
    return min(workers, key=lambda w: load[id(w)])


def _check_reachable(address: str) -> None:
    """A host:port that does not answer fails now, in one line, not after Ray's minute of retries."""
    if address == "auto":
        return
    try:
        parts = urlsplit(address if "://" in address else f"ray://{address}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise OboyuError(f"--cluster takes `local`, `auto` or a Ray address (host:port, ray://host:10001), not {address!r}")
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise OboyuError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}; "
                         "is it started (`ray start --head`)?") from None


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _reason(exc: BaseException) -> str:
    """A Ray error's own cause (the exception raised in the task), not Ray's wrapping of it."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, OboyuError):
        return str(cause)
    return _first_line(cause if isinstance(cause, BaseException) else exc)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
