"""native/src/lifecycle.rs against src/interlingua/lifecycle.py (and session.ResponseStart):
finish tables (every reason each way), usage from and to each dialect (hypothesis usage
dicts: counts, integral floats, wrong types, details, unknown members), tiers,
merge_usage, the time functions, generated ids, ``Stamp`` and ``logprob_to_openai`` --
the same results, loss records and errors (``_native.lifecycle_call``).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, strategies as st

from interlingua import lifecycle
from interlingua.canonical import Extension, Logprobs, Usage
from interlingua.jsonwriter import dumps
from interlingua.session import LIBRARY_RESPONSE_START, MAX_CLOCK, Options, ResponseStart, Session

from .differential import error_facts

from interlingua.backend import native_module

native = native_module()

DIALECTS = ["openai", "anthropic", "ollama"]
KINDS = ["response", "stream"]


def python_call(function, args, source="openai", target="anthropic", kind="response", strict=False):
    """The Python function on the same arguments, shaped as ``lifecycle_call``'s answer."""
    session = Session(Options(strict=strict), source=source, target=target, kind=kind)
    try:
        result = _python_result(function, args, session)
        error = None
    except Exception as exc:  # noqa: BLE001
        result, error = None, exc
    return result, [(loss.dialect, loss.path, loss.reason) for loss in session.losses], error


def _python_result(function, args, session):
    f = getattr(lifecycle, function, None)
    if function == "finish_from":
        return f(*args)
    if function == "finish_to":
        return f(args[0], args[1], session, args[2])
    if function in ("usage_from_openai", "usage_from_anthropic"):
        return f(json.loads(args[0]), session, args[1])
    if function == "usage_from_ollama":
        return f(json.loads(args[0]))
    if function == "usage_to_openai":
        return f(args[0], session)
    if function == "usage_to_anthropic":
        return dumps(f(args[0], session, require_input=args[1]))
    if function == "usage_to_ollama":
        return dumps(f(args[0], session))
    if function == "usage_path":
        return f(session, args[0])
    if function == "tier_from":
        return f(args[0], json.loads(args[1]))
    if function == "tier_to":
        return f(args[0], args[1], session)
    if function == "logprob_to_openai":
        return dumps(f(args[0]))
    if function == "generated_response_id":
        model = None if args[3] is None else args[3].decode("utf-8", "surrogatepass")
        return f(args[0], args[1], args[2], model)
    if function == "generated_tool_id":
        return f(args[0].decode("utf-8", "surrogatepass"), args[1])
    return f(*args)


def same(function, args, **session):
    n_result, n_losses, n_error = native.lifecycle_call(function, args, **session)
    p_result, p_losses, p_error = python_call(function, args, **session)
    assert (n_result, n_losses, error_facts(n_error)) == (p_result, p_losses, error_facts(p_error)), (function, args)
    return n_result


# -- finish reasons: every reason of every table, each way, and some no table has -------------

REASONS = sorted({r for table in lifecycle.FINISH_TO.values() for r in table}
                 | {r for table in lifecycle.FINISH_FROM.values() for r in table}
                 | {f"{d}:{r}" for d in DIALECTS for r in ("weird", "", "stop")}
                 | {"pause_turn", "weird", "", ":", "openai:", "x:y:z", "é", "it's"})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_finish_tables_exhaustively(dialect):
    for reason in REASONS + [None]:
        same("finish_from", (dialect, reason))
        for source in DIALECTS:
            for kind in KINDS:
                for sequence in (None, "END", "it's"):
                    for strict in (False, True):
                        same("finish_to", (dialect, reason, sequence), source=source, kind=kind, strict=strict)


# -- usage ----------------------------------------------------------------------------------

counts = st.one_of(st.none(), st.integers(-3, 10**12), st.sampled_from([0, 30.0, 0.0, -0.0, 2.5, -1.0, 1e3, True, False,
                                                                         "7", [], {}]),
                   # at and beyond 64 bits (a count or a sum beyond: a SchemaError at its path)
                   st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30, 1e30, 9.223372036854775807e18]))
detail_members = st.dictionaries(st.sampled_from(["cached_tokens", "cache_write_tokens", "reasoning_tokens", "audio_tokens",
                                                  "thinking_tokens", "accepted_prediction_tokens", "x"]),
                                 counts, max_size=4)
details = st.one_of(st.none(), detail_members, st.sampled_from([3, "x", [1]]))
openai_usage = st.fixed_dictionaries({}, optional={
    "prompt_tokens": counts, "completion_tokens": counts, "total_tokens": counts,
    "prompt_tokens_details": details, "completion_tokens_details": details, "extra": counts})
anthropic_usage = st.fixed_dictionaries({}, optional={
    "input_tokens": counts, "output_tokens": counts, "cache_read_input_tokens": counts,
    "cache_creation_input_tokens": counts, "output_tokens_details": details,
    "service_tier": st.sampled_from([None, "standard", "priority", "batch", "odd", 3]),
    "server_tool_use": st.sampled_from([None, {"web_search_requests": 1}, {}, 0, ""]), "cache_creation": details})
ollama_usage = st.fixed_dictionaries({}, optional={"prompt_eval_count": counts, "eval_count": counts, "x": counts})


@given(openai_usage, st.sampled_from(["$.usage", "$.x.usage"]), st.sampled_from(DIALECTS), st.booleans())
@example({"prompt_tokens": 3, "prompt_tokens_details": {"audio_tokens": 2, "cached_tokens": 1}}, "$.usage", "anthropic", False)
@example({"prompt_tokens": 3, "completion_tokens_details": "x"}, "$.usage", "openai", False)
@example({"prompt_tokens": 2.5}, "$.usage", "openai", False)
def test_usage_from_openai(obj, path, target, strict):
    same("usage_from_openai", (json.dumps(obj).encode(), path), target=target, strict=strict)


@given(anthropic_usage, st.sampled_from(["$.usage", "$.message.usage"]), st.sampled_from(DIALECTS), st.booleans())
@example({"input_tokens": 3, "cache_read_input_tokens": 4, "cache_creation_input_tokens": 5}, "$.usage", "openai", False)
@example({"service_tier": "priority", "server_tool_use": {"web_search_requests": 1}}, "$.usage", "openai", True)
def test_usage_from_anthropic(obj, path, target, strict):
    same("usage_from_anthropic", (json.dumps(obj).encode(), path), source="anthropic", target=target, strict=strict)


@given(ollama_usage)
def test_usage_from_ollama(obj):
    same("usage_from_ollama", (json.dumps(obj).encode(),), source="ollama")


small = st.none() | st.integers(0, 10**9) | st.sampled_from([2**63 - 1, -(2**63)])  # (sums beyond 64 bits)
tiers = st.none() | st.sampled_from(["standard", "priority", "batch", "flex", "scale", "auto", "fast", "openai:odd",
                                     "anthropic:odd", "ollama:x", "odd", "openai:", "é"])
usages = st.builds(Usage, input=small, output=small, cache_read=small, cache_write=small, reasoning=small,
                   total=small, service_tier=tiers)


@given(usages, st.sampled_from(DIALECTS), st.sampled_from(KINDS), st.booleans(), st.booleans())
@example(Usage(input=10, output=5, total=16, cache_read=0, service_tier="flex"), "anthropic", "stream", False, False)
@example(Usage(input=1, cache_read=3, cache_write=4), "openai", "response", True, True)
def test_usage_to_each_dialect(u, source, kind, require_input, strict):
    session = {"source": source, "kind": kind, "strict": strict}
    same("usage_to_openai", (u,), target="openai", **session)
    same("usage_to_anthropic", (u, require_input), target="anthropic", **session)
    same("usage_to_ollama", (u,), target="ollama", **session)
    for dialect in DIALECTS:
        same("tier_to", (dialect, u), target=dialect, **session)


@given(st.none() | usages, usages)
def test_merge_usage(old, new):
    same("merge_usage", (old, new))


@pytest.mark.parametrize("source", DIALECTS + ["x"])
@pytest.mark.parametrize("kind", KINDS)
def test_usage_paths(source, kind):
    for name in ("input", "output", "total", "cache_read", "cache_write", "reasoning", "service_tier", "other"):
        same("usage_path", (name,), source=source, kind=kind)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_tier_from(dialect):
    for value in ("default", "standard", "priority", "flex", "scale", "auto", "fast", "batch", "odd", "", None, 3, "é"):
        same("tier_from", (dialect, json.dumps(value).encode()))


# -- times --------------------------------------------------------------------------------

rfc3339 = st.builds(
    lambda y, mo, d, h, mi, s, frac, zone, tail: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{zone}{tail}",
    st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 24), st.integers(0, 60),
    st.integers(0, 60), st.sampled_from(["", ".", ".5", ".123456", ".1234567891", ".000000", ".\u0663\u0663", ".x"]),
    st.sampled_from(["Z", "+00:00", "-00:00", "+23:59", "-23:59", "+24:00", "+00:99", "+05:30", "z", "", "+0530", "+\u0665:00"]),
    st.sampled_from(["", "\n", "\n\n", " "]))


@given(rfc3339 | st.text(max_size=30))
@example("1970-01-01T00:00:00Z")
@example("1970-01-01T00:00:00.000001Z")
@example("9999-12-31T23:59:59.999999Z")
@example("0001-01-01T00:00:00-23:59")
@example("2024-02-29T12:00:00+01:00")
@example("2023-02-29T12:00:00+01:00")
@example("2024-01-01T00:00:00.\u0663Z")
@example("\u0662024-01-01T00:00:00Z")
def test_ollama_time_us(text):
    same("ollama_time_us", (json.dumps(text).encode(),))
    same("ollama_time_us", (json.dumps(text, ensure_ascii=False).encode(),))


@given(st.one_of(st.integers(-5, 253402300805), st.sampled_from([253402300799, 253402300800, 10**30, -(10**30)])).map(
    lambda n: str(n).encode()) | st.sampled_from([b"0", b"-0", b"1.0", b"1e3", b"true", b"null", b'"5"', b" 5 ", b"01", b"x",
                                                 b"NaN", b"[1]"]))
def test_openai_time_us(raw):
    same("openai_time_us", (raw,))


@given(st.integers(0, 253402300799999999))
@example(0)
@example(1)
@example(1_000_000)
@example(1_500_000)
@example(951782400_000000)  # 2000-02-29
@example(253402300799999999)
def test_written_times(time_us):
    same("openai_created", (time_us,))
    assert same("ollama_created_at", (time_us,)) is not None
    # the written time reads back as the same (ollama: to the microsecond; openai: whole seconds)
    assert lifecycle.ollama_time_us(lifecycle.ollama_created_at(time_us)) == (time_us or None)


@given(st.sampled_from(["ollama", "openai", "anthropic"]), st.sampled_from(["$.created_at", "$.created", "$.x"]),
       st.sampled_from([b'"2024-01-01T00:00:00Z"', b"1704067200", b"0", b"null", b'"x"']))
def test_source_time_us(dialect, path, raw):
    same("source_time_us", (Extension(dialect, path, raw),))


# -- ids and the stamp ------------------------------------------------------------------------

nonces = st.binary(min_size=12, max_size=12)
models = st.none() | st.text(max_size=20).map(lambda t: t.encode("utf-8", "surrogatepass"))


@given(st.sampled_from(["chatcmpl-", "msg_", ""]), nonces, st.integers(0, 2**62), models)
def test_generated_response_id(prefix, nonce, time_us, model):
    same("generated_response_id", (prefix, nonce, time_us, model))


@given(st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")), st.integers(0, 10**6))
def test_generated_tool_id(response_id, n):
    same("generated_tool_id", (response_id, n))


extensions = st.builds(Extension, st.sampled_from(["ollama", "openai", "anthropic"]),
                       st.sampled_from(["$.created_at", "$.created", "$.id"]),
                       st.sampled_from([b'"2024-01-01T00:00:00.5Z"', b'"2025-06-01T00:00:00Z"', b"1704067200", b"0",
                                        b'"x"']))
stamp_ops = st.lists(st.one_of(
    st.tuples(st.just("source"), extensions),
    st.tuples(st.just("time_us")),
    st.tuples(st.just("response_id"), st.sampled_from(["chatcmpl-", "msg_"]), st.sampled_from([None, "", "id-1"]),
              st.sampled_from([None, "m", "é"]))), max_size=8)


def python_stamp(time_us, nonce, ops):
    from interlingua.session import ResponseStart
    stamp = lifecycle.Stamp(ResponseStart(time_us, nonce))
    out = []
    for op in ops:
        if op[0] == "source":
            out.append(stamp.source(op[1]))
        elif op[0] == "time_us":
            out.append(stamp.time_us)
        else:
            out.append(stamp.response_id(op[1], op[2], op[3]))
    return out


@given(st.integers(0, 2**60), nonces, stamp_ops)
def test_stamp(time_us, nonce, ops):
    result, losses, error = native.lifecycle_call("stamp", (time_us, nonce, ops))
    assert (result, losses, error) == (python_stamp(time_us, nonce, ops), [], None)


class _Float(float):
    pass


class _Int(int):
    pass


class _Bytes(bytes):
    pass


clock_readings = st.one_of(
    st.floats(), st.integers(-2**70, 2**70), st.booleans(), st.none(), st.text(max_size=2),
    st.sampled_from([0, 0.0, -0.0, 0.5e-6, 1.5e-6, 2.5e-6, 253402300799, 253402300800, 253402300799.99997, MAX_CLOCK,
                     _Float(12.5), _Int(7), 1764579600.123456]),
    st.floats(0, MAX_CLOCK), st.integers(0, 253402300800))
nonce_results = st.one_of(st.binary(max_size=14), st.binary(min_size=12, max_size=12), st.none(), st.text(max_size=12),
                          st.binary(min_size=12, max_size=12).map(bytearray),
                          st.binary(min_size=11, max_size=13).map(_Bytes))


def _read(reader, seconds, nonce):
    """``reader``'s result or error for hooks returning these, with the calls they got."""
    calls = []
    clock = lambda: calls.append("clock") or seconds  # noqa: E731
    entropy = lambda n: calls.append(("entropy", n)) or nonce  # noqa: E731
    try:
        result = reader(clock, entropy)
    except Exception as err:  # noqa: BLE001 (compared, class and message)
        return type(err), str(err), calls
    return (result.time_us, bytes(result.nonce)) if isinstance(result, ResponseStart) else result, calls


@given(clock_readings, nonce_results)
@example(12.5, b"x" * 12)
@example(2, bytes(12))
def test_response_start_is_pythons(seconds, nonce):
    """The binding reads the hooks itself (``read_hooks``): the same time, nonce, errors
    and calls as Python's ``session.response_start`` (the library's, not a test's)."""
    assert _read(native.response_start, seconds, nonce) == _read(LIBRARY_RESPONSE_START, seconds, nonce)


def test_response_start_defaults():
    time_us, nonce = native.response_start()
    assert len(nonce) == 12 and time_us > 1_700_000_000_000_000


# -- logprobs ----------------------------------------------------------------------------

entries = st.recursive(st.none() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                       max_leaves=8)
tops = st.one_of(st.none(), st.just([]), st.just({}), st.just(0), st.just(""), st.just(3), st.just([1]),
                 st.lists(st.fixed_dictionaries({"token": st.text(max_size=3)}, optional={
                     "logprob": st.floats(-10, 0), "bytes": st.none() | st.lists(st.integers(0, 255), max_size=3),
                     "x": entries}), max_size=3))
logprob_entries = st.one_of(
    st.fixed_dictionaries({"token": st.text(max_size=3), "logprob": st.floats(-10, 0)},
                          optional={"bytes": st.none() | st.lists(st.integers(0, 255), max_size=3), "top_logprobs": tops,
                                    "x": entries}),
    entries)


@given(logprob_entries)
@example({"token": "a", "logprob": -1.0})
@example({"top_logprobs": [{"token": "b", "bytes": [98]}], "bytes": [97], "token": "a"})
@example([1])
def test_logprob_to_openai(entry):
    same("logprob_to_openai", (json.dumps(entry, ensure_ascii=False).encode(),))


# -- the events cross the binding -----------------------------------------------------------

def test_logprobs_and_usage_tier_cross_the_binding():
    events = [Logprobs(b'{"token":"a","logprob":-0.5}', choice=2), Usage(input=1, service_tier="priority"), Usage()]
    assert native.canonical_roundtrip(events) == events
    assert "logprobs" in native.event_tags()


# -- the decoder and encoder helpers: op sequences against the Python classes ---------------

def python_helper(helper, args, ops, *, refuse_reorder=False, reorder_budget=1 << 20):
    from interlingua.canonical import Section
    session = Session(Options(refuse_reorder=refuse_reorder, reorder_budget=reorder_budget), source="openai",
                      target="anthropic", kind="stream")
    out, error = [], None
    if helper == "block_stream":
        attrs = {name: json.loads(raw) for name, raw in args[2]} or None
        stream = lifecycle.BlockStream(out.append, Section(args[0]), args[1], attrs, args[3])
    reasoning = lifecycle.ReasoningFirst(session, "test:content-before-reasoning", lambda *call: out.append(call))
    ready = [False]

    class Recorder:
        def fragment(self, data, init=False, fin=False):
            out.append(data)
    deferred = lifecycle.Deferred(session, "test:arguments-before-name", Recorder, lambda: ready[0])
    frame = lifecycle.OpenFrame(None)
    try:
        for op in ops:
            name = op[0]
            if helper == "block_stream":
                if name == "fragment":
                    stream.fragment(op[1])
                elif name == "announce":
                    stream.announce()
                elif name == "close":
                    stream.close({k: json.loads(v) for k, v in op[1]} or None)
                else:
                    if stream.attrs is None:
                        stream.attrs = {}
                    stream.attrs[op[1]] = json.loads(op[2])
            elif helper == "reasoning_first":
                if name == "text":
                    reasoning.text(op[1], op[2], op[3])
                elif name == "member":
                    reasoning.member(op[1])
                elif name == "reasoning_end":
                    reasoning.reasoning_end()
                else:
                    reasoning.release()
            elif helper == "deferred":
                if name == "fragment":
                    ready[0] = op[2]
                    deferred.fragment(op[1])
                else:
                    deferred.release()
            else:
                written = []
                frame.write = written.append
                if name == "fragment":
                    frame.fragment(op[1], lambda head=op[2]: head, op[3], op[4])
                else:
                    frame.close()
                out.append(b"".join(written))
    except Exception as exc:  # noqa: BLE001
        error = exc
    report = session.reorder.report()
    return out, (report["high_water"], list(report["by_reason"].items())), error


def same_helper(helper, args, ops, **options):
    n_out, n_report, n_error = native.lifecycle_helper(helper, args, ops, **options)
    p_out, p_report, p_error = python_helper(helper, args, ops, **options)
    assert (n_out, n_report, error_facts(n_error)) == (p_out, p_report, error_facts(p_error))


data = st.sampled_from([b"", b"a", b"hello", b"\\u00e9", b"{\\\"a\\\":1}"])
attr_pairs = st.lists(st.tuples(st.sampled_from(["path", "id", "name", "signature"]),
                                st.sampled_from([b'"x"', b"1", b"null", b'{"a":[1]}'])), max_size=3,
                      unique_by=lambda pair: pair[0])


@given(st.sampled_from(["assistant-text", "tool-call", "server-tool-result"]), st.integers(0, 2), attr_pairs,
       st.none() | st.integers(0, 3),
       st.lists(st.one_of(st.tuples(st.just("fragment"), data), st.tuples(st.just("announce")),
                          st.tuples(st.just("close"), attr_pairs),
                          st.tuples(st.just("set"), st.sampled_from(["id", "name"]), st.sampled_from([b'"y"', b"2"]))),
                max_size=8))
def test_block_stream(section, message, attrs, key, ops):
    same_helper("block_stream", (section, message, attrs, key), ops)


reasoning_ops = st.lists(st.one_of(
    st.tuples(st.just("text"), data, st.booleans(), st.booleans()), st.tuples(st.just("member"), st.booleans()),
    st.tuples(st.just("reasoning_end")), st.tuples(st.just("release"))), max_size=10)


@given(reasoning_ops, st.booleans(), st.sampled_from([1 << 20, 8]))
def test_reasoning_first(ops, refuse, budget):
    same_helper("reasoning_first", (), ops, refuse_reorder=refuse, reorder_budget=budget)


@given(st.lists(st.one_of(st.tuples(st.just("fragment"), data, st.booleans()), st.tuples(st.just("release"))),
                max_size=10), st.booleans(), st.sampled_from([1 << 20, 8]))
def test_deferred(ops, refuse, budget):
    same_helper("deferred", (), ops, refuse_reorder=refuse, reorder_budget=budget)


@given(st.lists(st.one_of(st.tuples(st.just("fragment"), st.integers(0, 2), st.sampled_from([b"H1", b"H2"]),
                                    st.sampled_from([b"T1", b"T2"]), data), st.tuples(st.just("close"))), max_size=10))
def test_open_frame(ops):
    same_helper("open_frame", (), ops)
