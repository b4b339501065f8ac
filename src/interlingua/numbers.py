"""Numbers a target cannot take: the one check of a request control's numbers.

A control going to its own dialect is copied as it came (its raw text), whatever its
numbers. One converted for another dialect is written from its value, so before it is
emitted (at the value's first byte and path, however the body is cut) the decoder asks
``fault`` whether the value can be written:

* a float literal that overflows (``1e400``, ``-1e999``, anywhere in the value) has no
  JSON number to be written as (``Infinity`` is not JSON): refused;
* an integer the conversion computes with -- max tokens into anthropic (compared with a
  thinking budget), ollama's ``num_predict`` into any other dialect (its sign means "no
  limit"), an integral float made an integer -- must fit in 64 bits (what every target API
  parses an integer field as; openai's max tokens, a number, into ollama's ``num_predict``,
  an integer: ``1e19`` is refused); an integer literal copied with its digits (openai ``seed``
  or max tokens into ollama) is carried as written.

``integral`` gives an integer control's integral float (``100.0``, ``1e2``) as its integer,
as usage counts are read; a fraction stays refused by the type check.

Ranges (``RANGES``, what each API takes of a control's number):

* a value outside its *source's* range is the input's fault: ``refusal`` names it, and the
  decoder raises a ``SchemaError`` at its path (whatever the target; openai
  ``max_completion_tokens: 0``, anthropic ``temperature: 1.5``), as a wrong type is;
* a value the source takes but the *target* does not (ollama ``temperature: 3`` into openai,
  ollama ``num_predict: 0`` into anthropic) is sent as the target's nearest bound, a recorded
  loss naming the value, the target's range and what was sent (``clamp``);
* ollama checks only ``top_logprobs``; its ``num_predict`` below 0 means no limit
  (``no_limit``), not a count, and is mapped before any range is looked at.
"""

from __future__ import annotations

import math
from typing import Any

from .losses import lacks, path_subject

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def is_float_literal(text: bytes) -> bool:
    return b"." in text or b"e" in text or b"E" in text


def overflows(text: bytes) -> bool:
    """A float literal whose value is beyond a float's range (``1e400``)."""
    return is_float_literal(text) and math.isinf(float(text))


def integral(text: bytes) -> int | None:
    """A number literal's integer value (``100``, ``100.0``, ``1e2``), or None (a fraction,
    an overflow)."""
    if not is_float_literal(text):
        return int(text)
    value = float(text)
    return int(value) if value.is_integer() else None


def has_infinity(value: Any) -> bool:
    """A value read as data holds a float literal that overflowed (``1e400`` read as inf)."""
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, dict):
        return any(has_infinity(v) for v in value.values())
    if isinstance(value, list):
        return any(has_infinity(v) for v in value)
    return False


def _computed(source: str, target: str, key: str) -> bool:
    """Whether converting this integer control computes with it (so it must fit in 64 bits)."""
    if source == "ollama" and key == "options.num_predict":
        return True
    return target == "anthropic" and key in ("max_tokens", "max_completion_tokens")


def _made_integer(source: str, target: str, key: str) -> bool:
    """Whether the target's field for this control is an integer where the source's is any
    number (openai max tokens into ollama's ``num_predict``): its float is made an integer."""
    return source == "openai" and target == "ollama" and key in ("max_tokens", "max_completion_tokens")


def fault(source: str, target: str, key: str, raw: bytes, value: Any, integer: bool) -> str | None:
    """Why the control ``key`` (its raw text and decoded value) cannot be converted for
    ``target``, or None. ``integer``: the source declares it an integer."""
    if has_infinity(value):
        shown = raw.decode() if raw[:1] in b"-0123456789" else "a number in it"
        return f"number out of range for {key}: {shown} overflows a float (no JSON number carries it into {target})"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    whole = integral(raw) if (integer or _computed(source, target, key) or _made_integer(source, target, key)) \
        else None
    if whole is None or INT64_MIN <= whole <= INT64_MAX:
        return None
    if is_float_literal(raw) or _computed(source, target, key):
        return (f"number out of range for {key}: {raw.decode()} is beyond a 64-bit integer "
                f"(what converting it for {target} takes)")
    return None


def no_limit(control: Any) -> bool:
    """ollama's ``num_predict`` below 0: no limit (-1) or fill the context (-2), not a count;
    a target's own meaning of it is no max field (openai) or ``Options.default_max_tokens``
    (anthropic requires one), a recorded loss either way."""
    value = control.value
    return (control.dialect == "ollama" and control.key == "options.num_predict"
            and isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0)


#: a tool definition is written from its value: one holding an overflowed float has no JSON text
TOOL_OVERFLOW = "number out of range in a tool: a float literal in it overflows (no JSON number carries it)"


#: What each API takes of a request control's number: key -> (least, most), ``None`` for
#: no bound. openai: the Chat Completions reference (max tokens and ``n`` at least 1,
#: temperature 0-2, top_p 0-1, penalties -2-2, top_logprobs 0-20); anthropic: the Messages
#: reference (max_tokens at least 1, temperature and top_p 0-1, top_k at least 0,
#: thinking.budget_tokens at least 1024); ollama: its server's one check (top_logprobs 0-20).
RANGES: dict[str, dict[str, tuple[int, int | None]]] = {
    "openai": {"max_completion_tokens": (1, None), "max_tokens": (1, None), "temperature": (0, 2),
               "top_p": (0, 1), "frequency_penalty": (-2, 2), "presence_penalty": (-2, 2), "n": (1, None),
               "top_logprobs": (0, 20)},
    "anthropic": {"max_tokens": (1, None), "temperature": (0, 1), "top_p": (0, 1), "top_k": (0, None),
                  "thinking.budget_tokens": (1024, None)},
    "ollama": {"top_logprobs": (0, 20)},
}


def _takes(bounds: tuple[int, int | None]) -> str:
    least, most = bounds
    return f"{least} or more" if most is None else f"{least} to {most}"


def _outside(value: Any, bounds: tuple[int, int | None] | None) -> bool:
    if bounds is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    least, most = bounds
    return value < least or (most is not None and value > most)


def refusal(dialect: str, key: str, raw: bytes, value: Any) -> str | None:
    """Why ``dialect`` itself refuses its control ``key`` (its raw text, its value): a number
    outside the dialect's range, or None."""
    bounds = RANGES.get(dialect, {}).get(key)
    if not _outside(value, bounds) or (isinstance(value, float) and math.isinf(value)):
        return None  # (an overflowed float: ``fault``'s, copied as it came to its own dialect)
    return f"number out of range for {key}: {raw.decode()} ({dialect} takes {_takes(bounds)})"


def clamp(control: Any, target: str, target_key: str, session, value: Any = None) -> Any:
    """The value ``target`` takes at ``target_key`` for ``control`` (``value``: the one the
    conversion made of it, else its own): itself, or the nearest bound of the target's range,
    a recorded loss at the control's source path."""
    value = control.value if value is None else value
    bounds = RANGES.get(target, {}).get(target_key)
    if not _outside(value, bounds):
        return value
    least, most = bounds
    bound = least if value < least else most
    where = control.place
    session.lose(where, lacks(path_subject(where), target, f"{target_key} of {value!r} (it takes {_takes(bounds)})",
                              f"sent as {bound}"), dialect=control.dialect)
    return bound
