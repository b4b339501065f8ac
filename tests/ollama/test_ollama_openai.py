"""ollama <-> openai, both ways, from bodies the official clients send."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from interlingua import LossError, Options
from ollama_helpers import JPEG_HEAD, PNG_1PX, capture_ollama, capture_openai, run, texts_of
from test_ollama_request import full_client_body

REASONING = Options(openai_reasoning_field="reasoning_content")
SIZES = (1, 7, 1 << 20)


def drop(body: dict, *paths: str) -> dict:
    body = copy.deepcopy(body)
    for path in paths:
        *parents, last = path.split(".")
        node = body
        for p in parents:
            node = node[p]
        node.pop(last, None)
    return body


def image_bytes_of_ollama(body: dict) -> list[bytes]:
    return [base64.b64decode(i) for m in body["messages"] for i in m.get("images", [])]


def image_bytes_of_openai(body: dict) -> list[bytes]:
    out = []
    for m in body["messages"]:
        if isinstance(m.get("content"), list):
            for part in m["content"]:
                if part["type"] == "image_url":
                    out.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return out


@pytest.mark.parametrize("size", SIZES)
def test_ollama_client_body_to_openai_and_back(size):
    body = full_client_body()
    openai_body, losses1 = run(body, "ollama", "openai", size, REASONING)
    back, losses2 = run(openai_body, "openai", "ollama", size, REASONING)
    assert {(l.path, l.reason.rsplit(" has no ", 1)[1]) for l in losses1} == {
        ("$.options.top_k", "such parameter"), ("$.options.num_ctx", "such field"),
        ("$.options.repeat_penalty", "such field"), ("$.keep_alive", "such field")}
    # the openai encoder names the schema; ollama cannot carry the name
    assert [(l.path, l.reason) for l in losses2] == [
        ("$.response_format.json_schema.name", "response_format.json_schema.name: ollama has no field for it")]
    original = json.loads(body)
    expected = drop(original, "keep_alive", "options.top_k", "options.num_ctx", "options.repeat_penalty")
    assert json.loads(back) == expected  # everything else survives, bit for bit
    out = json.loads(openai_body)
    assert image_bytes_of_openai(out) == [PNG_1PX, JPEG_HEAD]
    assert texts_of(body, "ollama") == texts_of(back, "ollama")


def test_ollama_to_openai_shapes():
    body = full_client_body()
    out = json.loads(run(body, "ollama", "openai", 3, REASONING)[0])
    user = out["messages"][1]
    assert user["content"][0] == {"type": "text", "text": "What is in these images? ü"}
    assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assistant = out["messages"][2]
    assert assistant["reasoning_content"] == "user wants a sum"
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_ollama_2_0", "call_ollama_2_1"]
    assert json.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {"a": "x\"y", "b": [1, {"c": None}]}
    assert [m.get("tool_call_id") for m in out["messages"][3:5]] == ["call_ollama_2_0", "call_ollama_2_1"]
    assert out["max_completion_tokens"] == 128 and out["stop"] == ["\n\n"]
    assert out["reasoning_effort"] == "high"
    assert out["stream"] is False


def test_ollama_thinking_without_reasoning_field_is_a_recorded_loss():
    body = full_client_body()
    out, losses = run(body, "ollama", "openai")
    assert "reasoning_content" not in out.decode()
    assert any(l.path == "$.messages[2]" and l.reason.startswith("thinking: openai has no reasoning field")
               for l in losses)


def openai_client_body() -> bytes:
    png = base64.b64encode(PNG_1PX).decode()
    return capture_openai(
        model="gpt-4o",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                {"type": "text", "text": "second"}]},
            {"role": "assistant", "content": "calling",
             "tool_calls": [{"id": "call_abc", "type": "function",
                             "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"},
            {"role": "user", "content": "and now?"},
        ],
        tools=[{"type": "function", "function": {"name": "weather", "description": "Weather",
                                                 "parameters": {"type": "object"}}}],
        max_tokens=50, stop="END", temperature=0.5, response_format={"type": "json_object"},
        reasoning_effort="low", seed=3,
    )


@pytest.mark.parametrize("size", SIZES)
def test_openai_client_body_to_ollama(size):
    body = openai_client_body()
    out, losses = run(body, "openai", "ollama", size)
    o = json.loads(out)
    # the images stream after the text; text after an image goes on in a following message
    assert o["messages"][1] == {"role": "user", "content": "first",
                                "images": [base64.b64encode(PNG_1PX).decode()]}
    assert o["messages"][2] == {"role": "user", "content": "second"}
    # the current ollama API carries the ids: id on the call, tool_call_id on the result
    assert o["messages"][3]["tool_calls"] == [{"id": "call_abc",
                                               "function": {"name": "weather", "arguments": {"city": "Paris"}}}]
    assert o["messages"][4] == {"role": "tool", "content": "sunny", "tool_name": "weather",
                                "tool_call_id": "call_abc"}
    assert o["options"] == {"num_predict": 50, "stop": ["END"], "temperature": 0.5, "seed": 3}
    assert o["format"] == "json" and o["think"] == "low" and o["stream"] is False
    assert sorted(l.reason for l in losses) == [
        "user text after an image: ollama has no text after images in a message; moved to a following message"]


def test_openai_to_ollama_and_back_keeps_text_and_images():
    body = openai_client_body()
    ollama_body, _ = run(body, "openai", "ollama")
    back, losses = run(ollama_body, "ollama", "openai")
    b, o = json.loads(back), json.loads(body)
    assert image_bytes_of_openai(b) == image_bytes_of_openai(o) == [PNG_1PX]
    # the ids go through ollama and back; arguments compare as JSON
    assert b["messages"][3]["tool_calls"][0]["id"] == "call_abc"
    assert b["messages"][4]["tool_call_id"] == "call_abc"
    assert json.loads(b["messages"][3]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert b["messages"][1]["content"][0] == {"type": "text", "text": "first"}
    assert b["messages"][2]["content"] == [{"type": "text", "text": "second"}]
    assert b["max_completion_tokens"] == 50 and b["stop"] == ["END"] and b["reasoning_effort"] == "low"
    assert losses == []


def test_http_image_url_is_a_recorded_loss_never_fetched():
    body = capture_openai(model="m", messages=[{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}])
    out, losses = run(body, "openai", "ollama")
    assert json.loads(out)["messages"] == [{"role": "user", "content": "look"}]
    assert len(losses) == 1 and "not fetched" in losses[0].reason
    with pytest.raises(LossError):
        run(body, "openai", "ollama", options=Options(strict=True))


def test_openai_sections_ollama_cannot_carry_are_recorded():
    body = json.dumps({"model": "m", "messages": [
        {"role": "developer", "content": "dev"},
        {"role": "user", "content": [{"type": "file", "file": {"file_data": "data:application/pdf;base64,AAAA"}},
                                     {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]},
        {"role": "assistant", "refusal": "no"}],
        "tool_choice": "required", "parallel_tool_calls": False, "store": True}).encode()
    out, losses = run(body, "openai", "ollama")
    reasons = " | ".join(l.reason for l in losses)
    for what in ("developer role", "file part", "input_audio part", "refusal", "tool_choice:",
                 "parallel_tool_calls:", "store: ollama has no such field"):
        assert what in reasons, what
    assert json.loads(out)["messages"][0] == {"role": "system", "content": "dev"}


def test_think_true_becomes_openai_default_effort_without_loss():
    body = capture_ollama(model="m", messages=[{"role": "user", "content": "hi"}], think=True)
    out, losses = run(body, "ollama", "openai")
    assert json.loads(out)["reasoning_effort"] == "medium"  # openai/controls.py reasoning_effort
    assert losses == []
