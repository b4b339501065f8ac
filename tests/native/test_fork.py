"""A forked worker's generated ids: the native core's nonces are a per-process key (drawn
once, keyed with the process id) xor a count the child inherits; the key is forgotten in a
forked child (``os.register_at_fork``), so a parent and its child never generate the same id."""

from __future__ import annotations

import json
import os

import pytest

import fixed_clock
from interlingua import session
from interlingua.backend import native_module

native = native_module()
# an ollama answer has no id: the openai encoder generates one from the response's nonce
BODY = json.dumps({"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True,
                   "done_reason": "stop"}).encode()


def generated_id() -> str:
    # a fixed clock: the id depends on the nonce only (entropy unset: the core draws it)
    transcoder = native.Transcoder("ollama", "openai", kind="response", clock=lambda: 1_800_000_000.0)
    return json.loads(transcoder.feed(BODY) + transcoder.close())["id"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_generates_ids_its_parent_does_not(monkeypatch):
    # the library's own reading of unset hooks, not the suite's fixed entropy (tests/fixed_clock.py)
    monkeypatch.setattr(session, "response_start", fixed_clock.DEFAULT_START)
    generated_id()  # the parent has drawn its nonce key before the fork
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out without the parent's exit handlers
        try:
            os.write(write_end, generated_id().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    parent_id = generated_id()  # drawn with the same count as the child's
    with os.fdopen(read_end, "rb") as pipe:
        child_id = pipe.read().decode()
    os.waitpid(pid, 0)
    assert child_id.startswith("chatcmpl-") and parent_id.startswith("chatcmpl-")
    assert child_id != parent_id
    assert generated_id() != parent_id  # (and a process never draws one twice)
