"""The native openai request decoder (native/src/dialects/openai/request.rs) against
Python's (dialects/openai/request.py, the specification): the same events (fragments
joined per feed), losses and error (class, message, offset, path, dialect) for every
openai rpt request scenario, the corpus's openai requests, structural-fuzzer mutants,
generated requests and mutated bytes, each whole, cut at random points and (small ones)
at every byte, under the Options that change the decoder (the reasoning field, the
value and reorder budgets, refused reordering, strict)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, reject, settings, strategies as st

from .differential import (
    assert_decoder_parity, corpus_requests, cut_points, fuzz_mutant, mutated, request_bodies, rpt_requests,
)

DIALECT = "openai"


def drawn_parity(body, cuts, options=None):
    """``assert_decoder_parity`` inside a @given: an input the native side does not port
    (it says so) is a rejected example, not a skip of the whole test."""
    try:
        assert_decoder_parity(DIALECT, body, cuts, options)
    except pytest.skip.Exception:
        reject()

BODIES = request_bodies(DIALECT)  # (at import: not inside a @given)
CASES = rpt_requests(DIALECT) + corpus_requests(DIALECT)
#: bodies small enough to feed one byte at a time on both sides
SMALL = [case for case in CASES if len(case.body) <= 4096]

OPTIONS = [
    None,
    {"openai_reasoning_field": "reasoning_content"},
    {"openai_reasoning_field": "reasoning"},
    {"max_value_bytes": 24},
    {"reorder_budget": 200},
    {"refuse_reorder": True},
    {"strict": True},
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_every_scenario_whole_and_in_random_pieces(case):
    assert_decoder_parity(DIALECT, case.body, (), case.options)
    step = max(1, len(case.body) // 7)
    assert_decoder_parity(DIALECT, case.body, range(step // 2, len(case.body), step), case.options)


@pytest.mark.parametrize("case", SMALL, ids=repr)
def test_every_small_scenario_fed_byte_by_byte(case):
    assert_decoder_parity(DIALECT, case.body, range(1, len(case.body)), case.options)


@pytest.mark.parametrize("options", OPTIONS[1:], ids=json.dumps)
@pytest.mark.parametrize("case", SMALL, ids=repr)
def test_every_small_scenario_under_each_option(case, options):
    assert_decoder_parity(DIALECT, case.body, (), {**(case.options or {}), **options})


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.data())
def test_scenarios_cut_anywhere(data):
    case = data.draw(st.sampled_from(SMALL))
    cuts = data.draw(cut_points(case.body))
    options = data.draw(st.sampled_from(OPTIONS))
    drawn_parity(case.body, cuts, {**(case.options or {}), **(options or {})})


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.data())
def test_fuzz_mutants(data):
    case = data.draw(fuzz_mutant(DIALECT))
    cuts = data.draw(cut_points(case.body))
    drawn_parity(case.body, cuts, data.draw(st.sampled_from(OPTIONS)))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.data())
def test_generated_requests(data):
    body = data.draw(BODIES)
    cuts = data.draw(cut_points(body))
    drawn_parity(body, cuts, data.draw(st.sampled_from(OPTIONS)))


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(st.data())
def test_mutated_bytes_of_generated_requests(data):
    body = data.draw(mutated(BODIES))
    cuts = data.draw(cut_points(body))
    drawn_parity(body, cuts)


# Shapes the generators reach rarely, each cut at every byte: key orders that hold
# content before the role, late attributes, unknown roles and parts, data URLs, legacy
# functions, controls with every canonical form, and the decoder's errors.
EDGES = [
    b'{"messages":[{"content":"hi","role":"user"}],"model":"m"}',
    b'{"model":"m","messages":[{"content":[{"text":"a","type":"text"},{"type":"image_url","image_url":'
    b'{"url":"data:image/png;base64,iVBOR","detail":"low"}}],"role":"assistant","name":"n"}]}',
    b'{"model":"m","messages":[{"role":"critic","content":"x"},{"content":[{"type":"text","text":"y"}],'
    b'"role":"critic"},{"role":"tool","content":"r","tool_call_id":"c1"},{"tool_call_id":"c2","role":"tool"}]}',
    b'{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"{\\"a\\":1}",'
    b'"name":"f","x":1},"id":"c","type":"function","z":[1]}],"content":null}],"functions":[{"name":"g",'
    b'"parameters":{"type":"object"},"extra":1}],"tools":[{"type":"function","function":{"name":"t",'
    b'"description":"d","strict":true,"k":"v"}},{"type":"custom","custom":{}},{"type":"function"}]}',
    b'{"model":"m","messages":[{"role":"assistant","function_call":{"arguments":"{}","name":"f"}},'
    b'{"role":"function","name":"f","content":"ok"},{"role":"developer","content":[{"type":"text","text":"d",'
    b'"cache_control":{"type":"ephemeral"}}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"JVBER",'
    b'"filename":"a.pdf"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVB"}},'
    b'{"type":"input_audio","input_audio":{"data":"UklG","format":"wav"}},{"type":"image_url",'
    b'"image_url":{"url":"https://x/y.png"}},{"type":"video","video":{"u":1}},{"type":"text"},'
    b'{"type":"refusal","refusal":"no"}]}]}',
    b'{"model":"m","messages":[],"stop":"x","tool_choice":{"type":"auto"},"function_call":{"name":"f"},'
    b'"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},'
    b'"strict":true}},"reasoning_effort":"low","temperature":0.5e1,"top_p":1,"n":1,"seed":-0,'
    b'"user":"u\\u00e9","metadata":{"a":"b"},"store":true,"logit_bias":null,"max_tokens":1.0,'
    b'"parallel_tool_calls":false,"stream":true,"stream_options":{"include_usage":true}}',
    b'{"model":"m","messages":[],"tool_choice":{"type":"function","function":{"name":"f"}}}',
    b'{"model":"m","messages":[],"tool_choice":"required","response_format":{"type":"text"}}',
    b'{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":7}}',
    b'{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":null}}',
    b'{"model":"m","messages":[],"response_format":{"type":"weird"},"tool_choice":[1]}',
    b'{"model":"m","messages":[],"reasoning_effort":"ultra"}',
    b'{"model":"m","messages":[],"reasoning_effort":"\\ud800"}',
    b'{"model":"m","messages":[{"role":"user","content":"a"},{"content":"no role"}]}',
    b'{"model":"m","messages":[{"role":7,"content":"a"}]}',
    b'{"model":"m","messages":[{"role":"\\ud83d","content":"a"}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"text":"a"}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"text":"a","type":"image_url"}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":5}]}',
    b'{"model":"m","messages":[{"role":"tool","content":"x","tool_call_id":5}]}',
    b'{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":5}]}]}',
    b'{"model":"m","messages":[{"role":"assistant","tool_calls":[{"function":3}]}]}',
    b'{"model":"m","messages":[{"role":"assistant","function_call":"f"}]}',
    b'{"model":"m","messages":[{"role":"assistant","tool_calls":[7]}]}',
    b'{"model":"m","messages":{}}',
    b'{"model":"m","messages":[],"tools":null}',
    b'{"model":"m","messages":[],"tools":[1]}',
    b'{"model":"m","messages":[],"stream":"yes"}',
    b'{"model":"m","messages":[],"seed":1.5}',
    b'{"messages":[]}',
    b'{"model":"m"}',
    b'[]',
    b'{"model":"m","messages":[{"role":"user","content":"' + b"x" * 300 + b'"}],"metadata":{"k":"' + b"v" * 40 + b'"}}',
    b'{"model":"m","messages":[{"content":"' + b"y" * 300 + b'","role":"user"}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:'
    + b"a" * 300 + b';base64,xx"}}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":'
    b'"data:image\\/png;base64,AA"}}]}]}',
    b'{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"t","extra":{"a":1},"b":2}]}]}',
    b'{"model":"m","messages":[{"role":"assistant","reasoning_content":"think","content":"x","reasoning":"r"}]}',
    b'{"model":"m","messages":[{"role":"user","content":[]},{"role":"assistant"},{"role":"tool","tool_call_id":"c"}]}',
]


@pytest.mark.parametrize("options", OPTIONS, ids=json.dumps)
@pytest.mark.parametrize("body", EDGES, ids=lambda body: body[:60].decode("utf-8", "replace"))
def test_edges_at_every_cut(body, options):
    assert_decoder_parity(DIALECT, body, (), options)
    assert_decoder_parity(DIALECT, body, range(1, len(body)), options)
