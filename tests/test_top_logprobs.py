"""Another dialect's ``top_logprobs`` into openai: openai refuses it unless ``logprobs`` is true
("logprobs must be set to true if this parameter is used"), and ollama returns log probabilities
only when ``logprobs`` is true too. So ollama's ``top_logprobs`` goes to openai beside
``logprobs: true``, whichever comes first (one before waits for it:
``openai:top-logprobs-after-logprobs``); with ``logprobs`` absent, false or null it is not sent,
recorded at its path. The validity layer (``top-logprobs-with-logprobs``) checks every openai output
of the suite; rpt/request-top-logprobs-without-logprobs pins one request. Both backends."""

from __future__ import annotations

import json

import pytest

import validity
from interlingua import Options, ReorderRefusedError, Transcoder
from rpt import transcode_cut

_MESSAGES = [{"role": "user", "content": "hi"}]
LOGPROBS = [True, False, None, "absent"]


def _body(logprobs, top_first: bool) -> bytes:
    request: dict = {"model": "m"}
    if top_first:
        request["top_logprobs"] = 3
    request["messages"] = _MESSAGES
    if logprobs != "absent":
        request["logprobs"] = logprobs
    if not top_first:
        request["top_logprobs"] = 3
    request["stream"] = False
    return json.dumps(request).encode()


@pytest.mark.parametrize("top_first", [True, False], ids=["top-first", "top-last"])
@pytest.mark.parametrize("logprobs", LOGPROBS, ids=[str(v) for v in LOGPROBS])
def test_top_logprobs_goes_to_openai_only_with_logprobs_true(logprobs, top_first):
    body = _body(logprobs, top_first)
    whole, losses = transcode_cut("ollama", "openai", body, [])
    assert transcode_cut("ollama", "openai", body, list(range(1, len(body)))) == (whole, losses)
    assert validity.check("openai", "request", whole, enforced_only=True) == [], whole
    out = json.loads(whole)
    if logprobs is True:
        assert (out["logprobs"], out["top_logprobs"]) == (True, 3)
        assert losses == []
    else:
        assert "top_logprobs" not in out
        assert [path for path, _ in losses] == ["$.top_logprobs"]
        assert "top_logprobs without logprobs: true; not sent" in losses[0][1]


def test_a_top_logprobs_before_its_logprobs_is_held_one_after_it_is_not():
    refused = Options(refuse_reorder=True)
    transcoder = Transcoder("ollama", "openai", options=refused)
    out = json.loads(transcoder.feed(_body(True, top_first=False)) + transcoder.close())
    assert out["top_logprobs"] == 3
    transcoder = Transcoder("ollama", "openai", options=refused)
    with pytest.raises(ReorderRefusedError, match="openai:top-logprobs-after-logprobs"):
        transcoder.feed(_body(True, top_first=True))
        transcoder.close()
