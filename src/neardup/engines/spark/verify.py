"""Verification on Spark (stage 4): pairs joined with both documents' data and decided by the
run's relation, :class:`neardup.pipeline.Relation`, inside tasks."""

from __future__ import annotations

from functools import partial

from neardup.engines.spark.frames import BROADCAST_POSITIONS, Frames
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import bound_task, relate_task, sets_task, sketch_task
from neardup.settings import Settings

__all__ = [
    "data_columns",
    "possible",
    "relate",
    "related",
    "unit_sketches",
    "with_shingle_sets",
]


def data_columns(settings: Settings) -> list[str]:
    """The columns of a document's data the relation reads: ``sig``, and ``sset`` (the shingle
    set or LCS units) when verification compares sets. A verified MinHash run decides and
    values every pair by its sets alone, so its data is ``sset`` only: signatures (512 bytes a
    document at 128 permutations) never cross a join. O(1).

    Example:
        >>> data_columns(Settings(method="simhash", hamming_k=3))
        ['sig']
        >>> data_columns(Settings())
        ['sset']
    """
    if settings.method == "minhash" and settings.verify is not None:
        return ["sset"]
    return ["sig", "sset"] if settings.needs_sets else ["sig"]


def with_shingle_sets(
    frames: Frames,
    texts: DataFrame,
    reps: DataFrame,
    cand: DataFrame,
    content: DataFrame,
    settings: Settings,
) -> DataFrame:
    """The data the relation reads (``pos`` and :func:`data_columns`) of the documents that
    can ever be compared, stored: the ends of candidate pairs ``cand`` and the heads of
    exact-duplicate groups ``content``, with their shingle sets built as the local engine
    builds them, where their texts were read (``texts``: ``pos, text``) when the positions
    fit a broadcast. Every pair a later stage relates (a candidate, an original and a member
    of its group) has both ends here. With signatures in the data, every representative
    (``reps``) is there, the others with an empty set (never read): one shuffle of the sets
    and signatures. Cost: shingling the compared texts.

    Example (needs a Spark session, so not run as a doctest)::

        data = with_shingle_sets(frames, docs.select("pos", "text"), reps, cand, content, s)
    """
    needed = (
        cand.select(F.col("a").alias("pos"))
        .unionByName(cand.select(F.col("b").alias("pos")))
        .unionByName(content.select(F.col("rep").alias("pos")))
        .distinct()
    )
    # The texts stay where they were read when the positions fit a broadcast: only the
    # units built from them travel on.
    needed = frames.keep(needed)
    if needed.count() <= BROADCAST_POSITIONS:
        needed = F.broadcast(needed)
    texts = texts.join(needed, ["pos"], "left_semi")
    sets = texts.mapInArrow(partial(sets_task, settings=settings), "pos long, sset binary")
    if "sig" not in data_columns(settings):
        return frames.keep(sets)
    empty = F.lit(b"").cast("binary")
    return frames.keep(
        reps.select("pos", "sig")
        .join(sets, ["pos"], "left")
        .select("pos", "sig", F.coalesce("sset", empty).alias("sset"))
    )


def unit_sketches(frames: Frames, data: DataFrame) -> DataFrame:
    """``pos, size, sketch``: the unit count and count sketch of every document of ``data``
    (``pos, sset``: LCS units), stored (136 bytes a document), for :func:`possible`. One pass
    over the units, no shuffle.

    Example (needs a Spark session, so not run as a doctest)::

        sketches = unit_sketches(frames, data)
    """
    return frames.keep(
        data.select("pos", "sset").mapInArrow(sketch_task, "pos long, size long, sketch binary")
    )


def possible(frames: Frames, sketches: DataFrame, pairs: DataFrame, threshold: float) -> DataFrame:
    """The pairs ``(a, b)`` whose LCS resemblance may reach ``threshold`` by both documents'
    unit counts and count sketches alone (:func:`~neardup.engines.spark.tasks.bound_task`),
    as the local engine bounds its candidates before it reads units: only 136 bytes a
    document cross the joins, and the units then join the few pairs left. ``sketches``:
    :func:`unit_sketches`. Cost: two joins of small rows.

    Example (needs a Spark session, so not run as a doctest)::

        survivors = possible(frames, unit_sketches(frames, data), cand, settings.verify)
    """
    left = sketches.select(
        F.col("pos").alias("a"), F.col("size").alias("size_a"), F.col("sketch").alias("sketch_a")
    )
    right = sketches.select(
        F.col("pos").alias("b"), F.col("size").alias("size_b"), F.col("sketch").alias("sketch_b")
    )
    pairs = pairs.select("a", "b")
    joined = frames.lookup(frames.lookup(pairs, left, ["a"]), right, ["b"], counted=pairs)
    return joined.mapInArrow(partial(bound_task, threshold=threshold), "a long, b long")


def relate(
    frames: Frames,
    data: DataFrame,
    pairs: DataFrame,
    keep: list[str],
    settings: Settings,
    ends_at_most: int | None = None,
) -> DataFrame:
    """Pairs ``(a, b, …)`` with ``ok`` and ``value`` added (see :func:`related`), by joining
    both documents' ``data`` (``pos`` and :func:`data_columns`); ``keep`` names the columns of
    ``pairs`` kept. When the pairs have at most ``ends_at_most`` distinct ends (a bound the
    caller knows, e.g. twice their number) and that fits a broadcast, ``data`` is first cut
    to those ends where it is stored, so only the units of documents in a pair cross the
    joins. Cost: two skew-safe joins of the pairs and one relation per pair.

    Example (needs a Spark session, so not run as a doctest)::

        checked = relate(frames, data, cand, ["a", "b"], settings, 2 * n_cand)
    """
    cols = data_columns(settings)
    if ends_at_most is not None and ends_at_most <= BROADCAST_POSITIONS:
        ends = (
            pairs.select(F.col("a").alias("pos"))
            .unionByName(pairs.select(F.col("b").alias("pos")))
            .distinct()
        )
        data = data.join(F.broadcast(ends), ["pos"], "left_semi")
    left = data.select(F.col("pos").alias("a"), *[F.col(c).alias(c + "_a") for c in cols])
    right = data.select(F.col("pos").alias("b"), *[F.col(c).alias(c + "_b") for c in cols])
    joined = frames.lookup(frames.lookup(pairs, left, ["a"]), right, ["b"], counted=pairs)
    joined = joined.withColumnsRenamed({"sset_a": "set_a", "sset_b": "set_b"})
    return related(joined, keep, settings)


def related(joined: DataFrame, keep: list[str], settings: Settings) -> DataFrame:
    """The columns ``keep`` of rows holding both sides' data (``sig_a, sig_b[, set_a, set_b]``)
    plus ``ok`` (the near-duplicate decision) and ``value`` (the reported similarity), by
    :func:`~neardup.engines.spark.tasks.relate_task`. One pass, no shuffle.

    Example (needs a Spark session, so not run as a doctest)::

        checked = related(joined, ["a", "b"], settings).where("ok")
    """
    kinds = dict(joined.dtypes)
    value_type = "int" if settings.method == "simhash" else "double"
    schema = ", ".join([f"{c} {kinds[c]}" for c in keep] + ["ok boolean", f"value {value_type}"])
    return joined.mapInArrow(partial(relate_task, settings=settings, keep=keep), schema)
