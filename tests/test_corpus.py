"""Realistic gateway traffic (issue 16): every corpus item into every dialect.

For each item (``tests/corpus``: a coding agent's, an app's and a local app's requests
captured from the official clients; backend responses and streams) and each target:

* the output does not depend on where the input was cut (``CHUNK`` pieces vs whole);
* the loss records are exactly the reviewed list in ``tests/corpus/expected_losses.json``
  (regenerate: ``.venv/bin/python -m tests.corpus --update``, then review the diff);
* the target's official types accept the output, and the target's official client consumes
  it -- requests are sent through it unchanged, responses parsed, streams accumulated
  (openai ``chat.completions.stream``, anthropic ``MessageStream``, ollama's iterator);
* what the target's client sees is what the source's own client sees in the source
  (text, tool calls, finish reason, token counts), as far as the target can carry it;
* the round trip into the source's own dialect is JSON-equal (per frame for streams).

A case that fails today because of a known bug owned by someone else is a strict xfail
naming the issue item (``KNOWN``): the fix flips it to a pass, and its owner removes the
mark (and regenerates the expected losses if the fix changes them).
"""

from __future__ import annotations

import json

import pytest

import fixed_clock
from corpus import ITEMS, cases, load_expected, run
from corpus.targets import Seen, consume, validate
from rpt import split_stream_events

EXPECTED = load_expected()

#: (check, item, target) -> why it fails today (the owner's fix flips it; the owner removes it)
KNOWN: dict[tuple[str, str, str], str] = {
}


def _params(check: str, where=lambda item, target: True):
    out = []
    for name, target in cases():
        if not where(ITEMS[name], target):
            continue
        reason = KNOWN.get((check, name, target)) or KNOWN.get((check, name, "*"))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(name, target, marks=marks, id=f"{name}->{target}"))
    return out


def _json(kind: str, data: bytes):
    return [v for _, v in split_stream_events(data)] if kind == "stream" else json.loads(data)


# -- the checks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name,target", _params("losses"))
def test_losses_are_the_reviewed_list(name, target):
    out, losses = run(name, target)
    whole, whole_losses = run(name, target, len(ITEMS[name].body))
    assert out == whole, "the output depends on where the input was cut"
    assert losses == whole_losses
    assert losses == EXPECTED[name][target], "run `python -m tests.corpus --update` and review the diff"


@pytest.mark.parametrize("name,target", _params("client"))
def test_target_client_takes_the_output(name, target):
    item = ITEMS[name]
    out, _ = run(name, target)
    validate(target, item.kind, out)
    consume(target, item.kind, out)


@pytest.mark.parametrize("name,target", _params("same", lambda item, target: item.kind != "request"))
def test_target_client_sees_what_the_source_client_sees(name, target):
    """Responses and streams (requests: ``test_request_conversation_survives``)."""
    item = ITEMS[name]
    out, _ = run(name, target)
    want: Seen = consume(item.dialect, item.kind, item.body)
    got: Seen = consume(target, item.kind, out)
    assert got.text == want.text
    if item.cut_call and target == item.dialect:  # the same client on the same bytes
        assert got.tools == want.tools
    elif item.cut_call:  # the cut-off text itself, whatever the client makes of it
        assert [(n, _raw(a)) for _, n, a in got.tools] == [(n, _source_raw(item)) for _, n, _ in want.tools]
    else:
        assert [(n, json.loads(a)) for _, n, a in got.tools] == [(n, json.loads(a)) for _, n, a in want.tools]
    if target != "ollama" and item.dialect != "ollama":
        assert [i for i, _, _ in got.tools] == [i for i, _, _ in want.tools]
    assert got.finish == _finish_in(target, want.finish)
    assert (got.input, got.output) == (want.input, want.output)
    if target != "openai":  # openai Chat Completions has no reasoning field (a recorded loss)
        assert got.reasoning == want.reasoning


def _finish_in(target: str, finish: str) -> str:
    """A finish reason as the target can say it (only anthropic names a stop sequence)."""
    return "end_turn" if finish == "stop_sequence" and target != "anthropic" else finish


def _raw(arguments: str) -> str:
    """The argument text a client holds: openai's string, or what a JSON-object dialect wraps."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value.get("_raw_arguments", arguments) if isinstance(value, dict) else arguments


def _source_raw(item) -> str:
    """The cut-off arguments as the source sent them (the anthropic client partial-parses them)."""
    if item.dialect == "openai":
        return consume("openai", item.kind, item.body).tools[0][2]
    return "".join(e["delta"]["partial_json"] for _, e in split_stream_events(item.body)
                   if e.get("type") == "content_block_delta" and e["delta"]["type"] == "input_json_delta")


@pytest.mark.parametrize("name,target", _params("round-trip", lambda item, target: target == item.dialect))
def test_round_trip_is_json_equal(name, target):
    item = ITEMS[name]
    out, _ = run(name, target)
    assert _json(item.kind, out) == _json(item.kind, item.body)


# -- what each request conversation must keep -----------------------------------------------------


def _conversation(dialect: str, body: dict) -> dict:
    """What every dialect's request must keep of a conversation: its tool calls, one result
    per call, right after the turn that made the calls (before any user text), and every
    assistant turn."""
    calls = results = assistant = 0
    misplaced: list[int] = []  # messages where a call's results do not follow the call
    messages = body["messages"]
    for at, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        assistant += 1
        if dialect == "anthropic":
            ids = [b["id"] for b in m["content"] if isinstance(m["content"], list) and b["type"] == "tool_use"]
            nxt = messages[at + 1]["content"] if at + 1 < len(messages) else []
            head = [b.get("tool_use_id") for b in nxt if isinstance(nxt, list)][:len(ids)]
            answered = sum(b["type"] == "tool_result" for m2 in messages if isinstance(m2["content"], list)
                           for b in m2["content"] if b.get("tool_use_id") in ids)
        else:
            ids = m.get("tool_calls") or []
            following = messages[at + 1:at + 1 + len(ids)]
            head = [x for x in following if x["role"] == "tool"]
            answered = len(head)
            if at + 1 + len(ids) < len(messages) and messages[at + 1 + len(ids)]["role"] == "tool":
                misplaced.append(at)  # more results than calls
        calls += len(ids)
        results += answered
        if ids and (len(head) != len(ids) or (dialect == "anthropic" and head != ids)):
            misplaced.append(at)
    return {"calls": calls, "results": results, "assistant_turns": assistant, "misplaced_results": misplaced}


@pytest.mark.parametrize("name,target", _params("conversation", lambda item, target: item.kind == "request"))
def test_request_conversation_survives(name, target):
    item = ITEMS[name]
    out, _ = run(name, target)
    got = _conversation(target, json.loads(out))
    want = _conversation(item.dialect, json.loads(item.body))
    assert want["misplaced_results"] == []  # the corpus itself is well formed
    assert got == want


# -- the rules issue 16 adds (each proven over the whole corpus) ---------------------------------


@pytest.mark.parametrize("name,target", _params("rules", lambda item, target: item.kind != "request"
                                                 and target == "anthropic"))
def test_anthropic_thinking_comes_first_and_an_unsigned_one_is_recorded(name, target):
    """issue 16 item 4: anthropic clients expect thinking before text; an empty signature
    cannot be replayed, so it is a recorded loss."""
    out, losses = run(name, target)
    seen = consume(target, ITEMS[name].kind, out)
    kinds = seen.blocks
    assert kinds == sorted(kinds, key=lambda k: k != "thinking"), kinds
    if "" in seen.signatures:
        assert any("signature" in reason for _, _, reason in losses)


@pytest.mark.parametrize("name,target", _params("rules", lambda item, target: item.kind == "request"
                                                 and target == "anthropic"))
def test_anthropic_request_has_no_thinking_with_a_forced_tool(name, target):
    """issue 16 item 5: Anthropic's API rejects thinking together with a forced tool_choice."""
    body = json.loads(run(name, target)[0])
    thinking = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
    forced = (body.get("tool_choice") or {}).get("type") in ("any", "tool")
    assert not (thinking and forced)


@pytest.mark.parametrize("target", ["openai", "anthropic"])
def test_ids_from_ollama_are_unique_and_times_come_from_the_source(target):
    """issue 16 item 6: every response gets its own id; openai's created is ollama's created_at."""
    names = [n for n, i in ITEMS.items() if i.dialect == "ollama" and i.kind != "request"]
    seen = [consume(target, ITEMS[n].kind, run(n, target)[0]) for n in names]
    assert len({s.id for s in seen}) == len(seen), [s.id for s in seen]
    if target == "openai":
        created_at = consume("ollama", "response", ITEMS["ollama-response-tools"].body).created
        assert seen[names.index("ollama-response-tools")].created == _epoch(created_at)


def _epoch(stamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(stamp[:26] + "Z" if len(stamp) > 27 else stamp).timestamp())


@pytest.mark.parametrize("name", [n for n, i in ITEMS.items() if i.kind != "request" and i.dialect != "ollama"])
def test_ollama_outputs_carry_created_at(name):
    """issue 16 item 6: ollama's clients read created_at; it is the source's time (openai
    created), else the clock at the response's start (anthropic has no time)."""
    seen = consume("ollama", ITEMS[name].kind, run(name, "ollama")[0])
    source = consume(ITEMS[name].dialect, ITEMS[name].kind, ITEMS[name].body)
    want = source.created if ITEMS[name].dialect == "openai" else int(fixed_clock.CLOCK)
    assert _epoch(seen.created) == want, seen.created


@pytest.mark.parametrize("target", ["openai", "ollama"])
def test_a_stop_sequence_value_is_recorded(target):
    """issue 16 item 7: the stop sequence anthropic names has no field in openai / ollama."""
    _, losses = run("anthropic-response-stop-sequence", target)
    assert any("stop_sequence" in path for _, path, _ in losses), losses


def test_a_late_openai_system_message_moved_into_anthropic_system_is_recorded():
    """issue 16 item 7: openai-app's system message at index 8 is moved to the top."""
    _, losses = run("openai-app", "anthropic")
    assert any(path.startswith("$.messages[8]") for _, path, _ in losses), losses
