"""Any key order (sorted keys, reversed): the same canonical events; holds are the reorder buffer's."""

from __future__ import annotations

import json

import pytest

from interlingua import Decoder
from interlingua.canonical import Block
from rpt import split_stream_events

from clients import SOURCES


def _reorder(value, how):
    if isinstance(value, dict):
        items = sorted(value.items(), reverse=how == "reversed")
        return {k: _reorder(v, how) for k, v in items}
    if isinstance(value, list):
        return [_reorder(v, how) for v in value]
    return value


def _rewrite(body: bytes, kind: str, dialect: str, how: str) -> bytes:
    if kind == "response":
        return json.dumps(_reorder(json.loads(body), how), ensure_ascii=False).encode()
    out = b""
    for event, data in split_stream_events(body):
        text = json.dumps(_reorder(data, how), ensure_ascii=False) if isinstance(data, (dict, list)) else data
        out += ((f"event: {event}\n" if event else "") + f"data: {text}\n\n").encode() if dialect != "ollama" \
            else text.encode() + b"\n"
    return out


def _blocks(events):
    out, text = [], b""
    first = None
    for e in events:
        if type(e) is Block:
            first = first or e
            text += e.payload
            if e.fin:
                attrs = {**(first.attrs or {}), **(e.attrs or {})}
                value = Block(e.section, 0, text).text()
                if e.section.value == "tool-call":
                    value = json.loads(value)  # the arguments' JSON (whitespace is not meaning)
                out.append((e.section.value, e.message, json.dumps(value, sort_keys=True), tuple(sorted(attrs.items()))))
                text, first = b"", None
    # members of one JSON object have no order: a message's content and tool_calls may swap
    return sorted(out)


def _lifecycle(events):
    return [e for e in events if type(e).__name__ in ("MessageStart", "Finish", "Usage", "End", "Error")]


@pytest.mark.parametrize("how", ["sorted", "reversed"])
@pytest.mark.parametrize("dialect", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("kind", ["response", "stream"])
def test_key_order_does_not_matter(kind, dialect, how):
    body = SOURCES[dialect, kind]()
    ref = Decoder(dialect, kind=kind)
    want = ref.feed(body) + ref.close()
    moved = _rewrite(body, kind, dialect, how)
    for size in (7, len(moved)):
        d = Decoder(dialect, kind=kind)
        got = [e for i in range(0, len(moved), size) for e in d.feed(moved[i:i + size])] + d.close()
        assert _blocks(got) == _blocks(want)
        assert _lifecycle(got) == _lifecycle(want)
