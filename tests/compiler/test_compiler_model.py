"""The conversation model: contents, records, the manager and the branch."""

from __future__ import annotations

import re
from uuid import uuid4

import pytest

from interlingua.compiler import (
    ActionRequest,
    ActionRequestContent,
    ActionResponse,
    ActionResponseContent,
    AssistantResponse,
    Branch,
    Instruction,
    InstructionContent,
    Message,
    MessageRole,
    System,
    SystemContent,
)

# --- InstructionContent (D1) --------------------------------------------------------------


def test_from_dict_ignores_legacy_transient_keys() -> None:
    legacy = {
        "instruction": "Rate it",
        "guidance": "Be fair",
        "prompt_context": [{"k": 1}],
        "tool_schemas": [{"type": "function", "function": {"name": "add"}}],
        "response_format": {"score": 0},
        "structure": "json",
        "_structure_instance": object(),
        "request_fields": {"score": "..."},
        "request_model": dict,
        "request_response_format": "RESPOND",
    }
    assert InstructionContent.from_dict(legacy) == InstructionContent(
        instruction="Rate it", guidance="Be fair", prompt_context=[{"k": 1}]
    )


def test_from_dict_accepts_lionagi_context_alias_and_wraps_scalars() -> None:
    content = InstructionContent.from_dict({"context": "one fact", "handle_context": "extend"})
    assert content.prompt_context == ["one fact"]


def test_from_dict_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"Unknown InstructionContent keys: \['instrucion'\]"):
        InstructionContent.from_dict({"instrucion": "typo"})


def test_to_dict_round_trips_only_durable_fields() -> None:
    content = InstructionContent(
        instruction="i", guidance="g", prompt_context=[1], plain_content=None,
        images=["https://example.com/a.png"], image_detail="high",
    )
    data = content.to_dict()
    assert set(data) == {
        "instruction", "guidance", "prompt_context", "plain_content", "images", "image_detail"
    }
    assert InstructionContent.from_dict(data) == content


def test_images_without_detail_default_to_auto() -> None:
    assert InstructionContent(images=["aGk="]).image_detail == "auto"
    assert InstructionContent().image_detail is None


def test_image_detail_is_validated() -> None:
    with pytest.raises(ValueError, match="image_detail must be one of"):
        InstructionContent(image_detail="max")  # type: ignore[arg-type]


def test_durable_view_renders_no_call_sections() -> None:
    content = InstructionContent(instruction="Hi", prompt_context=["fact"])
    assert content.rendered == "Instruction: Hi\nContext:\n- fact"


# --- other contents ---------------------------------------------------------------------------


def test_system_rendering_with_and_without_datetime() -> None:
    assert SystemContent().rendered == "You are a helpful AI assistant. Let's think step by step."
    dated = SystemContent(system_message="Policy.", system_datetime="2026-07-09T10:00+00:00")
    assert dated.rendered == "System Time: 2026-07-09T10:00+00:00\n\nPolicy."


def test_system_datetime_true_stamps_the_current_minute() -> None:
    rendered = SystemContent.from_dict({"system_datetime": True}).rendered
    assert re.fullmatch(
        r"System Time: \d{4}-\d\d-\d\dT\d\d:\d\d\+00:00\n\nYou are a helpful AI assistant\. "
        r"Let's think step by step\.",
        rendered,
    )


def test_action_contents_render_minimal_yaml() -> None:
    request = ActionRequestContent(function="add", arguments={"a": 1})
    response = ActionResponseContent(function="add", arguments={"a": 1}, output=2)
    assert request.rendered == "Function: add\nArguments:\n  a: 1"
    assert response.rendered == "Function: add\nArguments:\n  a: 1\nOutput: 2"


def test_action_contents_accept_the_older_nested_layout() -> None:
    nested = {"action_response": {"function": "f", "arguments": {"x": 1}, "output": "ok"}}
    assert ActionResponseContent.from_dict(nested) == ActionResponseContent(
        function="f", arguments={"x": 1}, output="ok"
    )


# --- records -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "role"),
    [
        (Message(), MessageRole.UNSET),
        (System(), MessageRole.SYSTEM),
        (Instruction(), MessageRole.USER),
        (AssistantResponse(), MessageRole.ASSISTANT),
        (ActionRequest(), MessageRole.ACTION),
        (ActionResponse(), MessageRole.ACTION),
    ],
)
def test_each_kind_fixes_its_role(record, role) -> None:
    assert record.role is role


def test_records_coerce_dict_content_and_refuse_other_types() -> None:
    assert AssistantResponse(content={"assistant_response": "ok"}).rendered == "ok"
    with pytest.raises(TypeError, match="Instruction.content must be a dict or InstructionContent"):
        Instruction(content="raw text")


def test_base_message_carries_any_payload() -> None:
    assert Message(content={"route": "x"}).content == {"route": "x"}


# --- manager and branch ------------------------------------------------------------------------


def test_system_message_sits_at_index_zero_and_is_replaced() -> None:
    branch = Branch()
    first = branch.add_message(Instruction())
    old_system = branch.add_message(System())
    new_system = branch.add_message(System(content={"system_message": "New."}))
    assert branch.msgs.system is new_system
    assert branch.msgs.progression == [new_system.id, first.id]
    assert old_system.id not in branch.msgs


def test_adding_the_same_record_twice_is_refused() -> None:
    branch = Branch()
    record = branch.add_message(Instruction())
    with pytest.raises(ValueError, match="already in this branch"):
        branch.add_message(record)


def test_effective_progression_honours_current_progression() -> None:
    branch = Branch(messages=[Instruction(), AssistantResponse()])
    stored = tuple(branch.msgs.progression)
    assert branch.progression == stored

    branch.metadata["current_progression"] = [str(stored[1])]
    assert branch.progression == (stored[1],)

    branch.metadata["current_progression"] = None  # None means "not set"
    assert branch.progression == stored


def test_current_progression_items_must_be_ids() -> None:
    branch = Branch(metadata={"current_progression": [42]})
    with pytest.raises(TypeError, match="current_progression items must be UUIDs"):
        branch.progression


def test_branch_progression_is_a_snapshot_tuple() -> None:
    branch = Branch(messages=[Instruction()])
    view = branch.progression
    branch.add_message(AssistantResponse(id=uuid4()))
    assert len(view) == 1 and len(branch.progression) == 2
