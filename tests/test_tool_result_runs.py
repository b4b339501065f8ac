"""Runs of tool results (parallel tool calls answered one after the other), every source into
every target: nothing may be inserted inside the run -- openai takes no message between two tool
messages, each answers the tool_calls message before the run -- and every result and image is
sent once. The results carry images (ollama ``images`` on a tool message, anthropic image blocks
in a ``tool_result``; a target without a place for them moves them, recorded) or, from openai,
several text parts. Table: sources x targets x 1-3 results x which result is rich x what follows
the run, at cuts 1 / 7 / whole, both backends (rpt/ollama-tool-results-images-run).
"""

from __future__ import annotations

import json

import pytest

import validity
from interlingua import Transcoder

DIALECTS = ("openai", "anthropic", "ollama")
CUTS = (1, 7, None)


def _image(i: int) -> str:
    """A distinct png (its first bytes show the type) for result ``i``."""
    return "iVBORw0KGgoAAAANSUhEUgAAAAE" + "ABCD"[i] + "AAAA"


def _result(i: int) -> str:
    return f"result-{i}"


def _part(i: int) -> str:
    return f"more-of-{i}"


def _body(source: str, count: int, rich: set[int], after: bool) -> bytes:
    """A request whose assistant turn makes ``count`` calls, answered in a run of results;
    the results in ``rich`` hold an image (openai: a second text part)."""
    ids = [f"call_{i}" for i in range(count)]
    tail = [{"role": "user", "content": "and?"}] if after else []
    if source == "ollama":
        calls = [{"id": ids[i], "function": {"name": "f", "arguments": {"i": i}}} for i in range(count)]
        results = [{"role": "tool", "content": _result(i), **({"images": [_image(i)]} if i in rich else {}),
                    "tool_name": "f", "tool_call_id": ids[i]} for i in range(count)]
        body = {"model": "m", "stream": False, "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": calls},
            *results, *tail]}
    elif source == "openai":
        calls = [{"id": ids[i], "type": "function", "function": {"name": "f", "arguments": json.dumps({"i": i})}}
                 for i in range(count)]
        results = [{"role": "tool", "tool_call_id": ids[i],
                    "content": ([{"type": "text", "text": _result(i)}, {"type": "text", "text": _part(i)}]
                                if i in rich else _result(i))} for i in range(count)]
        body = {"model": "m", "messages": [{"role": "user", "content": "q"},
                                           {"role": "assistant", "tool_calls": calls}, *results, *tail]}
    else:
        uses = [{"type": "tool_use", "id": ids[i], "name": "f", "input": {"i": i}} for i in range(count)]
        image = lambda i: {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _image(i)}}
        results = [{"type": "tool_result", "tool_use_id": ids[i],
                    "content": ([{"type": "text", "text": _result(i)}, image(i)] if i in rich else _result(i))}
                   for i in range(count)]
        text = [{"type": "text", "text": "and?"}] if after else []
        body = {"model": "m", "max_tokens": 100, "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": uses},
            {"role": "user", "content": results + text}]}
    return json.dumps(body).encode()


class _Unchecked(Transcoder):
    """Without the suite's target-API check (a source that leaves calls unanswered: judged here)."""

    def feed(self, data: bytes) -> bytes:
        out = super().feed(data)
        self.__dict__.pop("_validity", None)
        return out


def _transcode(source: str, target: str, body: bytes, losses: list | None = None, checked: bool = True) -> bytes:
    outs = []
    for cut in CUTS:
        t = (Transcoder if checked else _Unchecked)(source, target, kind="request")
        pieces = [body] if cut is None else [body[i:i + cut] for i in range(0, len(body), cut)]
        outs.append((b"".join(t.feed(p) for p in pieces) + t.close(), [(l.path, l.reason) for l in t.losses]))
    assert all(o == outs[0] for o in outs), "output or losses depend on the cut"
    if losses is not None:
        losses.extend(outs[0][1])
    return outs[0][0]


def _images_inside_their_results(out: bytes, count: int, rich: set[int]) -> None:
    """Into anthropic: each image sits in the content of the tool_result answering its call
    (a tool_result's content is a list of text and image blocks), none in the user message."""
    for message in json.loads(out)["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            assert block["type"] != "image", "an image outside the tool results"
            if block["type"] == "tool_result":
                i = int(block["tool_use_id"].rsplit("_", 1)[1])
                inner = [b for b in block.get("content") or [] if isinstance(b, dict)]
                images = [b["source"]["data"] for b in inner if b["type"] == "image"]
                assert images == ([_image(i)] if i in rich else []), f"result {i}'s images"


def _cases():
    for count in (1, 2, 3):
        for rich in [set(), *({i} for i in range(count)), *([set(range(count))] if count > 1 else [])]:
            yield count, rich


@pytest.mark.parametrize("after", [True, False], ids=["then-user", "run-last"])
@pytest.mark.parametrize("count,rich", list(_cases()), ids=lambda v: str(sorted(v)) if isinstance(v, set) else str(v))
@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_a_run_of_tool_results_stays_a_run_and_sends_everything_once(backend, source, target, count, rich, after):
    body = _body(source, count, rich, after)
    assert validity.check(source, "request", body, enforced_only=True) == [], "the input is valid for its own API"
    losses: list = []
    out = _transcode(source, target, body, losses)
    assert validity.check(target, "request", out, enforced_only=True) == []  # (anthropic: tool_results first)
    text = out.decode()
    for i in range(count):
        assert text.count(_result(i)) == 1, f"result {i} sent once"
        if i in rich:
            mark = _part(i) if source == "openai" else _image(i)
            assert text.count(mark) == 1, f"the {'part' if source == 'openai' else 'image'} of result {i} sent once"
    if target == "anthropic" and source != "openai":
        _images_inside_their_results(out, count, rich)
        assert not [loss for loss in losses if "image" in loss[1]], "an image in a tool result is not lost"


def _ollama_result(i: int, order: str, rich: bool) -> dict:
    """An ollama tool message with its keys in the client's order (content, images), the images
    first, or without content (the images alone; ``""``)."""
    images = {"images": [_image(i)]} if rich else {}
    link = {"tool_name": "f", "tool_call_id": f"call_{i}"}
    if order == "images-first":
        return {"role": "tool", **images, "content": _result(i), **link}
    if order == "no-content":
        return {"role": "tool", **images, **link}
    if order == "empty-content":
        return {"role": "tool", "content": "", **images, **link}
    return {"role": "tool", "content": _result(i), **images, **link}


@pytest.mark.parametrize("sort", [False, True], ids=["client-order", "sorted-keys"])
@pytest.mark.parametrize("order", ["images-first", "no-content", "empty-content"])
@pytest.mark.parametrize("count,rich", list(_cases()), ids=lambda v: str(sorted(v)) if isinstance(v, set) else str(v))
def test_ollama_tool_images_go_inside_their_anthropic_results_in_any_key_order(backend, count, rich, order, sort):
    # an ollama tool message's images are its result's: anthropic gets one tool_result per
    # message, its content [text, image ...] in the source's order, an empty text left out
    calls = [{"id": f"call_{i}", "function": {"name": "f", "arguments": {"i": i}}} for i in range(count)]
    body = json.dumps({"model": "m", "stream": False, "messages": [
        {"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": calls},
        *[_ollama_result(i, order, i in rich) for i in range(count)], {"role": "user", "content": "and?"}]},
        sort_keys=sort).encode()
    losses: list = []
    out = _transcode("ollama", "anthropic", body, losses)
    assert validity.check("anthropic", "request", out, enforced_only=True) == []
    assert losses == []
    _images_inside_their_results(out, count, rich)
    results = [b for b in json.loads(out)["messages"][2]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [f"call_{i}" for i in range(count)]
    for i, r in enumerate(results):
        texts = [b["text"] for b in r.get("content", []) if b["type"] == "text"]
        assert texts == ([] if order != "images-first" else [_result(i)]), f"result {i}'s text"


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "by-order"])
@pytest.mark.parametrize("images", [False, True], ids=["text", "images"])
@pytest.mark.parametrize("new", [1, 2])
@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_a_tool_message_with_calls_of_its_own_ends_its_run_and_opens_the_next(backend, target, count, new, images,
                                                                              ids):
    # ollama takes tool_calls on a tool message: its result answers the call before it (the
    # last of the run's), its calls go in an assistant message after it, answered by the results
    # that follow (rpt/ollama-tool-message-with-calls)
    first = [f"call_{i}" for i in range(count)]
    second = [f"call_n{i}" for i in range(new)]

    def calls(names):
        return [{**({"id": name} if ids else {}), "function": {"name": "f", "arguments": {}}} for name in names]

    def result(name, **extra):
        return {"role": "tool", "content": _result(len(seen)), **extra, **({"tool_call_id": name} if ids else {})}

    seen: list = []
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": calls(first)}]
    for i, name in enumerate(first):
        last = i == count - 1
        extra = {"images": [_image(0)], "tool_calls": calls(second)} if last and images else (
            {"tool_calls": calls(second)} if last else {})
        messages.append(result(name, **extra))
        seen.append(name)
    for name in second:
        messages.append(result(name))
        seen.append(name)
    messages.append({"role": "user", "content": "and?"})
    out = _transcode("ollama", target, json.dumps({"model": "m", "stream": False, "messages": messages}).encode())
    assert validity.check(target, "request", out, enforced_only=True) == []
    text = out.decode()
    assert all(text.count(_result(i)) == 1 for i in range(len(seen))), "every result sent once"
    assert text.count(_image(0)) == images
    assert text.count('"name":"f"') == count + new, "every call sent once"


def _waiting_body(count: int, extra: str, where: int) -> tuple[bytes, str]:
    """An ollama request whose ``count`` calls are answered by a run of tool messages, with user
    blocks that come while calls still await their results: the assistant's image after its
    tool_calls (``assistant-image``), or a user / system message after ``where`` of the results
    (Ollama takes it; ``where == count``: after the run, as usual). The marker it carries."""
    calls = [{"id": f"call_{i}", "function": {"name": "f", "arguments": {"i": i}}} for i in range(count)]
    assistant = {"role": "assistant", "content": "", "tool_calls": calls}
    marker = _image(3)
    if extra == "assistant-image":
        assistant["images"] = [marker]
    results = [{"role": "tool", "content": _result(i), "tool_name": "f", "tool_call_id": f"call_{i}"}
               for i in range(count)]
    if extra != "assistant-image":
        role, images = {"user-text": ("user", []), "user-image": ("user", [marker]),
                        "system-image": ("system", [marker])}[extra]
        if extra == "user-text":
            marker = "meanwhile"
        results.insert(where, {"role": role, "content": "meanwhile", **({"images": images} if images else {})})
    body = {"model": "m", "stream": False, "messages": [
        {"role": "user", "content": "q"}, assistant, *results, {"role": "user", "content": "and?"}]}
    return json.dumps(body).encode(), marker


def _waiting_cases():
    for count in (1, 2, 3):
        yield count, "assistant-image", 0
        for extra in ("user-text", "user-image", "system-image"):
            for where in range(count + 1):
                yield count, extra, where


def _waiting_run(target: str, count: int, extra: str, where: int) -> tuple[list, str, list]:
    """``_waiting_body`` into ``target``: valid for its API, every result and the waiting
    block sent once; (the output's messages, the block's marker, the losses)."""
    body, marker = _waiting_body(count, extra, where)
    losses: list = []
    out = _transcode("ollama", target, body, losses)
    assert validity.check(target, "request", out, enforced_only=True) == []
    text = out.decode()
    assert all(text.count(_result(i)) == 1 for i in range(count)), "every result sent once"
    assert text.count(marker) == 1, "the waiting block sent once"
    return json.loads(out)["messages"], marker, losses


@pytest.mark.parametrize("count,extra,where", list(_waiting_cases()))
def test_user_blocks_that_come_while_calls_await_results_follow_the_results_into_anthropic(backend, count, extra,
                                                                                          where):
    # anthropic wants every tool_use answered in the next user message, its tool_results
    # first: such blocks wait for the run of results and follow them, in their order
    # (rpt/ollama-user-blocks-before-tool-results-anthropic, ollama-user-between-tool-results-anthropic)
    messages, marker, losses = _waiting_run("anthropic", count, extra, where)  # (pairing, tool_results first)
    turn = messages[2]["content"]  # the user message after the calls: every result, then the rest
    assert [b["tool_use_id"] for b in turn if b["type"] == "tool_result"] == [f"call_{i}" for i in range(count)]
    assert marker in json.dumps(turn), "the waiting block follows the results in their user message"
    moved = {"$.messages[1]"} if extra == "assistant-image" else {f"$.messages[{2 + where}]"}
    assert {path for path, _ in losses} <= moved, "only the places already recorded"


@pytest.mark.parametrize("count", [1, 2, 3])
def test_an_assistant_image_after_its_calls_waits_for_the_run_of_tool_messages_into_openai(backend, count):
    # the same block into openai: no message between the tool_calls and their tool messages;
    # it goes in a user message of its own after the run (its place recorded, as before)
    body, marker = _waiting_body(count, "assistant-image", 0)
    losses: list = []
    out = _transcode("ollama", "openai", body, losses)
    assert validity.check("openai", "request", out, enforced_only=True) == []
    roles = [m["role"] for m in json.loads(out)["messages"]]
    assert roles == ["user", "assistant", *["tool"] * count, "user", "user"]
    assert marker in json.dumps(json.loads(out)["messages"][2 + count]) and out.decode().count(marker) == 1
    assert [path for path, _ in losses] == ["$.messages[1]"]


def _mid_run_body(count: int, carrier: int, new: int, follows: str, ids: bool) -> tuple[bytes, list, list]:
    """An assistant turn of ``count`` calls answered by a run of tool messages, the
    ``carrier``-th of which carries ``new`` calls of its own; then ``follows``. Returns the
    body, the (call, result) pairs the output must link, and the calls with no result."""
    first = [f"call_{i}" for i in range(count)]
    second = [f"call_n{i}" for i in range(new)]

    def calls(names, name):
        return [{**({"id": n} if ids else {}), "function": {"name": name, "arguments": {"k": n}}} for n in names]

    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": calls(first, "f")}]
    for i, call in enumerate(first):
        extra = {"tool_calls": calls(second, "g")} if i == carrier else {}
        messages.append({"role": "tool", "content": _result(i), **extra, **({"tool_call_id": call} if ids else {})})
    links = [(call, _result(i)) for i, call in enumerate(first)]
    unanswered = list(second)
    if follows == "results":
        for j, call in enumerate(second):
            messages.append({"role": "tool", "content": f"new-{j}", **({"tool_call_id": call} if ids else {})})
            links.append((call, f"new-{j}"))
        unanswered = []
    elif follows == "user":
        messages.append({"role": "user", "content": "and?"})
    elif follows == "assistant":
        messages.append({"role": "assistant", "content": "so"})
    return json.dumps({"model": "m", "stream": False, "messages": messages}).encode(), links, unanswered


def _linked(target: str, out: bytes) -> tuple[dict, dict]:
    """The output's calls (arguments' ``k`` -> id) and results (text -> the id it answers)."""
    body = json.loads(out)
    calls, results = {}, {}
    for m in body["messages"]:
        if target == "openai":
            for c in m.get("tool_calls") or []:
                k = json.loads(c["function"]["arguments"])["k"]
                assert k not in calls, f"call {k} sent twice"
                calls[k] = c["id"]
            if m["role"] == "tool":
                assert m["content"] not in results, f"result {m['content']} sent twice"
                results[m["content"]] = m.get("tool_call_id")
        else:
            for b in m["content"] if isinstance(m["content"], list) else []:
                if b["type"] == "tool_use":
                    assert b["input"]["k"] not in calls, f"call {b['input']['k']} sent twice"
                    calls[b["input"]["k"]] = b["id"]
                elif b["type"] == "tool_result":  # (an ollama result's content: a list of text blocks)
                    text = b["content"] if isinstance(b["content"], str) else \
                        "".join(p["text"] for p in b.get("content") or [] if p["type"] == "text")
                    assert text not in results, f"result {text} sent twice"
                    results[text] = b["tool_use_id"]
    return calls, results


@pytest.mark.parametrize("ids", [False, True], ids=["by-order", "ids"])
@pytest.mark.parametrize("follows", ["nothing", "user", "results", "assistant"])
@pytest.mark.parametrize("new", [1, 2])
@pytest.mark.parametrize("count,carrier", [(c, i) for c in (1, 2, 3) for i in sorted({0, c // 2, c - 1})],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_a_tool_message_with_calls_anywhere_in_its_run_sends_them_after_the_run(backend, target, count, carrier, new,
                                                                                 follows, ids):
    # ollama takes tool_calls on a tool message: its result answers the batch before it; its
    # calls wait until the run of results answering that batch ends (rpt/ollama-tool-message-
    # with-calls-mid-run), then go in one assistant message, answered by the results after it
    body, links, unanswered = _mid_run_body(count, carrier, new, follows, ids)
    out = _transcode("ollama", target, body, checked=not unanswered)
    problems = validity.check(target, "request", out, enforced_only=True)
    if unanswered:  # (the source left calls unanswered: only that may be wrong with the output)
        assert all("has no tool message after it" in p or "has no tool_result in" in p for p in problems), problems
    else:
        assert problems == []
    calls, results = _linked(target, out)
    assert sorted(calls) == sorted([c for c, _ in links] + unanswered), "every call sent once"
    for call, text in links:
        assert results[text] == calls[call], f"{text} answers {call}"
    assert len(results) == len(links), "every result sent once"


@pytest.mark.parametrize("follows", ["nothing", "user", "results"])
@pytest.mark.parametrize("new", [1, 2])
@pytest.mark.parametrize("count,carrier", [(c, i) for c in (1, 2, 3) for i in sorted({0, c // 2, c - 1})],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_user_blocks_waiting_for_results_go_before_the_calls_held_after_the_run(backend, target, count, carrier, new,
                                                                                  follows):
    # both holds at once: the assistant's image after its tool_calls waits for the run of
    # results (the user hold), a tool message of the run carries calls (calls-after-run); when
    # the run ends the user blocks go first (after the batch's results), then the new calls
    body, links, unanswered = _mid_run_body(count, carrier, new, follows, True)
    request = json.loads(body)
    marker = _image(3)
    request["messages"][1]["images"] = [marker]
    out = _transcode("ollama", target, json.dumps(request).encode(), checked=not unanswered)
    problems = validity.check(target, "request", out, enforced_only=True)
    if unanswered:
        assert all("has no tool message after it" in p or "has no tool_result in" in p for p in problems), problems
    else:
        assert problems == []
    calls, results = _linked(target, out)
    for call, text in links:
        assert results[text] == calls[call], f"{text} answers {call}"
    assert out.decode().count(marker) == 1, "the image sent once"
    messages = json.loads(out)["messages"]
    at = next(i for i, m in enumerate(messages) if marker in json.dumps(m))
    new_calls = next(i for i, m in enumerate(messages) if '"call_n0"' in json.dumps(m))
    assert messages[new_calls]["role"] == "assistant" and at < new_calls, "the image before the new calls"
    if target == "anthropic":
        assert at == 2, "in the user message of the batch's results"
    else:
        assert [m["role"] for m in messages[:at + 2]] == ["user", "assistant", *["tool"] * count, "user", "assistant"]


def _between_cases():
    for count in (2, 3):
        for carrier in range(count - 1):  # the batch is still open after the carrier
            for where in range(carrier + 1, count):
                for extra in ("user-text", "user-image", "system-image"):
                    for follows in ("nothing", "results"):
                        yield count, carrier, where, extra, follows


def _between_body(count: int, carrier: int, where: int, extra: str, follows: str):
    """A mid-run body (``_mid_run_body``) with a user or system message inserted before the
    result ``where``: (body, the message's marker, links, unanswered)."""
    body, links, unanswered = _mid_run_body(count, carrier, 1, follows, False)
    request = json.loads(body)
    marker = "meanwhile" if extra == "user-text" else _image(3)
    role = "user" if extra.startswith("user") else "system"
    between = {"role": role, "content": "meanwhile", **({} if extra == "user-text" else {"images": [marker]})}
    request["messages"].insert(2 + where, between)
    return json.dumps(request).encode(), marker, links, unanswered


@pytest.mark.parametrize("count,carrier,where,extra,follows", list(_between_cases()))
def test_a_user_message_between_the_results_of_a_run_whose_tool_message_carries_calls_into_anthropic(
        backend, count, carrier, where, extra, follows):
    # a user or system message between tool messages (Ollama takes it) does not end the run:
    # the next result still answers the batch, the message waits in the user hold and goes
    # after the batch's results, then the held calls' assistant message
    body, marker, links, unanswered = _between_body(count, carrier, where, extra, follows)
    out = _transcode("ollama", "anthropic", body, checked=not unanswered)
    problems = validity.check("anthropic", "request", out, enforced_only=True)
    if unanswered:
        assert all("has no tool_result in" in p for p in problems), problems
    else:
        assert problems == []
    calls, results = _linked("anthropic", out)
    for call, text in links:
        assert results[text] == calls[call], f"{text} answers {call}"
    messages = json.loads(out)["messages"]
    assert out.decode().count(marker) == 1 and marker in json.dumps(messages[2]), "after the batch's results"
    assert [b["type"] for b in messages[3]["content"]] == ["tool_use"], "then the new calls"


_WAITING_ROLES = {"assistant-image": ["user"], "user-text": ["user"], "user-image": ["user"],
                  "system-image": ["system", "user"]}


@pytest.mark.parametrize("count,extra,where", list(_waiting_cases()))
def test_user_blocks_that_come_while_calls_await_results_follow_the_results_into_openai(backend, count, extra,
                                                                                       where):
    # openai takes no message between an assistant message's tool_calls and the tool messages
    # answering them: a user or system message that comes while calls await their results
    # (Ollama takes one between tool messages) waits in the run hold and follows the run, in
    # its order (rpt/ollama-user-between-tool-results-openai); nothing new recorded
    messages, marker, losses = _waiting_run("openai", count, extra, where)  # (no message inside the run)
    waiting = _WAITING_ROLES[extra]
    assert [m["role"] for m in messages] == ["user", "assistant", *["tool"] * count, *waiting, "user"]
    assert [m["tool_call_id"] for m in messages[2:2 + count]] == [f"call_{i}" for i in range(count)]
    assert marker in json.dumps(messages[2 + count:2 + count + len(waiting)]), "after the run, in its order"
    moved = {"$.messages[1]"} if extra == "assistant-image" else {f"$.messages[{2 + where}]"}
    assert {path for path, _ in losses} <= moved, "only the places already recorded"
    if extra != "system-image":
        assert {path for path, _ in losses} == (moved if extra == "assistant-image" else set())


@pytest.mark.parametrize("count,carrier,where,extra,follows", list(_between_cases()))
def test_a_user_message_between_the_results_of_a_run_whose_tool_message_carries_calls_into_openai(
        backend, count, carrier, where, extra, follows):
    # the same into openai: the message waits in the run hold and follows the batch's tool
    # messages, then the held calls' assistant message (and the results answering it)
    body, marker, links, unanswered = _between_body(count, carrier, where, extra, follows)
    out = _transcode("ollama", "openai", body, checked=not unanswered)
    problems = validity.check("openai", "request", out, enforced_only=True)
    if unanswered:
        assert problems and all("has no tool message after it" in p for p in problems), problems
    else:
        assert problems == []
    calls, results = _linked("openai", out)
    for call, text in links:
        assert results[text] == calls[call], f"{text} answers {call}"
    messages = json.loads(out)["messages"]
    waiting = ["system", "user"] if extra == "system-image" else ["user"]
    roles = ["user", "assistant", *["tool"] * count, *waiting, "assistant"]
    assert [m["role"] for m in messages[:len(roles)]] == roles, "the batch's results, the message, the new calls"
    assert out.decode().count(marker) == 1 and marker in json.dumps(messages[2 + count:2 + count + len(waiting)])
    assert messages[len(roles) - 1].get("tool_calls"), "then the new calls"
