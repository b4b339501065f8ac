"""Every field of the official anthropic client's response models, classified (issue 14.2).

``RESPONSE`` covers ``Message`` (every content block and citation, ``Usage``);
``STREAM`` the raw stream events, keyed ``"<event type>:<path>"``. The
format and the dispositions are those of ``dialects/openai/response_fields``;
``block*`` is one more: the block and everything in it is one canonical raw
block (server tool use and results: ``server-tool-result``; citations:
``citations``), written back whole by anthropic and a recorded loss elsewhere.
"""

from __future__ import annotations

ALL = frozenset({"openai", "ollama"})
NONE: frozenset = frozenset()
OPENAI = frozenset({"openai"})
MAPPED, STRUCTURAL, EXTENSION, BLOCK = "mapped", "structural", "extension*", "block*"

SERVER_BLOCKS = ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                 "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
                 "tool_search_tool_result", "container_upload")


OTHER_CITATIONS = ("char_location", "page_location", "content_block_location", "search_result_location")


def _citations(at: str) -> dict:
    """A response's citations: a web search result is an openai ``url_citation`` annotation (url,
    title; the span is the text block's); the rest has no openai field. Ollama has no citations."""
    web = f"{at}[]<web_search_result_location>"
    return {
        at: (MAPPED, OPENAI),
        f"{web}.type": (STRUCTURAL, ALL),
        f"{web}.url": (MAPPED, OPENAI),
        f"{web}.title": (MAPPED, OPENAI),
        f"{web}.cited_text": (MAPPED, NONE),
        f"{web}.encrypted_index": (MAPPED, NONE),
        **{f"{at}[]<{t}>": (BLOCK, NONE) for t in OTHER_CITATIONS},
    }


def _blocks(at: str, stream: bool = False) -> dict:
    """The content blocks, at ``at`` (``$.content[]`` in a message, ``$.content_block`` in a stream:
    openai streams have no annotations, so there citations are a loss everywhere)."""
    return {
        f"{at}<text>.type": (STRUCTURAL, ALL),
        f"{at}<text>.text": (MAPPED, ALL),
        **({f"{at}<text>.citations": (BLOCK, NONE)} if stream else _citations(f"{at}<text>.citations")),
        f"{at}<thinking>.type": (STRUCTURAL, ALL),
        f"{at}<thinking>.thinking": (MAPPED, frozenset({"ollama"})),  # openai: only with openai_reasoning_field
        f"{at}<thinking>.signature": (MAPPED, NONE),
        f"{at}<redacted_thinking>.type": (STRUCTURAL, ALL),
        f"{at}<redacted_thinking>.data": (MAPPED, NONE),
        f"{at}<tool_use>.type": (STRUCTURAL, ALL),
        f"{at}<tool_use>.id": (MAPPED, ALL),
        f"{at}<tool_use>.name": (MAPPED, ALL),
        f"{at}<tool_use>.input": (MAPPED, ALL),
        f"{at}<tool_use>.caller": (EXTENSION, NONE),
        f"{at}<tool_use>.toolset_name": (EXTENSION, NONE),
        **{f"{at}<{t}>": (BLOCK, NONE) for t in SERVER_BLOCKS},
    }


_DELTA_USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
                "output_tokens_details", "server_tool_use")  # what message_delta's usage declares


def _usage(at: str, only: tuple = ()) -> dict:
    table = _all_usage(at)
    return {k: v for k, v in table.items() if not only or k == at or k[len(at) + 1:].split(".")[0] in only}


def _all_usage(at: str) -> dict:
    return {
        at: (STRUCTURAL, ALL),
        f"{at}.input_tokens": (MAPPED, ALL),
        f"{at}.output_tokens": (MAPPED, ALL),
        f"{at}.cache_read_input_tokens": (MAPPED, OPENAI),
        f"{at}.cache_creation_input_tokens": (MAPPED, OPENAI),
        f"{at}.cache_creation": (EXTENSION, NONE),  # the 5m / 1h split of the cache write
        f"{at}.output_tokens_details": (STRUCTURAL, ALL),
        f"{at}.output_tokens_details.thinking_tokens": (MAPPED, OPENAI),
        f"{at}.server_tool_use": (EXTENSION, NONE),  # no other dialect counts server tool requests
        f"{at}.service_tier": (MAPPED, OPENAI),
        f"{at}.inference_geo": (EXTENSION, NONE),
        f"{at}.speed": (EXTENSION, NONE),
    }


def _message(at: str) -> dict:
    return {
        f"{at}.id": (MAPPED, OPENAI),  # ollama responses have no id
        f"{at}.type": (STRUCTURAL, ALL),
        f"{at}.role": (STRUCTURAL, ALL),
        f"{at}.model": (MAPPED, ALL),
        f"{at}.content": (STRUCTURAL, ALL),
        **_blocks(f"{at}.content[]"),
        f"{at}.stop_reason": (MAPPED, ALL),
        f"{at}.stop_sequence": (MAPPED, NONE),  # openai/ollama say "stop" and nothing more
        f"{at}.stop_details": (EXTENSION, NONE),
        f"{at}.container": (EXTENSION, NONE),
        f"{at}.diagnostics": (EXTENSION, NONE),
        **_usage(f"{at}.usage"),
    }


RESPONSE = _message("$")

STREAM = {
    "message_start:$.type": (STRUCTURAL, ALL),
    "message_start:$.message": (STRUCTURAL, ALL),
    **{"message_start:" + k: v for k, v in _message("$.message").items()},
    "content_block_start:$.type": (STRUCTURAL, ALL),
    "content_block_start:$.index": (STRUCTURAL, ALL),
    "content_block_start:$.content_block": (STRUCTURAL, ALL),
    **{"content_block_start:" + k: v for k, v in _blocks("$.content_block", stream=True).items()},
    "content_block_delta:$.type": (STRUCTURAL, ALL),
    "content_block_delta:$.index": (STRUCTURAL, ALL),
    "content_block_delta:$.delta": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<text_delta>.type": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<text_delta>.text": (MAPPED, ALL),
    "content_block_delta:$.delta<input_json_delta>.type": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<input_json_delta>.partial_json": (MAPPED, ALL),
    "content_block_delta:$.delta<citations_delta>.type": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<citations_delta>.citation": (BLOCK, NONE),
    "content_block_delta:$.delta<thinking_delta>.type": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<thinking_delta>.thinking": (MAPPED, frozenset({"ollama"})),
    "content_block_delta:$.delta<signature_delta>.type": (STRUCTURAL, ALL),
    "content_block_delta:$.delta<signature_delta>.signature": (MAPPED, NONE),
    "content_block_stop:$.type": (STRUCTURAL, ALL),
    "content_block_stop:$.index": (STRUCTURAL, ALL),
    "message_delta:$.type": (STRUCTURAL, ALL),
    "message_delta:$.delta": (STRUCTURAL, ALL),
    "message_delta:$.delta.stop_reason": (MAPPED, ALL),
    "message_delta:$.delta.stop_sequence": (MAPPED, NONE),
    "message_delta:$.delta.stop_details": (EXTENSION, NONE),
    "message_delta:$.delta.container": (EXTENSION, NONE),
    **{"message_delta:" + k: v for k, v in _usage("$.usage", _DELTA_USAGE).items()},
    "message_stop:$.type": (STRUCTURAL, ALL),
}
