"""Shared rules of response codecs: finish reasons, usage, response ids and times, output frames.

Finish reasons (canonical <-> each dialect)
==========================================

=========================  ==============  ===============================  ==========
canonical                  openai          anthropic                        ollama
=========================  ==============  ===============================  ==========
``end_turn``               stop            end_turn                         stop
``stop_sequence``          stop            stop_sequence                    stop
``max_tokens``             length          max_tokens                       length
``tool_use``               tool_calls      tool_use                         stop
``content_filter``         content_filter  refusal                          stop (loss)
``refusal``                content_filter  refusal                          stop (loss)
``pause_turn``             stop (loss)     pause_turn                       stop (loss)
``context_window``         length          model_context_window_exceeded    length
=========================  ==============  ===============================  ==========

Decoding: openai ``stop`` -> ``end_turn``, ``function_call`` -> ``tool_use``;
ollama ``stop`` -> ``tool_use`` when the message carried tool calls, else
``end_turn``. A reason a dialect does not define is kept as
``"<dialect>:<reason>"``: written back unchanged by that dialect, and by the
others as their plain stop, with a recorded loss. So is a canonical reason the
target has no reason of the same meaning for (``pause_turn`` outside anthropic,
``content_filter``/``refusal`` into ollama, which has neither). Not recorded: a
reason the target's own covers (openai's and ollama's ``stop`` is also a stop
sequence's, their ``length`` also the context window's), ollama's ``stop`` for
``tool_use`` (its decoder reads the tool calls back as ``tool_use``), and
openai's ``content_filter`` / anthropic's ``refusal`` for each other (both: the
provider's safety system stopped the output).

Usage (absent is not zero)
==========================

Canonical ``input`` counts every input token, cached or not (openai's
``prompt_tokens`` meaning). Details with a home on both sides are mapped:
cache reads (openai ``prompt_tokens_details.cached_tokens``, anthropic
``cache_read_input_tokens``), cache writes (``cache_write_tokens``,
``cache_creation_input_tokens``), reasoning (``completion_tokens_details.
reasoning_tokens``, ``output_tokens_details.thinking_tokens``) and the service
tier (openai ``service_tier``, anthropic ``usage.service_tier``). Every other
detail is a recorded loss at its source path; a canonical count a target
cannot hold is recorded at the source's path for it (``USAGE_PATHS``). Anthropic's ``input_tokens`` excludes the tokens
read from and written to the cache, so decoding adds
``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to it and
encoding subtracts them. A count the source did not give is never written as
0 -- except where the target's schema requires the field (anthropic
``message_start`` usage and ``message_delta.usage.output_tokens``): there a 0
placeholder is written, and the real counts follow in ``message_delta``
whenever the source has them; and openai's ``prompt_tokens``, ``completion_tokens``
and ``total_tokens``, all three required in its ``CompletionUsage``, whenever a
usage object is written at all (an ollama response whose prompt came from its cache
has ``eval_count`` but no ``prompt_eval_count``): 0 for the missing count, the total
the sum written. A usage with no count at all is left out of an openai body.

Every count is a signed 64-bit integer (what the target APIs and the native core hold): a
count beyond it is a ``SchemaError`` at its source path, as a request integer beyond 64 bits
is (README "Numbers a target cannot take"); so is a count the conversion adds up beyond it
(anthropic's input and cache counts into the canonical input, openai's total of a source
that gives none).
"""

from __future__ import annotations

from typing import Any, Callable

import hashlib
import json
import re
from datetime import datetime, timedelta, timezone

import msgspec

from . import json as tok
from .canonical import Block, Event, Finish, Logprobs, Section, Usage
from .errors import SchemaError
from .jsonwriter import dumps
from .losses import finish_path, lacks, path_subject
from .numbers import INT64_MAX, INT64_MIN
from .session import MAX_CLOCK, ResponseStart, Session

FINISH_TO = {
    "openai": {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
               "content_filter": "content_filter", "refusal": "content_filter", "context_window": "length"},
    "anthropic": {"end_turn": "end_turn", "stop_sequence": "stop_sequence", "max_tokens": "max_tokens",
                  "tool_use": "tool_use", "content_filter": "refusal", "refusal": "refusal",
                  "pause_turn": "pause_turn", "context_window": "model_context_window_exceeded"},
    "ollama": {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "stop",
               "context_window": "length"},
}
FINISH_FROM = {
    "openai": {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
               "content_filter": "content_filter"},
    "anthropic": {"end_turn": "end_turn", "stop_sequence": "stop_sequence", "max_tokens": "max_tokens",
                  "tool_use": "tool_use", "pause_turn": "pause_turn", "refusal": "refusal",
                  "model_context_window_exceeded": "context_window"},
    "ollama": {"stop": "end_turn", "length": "max_tokens"},
}
_PLAIN_STOP = {"openai": "stop", "anthropic": "end_turn", "ollama": "stop"}


def finish_from(dialect: str, reason: str | None) -> str | None:
    if reason is None:
        return None
    return FINISH_FROM[dialect].get(reason, f"{dialect}:{reason}")


def finish_to(dialect: str, reason: str | None, session: Session, stop_sequence: str | None = None) -> str | None:
    """The target's reason for a canonical one; lossy mappings are recorded. The stop
    sequence that ended generation (anthropic ``stop_sequence``) has a field in
    anthropic only: elsewhere its value is a recorded loss (the reason, ``stop``, is kept)."""
    if stop_sequence is not None and dialect != "anthropic":
        path = "$.delta.stop_sequence" if session.kind == "stream" else "$.stop_sequence"
        session.lose(path, lacks(f"stop_sequence {stop_sequence!r}", dialect,
                                 "field for the stop sequence that ended generation", "the finish reason is kept"))
    if reason is None:
        return None
    mapped = FINISH_TO[dialect].get(reason)
    if mapped is not None:
        return mapped
    source, _, raw = reason.partition(":")
    if raw and source == dialect:
        return raw
    path = finish_path(session.source, session.kind)
    session.lose(path, lacks(f"{path.rsplit('.', 1)[-1]} {raw or reason!r}", dialect, "such finish reason",
                             f"sent as {_PLAIN_STOP[dialect]!r}"))
    return _PLAIN_STOP[dialect]


# -- usage ----------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def in_64_bits(n: int, key: str, path: str, what: str = "a token count") -> int:
    """``n`` when it fits in a signed 64-bit integer (what every target API and the native
    core hold a count in), else a ``SchemaError`` at ``path`` (README "Numbers a target
    cannot take": a request integer beyond 64 bits is one too)."""
    if INT64_MIN <= n <= INT64_MAX:
        return n
    raise SchemaError(beyond_64_bits(key, what), path=path)


def beyond_64_bits(key: str, what: str = "a token count") -> str:
    return f"number out of range for {key}: {what} is beyond a 64-bit integer"


def _count(obj: dict, key: str, path: str) -> int | None:
    """A token count: an integer, or absent/null; an integral float (``30.0``, some servers
    write them) is the same count, carried as an integer; any other value, or a count
    beyond 64 bits, is a ``SchemaError``."""
    value = obj.get(key)
    if value is None:
        return None
    if _int(value) is not None:
        return in_64_bits(value, key, f"{path}.{key}")
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return in_64_bits(int(value), key, f"{path}.{key}")
    raise SchemaError(f"expected an integer for {key}", path=f"{path}.{key}")


#: what anthropic's canonical input adds up (``usage_from_anthropic``)
_ANTHROPIC_SUM = "input_tokens + cache_read_input_tokens + cache_creation_input_tokens"


def _details(obj: dict, key: str, path: str) -> dict:
    """A details object (absent/null: empty); any other type is a ``SchemaError``."""
    value = obj.get(key)
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise SchemaError(f"expected an object for {key}", path=f"{path}.{key}")


def _tier(obj: dict, path: str) -> Any:
    """An anthropic usage's ``service_tier``: a string, or absent/null; any other value is a
    ``SchemaError`` (a number was dropped with nothing recorded; the client declares a string)."""
    value = obj.get("service_tier")
    if value is None or isinstance(value, str):
        return value
    from .dialects.fields import value_type  # (here: the dialects import this module)

    raise SchemaError(f"expected a string or null for service_tier, got {value_type(value)}",
                      path=f"{path}.service_tier")


#: where each canonical usage field was in each source (loss records name the source field)
USAGE_PATHS = {
    "openai": {"input": "$.usage.prompt_tokens", "output": "$.usage.completion_tokens",
               "total": "$.usage.total_tokens", "cache_read": "$.usage.prompt_tokens_details.cached_tokens",
               "cache_write": "$.usage.prompt_tokens_details.cache_write_tokens",
               "reasoning": "$.usage.completion_tokens_details.reasoning_tokens", "service_tier": "$.service_tier"},
    "anthropic": {"input": "$.usage.input_tokens", "output": "$.usage.output_tokens",
                  "cache_read": "$.usage.cache_read_input_tokens",
                  "cache_write": "$.usage.cache_creation_input_tokens",
                  "reasoning": "$.usage.output_tokens_details.thinking_tokens",
                  "service_tier": "$.usage.service_tier"},
    "ollama": {"input": "$.prompt_eval_count", "output": "$.eval_count"},
}


def usage_path(session: Session, name: str) -> str:
    """The source path of a canonical usage count (an anthropic stream gives the full usage
    in ``message_start``: ``$.message.usage``)."""
    path = USAGE_PATHS.get(session.source, {}).get(name, f"$.usage.{name}")
    if session.source == "anthropic" and session.kind == "stream" and path.startswith("$.usage."):
        return "$.message" + path[1:]
    return path


#: service tiers each dialect names (its client's literal), canonical name -> the dialect's
SERVICE_TIERS = {
    "openai": {"standard": "default", "priority": "priority", "flex": "flex", "scale": "scale", "auto": "auto",
               "fast": "fast"},
    "anthropic": {"standard": "standard", "priority": "priority", "batch": "batch"},
}


def tier_from(dialect: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    for canonical, own in SERVICE_TIERS[dialect].items():
        if own == value:
            return canonical
    return f"{dialect}:{value}"


def tier_to(dialect: str, u: Usage, session: Session) -> str | None:
    """The target's name for the usage's tier; a tier it does not name is a recorded loss."""
    tier = u.service_tier
    if tier is None:
        return None
    own = SERVICE_TIERS.get(dialect, {}).get(tier)
    if own is None:
        source, _, raw = tier.partition(":")
        if raw and source == dialect:
            return raw
        _lose_count(session, "service_tier", dialect, f"service tier {tier!r}")
    return own


def _lose_details(obj: dict, path: str, known: tuple, session: Session) -> None:
    for key, value in obj.items():
        if key not in known and value is not None and value != 0:
            session.lose_member(f"{path}.{key}", "such usage field")


def usage_from_openai(obj: dict, session: Session, path: str = "$.usage") -> Usage:
    prompt = _details(obj, "prompt_tokens_details", path)
    completion = _details(obj, "completion_tokens_details", path)
    # (a server's own counts -- DeepSeek's prompt_cache_hit_tokens, a router's cost -- had
    # been dropped with nothing recorded)
    _lose_details(obj, path, ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
                              "completion_tokens_details"), session)
    _lose_details(prompt, path + ".prompt_tokens_details", ("cached_tokens", "cache_write_tokens"), session)
    _lose_details(completion, path + ".completion_tokens_details", ("reasoning_tokens",), session)
    return Usage(input=_count(obj, "prompt_tokens", path), output=_count(obj, "completion_tokens", path),
                 cache_read=_count(prompt, "cached_tokens", path + ".prompt_tokens_details"),
                 cache_write=_count(prompt, "cache_write_tokens", path + ".prompt_tokens_details"),
                 reasoning=_count(completion, "reasoning_tokens", path + ".completion_tokens_details"),
                 total=_count(obj, "total_tokens", path))


def usage_to_openai(u: Usage, session: Session) -> bytes | None:
    """The openai usage object (the service tier goes at the body's top: ``tier_to``), or
    None when the usage has no count at all (the member is left out: openai's usage is
    optional). ``prompt_tokens``, ``completion_tokens`` and ``total_tokens`` are required
    members of openai's ``CompletionUsage``: one the source did not give is a 0
    placeholder (see the module docstring), and the total is then the sum written (beyond
    64 bits: a ``SchemaError`` at the source's output count)."""
    if all(getattr(u, name) is None for name in USAGE_COUNTS):
        return None
    out: dict[str, Any] = {"prompt_tokens": u.input if u.input is not None else 0,
                           "completion_tokens": u.output if u.output is not None else 0}
    out["total_tokens"] = u.total if u.total is not None else in_64_bits(
        out["prompt_tokens"] + out["completion_tokens"], "total_tokens", usage_path(session, "output"),
        "prompt_tokens + completion_tokens")
    prompt = {}
    if u.cache_read is not None:
        prompt["cached_tokens"] = u.cache_read
    if u.cache_write is not None:
        prompt["cache_write_tokens"] = u.cache_write
    if prompt:
        out["prompt_tokens_details"] = prompt
    if u.reasoning is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": u.reasoning}
    return dumps(out)


def usage_from_anthropic(obj: dict, session: Session, path: str = "$.usage") -> Usage:
    read = _count(obj, "cache_read_input_tokens", path)
    write = _count(obj, "cache_creation_input_tokens", path)
    raw_input = _count(obj, "input_tokens", path)
    total_input = None if raw_input is None else in_64_bits(
        raw_input + (read or 0) + (write or 0), "input_tokens", f"{path}.input_tokens", _ANTHROPIC_SUM)
    _lose_details(obj, path, ("input_tokens", "output_tokens", "cache_read_input_tokens",
                              "cache_creation_input_tokens", "output_tokens_details", "service_tier"), session)
    details = _details(obj, "output_tokens_details", path)
    _lose_details(details, path + ".output_tokens_details", ("thinking_tokens",), session)
    return Usage(input=total_input, output=_count(obj, "output_tokens", path), cache_read=read, cache_write=write,
                 reasoning=_count(details, "thinking_tokens", path + ".output_tokens_details"),
                 service_tier=tier_from("anthropic", _tier(obj, path)))


def usage_to_anthropic(u: Usage, session: Session, *, require_input: bool) -> dict:
    """Members of an anthropic usage object; ``output_tokens`` always (schema), input when required or known."""
    out: dict[str, Any] = {}
    if u.input is not None:
        out["input_tokens"] = in_64_bits(max(0, u.input - (u.cache_read or 0) - (u.cache_write or 0)),
                                         "input_tokens", usage_path(session, "input"),
                                         "the input less its cache counts")
    elif require_input:
        out["input_tokens"] = 0  # schema placeholder (see module docstring)
    if u.cache_write is not None:
        out["cache_creation_input_tokens"] = u.cache_write
    if u.cache_read is not None:
        out["cache_read_input_tokens"] = u.cache_read
    out["output_tokens"] = u.output if u.output is not None else 0
    if u.reasoning is not None:
        out["output_tokens_details"] = {"thinking_tokens": u.reasoning}
    tier = tier_to("anthropic", u, session)
    if tier is not None:
        out["service_tier"] = tier
    if u.total is not None and u.input is not None and u.output is not None and u.total != u.input + u.output:
        _lose_count(session, "total", "anthropic", "total other than input + output")
    return out


def usage_from_ollama(obj: dict) -> Usage:
    """The two counts (an int, not a bool; anything else is absent). The decoder refused one
    beyond 64 bits at its value; here too, for a caller that did not."""
    counts = [_int(obj.get(key)) for key in ("prompt_eval_count", "eval_count")]
    for key, n in zip(("prompt_eval_count", "eval_count"), counts):
        if n is not None:
            in_64_bits(n, key, f"$.{key}")
    return Usage(input=counts[0], output=counts[1])


def usage_to_ollama(u: Usage, session: Session) -> dict:
    out: dict[str, Any] = {}
    if u.input is not None:
        out["prompt_eval_count"] = u.input
    if u.output is not None:
        out["eval_count"] = u.output
    for name, what in (("cache_read", "cache-read"), ("cache_write", "cache-write"), ("reasoning", "reasoning")):
        if getattr(u, name):
            _lose_count(session, name, "ollama", f"{what} token count")
    if u.service_tier is not None:
        _lose_count(session, "service_tier", "ollama", "service tier")
    if u.total is not None and u.input is not None and u.output is not None and u.total != u.input + u.output:
        _lose_count(session, "total", "ollama", "total other than input + output")
    return out


def _lose_count(session: Session, name: str, target: str, what: str, done: str | None = None) -> None:
    """A usage count the target cannot report, named by its field in the source."""
    path = usage_path(session, name)
    session.lose(path, lacks(path_subject(path), target, what, done))


def merge_anthropic_usage(old: Usage | None, new: Usage, path: str = "$.usage") -> Usage:
    """``merge_usage`` of two anthropic usages (``usage_from_anthropic``) as the anthropic
    client accumulates a stream: member by member, the later wins, and the input is the
    merged ``input_tokens`` plus the merged cache counts. A ``message_delta`` that gives
    ``input_tokens`` but not ``message_start``'s cache reads keeps them, in the input too
    (a sum beyond 64 bits: a ``SchemaError`` at ``path``'s ``input_tokens``, ``new``'s usage)."""
    if old is None:
        return new
    merged = merge_usage(old, new)
    raw = _anthropic_input(new)
    raw = raw if raw is not None else _anthropic_input(old)
    total_input = None if raw is None else in_64_bits(
        raw + (merged.cache_read or 0) + (merged.cache_write or 0), "input_tokens", f"{path}.input_tokens",
        _ANTHROPIC_SUM)
    return msgspec.structs.replace(merged, input=total_input)


def _anthropic_input(u: Usage) -> int | None:
    """The ``input_tokens`` a usage was read from (the canonical input less the cache counts)."""
    return None if u.input is None else u.input - (u.cache_read or 0) - (u.cache_write or 0)


#: the usage counts, in the order their losses are recorded
USAGE_COUNTS = ("input", "output", "cache_read", "cache_write", "reasoning", "total")


def lose_unasked_usage(u: Usage, session: Session) -> None:
    """An openai stream whose request did not ask for usage (``Options.openai_stream_usage``
    off) gets none, as from OpenAI: each count the source gave is a recorded loss."""
    for name in USAGE_COUNTS:
        if getattr(u, name) is not None:
            _lose_count(session, name, "openai", "usage chunk without stream_options.include_usage", "not sent")


def merge_usage(old: Usage | None, new: Usage) -> Usage:
    """Later counts win; a count the later report lacks keeps its earlier value."""
    if old is None:
        return new
    return Usage(**{f: (getattr(new, f) if getattr(new, f) is not None else getattr(old, f))
                    for f in ("input", "output", "cache_read", "cache_write", "reasoning", "total", "service_tier")})


# -- response ids and times --------------------------------------------------------------
#
# Where the source has an id or a time, it is carried: openai ``created`` (seconds) is
# ollama ``created_at`` (RFC 3339, UTC) and back; anthropic has no time field. Where it
# has none, the output gets what a server would have written:
#
# * **a time**: the wall clock when the response's transcoder was made (the response's
#   start), the ``Transcoder``'s ``clock`` -- openai ``created`` in whole seconds, ollama ``created_at``
#   with microseconds (Go's RFC 3339 form, trailing zeros trimmed);
# * **a response id**: ``chatcmpl-`` / ``msg_`` + 24 hex digits of SHA-256 over the
#   response's nonce (12 bytes of the ``Transcoder``'s ``entropy``, drawn with the clock), its time in
#   microseconds and its model: two responses do not share one (96 random bits), not even
#   from the same bytes (a client or a log keys on them), and the output is a function of
#   the input and the two hook readings -- tests fix both;
# * **a tool-call id**: ``call_`` + 24 hex digits of SHA-256 over the response's id and the
#   call's index in the response: unique across the turns of a conversation (Anthropic
#   refuses a request whose ``tool_use`` ids repeat), and the same for the same response.
#
# The hooks are read once per response, when its encoder is made (``Session.start``; never
# for a request or a same-dialect copy): the codecs get two values (``ResponseStart``),
# never a callback, so a native core takes them from its wrapper and copies the rest.

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_US = 1_000_000
# ASCII digits only (``re.ASCII``): ``\d`` of a str pattern takes any Unicode digit ("٢"),
# which no wire time has and the native core does not take
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", re.ASCII)


def ollama_time_us(raw: bytes) -> int | None:
    """Microseconds since the epoch of an ollama ``created_at`` (raw JSON; finer digits are
    cut), or None when it is not an RFC 3339 time."""
    try:
        value = json.loads(raw)
        match = _RFC3339.match(value) if isinstance(value, str) else None
        if match is None:
            return None
        zone = "+00:00" if match.group(3) == "Z" else match.group(3)
        whole = datetime.fromisoformat(match.group(1) + zone) - _EPOCH
        time_us = whole // timedelta(microseconds=1) + int(((match.group(2) or "") + "000000")[:6])
    except (ValueError, OverflowError):
        return None
    return time_us if 0 < time_us < MAX_CLOCK * _US else None


def openai_time_us(raw: bytes) -> int | None:
    """Microseconds since the epoch of an openai ``created`` (raw JSON seconds; an integral
    float, ``1.7e9``, is the integer it means), or None (not a positive integer: ``0`` is what a
    server that does not know writes). The decoder refused any other type (a ``SchemaError``)."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < MAX_CLOCK:
        return None
    return value * _US


def openai_created(time_us: int) -> bytes:
    """An openai ``created``: whole seconds."""
    return str(time_us // _US).encode()


def ollama_created_at(time_us: int) -> bytes:
    """An ollama ``created_at`` (raw JSON): RFC 3339 in UTC, microseconds with trailing zeros
    trimmed and no fraction for a whole second (Go's ``RFC3339Nano``, which Ollama writes)."""
    t = _EPOCH + timedelta(microseconds=time_us)
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    fraction = time_us % _US
    if fraction:
        text += "." + f"{fraction:06d}".rstrip("0")
    return dumps(text + "Z")


def source_time_us(ext) -> int | None:
    """The response's time when the extension is a source's time field, else None."""
    if ext.dialect == "ollama" and ext.path == "$.created_at":
        return ollama_time_us(ext.raw)
    if ext.dialect == "openai" and ext.path == "$.created":
        return openai_time_us(ext.raw)
    return None


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:24]


def _utf8(text: str | None) -> bytes:
    return (text or "").encode("utf-8", "surrogatepass")


def generated_response_id(prefix: str, nonce: bytes, time_us: int, model: str | None) -> str:
    """The id of a response whose source has none (see above)."""
    return prefix + _digest(nonce, str(time_us).encode(), _utf8(model))


def generated_tool_id(response_id: str, n: int) -> str:
    """The id of the ``n``-th tool call (from 0) of a response whose source gave it none."""
    return "call_" + _digest(_utf8(response_id), str(n).encode())


class Stamp:
    """One response's id and time as an encoder writes them: the source's where it has
    them, else generated from the ``ResponseStart`` (see above). The first source time
    counts; once the time or a generated id is written it stays, so every frame of a
    stream carries the same (a source time that comes after the first frame was written
    is not used: nothing is held for a timestamp)."""

    __slots__ = ("start", "source_us", "_time_us", "_id")

    def __init__(self, start: ResponseStart) -> None:
        self.start = start
        self.source_us: int | None = None
        self._time_us: int | None = None
        self._id: str | None = None

    def source(self, ext) -> bool:
        """Take the time of a source's time field; True when ``ext`` is one."""
        found = source_time_us(ext)
        if found is not None and self.source_us is None:
            self.source_us = found
        return (ext.dialect, ext.path) in _TIME_FIELDS

    @property
    def time_us(self) -> int:
        """The response's time, fixed by its first use."""
        if self._time_us is None:
            self._time_us = self.source_us if self.source_us is not None else self.start.time_us
        return self._time_us

    def response_id(self, prefix: str, source_id: str | None, model: str | None) -> str:
        if source_id:
            return source_id
        if self._id is None:
            self._id = generated_response_id(prefix, self.start.nonce, self.time_us, model)
        return self._id


_TIME_FIELDS = {("ollama", "$.created_at"), ("openai", "$.created")}


# -- a source's error -------------------------------------------------------------------


def source_error_message(value: Any) -> str:
    """An error's ``message`` as it came: a string's text, null's none; any other value its
    compact JSON (was Python's ``str``: ``{'detail': 'busy'}`` went to the client)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value).decode()


def lose_error_members(err: Any, session: Session, path: str = "$.error", carried: tuple = ()) -> None:
    """The members of a source's error object other than its message and type (openai's
    ``code`` and ``param``, anthropic's ``details``): no target's error event has a place for
    them (a canonical error's status is written nowhere): each recorded (null: nothing).
    ``carried``: members the error's kind carries (an openai code that names it)."""
    if isinstance(err, dict):
        for key, value in err.items():
            if key not in ("message", "type") and key not in carried and value is not None:
                session.lose_member(f"{path}.{key}", "such error field")


def source_error_type(value: Any) -> str:
    """An error's ``type``: a name; anything else (absent, empty, not a string) ``api_error``."""
    return value if isinstance(value, str) and value else "api_error"


def answer_and_error() -> SchemaError:
    """What a response encoder (not a stream's) raises for an ``Error`` after its body began,
    or content after the error body it wrote: a body is an answer or an error, never both
    (a stream ends its answer with an error event). Was a cut body, or an error body with
    an answer after it, and no exception: a proxy relayed either as a 200. The decoder
    locates it (the source's dialect, the member that made it)."""
    return SchemaError("a response with both an answer and an error: a response body is one or the other "
                       "(only a stream can end its answer with an error)")


class AnswerOrError:
    """What the response encoders (not the streams') share: a body is an answer or an error,
    never both (``answer_and_error``). The class has ``begun`` (its answer's head is written),
    ``done`` and ``abort``, and refuses to begin an answer once ``errored``."""

    errored = False  # the body written is the source's error: no answer may follow it

    def _error(self, error) -> None:
        """The source's error: the target's error body when nothing was written yet; after the
        answer began, refused."""
        if self.begun:
            raise answer_and_error()
        if not self.done:
            self.errored = True
        self.abort(error)


def answer_after_error() -> SchemaError:
    """What a stream encoder raises for content after the source's error event: the target's
    error event ended its stream (anthropic's ``event: error`` and ollama's error line are its
    last; openai's error chunk is followed by ``[DONE]`` only); content was written after it,
    where no client reads it. Other events after it go on as before (a member after the
    error is recorded as any other)."""
    return SchemaError("an answer after the stream's error: the error event ends the stream")


#: what ``lose_after_error`` says: the target's stream ended at its error event
_AFTER_ERROR = "place after its stream's error event"


def lose_after_error(event: Finish | Usage | Logprobs | None, session: Session, target: str) -> None:
    """A finish reason, usage counts or token logprobs a stream encoder did not write because
    its error event ended the stream (``answer_after_error``): they came after it, or were
    held for the end the error took the place of. Each is a recorded loss at its source path."""
    if event is None:
        return
    if type(event) is Logprobs:
        session.lose("$.logprobs", lacks("token logprobs", target, _AFTER_ERROR, "not sent"))
        return
    if type(event) is Finish:
        if event.reason is not None or event.stop_sequence is not None:
            path = finish_path(session.source, session.kind, event.choice)
            session.lose(path, lacks(path_subject(path), target, _AFTER_ERROR, "not sent"))
        return
    for name in USAGE_COUNTS:
        if getattr(event, name) is not None:
            _lose_count(session, name, target, _AFTER_ERROR, "not sent")
    if event.service_tier is not None and target != "openai":
        # (the tier goes with the end's counts; openai writes it on each chunk as it comes)
        _lose_count(session, "service_tier", target, _AFTER_ERROR, "not sent")


# -- logprobs ----------------------------------------------------------------------------


def logprob_to_openai(raw: bytes) -> dict:
    """A canonical token entry as openai's ``ChatCompletionTokenLogprob``: ``bytes`` is
    a required (nullable) member, ``top_logprobs`` a required list."""
    entry = json.loads(raw)
    tops = entry.get("top_logprobs") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(tops or [], list) or not all(
            isinstance(top, dict) for top in tops or []):
        raise SchemaError("expected a token entry (an object; top_logprobs a list of objects)", path="$.logprobs")
    entry.setdefault("bytes", None)
    entry["top_logprobs"] = [{"bytes": None, **top} for top in tops or []]
    return entry


# -- output frames -----------------------------------------------------------------------


class OpenFrame:
    """At most one output frame (SSE event, NDJSON line) open for streaming fragments.

    ``key`` names what the open frame carries (a block); a fragment with the
    same key continues it, anything else closes it first. One source frame
    makes one output frame, whatever the chunking (see ``framing.FrameEnd``).
    """

    __slots__ = ("write", "key", "_tail")

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write
        self.key: Any = None
        self._tail = b""

    def fragment(self, key: Any, head: Callable[[], bytes], tail: bytes, payload: bytes) -> None:
        if not payload:
            return
        if self.key != key:
            self.close()
            self.write(head())
            self.key = key
            self._tail = tail
        self.write(payload)

    def close(self) -> None:
        if self.key is not None:
            self.write(self._tail)
            self.key = None
            self._tail = b""


# -- decoder helpers ------------------------------------------------------------------------


class BlockStream:
    """One canonical block emitted fragment by fragment, possibly across many frames.

    The first non-empty fragment carries ``attrs``; ``close(late)`` emits the
    last (empty) fragment with the late attributes (a thinking signature).
    """

    __slots__ = ("emit", "section", "message", "attrs", "started", "key")

    def __init__(self, emit: Callable[[Event], None], section: Section, message: int,
                 attrs: dict | None = None, key: Any = None) -> None:
        self.emit = emit
        self.section = section
        self.message = message
        self.attrs = attrs  # read when the first fragment goes (members may fill it until then)
        self.started = False
        self.key = key  # what opened it (a tool-call index, a content-block index)

    def fragment(self, data: bytes, init: bool = False, fin: bool = False) -> None:
        """A ``FragmentSink``; ``fin`` of one string is not the end of the block."""
        if not data:
            return
        self.emit(Block(self.section, self.message, data, not self.started, False,
                        None if self.started else (dict(self.attrs) if self.attrs else None)))
        self.started = True

    def announce(self) -> None:
        """Emit the first fragment now, even empty (a tool call's id and name, before its arguments)."""
        if not self.started:
            self.emit(Block(self.section, self.message, b"", True, False, dict(self.attrs) if self.attrs else None))
            self.started = True

    def close(self, late: dict | None = None) -> None:
        if self.started:
            self.emit(Block(self.section, self.message, b"", False, True, late or None))
        else:
            attrs = {**(self.attrs or {}), **(late or {})}
            self.emit(Block(self.section, self.message, b"", True, True, attrs or None))
        self.started = True


_KEY_KINDS = (tok.STRING, tok.STRING_OPEN, tok.NUMBER, tok.NULL, tok.TRUE, tok.FALSE)


class KeyFirst:
    """Reads an object whose member ``key`` says how to read the others.

    Install after the ``{`` was consumed. While ``key`` has not come, every
    token is recorded into a reorder-buffer hold; when it comes,
    ``start(value)`` pushes the reader for the object's members and the
    recorded tokens are replayed into it (``start(None)`` if the object ends
    without ``key``). Sources that put ``key`` first cost nothing.
    """

    def __init__(self, decoder, key: str, start: Callable[[Any], None], reason: str, expect=None) -> None:
        self.d = decoder
        self.key = key
        self.expect = expect  # the key's type (decoding.Expect)
        self.start = start
        self.reason = reason
        self.hold = None
        self.depth = 0
        self.want_value = False
        decoder.push(self.on_token)

    def on_token(self, kind: int, value: Any, offset: int) -> None:
        d = self.d
        if self.want_value:
            self.read_key(d, self.key, kind, value, offset, self._found, self.expect)
            return
        if self.depth == 0 and kind == tok.KEY and value == self.key:
            self.want_value = True
            return
        if self.depth == 0 and kind == tok.OBJECT_END:
            d.pop()
            self.start(None)
            self._replay()
            d.on_token(kind, value, offset)
            return
        if kind in (tok.OBJECT_START, tok.ARRAY_START):
            self.depth += 1
        elif kind in (tok.OBJECT_END, tok.ARRAY_END):
            self.depth -= 1
        if self.hold is None:
            self.hold = d.session.reorder.hold(self.reason)
        # 16 a token, a string's later fragments none: a string costs the same however it was cut
        head = 0 if kind == tok.STRING_PART or kind == tok.STRING_CLOSE else 16
        self.hold.append((kind, value, offset), head + (len(value) if isinstance(value, (bytes, str)) else 0))

    @staticmethod
    def read_key(decoder, key: str, kind: int, value: Any, offset: int, done: Callable[[Any], None],
                 expect=None) -> None:
        """Read the value of ``key`` (a scalar; ``expect``: its type) and pass it to ``done``."""
        if kind not in _KEY_KINDS:
            raise decoder.error(f"expected a scalar for {key}", offset)
        decoder.read_value(kind, value, offset, done, expect, key)

    def _found(self, value: Any) -> None:
        self.d.pop()
        self.start(value)
        self._replay()

    def _replay(self) -> None:
        if self.hold is not None:
            for kind, value, offset in self.hold.drain():
                self.d.on_token(kind, value, offset)
            self.hold = None


class ReasoningFirst:
    """Text that one message object writes before its reasoning goes after it.

    A model thinks before it answers, but Ollama's server (Go's struct order)
    writes ``content`` before ``thinking``, and an openai-compatible server may
    put ``content`` before ``reasoning_content`` -- in a whole response and in a
    single stream frame that carries both. Anthropic clients expect the
    thinking block first, and openai streams (Ollama's own layer) send the
    reasoning delta first. So the text waits in the reorder buffer (rule
    ``reason``) from its first byte until the object's next member shows
    whether reasoning follows: another member or the object's end releases it
    at once; a reasoning member releases it when that reasoning string ends; a
    null member shows nothing (OpenRouter writes ``"refusal":null`` between
    ``content`` and ``reasoning``).
    Bounded by the text of one message (one frame in a stream). With
    ``refuse_reorder`` nothing is held: the wire order is kept (the target may
    get the text before the reasoning).

    ``text`` is the text block's fragment sink (``FragmentSink`` shape).
    """

    __slots__ = ("session", "reason", "sink", "hold", "waiting")

    def __init__(self, session: Session, reason: str, sink: Callable[[bytes, bool, bool], None]) -> None:
        self.session = session
        self.reason = reason
        self.sink = sink
        self.hold = None
        self.waiting = False  # a reasoning member is being read: the held text waits for its end

    def text(self, data: bytes, init: bool, fin: bool) -> None:
        if self.session.options.refuse_reorder:
            self.sink(data, init, fin)
            return
        if data:
            if self.hold is None:
                self.hold = self.session.reorder.hold(self.reason)
            self.hold.write(data)

    def member(self, reasoning: bool) -> None:
        """The next member of the object starts (``reasoning``: it is the reasoning)."""
        if reasoning:
            self.waiting = self.hold is not None
        else:
            self.release()

    def reasoning_end(self) -> None:
        if self.waiting:
            self.release()

    def release(self) -> None:
        """The object's end, or what the text waited for came: the text goes on."""
        self.waiting = False
        if self.hold is not None:
            hold, self.hold = self.hold, None
            for data in hold.drain():
                self.sink(data, False, False)


def skip_value(decoder, kind: int, value: Any, offset: int) -> None:
    """Consume a value without keeping it (``ping`` bodies, ``object`` tags), under
    ``max_value_bytes`` as ``read_raw`` reads it."""
    if kind in (tok.OBJECT_START, tok.ARRAY_START, tok.STRING_OPEN):
        decoder.read_raw(kind, value, offset, lambda raw: None)
    else:
        decoder.bound_scalar(kind, value, offset)


class Deferred:
    """Fragments of a block whose attributes are not all known yet (sorted keys put a tool
    call's ``arguments``/``input`` before its ``name``): held in the reorder buffer until
    ``ready()``, then streamed. A source in the usual order holds nothing."""

    def __init__(self, session: Session, reason: str | Callable[[], str], open_block: Callable[[], BlockStream],
                 ready: Callable[[], bool]) -> None:
        # ``reason``: the rule, or what names it when the first fragment must wait (the
        # attribute still missing then)
        self._session = session
        self._reason = reason
        self._open = open_block
        self._ready = ready
        self._hold = None

    def fragment(self, data: bytes, init: bool = False, fin: bool = False) -> None:
        if self._hold is None and self._ready():
            self._open().fragment(data)
            return
        if self._hold is None:
            reason = self._reason if isinstance(self._reason, str) else self._reason()
            self._hold = self._session.reorder.hold(reason)
        self._hold.append(data, len(data))

    def release(self) -> BlockStream:
        block = self._open()
        if self._hold is not None:
            for data in self._hold.drain():
                block.fragment(data)
            self._hold = None
        return block
