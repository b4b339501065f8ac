"""The native small JSON value (native/src/value.rs) and the payload helpers of
canonical.rs against Python: ``json.loads`` / ``decoding._data`` / ``decoding._scalar``
then ``jsonwriter.dumps``, ``canonical.decode_escaped``, ``canonical.unescape_json_text``
and ``jsonwriter.RawValue`` -- the same bytes, or the same error (class and message).
"""

from __future__ import annotations

import json

from hypothesis import example, given, strategies as st

from interlingua import canonical, decoding, jsonwriter
from interlingua import json as pyjson
from interlingua.backend import native_module

from .differential import cut_points, error_facts, feeds, json_documents, json_values

native = native_module()

# -- inputs -----------------------------------------------------------------------

#: number texts the JSON grammar allows: big ints, long fractions, exponents near and past the limits
number_texts = st.from_regex(r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)
float_texts = st.floats(allow_nan=False, allow_infinity=False).map(repr) | st.sampled_from(
    ["1e16", "1e15", "9999999999999998.0", "0.0001", "0.00001", "1e400", "-1e400", "1e-400", "5e-324",
     "2.2250738585072014e-308", "1.7976931348623157e308", "-0.0", "-0", "0.1e1", "123456789012345678e-3"])
#: a string's escapes: simple ones, \u of every kind, lone and paired surrogates, raw non-ASCII
escapes = st.sampled_from([r"\"", r"\\", r"\/", r"\b", r"\f", r"\n", r"\r", r"\t", r"\u0000", r"\u001f", r"\u007f",
                           r"\u00e9", r"\u2028", r"\uFFFF", r"\ud83d\ude00", r"\ud800", r"\udfff", r"\uDBFF\uDFFF",
                           r"\ud800\ud800", "é", "世", "😀", "\x7f", "a", " "])
escaped_strings = st.lists(escapes, max_size=8).map("".join)


@st.composite
def documents_with_surrogates(draw) -> bytes:
    """A JSON document with escaped strings (keys and values), some lone surrogates among them."""
    def build(depth: int) -> str:
        kind = draw(st.sampled_from(["str", "num", "lit", "arr", "obj"] if depth < 3 else ["str", "num", "lit"]))
        if kind == "str":
            return '"' + draw(escaped_strings) + '"'
        if kind == "num":
            return draw(number_texts | float_texts)
        if kind == "lit":
            return draw(st.sampled_from(["true", "false", "null"]))
        n = draw(st.integers(0, 3))
        if kind == "arr":
            return "[" + ",".join(build(depth + 1) for _ in range(n)) + "]"
        keys = draw(st.lists(escaped_strings, min_size=n, max_size=n, unique=True))
        return "{" + ",".join(f'"{k}":{build(depth + 1)}' for k in keys) + "}"
    return build(0).encode("utf-8")


def python_roundtrip(raw: bytes, data: bool):
    try:
        value = decoding._data(raw) if data else json.loads(raw)
    except Exception as exc:  # noqa: BLE001 - the error is the result
        return None, exc
    return jsonwriter.dumps(value), None


def native_roundtrip(raw: bytes, data: bool):
    try:
        return native.value_roundtrip(raw, data=data), None
    except Exception as exc:  # noqa: BLE001
        return None, exc


def check_roundtrip(raw: bytes) -> None:
    for data in (False, True):
        n_out, n_err = native_roundtrip(raw, data)
        p_out, p_err = python_roundtrip(raw, data)
        assert (n_out, error_facts(n_err)) == (p_out, error_facts(p_err)), (raw, data)


# -- value: loads / _data, then dumps -----------------------------------------------

@given(json_documents())
def test_documents(raw):
    check_roundtrip(raw)


@given(documents_with_surrogates())
@example(b'{"\\ud800":"\\u00e9"}')
@example(b'["\\ud83d\\ude00\\u007f","\\udc00"]')
def test_escapes_and_lone_surrogates(raw):
    check_roundtrip(raw)


@given(number_texts | float_texts)
@example("1e16")
@example("0.00001")
def test_numbers(text):
    check_roundtrip(text.encode())


@given(json_values)
def test_python_values_written_back(value):
    """dumps of data as Python made it (ints of any size, floats of every magnitude, any text)."""
    check_roundtrip(json.dumps(value).encode())
    check_roundtrip(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@given(escaped_strings)
def test_scalars(escaped):
    cases = [(pyjson.STRING, escaped.encode("utf-8"))] + [(kind, None) for kind in (pyjson.TRUE, pyjson.FALSE, pyjson.NULL)]
    for kind, value in cases:
        try:
            python = jsonwriter.dumps(decoding._scalar(kind, value)), None
        except Exception as exc:  # noqa: BLE001
            python = None, exc
        try:
            ours = native.value_scalar(kind, value), None
        except Exception as exc:  # noqa: BLE001
            ours = None, exc
        assert (ours[0], error_facts(ours[1])) == (python[0], error_facts(python[1])), (kind, value)


@given(number_texts | float_texts)
def test_number_scalars(text):
    assert native.value_scalar(pyjson.NUMBER, text.encode()) == jsonwriter.dumps(decoding._scalar(pyjson.NUMBER, text.encode()))


# -- canonical: decode_escaped, unescape_json_text ------------------------------------

@given(escaped_strings)
@example(r"\ud800\n\udfff")
def test_decode_escaped_and_unescape_json_text(escaped):
    payload = escaped.encode("utf-8")
    assert native.decode_escaped(payload) == canonical.decode_escaped(payload)
    assert native.unescape_json_text(payload) == canonical.unescape_json_text(payload)


@given(json_values)
def test_unescape_json_text_of_arguments(value):
    """Tool-call arguments: compact JSON inside a JSON string, unescaped back to the JSON."""
    payload = canonical.escape_raw_json(jsonwriter.dumps(value))
    assert native.unescape_json_text(payload) == canonical.unescape_json_text(payload)


# -- jsonwriter.RawValue ------------------------------------------------------------

def python_raw_value(data: bytes, cuts):
    parts, complete_at = [], []
    raw = jsonwriter.RawValue(parts.append)

    def on_token(kind, value, offset):
        if raw.feed(kind, value, offset):
            complete_at.append(sum(map(len, parts)))

    tokenizer = pyjson.Tokenizer(on_token)
    try:
        for piece in feeds(data, cuts):
            tokenizer.feed(piece)
        tokenizer.close()
    except Exception as exc:  # noqa: BLE001
        return b"".join(parts), complete_at, exc
    return b"".join(parts), complete_at, None


@given(st.data(), json_documents() | documents_with_surrogates())
def test_raw_value_cut_anywhere(data, document):
    cuts = data.draw(cut_points(document))
    text, complete_at, error = native.raw_value_text(document, cuts)
    p_text, p_complete_at, p_error = python_raw_value(document, cuts)
    assert (text, complete_at, error_facts(error)) == (p_text, p_complete_at, error_facts(p_error))
