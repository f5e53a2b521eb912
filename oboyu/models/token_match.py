"""A query's token match to a passage (`token_states`), run with an embedder's query session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from oboyu.models.embedding import Embedder, prepare
from oboyu.models.recent import Recent
from oboyu.models.token_states import TOKEN_OUTPUT, late_interaction

if TYPE_CHECKING:
    import onnxruntime as ort

# the tokens' states of recent passages: typing a question, its first result stays the same over
# several keys, and the passage's run is most of a token match's time
RECENT_PASSAGES = 16
_recent: Recent[tuple[str, tuple[int, ...]], np.ndarray] = Recent(RECENT_PASSAGES)


def token_match(embedder: Embedder, query: str, passage: str) -> float | None:
    """How well the query's tokens find their like in the passage (title and heading as embedded),
    each weighted by its piece's rarity in the tokenizer's own model (a unigram model's
    log-probability; equal weights for another tokenizer); None where the query's graph gives no
    tokens' states (a GPU's float16 graph, a folder the derived graph could not be written to)."""
    query_states = embedder.query_token_states(query)
    if query_states is None:
        return None
    info, tokenizer = embedder.info, embedder.tokenizer
    query_ids, passage_ids = embedder.token_ids([info.query_prefix + prepare(query), embedder.passage_text(passage)])
    tail = 1 if embedder.closing_id is not None else 0
    lead = len(tokenizer.encode("").ids) - tail  # `<s>`, `[CLS]`

    def prefix_length(prefix: str) -> int:  # `query: `, `passage: `
        return len(tokenizer.encode(prefix.rstrip(), add_special_tokens=False).ids) if prefix.strip() else 0

    space = tokenizer.token_to_id("\u2581")  # a lone word boundary (before CJK text) says nothing
    keep = [i for i in range(lead + prefix_length(info.query_prefix), len(query_ids) - tail) if query_ids[i] != space]
    scores = getattr(tokenizer, "scores", None)
    weights = [-float(scores[query_ids[i]]) if scores is not None else 1.0 for i in keep]
    passage_tokens = _passage_states(embedder, passage_ids)[lead + prefix_length(info.passage_prefix): len(passage_ids) - tail]
    return late_interaction(query_states[keep], passage_tokens, weights)


def _passage_states(embedder: Embedder, ids: list[int]) -> np.ndarray:
    key = (embedder.info.model_id, tuple(ids))
    states = _recent.get(key)
    if states is None:
        states = _states(embedder.onnxruntime_session, ids)
        _recent.put(key, states)
    return states


def _states(session: ort.InferenceSession, ids: list[int]) -> np.ndarray:
    feed = {"input_ids": np.array([ids], dtype=np.int64), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
    return session.run([TOKEN_OUTPUT], feed)[0][0]
