"""The optional reranker: an ONNX cross-encoder (query and passage read together, one relevance
score out) that reorders the best few candidates of a search. Models come from the conversion
pipeline (`oboyu models pull/convert` of a `...ForSequenceClassification` model); with none
installed, search runs without it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

from oboyu.models.embedding import pad_token_id, prepare
from oboyu.models.manifest import MODEL_FILE, TOKENIZER_FILE, read_manifest
from oboyu.models.providers import CPU, cpu_session_options, disabled_optimizers

RERANK_TOKEN_BUDGET = 4096  # padded tokens a batch
RERANK_MAX_TOKENS = 512  # a pair is cut to this (the passage loses its end), whatever the model allows


class Reranker:
    def __init__(self, model_dir: Path, manifest: dict | None = None):
        self.model_dir = Path(model_dir)
        self.manifest = manifest if manifest is not None else read_manifest(self.model_dir)
        self.model_id = self.manifest["id"]
        self.max_tokens = min(int(self.manifest["max_tokens"]), RERANK_MAX_TOKENS)

    @cached_property
    def tokenizer(self):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILE))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_tokens, strategy="only_second")
        return tokenizer

    @cached_property
    def session(self):
        import onnxruntime as ort

        return ort.InferenceSession(str(self.model_dir / MODEL_FILE), cpu_session_options(), providers=[CPU],
                                    disabled_optimizers=disabled_optimizers(CPU))

    @cached_property
    def pad_id(self) -> int:
        return pad_token_id(self.tokenizer, self.manifest)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is more relevant; the model's raw logit). With
        dynamic INT8 (the pipeline's default) a pair's score moves a little with its batch-mates,
        activations being scaled per batch; scores are compared within one call only."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(prepare(query), prepare(p)) for p in passages])
        names = {i.name for i in self.session.get_inputs()}
        out = np.zeros(len(passages), dtype=np.float32)
        order = sorted(range(len(passages)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            # sorted by length: the batch grows while its padded size stays under the budget
            end = start + 1
            while end < len(order) and (end - start + 1) * len(encodings[order[end]].ids) <= RERANK_TOKEN_BUDGET:
                end += 1
            batch = order[start:end]
            width = len(encodings[batch[-1]].ids)
            ids = np.full((len(batch), width), self.pad_id, dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for row, i in enumerate(batch):
                e = encodings[i]
                ids[row, : len(e.ids)], mask[row, : len(e.ids)], types[row, : len(e.ids)] = e.ids, 1, e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            (scores,) = self.session.run(None, {k: v for k, v in feeds.items() if k in names})
            out[batch] = scores.reshape(-1)
            start = end
        return out
