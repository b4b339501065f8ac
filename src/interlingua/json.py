"""A resumable push tokenizer for JSON, for bodies cut anywhere.

``feed(bytes)`` scans what it can and calls ``handler(kind, value, offset)``
for each token; whatever is unfinished at the end of a chunk is carried to
the next one, but only a bounded amount: a string value that has not ended
is handed on as fragments (``STRING_OPEN`` / ``STRING_PART`` /
``STRING_CLOSE``), so no string is held whole. Only keys and numbers are held
until complete, each under its own byte limit.

String payloads stay JSON-escaped (the bytes between the quotes). A fragment
never ends inside an escape sequence, inside a UTF-8 character, or between the
two halves of a ``\\uD83D\\uDE00`` surrogate pair, so every fragment decodes
on its own to the text it stands for.

Modelled on zilla's common-json pipeline (resumable, explicit states) and on
h11 (sans-IO; errors say which rule broke). ``path()`` gives the JSON path of
the token being delivered, for the handler's own errors.

Differences from ``json.loads``, documented and tested: ``NaN``/``Infinity``
are rejected (they are not JSON); a duplicate key in any object is a
``DuplicateKeyError`` (a ``SchemaError``) at that key -- strict consumers
refuse them, and no output can then carry one, whatever a decoder copies --
where ``json.loads`` keeps the last; nesting is limited by ``max_depth``.
"""

from __future__ import annotations

import json as _json
import re
from codecs import utf_8_decode as _utf8_decode
from json.decoder import c_scanstring
from typing import Callable

from .errors import (
    BudgetExceededError,
    ControlCharacterError,
    DuplicateKeyError,
    InvalidUtf8Error,
    JsonSyntaxError,
    NestingTooDeepError,
    TruncatedInputError,
)

__all__ = [
    "Tokenizer",
    "OBJECT_START", "OBJECT_END", "ARRAY_START", "ARRAY_END", "KEY",
    "STRING", "STRING_OPEN", "STRING_PART", "STRING_CLOSE",
    "NUMBER", "TRUE", "FALSE", "NULL", "KIND_NAMES", "render_path",
]

# Token kinds. ``value`` is: the decoded key (KEY); escaped string bytes
# (STRING*, never containing the quotes); the number's bytes (NUMBER); None.
OBJECT_START = 1
OBJECT_END = 2
ARRAY_START = 3
ARRAY_END = 4
KEY = 5
STRING = 6  # a whole string (first and last fragment at once)
STRING_OPEN = 7  # first fragment, more follow
STRING_PART = 8  # a middle fragment
STRING_CLOSE = 9  # last fragment, an earlier one was STRING_OPEN
NUMBER = 10
TRUE = 11
FALSE = 12
NULL = 13

KIND_NAMES = {
    OBJECT_START: "object-start", OBJECT_END: "object-end", ARRAY_START: "array-start",
    ARRAY_END: "array-end", KEY: "key", STRING: "string", STRING_OPEN: "string-open",
    STRING_PART: "string-part", STRING_CLOSE: "string-close", NUMBER: "number",
    TRUE: "true", FALSE: "false", NULL: "null",
}

Handler = Callable[[int, object, int], None]

# Parser states (what the next significant byte may be).
_VALUE = 0  # a value
_FIRST_KEY_OR_END = 1  # after "{"
_KEY = 2  # after "," in an object
_COLON = 3
_FIRST_VALUE_OR_END = 4  # after "["
_COMMA_OR_END = 5  # after a value inside a container
_IN_STRING = 6  # inside a string value that has been opened
_DONE = 7  # the top-level value is complete
_IN_KEY = 8  # inside a key that has been opened (its bytes held in _key_parts)
_STATE_NAMES = ["value", "first key or '}'", "key", "':'", "first value or ']'",
                "',' or a closing bracket", "string", "end of input", "end of key"]

_WS = re.compile(rb"[ \t\n\r]*")
# The longest run of well-formed string content: plain bytes and whole escapes.
_STRING_BODY = re.compile(rb'(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+')
_PARTIAL_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_HIGH_SURROGATE_TAIL = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(rb"-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?\Z")
_LITERALS = {ord("t"): (b"true", TRUE), ord("f"): (b"false", FALSE), ord("n"): (b"null", NULL)}
_SLICE = 1 << 18  # the most ``feed`` scans at once (see ``feed``)
_NUMBER_BYTES = frozenset(b"0123456789+-.eE")  # may follow a number's longest match inside its prefix
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# _STRING_BODY over text (see _regex_scanstring).
_STRING_TEXT = re.compile(r'(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+')


def _regex_scanstring(text: str, start: int) -> tuple[str, int]:
    """``scanstring`` as far as ``Tokenizer`` uses it, where ``_json`` is missing. The
    content is not decoded: a non-ASCII stand-in has the caller decode the bytes."""
    j = _STRING_TEXT.match(text, start).end()
    if j < len(text) and text[j] == '"':
        return "\x80", j + 1
    raise ValueError("not a well-formed string")


# The C string scanner of json.loads: content and escapes checked, raw control
# characters refused (strict); returns the decoded text and the index after the
# closing quote, raises ValueError at the first fault. The same rule as
# _STRING_BODY, at a fraction of the cost on escape-heavy text.
_scanstring = c_scanstring or _regex_scanstring


def render_path(frames: list) -> str:
    """``["messages", 3, "content"]`` -> ``$.messages[3].content``."""
    out = ["$"]
    for frame in frames:
        if frame is None:
            continue
        if isinstance(frame, int):
            if frame >= 0:
                out.append(f"[{frame}]")
        elif _IDENTIFIER.match(frame):
            out.append("." + frame)
        else:
            out.append("[" + _json.dumps(frame, ensure_ascii=False) + "]")
    return "".join(out)


class Tokenizer:
    """Push tokenizer. ``feed()`` chunks, then ``close()``.

    ``max_depth`` bounds nesting; ``max_key_bytes`` (the bytes between a key's
    quotes, escapes as written) and ``max_number_bytes`` bound the only things
    held whole. Every check is on the whole token, so tokens, errors and their
    offsets and paths are the same however the input is cut: a fault is the
    first one in byte order (a key's limit is met at its first byte past the
    limit, a bad UTF-8 sequence once the decoder refuses it, a broken literal at
    the byte that breaks it). After ``,`` in an object the path names the object
    (a key is due, not the member before).
    """

    def __init__(self, handler: Handler, *, max_depth: int = 128, max_key_bytes: int = 65536,
                 max_number_bytes: int = 1024, max_seen_key_bytes: int = 1 << 20,
                 dialect: str | None = None) -> None:
        self._handler = handler
        self.max_depth = max_depth
        self.max_key_bytes = max_key_bytes
        self.max_number_bytes = max_number_bytes
        self.max_seen_key_bytes = max_seen_key_bytes
        self.dialect = dialect
        self.reset()

    def reset(self) -> None:
        """Ready for a new document, offsets from 0 again (a stream's next frame):
        the state of a new tokenizer, without building one per document."""
        self._state = _VALUE
        # One frame per open container: the current key (object; None before
        # the first) or the current index (array; -1 before the first value).
        self._frames: list = []
        # Per open object: the keys it has had (duplicates are refused); their total
        # length is bounded by max_seen_key_bytes (counted in characters).
        self._seen: list[set] = []
        self._seen_size = 0
        self._carry = b""  # unfinished token bytes from the previous chunk
        self._base = 0  # absolute offset of the carry's first byte
        self._string_open = False  # a string value has had its first fragment
        self._string_start = 0  # absolute offset of the open string's quote
        self._utf8_held = b""  # the start of a UTF-8 character the last chunk ended inside (not scanned yet)
        self._key_parts: list[bytes] = []  # an unfinished key's well-formed bytes so far
        self._key_len = 0  # their total length
        self._key_start = 0  # absolute offset of the unfinished key's quote
        self._closed = False

    # -- public -----------------------------------------------------------

    @property
    def offset(self) -> int:
        """Bytes consumed so far (absolute)."""
        return self._base + len(self._carry)

    @property
    def depth(self) -> int:
        return len(self._frames)

    def path(self) -> str:
        """JSON path of the token being delivered (or of the error)."""
        return render_path(self._frames)

    def feed(self, data: bytes) -> None:
        if self._closed:
            raise JsonSyntaxError("data fed after close()", dialect=self.dialect, offset=self.offset)
        if len(data) > _SLICE:
            # One very large chunk is scanned in slices: the UTF-8 check and the
            # string scan make text copies of what they scan, and those stay
            # bounded by the slice. (json.rs slices at the same places: a string's
            # fragments end there on both backends.)
            for start in range(0, len(data), _SLICE):
                self._feed(data[start:start + _SLICE])
        elif data:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        held = self._utf8_held
        if held or not data.isascii():
            # UTF-8 check: the incremental decoder's own step, without its wrapper.
            # Only whole characters are scanned: one the chunk end cuts is held and
            # scanned with the next chunk, so a fault met inside it is the same for any cut.
            whole = held + data if held else data
            try:
                used = _utf8_decode(whole, "strict", False)[1]
            except UnicodeDecodeError as exc:
                self._bad_utf8(whole, exc.start)
            if used < len(whole):
                tail = whole[used:]
                if tail[0] == 0xED and len(tail) > 1 and tail[1] >= 0xA0:
                    self._bad_utf8(whole, used)  # a surrogate's encoding (the decoder waits for its 3rd byte)
                self._utf8_held = tail
                whole = whole[:used]
            else:
                self._utf8_held = b""
            self._scan(whole, final=False)
        else:
            self._scan(data, final=False)

    def close(self) -> None:
        """End of input: flush a trailing number; fail if the value is unfinished."""
        if self._closed:
            return
        self._closed = True
        if self._utf8_held:
            raise InvalidUtf8Error("input ends inside a UTF-8 character", dialect=self.dialect,
                                   offset=self.offset, path=self.path())
        if self._state != _DONE or self._carry:  # (a complete value leaves nothing to scan)
            self._scan(b"", final=True)
        if self._state != _DONE:
            what = "empty input" if self.offset == 0 else f"input ends while expecting {_STATE_NAMES[self._state]}"
            raise TruncatedInputError(what, dialect=self.dialect, offset=self.offset, path=self.path())

    # -- internals --------------------------------------------------------

    def _bad_utf8(self, whole: bytes, bad: int) -> None:
        """UTF-8 breaks at ``whole[bad]`` (``whole``: the held bytes, then the chunk):
        deliver everything before the bad sequence, then fail there."""
        self._utf8_held = b""
        self._scan(whole[:bad], final=False)
        self._closed = True
        raise InvalidUtf8Error("invalid UTF-8", dialect=self.dialect, offset=self.offset, path=self.path())

    def _fail(self, cls, message: str, at: int) -> None:
        raise cls(message, dialect=self.dialect, offset=at, path=self.path())

    def _unexpected(self, buf: bytes, i: int, state: int) -> None:
        byte = bytes(buf[i:i + 1])
        self._fail(JsonSyntaxError, f"unexpected {byte!r} while expecting {_STATE_NAMES[state]}",
                   self._base + i)

    def _bad_literal(self, buf: bytes, i: int, word: bytes) -> None:
        """``buf[i:]`` starts ``word`` but breaks it: fail at the first byte that differs."""
        j = i + 1
        while buf[j] == word[j - i]:
            j += 1
        self._fail(JsonSyntaxError, f"unexpected {bytes(buf[j:j + 1])!r} inside {word.decode()}", self._base + j)

    def _scan(self, data: bytes, *, final: bool) -> None:  # noqa: C901 - one loop, on purpose
        """The whole lexer in one loop: per-token calls are the cost on message-heavy bodies.

        Strings (values and keys) are scanned by the C ``scanstring`` of the
        ``json`` module over ``text``: the chunk read as latin-1 (one character
        per byte, so indices are byte offsets; UTF-8 bytes are all >= 0x80 and
        so plain content to it), cut at ``limit`` and ended with a sentinel
        quote. ``limit`` is the chunk end, or where an escape cut by the chunk
        end begins. A scan that ends at the sentinel means the string goes on
        past the chunk, its content well-formed up to ``limit``; a scan that
        fails is redone by the regex (``_string_body``/``_key_whole``), which
        names the error exactly.
        """
        carry = self._carry
        buf = carry + data if carry else data
        n = len(buf)
        base = self._base
        limit = n
        k = buf.rfind(b"\\", n - 5 if n > 5 else 0)
        if k >= 0 and _PARTIAL_ESCAPE.match(buf, k) and _odd_backslashes_before(buf, k, 0):
            limit = k
            text = buf[:k].decode("latin-1") + '"'
        else:
            text = buf.decode("latin-1") + '"'
        frames = self._frames
        state = self._state
        emit = self._handler
        scan = _scanstring
        i = 0
        if state == _IN_STRING:  # the chunk starts inside a string
            try:
                e = scan(text, 0)[1]
            except ValueError:  # an error: _string_body names it
                e = 0
            if e > limit and not final:  # and goes on past it (the common case, inline)
                cut = limit
                if (cut >= 6 and buf[cut - 6] == 92 and _HIGH_SURROGATE_TAIL.match(buf, cut - 6, cut)
                        and _odd_backslashes_before(buf, cut - 6, 0)):
                    cut -= 6  # keep a surrogate pair together
                if cut:
                    if self._string_open:
                        emit(STRING_PART, buf[:cut], base)
                    else:
                        emit(STRING_OPEN, buf[:cut], self._string_start)
                        self._string_open = True
                self._carry = buf[cut:]
                self._base = base + cut
                return
            i = self._string_end(buf, e, limit, final)
            if i < 0:  # the chunk ended inside the string
                i = -i - 1
                self._carry = buf[i:]
                self._base = base + i
                return
            state = _COMMA_OR_END if frames else _DONE
        elif state == _IN_KEY:  # the chunk starts inside a key
            i = self._key_rest(buf, text, limit)
            if i < 0:  # and the key goes on past it
                return
            if i < n and buf[i] == 58:
                i += 1
                state = _VALUE
            else:
                state = _COLON
        ws_match = _WS.match
        arr = bool(frames) and type(frames[-1]) is int  # the innermost container is an array
        try:
            while i < n:
                c = buf[i]
                if c <= 32:  # whitespace (or a control character, refused below)
                    if c == 32 and i + 1 < n and buf[i + 1] > 32:  # one space: ", " and ": "
                        i += 1
                    else:
                        i = ws_match(buf, i).end()
                        if i >= n:
                            break
                    c = buf[i]
                if state == _VALUE or (state == _FIRST_VALUE_OR_END and c != 93):
                    if c == 34:  # "
                        if arr:
                            frames[-1] += 1
                        try:
                            e = scan(text, i + 1)[1]
                        except ValueError:  # an error: _string_body names it
                            e = 0
                        if 0 < e <= limit:  # ends in this chunk (the quote at e - 1)
                            emit(STRING, buf[i + 1:e - 1], base + i)
                            i = e
                        else:
                            self._string_open = False
                            self._string_start = base + i
                            if e:
                                j = self._string_cut(buf, i + 1, limit, final)
                            else:
                                j = self._string_body(buf, i + 1, final)
                            if j < 0:  # chunk ended inside the string
                                i = -j - 1
                                state = _IN_STRING
                                break
                            i = j
                    elif c == 123 or c == 91:  # { [
                        if arr:
                            frames[-1] += 1
                        if len(frames) >= self.max_depth:
                            self._fail(NestingTooDeepError, f"nesting deeper than {self.max_depth}", base + i)
                        i += 1
                        if c == 123:
                            emit(OBJECT_START, None, base + i - 1)
                            frames.append(None)
                            self._seen.append(set())
                            arr = False
                            state = _FIRST_KEY_OR_END
                        else:
                            emit(ARRAY_START, None, base + i - 1)
                            frames.append(-1)
                            arr = True
                            state = _FIRST_VALUE_OR_END
                        continue
                    elif c == 45 or 48 <= c <= 57:  # - 0-9
                        if arr:
                            frames[-1] += 1
                        m = _NUMBER.match(buf, i)
                        end = m.end() if m is not None else i
                        if end - i > self.max_number_bytes:  # (the number so far: the same for any cut)
                            self._fail(BudgetExceededError,
                                       f"number longer than max_number_bytes ({self.max_number_bytes})", base + i)
                        # Runs to the chunk end: it may continue in the next one.
                        if (not final and (end == n or buf[end] in _NUMBER_BYTES)
                                and _NUMBER_PREFIX.match(buf, i)):
                            if arr:
                                frames[-1] -= 1  # it did not start after all (carried)
                            break
                        if m is None:
                            self._unexpected(buf, i, state)
                        emit(NUMBER, buf[i:end], base + i)
                        i = end
                    else:
                        if arr:
                            frames[-1] += 1
                        literal = _LITERALS.get(c)
                        if literal is None:
                            self._unexpected(buf, i, state)  # the path names where a value was expected
                        word, kind = literal
                        if buf.startswith(word, i):
                            emit(kind, None, base + i)
                            i += len(word)
                        else:
                            if n - i < len(word) and word.startswith(buf[i:]):
                                if final:
                                    self._fail(TruncatedInputError, f"input ends inside {word.decode()}", base + n)
                                if arr:
                                    frames[-1] -= 1  # it did not start after all (carried)
                                break
                            self._bad_literal(buf, i, word)
                elif (c == 125 or c == 93) and (
                        state == _COMMA_OR_END or state == _FIRST_KEY_OR_END or state == _FIRST_VALUE_OR_END):
                    # } ] closes the innermost container, whose value then has ended
                    if (c == 93) != arr:
                        self._unexpected(buf, i, state)
                    frames.pop()
                    if not arr:
                        self._seen_size -= sum(map(len, self._seen.pop()))
                    emit(ARRAY_END if arr else OBJECT_END, None, base + i)
                    i += 1
                    arr = bool(frames) and type(frames[-1]) is int
                elif state == _KEY or state == _FIRST_KEY_OR_END:
                    if c != 34:
                        self._unexpected(buf, i, state)
                    try:
                        key, e = scan(text, i + 1)
                    except ValueError:  # an error: _key_whole names it
                        e = 0
                    if 0 < e <= limit and e - i - 2 <= self.max_key_bytes:  # the closing quote at e - 1
                        if not key.isascii():  # read as latin-1: decode the bytes
                            raw = buf[i + 1:e - 1]
                            key = raw.decode("utf-8") if 92 not in raw else _decode_key(raw)
                    else:
                        self._key_start = base + i
                        self._key_parts = []
                        self._key_len = 0
                        if e > limit:  # well-formed up to the chunk end: held, the rest comes later
                            i = self._key_hold(buf, i + 1, limit)
                            state = _IN_KEY
                            break
                        key, e = self._key_whole(buf, i + 1, e)
                    frames[-1] = key
                    seen = self._seen[-1]
                    if key in seen or self._seen_size + len(key) > self.max_seen_key_bytes:
                        self._key_refused(key, base + i)
                    seen.add(key)
                    self._seen_size += len(key)
                    emit(KEY, key, base + i)
                    i = e
                    if i < n and buf[i] == 58:  # the colon, when it follows at once
                        i += 1
                        state = _VALUE
                    else:
                        state = _COLON
                    continue
                elif state == _COMMA_OR_END:
                    if c != 44:  # ,
                        self._unexpected(buf, i, state)
                    if arr:
                        state = _VALUE
                    else:
                        state = _KEY
                        frames[-1] = None  # a key is due: the path names the object, not the last member
                    i += 1
                    continue
                elif state == _COLON:
                    if c != 58:
                        self._unexpected(buf, i, state)
                    i += 1
                    state = _VALUE
                    continue
                else:  # _DONE: only whitespace may follow
                    self._fail(JsonSyntaxError, "trailing data after the JSON value", base + i)
                # A value ended (a scalar, or a container closed): a comma that follows at once is taken here.
                if not frames:
                    state = _DONE
                elif i < n and buf[i] == 44:
                    i += 1
                    if arr:
                        state = _VALUE
                    else:
                        state = _KEY
                        frames[-1] = None  # (as above)
                else:
                    state = _COMMA_OR_END
        finally:
            self._state = state
        self._carry = buf[i:]
        self._base = base + i

    def _string_end(self, buf: bytes, e: int, limit: int, final: bool) -> int:
        """``_string_body`` from the chunk start, given ``scanstring``'s answer ``e``
        (0: it failed) -- see ``_scan``."""
        if not e:
            return self._string_body(buf, 0, final)
        if e > limit:
            return self._string_cut(buf, 0, limit, final)
        if self._string_open:
            self._handler(STRING_CLOSE, buf[:e - 1], self._base)
        else:
            self._handler(STRING, buf[:e - 1], self._string_start)
        self._string_open = False
        return e

    def _string_cut(self, buf: bytes, start: int, j: int, final: bool) -> int:
        """The string goes on past the chunk, its content well-formed from
        ``start`` to ``j``: deliver what can be; ``-(resume index) - 1``."""
        if final:
            return -start - 1
        cut = j
        if (cut - start >= 6 and buf[cut - 6] == 92 and _HIGH_SURROGATE_TAIL.match(buf, cut - 6, cut)
                and _odd_backslashes_before(buf, cut - 6, start)):
            cut -= 6  # keep a surrogate pair together
        if cut > start:
            if self._string_open:
                self._handler(STRING_PART, buf[start:cut], self._base + start)
            else:
                self._handler(STRING_OPEN, buf[start:cut], self._string_start)
                self._string_open = True
        return -cut - 1

    # Keys are held whole (the handler gets them decoded), but a key cut by the
    # chunk end is held as its well-formed parts, so each byte is scanned once
    # (linear however the input is cut), and the limit is on the whole key's
    # bytes between its quotes, whether it came in one chunk or many.

    def _key_rest(self, buf: bytes, text: str, limit: int) -> int:
        """The chunk starts inside a key: finish it (index after its closing quote),
        or hold what there is and carry the cut escape (-1)."""
        try:
            e = _scanstring(text, 0)[1]
        except ValueError:  # an error: _key_whole names it
            e = 0
        if e > limit:
            cut = self._key_hold(buf, 0, limit)
            self._carry = buf[cut:]
            self._base += cut
            return -1
        key, e = self._key_whole(buf, 0, e)
        self._frames[-1] = key
        seen = self._seen[-1]
        if key in seen or self._seen_size + len(key) > self.max_seen_key_bytes:
            self._key_refused(key, self._key_start)
        seen.add(key)
        self._seen_size += len(key)
        self._handler(KEY, key, self._key_start)
        return e

    def _key_refused(self, key: str, at: int) -> None:
        if key in self._seen[-1]:
            self._fail(DuplicateKeyError, f"duplicate key {key!r}", at)
        self._fail(BudgetExceededError, f"the open objects' keys exceed max_seen_key_bytes "
                   f"({self.max_seen_key_bytes})", at)

    def _key_hold(self, buf: bytes, start: int, end: int) -> int:
        """Hold ``buf[start:end]``, well-formed key bytes; the key goes on. Returns
        where the carry (a cut escape) starts."""
        self._key_parts.append(buf[start:end])
        self._key_len += end - start
        if self._key_len > self.max_key_bytes:
            self._key_too_long()
        return end

    def _key_whole(self, buf: bytes, start: int, e: int) -> tuple[str, int]:
        """The key ends in ``buf`` after what is held: its closing quote at ``e - 1``
        (``e`` is 0 where ``scanstring`` failed: the regex finds the fault). Returns
        the decoded key and the index after the quote. Errors in byte order: a fault
        past the limit is the limit's."""
        if not e:
            j = _STRING_BODY.match(buf, start).end()
            if j >= len(buf) or buf[j] != 34:
                if self._key_len + j - start > self.max_key_bytes:
                    self._key_too_long()
                self._bad_string_byte(buf, j)
                self._fail(JsonSyntaxError, "invalid string", self._base + j)  # (the scanners disagree)
            e = j + 1
        if self._key_len + e - 1 - start > self.max_key_bytes:
            self._key_too_long()
        raw = buf[start:e - 1]
        if self._key_parts:
            raw = b"".join(self._key_parts) + raw
            self._key_parts = []
            self._key_len = 0
        return (raw.decode("utf-8") if 92 not in raw else _decode_key(raw)), e

    def _key_too_long(self) -> None:
        self._fail(BudgetExceededError, f"object key longer than max_key_bytes ({self.max_key_bytes})",
                   self._key_start)

    # The regex scan: the reference rule, used where ``scanstring`` failed, to
    # name the error exactly (or to find the escape cut by the chunk end).

    def _bad_string_byte(self, buf: bytes, j: int) -> None:
        if buf[j] < 0x20:
            self._fail(ControlCharacterError, f"raw control character 0x{buf[j]:02x} in string", self._base + j)
        if buf[j] == 92 and _PARTIAL_ESCAPE.match(buf, j) and len(buf) - j < 6:
            return  # an escape cut by the chunk end
        self._fail(JsonSyntaxError, "invalid escape sequence in string", self._base + j)

    def _string_body(self, buf: bytes, start: int, final: bool) -> int:
        """Deliver string content from ``start``; index after the closing quote,
        or ``-(resume index) - 1`` when the chunk ends inside the string."""
        emit = self._handler
        j = _STRING_BODY.match(buf, start).end()
        n = len(buf)
        if j < n and buf[j] == 34:  # the string ends in this chunk
            if self._string_open:
                emit(STRING_CLOSE, buf[start:j], self._base + start)
            else:
                emit(STRING, buf[start:j], self._string_start)
            self._string_open = False
            return j + 1
        if j < n:
            if not (buf[j] == 92 and _PARTIAL_ESCAPE.match(buf, j) and n - j < 6):
                # a fault (not an escape the chunk end cuts): first what a chunk ending just
                # before it delivers -- a decoder refuses a wrong-typed string at its first
                # fragment, and which error comes must not depend on the cut
                self._string_cut(buf, start, j, False)
            self._bad_string_byte(buf, j)  # raises unless it is a cut escape
        return self._string_cut(buf, start, j, final)


def _odd_backslashes_before(buf: bytes, at: int, floor: int) -> bool:
    """Is the backslash at ``at`` a real escape (preceded by an even run of backslashes)?"""
    k = at - 1
    while k >= floor and buf[k] == 92:
        k -= 1
    return (at - 1 - k) % 2 == 0


def _decode_key(raw: bytes) -> str:
    return _json.loads(b'"' + raw + b'"')
