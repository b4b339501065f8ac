"""A response body (not a stream) is an answer or an error, never both.

A source's error after the target's body began (an ``error`` member after a non-streaming
answer's content), or an answer after the error body was written (an ollama ``error`` before
its ``message``), raises ``SchemaError`` -- it was a cut body, or an error body with an answer
after it, and no exception, so a proxy relayed either as a 200. An error before any answer is
the target's error body; a stream ends its answer with its error event, and content after that
event raises ``SchemaError`` too (other events after it go on as before: a member after the
error is recorded as any other). The wire
cases, located in the source: ``rpt/response-error-after-answer``,
``rpt/response-answer-after-error``, ``rpt/stream-answer-after-error``. A stream's finish and usage
the target did not send because its error event ended it (after the error, or held for the end)
are recorded losses (``rpt/stream-finish-after-error``).
Every run is on the backend under test (``Encoder`` dispatches to the native one).
"""

from __future__ import annotations

import json

import pytest

from interlingua import Block, End, Encoder, Error, Finish, MessageStart, SchemaError, Section, Usage

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


def encode(target: str, kind: str, events: list, losses: list | None = None, source: str = ""):
    encoder = Encoder(target, kind=kind, source=source, **HOOKS)
    out = b""
    for event in events:
        out += encoder.feed(event)
    out += encoder.close()
    if losses is not None:
        losses.extend(encoder.losses)
    return out


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



FINISH, USAGE = Finish("end_turn"), Usage(input=3, output=2)
#: the stream's end after its error event, per target: nothing more (openai: its ``[DONE]``)
LAST_EVENT = {"openai": b"data: [DONE]\n\n", "anthropic": b"\"overloaded\"}}\n\n", "ollama": b"\"overloaded\"}\n"}
AFTER_ERROR = {
    "finish and usage after the error": [START, TEXT, ERROR, FINISH, USAGE, End()],
    "finish held for usage at the error": [START, TEXT, FINISH, ERROR, USAGE, End()],
    "usage before the error": [START, TEXT, USAGE, ERROR, FINISH, End()],
}


@pytest.mark.parametrize("source", TARGETS)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("order", AFTER_ERROR)
def test_a_stream_ends_at_its_error_event_and_records_the_finish_and_usage_it_did_not_send(target, source, order):
    """Whatever the order, the output ends with the error event, and each finish or count that is
    not in it is a loss at its source path (openai writes a finish before the error at once: no
    loss; the others hold it for their last event)."""
    losses: list = []
    out = encode(target, "stream", AFTER_ERROR[order], losses, source=source)
    assert out.endswith(LAST_EVENT[target]), out
    tail = out.split(b"overloaded", 1)[1]
    assert b"stop" not in tail and b"end_turn" not in tail and b"_tokens" not in tail and b"count" not in tail
    paths = {loss.path for loss in losses if "error event" in loss.reason}
    finish = {"openai": "$.choices[0].finish_reason", "anthropic": "$.delta.stop_reason", "ollama": "$.done_reason"}
    sent = target == "openai" and order == "finish held for usage at the error"
    assert (finish[source] in paths) != sent, (paths, losses)
    output = {"openai": "$.usage.completion_tokens", "anthropic": "$.message.usage.output_tokens", "ollama": "$.eval_count"}
    assert output[source] in paths, (paths, losses)


@pytest.mark.parametrize("message", ["overloaded", ""])
@pytest.mark.parametrize("target", TARGETS)
def test_the_official_client_reads_a_streams_error_event_as_its_api_error(target, message):
    """Whatever the message, even an empty one (the ollama client took ``{"error": ""}`` for a
    chat response and failed its validation): the error event is the client's API error."""
    import anthropic
    import ollama
    import openai
    from official_clients import read_stream

    api_error = {"openai": openai.APIError, "anthropic": anthropic.APIError, "ollama": ollama.ResponseError}
    out = encode(target, "stream", [START, TEXT, Error("server_error", message, None), End()])
    items, exc = read_stream(target, out)
    assert isinstance(exc, api_error[target]), (out, exc)
