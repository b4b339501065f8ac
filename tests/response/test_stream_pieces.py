"""Streams fed in 7-byte pieces give the same bytes as whole frames (issue 12, must show), on
both backends: every rpt stream scenario into every target, fed one frame per ``feed`` and
then in 7-byte pieces (cuts inside ``event:`` / ``data:`` lines, escapes, UTF-8): the same
output bytes, the same losses, and for a scenario that fails the same error (class, offset,
path, ``frame_offset``) with the same output before it. One source frame makes one output
frame whatever the chunking (``framing.FrameEnd``), so the bytes cannot depend on it."""

from __future__ import annotations

import pytest

from interlingua import TranscodeError, Transcoder
from interlingua.dialects import DIALECTS
from rpt import all_wire_scripts, parse_wire, split_frames

STREAMS = [parse_wire(path) for path in all_wire_scripts() if path.name.endswith(".stream.rpt")]


def _run(script, target: str, pieces: list[bytes]) -> tuple:
    transcoder = Transcoder(script.dialect, target, kind="stream", options=script.make_options(),
                            **script.make_hooks())
    out, error = [], None
    try:
        for piece in pieces:
            out.append(transcoder.feed(piece))
        out.append(transcoder.close())
    except TranscodeError as exc:
        out.append(transcoder.pending_output())
        error = (type(exc).__name__, exc.reason, exc.dialect, exc.offset, exc.path, exc.frame_offset)
    losses = [(loss.dialect, loss.path, loss.reason) for loss in transcoder.losses]
    return b"".join(out), error, losses


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("script", STREAMS, ids=lambda s: f"{s.scenario}-{s.dialect}")
def test_seven_byte_pieces_give_the_same_bytes_as_whole_frames(backend, script, target):
    frames = split_frames(script.dialect, script.body)
    whole_frames = _run(script, target, frames)
    seven = _run(script, target, [script.body[i:i + 7] for i in range(0, len(script.body), 7)])
    assert seven == whole_frames
    if whole_frames[1] is None:
        assert whole_frames[0], "a stream makes output"
