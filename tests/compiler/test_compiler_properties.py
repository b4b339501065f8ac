"""Properties over random histories (hypothesis).

1. Compiling never mutates the branch or the request, whether it succeeds or
   raises.
2. Compiling twice gives equal results (or the same error).
3. The payload keeps every turn's role and text: checked against a small
   independent model of the projection (skip non-turns, merge assistant runs,
   append the current instruction), which also predicts when the history is
   malformed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from interlingua.compiler import (
    ActionRequest,
    ActionResponse,
    AssistantResponse,
    Branch,
    ContextBlock,
    Instruction,
    InstructionContent,
    Message,
    System,
    TurnRequest,
    chat_request,
    compile_chat_request,
    run_request,
)

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Plain spaces only: PyYAML writes "0\xa0" unquoted but reads it back as the int 0, so
# the YAML oracle below could not read such a text back (the rendering itself is lionagi's).
TEXT = st.text(
    alphabet=st.characters(categories=("L", "N", "P"), include_characters=" "), min_size=1, max_size=12
).filter(lambda text: text.strip())
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=6,
)
TOOL_SCHEMA = st.dictionaries(TEXT, JSONISH, min_size=1, max_size=2)
KWARG_NAMES = st.sampled_from(("model", "temperature", "metadata"))
RECORD_KINDS = ("instruction", "assistant", "action_request", "action_response", "routed")


@dataclass
class Scenario:
    """Plain data from which a fresh branch and request can be built."""

    has_system: bool
    records: list[tuple[str, Any]]
    selection: list[int] | None  # indexes into records; None = branch progression
    extra_ids: list[str] = field(default_factory=list)  # "missing" / "duplicate"
    use_override: bool = False
    current_text: str = "now"
    current_guidance: str | None = None
    current_images: list[str] = field(default_factory=list)
    tool_schemas: tuple[dict[str, Any], ...] = ()
    response_format: dict[str, Any] | None = None
    context_blocks: tuple[tuple[str, str], ...] = ()
    provider_kwargs: dict[str, Any] = field(default_factory=dict)


@st.composite
def record_specs(draw) -> tuple[str, Any]:
    kind = draw(st.sampled_from(RECORD_KINDS))
    if kind in ("instruction", "assistant"):
        return kind, draw(TEXT)
    if kind == "routed":
        return kind, draw(JSONISH)
    return kind, {"function": draw(TEXT), "arguments": draw(st.dictionaries(TEXT, JSONISH, max_size=2)),
                  "output": draw(JSONISH)}


@st.composite
def scenarios(draw) -> Scenario:
    records = draw(st.lists(record_specs(), min_size=1, max_size=8))
    explicit = draw(st.booleans())
    selection = None
    if explicit:
        selection = draw(st.lists(st.sampled_from(range(len(records))), unique=True)) if records else []
    return Scenario(
        has_system=draw(st.booleans()),
        records=records,
        selection=selection,
        # Bad ids in one selection out of five keeps most histories compilable.
        extra_ids=list(draw(st.sampled_from(((), (), (), ("missing",), ("duplicate",))))),
        use_override=not explicit and draw(st.booleans()),
        current_text=draw(TEXT),
        current_guidance=draw(st.none() | TEXT),
        current_images=draw(st.lists(st.just("https://example.com/i.png"), max_size=1)),
        tool_schemas=tuple(draw(st.lists(TOOL_SCHEMA, max_size=2))),
        response_format=draw(st.none() | st.dictionaries(TEXT, JSONISH, max_size=2)),
        context_blocks=tuple(draw(st.lists(st.tuples(TEXT, TEXT), max_size=2))),
        provider_kwargs=draw(st.dictionaries(KWARG_NAMES, JSONISH, max_size=2)),
    )


# --- building --------------------------------------------------------------------------


def _record(kind: str, payload: Any, record_id: UUID) -> Message:
    if kind == "instruction":
        return Instruction(id=record_id, content=InstructionContent(instruction=payload))
    if kind == "assistant":
        return AssistantResponse(id=record_id, content={"assistant_response": payload})
    if kind == "action_request":
        request = {"function": payload["function"], "arguments": payload["arguments"]}
        return ActionRequest(id=record_id, content=request)
    if kind == "action_response":
        return ActionResponse(id=record_id, content=payload)
    return Message(id=record_id, content=payload)


def _ids(scenario: Scenario) -> list[UUID]:
    # Deterministic per index so that two builds of one scenario agree.
    return [UUID(int=index + 1) for index in range(len(scenario.records))]


def _selected_ids(scenario: Scenario, ids: list[UUID]) -> list[UUID] | None:
    if scenario.selection is None and not scenario.use_override:
        return None
    chosen = [ids[i] for i in scenario.selection] if scenario.selection is not None else list(ids)
    for extra in scenario.extra_ids:
        chosen.append(UUID(int=10_000) if extra == "missing" or not chosen else chosen[0])
    return chosen


def build(scenario: Scenario) -> tuple[Branch, TurnRequest]:
    ids = _ids(scenario)
    branch = Branch(
        system=System(id=UUID(int=0)) if scenario.has_system else None,
        messages=[
            _record(kind, copy.deepcopy(payload), record_id)
            for (kind, payload), record_id in zip(scenario.records, ids)
        ],
    )
    selected = _selected_ids(scenario, ids)
    if scenario.use_override:
        branch.metadata["current_progression"] = [str(i) for i in selected]
    content = InstructionContent(
        instruction=scenario.current_text,
        guidance=scenario.current_guidance,
        images=list(scenario.current_images),
    )
    request = TurnRequest(
        instruction=Instruction(id=uuid4(), content=content),
        progression=tuple(selected) if scenario.selection is not None else None,
        tool_schemas=copy.deepcopy(scenario.tool_schemas),
        response_format=copy.deepcopy(scenario.response_format),
        context_blocks=tuple(ContextBlock(n, c) for n, c in scenario.context_blocks),
        provider_kwargs=copy.deepcopy(scenario.provider_kwargs),
    )
    return branch, request


# --- snapshots -------------------------------------------------------------------------


def _branch_state(branch: Branch) -> tuple:
    return (
        copy.deepcopy(branch.msgs.messages),
        list(branch.msgs.progression),
        copy.deepcopy(branch.msgs.system),
        copy.deepcopy(branch.metadata),
    )


def _request_state(request: TurnRequest) -> tuple:
    # MappingProxyType cannot be deep-copied; its target dict can.
    return (
        copy.deepcopy(request.instruction),
        request.progression,
        copy.deepcopy(request.tool_schemas),
        copy.deepcopy(request.response_format),
        request.context_blocks,
        copy.deepcopy(dict(request.provider_kwargs)),
    )


def _outcome(branch: Branch, request: TurnRequest) -> Any:
    try:
        return compile_chat_request(branch, request)
    except (ValueError, TypeError) as exc:
        return (type(exc), str(exc))


# --- properties ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(scenarios())
def test_compiling_never_mutates_branch_or_request(scenario: Scenario) -> None:
    branch, request = build(scenario)
    branch_before, request_before = _branch_state(branch), _request_state(request)
    instruction_content = request.instruction.content

    outcome = _outcome(branch, request)
    if not isinstance(outcome, tuple):  # compiled: exercise both surfaces too
        chat_request(branch, request)
        run_request(branch, request)

    assert _branch_state(branch) == branch_before
    assert _request_state(request) == request_before
    assert request.instruction.content is instruction_content


@PROPERTY_SETTINGS
@given(scenarios())
def test_compiling_twice_gives_equal_results(scenario: Scenario) -> None:
    branch, request = build(scenario)
    first, second = _outcome(branch, request), _outcome(branch, request)
    assert first == second
    other_branch, other_request = build(scenario)
    rebuilt = _outcome(other_branch, other_request)
    if isinstance(first, tuple):
        assert rebuilt == first
    else:
        assert rebuilt.messages == first.messages
        assert rebuilt.provider_kwargs == first.provider_kwargs


def _expected_turns(scenario: Scenario) -> list[tuple[str, list[str]]] | None:
    """Independent model: (role, texts) per turn, or None when malformed."""
    ids = _ids(scenario)
    selected = _selected_ids(scenario, ids)
    if selected is None:
        selected = ids
    if any(i not in ids for i in selected) or len(set(selected)) != len(selected):
        return None
    by_id = dict(zip(ids, scenario.records))
    turns: list[tuple[str, list[str]]] = []
    for kind, payload in (by_id[i] for i in selected):
        if kind == "instruction":
            if turns and turns[-1][0] == "user":
                return None  # adjacent retained instructions
            turns.append(("user", [payload]))
        elif kind == "assistant":
            if turns and turns[-1][0] == "assistant":
                turns[-1][1].append(payload)
            else:
                turns.append(("assistant", [payload]))
    if scenario.has_system and turns and turns[0][0] != "user":
        return None
    return [*turns, ("user", [scenario.current_text])]


def _instruction_text(content: Any) -> str:
    text = content[0]["text"] if isinstance(content, list) else content
    return yaml.safe_load(text)["Instruction"]


@PROPERTY_SETTINGS
@given(scenarios())
def test_payload_keeps_every_turns_role_and_text(scenario: Scenario) -> None:
    expected = _expected_turns(scenario)
    event("malformed history" if expected is None else f"{len(expected)} turns")
    for surface in (chat_request, run_request):
        branch, request = build(scenario)
        if expected is None:
            outcome = _outcome(branch, request)
            assert isinstance(outcome, tuple) and outcome[0] is ValueError
            continue
        messages = surface(branch, request)["messages"]
        assert [m["role"] for m in messages] == [role for role, _ in expected]
        for message, (role, texts) in zip(messages, expected):
            if role == "assistant":
                assert message["content"] == "\n\n".join(texts)
            else:
                assert _instruction_text(message["content"]) == texts[0]
