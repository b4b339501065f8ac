"""SSE and NDJSON framing: line ends, comments, fields, multi-line data, cuts anywhere."""

from __future__ import annotations

from hypothesis import given, strategies as st

from interlingua import Decoder
from interlingua.errors import BudgetExceededError, JsonSyntaxError
from interlingua.framing import NdjsonDecoder, SseDecoder
from rpt import split_stream_events

import pytest


class Sink:
    def __init__(self):
        self.frames = []
        self.data = b""
        self.pieces = 0

    def frame_data(self, data):
        self.data += data
        self.pieces += 1

    def frame_end(self, event):
        self.frames.append((event, self.data))
        self.data = b""


def feed_cut(decoder_cls, body: bytes, cuts, **kw):
    sink = Sink()
    dec = decoder_cls(sink, **kw)
    last = 0
    for cut in sorted(set(cuts)) + [len(body)]:
        dec.feed(body[last:cut])
        last = cut
    dec.close()
    return sink, dec


SSE = (b": comment line\r\n"
       b"event: message_start\r\n"
       b"id: 7\r\n"
       b"retry: 1500\r\n"
       b"data: {\"a\":\r\n"
       b"data:1}\r\n"
       b"\r\n"
       b"event:ping\rdata: {}\r\r"
       b"data: [DONE]\n"
       b"unknown: x\n"
       b"\n"
       b"event: lonely\n\n")  # no data: not dispatched
EXPECTED = [("message_start", b'{"a":\n1}'), ("ping", b"{}"), (None, b"[DONE]")]


def test_sse_fields_comments_line_ends():
    sink, dec = feed_cut(SseDecoder, SSE, [])
    assert sink.frames == EXPECTED
    assert dec.last_event_id == "7" and dec.retry == 1500


@given(st.lists(st.integers(min_value=0, max_value=len(SSE)), max_size=12))
def test_sse_cut_anywhere(cuts):
    sink, _ = feed_cut(SseDecoder, SSE, cuts)
    assert sink.frames == EXPECTED


BOM = "\ufeff".encode()


@pytest.mark.parametrize("body", [SSE, b"data: {}\n\n", b"data: x", b"", b"\xef", b"\xef\xbb", b"\xef\xbbdata: 1\n\n"])
def test_sse_leading_bom_is_not_part_of_the_stream(body):
    """The SSE standard decodes a leading UTF-8 BOM away: the frames of BOM + body, cut
    anywhere, are the body's (its first event was dropped: the BOM began its field's name),
    their offsets the stream's; a BOM anywhere else, or a part of one, is the stream's bytes."""
    sink, _ = feed_cut(SseDecoder, body, [])
    for cut in range(len(BOM + body) + 1):
        with_bom, dec = feed_cut(SseDecoder, BOM + body, [cut, cut + 1])
        assert with_bom.frames == sink.frames, cut
    offsets = []

    class At(Sink):
        def frame_data(self, data):
            offsets.append((data, dec.data_at))
    dec = SseDecoder(At())
    dec.feed(BOM + b"data: 12\n\n")
    assert offsets == [(b"12", 9)]
    later, _ = feed_cut(SseDecoder, b"data: 1\n\n" + BOM + b"data: 2\n\n", [])
    assert later.frames == [(None, b"1")]  # (a field named BOM + "data" is no data line)


def test_sse_data_streams_without_holding_the_event():
    body = b"data: " + b"x" * 100_000 + b"\n\n"
    sink, _ = feed_cut(SseDecoder, body, range(0, len(body), 1000))
    assert sink.frames == [(None, b"x" * 100_000)]
    assert sink.pieces >= 100  # handed on chunk by chunk


def test_sse_held_field_line_is_bounded():
    with pytest.raises(BudgetExceededError):
        feed_cut(SseDecoder, b"event: " + b"e" * 5000 + b"\n", [], max_line=1000)


NDJSON = b'{"a":1}\r\n\n  {"b":\n2}\n{"c":3}'


@given(st.lists(st.integers(min_value=0, max_value=len(NDJSON)), max_size=8))
def test_ndjson_cut_anywhere(cuts):
    sink, _ = feed_cut(NdjsonDecoder, NDJSON, cuts)
    assert [d for _, d in sink.frames] == [b'{"a":1}\r', b'{"b":', b"2}", b'{"c":3}']


def test_split_stream_events():
    assert split_stream_events(b"data: {\"a\": 1}\n\ndata: [DONE]\n\n") == [(None, {"a": 1}), (None, "[DONE]")]
    assert split_stream_events(b'{"a":1}\n{"b":2}\n') == [(None, {"a": 1}), (None, {"b": 2})]


@given(st.data())
def test_stream_decoding_independent_of_cuts(data):
    from clients import anthropic_stream, openai_stream, ollama_stream
    for source, body in (("openai", openai_stream()), ("anthropic", anthropic_stream()),
                         ("ollama", ollama_stream())):
        cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=20)))
        whole = Decoder(source, kind="stream")
        ref = whole.feed(body) + whole.close()
        dec = Decoder(source, kind="stream")
        events, last = [], 0
        for cut in cuts + [len(body)]:
            events += dec.feed(body[last:cut])
            last = cut
        events += dec.close()
        assert _coalesced(events) == _coalesced(ref)


def _coalesced(events):
    from interlingua.canonical import Block
    out, text = [], b""
    for e in events:
        if type(e) is Block:
            text += e.payload
            if e.fin:
                out.append((e.section, text))
                text = b""
        else:
            out.append(e)
    return out



# Lines whole in a chunk take a one-step path, lines cut by a chunk end go
# through the states: both give the same frames, fields and errors. An error
# names the byte that broke the limit (the 65th of a field name, the
# max_line+1-th of a held line), wherever the chunks were cut.
ODD_SSE = [
    (SSE, (EXPECTED, "7", 1500)),
    (b"data\nevent\nid\nretry\ndata:\ndata:  two spaces\n\n", ([("", b"\n\n two spaces")], "", None)),
    (b"event:\x00\nid: a\x00b\nretry: x1\nretry:25\ndata:x\n\n:\n\n", ([("\x00", b"x")], None, 25)),
    (b"data: a\n" + b"n" * 70 + b": too long a field name\n", (BudgetExceededError, 8 + 64)),
    (b"data: a\n" + b"n" * 70 + b"\n", (BudgetExceededError, 8 + 64)),
    (b"data: a\nevent: " + b"e" * 80 + b"\n\n", (BudgetExceededError, 8 + 60)),
    (b"data: a\nid: " + b"e" * 80 + b"\r\n\r\n", (BudgetExceededError, 8 + 60)),
]


def _sse_outcome(body, cuts):
    try:
        sink, dec = feed_cut(SseDecoder, body, cuts, max_line=60)
    except (JsonSyntaxError, BudgetExceededError) as exc:
        return type(exc), exc.offset
    return sink.frames, dec.last_event_id, dec.retry


@pytest.mark.parametrize("body,expected", ODD_SSE)
def test_sse_whole_lines(body, expected):
    assert _sse_outcome(body, []) == expected


@given(st.data())
def test_sse_whole_lines_and_cut_lines_agree(data):
    for body, expected in ODD_SSE:
        cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(body)), max_size=6))
        assert _sse_outcome(body, cuts) == expected
