"""What a Spark run returns: its GROUPS and PAIRS as DataFrames, and its counters."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from neardup.engines.spark.frames import unpersist
from neardup.engines.spark.session import DataFrame

if TYPE_CHECKING:
    import pyarrow as pa

    from neardup.io import ReadStats
    from neardup.pipeline import Groups
    from neardup.settings import Settings

__all__ = ["SparkResult"]


class SparkResult:
    """What a Spark run returns: DataFrames defined over stage outputs the run keeps stored
    (in the executors' storage); :meth:`release` frees them once the results are written.

    Attributes:
        groups: one row per document: ``pos, id, duplicate_id, original_id, is_original,
            group_size`` (sort by ``pos`` for input order); None from a run told that its
            GROUPS are not read (``SparkEngine.pairs`` with no GROUPS output and every pair),
            which only counts them.
        pairs: ``pos_a, pos_b, id_a, id_b``, ``distance`` (SimHash, int) or ``similarity``
            (MinHash, float) and ``passed`` (whether the pair itself meets the run's rule, as
            the local engine's ``Groups.pair_passed``): original → member for
            ``pairs="original"``, every near-duplicate pair (``pos_a < pos_b``) for
            ``pairs="all"``.
        stats: counts and seconds per stage, the keys of the local engine's ``Groups.stats``.
        pairs_order: the columns PAIRS is sorted by in the local engine's output.
        collected: for a run whose groups and PAIRS were made on the driver
            (:mod:`~neardup.engines.spark.driver_groups`), the documents' IDs and their
            :class:`~neardup.pipeline.Groups` in input order (``groups`` and ``pairs`` are then
            None), else None.

    Example (needs a Spark session, so not run as a doctest)::

        result = dedup_dataframe(df)
        result.groups.write.parquet("out/groups")
        result.release()
    """

    def __init__(
        self,
        groups: DataFrame | None,
        pairs: DataFrame | None,
        stats: dict | None = None,
        pairs_order: Sequence[str] = ("pos_b",),
        release: Callable[[], None] | None = None,
        collected: tuple[pa.ChunkedArray, Groups] | None = None,
    ):
        self.groups, self.pairs = groups, pairs
        self.collected = collected
        self.stats = stats if stats is not None else {}
        self.pairs_order = tuple(pairs_order)
        self._releases = [release] if release is not None else []

    @classmethod
    def of_read(
        cls,
        run: Callable[[DataFrame, Settings], SparkResult],
        read: tuple[DataFrame, ReadStats],
        settings: Settings,
    ) -> SparkResult:
        """``run`` (an engine's ``dedup_documents`` or ``dedup_fingerprints``) on the rows a
        DataFrame entry point read; the result holds the rows (freed by its ``release``) and
        the read counters (``stats["read"]``)."""
        rows, stats = read
        result = run(rows, settings)
        result.stats["read"] = stats
        result.hold([rows])
        return result

    def hold(self, frames: Iterable[DataFrame]) -> None:
        """Also release ``frames`` (e.g. the input tables) in :meth:`release`."""
        frames = list(frames)
        self._releases.append(lambda: [unpersist(df) for df in frames])

    def release(self) -> None:
        """Free the storage the results read; use ``groups`` and ``pairs`` before, not after."""
        for release in self._releases:
            release()
        self._releases = []
