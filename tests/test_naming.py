"""naming: the id and tool-name maps into what each target API accepts (the class, by property)."""

from __future__ import annotations

import json
import re

from hypothesis import given, strategies as st

from interlingua import Options, Transcoder
from interlingua.naming import ID_MARK, anthropic_id, canonical_id, name_fits, wire_name

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
NAME = {"openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"), "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,128}")}
ids = st.one_of(st.text(), st.text(alphabet="abcXYZ019_-.:|", max_size=20),
                st.builds(lambda s: ID_MARK + s, st.text(alphabet="abcXYZ019_-=", max_size=12)))


@given(ids)
def test_anthropic_id_fits_and_inverts(call_id):
    wire = anthropic_id(call_id)
    assert ANTHROPIC_ID.fullmatch(wire)
    assert canonical_id(wire) == call_id


@given(ids)
def test_valid_ids_are_kept(call_id):
    if ANTHROPIC_ID.fullmatch(call_id) and not call_id.startswith(ID_MARK):
        assert anthropic_id(call_id) == call_id == canonical_id(call_id)


@given(st.one_of(st.text(alphabet="abcXYZ019_-", min_size=1, max_size=30),
                 st.builds(lambda s: ID_MARK + s, st.text(alphabet="abcXYZ019_-", max_size=12))))
def test_an_anthropic_id_survives_another_dialect(wire):
    """anthropic -> other -> anthropic gives the id back -- except an id that starts with
    ID_MARK and was not made by anthropic_id: it comes back escaped once more (documented),
    still valid and the same for the call and its result."""
    back = anthropic_id(canonical_id(wire))
    assert ANTHROPIC_ID.fullmatch(back)
    if not wire.startswith(ID_MARK) or canonical_id(wire) != wire:
        assert back == wire


@given(st.text(max_size=200), st.sampled_from(["openai", "anthropic"]))
def test_wire_name_fits_and_is_stable(name, dialect):
    wire = wire_name(name, dialect)
    assert NAME[dialect].fullmatch(wire)
    assert wire == wire_name(name, dialect)
    assert (wire == name) == name_fits(name, dialect)


LONG = "mcp__workspace-indexer__search_symbols_across_all_repositories_by_fuzzy_name"


def test_a_proxy_pair_restores_the_clients_tool_name():
    """anthropic client -> openai backend: the request renames the tool, the response names it back."""
    request = json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
                          "tools": [{"name": LONG, "input_schema": {"type": "object"}}]}).encode()
    forward = Transcoder("anthropic", "openai")
    sent = json.loads(forward.feed(request) + forward.close())
    wire = sent["tools"][0]["function"]["name"]
    assert wire != LONG and forward.tool_names == {wire: LONG}
    assert [loss.path for loss in forward.losses] == ["$.tools"]
    reply = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": wire, "arguments": "{}"}}]}}]}).encode()
    back = Transcoder("openai", "anthropic", kind="response", options=Options(tool_names=forward.tool_names))
    got = json.loads(back.feed(reply) + back.close())
    assert got["content"][0]["name"] == LONG
