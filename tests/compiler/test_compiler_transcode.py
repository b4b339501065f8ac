"""The compiler layered onto the transcoder: the same matrix, encoded for every dialect.

For openai the encoded body must equal the hand-written expected payload (data).
For the other dialects the body must load into the official client's request
types, and decoding it back must give every message's role and text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anthropic.types import MessageCreateParams
from ollama import _types as ollama_types
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter
from compiler_cases import build_branch, build_request, load_case, matrix_case_paths

from interlingua import Decoder
from interlingua.canonical import Block, Section
from interlingua.compiler import chat_body, compile_chat_request, encode_compiled, run_body
from interlingua.dialects import DIALECTS

#: each official client's own request type: the body must load into it
ACCEPTS = {
    "openai": TypeAdapter(CompletionCreateParamsNonStreaming).validate_python,
    "anthropic": TypeAdapter(MessageCreateParams).validate_python,
    "ollama": ollama_types.ChatRequest.model_validate,
}

PAYLOAD_CASES = [p for p in matrix_case_paths() if "payload" in load_case(p)["expect"]]


def _case(path: Path):
    case = load_case(path)
    return case, build_branch(case["branch"]), build_request(case["request"])


@pytest.mark.parametrize("case_path", PAYLOAD_CASES, ids=lambda p: Path(p).stem)
def test_openai_body_is_the_expected_payload(case_path):
    case, branch, request = _case(case_path)
    expected = case["expect"]["payload"]
    assert json.loads(chat_body(branch, request, "openai")) == expected
    assert json.loads(run_body(branch, request, "openai")) == {**expected, "stream": True}


def _role_texts(body: bytes, dialect: str) -> list[tuple[str, str]]:
    """(role, text) per message, from decoding a body back to canonical blocks."""
    decoder = Decoder(dialect)
    # the compiled body leaves model (and anthropic's max_tokens) to the caller: a request needs them
    whole = {"model": "m", **({"max_tokens": 1} if dialect == "anthropic" else {}), **json.loads(body)}
    events = decoder.feed(json.dumps(whole).encode()) + decoder.close()
    texts: dict[int, list] = {}
    role_of = {Section.USER_TEXT: "user", Section.ASSISTANT_TEXT: "assistant"}
    for event in events:
        if type(event) is Block and event.section in role_of:
            texts.setdefault(event.message, [role_of[event.section], ""])[1] += event.text()
    return [tuple(v) for _, v in sorted(texts.items())]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case_path", PAYLOAD_CASES, ids=lambda p: Path(p).stem)
def test_every_dialect_keeps_roles_and_texts(case_path, dialect):
    _, branch, request = _case(case_path)
    compiled = compile_chat_request(branch, request)
    expected = [(m.role.value, m.content if isinstance(m.content, str)
                 else "".join(p["text"] for p in m.content if p["type"] == "text"))
                for m in compiled.messages]
    body, _ = encode_compiled(compiled, dialect)
    # the cases carry no model (a provider kwarg the caller gives): add one to validate
    ACCEPTS[dialect]({"model": "m", **json.loads(body)})
    assert _role_texts(body, dialect) == expected
