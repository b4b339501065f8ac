"""interlingua: push-based streaming transcoder between LLM API dialects.

Bytes of one dialect in, cut anywhere; bytes of another out while the body is
still arriving. See README.md and DESIGN.md.
"""

from .backend import BACKEND
from .canonical import (
    Block, Control, End, Error, Event, Extension, Finish, MessageStart, MessagesEnd, Section,
    SystemEnd, Usage,
)
from .errors import (
    BudgetExceededError, ControlCharacterError, DuplicateKeyError, InvalidUtf8Error, LoneSurrogateError, JsonSyntaxError, LossError,
    NestingTooDeepError, NoMessageError, ReorderRefusedError, SchemaError, TranscodeError, TruncatedInputError,
)
from .pipeline import Decoder, Encoder, Transcoder, decode, encode, transcode
from .session import Loss, Options

__all__ = [
    "BACKEND",
    "Block", "Control", "End", "Error", "Event", "Extension", "Finish", "MessageStart",
    "MessagesEnd", "Section", "SystemEnd", "Usage",
    "TranscodeError", "JsonSyntaxError", "InvalidUtf8Error", "ControlCharacterError",
    "TruncatedInputError", "NestingTooDeepError", "SchemaError", "DuplicateKeyError", "LoneSurrogateError", "LossError",
    "NoMessageError", "BudgetExceededError", "ReorderRefusedError",
    "Decoder", "Encoder", "Transcoder", "decode", "encode", "transcode", "Loss", "Options",
]
__version__ = "0.1.0"
