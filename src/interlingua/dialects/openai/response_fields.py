"""Every field of the official openai client's response models, classified (issue 14.2).

``RESPONSE`` covers ``ChatCompletion``, ``STREAM`` ``ChatCompletionChunk``;
``tests/fidelity`` walks the installed client's models and fails on a field
that is in neither (a client release that adds one fails until it is
classified here). Paths are JSON paths with ``[]`` for any element and
``<type>`` for one variant of a union.

Each entry is ``(disposition, homes)``:

* ``mapped`` -- read into canonical events; ``homes`` are the other dialects
  that hold it (``ALL``: every one);
* ``structural`` -- says nothing beyond the shape (type tags, ``object``, indexes);
* ``extension*`` -- the field and everything under it has no canonical
  meaning: the same dialect passes it through (``interlingua.passthrough``),
  any other records it lost, once, at this path;
* ``timestamp`` -- when the response was made (openai ``created``, ollama
  ``created_at``): passed through to the same dialect, dropped by the others
  without a record (decision: the time a response was made is the response's
  own, not content; a target writes its own or none).

A field not ``mapped`` to a target in ``homes`` is a recorded loss there.
"""

from __future__ import annotations

ALL = frozenset({"anthropic", "ollama"})
NONE: frozenset = frozenset()
MAPPED, STRUCTURAL, EXTENSION, TIMESTAMP = "mapped", "structural", "extension*", "timestamp"

_CHOICE = {
    "$.choices": (STRUCTURAL, ALL),
    "$.choices[].index": (STRUCTURAL, ALL),  # choice 0 is the message; others: anthropic/ollama have no choices
    "$.choices[].finish_reason": (MAPPED, ALL),
    "$.choices[].logprobs": (EXTENSION, NONE),
}
_USAGE = {
    "$.usage": (STRUCTURAL, ALL),
    "$.usage.prompt_tokens": (MAPPED, ALL),
    "$.usage.completion_tokens": (MAPPED, ALL),
    "$.usage.total_tokens": (MAPPED, ALL),  # input + output elsewhere (a differing total is a loss)
    "$.usage.prompt_tokens_details": (STRUCTURAL, ALL),
    "$.usage.prompt_tokens_details.cached_tokens": (MAPPED, frozenset({"anthropic"})),
    "$.usage.prompt_tokens_details.cache_write_tokens": (MAPPED, frozenset({"anthropic"})),
    "$.usage.prompt_tokens_details.audio_tokens": (EXTENSION, NONE),
    "$.usage.prompt_tokens_details.image_tokens": (EXTENSION, NONE),
    "$.usage.prompt_tokens_details.text_tokens": (EXTENSION, NONE),
    "$.usage.completion_tokens_details": (STRUCTURAL, ALL),
    "$.usage.completion_tokens_details.reasoning_tokens": (MAPPED, frozenset({"anthropic"})),
    "$.usage.completion_tokens_details.audio_tokens": (EXTENSION, NONE),
    "$.usage.completion_tokens_details.accepted_prediction_tokens": (EXTENSION, NONE),
    "$.usage.completion_tokens_details.rejected_prediction_tokens": (EXTENSION, NONE),
    "$.usage.completion_tokens_details.text_tokens": (EXTENSION, NONE),
}
_TOP = {
    "$.id": (MAPPED, frozenset({"anthropic"})),  # ollama responses have no id
    "$.model": (MAPPED, ALL),
    "$.object": (STRUCTURAL, ALL),
    "$.created": (TIMESTAMP, ALL),
    "$.service_tier": (MAPPED, frozenset({"anthropic"})),
    "$.system_fingerprint": (EXTENSION, NONE),
    "$.moderation": (EXTENSION, NONE),
}

RESPONSE = {
    **_TOP, **_CHOICE, **_USAGE,
    "$.metadata": (EXTENSION, NONE),
    "$.choices[].message": (STRUCTURAL, ALL),
    "$.choices[].message.role": (STRUCTURAL, ALL),
    "$.choices[].message.content": (MAPPED, ALL),
    "$.choices[].message.refusal": (MAPPED, NONE),  # anthropic/ollama write it as text (a recorded loss)
    "$.choices[].message.annotations": (EXTENSION, NONE),
    "$.choices[].message.audio": (EXTENSION, NONE),
    "$.choices[].message.function_call": (STRUCTURAL, ALL),  # legacy: read as a tool call
    "$.choices[].message.function_call.name": (MAPPED, ALL),
    "$.choices[].message.function_call.arguments": (MAPPED, ALL),
    "$.choices[].message.tool_calls": (STRUCTURAL, ALL),
    "$.choices[].message.tool_calls[]<function>.id": (MAPPED, ALL),
    "$.choices[].message.tool_calls[]<function>.type": (STRUCTURAL, ALL),
    "$.choices[].message.tool_calls[]<function>.function": (STRUCTURAL, ALL),
    "$.choices[].message.tool_calls[]<function>.function.name": (MAPPED, ALL),
    "$.choices[].message.tool_calls[]<function>.function.arguments": (MAPPED, ALL),
    "$.choices[].message.tool_calls[]<custom>": (EXTENSION, NONE),
}

STREAM = {
    **_TOP, **_CHOICE, **_USAGE,
    "$.obfuscation": (EXTENSION, NONE),
    "$.choices[].delta": (STRUCTURAL, ALL),
    "$.choices[].delta.role": (STRUCTURAL, ALL),
    "$.choices[].delta.content": (MAPPED, ALL),
    "$.choices[].delta.refusal": (MAPPED, NONE),
    "$.choices[].delta.audio": (EXTENSION, NONE),
    "$.choices[].delta.function_call": (STRUCTURAL, ALL),  # legacy: read as a tool call
    "$.choices[].delta.function_call.name": (MAPPED, ALL),
    "$.choices[].delta.function_call.arguments": (MAPPED, ALL),
    "$.choices[].delta.tool_calls": (STRUCTURAL, ALL),
    "$.choices[].delta.tool_calls[].index": (STRUCTURAL, ALL),
    "$.choices[].delta.tool_calls[].id": (MAPPED, ALL),
    "$.choices[].delta.tool_calls[].type": (STRUCTURAL, ALL),
    "$.choices[].delta.tool_calls[].function": (STRUCTURAL, ALL),
    "$.choices[].delta.tool_calls[].function.name": (MAPPED, ALL),
    "$.choices[].delta.tool_calls[].function.arguments": (MAPPED, ALL),
}
