"""Step 1 of the pipeline: the model to convert (a Hugging Face model id, or a local folder in the
same layout) and what its files say about using it: architecture, pooling, prefixes, max length.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from oboyu.errors import OboyuError, first_line
from oboyu.models.tokenization import MECAB

ARCHITECTURES = {"bert": "BERT", "xlm-roberta": "XLM-RoBERTa", "roberta": "RoBERTa", "modernbert": "ModernBERT"}
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "1_Pooling/*", "2_Normalize/*"]


@dataclass
class SourceModel:
    folder: Path
    model_id: str  # the hub id, or the folder's name
    revision: str | None  # the hub commit; None for a local folder
    architecture: str  # config.json's model_type
    hidden: int
    layers: int
    heads: int
    vocab_size: int
    pooling: str  # mean | cls | lasttoken (vectors are always L2-normalised: search ranks by cosine)
    max_tokens: int
    query_prefix: str
    passage_prefix: str
    word_segmenter: str | None  # tokenization.MECAB for BertJapaneseTokenizer models
    lower_case: bool
    task: str = "embed"  # embed (an encoder, pooled) | rerank (a cross-encoder scoring query-passage pairs)

    def describe(self) -> str:
        return (f"{ARCHITECTURES[self.architecture]}, {self.layers} layers, {self.heads} heads, "
                f"hidden {self.hidden}")


def fetch(spec: str, revision: str | None = None, defaults: dict | None = None) -> SourceModel:
    """A local folder, or a hub model downloaded into the Hugging Face cache (progress bars on
    stderr; `HF_HUB_OFFLINE=1` uses the cache only). `defaults` (a catalogue entry) fills in what
    the model's own files leave out, such as e5's prefixes."""
    folder = Path(spec).expanduser()
    if folder.is_dir():
        return read_source(folder.resolve(), folder.resolve().name, None, defaults)
    if spec.count("/") != 1 or spec.startswith((".", "/", "~")):
        raise OboyuError(f"no such folder, and not a Hugging Face model id (owner/name): {spec}")
    folder, commit = _download(spec, revision)
    return read_source(folder, spec, commit, defaults)


def _download(model_id: str, revision: str | None) -> tuple[Path, str | None]:
    try:
        import huggingface_hub
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError
    except ImportError as exc:
        raise OboyuError("fetching from the Hugging Face hub needs huggingface_hub: pip install 'oboyu[convert]'") from exc
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        path = huggingface_hub.snapshot_download(model_id, revision=revision, allow_patterns=HUB_FILES,
                                                 local_files_only=offline)
    except LocalEntryNotFoundError as exc:
        if offline:
            raise OboyuError(f"{model_id} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set") from exc
        raise OboyuError(f"cannot reach the Hugging Face hub to fetch {model_id} (no network?); download it "
                         "elsewhere and run `oboyu models convert FOLDER`") from exc
    except RepositoryNotFoundError as exc:
        raise OboyuError(f"no model {model_id} on the Hugging Face hub (or it needs a login)") from exc
    except (HfHubHTTPError, OSError, ValueError) as exc:
        reason = first_line(exc)
        raise OboyuError(f"cannot fetch {model_id} from the Hugging Face hub: {reason}") from exc
    folder = Path(path)
    # snapshots live in folders named by their commit
    return folder, folder.name if folder.parent.name == "snapshots" else revision


def read_source(folder: Path, model_id: str, revision: str | None, defaults: dict | None = None) -> SourceModel:
    defaults = defaults or {}
    config = _read_json(folder / "config.json")
    if config is None:
        raise OboyuError(f"{folder} has no config.json: not a transformers model folder")
    architecture = config.get("model_type", "")
    if architecture not in ARCHITECTURES:
        raise OboyuError(f"{model_id}: architecture {architecture or '(none)'} is not supported "
                         f"(supported: {', '.join(ARCHITECTURES)})")
    tokenizer_config = _read_json(folder / "tokenizer_config.json") or {}
    word_segmenter = None
    if tokenizer_config.get("tokenizer_class") == "BertJapaneseTokenizer":
        if tokenizer_config.get("word_tokenizer_type", "basic") != "mecab" or \
                tokenizer_config.get("subword_tokenizer_type", "wordpiece") != "wordpiece":
            raise OboyuError(f"{model_id}: only MeCab + WordPiece BERT-Japanese tokenizers are supported")
        dic = (tokenizer_config.get("mecab_kwargs") or {}).get("mecab_dic", "unidic_lite")
        if dic != "unidic_lite":
            raise OboyuError(f"{model_id}: its tokenizer uses the MeCab dictionary {dic}; only unidic_lite is supported")
        word_segmenter = MECAB
    elif not (folder / "tokenizer.json").is_file():
        raise OboyuError(f"{model_id}: no tokenizer.json (a fast tokenizer) and not a BERT-Japanese tokenizer")
    task = _task(config, model_id)
    if task == "rerank" and word_segmenter is not None:
        raise OboyuError(f"{model_id}: cross-encoders with a MeCab tokenizer are not supported yet")
    pooling = _pooling(folder, defaults)
    prompts = (_read_json(folder / "config_sentence_transformers.json") or {}).get("prompts") or {}
    prefixes = defaults.get("prefixes") or {}
    st_config = _read_json(folder / "sentence_bert_config.json") or {}
    positions = int(config.get("max_position_embeddings", 512))
    if architecture in ("xlm-roberta", "roberta"):
        positions -= int(config.get("pad_token_id", 1)) + 1  # positions start after the padding index
    max_tokens = min(int(st_config.get("max_seq_length") or defaults.get("max_tokens") or positions), positions)
    return SourceModel(
        folder=folder,
        model_id=model_id,
        revision=revision,
        architecture=architecture,
        hidden=int(config["hidden_size"]),
        layers=int(config["num_hidden_layers"]),
        heads=int(config["num_attention_heads"]),
        vocab_size=int(config["vocab_size"]),
        pooling=pooling,
        max_tokens=max_tokens,
        query_prefix=prompts.get("query", prefixes.get("query", "")),
        passage_prefix=prompts.get("document", prompts.get("passage", prefixes.get("passage", ""))),
        word_segmenter=word_segmenter,
        lower_case=bool(tokenizer_config.get("do_lower_case", False)) and word_segmenter is not None,
        task=task,
    )


def _task(config: dict, model_id: str) -> str:
    """A `...ForSequenceClassification` model with one label is a reranker (a cross-encoder)."""
    if not any(a.endswith("ForSequenceClassification") for a in config.get("architectures") or []):
        return "embed"
    labels = len(config.get("id2label") or {"0": ""})
    if labels != 1:
        raise OboyuError(f"{model_id}: a classifier with {labels} labels; a reranker gives one score (num_labels 1)")
    return "rerank"


def _pooling(folder: Path, defaults: dict) -> str:
    """sentence-transformers' pooling mode; else the catalogue's; else mean."""
    modules = _read_json(folder / "modules.json") or []
    for module in modules:
        if module.get("type", "").endswith("Pooling"):
            pooling_config = _read_json(folder / module.get("path", "") / "config.json") or {}
            for key, mode in (("pooling_mode_cls_token", "cls"), ("pooling_mode_mean_tokens", "mean"),
                              ("pooling_mode_lasttoken", "lasttoken")):
                if pooling_config.get(key):
                    return mode
            raise OboyuError(f"{folder}: pooling {pooling_config} is not supported (cls, mean or lasttoken)")
    return defaults.get("pooling", "mean")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OboyuError(f"cannot read {path}: {exc}") from exc
