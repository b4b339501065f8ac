"""openai messages of unknown or empty roles, empty messages, and messages of several text
parts, into every target: by class, on both backends, at cuts 1, 7 and whole.

For every such message (rpt/unknown-role-*, empty-assistant-*, several-text-parts), each
output is valid JSON without a duplicate key, the losses are the same at every cut and on
both backends, and every member not carried is recorded exactly once, by its source path:
the message itself (its role and content) once, each other member (``name``, an unknown
one) once.
"""

from __future__ import annotations

import itertools
import json

import pytest

import interlingua
import validity
from interlingua import Options, Transcoder
from interlingua import backend as backends

TARGETS = ("openai", "anthropic", "ollama")
CUTS = (1, 7, 0)  # 0: whole
#: unknown roles: invented, empty, and ones that look like a known role but are not it
UNKNOWN_ROLES = ("critic", "", "Developer", "developer ", "tool_result")
CONTENTS = {"absent": None, "null": None, "empty": "", "no-parts": [],
            "parts": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
EMPTY_CONTENTS = {"absent": None, "null": None, "empty": "", "no-parts": [], "empty-part": [{"type": "text", "text": ""}]}
EXTRAS = {"none": {}, "name": {"name": "ops"}, "unknown": {"foo": 1}}


def _message(role: str, content_kind: str, content, extra: dict) -> dict:
    message = {"role": role}
    if content_kind != "absent":
        message["content"] = content
    return {**message, **extra}


def _body(message: dict) -> bytes:
    messages = [{"role": "user", "content": "q"}, message, {"role": "user", "content": "again"}]
    return json.dumps({"model": "m", "max_tokens": 5, "messages": messages}).encode()


def _run(target: str, body: bytes, cut: int):
    t = Transcoder("openai", target, kind="request", options=Options())
    size = cut or len(body)
    out = b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close()
    return out, [(loss.path, loss.reason) for loss in t.losses]


def _everywhere(monkeypatch, target: str, body: bytes):
    """The output and losses, the same at every cut on both backends (asserted)."""
    runs = {}
    for name in ("python", "native"):
        if name == "native" and backends.NATIVE_IMPORT_ERROR is not None:
            continue
        monkeypatch.setattr(backends, "BACKEND", name)
        monkeypatch.setattr(interlingua, "BACKEND", name)
        for cut in CUTS:
            runs[name, cut] = _run(target, body, cut)
    first = runs["python", 0]
    for key, run in runs.items():
        assert run == first, f"{key} differs from python whole:\n{run}\n{first}"
    out, losses = first
    return json.loads(out, object_pairs_hook=validity._object), losses  # (raises on a duplicate key)


def _members_lost(message: dict) -> list[str]:
    """The paths of the members of message 1 that no canonical field carries (its extensions)."""
    return [f"$.messages[1].{key}" for key in message if key not in ("role", "content")]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("extra", EXTRAS)
@pytest.mark.parametrize("content", CONTENTS)
@pytest.mark.parametrize("role", UNKNOWN_ROLES)
def test_a_message_of_an_unknown_role(monkeypatch, role, content, extra, target):
    message = _message(role, content, CONTENTS[content], EXTRAS[extra])
    body = _body(message)
    out, losses = _everywhere(monkeypatch, target, body)
    if target == "openai":  # the same dialect: every member comes back as it was
        assert out == json.loads(body) and losses == []
        return
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "user"], out
    whole = [reason for path, reason in losses if path == "$.messages[1]"]
    assert len(whole) == 1 and whole[0].startswith(f"{role} message: " if role else "message with an empty role: ")
    assert sorted(path for path, _ in losses if path != "$.messages[1]") == sorted(_members_lost(message))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("extra", EXTRAS)
@pytest.mark.parametrize("content", EMPTY_CONTENTS)
@pytest.mark.parametrize("role", ("user", "assistant"))
def test_an_empty_message(monkeypatch, role, content, extra, target):
    message = _message(role, content, EMPTY_CONTENTS[content], EXTRAS[extra])
    body = _body(message)
    out, losses = _everywhere(monkeypatch, target, body)
    members = _members_lost(message) if target != "openai" else []
    if target == "anthropic":  # anthropic takes no message without content: it is not sent, recorded
        assert [m["role"] for m in out["messages"]] == ["user", "user"], out
        members.append("$.messages[1]")
        empty = [reason for path, reason in losses if path == "$.messages[1]"]
        assert empty == [f"empty {role} message: anthropic has no message without content; the message is not sent"]
    else:
        assert [m["role"] for m in out["messages"]] == ["user", role, "user"], out
    if target == "openai":
        assert out["messages"][1] == message
    assert sorted(path for path, _ in losses) == sorted(members)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("parts", (2, 3))
@pytest.mark.parametrize("role", ("system", "developer", "user", "assistant"))
def test_several_text_parts(monkeypatch, role, parts, target):
    message = {"role": role, "content": [{"type": "text", "text": f"t{n}"} for n in range(parts)], "name": "ops"}
    out, losses = _everywhere(monkeypatch, target, _body(message))
    several = [reason for _, reason in losses if reason.startswith("several")]
    if target == "ollama":  # one content per message: joined, one loss saying so
        article = "an" if role == "assistant" else "a"
        assert several == [f"several text parts of {article} {role} message: ollama has no second content in "
                           f"a message; joined with a blank line"]
        assert [r for _, r in losses if r.startswith("developer message")] == (
            ["developer message: ollama has no developer role; sent as a system message"] if role == "developer" else [])
    else:
        assert several == []
    assert [path for path, _ in losses].count("$.messages[1].name") == (target != "openai")


def test_every_combination_is_listed():
    # the classes above are the product of their tables (a new role or content is a new row)
    assert len(list(itertools.product(UNKNOWN_ROLES, CONTENTS, EXTRAS, TARGETS))) == 225
