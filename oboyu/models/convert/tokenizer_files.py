"""The runtime tokenizer of a converted model: its tokenizer.json, or for BERT-Japanese models
(MeCab words, then WordPiece; no fast tokenizer exists) one built from vocab.txt. Checked
against the transformers tokenizer on probe texts: the same ids, or the model is not installed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from oboyu.errors import OboyuError
from oboyu.models.convert.source import SourceModel
from oboyu.models.manifest import TOKENIZER_FILE

MAX_MISMATCHED = 0.01  # share of probe texts whose ids may differ from transformers' tokenizer


def write_runtime_tokenizer(source: SourceModel, out: Path) -> Path:
    target = out / TOKENIZER_FILE
    if source.word_segmenter is None:
        shutil.copyfile(source.folder / TOKENIZER_FILE, target)
        return target
    from tokenizers import AddedToken, Tokenizer, models, normalizers, processors

    config = json.loads((source.folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    lines = (source.folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab = {token: i for i, token in enumerate(lines)}
    cls, sep, unk = (special_token(config, name, default) or default for name, default in
                     (("cls_token", "[CLS]"), ("sep_token", "[SEP]"), ("unk_token", "[UNK]")))
    for token in (cls, sep, unk):
        if token not in vocab:
            raise OboyuError(f"{source.model_id}: {token} is not in vocab.txt")
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=unk, max_input_chars_per_word=100))
    if source.lower_case:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B {sep}", special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])]
    )
    specials = [special_token(config, name, None) for name in ("pad_token", "mask_token")] + [cls, sep, unk]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials if t in vocab])
    tokenizer.save(str(target))
    return target


def special_token(config: dict, name: str, default: str | None) -> str | None:
    """A special token's text from tokenizer_config.json (a string, or a dict with `content`)."""
    value = config.get(name, default)
    return value.get("content") if isinstance(value, dict) else value


def check_tokenizer(source: SourceModel, ours, texts: list[str]) -> dict:
    """Compare our token ids with the transformers tokenizer's on `texts` (prefixes included)."""
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(source.folder))
    expected = reference(texts, add_special_tokens=True)["input_ids"]
    got = [e.ids for e in ours.encode_batch(texts)]
    mismatched = [t for t, a, b in zip(texts, expected, got) if list(a) != list(b)]
    report = {"texts": len(texts), "mismatched": len(mismatched)}
    if len(mismatched) > MAX_MISMATCHED * len(texts):
        raise OboyuError(f"{source.model_id}: our tokenizer differs from transformers' on {len(mismatched)} of "
                         f"{len(texts)} probe texts (first: {mismatched[0][:60]!r}); not installed")
    return report
