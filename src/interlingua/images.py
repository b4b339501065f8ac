"""What the dialects read of an image's own bytes: its format, from the first base64
characters. ollama carries images without a media type (its decoder names one from
the bytes, its encoder checks a declared one against them); anthropic takes four
types only, so a foreign image labelled otherwise is named by its bytes."""

from __future__ import annotations

import base64

SNIFF_BYTES = 16  # base64 characters enough to recognise the formats below


def sniff_media_type(b64_prefix: bytes) -> str | None:
    """Media type of an image from its first base64 characters (None if unknown). Only the
    first ``SNIFF_BYTES`` count, however many are given: a streamed string is sniffed when
    that many have come, so the answer must not depend on how much more a chunk held."""
    b64_prefix = b64_prefix[:SNIFF_BYTES]
    usable = len(b64_prefix) // 4 * 4
    try:
        head = base64.b64decode(b64_prefix[:usable])
    except ValueError:
        return None
    if head.startswith(b"\x89PNG"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"GIF8"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def keep_head(head: bytearray, data: bytes) -> None:
    """Add to ``head`` what ``data`` has of the image's first ``SNIFF_BYTES`` characters
    (an encoder keeps them as the payload streams past, to sniff at the image's close)."""
    if len(head) < SNIFF_BYTES:
        head.extend(data[:SNIFF_BYTES - len(head)])
