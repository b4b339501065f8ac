"""A top-level request field that sets nothing means the same as the field absent
(README "Realistic provider traffic"; ``fields.sets_nothing``), every dialect, every field
the decoders know, into every other dialect: the output is the output without the field,
and nothing is recorded lost.

* every control and extension field of each dialect (and every ollama option) as ``null``
  (ollama's decoder read a null as a setting: a loss per field, ``"stream": null`` made a
  non-streaming openai request, anthropic got ``"stream": null``);
* each settings map (``SETTING_MAPS``) as ``{}``, with every member null, and with a member
  that says its default (``SETTING_DEFAULTS``: OpenRouter's ``reasoning.exclude: false``).
"""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder
from interlingua.dialects.anthropic import controls as anthropic_controls
from interlingua.dialects.fields import REQUIRED, SETTING_DEFAULTS, SETTING_MAPS
from interlingua.dialects.ollama import controls as ollama_controls
from interlingua.dialects.openai import controls as openai_controls

DIALECTS = ("openai", "anthropic", "ollama")

BASE = {
    "openai": {"model": "m", "messages": [{"role": "user", "content": "q"}]},
    "anthropic": {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}]},
    "ollama": {"model": "m", "messages": [{"role": "user", "content": "q"}]},
}


def _fields(dialect: str) -> list[str]:
    module = {"openai": openai_controls, "anthropic": anthropic_controls, "ollama": ollama_controls}[dialect]
    names = [*module.CONTROLS, *module.EXTENSIONS]
    if dialect == "ollama":
        names += ["options." + key for key in [*module.OPTION_CONTROLS, *module.OPTION_EXTENSIONS]]
    return [name for name in names if name not in REQUIRED[dialect]]


def _with(dialect: str, field: str, value) -> dict:
    body = json.loads(json.dumps(BASE[dialect]))
    if field.startswith("options."):
        body.setdefault("options", {})[field[len("options."):]] = value
    else:
        body[field] = value
    return body


def _run(source: str, target: str, body: dict):
    transcoder = Transcoder(source, target, kind="request")
    out = transcoder.feed(json.dumps(body).encode()) + transcoder.close()
    return json.loads(out), list(transcoder.losses)


CASES = [(source, field, None) for source in DIALECTS for field in _fields(source)]
CASES += [(source, field, value) for source, maps in SETTING_MAPS.items() for field in maps
          for value in ({}, {"x": None})]
CASES += [("anthropic", "metadata", {"user_id": None}), ("anthropic", "output_config", {"effort": None, "format": None}),
          ("openai", "reasoning", {"effort": None, "max_tokens": None, "enabled": None, "exclude": None})]
# a member that says its default sets nothing either (``SETTING_DEFAULTS``)
CASES += [(source, field, {member: value, "x": None}) for (source, field), defaults in SETTING_DEFAULTS.items()
          for member, value in defaults.items()]


@pytest.mark.parametrize("source,field,value", CASES, ids=[f"{s}:{f}={json.dumps(v)}" for s, f, v in CASES])
def test_a_field_that_sets_nothing_is_absent(source, field, value):
    for target in DIALECTS:
        if target == source:
            continue
        absent = BASE[source] if not field.startswith("options.") else {**BASE[source], "options": {}}
        assert _run(source, target, _with(source, field, value)) == (_run(source, target, absent)[0], []), target


@pytest.mark.parametrize("source,field", [("openai", "web_search_options")])
def test_an_empty_map_that_turns_something_on_is_not_absent(source, field):
    """``web_search_options: {}`` turns search on: another dialect records it."""
    _, losses = _run(source, "anthropic", _with(source, field, {}))
    assert [loss.path for loss in losses] == ["$." + field]


# -- a member of a message or block ------------------------------------------------------

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcfsj6IK"

HISTORY = {
    "openai": {"model": "m", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
               "messages": [
                   {"role": "system", "content": "s"},
                   {"role": "user", "content": [{"type": "text", "text": "q"},
                                                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG}}]},
                   {"role": "assistant", "content": "a", "tool_calls": [
                       {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "r"},
                   {"role": "user", "content": "more"}]},
    "anthropic": {"model": "m", "max_tokens": 10, "tools": [{"name": "f", "input_schema": {"type": "object"}}],
                  "messages": [
                      {"role": "user", "content": [
                          {"type": "text", "text": "q"},
                          {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                          {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}]},
                      {"role": "assistant", "content": [
                          {"type": "text", "text": "a"}, {"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "r"},
                                                   {"type": "text", "text": "more"}]}]},
    "ollama": {"model": "m", "stream": False, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
               "messages": [
                   {"role": "user", "content": "q", "images": [PNG]},
                   {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
                   {"role": "tool", "tool_name": "f", "content": "r"},
                   {"role": "user", "content": "more"}]},
}

#: (message index, member path within it) set to null, per dialect: the members a null is absent for
NULL_MEMBERS = {
    "openai": [(1, "name"), (2, "name"), (2, "refusal"), (2, "audio"), (2, "function_call"), (4, "name"),
               (1, "content.0.cache_control"), (1, "content.0.x_member"), (2, "tool_calls.0.index"),
               (2, "tool_calls.0.function.x_member"), (2, "x_member")],
    "anthropic": [(0, "content.0.cache_control"), (0, "content.0.citations"), (0, "content.1.cache_control"),
                  (0, "content.2.cache_control"), (0, "content.2.citations"), (0, "content.2.title"),
                  (0, "content.2.context"), (1, "content.0.citations"), (1, "content.1.cache_control"),
                  (2, "content.0.is_error"), (2, "content.0.cache_control"), (1, "content.1.caller"),
                  (1, "content.1.toolset_name"), (0, "content.0.x_member"), (1, "content.0.x_member"), (1, "x_member")],
    "ollama": [(0, "tool_name"), (0, "tool_call_id"), (0, "thinking"), (1, "tool_name"), (1, "images"),
               (3, "tool_call_id"), (3, "images"), (1, "tool_calls.0.x_member"), (1, "x_member")],
}

MEMBER_CASES = [(source, index, member) for source, members in NULL_MEMBERS.items() for index, member in members]


def _null_member(body: dict, index: int, member: str, value=None) -> dict:
    body = json.loads(json.dumps(body))
    node = body["messages"][index]
    *steps, last = member.split(".")
    for step in steps:
        node = node[int(step)] if step.isdigit() else node[step]
    node[last] = value
    return body


def _without_nulls(value):
    """``value`` with every null member left out (a target that takes the member may write
    its null: ``cache_control: null`` into anthropic)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.parametrize("source,index,member", MEMBER_CASES, ids=[f"{s}:[{i}].{m}" for s, i, m in MEMBER_CASES])
def test_a_null_member_is_absent(source, index, member):
    """A message's or block's member that is null (a response's ``model_dump()`` writes
    ``citations: null``; SDK Optionals left unset) is the member absent: the same output, no loss
    (it was a recorded loss, or a ``SchemaError``: anthropic ``is_error: null``)."""
    for target in DIALECTS:
        if target == source:
            continue
        out, losses = _run(source, target, _null_member(HISTORY[source], index, member))
        assert (_without_nulls(out), losses) == _run(source, target, HISTORY[source]), target


def test_a_null_member_of_a_setting_is_absent():
    """anthropic ``tool_choice.disable_parallel_tool_use: null`` (it was a ``SchemaError``)."""
    body = {**HISTORY["anthropic"], "tool_choice": {"type": "auto", "disable_parallel_tool_use": None}}
    for target in ("openai", "ollama"):
        assert _run("anthropic", target, body) == _run("anthropic", target, {**body, "tool_choice": {"type": "auto"}})


TOOL_CASES = [("openai", "cache_control"), ("openai", "function.description"), ("openai", "function.strict"),
              ("anthropic", "cache_control"), ("anthropic", "description"),
              ("ollama", "function.description")]


@pytest.mark.parametrize("source,member", TOOL_CASES, ids=[f"{s}:tools[0].{m}" for s, m in TOOL_CASES])
def test_a_null_member_of_a_tool_is_absent(source, member):
    """A tool's member that is null (openai's tool-level ``cache_control: null``) is the member absent."""
    body = json.loads(json.dumps(HISTORY[source]))
    node = body["tools"][0]
    *steps, last = member.split(".")
    for step in steps:
        node = node[step]
    node[last] = None
    for target in DIALECTS:
        if target == source:
            continue
        out, losses = _run(source, target, body)
        assert (_without_nulls(out), losses) == _run(source, target, HISTORY[source]), target


#: a message member that is an empty list or object carries nothing either (openai's
#: ``annotations: []`` on every assistant message the SDK hands back; LiteLLM's ``images: []``)
EMPTY_CASES = [("openai", 2, "annotations", []), ("openai", 2, "images", []), ("openai", 1, "x_member", {}),
               ("anthropic", 1, "x_member", []), ("ollama", 1, "x_member", {})]


@pytest.mark.parametrize("source,index,member,value", EMPTY_CASES,
                         ids=[f"{s}:[{i}].{m}={json.dumps(v)}" for s, i, m, v in EMPTY_CASES])
def test_an_empty_message_member_is_absent(source, index, member, value):
    for target in DIALECTS:
        if target == source:
            continue
        assert _run(source, target, _null_member(HISTORY[source], index, member, value)) == _run(source, target, HISTORY[source]), target


def test_a_tool_call_by_the_model_itself_says_nothing():
    """anthropic's ``caller: {"type": "direct"}`` (the SDK sends it back in every tool turn) is
    what every tool call of another dialect is: no loss; a programmatic caller is one."""
    direct = _null_member(HISTORY["anthropic"], 1, "content.1.caller", {"type": "direct"})
    program = _null_member(HISTORY["anthropic"], 1, "content.1.caller", {"type": "code_execution_20250825", "tool_id": "s"})
    for target in ("openai", "ollama"):
        assert _run("anthropic", target, direct) == _run("anthropic", target, HISTORY["anthropic"])
        base = _run("anthropic", target, HISTORY["anthropic"])[1]
        added = [loss for loss in _run("anthropic", target, program)[1] if loss not in base]
        assert [(loss.path, loss.reason.split(":")[0]) for loss in added] == [("$.messages[1]", "caller of a tool_use block")]
