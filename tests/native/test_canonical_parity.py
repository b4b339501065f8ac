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
               canonical.MessagesEnd, canonical.MessageStart, canonical.Finish, canonical.Usage,
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
