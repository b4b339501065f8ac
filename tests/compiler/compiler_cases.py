"""Builders that turn hand-written JSON cases into branches and turn requests.

A case file (tests/compiler/fixtures/matrix/*.json) holds:

* ``branch.messages``: records in stored order, each ``{"id", "kind",
  "content"}``; kind ``system`` installs the branch's system message;
* ``branch.progression`` (optional): a stored progression replacing the
  insertion order; ``branch.metadata`` (optional), e.g. current_progression;
* ``request``: the current instruction's content (and optional ``id``) plus
  the TurnRequest options (``progression`` null/omitted means None, a JSON
  list means a tuple, so ``[]`` is the explicit empty history);
* ``expect``: either ``payload`` (the chat payload; the run surface must
  return the same plus ``"stream": true``) or ``error`` (type and exact text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID

from interlingua.compiler import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Branch,
    ContextBlock,
    Instruction,
    Message,
    MessageRole,
    System,
    TurnRequest,
)

FIXTURES = Path(__file__).parent / "fixtures"
MATRIX_DIR = FIXTURES / "matrix"


@dataclass(slots=True)
class Note(Message):
    """A fixed-role conversational subtype the compiler has no case for."""

    _role: ClassVar[MessageRole] = MessageRole.USER


RECORD_KINDS: dict[str, type[Message]] = {
    "system": System,
    "instruction": Instruction,
    "assistant": AssistantResponse,
    "action_request": ActionRequest,
    "action_response": ActionResponse,
    "routed": Message,
    "note": Note,
}


def load_case(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def matrix_case_paths() -> list[Path]:
    return sorted(MATRIX_DIR.glob("*.json"))


def build_record(spec: dict[str, Any]) -> Message:
    record_type = RECORD_KINDS[spec["kind"]]
    return record_type(id=UUID(spec["id"]), content=spec.get("content"))


def build_branch(spec: dict[str, Any]) -> Branch:
    branch = Branch(metadata=dict(spec.get("metadata", {})))
    for record_spec in spec.get("messages", []):
        branch.add_message(build_record(record_spec))
    if "progression" in spec:
        branch.msgs.progression = [UUID(i) for i in spec["progression"]]
    return branch


def build_request(spec: dict[str, Any]) -> TurnRequest:
    instruction = Instruction(content=spec["instruction"])
    if "id" in spec:
        instruction = Instruction(id=UUID(spec["id"]), content=spec["instruction"])
    progression = spec.get("progression")
    return TurnRequest(
        instruction=instruction,
        progression=None if progression is None else tuple(UUID(i) for i in progression),
        tool_schemas=tuple(spec.get("tool_schemas", ())),
        response_format=spec.get("response_format"),
        structure=spec.get("structure"),
        context_blocks=tuple(ContextBlock(**block) for block in spec.get("context_blocks", ())),
        provider_kwargs=spec.get("provider_kwargs", {}),
    )
