"""What one transcoding run shares between its stages: options, losses, the reorder buffer."""

from __future__ import annotations

import os
import time
from typing import Callable, Literal

import msgspec

from .errors import LoneSurrogateError, LossError
from .losses import lacks, path_subject
from .naming import NAME_LIMIT, wire_name
from .reorder import DEFAULT_BUDGET, ReorderBuffer


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """Caller's choices. Everything a compatible server does differently is an option here.

    * ``strict``: a loss is an error (``LossError``) instead of a recorded warning.
    * ``reorder_budget``: bytes that may be held for reordering (DESIGN §5).
    * ``refuse_reorder``: fail at the first byte that would have to be held.
    * ``openai_reasoning_field``: where the openai side carries reasoning on
      assistant messages -- ``None`` (the official API: it has no such field, so
      reasoning is a recorded loss), ``"reasoning_content"`` (DeepSeek, vLLM)
      or ``"reasoning"`` (OpenRouter and others). Used for encoding and decoding.
    * ``default_max_tokens``: for targets that require ``max_tokens``
      (anthropic) when the source has none.
    * ``max_depth``: JSON nesting limit.
    * ``anthropic_thinking``: how a reasoning effort (openai ``reasoning_effort``,
      ollama ``think``) goes into anthropic -- ``"adaptive"`` (``thinking:
      adaptive`` + ``output_config.effort``: Claude 4.6 and later), ``"budget"``
      (``thinking: enabled`` with a ``budget_tokens`` per effort: older models and
      anthropic-compatible servers), or ``"auto"`` (the default: adaptive for the
      model names in ``anthropic.controls.ADAPTIVE_MODELS``, budget otherwise).
      ``anthropic_thinking_budgets``: effort -> budget (default
      ``anthropic.controls.THINKING_BUDGETS``).
    * ``tool_names``: for a response transcoder, the tool names its request's
      transcoder had to change (``Transcoder.tool_names`` of that one: wire
      name -> the client's name); tool calls in the response get the client's
      names back (``interlingua.naming``).
    * ``openai_stream_usage``: an openai stream target writes the usage chunk
      (``choices: []``) when the source gave usage (the default). ``False``: as
      OpenAI does for a request without ``stream_options.include_usage``, no usage
      chunk (a client's ``chunk.choices[0]`` loop would fail on it); each count is
      a recorded loss. A proxy sets it from its openai client's request
      (``Transcoder.asks_stream_usage``).
    * ``ollama_sampling_defaults``: an ollama target gets the source dialect's own
      sampling defaults for what the source left unset (openai: ``temperature``
      and ``top_p`` 1.0, as Ollama's openai layer sends; anthropic: ``temperature``
      1.0), so the same request samples the same way. Off by default: an unset
      field keeps the model's defaults (its Modelfile's tuned values).

    Options are data (a native core mirrors them field for field); the clock and the
    entropy a response reads are the ``Transcoder``'s ``clock`` / ``entropy`` arguments.
    """

    strict: bool = False
    reorder_budget: int = DEFAULT_BUDGET
    refuse_reorder: bool = False
    openai_reasoning_field: Literal["reasoning_content", "reasoning"] | None = None
    default_max_tokens: int = 4096
    max_depth: int = 128
    max_value_bytes: int = 1 << 20
    tool_names: dict[str, str] | None = None
    anthropic_thinking: Literal["auto", "adaptive", "budget"] = "auto"
    anthropic_thinking_budgets: dict[str, int] | None = None
    ollama_sampling_defaults: bool = False
    openai_stream_usage: bool = True


NONCE_BYTES = 12
MAX_CLOCK = 253402300800.0  # 10000-01-01T00:00:00Z: the last time RFC 3339 can write


class ResponseStart(msgspec.Struct, frozen=True, gc=False):
    """What one response reads of the world, once, when its transcoder is made: the
    codecs get these two values, never the hooks (a native core copies them as they are)."""

    time_us: int  # the wall clock, microseconds since the epoch (UTC)
    nonce: bytes  # NONCE_BYTES of entropy: what makes a generated id unique


#: ``clock()``: seconds since the epoch; ``entropy(n)``: n random bytes (``Transcoder`` arguments)
Clock = Callable[[], float]
Entropy = Callable[[int], bytes]


def response_start(clock: Clock | None, entropy: Entropy | None) -> ResponseStart:
    """Read the hooks once (``None``: ``time.time`` and ``os.urandom``)."""
    return start_after_clock((clock or time.time)(), entropy)


def start_after_clock(seconds: object, entropy: Entropy | None) -> ResponseStart:
    """``response_start`` once the clock is read. The native binding reads the hooks
    itself and hands over here any clock reading that is not a plain in-range
    ``float`` or ``int``, so that its checks and errors stay these."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 <= seconds < MAX_CLOCK:
        raise ValueError(f"clock() must return seconds since the epoch (0 <= t < year 10000), not {seconds!r}")
    return ResponseStart(round(seconds * 1_000_000), checked_nonce((entropy or os.urandom)(NONCE_BYTES)))


def checked_nonce(nonce: object) -> bytes:
    """``entropy(NONCE_BYTES)``'s result, or the ValueError that says what is wrong with it."""
    if not isinstance(nonce, bytes) or len(nonce) != NONCE_BYTES:
        raise ValueError(f"entropy({NONCE_BYTES}) must return {NONCE_BYTES} bytes, not {nonce!r}")
    return nonce


#: ``response_start`` as the library defines it: while ``response_start`` is still this
#: function (a test may replace it), the native binding reads the hooks without calling it
LIBRARY_RESPONSE_START = response_start


class Loss(msgspec.Struct, frozen=True):
    """A field of the input that could not be carried into the target."""

    dialect: str
    path: str
    reason: str


def _loss_error(loss: Loss) -> LossError:
    """Strict mode's error for ``loss``."""
    return LossError(f"cannot carry {loss.path}: {loss.reason}", dialect=loss.dialect, path=loss.path)


def _is_unicode(text: str) -> bool:
    """Whether ``text`` is Unicode text (no lone surrogate, from an escape, in it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Session:
    """Per-run shared state. Not thread-safe; one per transcoding."""

    def __init__(self, options: Options | None = None, *, source: str = "", target: str = "",
                 kind: str = "request", clock: Clock | None = None, entropy: Entropy | None = None) -> None:
        self.options = options or Options()
        self.kind = kind
        self.source = source
        self.target = target
        self.losses: list[Loss] = []
        self.reorder = ReorderBuffer(self.options.reorder_budget, refuse=self.options.refuse_reorder)
        #: tool names changed for the target in this run: wire name -> the source's name
        self.tool_names: dict[str, str] = {}
        #: the output is a copy of the input (same-dialect response or stream,
        #: ``interlingua.passthrough``): nothing can be lost, so no loss is recorded
        self.passthrough = False
        #: an openai request said ``stream_options.include_usage: true`` (``Transcoder.asks_stream_usage``)
        self.asks_stream_usage = False
        #: the request asks for a stream (its canonical ``stream`` control is true: ollama's
        #: absent ``stream`` too) (``Transcoder.asks_stream``)
        self.asks_stream = False
        self._lost_paths: set[tuple[str, str, str]] = set()
        #: losses of placing a block whose last fragment has not come (``hold_losses``)
        self._held_losses: list[Loss] = []
        self._holding = False
        self._hooks = (clock, entropy)
        self._start: ResponseStart | None = None

    @property
    def start(self) -> ResponseStart:
        """The response's clock reading and nonce (``lifecycle.Stamp``), read from the hooks
        once, when a response encoder is made (a same-dialect response is copied and reads none)."""
        if self._start is None:
            self._start = response_start(*self._hooks)
        return self._start

    def tool_name_out(self, name: object, path: str) -> str:
        """A tool name of another dialect as the target accepts it (``naming.wire_name``);
        each name changed is recorded once, as a loss at ``path``."""
        text = name if isinstance(name, str) else ""
        if self.source == self.target or self.target not in NAME_LIMIT:
            return text
        if not _is_unicode(text):  # no hash or wire name can carry it: refused, as a name read as text is
            raise LoneSurrogateError("lone surrogate escape in a value read as text (not Unicode)")
        wire = wire_name(text, self.target)
        if wire != text and self.tool_names.get(wire) != text:
            self.tool_names[wire] = text
            what = f"tool name {text!r}" if name is not None else "a missing tool name"
            self.lose(path, lacks(what, self.target, f"such tool name (^[a-zA-Z0-9_-]{{1,{NAME_LIMIT[self.target]}}}$)",
                                  f"sent as {wire!r}"))
        return wire

    def tool_name_in(self, name: str) -> str:
        """A tool name read from a response: the client's name when the request renamed it."""
        names = self.options.tool_names
        return names.get(name, name) if names and isinstance(name, str) else name

    def lose_member(self, path: str, what: str = "such field", done: str | None = None) -> None:
        """A member of the source at ``path`` the target has nothing for (decoders: they
        record what no canonical event carries, in the target's terms)."""
        self.lose(path, lacks(path_subject(path), self.target or "the target", what, done))

    def lose(self, path: str, reason: str, *, dialect: str | None = None) -> None:
        """Record that the field at ``path`` (in the source) is not carried; strict raises.

        Responses and streams: one record per path and reason -- a stream
        repeats its fields in every frame, each would be the same loss again.
        (A request's paths name a message, not a field: two losses there are
        two things lost.)"""
        if self.passthrough:
            return
        loss = Loss(dialect or self.source, path, reason)
        if self.kind != "request":
            key = (loss.dialect, path, reason)
            if key in self._lost_paths:
                return
            self._lost_paths.add(key)
        if self._holding:
            self._held_losses.append(loss)  # (strict: raised at release, if none comes first)
            return
        if self.options.strict:
            raise _loss_error(loss)
        self.losses.append(loss)

    def hold_losses(self, on: bool = True) -> None:
        """Keep the losses recorded from now on apart (``on``), until ``release_losses``;
        ``hold_losses(False)`` records new ones again. A request encoder places a block at
        its first fragment, which comes earlier the finer the body is cut (fed whole, a
        block is one event, after the message's later members); the losses of placing it
        are recorded at its last fragment, which comes at the same place however the body
        is cut: the losses' order does not depend on the cut. Strict mode raises the first
        loss of that order: a held loss at ``release_losses``, unless one recorded
        meanwhile comes first."""
        self._holding = on

    def release_losses(self) -> None:
        """Record the losses held (after those recorded meanwhile); strict: raise the first."""
        held, self._held_losses = self._held_losses, []
        if held and self.options.strict:
            raise _loss_error(held[0])
        self.losses.extend(held)
