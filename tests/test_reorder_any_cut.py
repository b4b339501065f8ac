"""What is held for reordering is a property of the body, not of where it was cut: a table of
bodies mixing tool calls, tool results, images and out-of-order members (each also with its
keys sorted), from every dialect into every dialect, gives one reorder report at every cut.

Whole, a block's payload is often one fragment; in pieces its first fragment goes out as it
comes. A block's first event used to wait in its builder until the block closed when it was
also the last, so a hold that ends when the next message begins (an encoder's member order)
overlapped the decoder's holds whole and not in pieces (rpt/ollama-result-images-any-cut)."""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder, TranscodeError

PNG = "iVBORw0KGgoAAAANSUhEUg=="
JPEG = "/9j/4AAQSkZJRgABAQAAAQABAAD"
CUTS = (1, 2, 3, 7, 13, 64, None)  # None: whole

_CALL = {"function": {"name": "f", "arguments": {"a": 1}}}
_CALL_ID = {"function": {"name": "g", "arguments": {"a": 1}}, "id": "c1"}
OLLAMA = {
    "call, result with image": [
        {"role": "assistant", "content": "", "tool_calls": [_CALL]},
        {"role": "tool", "content": "r", "images": [PNG]}],
    "user with call, result with image": [
        {"role": "user", "content": "q", "tool_calls": [_CALL]},
        {"role": "tool", "content": "r", "images": [PNG]}],
    "text and calls, results with images and links": [
        {"role": "assistant", "content": "hello there", "tool_calls": [_CALL_ID, _CALL]},
        {"role": "tool", "content": "r2", "tool_call_id": "c1"},
        {"role": "tool", "content": "result text", "images": [PNG, JPEG], "tool_name": "f"}],
    "result links after its image": [
        {"role": "assistant", "tool_calls": [_CALL_ID]},
        {"role": "tool", "content": "r", "images": [PNG], "tool_name": "g", "tool_call_id": "c1"}],
    "result with an extension, image and thinking": [
        {"role": "assistant", "content": "a", "tool_calls": [_CALL]},
        {"role": "tool", "content": "rr", "x": 1, "images": [PNG], "thinking": "t"}],
    "user image after an extension": [
        {"role": "user", "content": "look", "y": [1], "images": [PNG]},
        {"role": "assistant", "content": "ok", "thinking": "hm"}],
    "result of only an image": [
        {"role": "assistant", "content": "", "tool_calls": [_CALL]},
        {"role": "tool", "images": [PNG]}],
    "thinking, calls, result, user image": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "thinking": "th", "content": "c", "tool_calls": [_CALL]},
        {"role": "tool", "content": "r"},
        {"role": "user", "content": "next", "images": [PNG]}],
}
_OA_IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}
OPENAI = {
    "call, result, user image": [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
        {"role": "user", "content": [{"type": "text", "text": "see"}, _OA_IMAGE]}],
    "text and calls, results out of order": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "thinking aloud", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{\"b\":2}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "r2"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"}],
    "user image before text": [
        {"role": "user", "content": [_OA_IMAGE, {"type": "text", "text": "what"}]},
        {"role": "assistant", "content": "a png"}],
}
_AN_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
ANTHROPIC = {
    "text and call, text before a result with an image": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "text", "text": "let me"},
                                          {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
        {"role": "user", "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": "t1",
                                     "content": [{"type": "text", "text": "r"}, _AN_IMAGE]}]}],
    "result, then image and text": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}, _AN_IMAGE,
                                     {"type": "text", "text": "and"}]}],
}
_TOP = {"ollama": {"model": "m", "stream": False}, "openai": {"model": "m"},
        "anthropic": {"model": "m", "max_tokens": 5, "system": "s"}}


def _sorted(value):
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _bodies():
    for source, table in (("ollama", OLLAMA), ("openai", OPENAI), ("anthropic", ANTHROPIC)):
        for name, messages in table.items():
            body = {**_TOP[source], "messages": messages}
            yield pytest.param(source, body, id=f"{source}: {name}")
            yield pytest.param(source, _sorted(body), id=f"{source}: {name} (keys sorted)")


def _report(source: str, target: str, body: bytes, cut: int | None):
    transcoder = Transcoder(source, target, kind="request")
    step = cut or len(body)
    try:
        for i in range(0, len(body), step):
            transcoder.feed(body[i:i + step])
        transcoder.close()
    except TranscodeError as error:
        return type(error).__name__, error.path
    return transcoder.reorder.report()


@pytest.mark.parametrize("source, body", list(_bodies()))
@pytest.mark.parametrize("target", ["ollama", "openai", "anthropic"])
def test_one_reorder_report_at_every_cut(source, body, target):
    data = json.dumps(body).encode()
    reports = {cut: _report(source, target, data, cut) for cut in CUTS}
    assert len({json.dumps(report) for report in reports.values()}) == 1, reports
