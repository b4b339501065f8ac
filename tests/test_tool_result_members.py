"""An anthropic tool_result's own members and its content's are apart (rpt/request-tool-result-members):
into openai and ollama each one is a loss record of its own, named as the result's or as its
content's (they shared one slot: one was dropped unrecorded, or named as the other), and the
result's members after a block that is not sent are the result's losses (were dropped)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlingua import Transcoder
from rpt import RPT_ROOT, parse_wire

SCRIPT = RPT_ROOT / "request-tool-result-members" / "anthropic.request.rpt"
RESULT_CC = "cache_control of a tool_result block: {t} has no field for it"
TEXT_CC = "cache_control of a text block in a tool_result block: {t} has no field for it"
JOINED = "several tool_result blocks: ollama has no second content in a message; joined with a blank line"

# per tool_result of the script (t1 .. t7), in order
EXPECTED = {
    "openai": [
        [RESULT_CC],  # t1: the result's, after its content
        [RESULT_CC, RESULT_CC],  # t2: the second text's own (a further text is named as the result), the result's
        [RESULT_CC, TEXT_CC],  # t3: the result's, the leading text's
        [TEXT_CC],  # t4: the leading text's only
        ["image block in a tool_result block: openai has no media in tool messages; moved to a user message "
         "after the tool messages", "cache_control of an image block in a tool_result block: openai has no field "
         "for it", RESULT_CC],  # t5
        ["search_result block: openai has no such content", "is_error of a tool_result block: openai has no "
         "field for it", RESULT_CC],  # t6: riding on a block not sent
        [RESULT_CC, TEXT_CC],  # t7 (its text's "citations": null is nothing lost)
    ],
    "ollama": [
        [JOINED, RESULT_CC],
        [JOINED, RESULT_CC, RESULT_CC],
        [RESULT_CC, TEXT_CC],
        [TEXT_CC, JOINED],
        ["image block in a tool_result block: ollama has no image URLs; not fetched", RESULT_CC],
        ["search_result block: ollama has no such content", "is_error of a tool_result block: ollama has no "
         "field for it", RESULT_CC],
        [RESULT_CC, TEXT_CC],
    ],
}


@pytest.mark.parametrize("target", sorted(EXPECTED))
@pytest.mark.parametrize("size", [1, 7, None])
def test_each_member_is_its_own_loss(target: str, size: int | None):
    body = parse_wire(Path(SCRIPT)).body
    size = size or len(body)
    transcoder = Transcoder("anthropic", target)
    for at in range(0, len(body), size):
        transcoder.feed(body[at:at + size])
    transcoder.close()
    expected = [reason.format(t=target) for reasons in EXPECTED[target] for reason in reasons]
    assert [loss.reason for loss in transcoder.losses] == expected
    assert {loss.path for loss in transcoder.losses} == {"$.messages[2]"}
