"""Deterministic text of the kind agent traffic carries: source files, shell output, prose.

Everything is derived from a seed, so the corpus is the same bytes on every machine
and run (no time, no randomness from outside). Texts mix what JSON escaping and
UTF-8 handling must survive: quotes, backslashes, tabs, newlines, non-ASCII and
astral characters.
"""

from __future__ import annotations

import base64
import random

_WORDS = ("the request body stream decoder tool call result message token usage cache "
          "system prompt image document thinking signature cursor budget frame chunk "
          "value index path error retry backend proxy gateway client header").split()
_IDENTS = ("parse_body", "encode_chunk", "Transcoder", "read_frame", "tool_result", "usage_total",
           "cache_read", "finish_reason", "max_tokens", "ReorderBuffer", "session", "losses")
_UNICODE = ("é", "ü", "ß", "→", "–", "“quoted”", "日本語", "😀", "🚀", "Ωmega", "naïve")


def rng(seed: str) -> random.Random:
    return random.Random(seed)


def prose(seed: str, words: int) -> str:
    """Sentences with the odd non-ASCII word and a quoted "phrase"."""
    r = rng(seed)
    out = []
    for i in range(words):
        w = r.choice(_WORDS)
        if r.random() < 0.04:
            w = r.choice(_UNICODE)
        elif r.random() < 0.03:
            w = f'"{w}"'
        out.append(w)
        if r.random() < 0.08:
            out[-1] += "."
    text = " ".join(out)
    return text[0].upper() + text[1:] + "."


def source_file(seed: str, lines: int) -> str:
    """A Python-looking file with line numbers as an agent's Read tool shows them."""
    r = rng(seed)
    out = []
    indent = 0
    for n in range(1, lines + 1):
        kind = r.random()
        name = r.choice(_IDENTS)
        if kind < 0.12:
            line, indent = f"def {name}_{n}(self, data: bytes) -> None:", 1
        elif kind < 0.2:
            line = f'    """{prose(seed + str(n), 6)}"""'
        elif kind < 0.3:
            line = f'    raise ValueError(f"bad {{data!r}} at \\"{name}\\"")'
        elif kind < 0.38:
            line = f"    # {r.choice(_UNICODE)} {prose(seed + 'c' + str(n), 5)}"
        elif kind < 0.45:
            line = f"    path = 'C:\\\\tmp\\\\{name}.json'\t# windows path"
        else:
            line = "    " * indent + f"{name} = self.{r.choice(_IDENTS)}({n}, {r.randint(0, 999)})"
        out.append(f"{n:>6}\t{line}")
    return "\n".join(out)


def shell_output(seed: str, lines: int, failed: bool = False) -> str:
    r = rng(seed)
    out = [f"$ python -m pytest tests/test_{r.choice(_IDENTS)}.py -q"]
    for i in range(lines):
        out.append(f"tests/test_{r.choice(_IDENTS)}.py::test_{r.choice(_IDENTS)}_{i} "
                   + ("FAILED" if failed and i % 7 == 3 else "PASSED") + f" [{100 * (i + 1) // lines:>3}%]")
    if failed:
        out += ["", "E       AssertionError: assert b'{\"a\":1}' == b'{\"a\": 1}'",
                "E         At index 5 diff: b':' != b' '", "Exit code 1"]
    return "\n".join(out)


def blob(seed: str, size: int, head: bytes = b"") -> str:
    """Base64 of ``size`` seeded bytes after ``head`` (a file signature)."""
    r = rng(seed)
    return base64.b64encode(head + bytes(r.getrandbits(8) for _ in range(size))).decode()


PNG_HEAD = bytes.fromhex("89504e470d0a1a0a0000000d49484452")
JPEG_HEAD = bytes.fromhex("ffd8ffe000104a46494600010100000100010000")
PDF_HEAD = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"


def signature(seed: str) -> str:
    """An opaque thinking signature of realistic length."""
    return blob("sig" + seed, 180)
