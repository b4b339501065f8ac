"""What the dialects read of an image's or file's own bytes: its format, from the first
base64 characters. ollama carries images without a media type (its decoder names one
from the bytes, its encoder checks a declared one against them); anthropic takes four
types only, so a foreign image labelled otherwise is named by its bytes; an openai file
given as raw base64 (no data URL), or as a data URL labelled with no type of its own
(``UNNAMED_TYPES``), is named by its bytes (a PDF or an image).

The payloads are JSON string text, escapes as written, and a writer may escape any
base64 character (PHP's ``json_encode`` writes ``/`` as ``\\/``): what is sniffed is
the text the escapes stand for (``keep_head``), or ``"\\/9j\\/4AAQ"`` would not be
the JPEG that ``"/9j/4AAQ"`` is."""

from __future__ import annotations

import base64

from .canonical import unescape_json_text

SNIFF_BYTES = 16  # base64 characters enough to recognise the formats below

#: the image formats ``sniff_media_type`` names (anthropic's base64 images are these four)
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

#: data URL labels that name no type (``application/octet-stream``: what a browser's FileReader,
#: ``mimetypes`` and S3 give a file they do not know): an openai file so labelled is named by its
#: bytes, as raw base64 is; anthropic takes a base64 document only as a PDF
UNNAMED_TYPES = frozenset({"application/octet-stream", "binary/octet-stream"})

#: labels senders write for a format, by the format's own name (OpenAI takes ``image/jpg``)
_TYPE_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


def type_named(label: object) -> object:
    """The media type a label names: lower case (media types are case-insensitive), an
    alias as its type (``image/jpg`` is ``image/jpeg``); anything else as it is."""
    if not isinstance(label, str):
        return label
    label = label.lower()
    return _TYPE_ALIASES.get(label, label)


def sniff_media_type(b64_prefix: bytes) -> str | None:
    """Media type of an image from its first base64 characters, unescaped (``keep_head``;
    None if unknown). Only the first ``SNIFF_BYTES`` count, however many are given: a
    streamed string is sniffed when that many have come, so the answer must not depend on
    how much more a chunk held."""
    return _image_type(_decoded_head(b64_prefix))


def sniff_file_type(b64_prefix: bytes) -> str | None:
    """Media type of a file (openai's ``file_data`` as raw base64, without a data URL's
    type) from its first base64 characters, as ``sniff_media_type``: a PDF (``%PDF-``) or
    one of the image types; None if unknown."""
    head = _decoded_head(b64_prefix)
    return "application/pdf" if head.startswith(b"%PDF-") else _image_type(head)


def _decoded_head(b64_prefix: bytes) -> bytes:
    """The bytes the first ``SNIFF_BYTES`` base64 characters stand for (empty if they
    decode to nothing)."""
    b64_prefix = b64_prefix[:SNIFF_BYTES]
    usable = len(b64_prefix) // 4 * 4
    try:
        return base64.b64decode(b64_prefix[:usable])
    except ValueError:
        return b""


def _image_type(head: bytes) -> str | None:
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
    """Add to ``head`` what the escaped string fragment ``data`` has of the image's first
    ``SNIFF_BYTES`` characters, unescaped (UTF-8; a lone surrogate as its escape,
    ``unescape_json_text``). A fragment never ends inside an escape, so each unescapes on
    its own and the head is the same however the string was cut."""
    if len(head) >= SNIFF_BYTES:
        return
    if b"\\" not in data[:SNIFF_BYTES - len(head)]:  # (plain base64: the usual case)
        head.extend(data[:SNIFF_BYTES - len(head)])
        return
    at = 0
    while len(head) < SNIFF_BYTES and at < len(data):
        escape = data.find(b"\\", at, at + SNIFF_BYTES - len(head))
        if escape < 0:
            head.extend(data[at:at + SNIFF_BYTES - len(head)])
            break
        end = escape + _escape_len(data, escape)
        head.extend(data[at:escape] + unescape_json_text(data[escape:end]))
        at = end
    del head[SNIFF_BYTES:]


def _escape_len(data: bytes, at: int) -> int:
    """Length of the (valid: the tokenizer checked it) escape at ``at``: ``\\x`` 2,
    ``\\uXXXX`` 6, a surrogate pair 12."""
    if data[at + 1:at + 2] != b"u":
        return 2
    if (0xD800 <= int(data[at + 2:at + 6], 16) < 0xDC00 and data[at + 6:at + 8] == b"\\u"
            and 0xDC00 <= int(data[at + 8:at + 12], 16) < 0xE000):
        return 12
    return 6
