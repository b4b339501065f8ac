"""Every cross-dialect request output of the rpt corpus is accepted by the target's official client
request types (issue 14.4): openai ``CompletionCreateParams``, anthropic ``MessageCreateParams``, ollama
``ChatRequest``. (The API's own rules beyond the types: tests/validity.py.)"""

from __future__ import annotations

import json
import typing

import pytest
from anthropic.types import MessageCreateParams
from ollama import _types as ollama_types
from openai.types.chat import completion_create_params as openai_params
from pydantic import TypeAdapter

from interlingua.dialects import available
from rpt import all_wire_scripts, parse_wire, transcode_all

_ADAPTERS = {
    "openai": TypeAdapter(typing.Union[openai_params.CompletionCreateParamsStreaming,
                                       openai_params.CompletionCreateParamsNonStreaming]),
    "anthropic": TypeAdapter(MessageCreateParams),
}


def validate(target: str, body: dict) -> None:
    if target == "ollama":
        ollama_types.ChatRequest.model_validate(body)
    else:
        _ADAPTERS[target].validate_python(body)


def _cases():
    """The corpus's cross pairs (as tests/test_rpt.py::test_cross runs them): each request script of a
    folder into the dialect of every other request script there."""
    for path in all_wire_scripts():
        target = parse_wire(path)
        if target.kind != "request" or target.error:
            continue
        for other in sorted(path.parent.glob("*.request.rpt")):
            source = parse_wire(other)
            if other == path or source.error or source.dialect in target.not_from or source.dialect in target.errors_from:
                continue
            yield pytest.param(other, path, id=f"{path.parent.name}/{other.name}->{target.dialect}")


@pytest.mark.parametrize("source_path,target_path", list(_cases()))
def test_cross_request_output_is_accepted_by_the_target_client_types(source_path, target_path):
    source, target = parse_wire(source_path), parse_wire(target_path)
    if not available(source.dialect, "request"):
        pytest.skip("no codec")
    out, _ = transcode_all(source, target.dialect, "whole", source.make_options(**target.options))
    validate(target.dialect, json.loads(out))
