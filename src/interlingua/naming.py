"""Tool-call ids and tool names as each target API accepts them, by deterministic maps.

The APIs reject what their clients' types let through (``tests/validity.py``
lists every such rule):

* anthropic: a ``tool_use.id`` / ``tool_result.tool_use_id`` must match
  ``^[a-zA-Z0-9_-]+$``; a tool name ``^[a-zA-Z0-9_-]{1,128}$``.
* openai: a function name (definitions and history tool calls) must match
  ``^[a-zA-Z0-9_-]{1,64}$``; a history tool call's id is at most 40 characters.

Other dialects' ids and names break these (openai-compatible backends send ids
like ``functions.Bash:0``; MCP tool names run long and use dots or slashes).
Both maps are *stateless* -- a proxy transcodes a request with one
``Transcoder`` and its response with another:

* **ids** (into anthropic): an id that already fits and does not start with
  ``ID_MARK`` is written as it is; any other becomes ``ID_MARK`` + the
  unpadded base64url of its UTF-8 (base64url's alphabet is exactly the one
  anthropic allows). The map is injective and ``canonical_id`` inverts it
  with no state, so a ``tool_use`` and its ``tool_result`` stay paired, and an
  id anthropic hands back (the client's next request) becomes the backend's
  own id again. Lossless: nothing is recorded. (One exception, harmless: an id
  an anthropic client made up that starts with ``ID_MARK`` but is not of this
  map comes back from another dialect escaped once more -- still valid, and
  the same on the call and its result.)
* **long ids** (into openai): an id over 40 characters becomes ``call_`` + 32 hex
  digits of its SHA-256, on the call and its result alike. Not reversible, and it
  need not be: an openai backend answers with ids of its own, and a client's id
  never reaches the model. Nothing is recorded.
* **names** (into openai and anthropic): a name that fits is kept; any other
  becomes its characters outside ``[a-zA-Z0-9_-]`` replaced by ``_``, cut to
  leave room, then ``_`` and the first 8 hex digits of its SHA-256. The same
  name always maps to the same wire name, so a definition, the history calls
  and ``tool_choice`` agree without state. A name cannot be recovered from its
  hash: the map back is made from the request's tool list --
  ``Transcoder.tool_names`` (wire name -> name) of the request transcoder,
  given to the response transcoder as ``Options(tool_names=...)``. Each
  renamed tool is a recorded loss (the model sees another name). An empty
  or missing name gets the same treatment (``_`` + the hash of ``""``), also
  recorded.
"""

from __future__ import annotations

import base64
import re

#: prefix of an id escaped for anthropic
ID_MARK = "ilid_"
_ID_OK = re.compile(r"[a-zA-Z0-9_-]+")
_NAME_CHARS = re.compile(r"[a-zA-Z0-9_-]*")
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]")
#: longest tool name each target takes (``^[a-zA-Z0-9_-]{1,N}$``)
NAME_LIMIT = {"openai": 64, "anthropic": 128}
_HASH_DIGITS = 8


def _sha256_hex(text: str) -> str:
    # (hashlib is imported here, not at the top: its OpenSSL module costs ~2.5 ms of
    # `import interlingua`, and only an overlong id or an unfit name needs a digest)
    import hashlib
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def anthropic_id(call_id: str) -> str:
    """A tool-call id as anthropic accepts it (see the module docstring)."""
    if _ID_OK.fullmatch(call_id) and not call_id.startswith(ID_MARK):
        return call_id
    return ID_MARK + base64.urlsafe_b64encode(call_id.encode("utf-8")).rstrip(b"=").decode("ascii")


OPENAI_ID_LIMIT = 40


def openai_id(call_id: str) -> str:
    """A tool-call id as openai accepts it (at most 40 characters; see the module docstring)."""
    if len(call_id) <= OPENAI_ID_LIMIT:
        return call_id
    return "call_" + _sha256_hex(call_id)[:32]


def canonical_id(wire_id: str) -> str:
    """The id an anthropic id stands for: ``anthropic_id``'s inverse; any other id as it is."""
    if not wire_id.startswith(ID_MARK):
        return wire_id
    rest = wire_id[len(ID_MARK):]
    try:
        decoded = base64.urlsafe_b64decode(rest + "=" * (-len(rest) % 4)).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return wire_id
    return decoded if anthropic_id(decoded) == wire_id else wire_id


def name_fits(name: str, dialect: str) -> bool:
    limit = NAME_LIMIT.get(dialect)
    return limit is None or (0 < len(name) <= limit and _NAME_CHARS.fullmatch(name) is not None)


def wire_name(name: str, dialect: str) -> str:
    """A tool name as ``dialect`` accepts it (see the module docstring)."""
    if name_fits(name, dialect):
        return name
    digest = _sha256_hex(name)[:_HASH_DIGITS]
    safe = _NAME_BAD.sub("_", name)[:NAME_LIMIT[dialect] - _HASH_DIGITS - 1]
    return f"{safe}_{digest}"
