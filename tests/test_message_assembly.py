"""Pins for the per-message fast paths of the request encoders (perf work):
a message whose first member opens with its brace writes the same bytes as
one whose member opens after it, and the reorder buffer counts holds of one
reason together however many there are."""

from __future__ import annotations

import pytest

from interlingua import Transcoder
from interlingua.encoding import STRING_CONTENT, MessageAssembler, first_member
from interlingua.jsonwriter import JsonWriter
from interlingua.reorder import ReorderBuffer
from interlingua.session import Session


def _write(first_with_brace: bool, steps) -> bytes:
    out: list[bytes] = []
    writer = JsonWriter(out.append)
    session = Session(None, source="openai", target="openai")
    if first_with_brace:
        msg = MessageAssembler(writer, session, "test:member-order", b'"role":"user"', STRING_CONTENT)
    else:
        msg = MessageAssembler(writer, session, "test:member-order", b'"role":"user"')
        msg.member("content", b'"')
    msg.member("content", b'"').write(b"hi")
    for step in steps:
        step(msg)
    msg.close()
    return b"".join(out)


@pytest.mark.parametrize("steps", [
    [],
    [lambda m: m.scalar("tool_call_id", b'"c1"')],  # mid-stream: written at close
    [lambda m: m.trailing("name", b'"n"')],
    [lambda m: m.member("tool_calls", b"[").raw_element(b"{}")],  # a held member
    [lambda m: m.end_member("content"), lambda m: m.member("images", b"[").raw_element(b'"x"')],
])
def test_first_member_with_the_brace_writes_the_same_bytes(steps):
    assert _write(True, steps) == _write(False, steps)


def test_first_member_container_and_empty_head():
    out: list[bytes] = []
    msg = MessageAssembler(JsonWriter(out.append), Session(None), "test:member-order", b"",
                           first_member("content", b"["))
    content = msg.member("content", b"[")
    content.raw_element(b"1")
    content.raw_element(b"2")
    msg.close()
    assert b"".join(out) == b'{"content":[1,2]}'


BODY = (b'{"max_tokens":5,"messages":[{"role":"user","x":{"a":[1]},"content":"hi"},'
        b'{"y":null,"role":"assistant","content":[{"type":"text","text":"yo"}]}],"model":"m"}')


@pytest.mark.parametrize("cut", [1, 3, 7, len(BODY)])
def test_message_fields_before_the_first_block_stay_before_it(cut):
    """anthropic -> anthropic: a message's own field that comes before its content
    goes with the role, ahead of the content, whatever the cut."""
    t = Transcoder("anthropic", "anthropic")
    out = b"".join(t.feed(BODY[i:i + cut]) for i in range(0, len(BODY), cut)) + t.close()
    assert out == (b'{"max_tokens":5,"messages":[{"role":"user","x":{"a":[1]},"content":"hi"},'
                   b'{"role":"assistant","y":null,"content":[{"type":"text","text":"yo"}]}],"model":"m"}')


def test_holds_of_one_reason_are_counted_together():
    buffer = ReorderBuffer()
    first, second, other = buffer.hold("a"), buffer.hold("a"), buffer.hold("b")
    first.write(b"xx")
    second.append("item", 3)
    other.write(b"y")
    assert buffer.report() == {"high_water": 6, "by_reason": {"a": 5, "b": 1}}
    first.drain()
    second.write(b"zz")  # "a" holds 5 again: not more than before
    assert buffer.report() == {"high_water": 6, "by_reason": {"a": 5, "b": 1}}
    second.write(b"w")
    assert buffer.report() == {"high_water": 7, "by_reason": {"a": 6, "b": 1}}
    assert buffer.held == 7
