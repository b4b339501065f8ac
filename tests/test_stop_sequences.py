"""Stop sequences of another dialect into anthropic: anthropic refuses a stop sequence that is
empty or whitespace only ("stop_sequences: each stop sequence must contain non-whitespace",
"... must be non-empty"), which openai's completion-style ``stop: ["\\n"]`` is. Such a one is not
sent, recorded at its element (the field when it came as a string); the others go as they came;
none left, no ``stop_sequences``. Whitespace is ``encoding.blank``'s (spaces, newlines, tabs,
carriage returns): U+00A0 and a literal backslash-n are text. The validity layer
(``stop-sequences-not-blank``) checks every anthropic output of the suite;
rpt/request-stop-whitespace-into-anthropic pins one request. Both backends."""

from __future__ import annotations

import json

import pytest

from rpt import transcode_cut

BLANK = [" ", "\n", "\r\n", "\t", "", "  \n  "]
TEXT = ["END", "  END", "\u00a0", "\\n", "\n\nHuman:"]


def _body(source: str, stop) -> bytes:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if source == "openai":
        request["stop"] = stop
    else:
        request["options"] = {"stop": stop}
    return json.dumps(request).encode()


def _run(source: str, body: bytes, cuts: list[int]):
    out, losses = transcode_cut(source, "anthropic", body, cuts)
    return json.loads(out), losses


@pytest.mark.parametrize("source", ["openai", "ollama"])
@pytest.mark.parametrize("sequence", BLANK + TEXT)
def test_a_blank_stop_sequence_is_not_sent_into_anthropic(source, sequence):
    field = "$.stop" if source == "openai" else "$.options.stop"
    forms = [([sequence, "END", sequence], True)]
    if source == "openai":
        forms.append((sequence, False))  # (a string: the field itself)
    for stop, listed in forms:
        body = _body(source, stop)
        whole, losses = _run(source, body, [])
        assert _run(source, body, list(range(1, len(body)))) == (whole, losses)
        stops = stop if isinstance(stop, list) else [stop]
        blank = sequence in BLANK
        kept = [s for s in stops if s not in BLANK]
        assert whole.get("stop_sequences") == (kept or None), whole
        lost = [path for path, reason in losses if "stop sequence" in reason]
        want = [f"{field}[{i}]" if listed else field for i, s in enumerate(stops) if s in BLANK]
        assert lost == want, losses
        assert blank == bool(lost)
