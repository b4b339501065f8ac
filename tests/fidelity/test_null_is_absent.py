"""A top-level request field that sets nothing means the same as the field absent
(README "Realistic provider traffic"; ``fields.says_nothing``), every dialect, every field
the decoders know, into every other dialect: the output is the output without the field,
and nothing is recorded lost.

* every control and extension field of each dialect (and every ollama option) as ``null``
  (ollama's decoder read a null as a setting: a loss per field, ``"stream": null`` made a
  non-streaming openai request, anthropic got ``"stream": null``);
* each settings map (``SETTING_MAPS``) as ``{}`` and with every member null.
"""

from __future__ import annotations

import json

import pytest

from interlingua import Transcoder
from interlingua.dialects.anthropic import controls as anthropic_controls
from interlingua.dialects.fields import REQUIRED, SETTING_MAPS
from interlingua.dialects.ollama import controls as ollama_controls
from interlingua.dialects.openai import controls as openai_controls

DIALECTS = ("openai", "anthropic", "ollama")

BASE = {
    "openai": {"model": "m", "messages": [{"role": "user", "content": "q"}]},
    "anthropic": {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "q"}]},
    "ollama": {"model": "m", "messages": [{"role": "user", "content": "q"}]},
}


def _fields(dialect: str) -> list[str]:
    module = {"openai": openai_controls, "anthropic": anthropic_controls, "ollama": ollama_controls}[dialect]
    names = [*module.CONTROLS, *module.EXTENSIONS]
    if dialect == "ollama":
        names += ["options." + key for key in [*module.OPTION_CONTROLS, *module.OPTION_EXTENSIONS]]
    return [name for name in names if name not in REQUIRED[dialect]]


def _with(dialect: str, field: str, value) -> dict:
    body = json.loads(json.dumps(BASE[dialect]))
    if field.startswith("options."):
        body.setdefault("options", {})[field[len("options."):]] = value
    else:
        body[field] = value
    return body


def _run(source: str, target: str, body: dict):
    transcoder = Transcoder(source, target, kind="request")
    out = transcoder.feed(json.dumps(body).encode()) + transcoder.close()
    return json.loads(out), list(transcoder.losses)


CASES = [(source, field, None) for source in DIALECTS for field in _fields(source)]
CASES += [(source, field, value) for source, maps in SETTING_MAPS.items() for field in maps
          for value in ({}, {"x": None})]
CASES += [("anthropic", "metadata", {"user_id": None}), ("anthropic", "output_config", {"effort": None, "format": None})]


@pytest.mark.parametrize("source,field,value", CASES, ids=[f"{s}:{f}={json.dumps(v)}" for s, f, v in CASES])
def test_a_field_that_sets_nothing_is_absent(source, field, value):
    for target in DIALECTS:
        if target == source:
            continue
        absent = BASE[source] if not field.startswith("options.") else {**BASE[source], "options": {}}
        assert _run(source, target, _with(source, field, value)) == (_run(source, target, absent)[0], []), target


@pytest.mark.parametrize("source,field", [("openai", "web_search_options")])
def test_an_empty_map_that_turns_something_on_is_not_absent(source, field):
    """``web_search_options: {}`` turns search on: another dialect records it."""
    _, losses = _run(source, "anthropic", _with(source, field, {}))
    assert [loss.path for loss in losses] == ["$." + field]
