"""``compile_chat_request``: ADR-0007 D1-D3, one deterministic pass.

Steps (each a small function below, in this order):

1. validate the request and resolve the history view (None -> the branch's
   effective progression; ``()`` -> no history; missing ids reported together;
   duplicates refused; progression order kept);
2. project provider-relevant history (system and action-request records
   skipped, action results folded into the next instruction's context,
   leftovers into the current instruction, unset-role records ignored, any
   other fixed-role record a ``TypeError``);
3. merge assistant runs with ``"\\n\\n"`` and validate the ordering;
4. fold system text, the context section and guidance into the first
   instruction, joined by ``"\\n\\n"``;
5. render immutable provider-neutral messages (falsy content omitted; only
   the current instruction carries Tools / ResponseSchema / ResponseFormat).

Nothing reachable from the branch or the request is mutated: every record
that is rendered is first copied (``InstructionContent.durable_copy``), and
schemas, response formats and provider kwargs are deep-copied.

Decisions on the points ADR-0007 leaves open
--------------------------------------------

1. **The current instruction is not part of the adjacency rule.** The ADR
   rejects adjacent *retained* instructions; the current instruction is not
   retained history, and D2 says it "is appended exactly once after retained
   history". A history that ends with an instruction (e.g. a call that failed
   after its instruction was recorded) therefore compiles to two consecutive
   user messages, exactly as today's path sends them. Nothing is dropped, so
   the hazard the ADR closes (silent loss) does not arise.

2. **On a systemless branch the fold goes to the first instruction in the
   compiled sequence**, whatever precedes it: a history that opens with an
   assistant response folds the context section and guidance into the first
   historical instruction after it, or into the current instruction when the
   history holds none. This reads D2 step 4 ("applies to its first
   instruction") literally, and the first-record rule stays a systemful rule
   as the ADR states it, so such a history is not an error. When there is
   neither a system message nor a context block there is nothing to fold and
   guidance is left exactly as stored.

3. **Exact messages** (``ValueError`` unless noted):

   * missing ids, all listed in progression order, each once:
     ``Progression references message ids not in the branch: <id>, <id>``
   * duplicates, each listed once, in the order the repeats occur:
     ``Progression contains duplicate message ids: <id>, <id>``
   * empty context-block fields, raised when the block is built:
     ``ContextBlock.provider_name must be a non-empty string`` and
     ``ContextBlock.content must be a non-empty string (provider '<name>')``
     (a non-str field is a ``TypeError``).
   * the current instruction also present in the selected history
     (it would be sent twice, breaking "appended exactly once"):
     ``The current instruction <id> is already in the selected progression``.
   * an unknown fixed-role record (``TypeError``):
     ``No compiler case for message type <Name> with role '<role>'``.

   Missing ids are checked first, then duplicates, then the current id.

4. **ResponseSchema source without pydantic**: a dict format is an example
   (ResponseFormat only, no ResponseSchema); msgspec.Struct and dataclass
   types (or instances) take their schema from ``msgspec.json`` with the
   type's own component inlined at the top level. See ``structure.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from uuid import UUID

from .branch import Branch
from .messages import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Instruction,
    InstructionContent,
    Message,
    MessageRole,
    System,
)
from .rendering import canonical_json, minimal_yaml, render_instruction
from .structure import Structure, build_structure
from .types import (
    RESERVED_MESSAGES_KEY_ERROR,
    CompiledChatRequest,
    CompiledMessage,
    ContextBlock,
    TurnRequest,
)

__all__ = (
    "ADJACENT_INSTRUCTIONS_ERROR",
    "CONTEXT_SECTION_END",
    "CONTEXT_SECTION_START",
    "FIRST_MESSAGE_ERROR",
    "compile_chat_request",
    "render_context_section",
)

# Exact texts from ADR-0007.
ADJACENT_INSTRUCTIONS_ERROR = "Consecutive instructions require an intervening assistant response"
FIRST_MESSAGE_ERROR = "First message in progression must be an Instruction or System"
CONTEXT_SECTION_START = "LIONAGI_CONTEXT_BLOCKS_JSON"
CONTEXT_SECTION_END = "END_LIONAGI_CONTEXT_BLOCKS_JSON"
SECTION_SEPARATOR = "\n\n"
ASSISTANT_RUN_SEPARATOR = "\n\n"


# --- private turn views (ephemeral, owned by one compilation) -------------------


@dataclass(slots=True)
class _InstructionTurn:
    content: InstructionContent  # a durable copy; safe to fold into
    tool_schemas: list[dict[str, Any]] = field(default_factory=list)
    structure: Structure | None = None

    def render(self) -> str | list[dict[str, Any]]:
        c, structure = self.content, self.structure
        return render_instruction(
            guidance=c.guidance,
            instruction=c.instruction,
            prompt_context=c.prompt_context,
            plain_content=c.plain_content,
            images=c.images,
            image_detail=c.image_detail,
            tool_schemas=self.tool_schemas,
            response_schema=None if structure is None else structure.response_schema(),
            response_format_text=None if structure is None else structure.render(),
        )


@dataclass(slots=True)
class _AssistantTurn:
    texts: list[str]

    def render(self) -> str:
        return ASSISTANT_RUN_SEPARATOR.join(self.texts)


_Turn = _InstructionTurn | _AssistantTurn


# --- entry point ------------------------------------------------------------------


def compile_chat_request(branch: Branch, request: TurnRequest) -> CompiledChatRequest:
    """Compile one turn of ``branch`` plus ``request`` into neutral messages."""
    _check_request(request)
    structure = build_structure(copy.deepcopy(request.response_format), request.structure)
    context_section = render_context_section(request.context_blocks)

    records = _select_history(branch, request.progression, request.instruction.id)
    history, pending_results = _project_history(records)
    history = _merge_assistant_runs(history)
    _check_conversation_order(history, has_system=branch.msgs.system is not None)

    current = _InstructionTurn(
        content=_durable_content(request.instruction),
        tool_schemas=copy.deepcopy(list(request.tool_schemas)),
        structure=structure,
    )
    _append_action_results(current.content.prompt_context, pending_results)
    turns = [*history, current]
    _fold_policy(turns, branch.msgs.system, context_section)

    return CompiledChatRequest(
        instruction=_record_ready_instruction(request.instruction),
        messages=_render_turns(turns),
        provider_kwargs=request.provider_kwargs,  # deep-copied and frozen on construction
    )


# --- step 0: request shape --------------------------------------------------------


def _check_request(request: TurnRequest) -> None:
    if not isinstance(request, TurnRequest):
        raise TypeError(f"request must be a TurnRequest, got {type(request).__name__}")
    if not isinstance(request.instruction, Instruction):
        raise TypeError(
            f"TurnRequest.instruction must be an Instruction, got {type(request.instruction).__name__}"
        )
    _check_progression_shape(request.progression)
    _check_tuple_of(request.tool_schemas, dict, "tool_schemas", "dicts")
    _check_tuple_of(request.context_blocks, ContextBlock, "context_blocks", "ContextBlock values")
    if not isinstance(request.provider_kwargs, Mapping):
        raise TypeError("TurnRequest.provider_kwargs must be a mapping")
    if "messages" in request.provider_kwargs:
        raise ValueError(RESERVED_MESSAGES_KEY_ERROR)


def _check_progression_shape(progression: Any) -> None:
    # A tuple only: a list would reopen the legacy `[]`-means-None ambiguity,
    # which the Branch adapters resolve before building a TurnRequest.
    if progression is None:
        return
    _check_tuple_of(progression, UUID, "progression", "UUIDs")


def _check_tuple_of(value: Any, item_type: type, name: str, described: str) -> None:
    if not isinstance(value, tuple) or not all(isinstance(item, item_type) for item in value):
        raise TypeError(f"TurnRequest.{name} must be a tuple of {described}")


# --- step 1: history view ---------------------------------------------------------


def _select_history(
    branch: Branch, progression: tuple[UUID, ...] | None, current_id: UUID
) -> list[Message]:
    ids = branch.progression if progression is None else progression
    stored = branch.msgs.messages
    _check_history_ids(ids, stored, current_id)
    return [stored[message_id] for message_id in ids]


def _check_history_ids(
    ids: tuple[UUID, ...], stored: Mapping[UUID, Message], current_id: UUID
) -> None:
    missing = _unique_in_order(i for i in ids if i not in stored)
    if missing:
        raise ValueError(
            "Progression references message ids not in the branch: " + _id_list(missing)
        )
    duplicates = _unique_in_order(_repeated(ids))
    if duplicates:
        raise ValueError("Progression contains duplicate message ids: " + _id_list(duplicates))
    if current_id in ids:
        raise ValueError(f"The current instruction {current_id} is already in the selected progression")


def _repeated(ids: tuple[UUID, ...]) -> list[UUID]:
    seen: set[UUID] = set()
    repeated = []
    for message_id in ids:
        if message_id in seen:
            repeated.append(message_id)
        seen.add(message_id)
    return repeated


def _unique_in_order(ids: Any) -> list[UUID]:
    return list(dict.fromkeys(ids))


def _id_list(ids: list[UUID]) -> str:
    return ", ".join(str(i) for i in ids)


# --- step 2: projection -----------------------------------------------------------


def _project_history(records: list[Message]) -> tuple[list[_Turn], list[dict[str, Any]]]:
    """Provider-relevant turns, plus action results after the last instruction."""
    turns: list[_Turn] = []
    pending: list[dict[str, Any]] = []
    for record in records:
        if isinstance(record, System | ActionRequest):
            # System: folded from branch.msgs.system instead. ActionRequest:
            # its function and arguments reappear on the ActionResponse.
            continue
        if isinstance(record, ActionResponse):
            pending.append(_action_result(record))
        elif isinstance(record, AssistantResponse):
            turns.append(_AssistantTurn([record.content.rendered]))
        elif isinstance(record, Instruction):
            content = _durable_content(record)
            _append_action_results(content.prompt_context, pending)
            pending = []
            turns.append(_InstructionTurn(content))
        elif isinstance(record, Message) and record.role is MessageRole.UNSET:
            continue  # routed traffic, not a conversation turn
        else:
            raise TypeError(_no_case_message(record))
    return turns, pending


def _durable_content(instruction: Instruction) -> InstructionContent:
    # Records are mutable, so content may have been reassigned after construction.
    content = instruction.content
    if not isinstance(content, InstructionContent):
        raise TypeError(
            f"Instruction {instruction.id} content must be InstructionContent, "
            f"got {type(content).__name__}"
        )
    return content.durable_copy()


def _no_case_message(record: Any) -> str:
    role = getattr(record, "role", None)
    role_text = role.value if isinstance(role, MessageRole) else role
    return f"No compiler case for message type {type(record).__name__} with role {role_text!r}"


def _action_result(response: ActionResponse) -> dict[str, Any]:
    content = response.content
    return copy.deepcopy(
        {"function": content.function, "arguments": content.arguments, "output": content.output}
    )


def _append_action_results(prompt_context: list[Any], results: list[dict[str, Any]]) -> None:
    # Append in response order, skipping any result equal to an item already
    # present - including one appended earlier in this same batch.
    for result in results:
        if result not in prompt_context:
            prompt_context.append(result)


# --- step 3: ordering -------------------------------------------------------------


def _merge_assistant_runs(turns: list[_Turn]) -> list[_Turn]:
    merged: list[_Turn] = []
    for turn in turns:
        previous = merged[-1] if merged else None
        if isinstance(turn, _AssistantTurn) and isinstance(previous, _AssistantTurn):
            previous.texts.extend(turn.texts)
        else:
            merged.append(turn)
    return merged


def _check_conversation_order(history: list[_Turn], *, has_system: bool) -> None:
    for earlier, later in pairwise(history):
        if isinstance(earlier, _InstructionTurn) and isinstance(later, _InstructionTurn):
            raise ValueError(ADJACENT_INSTRUCTIONS_ERROR)
    if has_system and history and not isinstance(history[0], _InstructionTurn):
        raise ValueError(FIRST_MESSAGE_ERROR)


# --- step 4: system / context / guidance fold -------------------------------------


def render_context_section(blocks: tuple[ContextBlock, ...]) -> str | None:
    """The canonical source-attributed JSON section (D3), or None without blocks."""
    if not blocks:
        return None
    payload = [{"provider_name": b.provider_name, "content": b.content} for b in blocks]
    return f"{CONTEXT_SECTION_START}\n{canonical_json(payload)}\n{CONTEXT_SECTION_END}"


def _fold_policy(turns: list[_Turn], system: System | None, context_section: str | None) -> None:
    if system is None and context_section is None:
        return  # nothing to fold: leave stored guidance exactly as it is
    target = next(t for t in turns if isinstance(t, _InstructionTurn))
    target.content.guidance = _join_sections(
        system.rendered if system is not None else None,
        context_section,
        _guidance_text(target.content.guidance),
    )


def _guidance_text(guidance: Any) -> str | None:
    if guidance is None or isinstance(guidance, str):
        return guidance
    return minimal_yaml(guidance).strip()


def _join_sections(*sections: str | None) -> str | None:
    return SECTION_SEPARATOR.join(s for s in sections if s) or None


# --- step 5: rendering ------------------------------------------------------------


def _render_turns(turns: list[_Turn]) -> tuple[CompiledMessage, ...]:
    # Rendered lists are built fresh from private copies, so no caller-owned
    # container can end up inside a CompiledMessage.
    messages = []
    for turn in turns:
        content = turn.render()
        if not content:
            continue  # a falsy rendering is omitted, as on the shipped path
        role = MessageRole.USER if isinstance(turn, _InstructionTurn) else MessageRole.ASSISTANT
        messages.append(CompiledMessage(role=role, content=content))
    return tuple(messages)


def _record_ready_instruction(instruction: Instruction) -> Instruction:
    """Deep copy keeping id, created_at, sender, recipient, metadata; durable content only."""
    record = copy.deepcopy(instruction)
    record.content = _durable_content(instruction)
    return record
