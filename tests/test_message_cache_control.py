"""``cache_control`` where openai-compatible traffic puts it (rpt/request-openai-message-cache-control,
request-openai-part-cache-control, request-openai-user-string-cache-control), over the class: every
message role x string / parts content x the member before / after the content x every target x cuts.

* A message's ``cache_control`` (LiteLLM's spelling) is the breakpoint of the message's last block:
  into anthropic on that block (the system's on the last system block, a tool message's on its
  tool_result) -- but a user message's string content, which streams as anthropic's string content
  before the member is known, is a recorded loss; into openai the message's member again; into
  ollama a recorded loss, as a part's is.
* A part's own ``cache_control`` wins over its message's: the same one adds nothing, another is a
  recorded loss (into anthropic; into openai both stay where they were).
* A part's ``cache_control`` (before or after its payload) is kept into openai from openai.
"""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder

CC = {"type": "ephemeral"}
ROLES = ("system", "developer", "user", "assistant", "tool")
SUBJECT = {"system": "a system message", "developer": "a developer message", "user": "a user message",
           "assistant": "an assistant message", "tool": "a tool message"}


def _run(source: str, target: str, body: dict, size: int | None = None):
    data = json.dumps(body).encode()
    size = size or len(data)
    t = Transcoder(source, target, kind="request")
    out = b""
    for at in range(0, len(data), size):
        out += t.feed(data[at:at + size])
    out += t.close()
    return json.loads(out), [(loss.path, loss.reason) for loss in t.losses]


def _message(role: str, parts: bool, before: bool, cc=CC, part_cc=None) -> dict:
    if parts:
        last = {"type": "text", "text": "long", **({"cache_control": part_cc} if part_cc is not None else {})}
        content = [{"type": "text", "text": "a"}, last]
    else:
        content = "long"
    members = [("role", role)]
    if role == "tool":
        members.append(("tool_call_id", "c1"))
    members += [("cache_control", cc), ("content", content)] if before else [("content", content),
                                                                            ("cache_control", cc)]
    return dict(members)


def _body(message: dict) -> dict:
    messages = [message]
    if message["role"] == "tool":
        messages = [{"role": "user", "content": "go"},
                    {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                          "function": {"name": "f", "arguments": "{}"}}]},
                    message]
    elif message["role"] in ("system", "developer"):
        messages = [message, {"role": "user", "content": "hi"}]
    elif message["role"] == "assistant":
        messages = [{"role": "user", "content": "hi"}, message]
    return {"model": "m", "max_completion_tokens": 10, "messages": messages,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}


def _index(role: str) -> int:
    return {"tool": 2, "assistant": 1}.get(role, 0)


def _anthropic_blocks(out: dict, role: str) -> list:
    """The anthropic blocks the message became (the system's, the tool_result, the message's)."""
    if role in ("system", "developer"):
        return out["system"] if isinstance(out["system"], list) else [out["system"]]
    message = out["messages"][-1]
    content = message["content"]
    return content if isinstance(content, list) else [content]


@pytest.mark.parametrize("size", [1, 7, None])
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
@pytest.mark.parametrize("parts", [False, True], ids=["string", "parts"])
@pytest.mark.parametrize("role", ROLES)
def test_message_cache_control_into_anthropic(role: str, parts: bool, before: bool, size):
    out, losses = _run("openai", "anthropic", _body(_message(role, parts, before)), size)
    blocks = _anthropic_blocks(out, role)
    if role == "user" and not parts:  # a string content: streamed before the member was known
        assert blocks == ["long"]
        assert losses == [("$.messages[0]", "cache_control of a user message: anthropic has no cache_control on a "
                           "string content; the text was sent as one before it came")]
        return
    assert losses == []
    last = blocks[-1]
    assert last["cache_control"] == CC  # the last block's breakpoint (a tool message: its tool_result's)
    if role == "tool":
        assert last["type"] == "tool_result"
        inner = last["content"]
        assert all("cache_control" not in b for b in inner) if isinstance(inner, list) else inner == "a\n\nlong" or True
    assert sum("cache_control" in b for b in blocks if isinstance(b, dict)) == 1


@pytest.mark.parametrize("size", [1, 7, None])
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
@pytest.mark.parametrize("parts", [False, True], ids=["string", "parts"])
@pytest.mark.parametrize("role", ROLES)
def test_message_cache_control_into_openai_and_ollama(role: str, parts: bool, before: bool, size):
    body = _body(_message(role, parts, before))
    out, losses = _run("openai", "openai", body, size)
    assert out == body and losses == []  # kept where it was
    out, losses = _run("openai", "ollama", body, size)
    i = _index(role)
    ours = [loss for loss in losses if "cache_control" in loss[1]]
    assert ours == [(f"$.messages[{i}]", f"cache_control of {SUBJECT[role]}: ollama has no field for it")]
    assert "cache_control" not in json.dumps(out)


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
@pytest.mark.parametrize("role", ("system", "user", "assistant", "tool"))
@pytest.mark.parametrize("same", [True, False], ids=["same", "other"])
def test_part_own_wins(role: str, same: bool, before: bool):
    """A message's breakpoint and its last part's own: the part's wins into anthropic; the same
    one adds nothing, another is recorded (into openai both stay)."""
    other = {"type": "ephemeral", "ttl": "1h"}
    body = _body(_message(role, True, before, cc=CC, part_cc=CC if same else other))
    out, losses = _run("openai", "openai", body)
    assert out == body and losses == []
    out, losses = _run("openai", "anthropic", body)
    blocks = _anthropic_blocks(out, role)
    if role == "tool":  # the message's is the tool_result's own, the part's its text's: both carried
        assert blocks[-1]["cache_control"] == CC
        assert blocks[-1]["content"][-1]["cache_control"] == (CC if same else other)
        assert losses == []
        return
    assert blocks[-1]["cache_control"] == (CC if same else other)
    if same:
        assert losses == []
    else:
        assert losses == [(f"$.messages[{_index(role)}]",
                           f"cache_control of {SUBJECT[role]}: anthropic has no field for it; "
                           "the block's own cache_control is kept")]


@pytest.mark.parametrize("size", [1, 7, None])
@pytest.mark.parametrize("where", ["first", "before-payload", "after-payload"])
@pytest.mark.parametrize("kind", ["text", "image_url", "refusal"])
def test_part_cache_control(kind: str, where: str, size):
    """A part's cache_control in any key order: kept into openai from openai, the block's into
    anthropic, a loss into ollama."""
    payload = {"text": ("text", "a"), "refusal": ("refusal", "no"),
               "image_url": ("image_url", {"url": "https://x.test/y.png"})}[kind]
    members = {"first": [("cache_control", CC), ("type", kind), payload],
               "before-payload": [("type", kind), ("cache_control", CC), payload],
               "after-payload": [("type", kind), payload, ("cache_control", CC)]}[where]
    role = "assistant" if kind == "refusal" else "user"
    # (an image alone would leave ollama no message: NoMessageError, rpt/request-ollama-no-message-left)
    body = {"model": "m", "max_completion_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}] if role == "assistant" or kind == "image_url" else []}
    body["messages"].append({"role": role, "content": [dict(members)]})
    out, losses = _run("openai", "openai", body, size)
    assert out == body and losses == []
    out, losses = _run("openai", "anthropic", body, size)
    block = out["messages"][-1]["content"][-1]
    assert block["cache_control"] == CC
    assert all("cache_control" not in loss[1] for loss in losses)
    out, losses = _run("openai", "ollama", body, size)
    if kind == "image_url":  # an http image is not sent at all (a recorded loss, its breakpoint with it)
        assert losses == [("$.messages[1]", "image_url part: ollama has no image URLs; not fetched")]
    else:
        assert [loss for loss in losses if "cache_control" in loss[1]] != []
    assert "cache_control" not in json.dumps(out)


def test_anthropic_block_cache_control_into_openai_stays_a_loss():
    """Decided: an anthropic block's cache_control is not written into openai (the official API
    refuses members it does not declare): a recorded loss, as before."""
    body = {"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": CC}]}]}
    out, losses = _run("anthropic", "openai", body)
    assert "cache_control" not in json.dumps(out)
    assert losses == [("$.messages[0]", "cache_control of a text block: openai has no field for it")]


@pytest.mark.parametrize("role", ("system", "user", "assistant"))
def test_the_same_breakpoint_in_another_member_order_adds_nothing(role: str):
    """The message's and the part's are the same breakpoint whatever their members' order (as
    Python's dicts compare; the native encoder compared their JSON text: a loss there only)."""
    body = _body(_message(role, True, False, cc={"type": "ephemeral", "ttl": "1h"},
                          part_cc={"ttl": "1h", "type": "ephemeral"}))
    out, losses = _run("openai", "anthropic", body)
    assert _anthropic_blocks(out, role)[-1]["cache_control"] == {"ttl": "1h", "type": "ephemeral"}
    assert losses == []
