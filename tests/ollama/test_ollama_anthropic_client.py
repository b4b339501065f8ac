"""ollama <-> anthropic with the real decoders and encoders on both sides, from bodies the
official clients send: every message's text and every image's bytes survive the round trip."""

from __future__ import annotations

import base64
import json

import pytest
from anthropic.types import MessageCreateParams
from ollama import _types as ollama_types
from pydantic import TypeAdapter

from interlingua import Options
from interlingua.canonical import Section
from official_clients import anthropic_request
from ollama_helpers import JPEG_HEAD, PNG_1PX, run, texts_of
from test_ollama_request import full_client_body

ANTHROPIC_PARAMS = TypeAdapter(MessageCreateParams)


def _anthropic_image_bytes(body: dict) -> list[bytes]:
    return [base64.b64decode(block["source"]["data"]) for m in body["messages"]
            if isinstance(m["content"], list) for block in m["content"] if block["type"] == "image"]


def _ollama_image_bytes(body: dict) -> list[bytes]:
    return [base64.b64decode(i) for m in body["messages"] for i in m.get("images", [])]


def _kept_texts(body: bytes, dialect: str) -> list[str]:
    """Every text a person or model reads (reasoning excluded: anthropic needs a signature)."""
    return [text for section, text in texts_of(body, dialect)
            if section != Section.ASSISTANT_REASONING.value]


@pytest.mark.parametrize("size", [1, 7, 1 << 20])
def test_ollama_client_body_to_anthropic_and_back(size):
    body = full_client_body()
    anthropic_body, losses1 = run(body, "ollama", "anthropic", size)
    out = json.loads(anthropic_body)
    ANTHROPIC_PARAMS.validate_python(out)  # the anthropic client's own request type
    assert _anthropic_image_bytes(out) == [PNG_1PX, JPEG_HEAD]
    back, losses2 = run(anthropic_body, "anthropic", "ollama", size)
    restored = json.loads(back)
    ollama_types.ChatRequest.model_validate(restored)  # the ollama client's own request model
    assert _ollama_image_bytes(restored) == [PNG_1PX, JPEG_HEAD]
    assert _kept_texts(back, "ollama") == _kept_texts(body, "ollama")
    # tool calls and their results keep their pairing and arguments
    original = json.loads(body)
    assert [c["function"] for c in restored["messages"][2]["tool_calls"]] == \
        [c["function"] for c in original["messages"][2]["tool_calls"]]
    assert [(m["role"], m.get("tool_name")) for m in restored["messages"]] == \
        [(m["role"], m.get("tool_name")) for m in original["messages"]]
    # what anthropic cannot carry is recorded, not dropped silently: thinking without a
    # signature, keep_alive, logprobs, the ollama-only options ...
    lost = {loss.path for loss in losses1}
    assert "$.keep_alive" in lost and "$.options.num_ctx" in lost
    assert any("signature" in loss.reason or "reasoning" in loss.reason for loss in losses1)


def test_anthropic_client_body_to_ollama_and_back_keeps_texts_and_images():
    png = base64.b64encode(PNG_1PX).decode()
    body = anthropic_request(
        model="claude-x", max_tokens=100, system="Be brief.",
        messages=[
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
                {"type": "text", "text": "What is this?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {"q": "png"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a pixel"}]},
        ],
        tools=[{"name": "look", "description": "Look", "input_schema": {"type": "object"}}],
    )
    ollama_body, _ = run(body, "anthropic", "ollama", 7)
    o = json.loads(ollama_body)
    ollama_types.ChatRequest.model_validate(o)
    assert _ollama_image_bytes(o) == [PNG_1PX]
    back, _ = run(ollama_body, "ollama", "anthropic", 7, Options())
    restored = json.loads(back)
    ANTHROPIC_PARAMS.validate_python(restored)
    assert _anthropic_image_bytes(restored) == [PNG_1PX]
    assert _kept_texts(back, "anthropic") == _kept_texts(body, "anthropic")
