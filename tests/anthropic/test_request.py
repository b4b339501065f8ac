"""Anthropic request dialect: classification of every client parameter, same-dialect round trips."""

from __future__ import annotations

import inspect
import json
import typing

import pytest
from anthropic.resources.messages import Messages
from anthropic.types import MessageCreateParams
from pydantic import TypeAdapter

from interlingua import Section, decode
from interlingua.canonical import TOP_LEVEL_SYSTEM, Block, Control, SystemEnd
from interlingua.dialects.anthropic import controls

from anthropic_clients import anthropic_body, anthropic_cases
from anthropic_util import SIZES, chunks, run, run_all

CLASSIFIED = controls.CONTROLS.keys() | controls.STRUCTURAL | controls.EXTENSIONS | controls.CLIENT_ONLY


def test_every_create_parameter_is_classified():
    params = set(inspect.signature(Messages.create).parameters) - {"self"}
    assert params - CLASSIFIED == set(), "classify new anthropic parameters in controls.py"


def test_every_message_create_params_key_is_classified():
    keys = set()
    for member in typing.get_args(MessageCreateParams):
        keys |= set(typing.get_type_hints(member))
    assert keys - CLASSIFIED == set()


CASES = anthropic_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_client_body_round_trips_json_equal(name):
    body = anthropic_body(**CASES[name])
    out, t = run_all(body, "anthropic", "anthropic")
    assert json.loads(out) == json.loads(body)
    assert t.losses == []
    TypeAdapter(MessageCreateParams).validate_python(json.loads(out))


@pytest.mark.parametrize("name", sorted(CASES))
def test_sorted_keys_round_trip(name):
    """Clients that sort keys put content before role and payloads before type."""
    body = json.dumps(json.loads(anthropic_body(**CASES[name])), sort_keys=True).encode()
    out, _ = run_all(body, "anthropic", "anthropic")
    assert json.loads(out) == json.loads(body)


def test_thinking_and_signatures_byte_for_byte():
    body = anthropic_body(**CASES["thinking_history"])
    out, _ = run_all(body, "anthropic", "anthropic")
    for needle in (b'"thinking":"Let me think.\\nOK."', b'"signature":"EqQBCkYIAxgCIkB+/=="',
                   b'"data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT=="'):
        assert needle in body and needle in out


def events(body: bytes, size=None):
    return list(decode(chunks(body, size), source="anthropic"))


def coalesce(evs):
    """Blocks with payloads joined (fragments merged), for comparing across chunk sizes."""
    out, current = [], None
    for e in evs:
        if isinstance(e, Block):
            if e.init:
                current = [e.section, e.message, bytearray(), dict(e.attrs or {})]
                out.append(current)
            current[2] += e.payload
            if not e.init and e.attrs:
                current[3].update(e.attrs)
        else:
            out.append(e)
    return out


def test_decoding_is_chunking_invariant():
    for name, kwargs in CASES.items():
        body = anthropic_body(**kwargs)
        expected = coalesce(events(body))
        for size in SIZES:
            assert coalesce(events(body, size)) == expected, (name, size)


def test_system_end_follows_system_value():
    body = anthropic_body(**CASES["plain_chat_system"])  # the client writes messages first
    evs = events(body)
    system_at = max(i for i, e in enumerate(evs) if isinstance(e, Block) and e.message == TOP_LEVEL_SYSTEM)
    assert isinstance(evs[system_at + 1], SystemEnd)  # (after the system block's last fragment)
    body = json.dumps({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}).encode()
    evs = events(body)
    # no system: SystemEnd comes at the end of the body, just before End
    assert [type(e).__name__ for e in evs[-2:]] == ["SystemEnd", "End"]


def test_block_mapping():
    body = anthropic_body(**CASES["tool_use_parallel"])
    blocks = [b for b in coalesce(events(body)) if isinstance(b, list)]
    sections = [b[0] for b in blocks]
    assert sections == [Section.USER_TEXT, Section.ASSISTANT_TEXT, Section.TOOL_CALL, Section.TOOL_CALL,
                        Section.TOOL_RESULT, Section.TOOL_RESULT, Section.USER_TEXT, Section.TOOL_DEFINITION]
    call = blocks[2]
    assert call[3]["id"] == "toolu_1" and call[3]["name"] == "weather"
    assert json.loads(json.loads(b'"' + bytes(call[2]) + b'"')) == {"city": "Paris"}
    assert blocks[4][3]["tool_call_id"] == "toolu_1"
    assert blocks[5][3] == {"tool_call_id": "toolu_2", "in_parts": True}


def test_controls_decode():
    body = anthropic_body(**CASES["controls"])
    got = {(e.name, json.dumps(e.value, sort_keys=True)) for e in events(body) if isinstance(e, Control)}
    assert ("user", '"u-1"') in got
    assert ("reasoning", '{"effort": "low"}') in got
    assert ("reasoning", '{"adaptive": true, "enabled": true}') in got
    assert ("response_format", '{"schema": {"type": "object"}, "type": "json_schema"}') in got
    assert ("service_tier", '"default"') in got
    body = anthropic_body(**CASES["tool_choice_any_no_parallel"])
    got = {(e.name, json.dumps(e.value)) for e in events(body) if isinstance(e, Control)}
    assert ("tool_choice", '{"type": "required"}') in got and ("parallel_tool_calls", "false") in got


UNUSUAL = {
    "model": "m", "max_tokens": 9, "stream": True, "top_k": 3, "container": "c", "speed": "fast",
    "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    "messages": [
        {"role": "user", "content": [
            {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
            {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "c1"}]}},
            {"type": "image", "source": {"type": "file", "file_id": "file_2"},
             "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "search_result", "source": "https://s", "title": "t",
             "content": [{"type": "text", "text": "x"}], "citations": {"enabled": True}},
            {"type": "container_upload", "file_id": "f3"},
            {"type": "text", "text": "see", "citations": [
                {"type": "char_location", "cited_text": "x", "document_index": 0, "document_title": None,
                 "start_char_index": 0, "end_char_index": 1}]}]},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
            {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [
                {"type": "web_search_result", "url": "u", "title": "t", "encrypted_content": "e"}]},
            {"type": "text", "text": ""}]},
        {"role": "user", "content": []},
        {"role": "system", "content": "mid-conversation system"},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "x"},
            {"type": "tool_result", "tool_use_id": "y", "content": []},
            {"type": "tool_result", "tool_use_id": "z", "is_error": True, "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ"}},
                {"type": "text", "text": "after"},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}}]}],
         "extra_msg_key": 1},
        {"role": "assistant", "content": [{"type": "future_block", "x": 1}]}],
    "tools": [TOOL_WITH_EXTRAS := {"name": "f", "input_schema": {"type": "object"}, "strict": True,
                                   "defer_loading": True, "cache_control": {"type": "ephemeral"}},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
}


@pytest.mark.parametrize("sort", [False, True])
def test_every_block_type_round_trips(sort):
    body = json.dumps(UNUSUAL, sort_keys=sort).encode()
    out, t = run_all(body, "anthropic", "anthropic")
    assert json.loads(out) == json.loads(body)
    assert t.losses == []


def test_unknown_block_is_carried_raw():
    body = json.dumps(UNUSUAL).encode()
    blocks = [b for b in coalesce(events(body)) if isinstance(b, list)]
    unknown = [b for b in blocks if b[0] is Section.UNKNOWN and b[1] >= 0]
    assert {json.loads(bytes(b[2]))["type"] for b in unknown} == {"search_result", "container_upload",
                                                                   "future_block"}
    server = [json.loads(bytes(b[2]))["type"] for b in blocks if b[0] is Section.SERVER_TOOL_RESULT]
    assert server == ["server_tool_use", "web_search_tool_result"]


def test_large_text_streams_in_bounded_pieces():
    big = "x\"é" * 40000
    body = anthropic_body(model="m", max_tokens=1, messages=[{"role": "user", "content": big}])
    t_out, t = run(body, "anthropic", "anthropic", 4096)
    assert json.loads(t_out) == json.loads(body)
    assert t.reorder.high_water < 4096


def test_schema_errors():
    from interlingua import SchemaError
    with pytest.raises(SchemaError) as err:
        run(b'{"messages":[{"role":"user","content":[{"source":{"data":"x"}}]}]}', "anthropic", "anthropic")
    assert "without type" in str(err.value)
    with pytest.raises(SchemaError) as err:
        run(b'{"messages":[{"role":"robot","content":"x"}]}', "anthropic", "anthropic")
    assert "robot" in str(err.value) and "$.messages[0].role" in str(err.value)
