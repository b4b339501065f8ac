"""Integer fields of every target get integers (README "Numbers a target cannot take"): each
source's integer-valued control (max tokens, seed, n, top_k, top_logprobs, a thinking budget)
written as an integral float (``256.0``, ``2.56e2``, ``1e0``) into every other dialect, cut at
1, 7 and whole, on both backends (``test_control_numbers.everywhere``: the same result): the
target's integer fields (openai max tokens, seed, n, top_logprobs; anthropic max_tokens, top_k,
budget_tokens; ollama options.num_predict / top_k / seed, top_logprobs -- the client declares
them ``int``) hold JSON integers of that value, with no loss for the number, or the source
refuses the value itself (a ``SchemaError``, its own range: top_logprobs 256, a budget
below 1024). openai's max
tokens are any number: a fraction into ollama is rounded down, recorded, as into anthropic
(rpt/ollama-integer-fields-from-floats, rpt/ollama-integer-fields-from-fraction)."""

from __future__ import annotations

import json

import pytest

from interlingua.dialects import DIALECTS
from test_control_numbers import PythonTranscoder, body, everywhere, run

#: each source's controls that mean an integer (ollama: options.*)
SOURCE_INTEGERS = {
    "openai": ["max_completion_tokens", "max_tokens", "seed", "n", "top_logprobs"],
    "anthropic": ["max_tokens", "top_k", "thinking.budget_tokens"],
    "ollama": ["options.num_predict", "options.top_k", "options.seed", "top_logprobs"],
}
#: each target's integer fields (the official clients' ``int`` types), as paths into the body
TARGET_INTEGERS = {
    "openai": ["max_completion_tokens", "max_tokens", "seed", "n", "top_logprobs"],
    "anthropic": ["max_tokens", "top_k", "thinking.budget_tokens"],
    "ollama": ["options.num_predict", "options.top_k", "options.seed", "options.num_ctx", "top_logprobs"],
}
VALUES = {"256.0": 256, "2.56e2": 256, "1e0": 1}


class _Float(float):
    """A number the output wrote with a fraction or an exponent."""


def _at(value, path: str):
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _body(source: str, path: str, value: str) -> bytes:
    data = body(source, path, value)
    if path == "top_logprobs" and source in ("openai", "ollama"):  # (top_logprobs needs logprobs)
        data = data[:-1] + b',"logprobs":true}'
    if path == "thinking.budget_tokens":  # a budget below max_tokens: 4096 does not fit 1024 up
        data = data.replace(b'"max_tokens":4096', b'"max_tokens":100000')
    return data


CASES = [(source, path, value, target) for source in DIALECTS for path in SOURCE_INTEGERS[source]
         for value in VALUES for target in DIALECTS if target != source]


@pytest.mark.parametrize("source,path,value,target", CASES)
def test_an_integral_float_is_an_integer_in_every_integer_field_of_the_target(source, path, value, target):
    data = _body(source, path, value)
    result = everywhere(source, target, data)
    if result[0] == "error":  # the source's own range (top_logprobs 0-20, a budget of 1024 up)
        assert result[1] == "SchemaError" and "out of range" in result[2] and result[5] == source, result
        assert VALUES[value] == 256 and path == "top_logprobs" or path == "thinking.budget_tokens", result
        return
    _, out, losses = result
    written = json.loads(out, parse_float=_Float)
    for field in TARGET_INTEGERS[target]:
        number = _at(written, field)
        assert not isinstance(number, _Float), f"{field} written as a float: {out!r}"
    assert not any(value in reason or "fractional" in reason for _, _, reason in losses), losses
    numbers = [_at(written, field) for field in TARGET_INTEGERS[target]]
    assert VALUES[value] in numbers or any("$." + path == where for _, where, _ in losses) or (
        path == "thinking.budget_tokens"  # (a budget: into think / reasoning_effort, recorded at thinking)
    ) or (path == "n" and VALUES[value] == 1), f"the value is carried or its loss recorded: {out!r} {losses}"


@pytest.mark.parametrize("key", ["max_completion_tokens", "max_tokens"])
def test_a_fractional_openai_max_tokens_is_rounded_down_into_ollama_and_recorded(key):
    data = _body("openai", key, "2.565e2")
    _, out, losses = everywhere("openai", "ollama", data)
    assert json.loads(out)["options"] == {"num_predict": 256} and b"256," not in out
    assert losses == [("openai", "$." + key, f"{key}: ollama has no fractional num_predict (256.5); rounded down")]


def test_an_integral_float_beyond_64_bits_is_refused_into_ollama():
    # openai's max tokens are a number: made ollama's integer, 1e19 has no 64-bit integer
    # (an integer literal is carried with its digits, test_control_numbers)
    result = everywhere("openai", "ollama", _body("openai", "max_tokens", "1e19"))
    assert result[:2] == ("error", "SchemaError") and result[4] == "$.max_tokens", result
    assert run(PythonTranscoder, "openai", "anthropic", _body("openai", "max_tokens", "1e19"), None)[4] == "$.max_tokens"
