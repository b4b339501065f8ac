"""Every field of the official ollama client's ``ChatResponse``, classified (issue 14.2).

Format and dispositions: ``dialects/openai/response_fields``. A stream's lines
are ``ChatResponse`` objects too, so ``STREAM`` is ``RESPONSE``.
"""

from __future__ import annotations

ALL = frozenset({"openai", "anthropic"})
NONE: frozenset = frozenset()
MAPPED, STRUCTURAL, EXTENSION, TIMESTAMP = "mapped", "structural", "extension*", "timestamp"

RESPONSE = {
    "$.model": (MAPPED, ALL),
    "$.created_at": (TIMESTAMP, ALL),
    "$.done": (STRUCTURAL, ALL),
    "$.done_reason": (MAPPED, ALL),
    "$.total_duration": (EXTENSION, NONE),
    "$.load_duration": (EXTENSION, NONE),
    "$.prompt_eval_count": (MAPPED, ALL),
    "$.prompt_eval_duration": (EXTENSION, NONE),
    "$.eval_count": (MAPPED, ALL),
    "$.eval_duration": (EXTENSION, NONE),
    "$.message": (STRUCTURAL, ALL),
    "$.message.role": (STRUCTURAL, ALL),
    "$.message.content": (MAPPED, ALL),
    # anthropic writes it as thinking with "signature": "" -- a recorded loss (it cannot be replayed);
    # openai: only with openai_reasoning_field
    "$.message.thinking": (MAPPED, NONE),
    "$.message.images": (EXTENSION, NONE),
    "$.message.tool_name": (EXTENSION, NONE),
    "$.message.tool_calls": (STRUCTURAL, ALL),
    "$.message.tool_calls[].function": (STRUCTURAL, ALL),
    "$.message.tool_calls[].function.name": (MAPPED, ALL),
    "$.message.tool_calls[].function.arguments": (MAPPED, ALL),
    # issue 17.3: openai choices[].logprobs.content; anthropic has none (a recorded loss)
    "$.logprobs": (MAPPED + "*", frozenset({"openai"})),  # the entries go whole
}
STREAM = RESPONSE
