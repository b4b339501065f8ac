"""interlingua.compiler - the turn compiler of lionagi ADR-0007.

A branch (conversation records) plus a :class:`TurnRequest` (the current
instruction and its one-call options) compile into a
:class:`CompiledChatRequest` of provider-neutral messages; two call surfaces
turn that into an OpenAI-chat-shaped payload. The decisions on the points the
ADR leaves open are documented in :mod:`interlingua.compiler.compile` and in
this package's README.md.

PyYAML (the optional ``compiler`` extra) is imported lazily, on the first
render that needs YAML; pydantic is never imported.
"""

from .branch import Branch, MessageManager
from .compile import (
    ADJACENT_INSTRUCTIONS_ERROR,
    FIRST_MESSAGE_ERROR,
    compile_chat_request,
    render_context_section,
)
from .messages import (
    DEFAULT_SYSTEM_MESSAGE,
    ActionRequest,
    ActionRequestContent,
    ActionResponse,
    ActionResponseContent,
    AssistantResponse,
    AssistantResponseContent,
    Instruction,
    InstructionContent,
    Message,
    MessageContent,
    MessageRole,
    System,
    SystemContent,
)
from .rendering import canonical_json, minimal_yaml
from .structure import JsonStructure, Structure
from .surfaces import chat_request, run_request, to_chat_payload
from .transcode import chat_body, compiled_events, encode_compiled, run_body
from .types import (
    RESERVED_MESSAGES_KEY_ERROR,
    CompiledChatRequest,
    CompiledMessage,
    ContextBlock,
    TurnRequest,
)

__all__ = (
    "chat_body",
    "run_body",
    "compiled_events",
    "encode_compiled",
    "ADJACENT_INSTRUCTIONS_ERROR",
    "DEFAULT_SYSTEM_MESSAGE",
    "FIRST_MESSAGE_ERROR",
    "RESERVED_MESSAGES_KEY_ERROR",
    "ActionRequest",
    "ActionRequestContent",
    "ActionResponse",
    "ActionResponseContent",
    "AssistantResponse",
    "AssistantResponseContent",
    "Branch",
    "CompiledChatRequest",
    "CompiledMessage",
    "ContextBlock",
    "Instruction",
    "InstructionContent",
    "JsonStructure",
    "Message",
    "MessageContent",
    "MessageManager",
    "MessageRole",
    "Structure",
    "System",
    "SystemContent",
    "TurnRequest",
    "canonical_json",
    "chat_request",
    "compile_chat_request",
    "minimal_yaml",
    "render_context_section",
    "run_request",
    "to_chat_payload",
)
