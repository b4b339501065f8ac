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


#: (source, body with the member, the loss reason's start, where the source's own output has it)
KEPT = [
    ("ollama", OLLAMA % ',"trace":%s', "trace of a tool call", lambda body: body["messages"][1]["tool_calls"][0]["trace"]),
    ("anthropic", ANTHROPIC % ',"detail":%s', "source.detail of an image",
     lambda body: body["messages"][0]["content"][0]["source"]["detail"]),
]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("source,template,reason,kept", KEPT, ids=[case[0] for case in KEPT])
def test_a_member_kept_for_its_own_dialect_is_recorded_elsewhere(source, template, reason, kept, value, target):
    result = results(source, target, "request", (template % value).encode())
    recorded = [r for r in _reasons(result) if r.startswith(reason)]
    if target == source:
        assert not recorded and kept(json.loads(result[1])) == json.loads(value), result
    else:
        assert len(recorded) == 1, result


@pytest.mark.parametrize("target", DIALECTS)
def test_an_ollama_tool_calls_type_is_nothing_to_record(target):
    data = (OLLAMA % ',"type":"function"').encode()
    result = results("ollama", target, "request", data)
    assert not [r for r in _reasons(result) if "type" in r], result
    if target == "ollama":
        assert json.loads(result[1])["messages"][1]["tool_calls"][0]["type"] == "function"


@pytest.mark.parametrize("noun,expected", [("image", "an"), ("assistant text", "an"), ("user text", "a"),
                                           ("url citation", "a"), ("unicode escape", "a"), ("unknown block", "an"),
                                           ("tool call", "a"), ("", "an")])
def test_the_article_follows_the_sound(noun, expected):
    assert article(noun) == expected


# -- members of a control's value no target carries (fields.KNOWN_MEMBERS) ------------------

from interlingua.dialects.fields import KNOWN_MEMBERS  # noqa: E402

from test_control_members import VALID, body as control_body  # noqa: E402


def _levels(spec: dict, prefix: str = "") -> list[str]:
    """Where an unknown member can sit: the value itself, and each object member looked into."""
    return [prefix] + [level for member, inner in spec.items() if inner is not None
                       for level in _levels(inner, prefix + member + ".")]


CONTROL_CASES = [(dialect, field, level) for dialect, fields in KNOWN_MEMBERS.items()
                 for field, spec in fields.items() for level in _levels(spec) if field in VALID[dialect]]


def _with_member(value: dict, level: str, member: str, item) -> dict:
    value = json.loads(json.dumps(value))
    node = value
    for step in filter(None, level.split(".")):
        node = node[step]
    node[member] = item
    return value


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("item", [json.loads(v) for v in VALUES] + [None])
@pytest.mark.parametrize("source,field,level", CONTROL_CASES)
def test_a_control_member_no_target_has_is_a_recorded_loss(source, field, level, item, target):
    data = control_body(source, field, _with_member(VALID[source][field], level, "zz", item))
    result = results(source, target, "request", data)
    assert result[0] == "out", result
    path = f"$.{field}.{level}zz"
    lost = [p for _, p, _ in result[2]]
    if source == target:  # written back as it came
        assert path not in lost and '"zz"' in result[1].decode(), result
    elif item is None:  # nothing to carry
        assert path not in lost, result
    else:
        assert lost.count(path) == 1, result


def test_every_control_with_known_members_is_checked():
    assert len(CONTROL_CASES) == 9, CONTROL_CASES
