"""Synthetic corpora of short documents (titles, tweets, short descriptions), written compressed
and fast enough for 100M documents: ``neardup dedup`` at scale without filling the disk.

Words are English, drawn with :mod:`corpus`'s vocabulary and Zipf-like law (real words from the
Debian package descriptions, ranked by frequency). Each document has 10-60 words (uniform);
``--dup-rate`` (default 25 %) of them are derived from an earlier document of the same block of
``--block`` documents: half exact copies, half light edits (one word replaced, deleted or
inserted, or two words replaced). Copies and edits may themselves be copied or edited, so chains
form. Each line is ``{"id": "s0000000000", "text": "..."}``; ids count from ``--start``.

Documents are built and rendered to JSON Lines by one compiled kernel per block (no Python per
document), then compressed: zstd (``.zst``, level 1) or gzip (``.gz``, level 1, one
core), from the output's name. Same ``--docs``, ``--seed``, ``--start``, ``--block`` and vocabulary
give the same text; shards made with ``--start`` concatenate (``cat``) into one corpus.

    python benchmarks/short_corpus.py --docs 100000000 -o benchmarks/.data/short_100m.jsonl.zst
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import zstandard
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import DEFAULT_DATA, SOURCES, build_vocab, zipf_cdf  # noqa: E402

MIN_WORDS, MAX_WORDS = 10, 60
#: Edit kinds of a light edit, drawn uniformly.
REPLACE, DELETE, INSERT, REPLACE_TWO = range(4)
_PREFIX = b'{"id": "s'
_MIDDLE = b'", "text": "'
_SUFFIX = b'"}\n'
_ID_DIGITS = 10
_TABLE = 1 << 21


@njit(cache=True, nogil=True)
def _render(start, source, kind, lengths, draws, edits, vocab, vocab_ends, words, out):
    """Build the block's documents (``words``: their word ids, row i for document i) and write
    their JSON lines into ``out``; returns the bytes written. ``source[i] < i`` is the document
    that document i copies (``kind`` 1) or edits (``kind`` 2); ``draws`` are Zipf word ids
    consumed in order, ``edits[i]`` (edit kind, position, word) the edit's random values."""
    n = source.shape[0]
    width = words.shape[1]
    count = np.zeros(n, np.int64)
    at_draw = 0
    at = 0
    for i in range(n):
        if kind[i] == 0:
            m = lengths[i]
            for j in range(m):
                words[i, j] = draws[at_draw]
                at_draw += 1
        else:
            s = source[i]
            m = count[s]
            for j in range(m):
                words[i, j] = words[s, j]
            if kind[i] == 2:
                op, where, word = edits[i, 0], edits[i, 1] % m, edits[i, 2]
                if op == 0 or (op == 1 and m <= 10) or (op == 2 and m >= width):
                    words[i, where] = word
                elif op == 1:
                    for j in range(where, m - 1):
                        words[i, j] = words[i, j + 1]
                    m -= 1
                elif op == 2:
                    for j in range(m, where, -1):
                        words[i, j] = words[i, j - 1]
                    words[i, where] = word
                    m += 1
                else:
                    words[i, where] = word
                    words[i, (where + m // 2) % m] = edits[i, 3]
        count[i] = m
        for b in _PREFIX_ARRAY:
            out[at] = b
            at += 1
        number = start + i
        for d in range(_ID_DIGITS - 1, -1, -1):
            out[at + d] = 48 + number % 10
            number //= 10
        at += _ID_DIGITS
        for b in _MIDDLE_ARRAY:
            out[at] = b
            at += 1
        for j in range(m):
            if j:
                out[at] = 32
                at += 1
            w = words[i, j]
            first = vocab_ends[w - 1] if w else 0
            for k in range(first, vocab_ends[w]):
                out[at] = vocab[k]
                at += 1
        for b in _SUFFIX_ARRAY:
            out[at] = b
            at += 1
    return at


_PREFIX_ARRAY = np.frombuffer(_PREFIX, np.uint8)
_MIDDLE_ARRAY = np.frombuffer(_MIDDLE, np.uint8)
_SUFFIX_ARRAY = np.frombuffer(_SUFFIX, np.uint8)


class ShortCorpus:
    """The generator: :meth:`block` gives the JSON lines of ``count`` documents from ``start``.

    Args:
        vocab: the words, most frequent first (JSON-safe: letters and digits).
        seed: the random seed (each block draws from ``(seed, block start)``).
        dup_rate: share of documents that copy or edit an earlier one of their block.
    """

    def __init__(self, vocab: np.ndarray, seed: int, dup_rate: float = 0.25):
        if not 0 <= dup_rate < 1:
            raise ValueError(f"dup_rate must be in [0, 1), got {dup_rate}")
        encoded = [str(w).encode("utf-8") for w in vocab]
        self.vocab = np.frombuffer(b"".join(encoded), np.uint8)
        self.vocab_ends = np.cumsum([len(w) for w in encoded]).astype(np.int64)
        # The inverse of the Zipf-like CDF tabulated at 2^21 points: a draw is one look-up
        # (a word of probability p gets p · 2^21 slots, within one).
        self.inverse_cdf = np.searchsorted(
            zipf_cdf(len(encoded)), (np.arange(_TABLE) + 0.5) / _TABLE
        ).astype(np.int32)
        self.longest = max(len(w) for w in encoded)
        self.seed = seed
        self.dup_rate = dup_rate
        # Reused from block to block: fresh pages cost more to fault in than to fill.
        self._words = np.empty((0, MAX_WORDS), np.int64)
        self._out: dict[int, np.ndarray] = {}

    def words(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` word ids drawn from the Zipf-like law. O(count)."""
        return self.inverse_cdf[rng.integers(0, _TABLE, count, dtype=np.int32)]

    def block(self, start: int, count: int, slot: int = 0) -> memoryview:
        """The JSON lines of documents ``start .. start + count - 1``, in buffer ``slot`` (valid
        until the next block in that slot; blocks are built one at a time). O(count · words)."""
        rng = np.random.default_rng([self.seed, start])
        derived = rng.random(count) < self.dup_rate
        derived[0] = False
        kind = np.where(derived, np.where(rng.random(count) < 0.5, 1, 2), 0).astype(np.int8)
        source = (rng.random(count) * np.arange(count)).astype(np.int64)
        lengths = rng.integers(MIN_WORDS, MAX_WORDS + 1, count)
        lengths[derived] = 0
        draws = self.words(rng, int(lengths.sum()))
        edits = np.stack(
            [
                rng.integers(0, 4, count),
                rng.integers(0, 1 << 30, count),
                self.words(rng, count),
                self.words(rng, count),
            ],
            axis=1,
        )
        if self._words.shape[0] < count:
            self._words = np.empty((count, MAX_WORDS), np.int64)
        line = len(_PREFIX) + _ID_DIGITS + len(_MIDDLE) + len(_SUFFIX)
        need = count * (line + MAX_WORDS * (self.longest + 1))
        if self._out.get(slot, np.empty(0, np.uint8)).shape[0] < need:
            self._out[slot] = np.empty(need, np.uint8)
        out = self._out[slot]
        size = _render(
            start,
            source,
            kind,
            lengths,
            draws,
            edits,
            self.vocab,
            self.vocab_ends,
            self._words,
            out,
        )
        return memoryview(out[:size])


def open_output(path: Path):
    """A binary writer compressing to ``path``: zstd for ``.zst``, gzip for ``.gz``."""
    if path.suffix == ".zst":
        # One thread: the other core builds the next block meanwhile.
        compressor = zstandard.ZstdCompressor(level=1)
        return compressor.stream_writer(open(path, "wb"), closefd=True)
    if path.suffix == ".gz":
        return gzip.open(path, "wb", compresslevel=1)
    raise ValueError(f"the output must end with .zst or .gz, got {path.name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, required=True, help="number of documents")
    ap.add_argument("-o", "--output", type=Path, required=True, help="FILE.jsonl.zst or .gz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first document number")
    ap.add_argument("--dup-rate", type=float, default=0.25, help="copies and light edits")
    ap.add_argument("--block", type=int, default=1 << 16, help="documents per block")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    args = ap.parse_args(argv)
    if args.docs < 1 or args.block < 1:
        ap.error(f"--docs and --block must be >= 1, got {args.docs} and {args.block}")
    if args.start + args.docs > 10**_ID_DIGITS:
        ap.error(f"ids have {_ID_DIGITS} digits: --start + --docs must be <= 10^{_ID_DIGITS}")
    generator = ShortCorpus(
        build_vocab(args.data_dir / SOURCES["en"], "en"), args.seed, args.dup_rate
    )
    started = time.perf_counter()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    end = args.start + args.docs
    # The next block is built (compiled code, without the GIL) while this one is compressed.
    with open_output(args.output) as out, ThreadPoolExecutor(1) as builder:
        pending = None
        for number, first in enumerate(range(args.start, end, args.block)):
            count = min(args.block, end - first)
            # Two buffers: this block's is written while the next is built in the other.
            block = builder.submit(generator.block, first, count, number % 2)
            if pending is not None:
                out.write(pending.result())
            pending = block
        out.write(pending.result())
    seconds = time.perf_counter() - started
    print(
        f"{args.docs:,} documents in {seconds:.1f} s ({args.docs / seconds:,.0f} docs/s), "
        f"{args.output.stat().st_size / 1e6:,.1f} MB: {args.output}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
