"""Every rpt wire script is a test (rpt/README.md): decode, round trip, cross, error, reorder report."""

from __future__ import annotations

import json

import pytest

import validity
from interlingua import TranscodeError
from interlingua.dialects import available

from rpt import (
    split_stream_events,
    all_wire_scripts, coalesce, cross_pairs, decode_all, events_as_builtins, matches_canonical, pair_id,
    parse_canonical, parse_wire, transcode_all,
)


def _script(path):
    script = parse_wire(path)
    if not available(script.dialect, script.kind):
        pytest.skip(f"{script.dialect} {script.kind} codec not available")
    return script


def _json_values(data: bytes, kind: str):
    """A body as JSON, or a stream as the list of its events' JSON."""
    if kind != "stream":
        return _no_duplicate_keys(data)

    return split_stream_events(data)


def _no_duplicate_keys(data: bytes):
    """``json.loads``, failing on an object with a key twice (``json.loads`` keeps the last, so a
    duplicate would pass as JSON-equal: the same-dialect round trip too, which the suite's
    cross-dialect validity check does not see)."""
    value = json.loads(data, object_pairs_hook=validity._object)
    duplicates = list(validity._duplicate_keys(value))
    assert not duplicates, duplicates
    return json.loads(data, parse_float=_Float)


class _Float(float):
    """A JSON number written with a fraction or an exponent: not equal to an integer (``256.0``
    is not ``256`` -- an integer field written as a float breaks the target's client types)."""

    def __eq__(self, other):
        return isinstance(other, _Float) and float(self) == float(other)

    __hash__ = float.__hash__


SCRIPTS = all_wire_scripts()
IDS = [f"{p.parent.name}/{p.name}" for p in SCRIPTS]
# error scenarios are decoded only: there is nothing to round-trip or cross
VALID = [p for p in SCRIPTS if not parse_wire(p).error]
VALID_IDS = [f"{p.parent.name}/{p.name}" for p in VALID]


@pytest.mark.parametrize("path", SCRIPTS, ids=IDS)
def test_decode(path):
    script = _script(path)
    if script.error:
        cls, where, offset = script.error
        for frame in script.frames:
            with pytest.raises(TranscodeError) as info:
                decode_all(script, frame)
            err = info.value
            assert type(err).__name__ == cls, f"frame {frame}: {err!r}"
            assert err.dialect == script.dialect
            if where != "*":
                assert err.path == where, f"frame {frame}: {err}"
            if offset != "*":
                assert err.offset == int(offset), f"frame {frame}: {err}"
        return
    canonical_path = path.parent / script.canonical
    reference = None
    for frame in script.frames:
        events = coalesce(decode_all(script, frame))
        if reference is None:
            reference = events
            if canonical_path.exists():
                expected = parse_canonical(canonical_path, script.variables)
                problems = matches_canonical(events, expected)
                assert not problems, "\n".join(problems)
        else:
            assert events_as_builtins(events) == events_as_builtins(reference), f"frame {frame} differs"


@pytest.mark.parametrize("path", VALID, ids=VALID_IDS)
def test_round_trip(path):
    script = _script(path)
    expected = script.expected_from.get(script.dialect, script.body)  # a round trip that normalises
    first = None
    for frame in script.frames:
        out, _ = transcode_all(script, script.dialect, frame)
        if first is None:
            first = out
            assert _json_values(out, script.kind) == _json_values(expected, script.kind)
        else:
            assert out == first, f"frame {frame}: output differs from frame {script.frames[0]}"


CROSS = [pytest.param(source.path, target.path, id=pair_id(source, target))
         for source, target in cross_pairs(carried=False)]


@pytest.mark.parametrize("source_path,target_path", CROSS)
def test_cross(source_path, target_path):
    target = _script(target_path)
    source = _script(source_path)
    if source.dialect in target.not_from:
        pytest.skip(f"not-from {source.dialect}: {target.not_from[source.dialect]}")
    expected = target.expected_from.get(source.dialect, target.body)
    options, hooks = source.make_options(**target.options), source.make_hooks(**target.options)
    if source.dialect in target.errors_from:
        cls, where, offset = target.errors_from[source.dialect]
        for frame in source.frames:
            with pytest.raises(TranscodeError) as info:
                transcode_all(source, target.dialect, frame, options, hooks)
            assert type(info.value).__name__ == cls, f"frame {frame}: {info.value!r}"
            assert where == "*" or info.value.path == where, f"frame {frame}: {info.value!r}"
            assert offset == "*" or info.value.offset == int(offset), f"frame {frame}: {info.value!r}"
        return
    first = first_losses = None
    for frame in source.frames:
        out, transcoder = transcode_all(source, target.dialect, frame, options, hooks)
        losses = [(loss.path, loss.reason) for loss in transcoder.losses]
        if first is None:
            first, first_losses = out, losses
            assert _json_values(out, target.kind) == _json_values(expected, target.kind)
            paths = [loss.path for loss in transcoder.losses]
            for want in target.losses_from(source.dialect):
                assert any(p.startswith(want) for p in paths), f"no loss at {want}: {paths}"
            if target.no_losses:
                assert transcoder.losses == [], "no-losses"
        else:
            assert out == first, f"frame {frame} differs"
            assert losses == first_losses, f"frame {frame}: the losses differ (or their order)"


def _held(source, target: str, frame: str):
    """What a transcode held for reordering (or the class and path of its error)."""
    try:
        _, transcoder = transcode_all(source, target, frame)
    except TranscodeError as error:
        return type(error).__name__, error.path
    return transcoder.reorder.report()


@pytest.mark.parametrize("path", VALID, ids=VALID_IDS)
def test_reorder_report(path):
    """What is held for reordering does not depend on how the body was cut: into every
    dialect, each frame size holds what the first did (whole, a text before its role was one
    kept-back fragment that no hold counted: rpt/reorder-kept-fragment)."""
    source = _script(path)
    for target in ("openai", "anthropic", "ollama"):
        if not available(target, source.kind):
            continue
        held = [(frame, _held(source, target, frame)) for frame in source.frames]
        assert all(report == held[0][1] for _, report in held), f"into {target}: {held}"


# -- the runner's own rules (rpt/README.md) ------------------------------------------------------


def test_loss_lines_apply_to_their_source(tmp_path):
    from rpt import parse_wire

    path = tmp_path / "anthropic.request.rpt"
    path.write_text("body\n{}\nend\nloss $.a\nloss from ollama $.b\n", encoding="utf-8")
    script = parse_wire(path)
    assert script.losses_from("ollama") == ["$.a", "$.b"]
    assert script.losses_from("openai") == ["$.a"]


def test_tool_call_arguments_compare_as_json():
    from interlingua.canonical import Block, Section

    got = [Block(Section.TOOL_CALL, 0, b'{\\"a\\":1}', True, True, {"id": "c"})]
    assert matches_canonical(got, [{"block": "tool-call", "text": '{"a": 1}'}]) == []
    assert matches_canonical(got, [{"block": "tool-call", "text": '{"a": 2}'}]) != []
    text = [Block(Section.USER_TEXT, 0, b'{\\"a\\":1}', True, True, None)]
    assert matches_canonical(text, [{"block": "user-text", "text": '{"a": 1}'}]) != []
