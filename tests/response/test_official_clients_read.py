"""What the target's official client makes of the output, for the fuzzer's mutated responses and
streams (tests/fuzz.py): the output of a source that transcodes at all is read by the target
dialect's own client -- a stream by its stream reader (openai ``chat.completions.stream``,
anthropic ``messages.stream``, ollama ``chat(stream=True)``), a body by its response type
(``ChatCompletion``, ``Message``, ``ChatResponse``) -- or is the error it raises for an error
event (its API error). A sweep of every mutant this way found an ollama error line with an
empty message (read as a chat response), a citation title that was not a string, and an escaped
lone surrogate in tool-call arguments into an anthropic stream (its clients' parser of
``input_json_delta`` refuses one: rpt stream-tool-arguments-lone-surrogate).

Left, and named here so that the property stays strict about everything else (README):

* an ollama error text that is JSON but not an object (``"1.5"``, ``"[1]"``: an upstream error
  whose message was a number or a list): the ollama client's ``ResponseError`` loads it and
  calls ``.get`` on it;
* an anthropic body whose ``stop_reason`` is null (the API says it never is, in a body) is an
  openai ``finish_reason`` null, which ``ChatCompletion`` does not take.

The ``ci`` profile samples; ``HYPOTHESIS_PROFILE=deep`` by hand. The backend is whatever
``interlingua.Transcoder`` is.
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import given, strategies as st

import fuzz
from interlingua import Transcoder, TranscodeError
from official_clients import read_stream

HOOKS = {"clock": lambda: 1767225600.5, "entropy": lambda n: bytes(n)}
SOURCES = {kind: [d for d in fuzz.DIALECTS if fuzz.seeds_of(d, kind)] for kind in ("response", "stream")}


@lru_cache(maxsize=None)
def _mutants(seed: fuzz.Seed) -> tuple:
    return (("unchanged", seed.body),) + tuple(fuzz.mutants(seed))


def _drawn_output(data, source: str, kind: str) -> tuple[str, bytes | None]:
    """A mutant of a seed, transcoded into another dialect: (target, output or None)."""
    seed = data.draw(st.sampled_from(fuzz.seeds_of(source, kind)), label="seed")
    _, body = data.draw(st.sampled_from(_mutants(seed)), label="mutant")
    target = data.draw(st.sampled_from([d for d in fuzz.DIALECTS if d != source]), label="target")
    return target, _output(source, target, kind, body)


def _output(source: str, target: str, kind: str, body: bytes) -> bytes | None:
    transcoder = Transcoder(source, target, kind=kind, **HOOKS)
    try:
        out = transcoder.feed(body)
        # (a mutant may break its own API's rules: tests/validity.py's record is dropped, as test_fuzz does)
        getattr(transcoder, "__dict__", {}).pop("_validity", None)
        return out + transcoder.close()
    except TranscodeError:
        return None  # (where and what: the fuzzer's property)


def _api_errors() -> dict:
    import anthropic
    import ollama
    import openai
    return {"openai": openai.APIError, "anthropic": anthropic.APIError, "ollama": ollama.ResponseError}


def _left(target: str, out: bytes, exc: BaseException) -> bool:
    """The cases named in the module docstring."""
    if target == "ollama" and isinstance(exc, AttributeError):
        last = json.loads(out.strip().split(b"\n")[-1])
        try:
            return not isinstance(json.loads(last["error"]), dict)
        except (ValueError, KeyError, TypeError):
            return False
    return False


def _response_type(target: str):
    import anthropic.types
    import ollama
    import openai.types.chat
    return {"openai": openai.types.chat.ChatCompletion, "anthropic": anthropic.types.Message,
            "ollama": ollama.ChatResponse}[target]


def _is_error_body(target: str, body: dict) -> bool:
    return "error" in body and (target != "anthropic" or body.get("type") == "error")


def _reads_stream(source: str, target: str, out: bytes) -> None:
    items, exc = read_stream(target, out)
    assert exc is None or isinstance(exc, _api_errors()[target]) or _left(target, out, exc), (exc, out[-600:])


def _reads_response(source: str, target: str, out: bytes) -> None:
    value = json.loads(out)
    if _is_error_body(target, value):
        return
    if target == "openai" and source == "anthropic" and any(c["finish_reason"] is None for c in value["choices"]):
        return  # (left: see the module docstring)
    _response_type(target).model_validate(value)


READS = {"stream": _reads_stream, "response": _reads_response}


@pytest.mark.parametrize("source,kind", [(source, kind) for kind in SOURCES for source in SOURCES[kind]])
@given(data=st.data())
def test_the_target_client_reads_the_output(source, kind, data):
    target, out = _drawn_output(data, source, kind)
    if out is not None:
        READS[kind](source, target, out)
