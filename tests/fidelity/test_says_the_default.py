"""A member that says what its absence says is no loss (README "Realistic provider traffic"),
the classes a sweep of framework-built histories found, in every dialect that has them and
into every other dialect:

* a block attribute at its API's default (``losses.attr_says_nothing``): anthropic
  ``citations`` -- a text block's ``[]`` (user, assistant, a tool_result's text), a document's
  ``{"enabled": false}`` (and ``{}``, ``{"enabled": null}``); ``{"enabled": true}`` and a list
  of citations say something and stay recorded;
* a tool call's ``index`` (openai ``tool_calls[i].index``, ollama ``function.index``) equal to the
  call's 0-based position among its message's calls (``losses.CALL_INDEX``): no loss anywhere,
  written back by its own dialect; any other value is the source's member, recorded elsewhere;
* an empty anthropic ``system`` (``""``, ``[]``): no system message in openai / ollama.
"""

from __future__ import annotations

import itertools
import json

import pytest

from interlingua import Transcoder

from test_null_is_absent import DIALECTS, HISTORY, _null_member, _run

# -- citations at their default ------------------------------------------------------------

#: the anthropic history with a tool_result whose content is a list (its text may carry citations)
CITED = _null_member(HISTORY["anthropic"], 2, "content.0.content", [{"type": "text", "text": "r"}])

DEFAULT_CASES = [(0, "content.0.citations", []), (1, "content.0.citations", []), (2, "content.0.content.0.citations", []),
                 (0, "content.2.citations", {"enabled": False}), (0, "content.2.citations", {}),
                 (0, "content.2.citations", {"enabled": None})]


@pytest.mark.parametrize("index,member,value", DEFAULT_CASES,
                         ids=[f"[{i}].{m}={json.dumps(v)}" for i, m, v in DEFAULT_CASES])
def test_citations_at_their_default_are_absent(index, member, value):
    """Was "citations of a text block: openai has no field for it" (strict mode refused)."""
    body = _null_member(CITED, index, member, value)
    for target in ("openai", "ollama"):
        assert _run("anthropic", target, body) == _run("anthropic", target, CITED), target
    out, losses = _run("anthropic", "anthropic", body)  # anthropic keeps them as they came
    assert (out, losses) == (body, [])


CITATION = {"type": "char_location", "cited_text": "q", "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": 1}
SAYING_CASES = [(0, "content.0.citations", [CITATION], "citations of a text block"),
                (2, "content.0.content.0.citations", [CITATION], "citations of a text block in a tool_result block"),
                (0, "content.2.citations", {"enabled": True}, "citations of a document block")]


@pytest.mark.parametrize("index,member,value,subject", SAYING_CASES,
                         ids=[f"[{i}].{m}={json.dumps(v)[:20]}" for i, m, v, _ in SAYING_CASES])
def test_citations_that_say_something_are_recorded(index, member, value, subject):
    body = _null_member(CITED, index, member, value)
    for target in ("openai", "ollama"):
        if target == "ollama" and "document" in subject:
            continue  # (ollama has no documents: the whole block is the loss)
        base = _run("anthropic", target, CITED)[1]
        added = [loss for loss in _run("anthropic", target, body)[1] if loss not in base]
        assert [(loss.path, loss.reason.split(":")[0]) for loss in added] == [(f"$.messages[{index}]", subject)], target


def _anthropic_response(citations) -> bytes:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                       "content": [{"type": "text", "text": "hi", "citations": citations}],
                       "stop_reason": "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 1, "output_tokens": 1}}).encode()


def test_a_response_text_without_citations_loses_nothing():
    """A response's text block with ``citations: []`` (or null) is one without (no citations block)."""
    for target in ("openai", "ollama"):
        outs = []
        for citations in ([], None):
            transcoder = Transcoder("anthropic", target, kind="response")
            outs.append((transcoder.feed(_anthropic_response(citations)) + transcoder.close(),
                         [(loss.path, loss.reason) for loss in transcoder.losses]))
        assert outs[0] == outs[1], target
        assert not [loss for loss in outs[0][1] if "citations" in loss[0] + loss[1]], target


# -- a tool call's index ---------------------------------------------------------------------

#: two tool calls in one message (message 2 of openai's history, 1 of ollama's)
CALLS = {
    "openai": _null_member(HISTORY["openai"], 2, "tool_calls", [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]),
    "ollama": _null_member(HISTORY["ollama"], 1, "tool_calls", [
        {"function": {"name": "f", "arguments": {}}}, {"function": {"name": "f", "arguments": {"a": 1}}}]),
}
CALLS["openai"]["messages"].insert(4, {"role": "tool", "tool_call_id": "c2", "content": "r2"})
CALLS["ollama"]["messages"].insert(3, {"role": "tool", "tool_name": "f", "content": "r2"})
MESSAGE = {"openai": 2, "ollama": 1}
SUBJECT = {"openai": "index of a tool call", "ollama": "function.index of a tool call"}

ABSENT = object()
VALUES = [ABSENT, None, 0, 1, 2, True, 1.0, "1"]


def _index_of(call: dict, source: str):
    return (call if source == "openai" else call["function"]).get("index", ABSENT)


def _with_indexes(source: str, values) -> dict:
    body = json.loads(json.dumps(CALLS[source]))
    for call, value in zip(body["messages"][MESSAGE[source]]["tool_calls"], values):
        if value is not ABSENT:
            (call if source == "openai" else call["function"])["index"] = value
    return body


def _says_something(value, position: int) -> bool:
    return value is not ABSENT and value is not None and not (type(value) is int and value == position)


INDEX_CASES = [(source, values) for source in ("openai", "ollama") for values in itertools.product(VALUES, repeat=2)]


@pytest.mark.parametrize("source,values", INDEX_CASES,
                         ids=[f"{s}:{[('-' if v is ABSENT else v) for v in vs]}" for s, vs in INDEX_CASES])
def test_a_tool_call_index_at_its_position_says_nothing(source, values):
    """Each call's index: at its position (0, 1) no loss, any other value one loss of that call;
    the output of another dialect is the output without the indexes; the source's own dialect
    writes every index back as it came."""
    body = _with_indexes(source, values)
    for target in DIALECTS:
        out, losses = _run(source, target, body)
        if target == source:
            calls = out["messages"][MESSAGE[source]]["tool_calls"]
            assert [_index_of(call, source) for call in calls] == list(values)
            assert losses == []
            continue
        base, base_losses = _run(source, target, CALLS[source])
        assert out == base, target
        added = [(loss.path, loss.reason.split(":")[0]) for loss in losses if loss not in base_losses]
        expected = [(f"$.messages[{MESSAGE[source]}]", SUBJECT[source])
                    for position, value in enumerate(values) if _says_something(value, position)]
        assert added == expected, target


@pytest.mark.parametrize("source", ["openai", "ollama"])
def test_a_negative_zero_index_is_position_zero(source):
    """``-0`` is the integer 0 (both backends read it so): no loss; written back as ``0``."""
    text = json.dumps(_with_indexes(source, [0, ABSENT])).replace('"index": 0', '"index": -0')
    assert '"index": -0' in text
    for target in DIALECTS:
        transcoder = Transcoder(source, target, kind="request")
        out = transcoder.feed(text.encode()) + transcoder.close()
        if target == source:
            assert b'"index":0' in out and list(transcoder.losses) == []
        else:
            assert (json.loads(out), list(transcoder.losses)) == _run(source, target, CALLS[source]), target


@pytest.mark.parametrize("value, said", [(1, False), (True, True), (1.0, True), (0, True), ("1", True)])
def test_an_ollama_response_call_index_says_nothing_at_its_position_only(value, said):
    """An ollama response's ``function.index`` (Go writes the call's position): the same rule as a
    request's -- an integer equal to it says nothing; ``true`` or ``1.0`` (Python's ``==`` took
    them) and any other value say more, recorded at the call."""
    calls = [{"function": {"name": "f", "arguments": {}, "index": 0}},
             {"function": {"name": "g", "arguments": {}, "index": value}}]
    body = json.dumps({"model": "m", "created_at": "2025-12-01T09:00:00Z", "message": {
        "role": "assistant", "content": "", "tool_calls": calls}, "done": True, "done_reason": "stop"})
    transcoder = Transcoder("ollama", "openai", kind="response")
    transcoder.feed(body.encode())
    transcoder.close()
    index_losses = [loss.path for loss in transcoder.losses if "index" in loss.path]
    assert index_losses == (["$.message.tool_calls[1].function.index"] if said else [])


# -- an empty anthropic system ----------------------------------------------------------------

@pytest.mark.parametrize("system", ["", []], ids=["string", "list"])
def test_an_empty_system_is_no_system(system):
    """``"system": ""`` / ``[]`` wrote an empty system message into openai / ollama."""
    body = {**HISTORY["anthropic"], "system": system}
    for target in ("openai", "ollama"):
        assert _run("anthropic", target, body) == _run("anthropic", target, HISTORY["anthropic"]), target
    assert _run("anthropic", "anthropic", body) == (body, [])
