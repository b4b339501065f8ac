"""Ollama parity (issue 17; issue 16 items 2, 3, 4, 9): bodies shaped the way Ollama's
server and clients write them -- Go's struct order (``content`` before ``thinking``,
``id`` before ``function``, ``index`` in every call, ``tool_call_id`` after
``tool_name``), ids present -- and the behaviour agreed for each class (README,
"Ollama parity"). Every test runs on both backends (the ``backend`` fixture; the
native run skips until the native core covers the pipeline) and at several cuts.
"""

from __future__ import annotations

import json

import anthropic.types
import openai.types.chat
import pytest

from interlingua import Options, Transcoder
from rpt import split_stream_events

CUTS = (1, 7, None)  # byte-at-a-time, small pieces, whole


def transcode(source: str, target: str, body: bytes, kind: str = "request", **options):
    """(output, losses) -- the same output at every cut (asserted)."""
    outs = []
    for cut in CUTS:
        t = Transcoder(source, target, kind=kind, options=Options(**options))
        pieces = [body] if cut is None else [body[i:i + cut] for i in range(0, len(body), cut)]
        out = b"".join(t.feed(p) for p in pieces) + t.close()
        outs.append((out, [(l.path, l.reason) for l in t.losses]))
    assert all(o == outs[0] for o in outs), "output depends on the cut"
    return outs[0]


def go(obj) -> bytes:
    """JSON as Go's encoding/json writes it (struct order is the dict order given; compact)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def ndjson(*lines) -> bytes:
    return b"".join(go(line) + b"\n" for line in lines)


def sse_data(out: bytes) -> list:
    return [data for _, data in split_stream_events(out) if isinstance(data, dict)]


CREATED = "2025-06-01T10:00:00.123456789Z"


def chat_line(message: dict, done: bool = False, **extra) -> dict:
    """One line of ``/api/chat`` in api.ChatResponse order."""
    return {"model": "qwen3", "created_at": CREATED, "message": message, "done": done, **extra}


# -- 1. thinking order (issue 17.1 / 16.4) --------------------------------------------------


def test_ollama_response_thinking_goes_first_for_anthropic(backend):
    body = go(chat_line({"role": "assistant", "content": "The answer is 4.", "thinking": "2+2 is 4."}, True,
                        done_reason="stop", total_duration=5, prompt_eval_count=5, eval_count=9))
    out, losses = transcode("ollama", "anthropic", body, "response")
    message = anthropic.types.Message.model_validate_json(out)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "2+2 is 4." and message.content[0].signature == ""
    assert message.content[1].text == "The answer is 4."
    assert any(path == "$.message.thinking" and "signature" in why for path, why in losses), losses


def test_one_ollama_frame_with_content_and_thinking_sends_the_thinking_first(backend):
    body = ndjson(chat_line({"role": "assistant", "content": "", "thinking": "Let me see."}),
                  chat_line({"role": "assistant", "content": "Yes", "thinking": " Done."}),
                  chat_line({"role": "assistant", "content": "!"}),
                  chat_line({"role": "assistant", "content": ""}, True, done_reason="stop"))
    out, _ = transcode("ollama", "anthropic", body, "stream")
    starts = [e["content_block"]["type"] for e in sse_data(out) if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text"]
    deltas = [e["delta"] for e in sse_data(out) if e["type"] == "content_block_delta"]
    assert [d.get("thinking", d.get("text")) for d in deltas] == ["Let me see.", " Done.", "Yes", "!"]

    out, _ = transcode("ollama", "openai", body, "stream", openai_reasoning_field="reasoning_content")
    deltas = [c["choices"][0]["delta"] for c in sse_data(out) if c.get("choices")]
    order = [k for d in deltas for k in ("reasoning_content", "content") if d.get(k)]
    assert order == ["reasoning_content", "reasoning_content", "content", "content"]


def test_openai_reasoning_content_after_content_goes_first_for_anthropic(backend):
    body = go({"id": "chatcmpl-1", "object": "chat.completion", "created": 1717000000, "model": "deepseek-r1",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "4",
                                                    "reasoning_content": "2+2=4"}, "finish_reason": "stop"}]})
    out, losses = transcode("openai", "anthropic", body, "response", openai_reasoning_field="reasoning_content")
    message = anthropic.types.Message.model_validate_json(out)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert any("signature" in why for _, why in losses)


# -- 2. tool-call ids (issue 17.2) ------------------------------------------------------------------


GO_HISTORY = {"model": "qwen3", "messages": [
    {"role": "user", "content": "Weather in Paris and Tokyo?"},
    {"role": "assistant", "content": "", "thinking": "Two calls.", "tool_calls": [
        {"id": "call_k3j2x9aa", "function": {"index": 0, "name": "weather", "arguments": {"city": "Paris"}}},
        {"id": "call_p0q7zz1b", "function": {"index": 1, "name": "weather", "arguments": {"city": "Tokyo"}}}]},
    # answered out of order: only the ids link them
    {"role": "tool", "content": "22C", "tool_name": "weather", "tool_call_id": "call_p0q7zz1b"},
    {"role": "tool", "content": "18C", "tool_name": "weather", "tool_call_id": "call_k3j2x9aa"}],
    "stream": False}


def test_go_tool_call_ids_are_carried_into_openai(backend):
    out, _ = transcode("ollama", "openai", go(GO_HISTORY))
    body = json.loads(out)
    calls = body["messages"][1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_k3j2x9aa", "call_p0q7zz1b"]
    assert [m["tool_call_id"] for m in body["messages"][2:]] == ["call_p0q7zz1b", "call_k3j2x9aa"]
    openai.types.chat.ChatCompletionAssistantMessageParam(**body["messages"][1])


def test_openai_ids_are_written_for_ollama_and_a_tool_name_comes_from_name(backend):
    body = go({"model": "gpt-4o", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "12:00"},
        {"role": "tool", "name": "clock", "content": "12:01"}]})
    out, losses = transcode("openai", "ollama", body)
    messages = json.loads(out)["messages"]
    assert messages[0]["tool_calls"] == [{"id": "call_a", "function": {"arguments": {}, "name": "clock"}}]
    assert messages[1] == {"role": "tool", "content": "12:00", "tool_name": "clock", "tool_call_id": "call_a"}
    assert messages[2] == {"role": "tool", "content": "12:01", "tool_name": "clock"}
    assert losses == []


def test_go_response_tool_call_id_reaches_openai_and_anthropic(backend):
    body = go(chat_line({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_k3j2x9aa", "function": {"index": 0, "name": "weather", "arguments": {"city": "Paris"}}}]},
        True, done_reason="stop"))
    out, losses = transcode("ollama", "openai", body, "response")
    completion = openai.types.chat.ChatCompletion.model_validate_json(out)
    assert completion.choices[0].message.tool_calls[0].id == "call_k3j2x9aa"
    assert completion.choices[0].finish_reason == "tool_calls"
    assert losses == []  # the id is carried; function.index is the call's position
    out, _ = transcode("ollama", "anthropic", body, "response")
    assert anthropic.types.Message.model_validate_json(out).content[0].id == "call_k3j2x9aa"


# -- 3. logprobs (issue 17.3) --------------------------------------------------------------------


GO_LOGPROBS = [{"token": "Hi", "logprob": -0.25, "top_logprobs": [{"token": "Hi", "logprob": -0.25},
                                                                  {"token": "Hello", "logprob": -1.5}]}]


def test_go_logprobs_become_openai_choice_logprobs(backend):
    body = go(chat_line({"role": "assistant", "content": "Hi"}, True, done_reason="stop", logprobs=GO_LOGPROBS))
    out, losses = transcode("ollama", "openai", body, "response")
    choice = openai.types.chat.ChatCompletion.model_validate_json(out).choices[0]
    assert choice.logprobs.content[0].token == "Hi"
    assert [t.token for t in choice.logprobs.content[0].top_logprobs] == ["Hi", "Hello"]


    assert losses == []


def test_go_stream_logprobs_follow_their_content_in_openai_chunks(backend):
    body = ndjson(chat_line({"role": "assistant", "content": "Hi"}, logprobs=GO_LOGPROBS),
                  chat_line({"role": "assistant", "content": "!"}, logprobs=[{"token": "!", "logprob": -0.5}]),
                  chat_line({"role": "assistant", "content": ""}, True, done_reason="stop"))
    out, losses = transcode("ollama", "openai", body, "stream")
    chunks = [openai.types.chat.ChatCompletionChunk.model_validate(c) for c in sse_data(out)]
    tokens = [t.token for c in chunks for ch in c.choices if ch.logprobs for t in ch.logprobs.content]
    assert tokens == ["Hi", "!"] and losses == []
    out, _ = transcode("ollama", "ollama", body, "stream")  # back on the line of the content they score
    assert [json.loads(line).get("logprobs") for line in out.splitlines()] == [
        GO_LOGPROBS, [{"token": "!", "logprob": -0.5}], None]


def test_logprobs_into_anthropic_are_a_recorded_loss(backend):
    body = go(chat_line({"role": "assistant", "content": "Hi"}, True, done_reason="stop", logprobs=GO_LOGPROBS))
    _, losses = transcode("ollama", "anthropic", body, "response")
    assert ("$.logprobs", "token logprobs: anthropic has no logprobs") in losses


# -- 4. reasoning effort (issue 17.4) -------------------------------------------------------------------


@pytest.mark.parametrize("source,body,think,lost", [
    ("openai", {"model": "m", "reasoning_effort": "xhigh", "messages": []}, "max", True),
    ("openai", {"model": "m", "reasoning_effort": "minimal", "messages": []}, "low", True),
    ("openai", {"model": "m", "reasoning_effort": "none", "messages": []}, False, False),
    ("anthropic", {"model": "m", "max_tokens": 9, "messages": [], "output_config": {"effort": "max"}}, "max", False),
    ("anthropic", {"model": "m", "max_tokens": 9, "messages": [], "output_config": {"effort": "xhigh"}},
     "high", True),
    # the client disabled thinking: it stays off whatever effort comes with it
    ("anthropic", {"model": "m", "max_tokens": 9, "messages": [], "thinking": {"type": "disabled"},
                   "output_config": {"effort": "high"}}, False, True),
])
def test_reasoning_effort_maps_to_ollama_think_levels(backend, source, body, think, lost):
    out, losses = transcode(source, "ollama", go(body))
    assert json.loads(out)["think"] is think if isinstance(think, bool) else json.loads(out)["think"] == think
    assert any("effort" in why for _, why in losses) is lost, losses


# -- 5. anthropic system blocks (issue 17.5) ---------------------------------------------------------------


def test_anthropic_system_blocks_become_one_ollama_system_message(backend):
    body = go({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}],
               "system": [{"type": "text", "text": "You are a coding agent."},
                          {"type": "text", "text": "Repo: x.", "cache_control": {"type": "ephemeral"}}]})
    out, losses = transcode("anthropic", "ollama", body)
    messages = json.loads(out)["messages"]
    assert messages[0] == {"role": "system", "content": "You are a coding agent.\n\nRepo: x."}
    assert [m["role"] for m in messages] == ["system", "user"]
    assert any("joined" in why for path, why in losses if path == "$.system")


# -- 6. server tools (issue 17.6) ----------------------------------------------------------------------


def test_a_history_of_server_tool_blocks_only_is_no_message_left(backend):
    """Nothing of it is left for ollama's list: NoMessageError (an empty list is Ollama's
    preload request, answered with an empty "load" reply), the block recorded."""
    from interlingua import NoMessageError
    body = go({"model": "m", "max_tokens": 9, "messages": [{"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "news"}}]}]})
    t = Transcoder("anthropic", "ollama")
    with pytest.raises(NoMessageError):
        t.feed(body)
        t.close()
    assert [loss.reason for loss in t.losses] == ["server_tool_use block: ollama has no server tools; not carried"]


@pytest.mark.parametrize("messages,kept", [
    ([{"role": "user", "content": "news?"},
      {"role": "assistant", "content": [
          {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "news"}},
          {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
           "content": [{"type": "web_search_result", "title": "T", "url": "https://e.x", "encrypted_content": "E"}]},
          {"type": "text", "text": "Here is the news."}]}],
     [{"role": "user", "content": "news?"}, {"role": "assistant", "content": "Here is the news."}]),
])
def test_server_tool_blocks_are_recorded_and_messages_stay(backend, messages, kept):
    out, losses = transcode("anthropic", "ollama", go({"model": "m", "max_tokens": 9, "messages": messages}))
    assert json.loads(out)["messages"] == kept
    types = [b["type"] for m in messages if isinstance(m["content"], list) for b in m["content"]
             if b["type"] != "text"]
    for kind in types:
        assert any(kind in why for _, why in losses), (kind, losses)


# -- 7. missing done_reason (issue 17.7) ---------------------------------------------------------------------


def test_an_ollama_stream_without_done_reason_finishes_with_stop(backend):
    body = ndjson(chat_line({"role": "assistant", "content": "Hi"}),
                  chat_line({"role": "assistant", "content": ""}, True, prompt_eval_count=3, eval_count=1))
    out, _ = transcode("ollama", "openai", body, "stream")
    reasons = [c["choices"][0]["finish_reason"] for c in sse_data(out) if c.get("choices")]
    assert reasons[-1] == "stop"
    out, _ = transcode("ollama", "anthropic", body, "stream")
    assert [e["delta"]["stop_reason"] for e in sse_data(out) if e["type"] == "message_delta"] == ["end_turn"]
    out, _ = transcode("ollama", "ollama", body, "stream")  # an ollama target leaves it out again
    assert "done_reason" not in json.loads(out.splitlines()[-1])


# -- 8. sampling defaults (issue 17.8) ---------------------------------------------------------------------


def test_sampling_defaults_are_the_models_unless_asked(backend):
    body = go({"model": "gpt-4o", "messages": [{"role": "user", "content": "a poem"}]})
    out, _ = transcode("openai", "ollama", body)
    assert "options" not in json.loads(out)  # default: the Modelfile's tuned values
    out, losses = transcode("openai", "ollama", body, ollama_sampling_defaults=True)
    assert json.loads(out)["options"] == {"temperature": 1.0, "top_p": 1.0}  # as Ollama's openai layer
    assert losses == []
    given = go({"model": "gpt-4o", "temperature": 0.2, "messages": [{"role": "user", "content": "a poem"}]})
    out, _ = transcode("openai", "ollama", given, ollama_sampling_defaults=True)
    assert json.loads(out)["options"] == {"temperature": 0.2, "top_p": 1.0}


# -- issue 16 items 2, 3, 9 ------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ['{"path": "/tmp/a.py", "content": "print(1', "not json", "[1]", "null"])
def test_arguments_that_are_not_an_object_are_carried_raw_for_ollama(backend, arguments):
    body = go({"model": "gpt-4o", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "write", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "error"}]})
    out, losses = transcode("openai", "ollama", body)
    call = json.loads(out)["messages"][0]["tool_calls"][0]
    assert call["function"]["arguments"] == {"_raw_arguments": arguments}
    assert any("_raw_arguments" in why for path, why in losses if path == "$.messages[0]")


def test_a_tool_result_of_several_texts_is_one_ollama_tool_message_and_text_follows(backend):
    body = go({"model": "m", "max_tokens": 9, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}},
                                          {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]},
        {"role": "user", "content": [
            {"type": "text", "text": "here you are"},
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "a.py"}]}]})
    out, losses = transcode("anthropic", "ollama", body)
    assert json.loads(out)["messages"][1:] == [
        {"role": "tool", "content": "line 1\n\nline 2", "tool_name": "read", "tool_call_id": "t1"},
        {"role": "tool", "content": "a.py", "tool_name": "ls", "tool_call_id": "t2"},
        {"role": "user", "content": "here you are"}]
    assert any("joined" in why for _, why in losses)


def test_an_openai_refusal_in_history_is_ollama_assistant_text(backend):
    body = go({"model": "gpt-4o", "messages": [{"role": "user", "content": "bad"},
                                               {"role": "assistant", "content": None, "refusal": "I can't."},
                                               {"role": "user", "content": "ok"}]})
    out, losses = transcode("openai", "ollama", body)
    assert json.loads(out)["messages"][1] == {"role": "assistant", "content": "I can't."}
    assert any("refusal" in why for _, why in losses)


# -- issue 16.6: ids and times -------------------------------------------------------------------------


def test_ids_are_generated_per_response_and_times_come_from_the_source(backend):
    """Ollama sends no response id: each gets its own (lifecycle: response ids and times;
    the class over every pair: tests/test_ids_and_times.py)."""
    first = go(chat_line({"role": "assistant", "content": "a"}, True, done_reason="stop"))
    second = first.replace(CREATED.encode(), b"2025-06-01T10:00:00.987654321Z")
    ids = []
    for body in (first, second):
        out, _ = transcode("ollama", "openai", body, "response")
        completion = openai.types.chat.ChatCompletion.model_validate_json(out)
        assert completion.created == 1748772000  # 2025-06-01T10:00:00Z
        ids.append(completion.id)
        out, _ = transcode("ollama", "anthropic", body, "response")
        ids.append(anthropic.types.Message.model_validate_json(out).id)
    assert ids[0].startswith("chatcmpl-") and ids[1].startswith("msg_") and len(set(ids)) == 4
    # the same bytes with the same clock and entropy (the suite's fixed ones): the same output
    assert transcode("ollama", "openai", first, "response")[0] == transcode("ollama", "openai", first, "response")[0]
    openai_body = go({"id": "chatcmpl-1", "object": "chat.completion", "created": 1717000000, "model": "gpt-4o",
                      "choices": [{"index": 0, "message": {"role": "assistant", "content": "4"},
                                   "finish_reason": "stop"}]})
    out, _ = transcode("openai", "ollama", openai_body, "response")
    assert json.loads(out)["created_at"] == "2024-05-29T16:26:40Z"


# -- 9. required fields (issue 17.9): a SchemaError naming the member, where Ollama answers 400 ----

_TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}


@pytest.mark.parametrize("body,member", [
    ({"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}, "model"),
    ({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
    ({"model": "qwen3", "max_tokens": 64}, "messages"),
    ({"model": "qwen3", "max_tokens": 64, "messages": [
        {"role": "assistant", "content": [{k: v for k, v in _TOOL_USE.items() if k != "id"}]}]}, "id"),
    ({"model": "qwen3", "max_tokens": 64, "messages": [
        {"role": "assistant", "content": [{k: v for k, v in _TOOL_USE.items() if k != "name"}]}]}, "name"),
])
def test_an_anthropic_request_missing_a_required_member_is_refused(backend, body, member):
    from interlingua import SchemaError

    for cut in CUTS:
        t = Transcoder("anthropic", "ollama", kind="request")
        data = go(body)
        pieces = [data] if cut is None else [data[i:i + cut] for i in range(0, len(data), cut)]
        with pytest.raises(SchemaError, match=repr(member)) as caught:
            for piece in pieces:
                t.feed(piece)
            t.close()
        assert caught.value.dialect == "anthropic" and caught.value.offset is not None and caught.value.path


def test_an_unknown_reasoning_effort_is_refused(backend):
    from interlingua import SchemaError

    body = go({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "extreme"})
    with pytest.raises(SchemaError, match="reasoning_effort") as caught:
        transcode("openai", "ollama", body)
    assert caught.value.dialect == "openai" and caught.value.path == "$.reasoning_effort"


_PNG = "iVBORw0KGgoAAAANSUhEUg=="
_CALL = {"function": {"name": "f", "arguments": {}}}


@pytest.mark.parametrize("target", ["openai", "anthropic"])
@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool", "critic"])
@pytest.mark.parametrize("member,natural", [("images", "user"), ("tool_calls", "assistant")])
def test_a_block_on_a_message_of_another_role_is_sent_in_its_own_role_and_recorded(backend, target, role, member,
                                                                                    natural):
    # ollama takes images and tool_calls on a message of any role; openai and anthropic have a
    # place for each in one role only (rpt/ollama-blocks-of-other-roles) -- except a tool
    # message's images into anthropic: inside its tool_result, nothing recorded
    # (rpt/ollama-tool-result-images-anthropic)
    import validity

    value = [_PNG] if member == "images" else [_CALL]
    answered = [{"role": "assistant", "content": "", "tool_calls": [_CALL]}] if role == "tool" else []
    answer = [{"role": "tool", "content": "r"}] if member == "tool_calls" else []
    messages = [{"role": "user", "content": "q"}, *answered, {"role": role, "content": "see", member: value},
                *answer, {"role": "user", "content": "and?"}]
    at = f"$.messages[{1 + len(answered)}]"
    body = go({"model": "m", "stream": False, "messages": messages})
    out, losses = transcode("ollama", target, body)
    mark = _PNG if member == "images" else '"name": "f"'
    sent = sum(json.dumps(m).count(mark) for m in json.loads(out)["messages"] if m["role"] == natural)
    assert sent == len(value) + len(answered) * (member == "tool_calls"), "sent once, in a message of its own role"
    moved = [(path, reason) for path, reason in losses if f"in its {role} message" in reason]
    in_result = role == "tool" and member == "images" and target == "anthropic"
    assert moved == ([] if role == natural or in_result else [(at, moved[0][1])])
    if in_result:
        assert losses == []
        result = json.loads(out)["messages"][2]["content"][0]
        assert result["type"] == "tool_result" and [b["type"] for b in result["content"]] == ["text", "image"]
    assert all(why.endswith(f"sent in {'a user' if natural == 'user' else 'an assistant'} message") for _, why in moved)
    assert validity.check(target, "request", out, enforced_only=True) == []
