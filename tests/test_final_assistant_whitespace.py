"""The final assistant content of another dialect into anthropic: anthropic refuses a request whose
final assistant message ends in whitespace ("messages: final assistant content cannot end with
trailing whitespace": a prefill ending in a newline or a space, as agent frameworks send to
continue a turn). The anthropic encoder holds an assistant text's trailing blank run back until
what follows it is known: at the end of the message list it is not sent, recorded; anything
written after the text sends it as it came. The decision reads the same however the body is cut.
The validity layer (``tests/validity.py`` ``final-assistant-no-trailing-whitespace``) checks every
anthropic output of the suite; rpt/request-final-assistant-whitespace-into-anthropic pins one
conversation. Both backends (the suite runs once per backend)."""

from __future__ import annotations

import json

import pytest

from interlingua.encoding import BLANK_HELD
from rpt import transcode_cut

#: how a text ends: blank runs (stripped when the text is the final content) and endings that
#: are text (kept): a literal backslash and n, U+00A0 (not counted as whitespace: ``encoding.blank``)
BLANK_ENDINGS = [" ", "\n", "\n\n \t", "\r\n", " " * 300]
TEXT_ENDINGS = ["", ".", "\\n", "\\\\n", "\u00a0"]

_PREFIX = "The end"


def _call(source: str) -> dict:
    return ({"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}} if source == "openai"
            else {"function": {"name": "f", "arguments": {}}})


def _shapes(source: str, text: str) -> list[tuple[list, bool]]:
    """Conversations of ``source`` with the text in an assistant message, each with whether the
    text is the request's final content."""
    result = {"role": "tool", "content": "ok", **({"tool_call_id": "c1"} if source == "openai" else {})}
    user = {"role": "user", "content": "Go on."}
    shapes = [
        ([user, {"role": "assistant", "content": text}], True),
        ([user, {"role": "assistant", "content": "", "tool_calls": [_call(source)]}, result,
          {"role": "assistant", "content": text}], True),
        ([user, {"role": "assistant", "content": text}, {"role": "user", "content": "More."}], False),
        ([user, {"role": "assistant", "content": text, "tool_calls": [_call(source)]}], False),
    ]
    if source == "openai":  # content parts: the last part is the final content; a blank part after it is not sent
        shapes += [
            ([user, {"role": "assistant", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": text}]}],
             True),
            ([user, {"role": "assistant", "content": [{"type": "text", "text": text}, {"type": "text", "text": " "}]}],
             True),
            ([user, {"role": "assistant", "content": [{"type": "text", "text": text}, {"type": "text", "text": "B"}]}],
             False),
        ]
    return shapes


def _run(source: str, body: bytes, cuts: list[int]):
    out, losses = transcode_cut(source, "anthropic", body, cuts)
    return json.loads(out), losses


def _assistant_texts(request: dict) -> list[str]:
    return [b["text"] for m in request["messages"] if m["role"] == "assistant"
            for b in m["content"] if b.get("type") == "text"]


@pytest.mark.parametrize("source", ["openai", "ollama"])
@pytest.mark.parametrize("ending", BLANK_ENDINGS + TEXT_ENDINGS)
def test_the_final_assistant_text_has_no_trailing_whitespace_at_any_cut(source, ending):
    text = _PREFIX + ending
    for n, (messages, final) in enumerate(_shapes(source, text)):
        body = json.dumps({"model": "m", "messages": messages}).encode()
        whole, losses = _run(source, body, [])
        start = body.index(json.dumps(text).encode())
        for at in range(start, start + len(json.dumps(text)) + 3):
            assert _run(source, body, [at]) == (whole, losses), (n, at)
        assert _run(source, body, list(range(1, len(body)))) == (whole, losses), n
        stripped = final and ending in BLANK_ENDINGS
        assert (text.rstrip(" \n\t\r") if stripped else text) in _assistant_texts(whole), (n, whole)
        trailing = [reason for _, reason in losses if "ends in whitespace" in reason]
        assert len(trailing) == stripped, (n, losses)


def test_a_run_longer_than_what_is_held_is_written_as_it_came(monkeypatch):
    """The bound on what waits: a trailing run longer than ``BLANK_HELD`` bytes is sent as it came,
    the same at every cut -- a request anthropic refuses (the validity layer would say so: not
    asked here), as the source's would be. One just within the bound is not sent."""
    import validity
    monkeypatch.setattr(validity, "assert_valid", lambda *args: None)
    for run, kept in ((" " * (BLANK_HELD + 1), True), ("\n" * (BLANK_HELD // 2), False), (" " * BLANK_HELD, False)):
        text = "x" + run
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": text}]}).encode()
        whole = _run("openai", body, [])
        assert _assistant_texts(whole[0]) == [text if kept else "x"]
        start = body.index(b'"x')
        for cuts in ([start + 20], [start + 1, start + 2], list(range(start, len(body), 7)),
                     list(range(start, len(body), 1000))):
            assert _run("openai", body, cuts) == whole, cuts
