"""Members of responses and streams that were taken silently when of another type (found by
retyping every leaf of every response and stream scenario: the output changed, with no
error and no loss recorded). Each source into every target, cut at 1, 7 and whole, on both
backends (``test_usage_numbers.results``: the same output and losses, or the same error):

* the response's time, carried across dialects -- openai ``created`` (an integer or null; an
  integral float is the integer it means) and ollama ``created_at`` (a string or null), checked
  in every chunk or line: another type was taken as no time and the clock written;
* anthropic ``usage.service_tier`` (a string or null): another type was dropped;
* an ollama ``logprobs`` entry (``fields.LOGPROB_ENTRY``): its members were written into
  openai's logprobs as they came (``"token": 5``).

Each is a ``SchemaError`` at the member's path, located at the value's first byte (a time),
the usage object's (read whole) or the logprobs entry's (read whole)."""

from __future__ import annotations

import json

import pytest

from interlingua.dialects import DIALECTS

from test_usage_numbers import RESPONSES, STREAMS, results

#: a value of each JSON type, and numbers an integer field refuses
OF_TYPE = {"boolean": "true", "number": "5", "string": '"x"', "array": "[1]", "object": '{"a":1}', "null": "null"}
FRACTIONS = ["1.5", "1e400"]


def _located(data: bytes, at: int) -> tuple[int, int | None]:
    """(offset, frame offset) of the byte ``at``: within its frame's JSON in a stream."""
    if data.startswith(b"{") and data.count(b"\n") <= 1:
        return at, None
    frame = data.rfind(b"\n", 0, at) + 1
    if data.startswith(b"data: ", frame):
        frame += len("data: ")
    return at - frame, frame


# -- the response's time ------------------------------------------------------------------

#: (source, kind, the body's time member to replace, its path); a stream's is in its second frame
TIMES = [
    ("openai", "response", '"created":0', "$.created"),
    ("openai", "stream", '"created":0,"model":"m","choices":[{"index":0,"delta":{},', "$.created"),
    ("ollama", "response", '"created_at":"2025-01-01T00:00:00Z"', "$.created_at"),
    ("ollama", "stream", '"created_at":"2025-01-01T00:00:01Z"', "$.created_at"),
]
TAKES = {"$.created": ("number", "null"), "$.created_at": ("string", "null")}


def time_body(source: str, kind: str, member: str, value: str) -> tuple[bytes, int]:
    """The body with the time member's value replaced; the replaced value's offset."""
    usage = '{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}' if source == "openai" else '"eval_count":0'
    text = (RESPONSES if kind == "response" else STREAMS)[source] % usage
    key, _, rest = member.partition(":")
    old_value = rest.split(",")[0]
    assert member in text, member
    at = text.index(member) + len(key) + 1
    new = text[:at] + value + text[at + len(old_value):]
    return new.encode(), len(text[:at].encode())


TIME_CASES = [(source, kind, member, path, value) for source, kind, member, path in TIMES
              for value in [v for t, v in OF_TYPE.items() if t not in TAKES[path]]
              + (FRACTIONS if path == "$.created" else [])]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,kind,member,path,value", TIME_CASES)
def test_a_time_of_another_type_is_the_sources_error(source, kind, member, path, value, target):
    data, at = time_body(source, kind, member, value)
    result = results(source, target, kind, data)
    assert result[0] == "error", result
    _, cls, reason, where, offset, frame = result
    assert (cls, where) == ("SchemaError", path), result
    assert (offset, frame) == _located(data, at), result
    expected = "an integer or null" if path == "$.created" else "a string or null"
    assert reason.startswith(f"expected {expected} for {path[2:]}, got "), result


#: values of the time's own type: carried when they are a time, else the clock (nothing recorded)
TIME_VALUES = {"$.created": ["null", "0", "-5", "1700000000", "1.7e9", "1700000000.0"],
               "$.created_at": ["null", '"x"', '"2025-06-01T10:00:00Z"', '"2025-06-01T10:00:00.25+02:00"']}


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,kind,member,path,value",
                         [(s, k, m, p, v) for s, k, m, p in TIMES for v in TIME_VALUES[p]])
def test_a_time_of_its_type_transcodes(source, kind, member, path, value, target):
    data, _ = time_body(source, kind, member, value)
    result = results(source, target, kind, data)
    assert result[0] == "out", result
    if source != target and target != "anthropic" and kind == "response" and value in ("1.7e9", "1700000000.0"):
        # an integral float is the integer it means: that time, not the clock
        assert (b'"created_at":"2023-11-14T22:13:20Z"' if target == "ollama" else b'"created":1700000000') in result[1]


# -- anthropic usage.service_tier -----------------------------------------------------------

_USAGE = '{"input_tokens":0,"output_tokens":0,"service_tier":%s}'
#: (kind, which usage holds the tier, its path)
TIER_PLACES = [("response", 0, "$.usage.service_tier"), ("stream", 0, "$.message.usage.service_tier"),
               ("stream", 1, "$.usage.service_tier")]


def tier_body(kind: str, place: int, value: str) -> tuple[bytes, int]:
    tier = _USAGE % value
    if kind == "response":
        text = RESPONSES["anthropic"] % tier
    else:
        plain = '{"input_tokens":0,"output_tokens":0}'
        text = STREAMS["anthropic"] % ((tier, plain) if place == 0 else (plain, tier))
    return text.encode(), len(text[:text.index(tier)].encode())


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("kind,place,path,value",
                         [(k, p, path, v) for k, p, path in TIER_PLACES
                          for t, v in OF_TYPE.items() if t not in ("string", "null")])
def test_a_service_tier_of_another_type_is_the_sources_error(kind, place, path, value, target):
    data, at = tier_body(kind, place, value)
    result = results("anthropic", target, kind, data)
    assert result[0] == "error", result
    _, cls, reason, where, offset, frame = result
    assert (cls, where) == ("SchemaError", path), result
    assert (offset, frame) == _located(data, at), result  # the usage object, read whole
    assert reason.startswith("expected a string or null for service_tier, got "), result


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("kind,place,path,value",
                         [(k, p, path, v) for k, p, path in TIER_PLACES for v in ("null", '"standard"', '"priority"')])
def test_a_service_tier_of_its_type_transcodes(kind, place, path, value, target):
    data, _ = tier_body(kind, place, value)
    result = results("anthropic", target, kind, data)
    assert result[0] == "out", result
    if target == "openai" and kind == "response" and value == '"priority"':
        assert b'"service_tier":"priority"' in result[1]


# -- ollama logprobs entries --------------------------------------------------------------

GOOD_ENTRY = {"token": "Hi", "logprob": -0.25, "bytes": [72, 105],
              "top_logprobs": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105]}, {"token": "Hey", "logprob": -1.5}]}
TAKES_LOGPROB = {"token": ("string",), "logprob": ("number",), "bytes": ("array", "null"),
                 "top_logprobs": ("array", "null")}


def logprob_body(kind: str, entry) -> tuple[bytes, int]:
    text = json.dumps(entry, separators=(",", ":"))
    line = ('{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Hi"},'
            '"done":%s,%s"logprobs":[' + text + ']}')
    if kind == "response":
        body = line % ("true", '"done_reason":"stop",')
    else:
        body = (line % ("false", "") + "\n" + '{"model":"m","created_at":"2025-01-01T00:00:00Z","message":'
                '{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n')
    return body.encode(), body.index('"logprobs":[') + len('"logprobs":[')


def _logprob_cases():
    cases = []
    for member, takes in TAKES_LOGPROB.items():
        for type_, value in OF_TYPE.items():
            if type_ not in takes:
                cases.append((f"$.logprobs[0].{member}", {**GOOD_ENTRY, member: json.loads(value)}))
        if member in ("token", "logprob"):
            for place, entry in (("", GOOD_ENTRY), (".top_logprobs[1]", GOOD_ENTRY["top_logprobs"][1])):
                if place:  # the second top entry without it
                    tops = [GOOD_ENTRY["top_logprobs"][0], {k: v for k, v in entry.items() if k != member}]
                    cases.append((f"$.logprobs[0].top_logprobs[1]", {**GOOD_ENTRY, "top_logprobs": tops}))
                else:
                    cases.append(("$.logprobs[0]", {k: v for k, v in GOOD_ENTRY.items() if k != member}))
    for type_, value in OF_TYPE.items():
        if type_ != "number":
            cases.append(("$.logprobs[0].bytes[1]", {**GOOD_ENTRY, "bytes": [72, json.loads(value)]}))
        if type_ != "object":
            cases.append(("$.logprobs[0].top_logprobs[1]",
                          {**GOOD_ENTRY, "top_logprobs": [GOOD_ENTRY["top_logprobs"][0], json.loads(value)]}))
        for member, takes in (("token", ("string",)), ("logprob", ("number",))):
            if type_ not in takes:
                top = {**GOOD_ENTRY["top_logprobs"][1], member: json.loads(value)}
                cases.append((f"$.logprobs[0].top_logprobs[1].{member}",
                              {**GOOD_ENTRY, "top_logprobs": [GOOD_ENTRY["top_logprobs"][0], top]}))
    cases.append(("$.logprobs[0].bytes[0]", {**GOOD_ENTRY, "bytes": [7.5]}))
    return cases


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("path,entry", _logprob_cases())
def test_a_logprobs_member_of_another_type_is_the_sources_error(path, entry, kind, target):
    data, at = logprob_body(kind, entry)
    result = results("ollama", target, kind, data)
    assert result[0] == "error", result
    _, cls, reason, where, offset, frame = result
    assert (cls, where) == ("SchemaError", path), result
    assert (offset, frame) == _located(data, at), result  # the entry, read whole
    assert reason.startswith(("expected ", f"{path[2:]} has no ")), result


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("kind", ["response", "stream"])
@pytest.mark.parametrize("entry", [GOOD_ENTRY, {"token": "a", "logprob": 0}, {**GOOD_ENTRY, "bytes": None, "top_logprobs": None},
                                   {**GOOD_ENTRY, "extra": [1]}])
def test_a_logprobs_entry_of_its_types_transcodes(entry, kind, target):
    data, _ = logprob_body(kind, entry)
    result = results("ollama", target, kind, data)
    assert result[0] == "out", result
    if target == "openai" and kind == "response":
        logprobs = json.loads(result[1])["choices"][0]["logprobs"]["content"][0]
        assert (logprobs["token"], logprobs["logprob"]) == (entry["token"], entry["logprob"])


@pytest.mark.parametrize("target", DIALECTS)
def test_a_lone_surrogate_in_a_logprobs_entry_is_its_own_error(target):
    """The entry is read as data first: a lone surrogate escape in it is a
    ``LoneSurrogateError`` at the entry, before its members' types are looked at."""
    data, at = logprob_body("response", {**GOOD_ENTRY, "token": 0})
    data = data.replace(b'"token":0', b'"token":"\\ud800"')
    result = results("ollama", target, "response", data)
    assert result[:2] == ("error", "LoneSurrogateError") and result[3:] == ("$.logprobs[0]", at, None), result


# -- members no target has a place for: a recorded loss, not dropped ------------------------

_CALL = '{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"%s}%s}'
#: (source, kind, body with a ``%s`` slot for the member, the member's path)
UNKNOWN = [
    ("openai", "response", RESPONSES["openai"] % ('{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3%s}'),
     "$.usage.x"),
    ("openai", "stream", STREAMS["openai"] % ('{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3%s}'),
     "$.usage.x"),
    ("openai", "response", '{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
     '"message":{"role":"assistant","content":null,"tool_calls":[' + _CALL % ("%s", "") + ']},'
     '"finish_reason":"tool_calls"}]}', "$.choices[0].message.tool_calls[0].function.x"),
    ("openai", "stream", 'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
     '"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f",'
     '"arguments":"{}"%s}}]},"finish_reason":null}]}\n\ndata: {"id":"c","object":"chat.completion.chunk","created":0,'
     '"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n',
     "$.choices[0].delta.tool_calls[0].function.x"),
    ("openai", "response", '{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
     '"message":{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"%s}},'
     '"finish_reason":"function_call"}]}', "$.choices[0].message.function_call.x"),
    ("ollama", "response", '{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"",'
     '"tool_calls":[{"function":{"name":"f","arguments":{}}%s}]},"done":true,"done_reason":"stop"}',
     "$.message.tool_calls[0].x"),
    ("ollama", "stream", '{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"",'
     '"tool_calls":[{"function":{"name":"f","arguments":{}}%s}]},"done":false}\n{"model":"m","created_at":'
     '"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n',
     "$.message.tool_calls[0].x"),
]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("value", [v for t, v in OF_TYPE.items() if t != "null"] + ["null"])
@pytest.mark.parametrize("source,kind,template,path", UNKNOWN)
def test_a_member_no_target_has_is_a_recorded_loss(source, kind, template, path, value, target):
    data = (template % f',"x":{value}').encode()
    result = results(source, target, kind, data)
    assert result[0] == "out", result
    lost = [p for _, p, _ in result[2]]
    if source == target or value == "null":
        assert path not in lost, result  # a copy carries it; null carries nothing
    else:
        assert lost.count(path) == 1, result  # once (a stream may repeat it)


# -- a source's error, as it came --------------------------------------------------------------

#: each source's error body (a response) with the error's members at ``%s``
ERRORS = {
    "openai": '{"error":{%s}}',
    "anthropic": '{"type":"error","error":{%s}}',
    "ollama": '{"error":{%s}}',
}


def _error_of(target: str, out: bytes) -> tuple[str | None, str]:
    body = json.loads(out)
    error = body["error"]
    if target == "ollama":
        return None, error
    return error["type"], error["message"]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("value", list(OF_TYPE.values()))
@pytest.mark.parametrize("source", DIALECTS)
def test_an_errors_message_goes_on_as_it_came(source, value, target):
    """A string's text; null nothing (into ollama, whose client needs a non-empty error, the
    error's type); any other value its compact JSON (it was Python's str: ``{'a': 1}``); the
    type the target writes is a name (a type that is none was ``"[1]"``)."""
    members = f'"message":{value}' + ("" if source == "ollama" else f',"type":{value}')
    result = results(source, target, "response", (ERRORS[source] % members).encode())
    assert result[0] == "out", result
    if source == target:
        return  # (a copy: the body as it came)
    kind, message = _error_of(target, result[1])
    parsed = json.loads(value)
    expected = "" if parsed is None else parsed if isinstance(parsed, str) else json.dumps(parsed, separators=(",", ":"))
    if target == "ollama" and not expected:  # (an empty one is the error's type: api_error, its type null too)
        expected = "api_error"
    assert message == expected, result
    assert kind is None or isinstance(kind, str) and kind, result  # (each target names its own types)


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("kind", ["response", "stream"])
def test_an_ollama_error_null_is_no_error(kind, target):
    line = ('{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"hi"},'
            '"done":%s,"done_reason":"stop","error":null}')
    data = (line % "true") if kind == "response" else (line % "false") + "\n" + (line % "true") + "\n"
    result = results("ollama", target, kind, data.encode())
    assert result[0] == "out" and (b"error" not in result[1] or target == "ollama"), result  # (a copy keeps it)
