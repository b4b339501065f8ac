"""The response side of every official client, classified and carried (issue 14).

* Every field of the installed clients' response models (openai ``ChatCompletion``,
  ``ChatCompletionChunk`` and their nested types; anthropic ``Message``, every
  content block and citation, ``Usage``, the stream events; ollama
  ``ChatResponse``) is classified in ``dialects/<name>/response_fields.py``: a
  field a client release adds fails here until it is.
* A response and a stream carrying every one of those fields (filled, generated
  from the models: ``full_bodies``) transcode to their own dialect JSON-equal,
  frame for frame, with no loss -- at any cut.
"""

from __future__ import annotations

import importlib
import json

import anthropic.types as at
import pytest
from ollama import ChatResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from interlingua import Transcoder
from rpt import split_stream_events

from client_models import covered, field_paths, type_tag, variant_models
from full_bodies import DELTAS_FOR, RESPONSES, STREAMS, stream_bytes

DIALECTS = ("openai", "anthropic", "ollama")


def _table(dialect: str, kind: str) -> dict:
    module = importlib.import_module(f"interlingua.dialects.{dialect}.response_fields")
    return module.RESPONSE if kind == "response" else module.STREAM


def _client_paths(dialect: str, kind: str) -> list[str]:
    if dialect == "openai":
        return list(field_paths(ChatCompletion if kind == "response" else ChatCompletionChunk))
    if dialect == "ollama":
        return list(field_paths(ChatResponse))
    if kind == "response":
        return list(field_paths(at.Message))
    return [f"{type_tag(event)}:{path}" for event in variant_models(at.RawMessageStreamEvent)
            for path in field_paths(event)]


@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_client_field_is_classified(dialect, kind):
    table = _table(dialect, kind)
    paths = _client_paths(dialect, kind)
    unclassified = [p for p in paths if not covered(p, table)]
    assert unclassified == [], f"classify these in dialects/{dialect}/response_fields.py"
    stale = [p for p in table if not any(q == p or q.startswith(p + "<") or q.startswith(p + ".")
                                         or q.startswith(p + "[") for q in paths)]
    assert stale == [], "fields the installed client no longer declares"


def test_a_field_a_release_adds_fails_until_classified():
    """The check is live: a model with one more field than the table knows is caught."""
    from pydantic import create_model

    grown = create_model("GrownChatCompletion", __base__=ChatCompletion, future_field=(int, 1))
    table = _table("openai", "response")
    assert [p for p in field_paths(grown) if not covered(p, table)] == ["$.future_field"]


def test_every_anthropic_delta_type_has_its_block():
    deltas = {type_tag(m) for m in variant_models(at.RawContentBlockDeltaEvent.model_fields["delta"].annotation)}
    assert deltas == {d for names in DELTAS_FOR.values() for d in names}


def _cut_run(source, target, kind, body, size):
    t = Transcoder(source, target, kind=kind)
    out = b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close()
    return out, t


def _filled(value, path="$"):
    """Every member of the generated value is filled: no null anywhere."""
    if isinstance(value, dict):
        for k, v in value.items():
            _filled(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _filled(v, f"{path}[{i}]")
    else:
        assert value is not None, f"{path} is null"


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_full_response_same_dialect_is_json_equal(dialect, size, backend):
    body = RESPONSES[dialect]()
    _filled(body)
    data = json.dumps(body).encode()
    out, t = _cut_run(dialect, dialect, "response", data, size)
    assert json.loads(out) == body
    assert t.losses == []


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_full_stream_same_dialect_is_equal_frame_for_frame(dialect, size, backend):
    events = STREAMS[dialect]()
    for _, data in events:
        _filled(data)
    data = stream_bytes(dialect, events)
    out, t = _cut_run(dialect, dialect, "stream", data, size)
    assert split_stream_events(out) == split_stream_events(data)  # one for one, JSON-equal each
    assert t.losses == []


# -- cross-dialect: the loss list of a full response is exactly what the target cannot hold ----------


def _tagged(pattern: str, value, table: dict) -> str:
    """``pattern`` with the union tag of ``value`` (its ``type``) where the table classifies variants."""
    if isinstance(value, dict) and "type" in value and any(k.startswith(pattern + "<") for k in table):
        return f"{pattern}<{value['type']}>"
    return pattern


def _entry(pattern: str, table: dict):
    if pattern in table:
        return table[pattern]
    probe = pattern
    while True:
        cut = max(probe.rfind("."), probe.rfind("["), probe.rfind("<"))
        if cut <= 1:
            return None
        probe = probe[:cut]
        entry = table.get(probe)
        if entry is not None and entry[0].endswith("*"):
            return entry


def expected_losses(value, table: dict, target: str, path: str = "$", pattern: str = "$") -> list[str]:
    """The concrete paths of the fields of ``value`` that ``target`` cannot hold, per the table:
    the root of a lost subtree once, a mapped field without a home in the target once."""
    out = []
    if isinstance(value, dict):
        items = [(f"{path}.{k}", f"{pattern}.{k}", v) for k, v in value.items()]
    else:
        items = [(f"{path}[{i}]", f"{pattern}[]", v) for i, v in enumerate(value)]
    for here, child, v in items:
        child = _tagged(child, v, table)
        entry = _entry(child, table)
        if entry is None and child.endswith(">"):
            entry = table.get(child.rpartition("<")[0])  # a variant of a field the table classifies whole
        if entry is None and child.rstrip(">").rpartition("<")[0].endswith("[]") or child.endswith("[]"):
            entry = entry or ("structural", frozenset())  # an element: what its list is
        assert entry is not None, f"unclassified {child}"
        disposition, homes = entry
        if disposition != "structural" and target not in homes:
            out.append(here)
            continue
        inside = disposition == "structural" or any(k.startswith((child + ".", child + "[")) for k in table)
        if inside and isinstance(v, (dict, list)):  # (a mapped field whose members the table classifies too)
            out.extend(expected_losses(v, table, target, here, child))
    return out


# losses another engineer's issue owns: left out of the comparison either way
ELSEWHERE = {"$.stop_sequence": "validity, issue 16.7 (anthropic stop_sequence into openai/ollama)",
             "$.delta.stop_sequence": "the same, in message_delta",
             # the protocol's message_start says null (message_delta has the stop); the generated one is
             # filled: a value there is a recorded loss, in every target (tests/response/test_rules.py)
             "$.message.stop_sequence": "message_start's stop: not read, recorded",
             "$.message.stop_reason": "message_start's stop: not read, recorded"}

# pairs whose full response does not lose exactly the table's list yet (strict: a fix makes them pass)
GAPS: dict[tuple[str, str], str] = {}
PAIRS = [pytest.param(s, t, marks=[pytest.mark.xfail(strict=True, reason=GAPS[s, t])] if (s, t) in GAPS else [])
         for s in DIALECTS for t in DIALECTS if s != t]


@pytest.mark.parametrize("source,target", PAIRS)
def test_full_response_cross_dialect_loses_exactly_what_the_target_cannot_hold(source, target, backend):
    body = RESPONSES[source]()
    out, t = _cut_run(source, target, "response", json.dumps(body).encode(), 7)
    json.loads(out)
    recorded = [loss.path for loss in t.losses]
    expected = [p for p in expected_losses(body, _table(source, "response"), target) if p not in ELSEWHERE]
    recorded = [p for p in recorded if p not in ELSEWHERE]
    assert {"missing": sorted(set(expected) - set(recorded)), "unexpected": sorted(set(recorded) - set(expected))} \
        == {"missing": [], "unexpected": []}
    assert len(recorded) == len(set(recorded)), "a path recorded twice"


# -- cross-dialect streams: the same check, frame by frame ----------------------------------------------


def _event_table(table: dict, event: str | None) -> dict:
    """The stream table's entries for one event (anthropic keys are ``"<event>:<path>"``)."""
    if event is None:
        return table
    prefix = event + ":"
    return {k[len(prefix):]: v for k, v in table.items() if k.startswith(prefix)}


# where an anthropic stream records a loss: a block and its fields at the block's place in the message the
# stream builds (``$.content[i]``, i = arrival: each block its own record); every other member at its path
# in its event (``$.message.usage.speed``, ``$.delta.stop_details``), except a usage count: message_start and
# message_delta carry the one count, lost once where it came first (``$.message.usage.cache_read_input_tokens``)
_DELTA_FIELD = {"text": "text", "thinking": "thinking", "signature": "signature", "citation": "citations",
                "partial_json": "input"}


def _anthropic_stream_path(event: str, path: str, block: int) -> str:
    if event == "content_block_start":
        return f"$.content[{block}]" + path[len("$.content_block"):]
    if event == "content_block_delta":
        return f"$.content[{block}].{_DELTA_FIELD[path[len('$.delta.'):].split('.')[0]]}"
    if event == "message_delta" and path.startswith("$.usage.") \
            and _table("anthropic", "stream")[f"{event}:{path}"][0] == "mapped":
        return "$.message" + path[1:]
    return path


def expected_stream_losses(dialect: str, events: list, target: str) -> list[str]:
    """``expected_losses`` of every frame, at the paths the stream records, each path once."""
    table, out, blocks = _table(dialect, "stream"), [], -1
    for event, data in events:
        if not isinstance(data, dict) or event == "ping":
            continue  # [DONE] and ping carry nothing (ping is not in the client's event union)
        blocks += event == "content_block_start"
        for path in expected_losses(data, _event_table(table, event), target):
            path = _anthropic_stream_path(event, path, blocks) if dialect == "anthropic" else path
            if path not in out:
                out.append(path)
    return out


STREAM_GAPS: dict[tuple[str, str], str] = {}
STREAM_PAIRS = [pytest.param(s, t, marks=[pytest.mark.xfail(strict=True, reason=STREAM_GAPS[s, t])]
                             if (s, t) in STREAM_GAPS else [])
                for s in DIALECTS for t in DIALECTS if s != t]


@pytest.mark.parametrize("source,target", STREAM_PAIRS)
def test_full_stream_cross_dialect_loses_exactly_what_the_target_cannot_hold(source, target, backend):
    events = STREAMS[source]()
    out, t = _cut_run(source, target, "stream", stream_bytes(source, events), 7)
    split_stream_events(out)
    recorded = [loss.path for loss in t.losses if loss.path not in ELSEWHERE]
    expected = [p for p in expected_stream_losses(source, events, target) if p not in ELSEWHERE]
    assert {"missing": sorted(set(expected) - set(recorded)), "unexpected": sorted(set(recorded) - set(expected))} \
        == {"missing": [], "unexpected": []}
    assert len(recorded) == len(set(recorded)), "a path recorded twice"
