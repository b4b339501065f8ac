"""A response body (not a stream) is an answer or an error, never both.

A source's error after the target's body began (an ``error`` member after a non-streaming
answer's content), or an answer after the error body was written (an ollama ``error`` before
its ``message``), raises ``SchemaError`` -- it was a cut body, or an error body with an answer
after it, and no exception, so a proxy relayed either as a 200. An error before any answer is
the target's error body; a stream ends its answer with its error event, and content after that
event raises ``SchemaError`` too (other events after it go on as before: a member after the
error is recorded as any other). The wire
cases, located in the source: ``rpt/response-error-after-answer``,
``rpt/response-answer-after-error``, ``rpt/stream-answer-after-error``.
Every run is on the backend under test (``Encoder`` dispatches to the native one).
"""

from __future__ import annotations

import json

import pytest

from interlingua import Block, End, Encoder, Error, MessageStart, SchemaError, Section

HOOKS = {"clock": lambda: 1767225600.5, "entropy": lambda n: bytes(n)}
TARGETS = ("openai", "anthropic", "ollama")
START = MessageStart(id="msg_1", model="m", choice=0)
TEXT = Block(Section.ASSISTANT_TEXT, 0, b"Hi", init=True, fin=True)
ERROR = Error("overloaded_error", "overloaded", 529)

ORDERS = {
    "error after the answer": [START, TEXT, ERROR, End()],
    "answer after the error": [START, ERROR, TEXT, End()],
    "answer cut by the error": [START, Block(Section.ASSISTANT_TEXT, 0, b"Hi", init=True, fin=False), ERROR, End()],
}


def encode(target: str, kind: str, events: list):
    encoder = Encoder(target, kind=kind, **HOOKS)
    out = b""
    for event in events:
        out += encoder.feed(event)
    return out + encoder.close()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("order", ORDERS)
def test_a_response_with_an_answer_and_an_error_is_refused(target, order):
    with pytest.raises(SchemaError, match="both an answer and an error"):
        encode(target, "response", ORDERS[order])


@pytest.mark.parametrize("target", TARGETS)
def test_an_error_before_any_answer_is_the_error_body(target):
    body = json.loads(encode(target, "response", [START, ERROR, End()]))
    assert "overloaded" in json.dumps(body)
    assert not ({"choices", "content", "message"} & body.keys())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("order", ["error after the answer", "answer cut by the error"])
def test_a_stream_ends_its_answer_with_the_error_event(target, order):
    out = encode(target, "stream", ORDERS[order])
    assert b"Hi" in out and b"overloaded" in out


@pytest.mark.parametrize("target", TARGETS)
def test_a_stream_refuses_an_answer_after_its_error_event(target):
    with pytest.raises(SchemaError, match="an answer after the stream's error"):
        encode(target, "stream", ORDERS["answer after the error"])

