"""Grouping on Spark (stage 5): connected components and the ``center`` rule over DataFrames
of representatives, with the results of :mod:`neardup.groups`."""

from __future__ import annotations

from functools import partial

from neardup.engines.spark.frames import Frames
from neardup.engines.spark.session import DataFrame, F
from neardup.engines.spark.tasks import center_task, components_task
from neardup.engines.spark.verify import compared_sets, data_columns, related
from neardup.settings import Settings

__all__ = [
    "DEFAULT_COMPONENTS_LOCAL_MAX",
    "center",
    "components",
    "document_groups",
    "edge_labels",
    "group_counts",
]

DEFAULT_COMPONENTS_LOCAL_MAX = 16_000_000
"""Most verified edges whose connected components one task finds by union-find (about 64
bytes an edge at the peak: 1 GB); more go through the distributed large-star / small-star
rounds."""

_MAX_CC_ROUNDS = 200
_MAX_CENTER_ROUNDS = 1_000_000


def components(
    frames: Frames,
    edges: DataFrame,
    nodes: DataFrame,
    n_edges: int,
    local_max: int = DEFAULT_COMPONENTS_LOCAL_MAX,
) -> DataFrame:
    """(pos, ts, label) for every node: label = smallest pos of its connected component.

    The labels of the edges' ends (:func:`edge_labels`) joined to the nodes: in a run past the
    skew threshold (a smaller one keeps a plain join, with no job for a broadcast), they are
    broadcast to the nodes while twice the edges fit
    :data:`~neardup.engines.spark.frames.BROADCAST_ROWS`: the nodes are not shuffled. A node
    on no edge is its own label.

    Example (needs a Spark session, so not run as a doctest)::

        labels = components(frames, pairs.select("a", "b"), nodes.select("pos", "ts"), n)
    """
    labels = edge_labels(frames, edges, n_edges, local_max)
    if labels is None:
        nodes = nodes.withColumn("label", F.lit(None).cast("long"))
    else:  # a row an end at most
        nodes = nodes.join(frames.broadcast_if_few(labels, 2 * n_edges), ["pos"], "left")
    return nodes.select("pos", "ts", F.coalesce("label", "pos").alias("label"))


def edge_labels(
    frames: Frames, edges: DataFrame, n_edges: int, local_max: int = DEFAULT_COMPONENTS_LOCAL_MAX
) -> DataFrame | None:
    """(pos, label) for every end of ``edges`` (``a, b``, ``n_edges`` rows), label = smallest
    pos of its connected component; None when there are no edges. Sets the run's count
    ``component_rounds``.

    Up to ``local_max`` edges, one task finds the components by the local engine's union-find
    (:func:`~neardup.engines.spark.tasks.components_task`): one shuffle of 16 bytes an edge
    into a single partition, and no round. Beyond, the distributed rounds of
    :func:`_star_labels`. Both give the smallest position of each component, whatever the
    partitioning.

    Example (needs a Spark session, so not run as a doctest)::

        labels = edge_labels(frames, pairs.select("a", "b"), n)
    """
    labels, rounds = None, 0
    if n_edges and n_edges <= local_max:
        # Exactly one partition, which adaptive execution does not change: every edge meets
        # the one union-find.
        labels = frames.keep(
            edges.select("a", "b")
            .repartition(1)
            .mapInArrow(components_task, "pos long, label long")
        )
    elif n_edges:
        labels, rounds = _star_labels(frames, edges)
        # The rounds leave each component's smallest node, its label, without a row.
        roots = labels.select(F.col("label").alias("pos"), "label").distinct()
        labels = labels.unionByName(roots)
    frames.stats["component_rounds"] = rounds
    return labels


def group_counts(
    frames: Frames,
    docrep: DataFrame,
    edges: DataFrame,
    n_edges: int,
    local_max: int = DEFAULT_COMPONENTS_LOCAL_MAX,
) -> None:
    """Set the run's counts ``groups``, ``largest_group`` and ``duplicates_removed``, as
    :func:`document_groups` sets them for the connected components of ``edges`` (``a, b``
    among the representatives, ``n_edges`` rows) and the exact duplicates (``docrep``:
    ``pos, rep``), without any table of every document: for a run that writes no GROUPS.

    A group is a component of representatives with their copies; its size is the sum of
    1 + copies over its representatives, and all but its original are removed. A
    representative on no edge and with no copy is a group of one, which removes nothing.
    Cost: the components of the edges (:func:`edge_labels`), a filter of ``docrep`` and
    aggregations over the edges' ends and the copies.

    Example (needs a Spark session, so not run as a doctest)::

        group_counts(frames, docrep, edges, n_edges)
    """
    n = frames.stats["documents"]
    copies = (
        docrep.where("rep != pos")
        .groupBy(F.col("rep").alias("pos"))
        .agg(F.count(F.lit(1)).alias("copies"))
    )
    labels = edge_labels(frames, edges, n_edges, local_max)
    if labels is None:  # every group is a representative and its copies
        weighted = copies.select(F.col("pos").alias("label"), (F.col("copies") + 1).alias("weight"))
    else:
        weighted = labels.join(copies, ["pos"], "full").select(
            F.coalesce("label", "pos").alias("label"),
            (F.coalesce("copies", F.lit(0)) + 1).alias("weight"),
        )
    sizes = weighted.groupBy("label").agg(F.sum("weight").alias("size"))
    members, largest = sizes.agg(F.sum(F.col("size") - 1), F.max("size")).first()
    members = int(members or 0)
    frames.stats["groups"] = n - members
    frames.stats["largest_group"] = int(largest or min(n, 1))
    frames.stats["duplicates_removed"] = members


def _star_labels(frames: Frames, edges: DataFrame) -> tuple[DataFrame, int]:
    """(pos, label) for every node of ``edges`` (``a, b``), label = smallest pos of its
    component, and the number of rounds taken.

    Large-star / small-star (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii 2014) over
    edges stored as (hi, lo), hi > lo, until every component is a star around its smallest
    node: every node is the ``hi`` of at most one edge, and no ``lo`` is a ``hi``. Each round
    is checkpointed, so the plan does not grow with the rounds. Cost: O(log² n) rounds
    (Kiveris et al.; a handful in practice), each a few shuffles of the edges.
    """
    rounds = 0
    e = edges.select(F.greatest("a", "b").alias("hi"), F.least("a", "b").alias("lo"))
    e = frames.keep(e.where("hi != lo").distinct())  # a short plan for the rounds
    while True:
        rounds += 1
        if rounds > _MAX_CC_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {_MAX_CC_ROUNDS} rounds")
        # large-star: node u links every larger neighbour to m(u) = min(u, neighbours)
        both = e.select(F.col("hi").alias("u"), F.col("lo").alias("v")).unionByName(
            e.select(F.col("lo").alias("u"), F.col("hi").alias("v"))
        )
        m = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
        large = (
            frames.lookup(both.where("v > u"), m, ["u"])
            .select(F.col("v").alias("hi"), F.col("m").alias("lo"))
            .distinct()
        )
        # small-star: node u links itself and its smaller neighbours to their minimum
        m2 = large.groupBy("hi").agg(F.min("lo").alias("m"))
        moved = (
            frames.lookup(large, m2, ["hi"])
            .where("lo != m")
            .select(F.col("lo").alias("hi"), F.col("m").alias("lo"))
        )
        previous = e
        e = frames.keep(moved.unionByName(m2.select("hi", F.col("m").alias("lo"))).distinct())
        frames.release(previous)
        if not _has_non_star(e):
            break
    return e.select(F.col("hi").alias("pos"), F.col("lo").alias("label")), rounds


def _has_non_star(e: DataFrame) -> bool:
    """Whether some node is the ``hi`` of two edges, or both a ``hi`` and a ``lo``."""
    ends = e.select(F.col("hi").alias("node"), F.lit(1).alias("as_hi"), F.lit(0).alias("as_lo"))
    ends = ends.unionByName(
        e.select(F.col("lo").alias("node"), F.lit(0).alias("as_hi"), F.lit(1).alias("as_lo"))
    )
    per_node = ends.groupBy("node").agg(F.sum("as_hi").alias("h"), F.max("as_lo").alias("l"))
    return per_node.where("h > 1 or (h > 0 and l > 0)").limit(1).count() > 0


def center(
    frames: Frames, labels: DataFrame, data: DataFrame, settings: Settings, local_max: int
) -> DataFrame:
    """(pos, center) for every representative (``labels``: ``pos, ts, label``; ``data``: the
    representatives' data the relation reads), by the rule of
    :func:`neardup.groups.center_groups`.

    Components (or what is left of them) with at most ``local_max`` unassigned
    members are solved inside one task by ``center_groups`` itself. Larger ones go through
    distributed rounds: the earliest unassigned member of each becomes a center, the other
    unassigned members are tested against it, those that pass join it. After any round the
    rest of a component is decided by its unassigned members alone (``center_groups``'
    invariant), so a component handed to a task mid-way ends as the rounds would end it.
    Cost: per round, a few shuffles of the unassigned members and one relation per member.

    Example (needs a Spark session, so not run as a doctest)::

        centers = center(frames, labels, data, Settings(grouping="center"), 5_000)
    """
    cols = data_columns(settings)
    data = compared_sets(frames, data, settings)
    size = labels.groupBy("label").agg(F.count(F.lit(1)).alias("size"))
    sized = frames.keep(frames.lookup(labels, size, ["label"]))
    parts = [sized.where("size = 1").select("pos", F.col("pos").alias("center"))]
    pending = frames.keep(
        sized.where("size > 1").join(data, ["pos"]).select("label", "ts", "pos", "size", *cols)
    )
    rounds = 0
    while True:
        small = pending.where(f"size <= {local_max}").select("label", "ts", "pos", *cols)
        # Eager: the part must not depend on ``pending`` once that is released.
        parts.append(
            frames.keep(
                frames.reduce(
                    small,
                    ["label"],
                    ["ts", "pos"],
                    partial(center_task, settings=settings),
                    "pos long, center long",
                )
            )
        )
        big = pending.where(f"size > {local_max}").drop("size")
        if big.limit(1).count() == 0:
            break
        rounds += 1
        if rounds > _MAX_CENTER_ROUNDS:
            raise RuntimeError("center grouping did not finish")
        heads = frames.earliest(big, ["label"], "center").select("label", "center")
        center_data = heads.join(
            big.select(F.col("pos").alias("center"), *[F.col(c).alias(c + "_b") for c in cols]),
            ["center"],
        )
        tested = frames.lookup(
            big.withColumnsRenamed({"sig": "sig_a", "sset": "set_a"}), center_data, ["label"]
        )
        tested = tested.withColumnsRenamed({"sset_b": "set_b", "pos": "a"})
        checked = frames.keep(
            related(tested, ["label", "ts", "a", "center"], settings, exact=False)
        )
        parts.append(checked.where("ok or a = center").select(F.col("a").alias("pos"), "center"))
        failed = checked.where("not ok and a != center").select(
            "label", "ts", F.col("a").alias("pos")
        )
        left = failed.groupBy("label").agg(F.count(F.lit(1)).alias("size"))
        previous = pending
        pending = frames.keep(
            frames.lookup(failed, left, ["label"])
            .join(data, ["pos"])
            .select("label", "ts", "pos", "size", *cols)
        )
        frames.release(previous)
    frames.stats["center_rounds"] = rounds
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def document_groups(
    frames: Frames, ids: DataFrame, docrep: DataFrame, rep_orig: DataFrame
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Every document's group, from its exact-duplicate representative (``docrep``: ``pos,
    rep``) and every representative's original (``rep_orig``: ``rep, orig``). Returns every
    document's ``pos, rep, orig`` (stored), each group of two documents or more as ``orig,
    group_size, original_id`` (stored), and GROUPS (``pos, id, duplicate_id, original_id,
    is_original, group_size``, with ``ids``: ``pos, id``); sets the run's counts ``groups``,
    ``largest_group`` and ``duplicates_removed``.

    A representative's row is its own, so only the copies look their representative's
    original up: in a run past the skew threshold, while twice the copies fit a broadcast
    (:data:`~neardup.engines.spark.frames.BROADCAST_ROWS` rows), in one pass over the
    representatives, each joined with a table of its copies and itself; else by a join of the
    copies with every representative. A document alone in its group is its own original, of
    size 1, so only the documents of larger groups are counted and named by their original.
    Cost: that pass or join, an aggregation and a join of the members of larger groups, and
    GROUPS' joins by position and by original.

    Example (needs a Spark session, so not run as a doctest)::

        doc_orig, per_orig, groups = document_groups(frames, ids, docrep, rep_orig)
    """
    n = frames.stats["documents"]  # a bound on the rows of every table of documents below
    copies = docrep.where("rep != pos").select("pos", "rep")
    if frames.broadcasts(2 * frames.stats["exact_duplicates"]):
        # One pass over the representatives, where they lie: each meets its copies, and
        # itself when it has some, in a broadcast table; one with no copy keeps its own row.
        own_and_copies = F.broadcast(frames.with_heads(copies, "rep"))
        rows = rep_orig.join(own_and_copies, ["rep"], "left").select(
            F.coalesce("pos", "rep").alias("pos"), "rep", "orig"
        )
    else:
        own = rep_orig.select(F.col("rep").alias("pos"), "rep", "orig")
        moved = frames.lookup(copies, rep_orig, ["rep"], right_rows=n)
        rows = own.unionByName(moved.select("pos", "rep", "orig"))
    doc_orig = frames.keep(rows, totals=[F.sum((F.col("pos") != F.col("orig")).cast("long"))])
    members = int(frames.totals(doc_orig)[0] or 0)  # documents that are not their original
    sizes = (
        doc_orig.where("pos != orig")
        .groupBy("orig")
        .agg((F.count(F.lit(1)) + 1).alias("group_size"))
    )
    orig_ids = ids.select(F.col("pos").alias("orig"), F.col("id").alias("original_id"))
    per_orig = frames.keep(sizes.join(orig_ids, ["orig"]), totals=[F.max("group_size")])
    named = frames.lookup(doc_orig, per_orig, ["orig"], how="left", right_rows=members)
    original_id = F.coalesce("original_id", "id")
    groups = named.join(ids, ["pos"]).select(
        "pos",
        "id",
        original_id.alias("duplicate_id"),
        original_id.alias("original_id"),
        (F.col("pos") == F.col("orig")).alias("is_original"),
        F.coalesce("group_size", F.lit(1).cast("long")).alias("group_size"),
    )
    frames.stats["groups"] = n - members
    frames.stats["largest_group"] = int(frames.totals(per_orig)[0] or min(n, 1))
    frames.stats["duplicates_removed"] = members
    return doc_orig, per_orig, groups
