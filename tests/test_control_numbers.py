"""Numbers a target cannot take (README "Numbers a target cannot take", ``interlingua.numbers``):
every numeric request control of every source dialect, into every target, with each hard
value, cut at 1, 7 and whole, on both backends: strict JSON (no ``Infinity``) or a
``SchemaError`` at the control's path -- the same result on both backends at every cut."""

from __future__ import annotations

import json

import pytest

from interlingua import SchemaError, TranscodeError, Transcoder
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS

native = native_module()

#: every number-typed control each decoder reads (ollama: options.*), and ones carried raw
CONTROL_PATHS = {
    "openai": ["max_completion_tokens", "max_tokens", "temperature", "top_p", "seed", "n", "frequency_penalty",
               "presence_penalty", "top_logprobs"],
    "anthropic": ["max_tokens", "temperature", "top_p", "top_k", "thinking.budget_tokens"],
    "ollama": ["options.num_predict", "options.temperature", "options.top_p", "options.top_k", "options.seed",
               "options.presence_penalty", "options.frequency_penalty", "options.num_ctx", "options.mirostat_tau",
               "top_logprobs", "keep_alive"],
}
VALUES = ["1e400", "-1e999", "1" + "0" * 40, "-1", "-2", "1.5e308", "100.0", "0.5", "1e-400", "9223372036854775808",
          "-9223372036854775808", "1e19"]
CUTS = (1, 7, None)
_MESSAGES = '"messages":[{"role":"user","content":"q"}]'


def body(source: str, path: str, value: str) -> bytes:
    if path.startswith("options."):
        member = f'"options":{{"{path[8:]}":{value}}}'
    elif path == "thinking.budget_tokens":
        member = f'"thinking":{{"type":"enabled","budget_tokens":{value}}}'
    else:
        member = f'"{path}":{value}'
    if source == "anthropic":
        if path == "max_tokens":
            return f'{{"model":"m","max_tokens":{value},{_MESSAGES}}}'.encode()
        return f'{{"model":"m","max_tokens":4096,{_MESSAGES},{member}}}'.encode()
    return f'{{"model":"m",{_MESSAGES},{member}}}'.encode()


class PythonTranscoder(Transcoder):
    """The specification on either backend (a subclass is Python), without the suite's
    target-API wrapper: what is judged here is JSON and the error."""

    def feed(self, data: bytes) -> bytes:
        out = super().feed(data)
        self.__dict__.pop("_validity", None)
        return out


def _no_constant(name: str):
    raise ValueError(f"not JSON: {name}")


def run(make, source: str, target: str, data: bytes, cut: int | None) -> tuple:
    transcoder = make(source, target, kind="request")
    step = cut or len(data)
    out = b""
    try:
        for start in range(0, len(data), step):
            out += transcoder.feed(data[start:start + step])
        out += transcoder.close()
    except TranscodeError as exc:
        return ("error", type(exc).__name__, exc.reason, exc.offset, exc.path, exc.dialect)
    json.loads(out, parse_constant=_no_constant)  # strict JSON: no Infinity, no NaN
    return ("out", out, [(loss.dialect, loss.path, loss.reason) for loss in transcoder.losses])


def everywhere(source: str, target: str, data: bytes) -> tuple:
    """``run``'s result on both backends at every cut: the same (asserted)."""
    makers = [PythonTranscoder] + ([native.Transcoder] if native is not None else [])
    results = [run(make, source, target, data, cut) for make in makers for cut in CUTS]
    assert all(result == results[0] for result in results), results
    return results[0]


CASES = [(source, path, value) for source in DIALECTS for path in CONTROL_PATHS[source] for value in VALUES]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source,path,value", CASES)
def test_a_number_is_strict_json_or_a_schema_error_at_its_control(source, path, value, target):
    data = body(source, path, value)
    result = everywhere(source, target, data)
    if result[0] == "error":
        _, cls, reason, offset, where, dialect = result
        assert cls in ("SchemaError",), result
        top = path.split(".")[0]
        if where == "$." + path and not path.startswith("thinking."):  # at the number's first byte
            assert offset == data.index(b":" + value.encode()) + 1, result
        else:  # a number inside a control's object (thinking, read whole): at the object, named by either path
            assert where in ("$." + top, "$." + path) and offset == data.index(f'"{top}":'.encode()) + len(top) + 3, result
        assert dialect == source
        assert "not ported" not in reason
    elif source == target:
        assert value.encode() in result[1], "carried as written"


def test_the_documented_cases():
    """The audit's examples, one line each (both rules: an overflow, 64 bits, no limit, 100.0)."""
    def out(source, target, data):
        return run(PythonTranscoder, source, target, data.encode(), None)

    openai = '{"model":"m","messages":[{"role":"user","content":"q"}],%s}'
    error = out("openai", "ollama", openai % '"frequency_penalty":1e400')
    assert error[:2] == ("error", "SchemaError") and error[4] == "$.frequency_penalty"
    assert out("openai", "anthropic", openai % '"max_tokens":1e400')[4] == "$.max_tokens"
    assert out("openai", "anthropic", openai % '"max_tokens":1e40')[4] == "$.max_tokens"
    assert b"10000000000000000000000000000000000000000" in out("openai", "ollama", openai % (
        '"max_tokens":10000000000000000000000000000000000000000'))[1]
    ollama = '{"model":"m","messages":[{"role":"user","content":"q"}],"options":{"num_predict":%s}}'
    no_limit = out("ollama", "anthropic", ollama % "-2")
    assert b'"max_tokens":4096' in no_limit[1] and no_limit[2][0][1] == "$.options.num_predict"
    no_limit = out("ollama", "openai", ollama % "-1")
    assert b"max_" not in no_limit[1] and no_limit[2][0][1] == "$.options.num_predict"
    assert b'"max_tokens":100,' in out("ollama", "anthropic", ollama % "100.0")[1]
    fraction = out("ollama", "openai", ollama % "100.5")
    assert fraction[2].endswith("got a number with a fraction"), fraction
    overflow = out("ollama", "ollama", ollama % "1e400")
    assert overflow[2].endswith("got a number beyond a float's range"), overflow
    assert isinstance(SchemaError("x"), TranscodeError)


#: where a tool definition's schema may hold a number (each source's tool shape)
_TOOL = {
    "openai": '{{"type":"function","function":{{"name":"f","parameters":{schema}}}}}',
    "anthropic": '{{"name":"f","input_schema":{schema}}}',
    "ollama": '{{"type":"function","function":{{"name":"f","parameters":{schema}}}}}',
}
_SCHEMAS = ['{{"type":"object","properties":{{"x":{{"type":"number","maximum":{v}}}}}}}',
            '{{"type":"object","properties":{{"x":{{"enum":[1,{v}]}}}}}}',
            '{{"type":"object","properties":{{"x":{{"default":{v},"type":"number"}}}}}}']


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
@pytest.mark.parametrize("schema", _SCHEMAS)
@pytest.mark.parametrize("value", ["1e400", "-1e999", "1e308", "1" + "0" * 40])
def test_a_tool_definition_is_strict_json_or_a_schema_error_at_the_tool(source, target, schema, value):
    # a tool is written from its value, into its own dialect too: an overflowed float has no JSON text
    tool = _TOOL[source].format(schema=schema.format(v=value))
    head = '"model":"m","max_tokens":5,' if source == "anthropic" else '"model":"m",'
    data = f'{{{head}{_MESSAGES},"tools":[{tool}]}}'.encode()
    result = everywhere(source, target, data)
    overflows = value in ("1e400", "-1e999")
    assert (result[0] == "error") == overflows, result
    if overflows:
        assert result[1] == "SchemaError" and result[4] == "$.tools[0]", result
