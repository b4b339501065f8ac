"""The reorder buffer's contract (DESIGN §5): a budget that fails naming the rule, strict refusal, nothing held when nothing must be."""

from __future__ import annotations

import json

import pytest

from interlingua import Block, BudgetExceededError, Options, ReorderRefusedError, Transcoder, decode
from interlingua.decoding import EVENT_OVERHEAD

# keys sorted: the message's content comes before its role, so its blocks wait for the role
CONTENT = "x" * 50_000
SORTED = json.dumps({"messages": [{"content": CONTENT, "role": "user"}], "model": "m"}).encode()
CLIENT_ORDER = json.dumps({"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                                     {"role": "user", "content": CONTENT}]}).encode()


def _run(body: bytes, options: Options, frame: int = 1024) -> tuple[bytes, Transcoder]:
    transcoder = Transcoder("openai", "openai", options=options)
    out = b"".join(transcoder.feed(body[i:i + frame]) for i in range(0, len(body), frame))
    return out + transcoder.close(), transcoder


def test_over_budget_reorder_raises_naming_the_rule():
    with pytest.raises(BudgetExceededError) as info:
        _run(SORTED, Options(reorder_budget=10_000))
    err = info.value
    assert type(err) is BudgetExceededError
    assert "openai:content-before-role" in str(err)
    assert "10000 bytes" in str(err)
    assert err.status == 413 and err.dialect == "openai" and err.path.startswith("$.messages[0]")


def test_within_budget_the_same_body_is_reordered_and_measured():
    out, transcoder = _run(SORTED, Options(reorder_budget=100_000))
    assert json.loads(out) == json.loads(SORTED)
    report = transcoder.reorder.report()
    # (the text and one event's overhead; its last fragment, kept back in the block's builder,
    # counts too: rpt/reorder-kept-fragment)
    assert report["by_reason"]["openai:content-before-role"] >= len(CONTENT) + EVENT_OVERHEAD
    assert report["high_water"] >= len(CONTENT) + EVENT_OVERHEAD
    assert transcoder.reorder.held == 0, "everything held is given back"


def test_refuse_reorder_fails_at_the_first_held_byte():
    transcoder = Transcoder("openai", "openai", options=Options(refuse_reorder=True))
    head = SORTED.index(b'"content": "') + len(b'"content": "')
    # up to the first content byte nothing needs holding
    transcoder.feed(SORTED[:head])
    with pytest.raises(ReorderRefusedError) as info:
        transcoder.feed(SORTED[head:head + 1])
        transcoder.feed(SORTED[head + 1:])  # a 1-byte fragment may stay in the tokenizer; the rest must fail
    assert "openai:content-before-role" in str(info.value)
    assert transcoder.reorder.high_water == 0, "nothing was held before refusing"


def test_body_needing_no_reorder_streams_with_nothing_held():
    out, transcoder = _run(CLIENT_ORDER, Options(refuse_reorder=True), frame=64)
    assert json.loads(out) == json.loads(CLIENT_ORDER)
    assert transcoder.reorder.report() == {"high_water": 0, "by_reason": {}}


def test_body_needing_no_reorder_emits_while_it_arrives():
    transcoder = Transcoder("openai", "openai")
    produced_before_end = 0
    for i in range(0, len(CLIENT_ORDER) - 1024, 1024):
        produced_before_end += len(transcoder.feed(CLIENT_ORDER[i:i + 1024]))
    assert produced_before_end > len(CONTENT) // 2, "output follows input, it is not held"
    assert transcoder.reorder.high_water == 0


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "ollama"])
def test_content_before_role_is_held_per_message_and_resolved_by_its_role(dialect):
    """Each message reader holds its blocks until its role: only the messages whose
    role comes late are held, and the events are those of the role-first body."""
    messages = [{"role": "user", "content": "first " * 20},
                {"content": "second " * 20, "role": "assistant"},  # sorted keys: held
                {"role": "user", "content": "third " * 20}]
    reordered = [{"role": m["role"], "content": m["content"]} for m in messages]
    late = json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode()
    early = json.dumps({"model": "m", "max_tokens": 5, "messages": reordered}).encode()

    def merged(body: bytes, frame: int) -> list:
        """The events, each block's fragments joined (their cut follows the input's)."""
        out = []
        for event in decode([body[i:i + frame] for i in range(0, len(body), frame)], source=dialect):
            if type(event) is not Block:
                out.append(event)
            elif event.init:
                out.append([event.section, event.message, event.payload, event.attrs, event.fin])
            else:
                out[-1][2] += event.payload
                out[-1][4] = event.fin
        return out

    for frame in (7, 64, 4096):
        assert merged(late, frame) == merged(early, 1 << 20)
    transcoder = Transcoder(dialect, dialect)
    for i in range(0, len(late), 16):  # small frames: the content arrives in several fragments
        transcoder.feed(late[i:i + 16])
    transcoder.close()
    assert set(transcoder.reorder.report()["by_reason"]) >= {f"{dialect}:content-before-role"}
    assert transcoder.reorder.report()["by_reason"][f"{dialect}:content-before-role"] >= len("second " * 20)
    with pytest.raises(ReorderRefusedError, match=f"{dialect}:content-before-role"):
        strict = Transcoder(dialect, dialect, options=Options(refuse_reorder=True))
        for i in range(0, len(late), 16):
            strict.feed(late[i:i + 16])
        strict.close()
    strict = Transcoder(dialect, dialect, options=Options(refuse_reorder=True))
    assert json.loads(strict.feed(early) + strict.close())["messages"]


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("size", [1, 63, 2_000])
@pytest.mark.parametrize("frame", [1, 3, 7, 64, 1 << 20])
def test_a_held_text_costs_its_payload_and_one_overhead_whatever_the_pieces(dialect, size, frame):
    """A block's event overhead (64 bytes) counts once, not once per fragment: smaller pieces
    cut a held text into more fragments, and byte-by-byte input cost 65 times its payload
    (rpt/reorder-budget-any-cut); and it costs that whole too, where the text is all kept back
    as its block's last fragment (rpt/reorder-kept-fragment)."""
    text = "y" * size
    content = [{"text": text, "type": "text"}] if dialect == "anthropic" else text
    body = json.dumps({"messages": [{"content": content, "role": "user"}], "model": "m", "max_tokens": 5}).encode()
    transcoder = Transcoder(dialect, "openai", options=Options(reorder_budget=size + EVENT_OVERHEAD))
    for i in range(0, len(body), frame):
        transcoder.feed(body[i:i + frame])
    transcoder.close()
    held = transcoder.reorder.report()["by_reason"].get(f"{dialect}:content-before-role", 0)
    assert held == size + EVENT_OVERHEAD


def test_a_chunk_over_the_slice_is_read_in_slices_on_both_backends():
    """A chunk over 256 KiB (json.py's `_SLICE`) is scanned in slices, so a long string in it
    reaches the decoder in fragments at the slice ends: the native tokenizer scanned such a
    chunk at once and held nothing where Python held all but the last slice."""
    body = json.dumps({"messages": [{"content": "x" * 600_000, "role": "user"}], "model": "m"}).encode()
    blocks = [(len(e.payload), e.init, e.fin) for e in decode([body], source="openai") if isinstance(e, Block)]
    assert blocks == [(262_117, True, False), (262_144, False, False), (75_739, False, True)]  # (27 bytes before the text)
    _, transcoder = _run(body, Options(), frame=len(body))
    # (the last slice too: it waits as the block's kept-back fragment, counted all the same)
    assert transcoder.reorder.report()["by_reason"]["openai:content-before-role"] == 262_117 + 262_144 + 75_739 + EVENT_OVERHEAD
    with pytest.raises(BudgetExceededError) as info:
        _run(body, Options(reorder_budget=300_000), frame=len(body))
    assert info.value.offset == 262_144
