"""The JSON type of each top-level request field, per dialect (issue 15, class 5).

A decoder checks a field's first token against this table before it reads the
field (``Decoder.expect``): a wrong type is a ``SchemaError`` at that token's
offset and path, never passed through to break the target (``"stream": 7``,
``"max_tokens": "big"``, ``"model": {"a": 1}``). ``null`` is accepted where the
official client lets a caller send it (an optional field; absent means the
same); ``model`` (and anthropic's ``max_tokens``) are required and never null, and
openai's ``tools``/``functions`` (``Iterable[...]`` in the client, not ``Optional``) and
anthropic's ``tools`` take no null either: ``"tools": null`` is a ``SchemaError`` there,
as the decoders always raised (the table said nullable for openai: rpt/openai-tools-null).
Fields not listed (extensions) are copied as they came, any type.
"""

from __future__ import annotations

from ..decoding import ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING

_INT, _NUM, _BOOL, _STR, _OBJ, _ARR = (t | NULL for t in (INTEGER, NUMBER, BOOLEAN, STRING, OBJECT, ARRAY))

REQUEST_FIELDS = {
    "openai": {
        # tools/functions: the client declares them Iterable, not Optional: null is a SchemaError
        "model": STRING, "messages": ARRAY, "tools": ARRAY, "functions": ARRAY,
        # max tokens: an integral float is taken (rpt validity-max-tokens-float)
        "max_completion_tokens": _NUM, "max_tokens": _NUM, "temperature": _NUM, "top_p": _NUM,
        "stop": STRING | ARRAY | NULL, "stream": _BOOL, "tool_choice": STRING | OBJECT | NULL,
        "function_call": STRING | OBJECT | NULL, "parallel_tool_calls": _BOOL, "response_format": _OBJ,
        "reasoning_effort": _STR, "user": _STR, "seed": _INT, "n": _INT, "frequency_penalty": _NUM,
        "presence_penalty": _NUM, "logprobs": _BOOL, "top_logprobs": _INT, "service_tier": _STR,
        "stream_options": _OBJ, "metadata": _OBJ,
    },
    "anthropic": {
        "model": STRING, "max_tokens": INTEGER, "messages": ARRAY, "system": STRING | ARRAY,
        "tools": ARRAY, "temperature": _NUM, "top_p": _NUM, "top_k": _INT, "stop_sequences": _ARR,
        "stream": _BOOL, "tool_choice": _OBJ, "thinking": _OBJ, "output_config": _OBJ, "metadata": _OBJ,
        "service_tier": _STR,
    },
    "ollama": {
        "model": STRING, "messages": ARRAY, "tools": _ARR, "options": _OBJ, "stream": _BOOL,
        "format": STRING | OBJECT | NULL, "think": BOOLEAN | STRING | NULL, "logprobs": _BOOL,
        "top_logprobs": _INT, "keep_alive": STRING | NUMBER | NULL,
    },
    "ollama.options": {
        "num_predict": _INT, "temperature": _NUM, "top_p": _NUM, "top_k": _INT, "stop": _ARR,
        "seed": _INT, "presence_penalty": _NUM, "frequency_penalty": _NUM,
    },
}

#: openai's reasoning_effort values (the official client's ``ReasoningEffort``)
OPENAI_REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

#: what each dialect's request cannot go without: a missing one is a ``SchemaError``
#: naming it, at the body's closing brace (the API answers 400; a default would change
#: what the request means -- anthropic without max_tokens would generate without limit).
#: ollama's ``messages`` may be absent (the server then only loads the model).
REQUIRED = {
    "openai": ("model", "messages"),
    "anthropic": ("model", "max_tokens", "messages"),
    "ollama": ("model",),
}


def declared_integer(dialect: str, key: str) -> bool:
    """Whether the source declares the field at ``key`` (``options.x`` for ollama's options)
    an integer (``numbers``: its integral float is taken as the integer)."""
    table = REQUEST_FIELDS.get(dialect, {})
    if dialect == "ollama" and key.startswith("options."):
        table, key = REQUEST_FIELDS["ollama.options"], key[8:]
    expect = table.get(key)
    return expect is not None and expect.integer
