"""The push tokenizer against json.loads and ijson (oracles), and its fragment rules."""

from __future__ import annotations

import io
import json

import ijson
import pytest
from hypothesis import given, strategies as st

from interlingua import json as tok
from interlingua.errors import (
    InvalidUtf8Error, JsonSyntaxError, NestingTooDeepError, TranscodeError, TruncatedInputError,
)
from interlingua.jsonwriter import RawValue

def json_documents(int_bound: int):
    return st.recursive(
        st.none() | st.booleans() | st.integers(-int_bound, int_bound)
        | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
        max_leaves=25,
    )


json_values = json_documents(10**20)


def reserialise(chunks: list[bytes]) -> tuple[bytes, list]:
    """Tokenize the chunks and write the tokens back as compact JSON."""
    out: list[bytes] = []
    raw = RawValue(out.append)
    events = []

    def handler(kind, value, offset):
        events.append((kind, value))
        raw.feed(kind, value, offset)

    tokenizer = tok.Tokenizer(handler)
    for chunk in chunks:
        tokenizer.feed(chunk)
    tokenizer.close()
    return b"".join(out), events


def cut(data: bytes, points: list[int]) -> list[bytes]:
    points = sorted({p % (len(data) + 1) for p in points})
    pieces, last = [], 0
    for p in points:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


@given(json_values, st.lists(st.integers(0, 10**6), max_size=12), st.booleans(), st.booleans())
def test_agrees_with_json_loads_on_valid_documents(value, points, ascii_only, indent):
    data = json.dumps(value, ensure_ascii=ascii_only, indent=1 if indent else None).encode()
    text, _ = reserialise(cut(data, points))
    assert json.loads(text) == json.loads(data)


@given(json_values, st.lists(st.integers(0, 10**6), max_size=12))
def test_events_do_not_depend_on_chunking(value, points):
    data = json.dumps(value, ensure_ascii=False).encode()
    _, whole = reserialise([data])
    _, pieces = reserialise(cut(data, points))

    def coalesce(events):
        out, text = [], None
        for kind, value in events:
            if kind == tok.STRING_OPEN:
                text = value
            elif kind == tok.STRING_PART:
                text += value
            elif kind == tok.STRING_CLOSE:
                out.append((tok.STRING, text + value))
            else:
                out.append((kind, value))
        return out

    assert coalesce(pieces) == coalesce(whole)


@given(st.binary(max_size=40), st.lists(st.integers(0, 100), max_size=4))
def test_rejects_exactly_what_json_loads_rejects(data, points):
    """Documented differences: json.loads (bytes) also takes a UTF-8 BOM, UTF-8-encoded
    surrogates (it decodes with surrogatepass), UTF-16/32 bodies, NaN/Infinity."""
    try:
        expected = json.loads(data)
        oracle_ok = True
    except (ValueError, UnicodeDecodeError, RecursionError):
        oracle_ok = False
    documented = (data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:4]
                  or b"NaN" in data or b"Infinity" in data or b"\xed" in data)
    try:
        text, _ = reserialise(cut(data, points))
        ours_ok = True
    except TranscodeError:
        ours_ok = False
    if not documented:
        assert ours_ok == oracle_ok, data
    if ours_ok and oracle_ok:
        assert json.loads(text) == expected


@given(json_documents(2**62))  # yajl overflows past 64-bit integers
def test_agrees_with_ijson(value):
    data = json.dumps(value).encode()
    _, events = reserialise([data])
    expected = list(ijson.parse(io.BytesIO(data), use_float=True))
    kinds = [k for k, _ in events if k != tok.KEY]
    ijson_kinds = [e for _, e, _ in expected if e != "map_key"]
    names = {tok.OBJECT_START: "start_map", tok.OBJECT_END: "end_map", tok.ARRAY_START: "start_array",
             tok.ARRAY_END: "end_array", tok.STRING: "string", tok.NUMBER: "number", tok.TRUE: "boolean",
             tok.FALSE: "boolean", tok.NULL: "null"}
    assert [names[k] for k in kinds] == [("number" if e in ("integer", "double") else e) for e in ijson_kinds]


def test_long_string_arrives_as_fragments_and_nothing_is_held_whole():
    text = ("é\\\"x" * 50000).encode()
    data = b'{"s": "' + text + b'"}'
    sizes = []

    def handler(kind, value, offset):
        if kind in (tok.STRING_OPEN, tok.STRING_PART, tok.STRING_CLOSE):
            sizes.append(len(value))

    tokenizer = tok.Tokenizer(handler)
    for i in range(0, len(data), 4096):
        tokenizer.feed(data[i:i + 4096])
    tokenizer.close()
    assert len(sizes) > 40 and max(sizes) <= 4096 + 12


@pytest.mark.parametrize("cut_at", range(1, 13))
def test_fragments_never_split_escapes_utf8_or_surrogate_pairs(cut_at):
    data = '{"s": "a\\u00e9b\\ud83d\\ude00c中d\\n"}'.encode()
    pieces = []

    def handler(kind, value, offset):
        if kind in (tok.STRING, tok.STRING_OPEN, tok.STRING_PART, tok.STRING_CLOSE):
            pieces.append(value)

    tokenizer = tok.Tokenizer(handler)
    for i in range(0, len(data), cut_at):
        tokenizer.feed(data[i:i + cut_at])
    tokenizer.close()
    decoded = "".join(json.loads(b'"' + p + b'"') for p in pieces)
    assert decoded == "aéb😀c中d\n"


@pytest.mark.parametrize("data,error,offset,path", [
    (b'{"a": [1, 2,]}', JsonSyntaxError, 12, "$.a[2]"),
    (b'{"a": tru}', JsonSyntaxError, 6, "$.a"),
    (b'{"a": 01}', JsonSyntaxError, 7, "$.a"),
    (b'{"a": "\xc3\x28"}', InvalidUtf8Error, 7, "$.a"),
    (b'{"a": [', TruncatedInputError, 7, "$.a"),
    (b'', TruncatedInputError, 0, "$"),
    (b'[' * 129 + b']' * 129, NestingTooDeepError, 128, None),
])
def test_errors_name_offset_and_path(data, error, offset, path):
    tokenizer = tok.Tokenizer(lambda *a: None, max_depth=128)
    with pytest.raises(error) as info:
        tokenizer.feed(data)
        tokenizer.close()
    assert info.value.offset == offset
    if path is not None:
        assert info.value.path == path


def test_member_name_cache_keeps_only_short_names():
    """Encoders write the same names for every message (cached); input keys may be
    long (up to max_key_bytes): those are never kept, so the cache stays small."""
    from interlingua.jsonwriter import _short_name, key_bytes

    assert key_bytes("content") == b'"content"'
    assert key_bytes('a "quoted" é') == b'"a \\"quoted\\" \xc3\xa9"'
    before = _short_name.cache_info().currsize
    for i in range(50):
        name = f"{i}" + "k" * 5000
        assert key_bytes(name) == b'"' + name.encode() + b'"'
    assert _short_name.cache_info().currsize == before
    assert _short_name.cache_info().maxsize <= 256
