"""The ADR-0007 D1/D4/D5 contract: types, copies, isolation and the surfaces."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from uuid import uuid4

import pytest
import yaml

from interlingua.compiler import (
    ActionResponse,
    AssistantResponse,
    Branch,
    CompiledChatRequest,
    CompiledMessage,
    ContextBlock,
    Instruction,
    InstructionContent,
    MessageRole,
    System,
    TurnRequest,
    chat_request,
    compile_chat_request,
    run_request,
    to_chat_payload,
)
from interlingua.compiler import surfaces

SYSTEM_TEXT = "You are a helpful AI assistant. Let's think step by step."
ADR_CONTEXT_SECTION = (
    "LIONAGI_CONTEXT_BLOCKS_JSON\n"
    '[{"content":"first retrieved value","provider_name":"catalog"},'
    '{"content":"second retrieved value","provider_name":"memory"}]\n'
    "END_LIONAGI_CONTEXT_BLOCKS_JSON"
)
ADR_BLOCKS = (
    ContextBlock(provider_name="catalog", content="first retrieved value"),
    ContextBlock(provider_name="memory", content="second retrieved value"),
)


def _instruction(text: str, **fields) -> Instruction:
    return Instruction(content=InstructionContent(instruction=text, **fields))


# --- the ADR's two-block example -----------------------------------------------------


def test_adr_two_block_context_example_folds_system_context_and_guidance_in_order() -> None:
    branch = Branch(system=System())
    request = TurnRequest(
        instruction=_instruction("Which items are in stock?", guidance="Answer briefly"),
        context_blocks=ADR_BLOCKS,
    )

    compiled = compile_chat_request(branch, request)

    first = compiled.messages[0]
    assert first.role is MessageRole.USER
    guidance = yaml.safe_load(first.content)["Guidance"]
    assert guidance == SYSTEM_TEXT + "\n\n" + ADR_CONTEXT_SECTION + "\n\n" + "Answer briefly"
    # The three sections, separated by blank lines, are the literal text sent.
    indented = "\n".join(f"  {line}" if line else "" for line in guidance.split("\n"))
    assert first.content.startswith("Guidance: |-\n" + indented + "\nInstruction: ")


# --- D1 types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        ContextBlock("p", "c"),
        CompiledMessage(MessageRole.USER, "x"),
        TurnRequest(instruction=Instruction()),
    ],
)
def test_contract_types_are_frozen_and_slotted(value) -> None:
    assert not hasattr(value, "__dict__")
    first_field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first_field, None)


def test_turn_request_default_kwargs_are_read_only_and_per_instance() -> None:
    first, second = TurnRequest(instruction=Instruction()), TurnRequest(instruction=Instruction())
    assert isinstance(first.provider_kwargs, MappingProxyType)
    assert first.provider_kwargs is not second.provider_kwargs
    with pytest.raises(TypeError):
        first.provider_kwargs["model"] = "m"  # type: ignore[index]


def test_context_block_refuses_non_string_fields() -> None:
    with pytest.raises(TypeError, match="ContextBlock.content must be a str, got int"):
        ContextBlock("catalog", 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"instruction": "hi"}, "TurnRequest.instruction must be an Instruction, got str"),
        ({"progression": []}, "TurnRequest.progression must be a tuple of UUIDs"),
        ({"progression": ("not-a-uuid",)}, "TurnRequest.progression must be a tuple of UUIDs"),
        ({"tool_schemas": [{"type": "function"}]}, "TurnRequest.tool_schemas must be a tuple of dicts"),
        ({"context_blocks": ({"provider_name": "p"},)}, "TurnRequest.context_blocks must be a tuple"),
        ({"provider_kwargs": [("model", "m")]}, "TurnRequest.provider_kwargs must be a mapping"),
    ],
)
def test_malformed_turn_requests_are_type_errors(fields, message) -> None:
    request = TurnRequest(**{"instruction": _instruction("Hi"), **fields})
    with pytest.raises(TypeError, match=message):
        compile_chat_request(Branch(), request)


# --- the record-ready instruction ------------------------------------------------------


def _branch_with_pending_action() -> Branch:
    branch = Branch(system=System())
    branch.add_message(_instruction("Add 1 and 2"))
    branch.add_message(AssistantResponse(content={"assistant_response": "Calling add."}))
    branch.add_message(
        ActionResponse(content={"function": "add", "arguments": {"a": 1, "b": 2}, "output": 3})
    )
    return branch


def test_compiled_instruction_is_a_durable_copy_with_the_same_identity() -> None:
    supplied = _instruction("Report", guidance="Be brief", prompt_context=[{"k": [1]}])
    supplied.sender, supplied.recipient = "user", uuid4()
    supplied.metadata["trace"] = {"step": 1}
    request = TurnRequest(
        instruction=supplied,
        context_blocks=ADR_BLOCKS,
        tool_schemas=({"type": "function", "function": {"name": "add"}},),
        response_format={"answer": "string"},
    )

    record = compile_chat_request(_branch_with_pending_action(), request).instruction

    assert record is not supplied and record.content is not supplied.content
    assert (record.id, record.created_at, record.sender, record.recipient) == (
        supplied.id,
        supplied.created_at,
        supplied.sender,
        supplied.recipient,
    )
    assert record.metadata == supplied.metadata and record.metadata is not supplied.metadata
    # No folded system/context text, no action results, no call options.
    assert record.content == InstructionContent(
        instruction="Report", guidance="Be brief", prompt_context=[{"k": [1]}]
    )
    assert record.content.prompt_context[0] is not supplied.content.prompt_context[0]


@pytest.mark.parametrize("where", ["current", "history"])
def test_instruction_content_reassigned_to_a_non_content_is_a_type_error(where) -> None:
    broken = _instruction("Hi")
    broken.content = {"instruction": "Hi"}  # records are mutable; coercion ran at construction
    branch, current = Branch(), broken
    if where == "history":
        branch.add_message(broken)
        current = _instruction("Next")
    expected = f"Instruction {broken.id} content must be InstructionContent, got dict"
    with pytest.raises(TypeError, match=expected):
        compile_chat_request(branch, TurnRequest(instruction=current))


def test_compiled_instruction_drops_extra_state_of_a_content_subclass() -> None:
    @dataclasses.dataclass(slots=True)
    class LegacyContent(InstructionContent):
        tool_schemas: list = dataclasses.field(default_factory=list)

    supplied = Instruction(content=LegacyContent(instruction="Hi", tool_schemas=[{"name": "old"}]))
    compiled = compile_chat_request(Branch(), TurnRequest(instruction=supplied))
    assert type(compiled.instruction.content) is InstructionContent
    assert compiled.messages[0].content == "Instruction: Hi"


# --- isolation from caller-owned containers -----------------------------------------------


def test_compiled_request_retains_no_caller_container() -> None:
    kwargs = {"model": "m", "metadata": {"tags": ["a"]}}
    response_format = {"answer": "string"}
    tool = {"type": "function", "function": {"name": "add"}}
    request = TurnRequest(
        instruction=_instruction("Hi", images=["https://example.com/a.png"]),
        tool_schemas=(tool,),
        response_format=response_format,
        provider_kwargs=kwargs,
    )
    compiled = compile_chat_request(Branch(), request)
    before = to_chat_payload(compiled)

    kwargs["metadata"]["tags"].append("b")
    kwargs["model"] = "other"
    response_format["answer"] = "int"
    tool["function"]["name"] = "sub"

    assert to_chat_payload(compiled) == before
    assert isinstance(compiled.provider_kwargs, MappingProxyType)


def test_payload_mutation_does_not_reach_the_compiled_request() -> None:
    request = TurnRequest(
        instruction=_instruction("Hi", images=["https://example.com/a.png"]),
        provider_kwargs={"metadata": {"tags": ["a"]}},
    )
    compiled = compile_chat_request(Branch(), request)
    payload = to_chat_payload(compiled)

    payload["messages"][0]["content"][1]["image_url"]["url"] = "https://evil.example/x.png"
    payload["metadata"]["tags"].append("b")

    assert compiled.messages[0].content[1]["image_url"]["url"] == "https://example.com/a.png"
    assert compiled.provider_kwargs["metadata"] == {"tags": ["a"]}


def test_compiled_chat_request_refuses_reserved_key_and_freezes_kwargs() -> None:
    with pytest.raises(ValueError, match="reserved key 'messages'"):
        CompiledChatRequest(instruction=Instruction(), messages=(), provider_kwargs={"messages": []})
    owned = {"model": "m"}
    compiled = CompiledChatRequest(instruction=Instruction(), messages=[], provider_kwargs=owned)
    owned["model"] = "changed"
    assert compiled.provider_kwargs == {"model": "m"}
    assert compiled.messages == ()


# --- D4 projection and D5 surfaces -------------------------------------------------------


def test_to_chat_payload_is_the_default_service_projection() -> None:
    compiled = CompiledChatRequest(
        instruction=Instruction(),
        messages=(
            CompiledMessage(MessageRole.USER, "Instruction: Hi"),
            CompiledMessage(MessageRole.ASSISTANT, "Hello"),
        ),
        provider_kwargs={"model": "m"},
    )
    assert to_chat_payload(compiled) == {
        "messages": [
            {"role": "user", "content": "Instruction: Hi"},
            {"role": "assistant", "content": "Hello"},
        ],
        "model": "m",
    }


def test_each_surface_compiles_exactly_once(monkeypatch) -> None:
    calls = []
    real_compile = surfaces.compile_chat_request

    def counting_compile(branch, request):
        calls.append(request)
        return real_compile(branch, request)

    monkeypatch.setattr(surfaces, "compile_chat_request", counting_compile)
    request = TurnRequest(instruction=_instruction("Hi"))
    chat_request(Branch(), request)
    run_request(Branch(), request)
    assert calls == [request, request]


def test_run_surface_streams_even_if_kwargs_say_otherwise() -> None:
    request = TurnRequest(instruction=_instruction("Hi"), provider_kwargs={"stream": False})
    assert chat_request(Branch(), request)["stream"] is False
    assert run_request(Branch(), request)["stream"] is True


def test_payload_parts_use_only_keys_the_openai_client_declares() -> None:
    chat_types = pytest.importorskip("openai.types.chat")
    from openai.types.chat.chat_completion_content_part_image_param import ImageURL

    request = TurnRequest(instruction=_instruction("Hi", images=["aGVsbG8="], image_detail="low"))
    (message,) = chat_request(Branch(), request)["messages"]
    text_part, image_part = message["content"]

    assert set(message) <= set(chat_types.ChatCompletionUserMessageParam.__annotations__)
    assert set(text_part) <= set(chat_types.ChatCompletionContentPartTextParam.__annotations__)
    assert set(image_part) <= set(chat_types.ChatCompletionContentPartImageParam.__annotations__)
    assert set(image_part["image_url"]) <= set(ImageURL.__annotations__)
