"""Reading and running rpt scenario scripts (format: rpt/README.md)."""

from __future__ import annotations

import base64
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

import fixed_clock
from interlingua import Decoder, Options, Transcoder
from interlingua.canonical import Block, Control, PayloadForm
from interlingua.framing import NdjsonDecoder, SseDecoder

RPT_ROOT = Path(__file__).resolve().parent.parent / "rpt"
DEFAULT_FRAMES = ["1", "7", "64", "whole"]
_VAR = re.compile(r"\$\{(\w+)\}")
_TEXT_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!? "
    "\"\\\n\t/ é中ü€😀"
)


def generate(kind: str, seed: int, size: int) -> str:
    """Seeded payloads: ``text`` mixes escapes and non-ASCII; ``base64`` is plain base64."""
    rng = random.Random(seed)
    if kind == "base64":
        raw = bytes(rng.getrandbits(8) for _ in range(size * 3 // 4))
        return base64.b64encode(raw).decode()[:size]
    chars = rng.choices(_TEXT_ALPHABET, k=size)
    return "".join(chars)


@dataclass
class WireScript:
    path: Path
    dialect: str
    kind: str
    frames: list[str] = field(default_factory=lambda: list(DEFAULT_FRAMES))
    variables: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    error: tuple[str, str, str] | None = None
    #: (source dialect or None for every source, JSON path prefix)
    losses: list[tuple[str | None, str]] = field(default_factory=list)
    no_losses: bool = False  # cross outputs into this script must record no loss at all
    expected_from: dict[str, bytes] = field(default_factory=dict)
    not_from: dict[str, str] = field(default_factory=dict)
    #: source dialect -> (class, path, offset) the cross transcode into this script must raise
    errors_from: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    canonical: str = "canonical.rpt"

    @property
    def scenario(self) -> str:
        return self.path.parent.name

    def losses_from(self, source: str) -> list[str]:
        """The loss path prefixes to check on the output transcoded from ``source``."""
        return [path for only, path in self.losses if only in (None, source)]

    def make_options(self, **overrides) -> Options:
        return Options(**{k: v for k, v in {**self.options, **overrides}.items() if k not in HOOKS})

    def make_hooks(self, **overrides) -> dict:
        """The ``Transcoder``'s ``clock`` / ``entropy`` for this script's runs."""
        return hooks({**self.options, **overrides})

    def chunks(self, frame: str) -> list[bytes]:
        if frame == "whole":
            return [self.body]
        size = int(frame)
        return [self.body[i:i + size] for i in range(0, len(self.body), size)]


#: what every run's clock reads and its entropy draws (rpt/README.md): the suite's fixed ones
#: (tests/fixed_clock.py), so generated times and ids are pinned; a script sets others with
#: ``options {"clock": <seconds>, "entropy": "<24 hex digits>"}``
RPT_CLOCK = fixed_clock.CLOCK  # 2025-12-01T09:00:00.123456Z
RPT_ENTROPY = fixed_clock.ENTROPY.hex()


HOOKS = ("clock", "entropy")


def hooks(options: dict) -> dict:
    """``clock`` (seconds) and ``entropy`` (hex) of a script's options as the ``Transcoder``'s hooks."""
    seconds = options.get("clock", RPT_CLOCK)
    nonce = bytes.fromhex(options.get("entropy", RPT_ENTROPY))
    return {"clock": lambda: seconds, "entropy": lambda n: nonce[:n]}


def substitute(text: str, variables: dict[str, str]) -> str:
    """``${name}`` -> the payload, JSON-escaped (it sits inside a JSON string)."""
    return _VAR.sub(lambda m: json.dumps(variables[m.group(1)], ensure_ascii=False)[1:-1], text)


def _read_block(lines: list[str], i: int) -> tuple[str, int]:
    out = []
    while i < len(lines) and lines[i] != "end":
        out.append(lines[i])
        i += 1
    if i == len(lines):
        raise ValueError("block without `end`")
    return "\n".join(out), i + 1


def parse_wire(path: Path) -> WireScript:
    dialect, kind, _ = path.name.split(".")
    script = WireScript(path, dialect, kind)
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        word, _, rest = stripped.partition(" ")
        if word == "frames":
            script.frames = rest.split()
        elif word == "let":
            name, _, spec = rest.partition("=")
            gen, seed, size = spec.split()
            script.variables[name.strip()] = generate(gen, int(seed), int(size))
        elif word == "body":
            text, i = _read_block(lines, i)
            script.body = substitute(text, script.variables).encode("utf-8")
        elif word == "body-hex":  # bytes a text file cannot hold (invalid UTF-8)
            script.body = bytes.fromhex(rest.replace(" ", ""))
        elif word == "from":
            text, i = _read_block(lines, i)
            script.expected_from[rest.strip()] = substitute(text, script.variables).encode("utf-8")
        elif word == "not-from":
            source, _, why = rest.partition(" ")
            script.not_from[source] = why
        elif word == "error" and rest.startswith("from "):  # `error from <dialect> <class> <path> <offset>`
            _, source, cls, where, offset = rest.split()
            script.errors_from[source] = (cls, where, offset)
        elif word == "error":
            cls, where, offset = rest.split()
            script.error = (cls, where, offset)
        elif word == "loss":  # `loss <path>` or `loss from <dialect> <path>`
            parts = rest.split()
            if parts[0] == "from":
                script.losses.append((parts[1], parts[2]))
            else:
                script.losses.append((None, parts[0]))
        elif word == "no-losses":
            script.no_losses = True
        elif word == "options":
            script.options = json.loads(rest)
        elif word == "canonical":  # this dialect carries only part of the scenario
            script.canonical = rest.strip()
        else:
            raise ValueError(f"{path}:{i}: unknown line {line!r}")
    return script


def parse_canonical(path: Path, variables: dict[str, str]) -> list[dict]:
    events = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        line = line.strip()
        if line and not line.startswith("#"):
            events.append(json.loads(substitute(line, variables)))
    return events


def coalesce(events) -> list:
    """Join each block's fragments into one Block (attrs of first and last merged).

    Blocks of different ``message`` indexes may interleave (a stream with n > 1
    choices); each is coalesced on its own and placed where it finished.
    """
    out: list = []
    open_blocks: dict[int, tuple[Block, list[bytes], dict]] = {}
    for event in events:
        if type(event) is not Block:
            out.append(event)
            continue
        if event.init:
            open_blocks[event.message] = (event, [], dict(event.attrs or {}))
        first, parts, attrs = open_blocks[event.message]
        if not event.init and event.attrs:
            attrs.update(event.attrs)
        parts.append(event.payload)
        if event.fin:
            out.append(Block(first.section, first.message, b"".join(parts), True, True, attrs or None))
            del open_blocks[event.message]
    assert not open_blocks, "a block was not finished"
    return out


def decode_all(script: WireScript, frame: str) -> list:
    decoder = Decoder(script.dialect, kind=script.kind, options=script.make_options())
    events = []
    for chunk in script.chunks(frame):
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


def transcode_cut(source: str, target: str, body: bytes, cuts: list[int]) -> tuple[bytes, list[tuple[str, str]]]:
    """A request body fed in pieces cut at ``cuts``: the output and the losses as (path, reason)."""
    transcoder = Transcoder(source, target)
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    out = b"".join(transcoder.feed(piece) for piece in pieces) + transcoder.close()
    native_valid(transcoder, source, target, "request", body, out)
    return out, [(loss.path, loss.reason) for loss in transcoder.losses]


def transcode_all(source: WireScript, target: str, frame: str, options: Options | None = None,
                  hooks: dict | None = None):
    transcoder = Transcoder(source.dialect, target, kind=source.kind,
                            options=options or source.make_options(), **(hooks or source.make_hooks()))
    out = []
    for chunk in source.chunks(frame):
        out.append(transcoder.feed(chunk))
    out.append(transcoder.close())
    native_valid(transcoder, source.dialect, target, source.kind, source.body, b"".join(out))
    return b"".join(out), transcoder


def native_valid(transcoder, source: str, target: str, kind: str, data_in: bytes, data_out: bytes) -> None:
    """The validity layer's check of a native transcoder's output: ``validity.install`` wraps the
    Python class only (the native one's methods cannot be replaced), so the helpers that run the
    scenarios check the native core's outputs here."""
    if type(transcoder).__module__ == "interlingua._native" and source != target:
        import validity

        validity.assert_valid(source, target, kind, data_in, data_out)


def _same_text(section: str, text: str, want: str) -> bool:
    """Texts equal; a tool call's arguments equal as JSON when both parse.

    Dialects that carry arguments as an object (anthropic ``input``, ollama
    ``arguments``) re-serialise them compactly, so only the JSON value is the
    same across dialects (the round trip pins each dialect's own bytes).
    """
    if text == want:
        return True
    if section != "tool-call":
        return False
    try:
        return json.loads(text) == json.loads(want)
    except ValueError:
        return False


def matches_canonical(actual: list, expected: list[dict]) -> list[str]:
    """Differences between decoded events and the canonical script (see rpt/README.md)."""
    problems = []
    blocks = [e for e in actual if type(e) is Block]
    want_blocks = [e for e in expected if "block" in e]
    if len(blocks) != len(want_blocks):
        problems.append(f"{len(blocks)} blocks, expected {len(want_blocks)}: "
                        f"{[b.section.value for b in blocks]}")
    for n, (got, want) in enumerate(zip(blocks, want_blocks)):
        if got.section.value != want["block"]:
            problems.append(f"block {n}: section {got.section.value}, expected {want['block']}")
            continue
        if "text" in want:
            text = got.text() if got.form is PayloadForm.ESCAPED else got.payload.decode()
            if not _same_text(got.section.value, text, want["text"]):
                problems.append(f"block {n}: text {text[:80]!r}, expected {want['text'][:80]!r}")
        if "json" in want and json.loads(got.payload) != want["json"]:
            problems.append(f"block {n}: json {got.payload[:80]!r}, expected {want['json']!r}")
        for key, value in want.get("attrs", {}).items():
            if (got.attrs or {}).get(key) != value:
                problems.append(f"block {n}: attr {key}={(got.attrs or {}).get(key)!r}, expected {value!r}")
    controls = {e.name: e.value for e in actual if type(e) is Control}
    for want in (e for e in expected if "control" in e):
        if controls.get(want["control"], "<absent>") != want["value"]:
            problems.append(f"control {want['control']}={controls.get(want['control'], '<absent>')!r}, "
                            f"expected {want['value']!r}")
    return problems


def all_wire_scripts() -> list[Path]:
    return sorted(RPT_ROOT.glob("*/*.*.rpt"))


def cross_pairs(kind: str | None = None, carried: bool = True) -> list[tuple[WireScript, WireScript]]:
    """The corpus's cross pairs, as test_rpt's cross check runs them: (source, target), two
    scripts of one folder and kind, of different dialects, neither an error script. ``carried``:
    only the pairs whose target says what the source becomes (no ``not-from``, no
    ``error from`` for that source)."""
    scripts = [parse_wire(path) for path in all_wire_scripts()]
    scripts = [s for s in scripts if s.error is None and (kind is None or s.kind == kind)]
    by_folder: dict = {}
    for script in scripts:
        by_folder.setdefault((script.path.parent, script.kind), []).append(script)
    pairs = []
    for group in by_folder.values():
        for target in group:
            for source in sorted(group, key=lambda s: s.path):
                if source.dialect == target.dialect:
                    continue
                if carried and (source.dialect in target.not_from or source.dialect in target.errors_from):
                    continue
                pairs.append((source, target))
    return pairs


def pair_id(source: WireScript, target: WireScript) -> str:
    return f"{target.scenario}/{source.path.name}->{target.dialect}"


def events_as_builtins(events) -> list:
    return [msgspec.to_builtins(e) for e in events]


def split_frames(dialect: str, body: bytes) -> list[bytes]:
    """A stream's frames, each with its terminator (SSE events, NDJSON lines)."""
    sep = b"\n" if dialect == "ollama" else b"\n\n"
    parts = body.split(sep)
    frames = [p + sep for p in parts[:-1]]
    if parts[-1]:
        frames.append(parts[-1])
    return frames


def split_stream_events(data: bytes) -> list:
    """A whole stream -> its frames as ``(event name, JSON value or data text)``, to compare
    streams event by event (an oracle: it holds the whole stream).

    NDJSON (the stream starts with ``{``) gives ``(None, value)`` per line.
    """
    frames: list = []

    class _Collect:
        def __init__(self) -> None:
            self.parts: list[bytes] = []

        def frame_data(self, chunk: bytes) -> None:
            self.parts.append(chunk)

        def frame_end(self, event: str | None) -> None:
            text = b"".join(self.parts)
            self.parts = []
            try:
                value = json.loads(text)
            except ValueError:
                value = text.decode("utf-8", "replace")
            frames.append((event, value))

    sink = _Collect()
    decoder = NdjsonDecoder(sink) if data.lstrip()[:1] == b"{" else SseDecoder(sink)
    decoder.feed(data)
    decoder.close()
    return frames
