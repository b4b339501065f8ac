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
def test_full_response_same_dialect_is_json_equal(dialect, size):
    body = RESPONSES[dialect]()
    _filled(body)
    data = json.dumps(body).encode()
    out, t = _cut_run(dialect, dialect, "response", data, size)
    assert json.loads(out) == body
    assert t.losses == []


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_full_stream_same_dialect_is_equal_frame_for_frame(dialect, size):
    events = STREAMS[dialect]()
    for _, data in events:
        _filled(data)
    data = stream_bytes(dialect, events)
    out, t = _cut_run(dialect, dialect, "stream", data, size)
    assert split_stream_events(out) == split_stream_events(data)  # one for one, JSON-equal each
    assert t.losses == []
