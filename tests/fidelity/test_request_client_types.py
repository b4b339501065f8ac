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
from rpt import cross_pairs, pair_id, parse_wire, transcode_all

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


@pytest.mark.parametrize("source_path,target_path", [pytest.param(source.path, target.path, id=pair_id(source, target))
                                                     for source, target in cross_pairs("request")])
def test_cross_request_output_is_accepted_by_the_target_client_types(source_path, target_path):
    source, target = parse_wire(source_path), parse_wire(target_path)
    if not available(source.dialect, "request"):
        pytest.skip("no codec")
    out, _ = transcode_all(source, target.dialect, "whole", source.make_options(**target.options))
    validate(target.dialect, json.loads(out))
