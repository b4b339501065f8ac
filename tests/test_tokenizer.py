"""The push tokenizer against json.loads and ijson (oracles), and its fragment rules."""

from __future__ import annotations

import io
import json

import ijson
import pytest
from hypothesis import given, strategies as st

from interlingua import json as tok
from interlingua.errors import (
    ControlCharacterError, InvalidUtf8Error, JsonSyntaxError, NestingTooDeepError, TranscodeError, TruncatedInputError,
)
from interlingua.jsonwriter import RawValue
from fuzz import cut  # (one way to cut a body at given points, for every test)

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
                  or b"NaN" in data or b"Infinity" in data or b"\xed" in data
                  or (oracle_ok and _has_duplicate_keys(data)))
    try:
        text, _ = reserialise(cut(data, points))
        ours_ok = True
    except TranscodeError:
        ours_ok = False
    if not documented:
        assert ours_ok == oracle_ok, data
    if ours_ok and oracle_ok:
        assert json.loads(text) == expected


def _has_duplicate_keys(data: bytes) -> bool:
    found = []

    def pairs(items):
        keys = [k for k, _ in items]
        found.append(len(keys) != len(set(keys)))
        return dict(items)

    json.loads(data, object_pairs_hook=pairs)
    return any(found)


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
    (b'{"a": tru}', JsonSyntaxError, 9, "$.a"),  # at the byte that breaks the literal
    (b'[nul', TruncatedInputError, 4, "$[0]"),
    (b'{"a": 1, 2}', JsonSyntaxError, 9, "$"),  # a key was due: the path names the object
    (b'{"a": 1,', TruncatedInputError, 8, "$"),
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


# -- the string scan (scanstring over the chunk read as latin-1, the regex where it fails) --

# Escape-heavy text: every escape, surrogate pairs, lone surrogates, multi-byte characters,
# backslash runs (an even run before a quote, a cut escape, a cut pair at every chunk end).
escape_heavy = st.lists(st.sampled_from(
    ["a", " ", "é", "中", "😀", "\\", "\\\\", '"', "\n", "\t", "\x01", "\x1f", "\x7f", "/",
     "\ud83d", "\ude00", "\u2028", "u", "d83d"]), max_size=30).map("".join)


def body_text(text: str, ascii_only: bool) -> str:
    """Raw (not escaped) surrogates are not UTF-8: only ``ensure_ascii`` writes them, as escapes."""
    return text if ascii_only else "".join(ch for ch in text if not "\ud800" <= ch <= "\udfff")


def fragments_of(chunks: list[bytes]) -> list[bytes]:
    pieces = []

    def handler(kind, value, offset):
        if kind in (tok.STRING, tok.STRING_OPEN, tok.STRING_PART, tok.STRING_CLOSE):
            pieces.append(value)

    tokenizer = tok.Tokenizer(handler)
    for chunk in chunks:
        tokenizer.feed(chunk)
    tokenizer.close()
    return pieces


@given(escape_heavy, st.lists(st.integers(0, 10**6), max_size=12), st.booleans())
def test_fragments_decode_on_their_own_under_any_chunking(text, points, ascii_only):
    data = json.dumps({"k": body_text(text, ascii_only)}, ensure_ascii=ascii_only).encode()
    pieces = fragments_of(cut(data, points))
    # each fragment alone (a pair split between two would decode to two lone halves)
    assert "".join(json.loads(b'"' + p + b'"') for p in pieces) == json.loads(data)["k"]
    assert len(pieces) <= len(cut(data, points))


@given(st.dictionaries(escape_heavy, escape_heavy, max_size=4), st.lists(st.integers(0, 10**6), max_size=12),
       st.booleans(), st.sampled_from([(",", ":"), (", ", ": "), None]))
def test_keys_are_decoded_like_json_loads(value, points, ascii_only, separators):
    value = {body_text(k, ascii_only): body_text(v, ascii_only) for k, v in value.items()}
    data = json.dumps(value, ensure_ascii=ascii_only, separators=separators,
                      indent=None if separators else 2).encode()
    keys = []
    tokenizer = tok.Tokenizer(lambda kind, v, offset: keys.append(v) if kind == tok.KEY else None)
    for chunk in cut(data, points):
        tokenizer.feed(chunk)
    tokenizer.close()
    assert keys == list(json.loads(data))


def _error(chunks: list[bytes]):
    tokenizer = tok.Tokenizer(lambda *a: None)
    try:
        for chunk in chunks:
            tokenizer.feed(chunk)
        tokenizer.close()
    except TranscodeError as exc:
        return type(exc), exc.offset, exc.path
    return None


@given(escape_heavy, st.sampled_from(["\x01", "\x1f", "\\q", "\\u12x4", "\\ud83d\\uzzzz", "\\\\\\x", "\n"]),
       st.booleans(), st.lists(st.integers(0, 10**6), max_size=8))
def test_string_errors_do_not_depend_on_chunking(text, bad, in_key, points):
    inner = json.dumps(text).encode("utf-8", "surrogatepass")[:-1] + bad.encode() + b'"'
    data = b'{' + inner + b': 1}' if in_key else b'{"k": [' + inner + b']}'
    whole = _error([data])
    assert whole is not None and whole[1] >= 1
    assert _error(cut(data, points)) == whole


# A syntax error names what was expected at the offending byte.
@pytest.mark.parametrize("data,message", [
    (b'{D', "unexpected b'D' while expecting first key or '}' (byte 1, at $)"),
    (b'[1 2]', "unexpected b'2' while expecting ',' or a closing bracket (byte 3, at $[0])"),
    (b'{"a" 1}', "unexpected b'1' while expecting ':' (byte 5, at $.a)"),
    (b'[1, "x" "y"]', "unexpected b'\"' while expecting ',' or a closing bracket (byte 8, at $[1])"),
    (b'[1,\x012]', "unexpected b'\\x01' while expecting value (byte 3, at $[1])"),
    (b'{"a": 1 "b": 2}', "unexpected b'\"' while expecting ',' or a closing bracket (byte 8, at $.a)"),
    (b'[}', "unexpected b'}' while expecting first value or ']' (byte 1, at $[0])"),  # where a value was due
])
def test_syntax_error_messages(data, message):
    tokenizer = tok.Tokenizer(lambda *a: None)
    with pytest.raises(JsonSyntaxError) as info:
        tokenizer.feed(data)
        tokenizer.close()
    assert str(info.value) == message


@given(json_values, st.lists(st.integers(0, 10**6), max_size=12))
def test_without_the_c_scanner_the_regex_gives_the_same_tokens(value, points):
    data = json.dumps(value, ensure_ascii=False).encode()
    chunks = cut(data, points)
    _, expected = reserialise(chunks)
    saved = tok._scanstring
    tok._scanstring = tok._regex_scanstring  # as where the _json accelerator is missing
    try:
        _, events = reserialise(chunks)
    finally:
        tok._scanstring = saved
    assert events == expected


@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_compact_and_spaced_bodies_give_the_same_tokens(separators):
    value = {"model": "m", "messages": [{"role": "user", "content": "a \"b\" é\n"}] * 3,
             "n": [1, -2.5e3, True, False, None, {}, []]}
    data = json.dumps(value, separators=separators, ensure_ascii=False).encode()
    _, events = reserialise([data])
    _, compact = reserialise([json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()])
    assert events == compact


@given(escape_heavy, st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xc3\xa9\x80", b"\xe4\xb8"]),
       st.lists(st.integers(0, 10**6), max_size=8))
def test_bad_utf8_in_a_string_under_any_chunking(text, bad, points):
    """The error is where the whole body puts it; what came before arrives as fragments that
    each decode on their own (a character cut by a chunk end, then found bad, is not delivered)."""
    inner = json.dumps(body_text(text, False), ensure_ascii=False).encode()[:-1]
    data = b'{"k": ' + inner + bad + b'x"}'
    pieces = []

    def handler(kind, value, offset):
        if kind in (tok.STRING, tok.STRING_OPEN, tok.STRING_PART, tok.STRING_CLOSE):
            pieces.append(value)

    tokenizer = tok.Tokenizer(handler)
    with pytest.raises(InvalidUtf8Error) as info:
        for chunk in cut(data, points):
            tokenizer.feed(chunk)
        tokenizer.close()
    assert (info.value.offset, info.value.path) == _error([data])[1:]
    delivered = "".join(json.loads(b'"' + p + b'"') for p in pieces)
    try:
        (inner + bad).decode()
    except UnicodeDecodeError as exc:
        valid = (inner + bad)[:exc.start]  # the string's text up to the bad sequence
    assert json.loads(valid + b'"').startswith(delivered)


@pytest.mark.parametrize("data,offset", [
    (b'[1,\x012]', 3), (b'{"a":\x0b1}', 5), (b'[\x0c]', 1), (b'[1 ,\x00 2]', 4), (b'{"a" :\x1f1}', 6),
])
def test_only_json_whitespace_is_skipped(data, offset):
    """A control byte outside a string is an error wherever the chunks are cut."""
    for at in range(len(data) + 1):
        assert _error([data[:at], data[at:]])[:2] == (JsonSyntaxError, offset)


def _feed_all(tokenizer, chunks):
    """Feed every chunk and close; the error as (class, reason, offset, path), or None."""
    try:
        for chunk in chunks:
            tokenizer.feed(chunk)
        tokenizer.close()
    except TranscodeError as exc:
        return (type(exc), exc.reason, exc.offset, exc.path)
    return None


def _tokens_of(tokenizer_and_log, chunks):
    tokenizer, log = tokenizer_and_log
    del log[:]
    error = _feed_all(tokenizer, chunks)
    return list(log), error


@given(st.lists(st.tuples(json_values | st.binary(max_size=12), st.integers(0, 40)), min_size=1, max_size=4))
def test_reset_is_a_fresh_tokenizer(documents):
    """One tokenizer reset between documents (a stream's frames) gives every token,
    offset, error and path a new tokenizer per document gives -- after an error too."""
    log: list = []
    reused = (tok.Tokenizer(lambda k, v, o: log.append((k, v, o))), log)
    for doc, cut in documents:
        data = doc if isinstance(doc, bytes) else json.dumps(doc, ensure_ascii=False).encode()
        chunks = [data[:cut], data[cut:]]
        fresh_log: list = []
        fresh = (tok.Tokenizer(lambda k, v, o: fresh_log.append((k, v, o))), fresh_log)
        reused[0].reset()
        assert _tokens_of(reused, chunks) == _tokens_of(fresh, chunks)


@pytest.mark.parametrize("pad", [11, 9])  # a UTF-8 character (11) or an escape (9) across the slice boundary
def test_one_large_chunk_is_scanned_in_slices(pad):
    """A chunk over the slice size gives what the same bytes in small chunks give;
    errors keep their offsets."""
    slice_size = tok._SLICE
    text = "a" * (slice_size - pad) + "\n中" + "b" * 100 + "😀" * 1000
    data = json.dumps({"k": [text, 1, text]}, ensure_ascii=False).encode()
    whole_text, whole_events = reserialise([data])
    cut_text, cut_events = reserialise(cut(data, list(range(0, len(data), 8192))))
    assert whole_text == cut_text and json.loads(whole_text) == json.loads(data)
    at = data.index(b"b")  # past the boundary
    assert at > slice_size
    for bad, cls in ((b"\xff", InvalidUtf8Error), (b"\x01", ControlCharacterError)):
        broken = data[:at] + bad + data[at + 1:]
        assert _error([broken]) == _error(cut(broken, [100, at - 3, at + 9]))
        assert _error([broken])[:2] == (cls, at)


def test_a_large_chunk_costs_memory_bounded_by_the_slice():
    """The text copies a scan makes stay within a few slices, not a multiple of the chunk."""
    import tracemalloc

    data = json.dumps({"k": "😀 é " * (1 << 20)}, ensure_ascii=False).encode()  # 8 MiB, mostly 4-byte characters
    tokenizer = tok.Tokenizer(lambda *a: None)
    tracemalloc.start()
    try:
        tokenizer.feed(data)
        tokenizer.close()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * tok._SLICE, peak  # ~7 slices here; without slices: ~4x the chunk (a UCS-4 text of it)


# -- the same result for every cut, limits included (issue 15, classes 3, 6 and 7) --

def outcome(chunks: list[bytes], **limits):
    """Coalesced tokens with offsets (strings joined, offset of their quote), and the
    error as (class, reason, offset, path) or None: what must not depend on the cut."""
    events: list = []
    open_string: list = []

    def handler(kind, value, offset):
        if kind == tok.STRING_OPEN:
            open_string[:] = [value, offset]
        elif kind == tok.STRING_PART:
            open_string[0] += value
        elif kind == tok.STRING_CLOSE:
            events.append((tok.STRING, open_string[0] + value, open_string[1]))
        else:
            events.append((kind, value, offset))

    error = _feed_all(tok.Tokenizer(handler, **limits), chunks)
    return events, error


# Documents whose keys and numbers sit around small limits, then broken: a byte changed,
# inserted or dropped anywhere (bad literals, cut escapes, bad UTF-8, missing keys).
_near_limit = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(alphabet="ké\\\"\u00e9\ud83d", max_size=10), children, max_size=4),
    max_leaves=12,
)
_breakage = st.sampled_from([b"", b"x", b"\xff", b"\\", b'"', b"\x01", b"e", b".", b"-", b",", b"t", b"nul", b"\\u12"])


@given(_near_limit, st.integers(0, 10**6), _breakage, st.booleans(), st.lists(st.integers(0, 10**6), max_size=10),
       st.integers(1, 8), st.integers(1, 10))
def test_tokens_and_errors_do_not_depend_on_the_cut(value, at, breakage, replace, points, max_key, max_number):
    """Tokens, offsets and errors (class, reason, offset, path) are the same for any
    cut -- the key and number limits included (checked on the whole key / number,
    not only on one that spans a chunk end)."""
    data = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    at %= len(data) + 1
    data = data[:at] + breakage + data[at + (1 if replace else 0):]
    limits = {"max_key_bytes": max_key, "max_number_bytes": max_number}
    whole = outcome([data], **limits)
    assert outcome(cut(data, points), **limits) == whole
    assert outcome([data[i:i + 1] for i in range(len(data))], **limits) == whole


@pytest.mark.parametrize("data,limits,offset", [
    (b'[' + b'1' * 1025 + b']', {}, 1),  # one digit over, whole or cut
    (b'{"' + b'k' * 65537 + b'": 1}', {}, 1),
    (b'{"a": 1, "' + b'k' * 9 + b'": 1}', {"max_key_bytes": 8}, 9),
    (b'{"' + b'\\n' * 5 + b'": 1}', {"max_key_bytes": 9}, 1),  # bytes between the quotes, escapes as written
])
def test_limits_hold_however_the_input_is_cut(data, limits, offset):
    from interlingua.errors import BudgetExceededError

    for chunks in ([data], cut(data, [3, 700]), [data[i:i + 1] for i in range(len(data))] if len(data) < 2000 else [data]):
        error = outcome(chunks, **limits)[1]
        assert error[0] is BudgetExceededError and error[2] == offset, error


def test_a_long_key_cut_into_bytes_costs_linear_time():
    """A key is held as the parts that came (each byte scanned once), not rescanned
    from its start at every chunk: 64 KB fed one byte at a time takes about as long
    per byte as 4 KB does (it was quadratic: ~3 s)."""
    import time

    def per_byte(size):
        data = b'{"' + b'k' * size + b'": 1}'
        tokenizer = tok.Tokenizer(lambda *a: None)
        start = time.process_time()  # (CPU time: less noise from a loaded machine)
        for i in range(len(data)):
            tokenizer.feed(data[i:i + 1])
        tokenizer.close()
        return (time.process_time() - start) / len(data)

    # Quadratic would be ~16x every time (measured: ~1x). A loaded machine can slow one
    # measurement several-fold, so the ratio must hold in one of a few rounds, not in each.
    ratios = []
    for _ in range(4):
        small = min(per_byte(4096) for _ in range(3))
        large = min(per_byte(65535) for _ in range(2))
        ratios.append(large / small)
        if ratios[-1] < 6:
            break
    assert min(ratios) < 6, ratios


@pytest.mark.parametrize("data,offset,path", [
    (b'{"a": 1, "a": 2}', 9, "$.a"),
    (b'[{"a": {"b": 1, "c": [], "b": 2}}]', 25, "$[0].a.b"),
    (b'{"a": {"x": 1}, "b": {"x": 1}, "\\u0061": 3}', 31, "$.a"),  # the same key written with an escape
])
def test_a_duplicate_key_is_refused_wherever_it_is(data, offset, path):
    """Any object, at any depth: strict consumers refuse duplicate keys, and the
    output could not be both valid and faithful with one. For any cut."""
    from interlingua.errors import DuplicateKeyError

    for chunks in ([data], [data[i:i + 1] for i in range(len(data))]):
        kind, reason, at, where = outcome(chunks)[1]
        assert (kind, at, where) == (DuplicateKeyError, offset, path), reason
    assert outcome([b'[{"a": 1}, {"a": 1}]'])[1] is None  # per object, not per document


def test_the_keys_a_tokenizer_remembers_are_bounded():
    """The keys of the open objects are kept (to find a duplicate), up to a budget."""
    from interlingua.errors import BudgetExceededError

    data = b'{' + b",".join(b'"k%d": 1' % i for i in range(200)) + b'}'
    assert outcome([data], max_seen_key_bytes=10_000)[1] is None
    error = outcome([data], max_seen_key_bytes=300)[1]
    assert error[0] is BudgetExceededError
    closed = b'[' + b",".join([b'{"kkkkkkkkkk": 1}'] * 200) + b']'  # closed objects give their budget back
    assert outcome([closed], max_seen_key_bytes=20)[1] is None
