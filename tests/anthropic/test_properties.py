"""Properties: chunking invariance; a->o->a and o->a->o equal on what both carry.

Conversations are generated within what both dialects carry (text, parallel tool
calls with object arguments, tool results, images, system), so the round trips
must record no loss and come back equal after normalising the documented
differences: string content == one text part; consecutive tool messages and the
user message after them == one anthropic user message; developer == system.
"""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from interlingua import Transcoder

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
#: a text block's text: not blank -- anthropic refuses a text block of whitespace only, so one
#: from another dialect is not sent into it (``encoding.blank``: spaces, newlines, tabs, returns)
WORDS = TEXT.filter(lambda text: text.strip(" \n\t\r"))
ARGS = st.dictionaries(st.text("abcxyz", min_size=1, max_size=4),
                       st.one_of(st.integers(-5, 5), TEXT, st.booleans(), st.none()), max_size=3)


@st.composite
def anthropic_bodies(draw):
    messages = []
    n_turns = draw(st.integers(1, 3))
    call = 0
    for turn in range(n_turns):
        user = [{"type": "text", "text": draw(WORDS)}]
        if draw(st.booleans()):
            user.append({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": draw(st.text("ABCD+/", min_size=4, max_size=12))}})
        messages.append({"role": "user", "content": user if draw(st.booleans()) or len(user) > 1 else user[0]["text"]})
        assistant = []
        if draw(st.booleans()):
            assistant.append({"type": "text", "text": draw(WORDS)})
        calls = draw(st.integers(0, 2))
        ids = []
        for _ in range(calls):
            call += 1
            ids.append(f"toolu_{call}")
            assistant.append({"type": "tool_use", "id": ids[-1], "name": "f", "input": draw(ARGS)})
        if not assistant:
            assistant.append({"type": "text", "text": draw(WORDS)})
        messages.append({"role": "assistant", "content": assistant})
        if ids:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": draw(TEXT)} for i in ids]})
    if messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": draw(WORDS)})
    body = {"model": "m", "max_tokens": draw(st.integers(1, 9999)), "messages": messages}
    if draw(st.booleans()):
        body["system"] = draw(WORDS)
    return json.dumps(body, ensure_ascii=draw(st.booleans())).encode()


def normal_anthropic(body: dict) -> list:
    """Messages as (role, blocks), string content as a text block, consecutive user messages merged."""
    out = []
    if body.get("system"):
        system = body["system"]
        out.append(("system", [("text", system if isinstance(system, str) else " ".join(b["text"] for b in system))]))
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = []
        for b in content:
            if b["type"] == "text":
                blocks.append(("text", b["text"]))
            elif b["type"] == "tool_use":
                blocks.append(("call", b["id"], b["name"], json.dumps(b["input"], sort_keys=True)))
            elif b["type"] == "tool_result":
                c = b["content"]
                blocks.append(("result", b["tool_use_id"], c if isinstance(c, str) else c[0]["text"]))
            elif b["type"] == "image":
                blocks.append(("image", b["source"]["data"]))
        if out and out[-1][0] == m["role"] == "user":
            out[-1][1].extend(blocks)
        else:
            out.append((m["role"], blocks))
    # tool results first in a user message (openai's order), the rest after, in order
    return [(role, sorted(blocks, key=lambda b: b[0] != "result")) for role, blocks in out]


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    return [body[a:b] for a, b in zip([0] + points, points + [len(body)])]


def transcode(chunks, source, target):
    t = Transcoder(source, target)
    out = b"".join(t.feed(c) for c in chunks) + t.close()
    return out, t.losses


@given(anthropic_bodies(), st.lists(st.integers(0, 10 ** 6), max_size=12))
def test_anthropic_chunking_invariance(body, cuts):
    whole, _ = transcode([body], "anthropic", "anthropic")
    pieces, _ = transcode(split(body, cuts), "anthropic", "anthropic")
    assert pieces == whole
    assert json.loads(whole) == json.loads(body)
    to_openai, _ = transcode([body], "anthropic", "openai")
    assert json.loads(transcode(split(body, cuts), "anthropic", "openai")[0]) == json.loads(to_openai)


@given(anthropic_bodies(), st.lists(st.integers(0, 10 ** 6), max_size=6))
def test_anthropic_openai_anthropic(body, cuts):
    openai_body, losses = transcode(split(body, cuts), "anthropic", "openai")
    assert losses == []
    back, losses = transcode(split(openai_body, cuts), "openai", "anthropic")
    assert losses == []
    assert normal_anthropic(json.loads(back)) == normal_anthropic(json.loads(body))
    assert json.loads(back)["max_tokens"] == json.loads(body)["max_tokens"]


@given(anthropic_bodies())
def test_openai_anthropic_openai(body):
    """Start from the openai form of a generated conversation: o -> a -> o is JSON-equal."""
    openai_body, _ = transcode([body], "anthropic", "openai")
    anthropic_again, losses = transcode([openai_body], "openai", "anthropic")
    assert losses == []
    openai_again, losses = transcode([anthropic_again], "anthropic", "openai")
    assert losses == []
    assert normal_openai(json.loads(openai_again)) == normal_openai(json.loads(openai_body))


def normal_openai(body: dict) -> dict:
    """String content == one text part (documented: anthropic merges a user text into
    the tool-result message, which comes back as parts)."""
    for m in body["messages"]:
        if isinstance(m.get("content"), str):
            m["content"] = [{"type": "text", "text": m["content"]}]
    return body
