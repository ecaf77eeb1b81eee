"""JavaScript string semantics that Pi's numbers depend on (spec E-3..E-5, decision D-12).

Pi runs on JavaScript: a string's `length` counts UTF-16 code units, `slice` cuts at code-unit
boundaries, `JSON.stringify` has its own escaping and number formatting, object keys that look like
array indices come first, and `Array.prototype.sort` compares code units. Reproducing these exactly
is what makes our token estimates, cut points and serialized text match Pi's bit for bit.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "REPLACEMENT_CHAR",
    "utf16_len",
    "utf16_slice",
    "js_sort_key",
    "js_sorted",
    "js_object_keys",
    "js_object_items",
    "js_number",
    "js_json_stringify",
    "js_template_value",
]

REPLACEMENT_CHAR = "\ufffd"
_MAX_SAFE = 2**53
_MAX_ARRAY_INDEX = 2**32 - 2  # array-index property keys are 0 .. 2^32 - 2
_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")
_SURROGATE = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")  # (mypyc takes no surrogate in a literal)
DIGITS = frozenset("0123456789")  # what a key that is an array index starts with


# A str keeps 1, 2 or 4 bytes a character (PEP 393), the fewest its widest character needs: only
# the 4-byte form holds characters beyond the BMP (two UTF-16 code units each), only the 2- and
# 4-byte forms surrogate halves. Its size tells the form without reading the text; this is the
# size of a one-character 2-byte str less its data.
_NON_ASCII_HEADER = sys.getsizeof("\u0100") - 2 * 2


def _char_width(text: str) -> int:
    """Bytes a character in the storage of the non-ASCII `text`: 1, 2, or 4 (also when unknown)."""
    data = sys.getsizeof(text) - _NON_ASCII_HEADER  # the characters and a terminator
    slots = len(text) + 1
    return 1 if data < 2 * slots else 2 if data < 4 * slots else 4


def utf16_len(text: str) -> int:
    """`text.length` in JavaScript: UTF-16 code units (a non-BMP character counts 2)."""
    if text.isascii() or _char_width(text) < 4:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_slice(text: str, units: int) -> str:
    """`text.slice(0, units)` in JavaScript.

    If the cut falls between the two halves of a surrogate pair, JavaScript keeps a lone high
    surrogate. We replace that half character by U+FFFD instead: the result has the same UTF-16
    length (so every count derived from it still matches Pi), it is valid Unicode that can be
    written as UTF-8/JSON, and it is exactly what Node itself emits when it writes such a string
    as UTF-8.
    """
    if units <= 0:
        return ""
    if text.isascii():
        return text[:units]
    width = _char_width(text)
    if width < 4:  # characters are code units: the cut is a character's
        cut = text[:units]
        if width == 1 or _SURROGATE.search(cut) is None:  # (halves, from a damaged file, go below)
            return cut
    # The first `units` code units lie within the first `units` characters; one more shows
    # whether the cut splits a pair. Encoding only those keeps a cut of a long text cheap.
    encoded = text[: units + 1].encode("utf-16-le", "surrogatepass")
    if units * 2 >= len(encoded):
        return text
    head = encoded[: units * 2]
    last = int.from_bytes(head[-2:], "little")
    split_pair = 0xD800 <= last <= 0xDBFF and 0xDC00 <= int.from_bytes(encoded[units * 2 : units * 2 + 2], "little") <= 0xDFFF
    result = head.decode("utf-16-le", "surrogatepass")
    if split_pair:
        result = result[:-1] + REPLACEMENT_CHAR
    return result


def js_sort_key(text: str) -> bytes:
    """Sort key equal to JavaScript's default string order (UTF-16 code units, E-5).

    Big-endian UTF-16 bytes compare exactly like the code-unit sequence. Python's own order
    (code points) differs only when non-BMP characters meet U+E000..U+FFFF.
    """
    return text.encode("utf-16-be", "surrogatepass")


def js_sorted(items: Iterable[str]) -> list[str]:
    """`[...items].sort()` for strings."""
    return sorted(items, key=js_sort_key)


def js_object_keys(obj: dict[Any, Any]) -> list[Any]:
    """Own-key order of a JavaScript object built from the same JSON: keys that are canonical
    array indices come first in ascending numeric order, then the other keys in insertion order.
    This is the order of `Object.entries` and `JSON.stringify`."""
    index_keys: list[tuple[int, Any]] = []
    other_keys: list[Any] = []
    for key in obj:
        if isinstance(key, str) and key[:1] in DIGITS and _INDEX_KEY.fullmatch(key) and int(key) <= _MAX_ARRAY_INDEX:
            index_keys.append((int(key), key))
        else:
            other_keys.append(key)
    if not index_keys:
        return other_keys
    index_keys.sort()
    return [key for _, key in index_keys] + other_keys


def js_object_items(obj: dict[Any, Any]) -> Any:
    """(key, value) pairs in `js_object_keys` order: the dict's own items when no key looks like
    an array index (the usual case, checked without building lists)."""
    for key in obj:
        if isinstance(key, str) and key[:1] in DIGITS:
            return [(key, obj[key]) for key in js_object_keys(obj)]
    return obj.items()


def js_number(value: float | int) -> str:
    """`String(value)` for a JavaScript number (ECMAScript Number::toString).

    Integers beyond 2^53 are rounded to the nearest double first, as `JSON.parse` would have done.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() yields the shortest round-tripping digits, as JavaScript requires.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    n = int(exponent) + len(digits)  # value = 0.<digits> × 10^n
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = ("+" if e >= 0 else "-") + str(abs(e))
        text = (digits if k == 1 else digits[0] + "." + digits[1:]) + "e" + exp
    return sign + text


_JSON_ESCAPES = {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}
_CONTROL = re.compile(r"[\x00-\x1f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# A well-formed pair held as two halves stays literal; a lone half is escaped.
_SURROGATE_OR_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _escape_control(match: re.Match[str]) -> str:
    code = ord(match.group())
    return _JSON_ESCAPES.get(code, f"\\u{code:04x}")


def _escape_surrogate(match: re.Match[str]) -> str:
    text = match.group()
    return text if len(text) == 2 else f"\\u{ord(text):04x}"


def _quote(text: str) -> str:
    # Without surrogates, orjson (like Python's C JSON string encoder, but without its slow
    # character-by-character path for non-ASCII text) escapes exactly as JSON.stringify does: the
    # quote, the backslash, \b \t \n \f \r, other C0 controls as lowercase \u00xx, everything
    # else literal. It refuses a string holding a surrogate (not encodable as UTF-8).
    try:
        return orjson.dumps(text).decode()
    except orjson.JSONEncodeError:
        pass
    # Lone surrogates: str.replace and re.sub (C), backslashes first so later escapes stay single.
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    if _CONTROL.search(escaped):
        escaped = _CONTROL.sub(_escape_control, escaped)
    if _SURROGATE.search(escaped):
        escaped = _SURROGATE_OR_PAIR.sub(_escape_surrogate, escaped)
    return '"' + escaped + '"'


def _flat_object_json(obj: dict[Any, Any]) -> str | None:
    """`JSON.stringify` of a dict whose keys are not array indices and whose values are strings,
    safe integers, booleans or null (most tool-call arguments), in one orjson call: for these
    orjson writes exactly what JSON.stringify does (insertion order, the same escaping). None for
    anything else (floats, nested containers, big integers, lone surrogates)."""
    encoded = _flat_object_utf8(obj)
    return None if encoded is None else encoded.decode()


def _flat_object_utf8(obj: dict[Any, Any]) -> bytes | None:
    """`_flat_object_json` as UTF-8 bytes."""
    for key, item in obj.items():
        if type(key) is not str or key[:1] in DIGITS:
            return None
        kind = type(item)
        if kind is str or item is None or kind is bool or (kind is int and -_MAX_SAFE <= item <= _MAX_SAFE):
            continue
        return None
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:  # a lone surrogate
        return None


def js_json_stringify_length(value: Any) -> int:
    """`JSON.stringify(value).length` in UTF-16 code units. A flat arguments object whose JSON is
    ASCII (most tool calls) is counted in its encoded bytes, without decoding them into a string:
    the chars/4 estimate of every summarized message asks this once per tool call."""
    if type(value) is dict:
        encoded = _flat_object_utf8(value)
        if encoded is not None:
            return len(encoded) if encoded.isascii() else utf16_len(encoded.decode())
    text = js_json_stringify(value)
    return len(text) if text.isascii() else utf16_len(text)


def js_json_stringify(value: Any) -> str:
    """`JSON.stringify(value)` for JSON-shaped Python data (E-4): compact, JavaScript key order,
    JavaScript escaping (no ASCII escaping; U+2028/U+2029 literal; lone surrogates escaped) and
    JavaScript number formatting (`1.0` → `1`, `1e21` → `1e+21`). Non-finite numbers become `null`."""
    if type(value) is str:  # the common case first: tool arguments are mostly strings
        return _quote(value)
    if type(value) is dict:  # the next most common: a flat arguments object
        flat = _flat_object_json(value)
        if flat is not None:
            return flat
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"
        return js_number(value)
    if isinstance(value, dict):
        return "{" + ",".join(_quote(str(k)) + ":" + js_json_stringify(value[k]) for k in js_object_keys(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json_stringify(v) for v in value) + "]"
    return _quote(str(value))


def js_template_value(value: Any) -> str:
    """How `${value}` renders a JSON value inside a JavaScript template string."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_template_value(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
