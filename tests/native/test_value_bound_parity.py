"""``max_value_bytes`` on both backends (rpt/value-bound-any-cut): a value read whole -- a
model name, a role, an id, an index, a skipped tag, a null -- is bounded by its JSON text
whether it came as one token or in fragments, and a decoder's shortcut for a value it would
read as data (a small index, a repeated plain string, a null) is taken only where the checked
way would pass it. Every rpt body up to 3 kB, decoded under bounds from 1 byte up, whole and
in 7-byte pieces: the native decoder gives Python's events, losses and error."""

from __future__ import annotations

import pytest

from .differential import assert_decoder_parity

LIMITS = (1, 2, 3, 4, 5, 7, 9, 12, 16, 21, 27, 35)

# bodies whose values are short but for the one a shortcut reads (the rpt bodies mostly
# fail earlier, at an id): an anthropic stream without event lines (its event types), an
# openai stream with a long choice index, nulls and a repeated service tier
_SHORT_ANTHROPIC = (
    b'data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"m",'
    b'"content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n'
    b'data: {"type":"message_stop"}\n\n')
_SHORT_OPENAI = (
    b'data: {"id":"c","object":"x","created":1,"model":"m","service_tier":"default","usage":null,'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"x","created":1,"model":"m","service_tier":"default","usage":null,'
    b'"choices":[{"index":12345678901234,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b'data: [DONE]\n\n')
# an anthropic body whose type is a plain string (not read into a value within the bound)
_SHORT_ANTHROPIC_BODY = b'{"id":"i","type":"message","role":"r","model":"m","content":[],"stop_reason":null}'


@pytest.mark.parametrize("dialect, kind, body", [("anthropic", "stream", _SHORT_ANTHROPIC), ("openai", "stream", _SHORT_OPENAI),
                                                 ("anthropic", "response", _SHORT_ANTHROPIC_BODY)])
def test_a_shortcut_is_taken_only_within_the_bound(dialect, kind, body):
    for limit in range(1, 30):
        for cuts in ([], range(7, len(body), 7), range(1, len(body))):
            assert_decoder_parity(dialect, body, cuts, {"max_value_bytes": limit}, kind=kind)


def _small_scripts():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rpt import all_wire_scripts, parse_wire
    scripts = [parse_wire(path) for path in all_wire_scripts()]
    return [pytest.param(s, id=f"{s.scenario}/{s.path.name}") for s in scripts if len(s.body) <= 3000]


@pytest.mark.parametrize("script", _small_scripts())
def test_a_value_bound_decides_alike_on_both_backends(script):
    options = {k: v for k, v in script.options.items() if k not in ("clock", "entropy")}
    for limit in LIMITS:
        bounded = {**options, "max_value_bytes": limit}
        assert_decoder_parity(script.dialect, script.body, [], bounded, kind=script.kind)
        assert_decoder_parity(script.dialect, script.body, range(7, len(script.body), 7), bounded, kind=script.kind)
