"""Errors inside a stream's frames: class, message, byte offset and JSON path.

Each frame's data is one JSON document; errors the tokenizer and the dialect
decoders raise inside it are located relative to that document -- its first
byte, the ``{`` after any leading whitespace of the frame's data -- and name
the path inside it; ``frame_offset`` says where that first byte is in the
stream (for data that is not JSON: where the data starts). Errors of the
framing itself (SSE lines) count from the start of the stream and have no
``frame_offset``. Pinned here, and shown independent of the chunking, so the
per-stream tokenizer (reset for each frame) keeps them.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua import Transcoder, TranscodeError

_HEAD = b'{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":['
_OK = b'data: ' + _HEAD + b'{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'

CASES = [
    # a syntax error in the second frame: counted from that frame's "{"
    ("openai", _OK + b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"},x}]}\n\n',
     ("JsonSyntaxError", "unexpected b'x' while expecting key", 56, "$.choices[0]")),
    # leading whitespace of the data is not counted (nor a first data line that is empty)
    ("openai", _OK + b'data:    {"id":"1",]\n\n',
     ("JsonSyntaxError", "unexpected b']' while expecting key", 10, "$")),
    ("openai", _OK + b'data:\ndata:   {"id":"c",\ndata: ]\n\n',
     ("JsonSyntaxError", "unexpected b']' while expecting key", 11, "$")),
    # a document cut by the frame's end
    ("openai", _OK + b'data: {"id":"c","choices":[{"index":0\n\n',
     ("TruncatedInputError", "input ends while expecting ',' or a closing bracket", 31, "$.choices[0].index")),
    # a decoder's schema error inside the frame
    ("openai", _OK + b'data: {"id":"c","choices":[{"index":0,"delta":{"content":5}}]}\n\n',
     ("SchemaError", "expected a string for content, got number", 51, "$.choices[0].delta.content")),
    # a choice's index that is not a scalar: first (read at once) or after the content (held)
    ("openai", _OK + b'data: {"id":"c","choices":[{"index":{"a":1},"delta":{}}]}\n\n',
     ("SchemaError", "expected a scalar for index", 30, "$.choices[0].index")),
    ("openai", _OK + b'data: {"id":"c","choices":[{"delta":{"content":"x"},"index":[1]}]}\n\n',
     ("SchemaError", "expected a scalar for index", 54, "$.choices[0].index")),
    # an error raised when the frame ended (the document is whole: path "$")
    ("anthropic", b'event: x\ndata: {"index": 3}\n\n',
     ("SchemaError", "event without type", 12, "$")),  # once the frame ended: at its end
    ("anthropic", b'event: message_start\ndata: {"type":"message_start","message":{"id":"a","model":"m"}}\n\n'
                  b'data: {"type":"message_stop"}\n\ndata: {"type":"ping"}\n\n',
     ("SchemaError", "event after message_stop", 0, "$")),
    # data that is not JSON: no path
    ("openai", _OK + b'data: nope\n\n',
     ("SchemaError", "SSE data is neither a JSON object nor [DONE]: b'nope'", 0, None)),  # at the data's start
    ("anthropic", b'data: nope\n\n', ("SchemaError", "SSE data is not a JSON object: b'nope'", 0, None)),
    # invalid UTF-8 in a later frame
    ("openai", _OK + b'data: {"id":"c\xff"}\n\n',
     ("InvalidUtf8Error", "invalid UTF-8", 8, "$.id")),
    # NDJSON: each line is a document
    ("ollama", b'{"model":"m","message":{"role":"assistant","content":"a"},"done":false}\n'
               b'  {"model":"m","message":{"content":tru}}\n',
     ("JsonSyntaxError", "unexpected b'}' inside true", 37, "$.message.content")),
    ("ollama", b'{"model":"m","message":{"role":"assistant","content":"a"},"done":false}\n{"model":"m","done":\n',
     ("TruncatedInputError", "input ends while expecting value", 20, "$.done")),
]

# framing: offsets from the start of the stream (the field name's 65th byte)
FRAMING_CASE = ("openai", _OK + b"n" * 70 + b": x\n",
                ("BudgetExceededError", "SSE field name too long", len(_OK) + 64, None))


def _error(source: str, body: bytes, cuts=()) -> TranscodeError | None:
    t = Transcoder(source, "openai", kind="stream")
    last = 0
    try:
        for cut in sorted(set(cuts)) + [len(body)]:
            t.feed(body[last:cut])
            last = cut
        t.close()
    except TranscodeError as exc:
        return exc
    return None


def _outcome(source: str, body: bytes, cuts=()) -> tuple | None:
    exc = _error(source, body, cuts)
    return exc and (type(exc).__name__, exc.reason, exc.offset, exc.path)


@pytest.mark.parametrize("source,body,expected", CASES + [FRAMING_CASE])
def test_stream_error_location(source, body, expected):
    assert _outcome(source, body) == expected


@given(st.data())
def test_stream_error_location_independent_of_cuts(data):
    for source, body, expected in CASES:
        cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=6))
        assert _outcome(source, body, cuts) == expected


# Where each frame's JSON (or non-JSON data) starts in the stream: the last frame of each case.
FRAME_STARTS = [
    len(_OK) + 6, len(_OK) + 9, len(_OK) + 14, len(_OK) + 6, len(_OK) + 6, len(_OK) + 6,
    len(_OK) + 6, 15, 123, len(_OK) + 6, 6, len(_OK) + 6, 74, 72,
]


@pytest.mark.parametrize("case,frame_start", list(zip(CASES, FRAME_STARTS)))
def test_stream_error_names_where_its_frame_starts(case, frame_start):
    source, body, (_, _, offset, _) = case
    exc = _error(source, body)
    assert exc.frame_offset == frame_start
    assert f"stream byte {frame_start}" in str(exc)
    if offset is not None and b"\ndata:" not in body[frame_start:]:  # a one-line frame: offsets add up
        bad = body[frame_start + offset:frame_start + offset + 1]
        assert bad in (b"x", b"]", b"5", b"{", b"[", b"\xff", b"}", b"\n", b"\"", b"0", b"i", b"n"), bad


def test_framing_errors_have_no_frame_offset():
    exc = _error(*FRAMING_CASE[:2])
    assert exc.frame_offset is None and exc.offset == len(_OK) + 64


# Every framing limit (README "Where errors are"): a BudgetExceededError at the byte that broke
# it -- in the stream (field lines), or in the frame's data with the frame's start -- at every cut.
_LIMIT = 64  # Options.max_value_bytes: max_line
_LIMIT_CASES = [
    ("openai", _OK + b"n" * 70 + b": x\n", "SSE field name too long", len(_OK) + 64, None),
    ("openai", _OK + b"event: " + b"e" * 70 + b"\n", f"SSE field line longer than max_line ({_LIMIT})",
     len(_OK) + _LIMIT, None),
    ("anthropic", b"id: " + b"i" * 70 + b"\n", f"SSE field line longer than max_line ({_LIMIT})", _LIMIT, None),
    ("openai", _OK + b"retry: " + b"1" * 70 + b"\n", f"SSE field line longer than max_line ({_LIMIT})",
     len(_OK) + _LIMIT, None),
    ("openai", _OK + b"data:  " + b"z" * 70 + b"\n\n", f"non-JSON frame data longer than max_line ({_LIMIT})",
     _LIMIT, len(_OK) + 7),
    ("anthropic", b"data: " + b"z" * 70 + b"\n\n", f"non-JSON frame data longer than max_line ({_LIMIT})",
     _LIMIT, 6),
    ("ollama", b"  " + b"z" * 70 + b"\n", f"non-JSON frame data longer than max_line ({_LIMIT})", _LIMIT, 2),
]


@pytest.mark.parametrize("source,body,reason,offset,frame_offset", _LIMIT_CASES)
def test_every_framing_limit_is_a_budget_error_at_its_byte(source, body, reason, offset, frame_offset, backend):
    from interlingua import BudgetExceededError, Options
    for size in (1, 3, 7, len(body)):
        t = Transcoder(source, source, kind="stream", options=Options(max_value_bytes=_LIMIT))
        with pytest.raises(BudgetExceededError) as info:
            for i in range(0, len(body), size):
                t.feed(body[i:i + size])
            t.close()
        exc = info.value
        assert (exc.reason, exc.dialect, exc.offset, exc.frame_offset, exc.path) \
            == (reason, source, offset, frame_offset, None), size
