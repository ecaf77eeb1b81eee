"""JavaScript string semantics (E-3..E-5, D-12), checked by hand and differentially against the
machine's real Node.js: whatever Node says `length`, `JSON.stringify`, `String(number)` and
`sort()` produce is what Pi produces."""

from __future__ import annotations

import json
import shutil
import subprocess

from compactd.compaction.jscompat import (
    REPLACEMENT_CHAR,
    js_json_stringify,
    js_json_stringify_length,
    js_number,
    js_object_keys,
    js_sort_key,
    js_sorted,
    utf16_len,
    utf16_slice,
)
from hypothesis import given, settings
from hypothesis import strategies as st

NODE = shutil.which("node")


def run_node(script: str, payload: object) -> object:
    assert NODE, "Node.js is part of this machine (see the env notes); it is needed for differential checks"
    done = subprocess.run([NODE, "-e", script], input=json.dumps(payload), capture_output=True, text=True,
                          check=True, timeout=60)
    return json.loads(done.stdout)


def test_utf16_len_counts_code_units() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len("😀") == 2  # non-BMP: a surrogate pair
    assert utf16_len("a😀b") == 4
    assert utf16_len("") == 0


def test_utf16_slice_at_unit_boundaries() -> None:
    assert utf16_slice("abcdef", 3) == "abc"
    assert utf16_slice("😀😀", 2) == "😀"
    assert utf16_slice("😀😀", 4) == "😀😀"
    assert utf16_slice("é😀", 10) == "é😀"
    assert utf16_slice("abc", 0) == ""


def test_utf16_slice_splitting_a_pair_keeps_length_with_replacement_char() -> None:
    cut = utf16_slice("a😀b", 2)
    assert cut == "a" + REPLACEMENT_CHAR
    assert utf16_len(cut) == 2
    cut.encode("utf-8")  # valid Unicode: can be written out


def _reference_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _reference_slice(text: str, units: int) -> str:
    """The code units through UTF-16 (JavaScript's `slice(0, units)`, a split pair's half as U+FFFD)."""
    if units <= 0:
        return ""
    encoded = text[: units + 1].encode("utf-16-le", "surrogatepass")
    if units * 2 >= len(encoded):
        return text
    head = encoded[: units * 2]
    split = 0xD800 <= int.from_bytes(head[-2:], "little") <= 0xDBFF and (
        0xDC00 <= int.from_bytes(encoded[units * 2 : units * 2 + 2], "little") <= 0xDFFF)
    result = head.decode("utf-16-le", "surrogatepass")
    return result[:-1] + REPLACEMENT_CHAR if split else result


# Texts of every storage width (1, 2 and 4 bytes a character), with lone surrogates and pairs of
# them written as two characters (what a damaged file can hold).
_CODE_POINTS = st.one_of(st.integers(0, 0x7F), st.integers(0x80, 0xFF), st.integers(0x100, 0xD7FF),
                         st.integers(0xD800, 0xDFFF), st.integers(0xE000, 0xFFFF), st.integers(0x10000, 0x10FFFF))
_TEXTS = st.lists(_CODE_POINTS, max_size=40).map(lambda points: "".join(map(chr, points)))


@given(_TEXTS, st.integers(0, 50))
@settings(max_examples=500)
def test_utf16_length_and_slice_match_the_code_units(text: str, units: int) -> None:
    assert utf16_len(text) == _reference_len(text)
    assert utf16_slice(text, units) == _reference_slice(text, units)


def test_utf16_slice_of_a_pair_written_as_two_characters() -> None:
    two_halves = "a\ud83d\ude00b"  # 2-byte storage: the halves are characters of their own
    assert utf16_len(two_halves) == 4
    assert utf16_slice(two_halves, 2) == "a" + REPLACEMENT_CHAR
    assert utf16_slice(two_halves, 3) == "a😀"  # the pair, read as UTF-16
    assert utf16_slice("é\ud83d", 2) == "é\ud83d"  # a lone half at the end stays
    assert utf16_slice("é→x", 2) == "é→"  # 2-byte storage, no halves: cut by characters


def test_js_number_formats_like_javascript() -> None:
    assert js_number(1.0) == "1"
    assert js_number(-0.0) == "0"
    assert js_number(1e21) == "1e+21"
    assert js_number(1e20) == "100000000000000000000"
    assert js_number(1e-7) == "1e-7"
    assert js_number(0.000001) == "0.000001"
    assert js_number(1.5) == "1.5"
    assert js_number(2**53) == "9007199254740992"
    assert js_number(12345678901234567890) == "12345678901234567000"


def test_json_stringify_is_compact_with_js_escapes_and_key_order() -> None:
    value = {"b": 1.0, "2": [None, True, False], "a": "q\"\\\n\t\b\f\r\x01\x7f\u2028é😀", "1": {}}
    assert js_json_stringify(value) == (
        '{"1":{},"2":[null,true,false],"b":1,"a":"q\\"\\\\\\n\\t\\b\\f\\r\\u0001\x7f\u2028é😀"}'
    )
    assert js_json_stringify("\ud800x") == '"\\ud800x"'  # lone surrogate escaped
    assert js_json_stringify(float("nan")) == "null"


def test_object_key_order_puts_array_indices_first() -> None:
    assert js_object_keys({"b": 0, "10": 0, "a": 0, "2": 0, "01": 0, "4294967295": 0}) == [
        "2", "10", "b", "a", "01", "4294967295"]


def test_js_sort_is_code_unit_order() -> None:
    # U+FF5E (fullwidth tilde) sorts after U+1F600 in code points but before it in UTF-16 units.
    assert sorted(["😀", "～"]) == ["～", "😀"]
    assert js_sorted(["～", "😀"]) == ["😀", "～"]
    assert js_sort_key("a") < js_sort_key("b")


_json_leaf = (st.none() | st.booleans() | st.integers(-(10**20), 10**20)
              | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
_json_values = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=1, deadline=None)
@given(st.lists(_json_values, min_size=300, max_size=300))
def test_json_stringify_matches_node(values: list[object]) -> None:
    # Values travel to Node as JSON; Node parses and re-stringifies them, exactly as Pi does
    # with tool-call arguments read from a session file.
    out = run_node(
        "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "process.stdout.write(JSON.stringify(v.map(x=>JSON.stringify(x))))",
        values,
    )
    assert out == [js_json_stringify(json.loads(json.dumps(v))) for v in values]


@settings(max_examples=1, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=300, max_size=300))
def test_length_slice_and_sort_match_node(texts: list[str]) -> None:
    out = run_node(
        "const v=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "process.stdout.write(JSON.stringify({len:v.map(s=>s.length), cut:v.map(s=>s.slice(0,7)),"
        " sorted:[...v].sort()}))",
        texts,
    )
    assert out["len"] == [utf16_len(t) for t in texts]
    assert out["sorted"] == js_sorted(texts)
    # Node keeps a lone half of a split pair (JSON carries it as an escape); we use U+FFFD there.
    expected_cuts = [c if not (c and 0xD800 <= ord(c[-1]) <= 0xDBFF) else c[:-1] + REPLACEMENT_CHAR
                     for c in out["cut"]]
    assert expected_cuts == [utf16_slice(t, 7) for t in texts]


def test_json_strings_escape_every_code_unit_like_json_stringify() -> None:
    """JSON.stringify's string escaping, character by character over the whole BMP and some
    astral characters: the quote, the backslash, \\b \\t \\n \\f \\r, other C0 controls as lowercase
    \\u00xx, lone surrogates as \\udxxx, everything else (DEL, U+2028, U+2029, …) literal."""
    short = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}

    def expected(code: int) -> str:
        if code in short:
            return short[code]
        if code < 0x20 or 0xD800 <= code <= 0xDFFF:
            return f"\\u{code:04x}"
        return chr(code)

    codes = [*range(0x10000), 0x1F600, 0x10FFFF]
    for code in codes:
        assert js_json_stringify(chr(code)) == f'"{expected(code)}"', hex(code)
    non_surrogates = [c for c in codes if not 0xD800 <= c <= 0xDFFF]
    whole = "".join(chr(c) for c in non_surrogates)
    assert js_json_stringify(whole) == '"' + "".join(expected(c) for c in non_surrogates) + '"'
    assert js_json_stringify("é\ud800\"\n😀") == '"é\\ud800\\"\\n😀"'  # the slow path keeps pairs


_flat_arguments = st.dictionaries(
    st.text(max_size=6), st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=20), max_size=5)


@settings(max_examples=400, deadline=None)
@given(_flat_arguments | _json_values)
def test_json_stringify_length_is_the_code_units_of_json_stringify(value: object) -> None:
    """The chars/4 estimate counts a tool call's arguments from their encoded bytes when it can
    (ASCII JSON of a flat object): the same length as the string's, in UTF-16 code units."""
    assert js_json_stringify_length(value) == utf16_len(js_json_stringify(value))


def test_json_stringify_length_of_flat_objects_with_wide_text() -> None:
    for value in ({"path": "a/b.py", "n": 3}, {"text": "é😀"}, {"text": "a\ud800b"}, {"0": 1, "k": "v"}, {"k": 2**60}):
        assert js_json_stringify_length(value) == utf16_len(js_json_stringify(value))
    assert js_json_stringify_length({"text": "😀"}) == len('{"text":"😀"}') + 1  # the emoji: two code units
