"""ollama <-> anthropic through the canonical conventions.

The anthropic request decoder/encoder are being written on another branch;
until they land, the anthropic side is the canonical events an anthropic
decoder produces for a ``messages.create`` body (system after messages, as
the official client serialises it), built by hand. When the codecs land,
the rpt matrix covers the pair directly (see rpt/*/ollama.request.rpt).
"""

from __future__ import annotations

import base64
import json

from interlingua.canonical import (
    REQUEST_LEVEL, TOP_LEVEL_SYSTEM, Block, Control, End, MessagesEnd, Section, SystemEnd, escape_text,
)
from interlingua.dialects.ollama import RequestEncoder
from interlingua.session import Session
from ollama_helpers import PNG_1PX, events
from test_ollama_request import full_client_body

PNG_B64 = base64.b64encode(PNG_1PX)


def encode(evs, options=None):
    session = Session(options, source="anthropic", target="ollama")
    out: list[bytes] = []
    encoder = RequestEncoder(out.append, session)
    for e in evs:
        encoder.on_event(e)
    return json.loads(b"".join(out)), session


def split(block: Block, n: int = 5) -> list[Block]:
    """A block as fragments of about ``n`` payload bytes, never splitting an escape."""
    p = block.payload
    parts, i = [], 0
    while i < len(p):
        j = min(i + n, len(p))
        while j < len(p) and (len(p[i:j]) - len(p[i:j].rstrip(b"\\"))) % 2:
            j += 1  # the piece ends inside an escape: take the escaped character too
        parts.append(p[i:j])
        i = j
    parts = parts or [b""]
    return [Block(block.section, block.message, part, i == 0, i == len(parts) - 1,
                  block.attrs if i == 0 else None) for i, part in enumerate(parts)]


def anthropic_events() -> list:
    """What an anthropic decoder emits for a body the official client sends."""
    return [
        Control("model", "claude-sonnet-4-5", dialect="anthropic", key="model", raw=b'"claude-sonnet-4-5"'),
        Control("max_output_tokens", 1024, dialect="anthropic", key="max_tokens", raw=b"1024"),
        *split(Block(Section.USER_TEXT, 0, b"Look at this", attrs={"in_parts": True})),
        *split(Block(Section.USER_IMAGE, 0, PNG_B64, attrs={"source": "base64", "media_type": "image/png"})),
        Block(Section.USER_IMAGE, 0, b"https://example.com/cat.png", attrs={"source": "url"}),
        Block(Section.USER_TEXT, 0, b"and this", attrs={"in_parts": True}),
        *split(Block(Section.ASSISTANT_REASONING, 1, b"thinking hard", attrs={"signature": "sig=="})),
        Block(Section.ASSISTANT_REASONING, 1, b"opaque", attrs={"redacted": True}),
        Block(Section.ASSISTANT_TEXT, 1, b"Calling tools", attrs={"in_parts": True}),
        *split(Block(Section.TOOL_CALL, 1, escape_text('{"city":"Paris"}'), attrs={"id": "toolu_1", "name": "weather"}), 3),
        Block(Section.TOOL_CALL, 1, escape_text('{"city":"Tokyo"}'), attrs={"id": "toolu_2", "name": "weather"}),
        Block(Section.TOOL_RESULT, 2, b"18C", attrs={"tool_call_id": "toolu_1", "in_parts": True}),
        Block(Section.TOOL_RESULT, 2, b"22C", attrs={"tool_call_id": "toolu_2", "is_error": True}),
        Block(Section.USER_TEXT, 2, b"Thanks", attrs={"in_parts": True}),
        Block(Section.USER_DOCUMENT, 2, b"JVBERi0=", attrs={"source": "base64", "media_type": "application/pdf"}),
        MessagesEnd(),
        Block(Section.SYSTEM_INSTRUCTION, TOP_LEVEL_SYSTEM, b"Be brief.", attrs={"in_parts": True}),
        Block(Section.SYSTEM_INSTRUCTION, TOP_LEVEL_SYSTEM, b"Use tools.",
              attrs={"in_parts": True, "cache_control": {"type": "ephemeral"}}),
        SystemEnd(),
        Block(Section.TOOL_DEFINITION, REQUEST_LEVEL, b'{"type":"object"}',
              attrs={"name": "weather", "description": "Weather"}),
        Control("reasoning", {"enabled": True, "budget_tokens": 2048}, dialect="anthropic", key="thinking",
                raw=b'{"type":"enabled","budget_tokens":2048}'),
        Control("stop", ["END"], dialect="anthropic", key="stop_sequences", raw=b'["END"]'),
        Control("top_k", 5, dialect="anthropic", key="top_k", raw=b"5"),
        End(),
    ]


def test_anthropic_events_to_ollama():
    body, session = encode(anthropic_events())
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nUse tools."},  # top-level system blocks: one message, joined
        # text after an image goes on in a following message (the images stream)
        {"role": "user", "content": "Look at this", "images": [PNG_B64.decode()]},
        {"role": "user", "content": "and this"},
        {"role": "assistant", "thinking": "thinking hard", "content": "Calling tools",
         "tool_calls": [{"id": "toolu_1", "function": {"arguments": {"city": "Paris"}, "name": "weather"}},
                        {"id": "toolu_2", "function": {"arguments": {"city": "Tokyo"}, "name": "weather"}}]},
        # the current ollama API carries the ids (id on calls, tool_call_id on results)
        {"role": "tool", "content": "18C", "tool_name": "weather", "tool_call_id": "toolu_1"},
        {"role": "tool", "content": "22C", "tool_name": "weather", "tool_call_id": "toolu_2"},
        {"role": "user", "content": "Thanks"},
    ]
    assert body["options"] == {"num_predict": 1024, "stop": ["END"], "top_k": 5}
    assert body["think"] is True and body["stream"] is False
    assert body["tools"] == [{"type": "function", "function": {"name": "weather", "description": "Weather",
                                                               "parameters": {"type": "object"}}}]
    reasons = [l.reason for l in session.losses]
    for what in ("not fetched", "signature of a thinking block", "redacted_thinking block", "several system text blocks",
                 "is_error", "document block", "cache_control", "thinking budget", "after an image"):
        assert any(what in r for r in reasons), what
    assert session.reorder.report()["by_reason"]["ollama:messages-before-system"] > 0


def test_ollama_events_are_what_an_anthropic_encoder_takes():
    """The ollama decoder speaks the portable vocabulary the anthropic encoder reads."""
    evs = events(full_client_body(), "ollama", 5)
    blocks = [e for e in evs if isinstance(e, tuple)]
    image = next(b for b in blocks if b[0] is Section.USER_IMAGE)
    assert image[3]["source"] == "base64" and image[3]["media_type"] == "image/png"
    call = next(b for b in blocks if b[0] is Section.TOOL_CALL)
    assert json.loads(json.loads(b'"' + bytes(call[2]) + b'"')) == {"a": 1, "b": 2}  # escaped-string form
    assert set(call[3]) == {"id", "name"}
    result = next(b for b in blocks if b[0] is Section.TOOL_RESULT)
    assert result[3]["tool_call_id"] == call[3]["id"]
    controls = {e.name: e for e in evs if type(e) is Control}
    assert controls["max_output_tokens"].value == 128
    assert controls["stop"].value == ["\n\n"]
    assert controls["top_k"].value == 40
    assert SystemEnd() in evs and evs.index(SystemEnd()) < evs.index(MessagesEnd())
