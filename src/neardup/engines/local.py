"""The local engine: runs the pipeline's stages on one machine, on all its cores.

Stage 1 (:func:`neardup.pipeline.signatures`) runs batch by batch in a pool of worker threads:
its compiled kernels release the GIL, so threads use every core without copying texts and
signatures between processes (about 1.8× on 2 cores; processes gained nothing here because
pickling the texts cost as much as fingerprinting them). Results come back in input order, so the output does not depend on the number of workers. At most
``2 × workers`` batches are in flight, which bounds memory on inputs of any size. Stage 2
(:func:`neardup.pipeline.find_groups`) runs once over the collected arrays.

Example:
    >>> fps = fingerprint_texts(["a b c d", "a b c e"], method="simhash", workers=1)
    >>> fps.dtype
    dtype('uint64')
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from neardup.pipeline import Groups, Settings, Signatures, find_groups, signatures

BATCH_SIZE = 2_000


def default_workers() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_workers(workers: int | None) -> int:
    """Validate ``workers`` (None or 0 = all cores)."""
    if workers is None or workers == 0:
        return default_workers()
    if workers < 0:
        raise ValueError(f"workers must be ≥ 0 (0 = all cores); got {workers}")
    return int(workers)


def ordered_map(
    function: Callable, items: Iterable, workers: int, *args
) -> Iterator[tuple[object, object]]:
    """Yield ``(item, function(item, *args))`` in input order, computed by ``workers`` threads.

    With one worker everything runs in this process. At most ``2 × workers`` items are pending.
    """
    if workers <= 1:
        for item in items:
            yield item, function(item, *args)
        return
    with ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append((item, pool.submit(function, item, *args)))
            if len(pending) >= 2 * workers:
                head, future = pending.popleft()
                yield head, future.result()
        while pending:
            head, future = pending.popleft()
            yield head, future.result()


def _sign_texts(texts: list[str], settings: Settings, keep_sets: bool | None) -> Signatures:
    return signatures(texts, settings, keep_sets)


def _sign_batch(batch, settings: Settings, keep_sets: bool) -> Signatures:
    return signatures(batch.texts, settings, keep_sets)


def _warm_up(settings: Settings) -> None:
    # Compile (or load from cache) every kernel once, before the threads race to do it.
    signatures(["warm up text for the kernels"], settings)


def signatures_parallel(
    texts: list[str], settings: Settings, workers: int | None = None, keep_sets: bool | None = None
) -> Signatures:
    """Stage 1 over a list of texts, in batches of ``BATCH_SIZE`` spread over ``workers``
    threads (None = all cores); identical for any number of workers. ``keep_sets`` as in
    :func:`neardup.pipeline.signatures`."""
    workers = check_workers(workers)
    _warm_up(settings)
    chunks = [texts[i : i + BATCH_SIZE] for i in range(0, len(texts), BATCH_SIZE)]
    parts = [sig for _, sig in ordered_map(_sign_texts, chunks, workers, settings, keep_sets)]
    return Signatures.concat(parts, settings)


def fingerprint_texts(
    texts: list[str],
    method: str = "simhash",
    shingle: str = "word:3",
    num_perm: int = 128,
    hash_name: str = "xxh",
    weights: str = "set",
    seed: int = 1,
    workers: int | None = None,
    idf=None,
) -> np.ndarray:
    """SimHash fingerprints (uint64[n]) or MinHash signatures (uint32[n, num_perm]) of texts,
    computed by :func:`signatures_parallel`; ``idf`` is the table of ``weights="idf"``."""
    settings = Settings(
        method=method, shingle=shingle, num_perm=num_perm, hash_name=hash_name,
        weights=weights, seed=seed, verify=None, idf=idf,
    )
    return signatures_parallel(texts, settings, workers).signature


@dataclass
class Collection:
    """Everything read and computed for a run's documents, in input order."""

    ids: list[str]
    timestamps: np.ndarray
    raw_timestamps: list
    records: list | None
    signatures: Signatures
    texts: list[str] | None = None

    def __len__(self) -> int:
        return len(self.ids)


class LocalEngine:
    """Runs the stages on this machine with ``workers`` threads (None = all cores)."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = check_workers(workers)

    def collect(
        self,
        batches: Iterable,
        settings: Settings,
        on_batch: Callable[[object], None] | None = None,
        keep_sets: bool = False,
    ) -> Collection:
        """Stage 1 over a stream of document batches (see :mod:`neardup.io`).

        When verification needs shingle sets, the collection keeps the texts and
        :func:`neardup.pipeline.find_groups` builds the sets of the few documents with candidates;
        ``keep_sets=True`` computes every document's set instead (for repeated runs over the
        same signatures, as a sweep does).
        """
        _warm_up(settings)
        texts: list[str] | None = [] if settings.needs_sets and not keep_sets else None
        ids: list[str] = []
        timestamps: list[np.ndarray] = []
        raw: list = []
        records: list | None = None
        parts: list[Signatures] = []
        for batch, sig in ordered_map(_sign_batch, batches, self.workers, settings, keep_sets):
            ids.extend(batch.ids)
            if texts is not None:
                texts.extend(batch.texts)
            timestamps.append(np.asarray(batch.timestamps, dtype=np.int64))
            raw.extend(batch.raw_timestamps)
            if batch.records is not None:
                if records is None:
                    records = []
                records.extend(batch.records)
            parts.append(sig)
            if on_batch is not None:
                on_batch(batch)
        stamps = np.concatenate(timestamps) if timestamps else np.zeros(0, dtype=np.int64)
        return Collection(ids, stamps, raw, records, Signatures.concat(parts, settings), texts)

    def dedup(self, collection: Collection, settings: Settings) -> Groups:
        """Stage 2 over a collection."""
        return find_groups(collection.signatures, collection.timestamps, settings, collection.texts)
