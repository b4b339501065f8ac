"""Blank texts (empty, or whitespace only) of another dialect into anthropic: anthropic refuses an
empty text block and one of whitespace only ("messages: text content blocks must contain
non-whitespace text"), so the anthropic encoder writes neither -- a blank one recorded -- and the
decision reads the same however the text is cut (``Encoder._on_block`` joins a text's blank
fragments before placing it). The validity layer (``tests/validity.py`` ``text-block-not-blank``)
checks every anthropic output of the suite for the rule; rpt/request-blank-text-into-anthropic
pins one conversation. Both backends (the suite runs once per backend)."""

from __future__ import annotations

import json

import pytest

from interlingua.encoding import BLANK_HELD
from rpt import transcode_cut

#: texts as a source writes them: blank ones (spaces, newlines, tabs, carriage returns), and ones
#: with other characters (kept, whitespace and all), U+00A0 among them (not counted as blank)
BLANK = [" ", "\n", "\n\n", " \t\r\n ", " " * 300]
NOT_BLANK = ["x", " x ", "\n\nx", "\u00a0", "\\n"]


def _bodies(source: str, text: str) -> list[tuple[bytes, bool]]:
    """The text as a user message, an assistant's beside a tool call, a system message, and a
    part between two texts (ollama has no parts: the text within another), in a request of
    ``source``; each with whether the body has the text as a text of its own."""
    call = ({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}} if source == "openai"
            else {"function": {"name": "f", "arguments": {}}})
    result = {"role": "tool", "content": "ok", **({"tool_call_id": "c1"} if source == "openai" else {})}
    parts = ([{"type": "text", "text": "a"}, {"type": "text", "text": text}, {"type": "text", "text": "b"}]
             if source == "openai" else "a" + text + "b")
    shapes = [
        [{"role": "user", "content": text}, {"role": "user", "content": "hi"}],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": text, "tool_calls": [call]}, result],
        [{"role": "system", "content": text}, {"role": "user", "content": "hi"}],
        [{"role": "user", "content": parts}],
    ]
    return [(json.dumps({"model": "m", "messages": messages}).encode(), n < 3 or source == "openai")
            for n, messages in enumerate(shapes)]


def _run(source: str, body: bytes, cuts: list[int]):
    out, losses = transcode_cut(source, "anthropic", body, cuts)
    return json.loads(out), losses


def _texts(request: dict) -> list[str]:
    texts = [request["system"]] if isinstance(request.get("system"), str) else []
    for message in request["messages"]:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]
    return texts


@pytest.mark.parametrize("source", ["openai", "ollama"])
@pytest.mark.parametrize("text", BLANK + NOT_BLANK)
def test_a_blank_text_is_not_sent_into_anthropic_at_any_cut(source, text):
    for body, own in _bodies(source, text):
        whole, losses = _run(source, body, [])
        start = body.index(json.dumps(text).encode()) if json.dumps(text).encode() in body else 0
        for at in range(max(start - 2, 1), min(start + len(json.dumps(text)) + 2, len(body))):
            assert _run(source, body, [at]) == (whole, losses), at
        assert _run(source, body, list(range(1, len(body)))) == (whole, losses)
        texts = _texts(whole)
        blank = own and text.strip(" \n\t\r") == ""
        if blank:
            assert not any(t.strip(" \n\t\r") == "" for t in texts), whole
            assert any("whitespace only" in reason for _, reason in losses), losses
        else:
            assert not any("whitespace only" in reason for _, reason in losses), losses


def test_a_blank_text_longer_than_what_is_held_is_written_as_it_came(monkeypatch):
    """The bound on what waits: a blank text longer than ``BLANK_HELD`` bytes is written as it
    came, the same at every cut -- a request anthropic refuses (the validity layer would say so:
    not asked here), as the source's would be."""
    import validity
    monkeypatch.setattr(validity, "assert_valid", lambda *args: None)
    text = " " * (BLANK_HELD + 1)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    whole = _run("openai", body, [])
    assert whole[0]["messages"] == [{"role": "user", "content": text}]
    start = body.index(b'"content"')
    for cuts in ([start + 20], list(range(start, len(body), 7)), list(range(start, len(body), 1000))):
        assert _run("openai", body, cuts) == whole
