"""Shared helpers of the ollama tests: capture what the official clients send, transcode, compare."""

from __future__ import annotations

from official_clients import ollama_request, openai_request

import json


from interlingua import Options, decode, transcode
from interlingua.canonical import Block, PAYLOAD_FORM, PayloadForm

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
JPEG_HEAD = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffdb0043000302020302020303")


capture_ollama = ollama_request
capture_openai = openai_request


def chunks(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)] or [b""]


def run(body: bytes, source: str, target: str, size: int = 7, options: Options | None = None):
    """(output bytes, losses) of transcoding ``body`` fed in ``size``-byte chunks."""
    losses: list = []
    out = b"".join(transcode(chunks(body, size), source=source, target=target, options=options, losses=losses))
    return out, losses


def coalesce(events) -> list:
    """Canonical events with block fragments joined: comparable across chunkings."""
    out: list = []
    current = None
    for event in events:
        if type(event) is Block:
            if event.init:
                current = [event.section, event.message, bytearray(event.payload), dict(event.attrs or {})]
                out.append(current)
            else:
                current[2] += event.payload
                current[3].update(event.attrs or {})
            continue
        out.append(event)
    return [tuple(x) if isinstance(x, list) else x for x in out]


def events(body: bytes, source: str, size: int = 7, options: Options | None = None) -> list:
    return coalesce(decode(chunks(body, size), source=source, options=options))


def texts_of(body: bytes, source: str) -> list[tuple[str, str]]:
    """(section, decoded text) of every text-like block, in order: what must survive a transcoding."""
    result = []
    for e in events(body, source, 4096):
        if isinstance(e, tuple) and PAYLOAD_FORM[e[0]] is PayloadForm.ESCAPED:
            text = json.loads(b'"' + bytes(e[2]) + b'"')
            result.append((e[0].value, text))
    return result
