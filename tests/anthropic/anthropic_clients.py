"""Request bodies as the official clients write them (captured through MockTransport)."""

from __future__ import annotations

import json

from official_clients import anthropic_request, openai_request


_ANTHROPIC_REPLY = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m",
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}
_OPENAI_REPLY = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "ok"}}]}


anthropic_body = anthropic_request
openai_body = openai_request


def send_anthropic(body: bytes) -> dict:
    """Send ``body``'s fields through the anthropic client; returns what it put on the wire."""
    fields = json.loads(body)
    return json.loads(anthropic_body(**fields))


def send_openai(body: bytes) -> dict:
    fields = json.loads(body)
    return json.loads(openai_body(**fields))


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK"
TOOL = {"name": "weather", "description": "Weather in a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
OPENAI_TOOL = {"type": "function", "function": {"name": "weather", "description": "Weather in a city",
                                                "parameters": TOOL["input_schema"]}}


def anthropic_cases() -> dict[str, dict]:
    """Calls of ``messages.create`` covering the issue's list."""
    return {
        "plain_chat_system": dict(model="claude-x", max_tokens=100, system="Be brief.",
                                  messages=[{"role": "user", "content": "Hello \"there\" é 😀\n"},
                                            {"role": "assistant", "content": "Hi!"},
                                            {"role": "user", "content": "How are you?"}],
                                  stop_sequences=["END"]),
        "system_blocks": dict(model="claude-x", max_tokens=100,
                              system=[{"type": "text", "text": "Rule one.", "cache_control": {"type": "ephemeral"}},
                                      {"type": "text", "text": "Rule two."}],
                              messages=[{"role": "user", "content": "hi"}]),
        "tool_use_parallel": dict(
            model="claude-x", max_tokens=200, tools=[TOOL], tool_choice={"type": "auto"},
            messages=[{"role": "user", "content": "Weather in Paris and Rome?"},
                      {"role": "assistant", "content": [
                          {"type": "text", "text": "Checking."},
                          {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
                          {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}]},
                      {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                          {"type": "tool_result", "tool_use_id": "toolu_2",
                           "content": [{"type": "text", "text": "21C"}]},
                          {"type": "text", "text": "Thanks, summarise."}]}]),
        "images": dict(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "text", "text": "Compare these."}]}]),
        "documents": dict(model="claude-x", max_tokens=50, messages=[{"role": "user", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
             "title": "Spec", "context": "v1", "citations": {"enabled": True}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Plain doc."}},
            {"type": "text", "text": "Summarise."}]}]),
        "thinking_history": dict(
            model="claude-x", max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 2048},
            tools=[TOOL],
            messages=[{"role": "user", "content": "Weather?"},
                      {"role": "assistant", "content": [
                          {"type": "thinking", "thinking": "Let me think.\nOK.", "signature": "EqQBCkYIAxgCIkB+/=="},
                          {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT=="},
                          {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {"city": "Oslo"}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9",
                                                    "content": "cold", "is_error": False}]}]),
        **{f"tool_choice_{name}": dict(model="claude-x", max_tokens=10, tools=[TOOL], tool_choice=choice,
                                       messages=[{"role": "user", "content": "go"}])
           for name, choice in {
               "auto": {"type": "auto"}, "any": {"type": "any"}, "none": {"type": "none"},
               "tool": {"type": "tool", "name": "weather"},
               "auto_no_parallel": {"type": "auto", "disable_parallel_tool_use": True},
               "any_no_parallel": {"type": "any", "disable_parallel_tool_use": True}}.items()},
        "controls": dict(model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}],
                         metadata={"user_id": "u-1"}, service_tier="standard_only",
                         stream=False, output_config={"effort": "low", "format": {
                             "type": "json_schema", "schema": {"type": "object"}}},
                         thinking={"type": "adaptive"}),
    }


def openai_cases() -> dict[str, dict]:
    """Calls of ``chat.completions.create`` for the same conversations."""
    call = lambda i, city: {"id": f"call_{i}", "type": "function",  # noqa: E731
                            "function": {"name": "weather", "arguments": json.dumps({"city": city})}}
    return {
        "plain_chat_system": dict(model="gpt-x", max_completion_tokens=100, temperature=0.5, stop=["END"],
                                  messages=[{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Hello \"there\" é 😀\n"},
                                            {"role": "assistant", "content": "Hi!"},
                                            {"role": "user", "content": "How are you?"}]),
        "tool_use_parallel": dict(
            model="gpt-x", tools=[OPENAI_TOOL], tool_choice="auto", parallel_tool_calls=True,
            messages=[{"role": "developer", "content": "Use tools."},
                      {"role": "user", "content": "Weather in Paris and Rome?"},
                      {"role": "assistant", "content": "", "tool_calls": [call(1, "Paris"), call(2, "Rome")]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "21C"}]},
                      {"role": "user", "content": "Thanks, summarise."},
                      {"role": "system", "content": "Answer in French."}]),
        "images": dict(model="gpt-x", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "text", "text": "Compare these."}]}]),
        "documents": dict(model="gpt-x", messages=[{"role": "user", "content": [
            {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}"}},
            {"type": "text", "text": "Summarise."}]}]),
        **{f"tool_choice_{name}": dict(model="gpt-x", tools=[OPENAI_TOOL], messages=[{"role": "user", "content": "go"}],
                                       **kw)
           for name, kw in {
               "auto": {"tool_choice": "auto"}, "required": {"tool_choice": "required"},
               "none": {"tool_choice": "none"},
               "tool": {"tool_choice": {"type": "function", "function": {"name": "weather"}}},
               "no_parallel": {"tool_choice": "auto", "parallel_tool_calls": False},
               "required_no_parallel": {"tool_choice": "required", "parallel_tool_calls": False}}.items()},
        "controls": dict(model="gpt-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}], user="u-1",
                         reasoning_effort="low", top_p=0.9, stream=False, service_tier="default",
                         response_format={"type": "json_schema",
                                          "json_schema": {"name": "out", "schema": {"type": "object"}}}),
    }
