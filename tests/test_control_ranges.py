"""Request control numbers at the edges of each API's range (``interlingua.numbers.RANGES``),
sources x targets x (control, value), both backends, cut 1/7/whole: a value its source rejects
is a SchemaError at its path; one the target rejects is sent as the target's nearest bound with
a recorded loss; the output passes the target's rules (tests/validity.py)."""

from __future__ import annotations

import pytest

import validity
from interlingua.dialects import DIALECTS
from interlingua.numbers import RANGES
from test_control_numbers import PythonTranscoder, body, everywhere, run

#: (source, control path) -> values over each bound: below, at, above, a fraction, an integral float
EDGES = {
    ("openai", "max_completion_tokens"): ["0", "1", "2", "0.5", "1.0", "-1"],
    ("openai", "max_tokens"): ["0", "1", "1.0"],
    ("openai", "temperature"): ["-0.1", "0", "2", "2.5", "2.0"],
    ("openai", "top_p"): ["-1", "0", "1", "1.5", "1.0"],
    ("openai", "frequency_penalty"): ["-2.5", "-2", "2", "3", "2.0"],
    ("openai", "presence_penalty"): ["-3", "-2.0", "2.5"],
    ("openai", "n"): ["0", "1", "1.0"],
    ("openai", "top_logprobs"): ["-1", "0", "20", "21", "20.0"],
    ("anthropic", "max_tokens"): ["0", "1", "1.0"],
    ("anthropic", "temperature"): ["-0.5", "0", "1", "1.5", "1.0"],
    ("anthropic", "top_p"): ["1", "1.1"],
    ("anthropic", "top_k"): ["-1", "0", "5.0"],
    ("anthropic", "thinking.budget_tokens"): ["1023", "1024", "1025", "2048.5", "2048.0", "1023.0"],
    ("ollama", "options.num_predict"): ["0", "1", "-1", "0.0"],
    ("ollama", "options.temperature"): ["-1", "0", "2", "3", "3.0"],
    ("ollama", "options.top_p"): ["-0.5", "1", "2"],
    ("ollama", "options.frequency_penalty"): ["-5", "5", "2.0"],
    ("ollama", "options.presence_penalty"): ["-2.5", "2.5"],
    ("ollama", "top_logprobs"): ["-1", "0", "20", "21"],
}
CASES = [(source, path, value) for (source, path), values in EDGES.items() for value in values]


def _refused_by_source(source: str, path: str, value: str) -> bool:
    number = float(value)
    if path == "thinking.budget_tokens" and not number.is_integer():
        return True
    bounds = RANGES[source].get(path)
    return bounds is not None and (number < bounds[0] or (bounds[1] is not None and number > bounds[1]))


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,path,value", CASES)
def test_a_control_outside_a_range_is_the_sources_error_or_the_targets_bound(source, path, value, target):
    data = body(source, path, value)
    result = everywhere(source, target, data)
    if _refused_by_source(source, path, value):
        assert result[:2] == ("error", "SchemaError") and result[4] == "$." + path, result
        return
    assert result[0] == "out", result
    if target != source:
        assert validity.check(target, "request", result[1], enforced_only=True) == [], result
    clamps = [loss for loss in result[2] if "(it takes " in loss[2]]
    for dialect, where, reason in clamps:
        assert dialect == source and where == "$." + path and f": {target} has no " in reason and "; sent as " in reason


@pytest.mark.parametrize("value,bound", [("3", 2), ("-1", 0), ("3.0", 2)])
def test_ollama_temperature_into_openai_is_its_bound_with_the_value_and_range(value, bound):
    out = run(PythonTranscoder, "ollama", "openai", body("ollama", "options.temperature", value), None)
    assert f'"temperature":{bound}'.encode() in out[1]
    shown = repr(float(value)) if "." in value else value
    assert out[2] == [("ollama", "$.options.temperature",
                       f"options.temperature: openai has no temperature of {shown} (it takes 0 to 2); sent as {bound}")]


def test_ollama_num_predict_zero_into_anthropic_is_one():
    out = run(PythonTranscoder, "ollama", "anthropic", body("ollama", "options.num_predict", "0"), None)
    assert b'"max_tokens":1,' in out[1] or b'"max_tokens":1}' in out[1]
    assert [loss[1] for loss in out[2]] == ["$.options.num_predict"]
