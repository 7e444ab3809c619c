"""The compiled field reader (neardup.io.json_fields) against json.loads on generated lines."""

import doctest
import json

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import neardup.io.json_fields as json_fields_module
from neardup.io.json_fields import INTEGER, MISSING, OTHER, STRING, json_fields

NAMES = ["id", "text", "ts"]
# Keys: the wanted names (so some lines name one twice), near misses and other scripts.
KEYS = st.sampled_from(NAMES + ["Id", "text ", "tex", "", "문서", "😀", "i\\d", "x"])
UTF8_CHARS = st.one_of(
    st.characters(codec="utf-8"),  # any code point but the surrogates
    st.sampled_from(list('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028')),
)
CHARS = st.one_of(UTF8_CHARS, st.sampled_from(["\ud800", "\udfff", "\udc00"]))
STRINGS = st.text(CHARS, max_size=8)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    STRINGS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(st.tuples(KEYS, inner), max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def encoded_string(draw, value: str) -> str:
    """``value`` as a JSON string, each character written plainly or escaped at random."""
    out = ['"']
    for char in value:
        code = ord(char)
        how = draw(st.integers(0, 3))
        if char in '"\\' or code < 0x20 or 0xD800 <= code < 0xE000 or how == 0:
            simple = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "/": "\\/"}
            if char in simple and how:
                out.append(simple[char])
            elif code > 0xFFFF:  # a surrogate pair
                hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}")
            else:
                out.append(f"\\u{code:04x}" if how % 2 else f"\\u{code:04X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


@st.composite
def encoded(draw, value, top: bool = False) -> str:
    """``value`` (a pair list is an object, and so is the ``top`` value) as JSON, with random
    spaces between tokens."""
    space = st.sampled_from(["", "", " ", "  ", "\t", " \r "])
    if isinstance(value, list) and (top or value) and all(isinstance(v, tuple) for v in value):
        items = [
            draw(encoded_string(k)) + draw(space) + ":" + draw(space) + draw(encoded(v))
            for k, v in value
        ]
        return "{" + draw(space) + ("," + draw(space)).join(items) + draw(space) + "}"
    if isinstance(value, list):
        items = [draw(space) + draw(encoded(v)) + draw(space) for v in value]
        return "[" + ",".join(items) + draw(space) + "]"
    if isinstance(value, str):
        return draw(encoded_string(value))
    if isinstance(value, float) and draw(st.booleans()):
        return f"{value:e}"
    return json.dumps(value)


# A wanted field's value: mostly a string (without a lone surrogate half the time) or integer.
FIELD_VALUES = st.one_of(
    st.text(UTF8_CHARS, max_size=12), st.integers(-(10**19), 10**19), STRINGS, VALUES
)
LINES = st.lists(st.tuples(KEYS, FIELD_VALUES), max_size=5).flatmap(lambda v: encoded(v, top=True))


_ABSENT = object()


def expected(line: bytes, names: list[str]):
    """What json_fields must give for ``line`` by its definition, from json.loads: None, or
    for each name (kind, integer, string)."""
    if type(json.loads(line)) is not dict:
        return None
    pairs = json.loads(line, object_pairs_hook=lambda p: p)
    keys = [k for k, _ in pairs]
    got = []
    for name in names:
        if keys.count(name) > 1:
            return None
        value = dict(pairs).get(name, _ABSENT)
        if type(value) is str:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return None
            got.append((STRING, 0, value))
        elif type(value) is int and abs(value) < 10**18:
            got.append((INTEGER, value, ""))
        elif value is _ABSENT:
            got.append((MISSING, 0, ""))
        else:
            got.append((OTHER, None, ""))
    return got


def answer(lines: list[bytes], names: list[str]):
    block = b"".join(lines)
    starts = np.cumsum([0] + [len(line) for line in lines])
    fields = json_fields(block, starts, [n.encode() for n in names])
    if fields is None:
        return None
    return [
        [
            (kind, None if kind == OTHER else int(number), text)
            for kind, number, text in zip(
                fields.kinds[f].tolist(), fields.integers[f].tolist(), fields.strings(f)
            )
        ]
        for f in range(len(names))
    ]


def reference(lines: list[bytes], names: list[str]):
    each = [expected(line, names) for line in lines]
    if any(e is None for e in each):
        return None
    return [[e[f] for e in each] for f in range(len(names))]


ENDS = st.sampled_from([b"\n", b"\r\n", b" \n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(LINES, ENDS), min_size=1, max_size=4), st.integers(1, 3))
def test_values_are_those_of_json_loads(lines, wanted):
    raw = [(text.encode("utf-8", "surrogatepass"), end) for text, end in lines]
    raw_lines = [r + end for r, end in raw]
    # Raw surrogates only ever come from the strategy's escapes; a raw one is no UTF-8.
    assume(all(_utf8(line) for line in raw_lines))
    names = NAMES[:wanted]
    assert answer(raw_lines, names) == reference(raw_lines, names)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(LINES, st.integers(0, 200), st.sampled_from(list(b'{}[]",:\\ 0-.eEu') + [None]))
def test_broken_lines_are_refused(text, at, byte):
    """A line changed by a byte is either refused or read as json.loads reads it."""
    line = bytearray(text.encode("utf-8"))
    assume(line)
    at %= len(line)
    if byte is None:
        del line[at]
    else:
        line.insert(at, byte)
    line = bytes(line)
    assume(_utf8(line))
    try:
        want = reference([line], NAMES)
    except json.JSONDecodeError:
        assert answer([line], NAMES) is None
        return
    got = answer([line], NAMES)
    assert got is None or got == want
    if got is None and want is not None:
        assert b"NaN" in line or b"Infinity" in line or not line.lstrip().startswith(b"{")


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": 1, "text": "x"}{}',
        b'{"id": 1, "text": "x",}',
        b'{"id": 1 "text": "x"}',
        b'{"id": 01, "text": "x"}',
        b'{"id": 1., "text": "x"}',
        b'{"id": -, "text": "x"}',
        b'{"id": 1, "text": "\\x"}',
        b'{"id": 1, "text": "\\u12g4"}',
        b'{"id": 1, "text": "tab\there"}',
        b'{"id": 1, "text": "x", "n": tru}',
        b'{"id": 1, "text": "cut',
        b"",
    ],
)
def test_not_json_is_refused(line):
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)
    assert answer([line + b"\n"], NAMES) is None


@pytest.mark.parametrize("line", [b'{"id": NaN, "text": "x"}', b'{"n": -Infinity}', b'["id", 1]'])
def test_what_the_standard_library_adds_is_refused(line):
    json.loads(line)
    assert answer([line + b"\n"], NAMES) is None


def test_deep_nesting():
    def line(depth):
        return b'{"id": 1, "n": ' + b"[" * depth + b"]" * depth + b', "text": "x"}\n'

    assert answer([line(json_fields_module.MAX_NESTING)], ["id"]) == [[(INTEGER, 1, "")]]
    assert answer([line(json_fields_module.MAX_NESTING + 1)], ["id"]) is None


def test_escaped_names_and_surrogates():
    line = b'{"\\u0069d": "\\ud83d\\ude00", "text": "a\\ud800b", "ts": "\\udc00"}\n'
    assert answer([line], ["id"]) == [[(STRING, 0, "😀")]]
    assert answer([line], ["id", "text"]) is None  # a wanted text that is no UTF-8
    assert answer([b'{"id": 1, "id": 2}\n'], ["id"]) is None


def test_field_count_is_checked():
    with pytest.raises(ValueError, match="1 to 3 fields, got 4"):
        json_fields(b"{}\n", np.array([0, 3]), [b"a", b"b", b"c", b"d"])


def test_doctests():
    assert doctest.testmod(json_fields_module).failed == 0


@pytest.mark.parametrize(
    "line", [b'{"id":"0\t}', b'{"text":"a\n}', b'{"id":"ab', b'{"ts":"x\x01"}', b'{"id":"\\q"}']
)
def test_a_wanted_field_that_is_no_json_string_refuses_the_line(line):
    # The string's scan stops at a control byte, a bad escape or the line's end; what follows
    # (here a tab, which is a space between values) must not read as the rest of the object.
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)
    assert answer([line], NAMES) is None
