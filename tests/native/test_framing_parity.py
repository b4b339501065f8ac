"""The native SSE / NDJSON framers against framing.py: same data pieces (bytes and
data_at), frame ends, event names, last_event_id / retry and errors, cut anywhere."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua import framing
from interlingua.backend import native_module

from .differential import error_facts, feeds

native = native_module()


class Recorder:
    def __init__(self) -> None:
        self.items = []
        self.framer = None

    def frame_data(self, data: bytes) -> None:
        self.items.append(("data", bytes(data), self.framer.data_at))

    def frame_end(self, event) -> None:
        self.items.append(("end", event, None))


def python_frames(kind: str, data: bytes, cuts, **options):
    sink = Recorder()
    framer = (framing.SseDecoder(sink, dialect="openai", **options) if kind == "sse"
              else framing.NdjsonDecoder(sink, dialect="openai"))
    sink.framer = framer
    error = None
    try:
        for piece in feeds(data, cuts):
            framer.feed(piece)
            sink.items.append(("feed", None, None))
        framer.close()
    except Exception as exc:  # noqa: BLE001 - the error is part of the result
        error = exc
    if kind == "sse":
        return sink.items, error, framer.last_event_id, framer.retry
    return sink.items, error, None, None


def check(kind: str, data: bytes, cuts, **options) -> None:
    n_items, n_error, n_id, n_retry = native.frames(kind, data, cuts, dialect="openai", **options)
    p_items, p_error, p_id, p_retry = python_frames(kind, data, cuts, **options)
    assert error_facts(n_error) == error_facts(p_error), (data, cuts)
    assert n_items == p_items, (data, cuts)
    assert (n_id, n_retry) == (p_id, p_retry), (data, cuts)


_END = st.sampled_from([b"\n", b"\r", b"\r\n"])
_NAME = st.sampled_from([b"data", b"event", b"id", b"retry", b"", b"foo", b"dat", b"x" * 70, b"event" * 13])
_VALUE = st.sampled_from([b"", b"{}", b"{\"a\":1}", b" 12", b"7", b"\xc3\xa9t\xe9", b"a\x00b", b" x" * 40,
                          b"message_start", b":", b"\xff"]) | st.binary(max_size=12).filter(
                              lambda b: b"\n" not in b and b"\r" not in b)


@st.composite
def sse_streams(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(_END))  # a blank line: dispatch
            continue
        name = draw(_NAME)
        sep = draw(st.sampled_from([b":", b": ", b"", b":  "]))
        lines.append(name + sep + (draw(_VALUE) if sep else b"") + draw(_END))
    tail = draw(st.sampled_from([b"", b"\n", b"\n\n", b"data: {}", b"event: x"]))
    head = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"]))  # a leading BOM, or part of one
    return head + b"".join(lines) + tail


@st.composite
def ndjson_streams(draw) -> bytes:
    lines = draw(st.lists(st.sampled_from([b"{}", b"{\"a\": 1}", b"", b"  ", b"\t{\"b\":2}\r", b"[1]"]),
                          max_size=8))
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@st.composite
def cuts_of(draw, data: bytes) -> list[int]:
    if draw(st.booleans()):
        return list(range(1, len(data)))
    return sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))


@given(st.data(), sse_streams(), st.sampled_from([{}, {"max_line": 16}, {"max_line": 70}]))
def test_sse_cut_anywhere(data, stream, options):
    check("sse", stream, data.draw(cuts_of(stream)), **options)


@given(st.data(), ndjson_streams())
def test_ndjson_cut_anywhere(data, stream):
    check("ndjson", stream, data.draw(cuts_of(stream)))


@given(st.data(), st.binary(max_size=60))
def test_any_bytes(data, blob):
    for kind in ("sse", "ndjson"):
        check(kind, blob, data.draw(cuts_of(blob)), **({"max_line": 20} if kind == "sse" else {}))


CASES = [
    b"data: {}\n\n", b"data:{}\r\n\r\n", b"data: {}\r\rdata: {}\r\r", b"event: delta\ndata: 1\ndata: 2\n\n",
    b": comment\ndata\n\n", b"id: 9\nretry: 30\ndata: x\n\n", b"x" * 65 + b": 1\n", b"event: " + b"e" * 40 + b"\n",
    b"data: {}", b"event: \xff\xfe\ndata: {}\n\n", b"retry: 12a\nid: a\x00\n", b"\n\n\r\n",
    "retry: 7\nretry: \u00b2\nretry: \u0663\n".encode(),  # only ASCII digits set it
    b"\xef\xbb\xbfdata: {}\n\n", b"\xef\xbb\xbf", b"\xef\xbbdata: 1\n\n", b"data: 1\n\n\xef\xbb\xbfdata: 2\n\n",
]


@given(st.sampled_from([None, "message_start", "content_block_delta", "\u00e9v"]), st.binary(max_size=40))
def test_encoders(event, data):
    assert native.sse_event(event, data) == framing.sse_event(event, data)
    assert native.sse_open(event) == framing.sse_open(event)
    assert native.ndjson_line(data) == framing.ndjson_line(data)


@pytest.mark.parametrize("stream", CASES)
def test_every_cut(stream):
    for cut in range(len(stream) + 1):
        check("sse", stream, [cut], max_line=32)
        check("ndjson", stream, [cut])
