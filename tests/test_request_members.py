"""Members of a request kept for their own dialect only, found dropped with nothing recorded
in every other one (an unknown-member sweep: a member inserted into every object of every
request scenario): their block attributes counted as internal. Each source into every target,
cut at 1, 7 and whole, on both backends (``test_usage_numbers.results``):

* an ollama tool call's member other than ``function``, ``id`` and ``type``
  (``ollama_call_extra``): carried to ollama, a recorded loss naming it elsewhere; ``type``
  (``"function"``) carried to ollama and nothing to record elsewhere (each writes its own);
* an anthropic image source's member other than its type and payload (``source_extra``):
  carried to anthropic, a recorded loss naming ``source.<member>`` elsewhere."""

from __future__ import annotations

import json

import pytest

from interlingua.dialects import DIALECTS
from interlingua.losses import article

from test_usage_numbers import results

VALUES = ['"s"', "5", "true", "[1]", '{"a":1}']

OLLAMA = ('{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"function":'
          '{"name":"f","arguments":{"q":1}}%s}]},{"role":"tool","content":"a","tool_name":"f"}],"stream":false}')
ANTHROPIC = ('{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":'
             '{"type":"base64","media_type":"image/png","data":"iVBORw0KGgoAAAANSUhEUg=="%s}},'
             '{"type":"text","text":"what is it?"}]}]}')


def _reasons(result) -> list[str]:
    assert result[0] == "out", result
    return [reason for _, _, reason in result[2]]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("value", VALUES)
def test_an_ollama_tool_calls_member_is_carried_or_recorded(value, target):
    data = (OLLAMA % f',"trace":{value}').encode()
    result = results("ollama", target, "request", data)
    recorded = [r for r in _reasons(result) if r.startswith("trace of a tool call")]
    if target == "ollama":
        assert not recorded and json.loads(result[1])["messages"][1]["tool_calls"][0]["trace"] == json.loads(value)
    else:
        assert len(recorded) == 1, result


@pytest.mark.parametrize("target", DIALECTS)
def test_an_ollama_tool_calls_type_is_nothing_to_record(target):
    data = (OLLAMA % ',"type":"function"').encode()
    result = results("ollama", target, "request", data)
    assert not [r for r in _reasons(result) if "type" in r], result
    if target == "ollama":
        assert json.loads(result[1])["messages"][1]["tool_calls"][0]["type"] == "function"


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("value", VALUES)
def test_an_anthropic_image_source_member_is_carried_or_recorded(value, target):
    data = (ANTHROPIC % f',"detail":{value}').encode()
    result = results("anthropic", target, "request", data)
    recorded = [r for r in _reasons(result) if r.startswith("source.detail of an image")]
    if target == "anthropic":
        assert not recorded and json.loads(result[1])["messages"][0]["content"][0]["source"]["detail"] == json.loads(value)
    else:
        assert len(recorded) == 1, result


@pytest.mark.parametrize("noun,expected", [("image", "an"), ("assistant text", "an"), ("user text", "a"),
                                           ("url citation", "a"), ("unicode escape", "a"), ("unknown block", "an"),
                                           ("tool call", "a"), ("", "an")])
def test_the_article_follows_the_sound(noun, expected):
    assert article(noun) == expected
