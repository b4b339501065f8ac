"""The conversation model: lionagi's message kinds with the same names and text.

Records are mutable slotted dataclasses (a branch edits its history); the
compiler only reads them. Each subclass fixes its role through ``_role``;
the base :class:`Message` has role ``unset`` and is routed traffic, never a
conversation turn.

:class:`InstructionContent` carries only the durable fields of ADR-0007 D1.
Current-call options (tool schemas, response format, structure) live on
``TurnRequest``; ``InstructionContent.from_dict`` accepts their legacy keys
from old serialized content and ignores them, so replay cannot resurrect a
previous call's schema.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal
from uuid import UUID, uuid4

from .rendering import minimal_yaml, render_instruction

__all__ = (
    "ActionRequest",
    "ActionRequestContent",
    "ActionResponse",
    "ActionResponseContent",
    "AssistantResponse",
    "AssistantResponseContent",
    "DEFAULT_SYSTEM_MESSAGE",
    "Instruction",
    "InstructionContent",
    "Message",
    "MessageContent",
    "MessageRole",
    "System",
    "SystemContent",
)

DEFAULT_SYSTEM_MESSAGE = "You are a helpful AI assistant. Let's think step by step."

ImageDetail = Literal["low", "high", "auto"]
_IMAGE_DETAILS = frozenset({"low", "high", "auto"})


class MessageRole(enum.Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    UNSET = "unset"
    ACTION = "action"


# --- contents -------------------------------------------------------------------


@dataclass(slots=True)
class MessageContent:
    """Base of the typed contents; each subclass renders provider-visible text."""

    role: ClassVar[MessageRole] = MessageRole.UNSET

    @property
    def rendered(self) -> str | list[dict[str, Any]]:
        raise NotImplementedError("MessageContent subclasses must implement rendered")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageContent:
        raise NotImplementedError("MessageContent subclasses must implement from_dict")


@dataclass(slots=True)
class SystemContent(MessageContent):
    role: ClassVar[MessageRole] = MessageRole.SYSTEM

    system_message: str = DEFAULT_SYSTEM_MESSAGE
    system_datetime: str | None = None

    @property
    def rendered(self) -> str:
        if self.system_datetime:
            return f"System Time: {self.system_datetime}\n\n{self.system_message}"
        return self.system_message

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemContent:
        system_datetime = data.get("system_datetime")
        if system_datetime is True:
            # lionagi stamps "now" when asked for a datetime without a value.
            system_datetime = datetime.now(UTC).isoformat(timespec="minutes")
        elif system_datetime is False:
            system_datetime = None
        return cls(
            system_message=data.get("system_message", DEFAULT_SYSTEM_MESSAGE),
            system_datetime=system_datetime,
        )


# Keys that older InstructionContent carried for one call only (D1).
LEGACY_TRANSIENT_INSTRUCTION_KEYS = frozenset(
    {
        "tool_schemas",
        "response_format",
        "structure",
        "_structure_instance",
        "request_fields",
        "request_model",
        "request_response_format",
    }
)
_DURABLE_INSTRUCTION_KEYS = frozenset(
    {"instruction", "guidance", "prompt_context", "plain_content", "images", "image_detail"}
)
# "context" is lionagi's older name for prompt_context; "handle_context"
# selects extend/replace when updating and means nothing for a fresh content.
_INSTRUCTION_ALIAS_KEYS = frozenset({"context", "handle_context"})


@dataclass(slots=True)
class InstructionContent(MessageContent):
    """Durable user material (ADR-0007 D1); no current-call options."""

    role: ClassVar[MessageRole] = MessageRole.USER

    instruction: str | None = None
    guidance: str | None = None
    prompt_context: list[Any] = field(default_factory=list)
    plain_content: str | None = None
    images: list[str] = field(default_factory=list)
    image_detail: ImageDetail | None = None

    def __post_init__(self) -> None:
        if self.image_detail is not None and self.image_detail not in _IMAGE_DETAILS:
            raise ValueError(
                f"image_detail must be one of 'low', 'high', 'auto', got {self.image_detail!r}"
            )
        if self.images and self.image_detail is None:
            # A provider part with "detail": null is refused by some APIs;
            # lionagi's from_dict defaults the same way.
            self.image_detail = "auto"

    @property
    def rendered(self) -> str | list[dict[str, Any]]:
        """The durable view only: no Tools / ResponseSchema / ResponseFormat."""
        return render_instruction(
            guidance=self.guidance,
            instruction=self.instruction,
            prompt_context=self.prompt_context,
            plain_content=self.plain_content,
            images=self.images,
            image_detail=self.image_detail,
        )

    def durable_copy(self) -> InstructionContent:
        """A deep copy holding exactly the six durable fields.

        Built field by field so a subclass (or an older in-memory record)
        cannot smuggle extra state into a compiled or recorded instruction.
        """
        return InstructionContent(
            instruction=copy.deepcopy(self.instruction),
            guidance=copy.deepcopy(self.guidance),
            prompt_context=copy.deepcopy(list(self.prompt_context)),
            plain_content=self.plain_content,
            images=list(self.images),
            image_detail=self.image_detail,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstructionContent:
        unknown = set(data) - _DURABLE_INSTRUCTION_KEYS - _INSTRUCTION_ALIAS_KEYS
        unknown -= LEGACY_TRANSIENT_INSTRUCTION_KEYS
        if unknown:
            raise ValueError(f"Unknown InstructionContent keys: {sorted(unknown)}")
        images = _as_list(data.get("images"))
        return cls(
            instruction=data.get("instruction") or None,
            guidance=data.get("guidance") or None,
            prompt_context=_as_list(data["context"] if "context" in data else data.get("prompt_context")),
            plain_content=data.get("plain_content") or None,
            images=images,
            image_detail=data.get("image_detail") or None,
        )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


@dataclass(slots=True)
class AssistantResponseContent(MessageContent):
    role: ClassVar[MessageRole] = MessageRole.ASSISTANT

    assistant_response: str = ""

    @property
    def rendered(self) -> str:
        return self.assistant_response

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssistantResponseContent:
        return cls(assistant_response=data.get("assistant_response", ""))


@dataclass(slots=True)
class ActionRequestContent(MessageContent):
    role: ClassVar[MessageRole] = MessageRole.ACTION

    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    action_response_id: str | None = None

    @property
    def rendered(self) -> str:
        return minimal_yaml({"Function": self.function, "Arguments": self.arguments}).strip()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionRequestContent:
        source = data.get("action_request", data)  # older nested layout
        response_id = data.get("action_response_id")
        return cls(
            function=source.get("function", ""),
            arguments=dict(source.get("arguments") or {}),
            action_response_id=str(response_id) if response_id else None,
        )


@dataclass(slots=True)
class ActionResponseContent(MessageContent):
    role: ClassVar[MessageRole] = MessageRole.ACTION

    function: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    action_request_id: str | None = None
    error: str | None = None

    @property
    def rendered(self) -> str:
        doc = {"Function": self.function, "Arguments": self.arguments, "Output": self.output}
        return minimal_yaml(doc).strip()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionResponseContent:
        source = data.get("action_response", data)  # older nested layout
        request_id = data.get("action_request_id")
        return cls(
            function=source.get("function", ""),
            arguments=dict(source.get("arguments") or {}),
            output=source.get("output"),
            action_request_id=str(request_id) if request_id else None,
            error=source.get("error"),
        )


# --- messages -------------------------------------------------------------------


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Message:
    """A record: identity, routing and content. The base role is ``unset``."""

    _role: ClassVar[MessageRole] = MessageRole.UNSET
    _content_type: ClassVar[type[MessageContent] | None] = None

    content: Any = None
    id: UUID = field(default_factory=uuid4)
    created_at: datetime = field(default_factory=_utc_now)
    sender: str | UUID | None = None
    recipient: str | UUID | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.content = self._coerce_content(self.content)

    @classmethod
    def _coerce_content(cls, content: Any) -> Any:
        content_type = cls._content_type
        if content_type is None:  # routed traffic carries any payload
            return content
        if content is None:
            return content_type()
        if isinstance(content, dict):
            return content_type.from_dict(content)
        if isinstance(content, content_type):
            return content
        raise TypeError(
            f"{cls.__name__}.content must be a dict or {content_type.__name__}, "
            f"got {type(content).__name__}"
        )

    @property
    def role(self) -> MessageRole:
        return type(self)._role

    @property
    def rendered(self) -> str | list[dict[str, Any]]:
        if hasattr(self.content, "rendered"):
            return self.content.rendered
        return "" if self.content is None else str(self.content)


@dataclass(slots=True)
class System(Message):
    _role: ClassVar[MessageRole] = MessageRole.SYSTEM
    _content_type: ClassVar[type[MessageContent]] = SystemContent

    content: SystemContent = field(default_factory=SystemContent)


@dataclass(slots=True)
class Instruction(Message):
    _role: ClassVar[MessageRole] = MessageRole.USER
    _content_type: ClassVar[type[MessageContent]] = InstructionContent

    content: InstructionContent = field(default_factory=InstructionContent)


@dataclass(slots=True)
class AssistantResponse(Message):
    _role: ClassVar[MessageRole] = MessageRole.ASSISTANT
    _content_type: ClassVar[type[MessageContent]] = AssistantResponseContent

    content: AssistantResponseContent = field(default_factory=AssistantResponseContent)


@dataclass(slots=True)
class ActionRequest(Message):
    _role: ClassVar[MessageRole] = MessageRole.ACTION
    _content_type: ClassVar[type[MessageContent]] = ActionRequestContent

    content: ActionRequestContent = field(default_factory=ActionRequestContent)


@dataclass(slots=True)
class ActionResponse(Message):
    _role: ClassVar[MessageRole] = MessageRole.ACTION
    _content_type: ClassVar[type[MessageContent]] = ActionResponseContent

    content: ActionResponseContent = field(default_factory=ActionResponseContent)
