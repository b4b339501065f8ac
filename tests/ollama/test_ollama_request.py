"""Ollama request dialect: decoder + encoder, same-dialect round trips of bodies the official client sends."""

from __future__ import annotations

import base64
import json

import pytest

from interlingua import LossError, Options, SchemaError
from interlingua.canonical import Control, Section
from ollama_helpers import JPEG_HEAD, PNG_1PX, capture_ollama, chunks, events, run

SIZES = (1, 2, 7, 64, 1 << 20)


def add_two_numbers(a: int, b: int) -> int:
    """Add two numbers.

    Args:
      a: First number
      b: Second number
    """
    return a + b


def full_client_body() -> bytes:
    return capture_ollama(
        model="qwen3",
        messages=[
            {"role": "system", "content": "Be brief. \"quoted\" \\ back\nslash é 😀"},
            {"role": "user", "content": "What is in these images? ü", "images": [PNG_1PX, JPEG_HEAD]},
            {"role": "assistant", "content": "Let me add.", "thinking": "user wants a sum",
             "tool_calls": [{"function": {"name": "add_two_numbers", "arguments": {"a": 1, "b": 2}}},
                            {"function": {"name": "add_two_numbers", "arguments": {"a": "x\"y", "b": [1, {"c": None}]}}}]},
            {"role": "tool", "content": "3", "tool_name": "add_two_numbers"},
            {"role": "tool", "content": "oops", "tool_name": "add_two_numbers"},
            {"role": "user", "content": "thanks"},
        ],
        tools=[add_two_numbers, {"type": "function", "function": {
            "name": "weather", "description": "Weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string", "enum": ["Paris"]}},
                "required": ["city"]}}}],
        think="high",
        format={"type": "object", "properties": {"answer": {"type": "integer"}}},
        options={"num_predict": 128, "temperature": 0.2, "top_p": 0.9, "top_k": 40, "stop": ["\n\n"],
                 "seed": 7, "num_ctx": 8192, "repeat_penalty": 1.1, "presence_penalty": 0.5},
        keep_alive="5m",
        logprobs=True,
        top_logprobs=3,
    )


def client_bodies() -> dict[str, bytes]:
    return {
        "full": full_client_body(),
        "minimal": capture_ollama(model="m", messages=[{"role": "user", "content": "hi"}]),
        "streaming": capture_ollama(model="m", messages=[{"role": "user", "content": "hi"}], stream=True),
        "think_bool": capture_ollama(model="m", messages=[{"role": "user", "content": "hi"}], think=False,
                                     format="json"),
        "images_only": capture_ollama(model="m", messages=[{"role": "user", "images": [PNG_1PX]}]),
        "tool_calls_only": capture_ollama(model="m", messages=[
            {"role": "user", "content": "add"},
            {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
            {"role": "tool", "content": "{}", "tool_name": "f"}]),
    }


@pytest.mark.parametrize("name", list(client_bodies()))
@pytest.mark.parametrize("size", SIZES)
def test_client_body_round_trip_is_json_equal(name, size):
    body = client_bodies()[name]
    out, losses = run(body, "ollama", "ollama", size)
    assert json.loads(out) == json.loads(body)
    assert losses == []


@pytest.mark.parametrize("name", list(client_bodies()))
def test_round_trip_output_is_identical_across_chunkings(name):
    body = client_bodies()[name]
    outs = {run(body, "ollama", "ollama", size)[0] for size in SIZES}
    assert len(outs) == 1


def test_decoded_events_of_the_full_client_body():
    body = full_client_body()
    evs = events(body, "ollama", 3)
    assert evs == events(body, "ollama", 1 << 20)  # chunking does not change the events
    blocks = [e for e in evs if isinstance(e, tuple)]
    sections = [(b[0], b[1]) for b in blocks]
    assert sections == [
        (Section.SYSTEM_INSTRUCTION, 0), (Section.USER_TEXT, 1), (Section.USER_IMAGE, 1), (Section.USER_IMAGE, 1),
        (Section.ASSISTANT_TEXT, 2), (Section.ASSISTANT_REASONING, 2), (Section.TOOL_CALL, 2),
        (Section.TOOL_CALL, 2), (Section.TOOL_RESULT, 3), (Section.TOOL_RESULT, 4), (Section.USER_TEXT, 5),
        (Section.TOOL_DEFINITION, -1), (Section.TOOL_DEFINITION, -1)]
    user_text, png, jpeg = blocks[1], blocks[2], blocks[3]
    assert user_text[3] == {"in_parts": True}  # text beside images is a part list elsewhere
    assert png[3] == {"source": "base64", "media_type": "image/png"}
    assert base64.b64decode(bytes(png[2])) == PNG_1PX
    assert jpeg[3]["media_type"] == "image/jpeg"
    call1, call2 = blocks[6], blocks[7]
    assert call1[3] == {"id": "call_ollama_2_0", "name": "add_two_numbers"}
    assert call2[3]["id"] == "call_ollama_2_1"
    # the payload is the escaped JSON-string form of the arguments
    assert json.loads(json.loads(b'"' + bytes(call2[2]) + b'"')) == {"a": "x\"y", "b": [1, {"c": None}]}
    # results are linked to calls by order and tool_name
    assert blocks[8][3] == {"tool_call_id": "call_ollama_2_0", "name": "add_two_numbers"}
    assert blocks[9][3] == {"tool_call_id": "call_ollama_2_1", "name": "add_two_numbers"}
    assert blocks[10][3] == {"in_parts": True}  # user text is always in_parts: images may follow
    controls = {e.name: e.value for e in evs if type(e) is Control}
    assert controls["reasoning"] == {"effort": "high"}
    assert controls["max_output_tokens"] == 128
    assert controls["stop"] == ["\n\n"]
    assert controls["response_format"]["type"] == "json_schema"
    assert controls["stream"] is False


def test_tool_results_match_by_name_out_of_order():
    body = json.dumps({"model": "m", "messages": [
        {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}},
                                             {"function": {"name": "b", "arguments": {}}}]},
        {"role": "tool", "content": "B", "tool_name": "b"},
        {"role": "tool", "content": "A", "tool_name": "a"},
        {"role": "tool", "content": "?"}]}).encode()
    results = [e[3] for e in events(body, "ollama") if isinstance(e, tuple) and e[0] is Section.TOOL_RESULT]
    assert results == [{"tool_call_id": "call_ollama_0_1", "name": "b"},
                       {"tool_call_id": "call_ollama_0_0", "name": "a"}, {}]


def test_stream_absent_means_streaming():
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    stream = [e for e in events(body, "ollama") if type(e) is Control and e.name == "stream"]
    assert stream == [Control("stream", True, dialect="ollama")]
    out, _ = run(body, "ollama", "ollama")
    assert json.loads(out) == json.loads(body)  # nothing added for ollama
    out, _ = run(body, "ollama", "openai")
    assert json.loads(out)["stream"] is True  # openai must be told
    out, _ = run(body, "openai", "ollama")
    assert json.loads(out)["stream"] is False  # an openai body without stream does not stream


def test_sorted_keys_and_odd_shapes_round_trip():
    body = json.dumps({"model": "m", "options": {}, "tools": [], "messages": [
        {"role": "user", "content": "x", "images": []},
        {"role": "user", "content": None, "images": None, "custom": {"k": 1}},
        {"role": "assistant"},
        {"role": "narrator", "content": "once", "images": [base64.b64encode(PNG_1PX).decode()]},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"z": 1}, "index": 0,
                                                           "extra": True}, "id": "given"}]},
        {"role": "tool", "tool_name": "f"},
        {"role": "user", "tool_name": "odd", "thinking": "user thinking"},
    ]}, sort_keys=True).encode()
    for size in SIZES:
        out, losses = run(body, "ollama", "ollama", size)
        assert json.loads(out) == json.loads(body), size
        assert losses == []


def test_big_text_and_image_stream_with_bounded_holds():
    text = "ab\\\"cé😀\n" * 20000
    img = base64.b64encode(PNG_1PX + bytes(range(256)) * 400).decode()
    body = json.dumps({"model": "m", "stream": True, "messages": [
        {"role": "assistant", "content": text},
        {"role": "user", "images": [img]}]}).encode()
    from interlingua import Transcoder
    t = Transcoder("ollama", "ollama")
    out = b""
    for piece in chunks(body, 8192):
        out += t.feed(piece)
    assert len(out) > len(body) // 2  # output flowed while the body arrived
    out += t.close()
    assert json.loads(out) == json.loads(body)
    assert t.reorder.high_water < 1024  # assistant text and images stream, nothing big is held


def test_user_text_streams_whatever_follows():
    """User text is not held to learn whether images follow (it is always in_parts)."""
    text = "x" * 50000
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text, "images": []}]}).encode()
    from interlingua import Transcoder
    t = Transcoder("ollama", "openai")
    out = [t.feed(piece) for piece in chunks(body, 4096)]
    out.append(t.close())
    assert t.reorder.report()["high_water"] < 200
    assert sum(len(o) for o in out[:-1]) > 45000  # written while the body arrives
    assert json.loads(b"".join(out))["messages"][0]["content"] == [{"type": "text", "text": text}]


def test_arguments_must_be_an_object():
    body = b'{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}'
    with pytest.raises(SchemaError) as info:
        run(body, "ollama", "ollama")
    assert info.value.path.startswith("$.messages[0].tool_calls[0].function.arguments")


def test_message_without_role_is_an_error():
    with pytest.raises(SchemaError):
        run(b'{"model":"m","messages":[{"content":"x"}]}', "ollama", "ollama")


def test_strict_mode_fails_on_the_first_loss():
    body = capture_ollama(model="m", messages=[{"role": "user", "content": "hi"}], keep_alive=3)
    with pytest.raises(LossError):
        run(body, "ollama", "openai", options=Options(strict=True))
