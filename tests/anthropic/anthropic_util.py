"""Running the pipeline at several fragmentations."""

from __future__ import annotations

import json

from interlingua import Options, Transcoder

SIZES = (1, 2, 7, 64, None)


def chunks(body: bytes, size: int | None) -> list[bytes]:
    if size is None:
        return [body]
    return [body[i:i + size] for i in range(0, len(body), size)]


def run(body: bytes, source: str, target: str, size: int | None = None, options: Options | None = None):
    t = Transcoder(source, target, options=options)
    out = b"".join(t.feed(c) for c in chunks(body, size)) + t.close()
    return out, t


def run_all(body: bytes, source: str, target: str, options: Options | None = None):
    """Output at every fragmentation. Same dialect: byte-identical. Across dialects JSON-equal
    (an attribute that comes after a payload that streamed is written after it)."""
    outs = {}
    for size in SIZES:
        out, t = run(body, source, target, size, options)
        outs[size] = (out, t)
    first = outs[None][0]
    for size, (out, _) in outs.items():
        if source == target:
            assert out == first, f"output differs at chunk size {size}"
        else:
            assert json.loads(out) == json.loads(first), f"output differs at chunk size {size}"
    return outs[None]
