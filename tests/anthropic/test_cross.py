"""openai <-> anthropic requests: client-captured bodies transcoded both ways, validated by the
target client's own types and sent through the target client."""

from __future__ import annotations

import json

import pytest
from anthropic.types import MessageCreateParams
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter

from anthropic_clients import (
    OPENAI_TOOL, PNG, TOOL, anthropic_body, anthropic_cases, openai_body, openai_cases, send_anthropic,
    send_openai,
)
from anthropic_util import run, run_all
from interlingua import LossError, Options

ANTHROPIC_PARAMS = TypeAdapter(MessageCreateParams)
OPENAI_PARAMS = TypeAdapter(CompletionCreateParamsNonStreaming)


def openai_texts(body: dict) -> list[str]:
    out = []
    for m in body["messages"]:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out += [p["text"] for p in c if p.get("type") == "text"]
    return [t for t in out if t]


def anthropic_texts(body: dict) -> list[str]:
    out = []
    system = body.get("system")
    if isinstance(system, str):
        out.append(system)
    elif system:
        out += [b["text"] for b in system]

    def blocks(content):
        if isinstance(content, str):
            out.append(content)
            return
        for b in content:
            if b.get("type") == "text":
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                blocks(b.get("content", []))
    for m in body["messages"]:
        blocks(m["content"])
    return [t for t in out if t]


@pytest.mark.parametrize("name", sorted(openai_cases()))
def test_openai_client_body_to_anthropic(name):
    body = openai_body(**openai_cases()[name])
    out, t = run_all(body, "openai", "anthropic")
    result = json.loads(out)
    ANTHROPIC_PARAMS.validate_python(result)
    assert send_anthropic(out) == result  # the anthropic client takes it as it is
    assert sorted(anthropic_texts(result)) == sorted(openai_texts(json.loads(body)))


@pytest.mark.parametrize("name", sorted(anthropic_cases()))
def test_anthropic_client_body_to_openai(name):
    body = anthropic_body(**anthropic_cases()[name])
    out, t = run_all(body, "anthropic", "openai")
    result = json.loads(out)
    OPENAI_PARAMS.validate_python(result)
    assert send_openai(out) == result
    source_texts = anthropic_texts(json.loads(body))
    if name != "documents":  # a plain-text document source is a recorded loss, not message text
        assert sorted(openai_texts(result)) == sorted(source_texts)


def o2a(**kwargs):
    out, t = run_all(openai_body(**kwargs), "openai", "anthropic")
    return json.loads(out), t.losses


def a2o(options=None, **kwargs):
    out, t = run_all(anthropic_body(**kwargs), "anthropic", "openai", options)
    return json.loads(out), t.losses


def test_system_written_after_messages_is_still_the_first_openai_message():
    body, _ = a2o(**anthropic_cases()["plain_chat_system"])
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_openai_system_and_developer_anywhere_go_to_top_level_system():
    body, losses = o2a(**openai_cases()["tool_use_parallel"])
    assert body["system"] == [{"type": "text", "text": "Use tools."}, {"type": "text", "text": "Answer in French."}]
    assert all(m["role"] in ("user", "assistant") for m in body["messages"])
    # the developer message after the conversation began loses its place (issue 16.7)
    assert [(loss.path, "top-level system" in loss.reason) for loss in losses] == [("$.messages[6]", True)]


def test_openai_tool_messages_in_a_row_become_one_user_message_with_the_following_text():
    body, _ = o2a(**openai_cases()["tool_use_parallel"])
    last = body["messages"][-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in last["content"][:2]] == ["call_1", "call_2"]
    calls = body["messages"][1]["content"]
    assert [c["id"] for c in calls] == ["call_1", "call_2"]  # empty content "" not written
    assert calls[0]["input"] == {"city": "Paris"}


def test_text_before_tool_results_in_one_anthropic_message():
    kwargs = dict(model="m", max_tokens=9, tools=[TOOL], messages=[
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
                                          {"type": "tool_use", "id": "t2", "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "here you are"},
                                     {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": "b"}]}])
    body, losses = a2o(**kwargs)
    roles = [(m["role"], m.get("tool_call_id")) for m in body["messages"]]
    assert roles == [("user", None), ("assistant", None), ("tool", "t1"), ("tool", "t2"), ("user", None)]
    assert body["messages"][-1]["content"] == [{"type": "text", "text": "here you are"}]
    assert losses == []


def test_tool_result_media_and_is_error_into_openai():
    kwargs = dict(model="m", max_tokens=9, messages=[
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [
            {"type": "text", "text": "screenshot:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}]}])
    body, losses = a2o(**kwargs)
    tool, user = body["messages"][2:]
    assert tool == {"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "screenshot:"}]}
    assert user["role"] == "user"
    assert user["content"][0]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    reasons = [loss.reason for loss in losses]
    assert any("is_error" in r for r in reasons)
    assert any("moved to a user message" in r for r in reasons)


def test_invalid_json_arguments_have_a_defined_outcome():
    kwargs = dict(model="m", messages=[
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1"}},
            {"id": "c2", "type": "function", "function": {"name": "f", "arguments": ""}},
            {"id": "c3", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}, {"role": "tool", "tool_call_id": "c2", "content": "y"},
        {"role": "tool", "tool_call_id": "c3", "content": "z"}])
    body, losses = o2a(**kwargs)
    inputs = [b["input"] for b in body["messages"][1]["content"]]
    assert inputs == [{"_raw_arguments": "{\"a\": 1"}, {}, {"_raw_arguments": "[1]"}]
    assert [l.path for l in losses] == ["$.messages[1]", "$.messages[1]"]
    with pytest.raises(LossError) as err:
        run(openai_body(**kwargs), "openai", "anthropic", options=Options(strict=True))
    assert err.value.path == "$.messages[1]"


def test_arguments_stream_both_ways():
    args = {"city": "Paris \"centre\" é", "n": [1, 2.5, None], "deep": {"x": "\\n"}}
    kwargs = dict(model="m", messages=[
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "f", "arguments": json.dumps(args)}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}])
    body, losses = o2a(**kwargs)
    assert body["messages"][1]["content"][0]["input"] == args and losses == []
    back, _ = run_all(json.dumps(body).encode(), "anthropic", "openai")
    assert json.loads(json.loads(back)["messages"][1]["tool_calls"][0]["function"]["arguments"]) == args


def test_thinking_history_into_openai_only_with_the_option():
    kwargs = anthropic_cases()["thinking_history"]
    body, losses = a2o(**kwargs)
    assert "reasoning_content" not in json.dumps(body)
    # the two reasoning blocks (the budget is a loss of its own: thinking.budget_tokens)
    assert sum("reasoning field" in l.reason for l in losses) == 2
    body, losses = a2o(options=Options(openai_reasoning_field="reasoning_content"), **kwargs)
    assert body["messages"][1]["reasoning_content"] == "Let me think.\nOK."
    reasons = [l.reason for l in losses]
    assert any("signature" in r for r in reasons) and any("redacted" in r for r in reasons)


def test_controls_both_ways():
    # a Claude 4.6 model takes adaptive thinking (Options.anthropic_thinking="auto" decides by name)
    body, losses = o2a(**{**openai_cases()["controls"], "model": "claude-opus-4-6"})
    assert body["max_tokens"] == 64 and body["metadata"] == {"user_id": "u-1"}
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}}
    assert body["service_tier"] == "standard_only"
    assert {l.path for l in losses} == {"$.top_p", "$.response_format.json_schema.name"}  # undeclared top_p; schema name
    body, losses = a2o(**anthropic_cases()["controls"])
    assert body["reasoning_effort"] == "low" and body["user"] == "u-1"
    assert body["response_format"]["type"] == "json_schema" and losses == []
    body, _ = a2o(model="m", max_tokens=5000, thinking={"type": "enabled", "budget_tokens": 4096},
                  messages=[{"role": "user", "content": "x"}])
    assert body["reasoning_effort"] == "medium"
    body, _ = o2a(model="m", reasoning_effort="none", messages=[{"role": "user", "content": "x"}])
    assert body["thinking"] == {"type": "disabled"} and body["max_tokens"] == 4096


@pytest.mark.parametrize("openai_kw, anthropic_choice", [
    ({"tool_choice": "auto"}, {"type": "auto"}),
    ({"tool_choice": "required"}, {"type": "any"}),
    ({"tool_choice": "none"}, {"type": "none"}),
    ({"tool_choice": {"type": "function", "function": {"name": "weather"}}}, {"type": "tool", "name": "weather"}),
    ({"parallel_tool_calls": False}, {"type": "auto", "disable_parallel_tool_use": True}),
    ({"tool_choice": "required", "parallel_tool_calls": False}, {"type": "any", "disable_parallel_tool_use": True}),
    ({"tool_choice": {"type": "function", "function": {"name": "weather"}}, "parallel_tool_calls": False},
     {"type": "tool", "name": "weather", "disable_parallel_tool_use": True}),
])
def test_tool_choice_every_form_both_ways(openai_kw, anthropic_choice):
    body, losses = o2a(model="m", tools=[OPENAI_TOOL], messages=[{"role": "user", "content": "x"}], **openai_kw)
    assert body["tool_choice"] == anthropic_choice and losses == []
    back, losses = a2o(model="m", max_tokens=1, tools=[TOOL], messages=[{"role": "user", "content": "x"}],
                       tool_choice=anthropic_choice)
    expected = dict(openai_kw)
    if "tool_choice" not in expected:
        expected["tool_choice"] = "auto"
    assert {k: back[k] for k in expected} == expected and losses == []


def test_strict_names_the_path_openai_cannot_carry():
    body = anthropic_body(model="m", max_tokens=5, container="c1", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(LossError) as err:
        run(body, "anthropic", "openai", options=Options(strict=True))
    assert err.value.path == "$.container" and "$.container" in str(err.value)
    body = anthropic_body(**anthropic_cases()["thinking_history"])
    with pytest.raises(LossError) as err:
        run(body, "anthropic", "openai", options=Options(strict=True))
    assert err.value.path == "$.messages[1]"


def test_consecutive_same_role_messages_are_kept():
    body, _ = o2a(model="m", messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                                       {"role": "assistant", "content": "c"}, {"role": "assistant", "content": "d"}])
    assert [m["role"] for m in body["messages"]] == ["user", "user", "assistant", "assistant"]


@pytest.mark.parametrize("name", sorted(openai_cases()))
def test_openai_same_dialect_still_round_trips(name):
    """Guards the openai encoder changes made for anthropic (reasoning merge, holds)."""
    body = openai_body(**openai_cases()[name])
    out, t = run_all(body, "openai", "openai")
    assert json.loads(out) == json.loads(body) and t.losses == []
