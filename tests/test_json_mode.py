"""Another dialect's JSON mode into openai: ollama ``format: "json"`` is canonical ``json_object``,
which openai refuses unless a message says "json" ("'messages' must contain the word 'json' in
some form, to use 'response_format' of type 'json_object'"). The openai request encoder sends
``json_object`` when a message's text says the word (any case: system, user, assistant, tool
result; a string or a text part; cut anywhere between fragments), else the same request in the
form with no such rule, a ``json_schema`` of any object -- nothing lost either way. The format
waits for the end of the messages when it comes before them (``openai:json-mode-after-messages``),
not when it comes after. The validity layer (``json-object-says-json``) checks every openai output
of the suite; rpt/request-json-mode-unsaid-into-openai and rpt/ollama-images-tools pin one
request each. Both backends."""

from __future__ import annotations

import json

import pytest

import validity
from interlingua import Options, ReorderRefusedError, Transcoder
from rpt import transcode_cut

JSON_OBJECT = {"type": "json_object"}
ANY_OBJECT = {"type": "json_schema", "json_schema": {"name": "response", "schema": {"type": "object"}}}


def _messages(where: str, text: str) -> list[dict]:
    """A conversation with ``text`` in one place (the rest says nothing of the word)."""
    system = {"role": "system", "content": text if where == "system" else "Be brief."}
    user = {"role": "user", "content": text if where == "user" else "List three colors."}
    messages = [system, user]
    if where in ("assistant", "tool"):
        messages += [
            {"role": "assistant", "content": text if where == "assistant" else "",
             "tool_calls": [{"function": {"name": "palette", "arguments": {"n": 3}}}]},
            {"role": "tool", "tool_name": "palette", "content": text if where == "tool" else "red, green, blue"},
            {"role": "user", "content": "Go on."},
        ]
    return messages


def _body(messages: list[dict], *, format_first: bool, escaped_word: bool = False) -> bytes:
    request = {"model": "qwen3", "messages": messages, "stream": False}
    if format_first:
        request = {"model": "qwen3", "format": "json", **request}
    else:
        request["format"] = "json"
    data = json.dumps(request, ensure_ascii=False).encode()
    # the word written with an escape: `json.dumps` writes none
    return data.replace(b"JSON", b"\\u004aSON") if escaped_word else data


SAID = ["json", "JSON", "Answer in Json.", "jsonl lines", 'a {"json": true} object']
UNSAID = ["", "js on", "JSO N", "jso\nn"]
PLACES = ["system", "user", "assistant", "tool"]


def _run(body: bytes, cuts: list[int]) -> tuple[dict, list]:
    out, losses = transcode_cut("ollama", "openai", body, cuts)
    assert validity.check("openai", "request", out, enforced_only=True) == [], out
    return json.loads(out), losses


@pytest.mark.parametrize("format_first", [True, False], ids=["format-first", "format-last"])
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", SAID + UNSAID)
def test_json_mode_into_openai_is_json_object_only_where_a_message_says_json(text, place, format_first):
    body = _body(_messages(place, text), format_first=format_first)
    whole, losses = _run(body, [])
    assert whole["response_format"] == (JSON_OBJECT if text in SAID else ANY_OBJECT), whole
    assert losses == []


@pytest.mark.parametrize("format_first", [True, False], ids=["format-first", "format-last"])
def test_the_word_cut_between_fragments_is_seen(format_first):
    """Fed a byte at a time, each fragment of the text is one character: the word is read
    across them (and not across two texts: "js" ending one, "on" opening the next, is not it)."""
    body = _body(_messages("user", "Reply in JSON please."), format_first=format_first)
    whole = _run(body, [])
    assert whole[0]["response_format"] == JSON_OBJECT
    at = body.index(b"JSON")
    for cuts in (list(range(1, len(body))), [at + 1], [at + 2], [at + 3], [at + 1, at + 2, at + 3]):
        assert _run(body, cuts) == whole
    parts = [{"role": "user", "content": "Reply in js"}, {"role": "user", "content": "on please."}]
    split = _body([{"role": "system", "content": "Be brief."}, *parts], format_first=format_first)
    assert _run(split, [])[0]["response_format"] == ANY_OBJECT


def test_a_word_written_with_escapes_is_not_seen_and_the_request_stays_valid():
    """The encoder reads the escaped text: ``\\u004aSON`` is "JSON" to openai, not to it -- so the
    format goes as the json_schema of any object, which openai takes either way."""
    body = _body(_messages("user", "Reply in JSON."), format_first=True, escaped_word=True)
    assert b"\\u004aSON" in body
    assert _run(body, [])[0]["response_format"] == ANY_OBJECT


def test_a_format_before_the_messages_is_held_and_one_after_them_is_not():
    before = _body(_messages("user", "JSON"), format_first=True)
    after = _body(_messages("user", "JSON"), format_first=False)
    refused = Options(refuse_reorder=True)
    transcoder = Transcoder("ollama", "openai", options=refused)
    with pytest.raises(ReorderRefusedError, match="openai:json-mode-after-messages"):
        transcoder.feed(before)
        transcoder.close()
    transcoder = Transcoder("ollama", "openai", options=refused)
    out = json.loads(transcoder.feed(after) + transcoder.close())
    assert out["response_format"] == JSON_OBJECT
    transcoder = Transcoder("ollama", "openai")
    transcoder.feed(before)
    transcoder.close()
    assert transcoder.reorder.report()["by_reason"].get("openai:json-mode-after-messages", 0) > 0
