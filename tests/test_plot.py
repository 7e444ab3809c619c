"""Tests of neardup.quality.plot: a sweep drawn as a PNG, byte-identical for the same inputs, on
the ``labelled_families`` corpus (conftest.py). What the picture shows is looked at by people;
these tests hold the file's promises."""

import pytest

from neardup.pipeline import signatures
from neardup.quality import (
    best_settings,
    pair_distances,
    plot_sweep,
    sweep,
    sweep_signature_settings,
    swept_settings,
)
from neardup.settings import Settings


@pytest.fixture(scope="module", params=["pairs", "clusters"])
def swept(request, labelled_families):
    """A SimHash sweep against one kind of truth: its rows, the labelled pairs' distances (None
    for cluster truth) and the best setting by F1."""
    texts, ids, pairs, clusters = labelled_families
    truth = pairs if request.param == "pairs" else clusters
    base = Settings(method="simhash")
    rows = sweep(texts, ids, None, truth, base, workers=1)
    distances = None
    if truth.kind == "pairs":
        sig = signatures(texts, sweep_signature_settings(base, swept_settings(base), truth))
        distances = pair_distances(sig, ids, truth, "simhash")
    return rows, distances, best_settings(rows)[0]


def test_the_same_sweep_gives_the_same_png(tmp_path, swept):
    rows, distances, chosen = swept
    first = plot_sweep(rows, tmp_path / "a.png", distances, chosen, title="sweep")
    second = plot_sweep(rows, tmp_path / "b.png", distances, chosen, title="sweep")
    assert first == tmp_path / "a.png"
    data = first.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert second.read_bytes() == data
    # No software or time stamp in the file, so it does not change from one machine to another.
    assert b"Software" not in data and b"Creation Time" not in data


def test_the_chosen_setting_is_drawn(tmp_path, swept):
    rows, distances, chosen = swept
    marked = plot_sweep(rows, tmp_path / "marked.png", distances, chosen).read_bytes()
    plain = plot_sweep(rows, tmp_path / "plain.png", distances).read_bytes()
    assert marked != plain


def test_no_rows_is_refused(tmp_path):
    with pytest.raises(ValueError, match="rows must hold at least one sweep row; got none"):
        plot_sweep([], tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()
