"""The native canonical events against canonical.py: the same sections and payload
forms, the same event tags, the same payload escaping."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from interlingua import canonical
from interlingua.backend import native_module
from interlingua.framing import FrameEnd

native = native_module()


def test_sections_and_payload_forms():
    assert native.sections() == [(s.value, canonical.PAYLOAD_FORM[s].value) for s in canonical.Section]


def test_event_tags():
    classes = [canonical.Block, canonical.Control, canonical.Extension, canonical.SystemEnd,
               canonical.MessagesEnd, canonical.MessageStart, canonical.Finish, canonical.Usage, canonical.Logprobs,
               canonical.Error, canonical.End, FrameEnd]
    assert native.event_tags() == [cls.__struct_config__.tag for cls in classes]


@given(st.text())
def test_escape_text(text):
    if any(0xD800 <= ord(c) < 0xE000 for c in text):
        return  # (a Rust str holds no lone surrogate: the native core never makes one from text)
    assert native.escape_text(text) == canonical.escape_text(text)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=10))
def test_escape_raw_json(value):
    data = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert native.escape_raw_json(data) == canonical.escape_raw_json(data)


_json = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8)
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=6)
_name = st.text(max_size=10)
_opt = st.none() | _name
_int = st.integers(-3, 10**6)
events = st.one_of(
    st.builds(canonical.Block, section=st.sampled_from(list(canonical.Section)), message=_int,
              payload=st.binary(max_size=20), init=st.booleans(), fin=st.booleans(),
              attrs=st.none() | st.dictionaries(_name, _json, max_size=3)),
    st.builds(canonical.Control, name=_name, value=_json, dialect=_opt, key=_opt, raw=st.none() | st.binary(max_size=9)),
    st.builds(canonical.Extension, dialect=_name, path=_name, raw=st.binary(max_size=9),
              message=st.none() | _int, lossless=st.booleans()),
    st.builds(canonical.MessageStart, id=_opt, model=_opt, choice=_int),
    st.builds(canonical.Finish, reason=_opt, stop_sequence=_opt, choice=_int),
    st.builds(canonical.Usage, input=st.none() | _int, output=st.none() | _int, cache_read=st.none() | _int,
              cache_write=st.none() | _int, reasoning=st.none() | _int, total=st.none() | _int),
    st.builds(canonical.Error, type=_name, message=_name, status=st.none() | _int),
    st.sampled_from([canonical.SystemEnd(), canonical.MessagesEnd(), canonical.End(), FrameEnd()]),
)


def _no_surrogates(value) -> bool:
    return "\\ud" not in json.dumps(value) if not isinstance(value, bytes) else True


@given(st.lists(events, max_size=8))
def test_events_cross_the_boundary_both_ways(events_in):
    # Python event -> the core's Event -> Python event: equal (attribute and control values
    # travel as compact JSON text; a str holding a lone surrogate is not text Rust can hold)
    events_in = [e for e in events_in if _no_surrogates(msgspec_to_builtins(e))]
    assert native.canonical_roundtrip(events_in) == events_in


def msgspec_to_builtins(event):
    import msgspec
    return msgspec.to_builtins(event)
