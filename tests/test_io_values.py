"""Single values: timestamps, fingerprints, TSV cells (neardup.io.values)."""

import doctest
from datetime import date, datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from io_helpers import US, us_of

import neardup.io as nio
import neardup.io.values as io_values
from neardup.io import (
    format_fingerprints,
    parse_fingerprint,
    parse_timestamp,
)


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, 0),
        (1_700_000_000, 1_700_000_000 * US),
        (-1.25, -1_250_000),
        ("1700000000", 1_700_000_000 * US),
        ("1.5", 1_500_000),
        ("2024-01-02", us_of(datetime(2024, 1, 2, tzinfo=timezone.utc))),
        ("2024-01-02T03:04:05Z", us_of(datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc))),
        ("2024-01-02T03:04:05", us_of(datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc))),
        ("2024-01-02 03:04", us_of(datetime(2024, 1, 2, 3, 4, tzinfo=timezone.utc))),
        (
            "2024-01-02T03:04:05.5+02:00",
            us_of(datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=timezone.utc)),
        ),
        (
            "2024-01-02T03:04:05.123456789-0130",
            us_of(datetime(2024, 1, 2, 4, 34, 5, 123456, tzinfo=timezone.utc)),
        ),
        (datetime(2000, 1, 1), us_of(datetime(2000, 1, 1, tzinfo=timezone.utc))),
        (date(1970, 1, 3), 2 * 86_400 * US),
    ],
)
def test_parse_timestamp(value, expected):
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "yesterday",
        "2024-13-01",
        "2024-02-30",
        "2024-01-02T25:00",
        "2024-01-02T",
        True,
        None,
        [1],
        float("nan"),
        10**20,
    ],
)
def test_parse_timestamp_rejects(value):
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(value)


def test_parse_fingerprint():
    assert parse_fingerprint("00000000000000ff") == 255
    assert parse_fingerprint("FFFFFFFFFFFFFFFF") == 2**64 - 1
    assert parse_fingerprint("0xff") == 255
    assert parse_fingerprint("255") == 255
    assert parse_fingerprint("18446744073709551615") == 2**64 - 1
    assert parse_fingerprint("-1") == 2**64 - 1
    assert parse_fingerprint("-9223372036854775808") == 2**63
    assert parse_fingerprint("1234567890123456") == 0x1234567890123456
    assert parse_fingerprint("1234567890123456", "dec") == 1234567890123456
    assert parse_fingerprint("ff", "hex") == 255
    assert parse_fingerprint(-2) == 2**64 - 2
    for bad in [
        "18446744073709551616",
        "-9223372036854775809",
        "0x",
        "12ab",
        "0x1ffffffffffffffff",
        "",
        "1.5",
    ]:
        with pytest.raises(ValueError):
            parse_fingerprint(bad)
    with pytest.raises(ValueError, match="fingerprint_format"):
        parse_fingerprint("1", "oct")


def test_format_fingerprints():
    rng = np.random.default_rng(0)
    fps = rng.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True)
    fps[:3] = [0, 2**64 - 1, 0xABC]
    out = format_fingerprints(fps)
    assert out.tolist() == [f"{int(x):016x}" for x in fps]
    assert format_fingerprints(np.array([-1], np.int64)).tolist() == ["ffffffffffffffff"]
    assert format_fingerprints(np.array([], np.uint64)).tolist() == []
    with pytest.raises(TypeError):
        format_fingerprints(np.array([1.5]))
    assert [parse_fingerprint(s) for s in out[:3]] == [0, 2**64 - 1, 0xABC]


@pytest.mark.parametrize(
    "value", [" 12", "12 ", " 00000000000000ff", "1" * 10_000, "9" * 21, "-" + "9" * 20, "f" * 17]
)
def test_fingerprint_strings_with_spaces_or_too_many_digits_are_refused(value):
    with pytest.raises(ValueError, match="fingerprint must be") as error:
        parse_fingerprint(value)
    assert "set_int_max_str_digits" not in str(error.value)


def test_fingerprint_digit_count_boundaries():
    assert parse_fingerprint(str(2**64 - 1), "dec") == 2**64 - 1
    assert parse_fingerprint("0" * 30 + "255") == 255
    with pytest.raises(ValueError):
        parse_fingerprint(str(2**64), "dec")


def test_tsv_escape_rule():
    assert nio.tsv_escape('a\tb\nc\rd\\e"f') == 'a\\tb\\nc\\rd\\\\e"f'
    assert nio.tsv_unescape('a\\tb\\nc\\rd\\\\e"f') == 'a\tb\nc\rd\\e"f'
    assert nio.tsv_unescape("\\x \\") == "\\x \\"  # unknown and trailing: kept
    import neardup.quality.sampling as sa
    import neardup.quality.truth as ev

    assert sa.tsv_unescape is nio.tsv_unescape and not hasattr(ev, "_tsv_unescape")
    assert not hasattr(sa, "_tsv_unescape")


def test_docstring_examples():
    assert doctest.testmod(io_values).failed == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(-62_135_596_800 * US, 253_402_300_799 * US + US - 1))
def test_us_to_iso_is_read_back_exactly(us):
    text = io_values.us_to_iso(us)
    assert len(text) == 27 and text[10] == "T" and text[19] == "." and text.endswith("Z")
    assert parse_timestamp(text) == us


def test_time_to_us_answers_none_where_parse_timestamp_raises():
    assert io_values.time_to_us("2024-01-02") == parse_timestamp("2024-01-02")
    for bad in ("yesterday", None, True, float("inf"), 10**20):
        assert io_values.time_to_us(bad) is None


def test_a_time_of_thousands_of_digits_is_out_of_range_not_a_conversion_error():
    from neardup.io.rows import valid_time

    huge = "9" * 5000
    assert (
        io_values.time_to_us(huge) is None and io_values.time_to_us("0" * 5000 + "5") == 5_000_000
    )
    bad = valid_time(huge, "timestamp")
    assert bad.reason == "bad timestamp" and "out of range" in bad.detail
