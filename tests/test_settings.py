"""neardup.settings: one home for a run's options, their values and their defaults, which the
command line, the Python API and the Spark engine all take from it."""

import dataclasses
import json
import warnings

import click
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.options import settings_fields
from neardup.index.settings import index_settings, settings_from_meta, settings_meta
from neardup.lsh import candidate_probability
from neardup.settings import (
    CHOICES,
    DEFAULT_SHINGLES,
    Settings,
    check_method_options,
    implied_method,
    renamed_keywords,
    setting_default,
)

FIELDS = {f.name for f in dataclasses.fields(Settings)}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def docs(tmp_path):
    path = tmp_path / "docs.jsonl"
    texts = ["the cat sat on the mat today", "The cat sat on the mat, today!", "a different note"]
    path.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


# -- the defaults are dedup's ---------------------------------------------------------------------


def test_the_defaults_are_dedups():
    s = Settings()
    assert (s.method, s.shingle, s.threshold, str(s.verification)) == (
        "minhash",
        "char:4",
        0.8,
        "lcs:0.8",
    )
    assert (s.num_perm, s.seed, s.hash_name, s.grouping, s.pairs) == (
        128,
        1,
        "xxh",
        "components",
        "original",
    )
    assert s.banding() == (32, 4)


@pytest.mark.parametrize("method", ["simhash", "minhash"])
def test_shingles_default_per_method(method):
    assert Settings(method=method).shingle == DEFAULT_SHINGLES[method]
    assert Settings(method=method, shingle="char:5").shingle == "char:5"
    # A copy keeps the shingles it resolved, as before the method-dependent default.
    assert Settings(method=method).replace(hamming_k=5).shingle == DEFAULT_SHINGLES[method]


@pytest.mark.parametrize("method", ["simhash", "minhash"])
def test_settings_of_a_method_are_what_dedup_runs_with_it(method, docs, tmp_path):
    """Settings(method=M) with nothing else set is `neardup dedup --method M` with nothing else
    set: the --summary-out JSON reports the settings the run used."""
    out = tmp_path / "run.json"
    result = run(
        "dedup", docs, "-o", tmp_path / "g.tsv", "--method", method, "-q", "--summary-out", out
    )
    assert result.exit_code == 0, result.output
    used = json.loads(out.read_text())["settings"]
    expected = settings_fields(Settings(method=method))
    assert {k: used[k] for k in expected} == expected


def _defaults_of(command) -> dict:
    """The Settings fields among a command's options, with their --help defaults."""
    names = {"pairs_mode": "pairs"}
    return {
        names.get(p.name, p.name): p.default
        for p in command.params
        if names.get(p.name, p.name) in FIELDS
    }


def test_dedups_options_default_to_settings():
    from neardup.cli.dedup import dedup

    defaults = _defaults_of(dedup)
    assert set(defaults) == FIELDS - {"idf", "verify_measure"}
    assert defaults.pop("method") is None  # the one the options given imply, else dedup's
    assert Settings(**defaults, method=implied_method([])) == Settings()


@pytest.mark.parametrize("command", ["fingerprint", "sweep", "sample"])
def test_every_command_decides_as_dedup_by_default(command):
    # One default decision everywhere: what a command signs with, left alone, is dedup's.
    defaults = _defaults_of(main.get_command(None, command))
    assert defaults.pop("method") is None
    signed = Settings(**defaults, method=implied_method([])).replace(verify=None)
    assert signed == Settings().replace(verify=None)


def test_the_index_decides_as_dedup_by_default():
    settings = index_settings()
    assert settings.replace(bands=None, rows=None) == Settings(grouping="components")
    assert (settings.bands, settings.rows) == Settings().banding()
    assert settings == settings_from_meta(settings_meta(settings))


@pytest.mark.parametrize(
    ("given", "method"),
    [
        ([], "minhash"),
        (["hamming_k"], "simhash"),
        (["weights", "shingle"], "simhash"),
        (["num_perm"], "minhash"),
        (["scheme", "threshold"], "minhash"),
        (["threshold"], "minhash"),
        (["hamming_k", "num_perm"], "minhash"),  # both: the default, which then refuses -k
    ],
)
def test_the_options_given_imply_the_method(given, method):
    assert implied_method(given) == method


def test_choices_come_from_settings():
    from neardup.cli.dedup import dedup, pairs

    for command in (dedup, pairs):
        for param in command.params:
            field = {"pairs_mode": "pairs"}.get(param.name, param.name)
            if field in CHOICES:
                assert tuple(param.type.choices) == CHOICES[field], field
    for name, valid in CHOICES.items():
        if name != "verify_measure":
            with pytest.raises(ValueError, match=name):
                Settings(**{name: "no-such-" + name})
        assert setting_default(name) in valid


def test_help_shows_the_defaults_of_settings():
    from neardup.cli.dedup import dedup

    ctx = click.Context(dedup)
    shown = {p.name: p.get_help_record(ctx)[1] for p in dedup.params if isinstance(p, click.Option)}
    assert shown["method"].endswith(f"else {setting_default('method')}].")
    for name in (
        "hash_name",
        "weights",
        "num_perm",
        "seed",
        "hamming_k",
        "threshold",
        "verify",
        "grouping",
    ):
        assert shown[name].endswith(f"[default: {setting_default(name)}]"), name
    assert "word:3 with --method simhash, char:4 with minhash" in shown["shingle"]


# -- validation (moved with Settings from neardup.pipeline) ---------------------------------------


@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(method="lsh"), "method"),
        (dict(grouping="star"), "grouping"),
        (dict(hamming_k=40), "hamming_k"),
        (dict(threshold=1.5), "threshold"),
        (dict(bands=4), "together"),
        (dict(bands=100, rows=2), "num_perm"),
        (dict(verify="cosine:0.3"), "verify"),
        (dict(pairs="some"), "pairs"),
    ],
)
def test_settings_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        Settings(**bad)


def test_verify_defaults():
    assert Settings(method="minhash", threshold=0.7).verify == 0.7
    assert Settings(method="simhash").verify is None
    assert Settings(method="minhash", verify="none").verify is None


def test_banding_favours_recall_when_verified():
    verified = Settings(method="minhash", threshold=0.7)
    unverified = Settings(method="minhash", threshold=0.7, verify="none")
    assert candidate_probability(0.75, *verified.banding()) > 0.95
    assert candidate_probability(0.75, *verified.banding()) > candidate_probability(
        0.75, *unverified.banding()
    )


def test_options_of_the_other_method_are_named_as_the_user_spelt_them():
    with pytest.raises(ValueError, match="--hamming-k applies to method simhash"):
        check_method_options("minhash", ["hamming_k"], spell=lambda n: "--" + n.replace("_", "-"))
    check_method_options("simhash", ["threshold"], verify="jaccard")


# -- renamed names: the old ones still work for one release ---------------------------------------


def test_renamed_keywords_warn_and_pass_the_value_on():
    @renamed_keywords(old_name="new_name")
    def f(*, new_name=0):
        return new_name

    with pytest.warns(
        DeprecationWarning, match=r"f\(old_name=\.\.\.\) is deprecated; use new_name"
    ):
        assert f(old_name=5) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(new_name=6) == 6
    with pytest.raises(TypeError, match="give new_name alone"):
        f(old_name=1, new_name=2)


@pytest.mark.parametrize(
    "entry, old, new",
    [
        ("dedup_dataframe", "id_col", "id_field"),
        ("dedup_dataframe", "text_col", "text_field"),
        ("dedup_dataframe", "time_col", "time_field"),
        ("dedup_dataframe", "position_col", "position_field"),
        ("pairs_dataframe", "fingerprint_col", "fingerprint_field"),
    ],
)
def test_spark_entry_points_name_columns_as_the_command_line(entry, old, new, monkeypatch):
    import inspect

    from neardup.engines.spark import dataframes

    class Started(Exception):
        pass

    def start():
        raise Started

    function = getattr(dataframes, entry)
    assert new in inspect.signature(function).parameters
    assert old not in inspect.signature(function).parameters
    # The old name reaches the entry point as the new one (else Python would refuse it), with
    # a warning; the run is stopped where it would start Spark.
    monkeypatch.setattr(dataframes, "require_pyspark", start)
    with pytest.warns(DeprecationWarning, match=f"use {new}="), pytest.raises(Started):
        function(None, **{old: "x"})


def test_a_renamed_flag_is_hidden_from_help():
    assert "--hash-name" in run("dedup", "--help").output
    assert "--hash " not in run("dedup", "--help").output
    assert "--pairs-in" in run("report", "--help").output
    assert "--pairs " not in run("report", "--help").output
    index_help = run("index", "build", "--help").output
    assert "--from-fingerprints" in index_help and "--fingerprints " not in index_help


def test_a_renamed_flag_still_works_with_a_note(docs, tmp_path):
    new, old = tmp_path / "new.tsv", tmp_path / "old.tsv"
    result = run("fingerprint", docs, "-o", new, "--hash-name", "md5", "-q")
    assert result.exit_code == 0 and result.stderr == ""
    result = run("fingerprint", docs, "-o", old, "--hash", "md5", "-q")
    assert result.exit_code == 0
    assert result.stderr == "neardup: warning: --hash is deprecated; use --hash-name\n"
    assert old.read_bytes() == new.read_bytes()
    assert new.read_bytes() != run("fingerprint", docs, "-o", "-", "-q").stdout.encode()


def test_both_spellings_of_a_renamed_flag_are_refused(docs, tmp_path):
    result = run(
        "fingerprint", docs, "-o", tmp_path / "f.tsv", "--hash", "md5", "--hash-name", "md5"
    )
    assert result.exit_code == click.UsageError.exit_code
    assert "--hash is the old name of --hash-name" in result.output
