"""Properties of the ollama request dialect (hypothesis; ``ci`` profile by default, ``deep`` by hand).

(a) Chunking invariance: any cut of an ollama body decodes to the same
    coalesced canonical events and re-encodes to the same bytes as the whole
    body, and ollama -> ollama is JSON-equal to the input.
(b) Round trips ollama -> openai -> ollama and openai -> ollama -> openai agree
    on what both dialects carry: after removing the fields whose path has a
    recorded loss (from either leg), the documented differences below are the
    only ones left, and ``normalise`` spells each of them out.
"""

from __future__ import annotations

import base64
import copy
import json
import re

from hypothesis import assume, given, strategies as st

from interlingua import Decoder, Options, Transcoder, decode
from interlingua.images import SNIFF_BYTES, UNNAMED_TYPES, sniff_media_type, type_named
from ollama_helpers import JPEG_HEAD, PNG_1PX
from rpt import coalesce, events_as_builtins

REASONING = Options(openai_reasoning_field="reasoning_content")

# -- generated ollama requests -------------------------------------------------

texts = st.text(max_size=20)
names = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)
json_leaves = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False,
                                                                                 allow_infinity=False) | texts
json_values = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
json_objects = st.dictionaries(texts, json_values, max_size=4)
# images whose bytes show their format: ollama reads the bytes, and neither openai nor anthropic
# takes an image that shows none of png, jpeg, gif and webp -- such an image is a recorded loss
# there, "not sent" (rpt/image-media-type, rpt/b-ollama-image-unknown-type)
images = st.one_of(
    st.binary(max_size=30).map(lambda b: PNG_1PX[:16] + b),
    st.binary(max_size=30).map(lambda b: JPEG_HEAD[:8] + b),
).map(lambda b: base64.b64encode(b).decode())
tool_calls = st.lists(st.builds(lambda n, a: {"function": {"name": n, "arguments": a}}, names, json_objects),
                      min_size=1, max_size=3)


def _message(role: str, **optional) -> st.SearchStrategy:
    return st.fixed_dictionaries({"role": st.just(role)}, optional=optional)


messages = st.one_of(
    _message("system", content=texts),
    _message("user", content=texts, images=st.lists(images, max_size=3)),
    _message("assistant", content=texts, thinking=texts, tool_calls=tool_calls),
    _message("tool", content=texts, tool_name=names),
)
tools = st.lists(st.builds(
    lambda n, d, props: {"type": "function", "function": {
        "name": n, "description": d,
        "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in props}}}},
    names, texts, st.lists(names, max_size=3)), max_size=2)
options = st.fixed_dictionaries({}, optional={
    "num_predict": st.integers(1, 4096), "temperature": st.floats(0, 2), "top_p": st.floats(0, 1),
    "top_k": st.integers(1, 100), "stop": st.lists(texts, max_size=2), "seed": st.integers(0, 2**31),
    "num_ctx": st.integers(256, 8192)})
requests = st.fixed_dictionaries(
    {"model": names, "messages": st.lists(messages, max_size=6)},
    optional={"tools": tools, "options": options, "stream": st.booleans(), "keep_alive": st.just("5m") | st.integers(0, 600),
              "format": st.sampled_from(["json", ""]) | json_objects.map(lambda p: {"type": "object", "properties": p}),
              "think": st.booleans() | st.sampled_from(["low", "medium", "high"])})


def shuffle_keys(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffle_keys(v, rng) for v in value]
    return value


def cut(body: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(body) + 1) for p in points})
    return [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]


def transcode(pieces: list[bytes], source: str, target: str, options: Options | None = None):
    """(output bytes, losses)"""
    t = Transcoder(source, target, options=options)
    out = b"".join(t.feed(p) for p in pieces) + t.close()
    return out, list(t.losses)


# -- (a) chunking invariance -----------------------------------------------------


@given(requests, st.lists(st.integers(0, 10**5), max_size=12), st.randoms(use_true_random=False), st.booleans())
def test_chunking_invariance_and_round_trip(request, points, rng, shuffle):
    if shuffle:  # any key order: sorted, reversed, random serialisers
        request = shuffle_keys(request, rng)
    body = json.dumps(request, ensure_ascii=bool(points) and points[0] % 2 == 0).encode()
    pieces = cut(body, points)

    def run(chunks):
        decoder = Decoder("ollama")
        events = [e for c in chunks for e in decoder.feed(c)] + decoder.close()
        out, losses = transcode(chunks, "ollama", "ollama")
        return events_as_builtins(coalesce(events)), out, losses

    whole_events, whole_out, _ = run([body])
    events, out, losses = run(pieces)
    assert events == whole_events
    assert out == whole_out
    assert json.loads(out) == request
    assert losses == []


# An image's media type is read from its first SNIFF_BYTES base64 characters only, so nothing a
# chunk holds past them -- characters that are not base64, a length that is no multiple of 4 -- may
# change it (rpt/ollama-image-sniff-first-chars: the whole body dropped such an image that the body
# fed byte by byte carried as a png).
_TAIL_CHARS = st.sampled_from(list("AQgw+/=") + ["]", "-", "_", " ", "\\n", "%", "é"])
junk_tailed_images = st.builds(
    lambda head, tail: base64.b64encode(head).decode()[:16] + tail,
    st.sampled_from([PNG_1PX, JPEG_HEAD, b"GIF89a" + bytes(10), b"RIFF\x00\x00\x00\x00WEBPVP8 ", bytes(12)]),
    st.lists(_TAIL_CHARS, max_size=12).map("".join))


@given(st.lists(junk_tailed_images, min_size=1, max_size=2), st.lists(st.integers(0, 10**4), max_size=8))
def test_an_images_sniff_does_not_depend_on_the_cut(images, points):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "look", "images": images}]}).encode()
    pieces = cut(body, points)
    for target in ("openai", "anthropic", "ollama"):
        assert transcode(pieces, "ollama", target) == transcode([body], "ollama", target), target
    assert decoded(pieces) == decoded([body])


# A writer may escape any character of an image's base64 (PHP's json_encode writes "/" as "\\/";
# \\u escapes are JSON too): the sniff reads the characters the escapes stand for, so an escaped
# image is named, carried and checked as the plain one is, at any cut, from ollama (the decoder's
# sniff) and into ollama (the encoder's check of a declared type) -- rpt/ollama-image-escaped-base64.
def _written(text: str, escaped: list[bool]) -> str:
    return "".join(("\\/" if c == "/" else "\\u%04x" % ord(c)) if e else c for c, e in zip(text, escaped + [False] * len(text)))


_SNIFFED = [PNG_1PX, JPEG_HEAD, b"GIF89a" + bytes(10), b"RIFF\x00\x00\x00\x00WEBPVP8 ", bytes(12)]


@given(st.sampled_from(_SNIFFED), st.lists(st.booleans(), min_size=40, max_size=40),
       st.lists(st.integers(0, 10**4), max_size=8))
def test_an_escaped_images_sniff_reads_the_characters(raw, escaped, points):
    text = base64.b64encode(raw).decode()
    written = _written(text, escaped)
    ollama = {"model": "m", "messages": [{"role": "user", "content": "look", "images": [text]}]}
    media_type = sniff_media_type(text.encode()) or "image/png"
    anthropic = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": text}}]}]}
    for source, request, targets in (("ollama", ollama, ("openai", "anthropic", "ollama")), ("anthropic", anthropic, ("ollama",))):
        plain = json.dumps(request).encode()
        body = plain.replace(json.dumps(text).encode(), b'"' + written.encode() + b'"')
        assert json.loads(body) == request
        for target in targets:
            out, losses = transcode(cut(body, points), source, target)
            want, want_losses = transcode([plain], source, target)
            assert json.loads(out) == json.loads(want), (source, target)
            assert [(l.path, l.reason) for l in losses] == [(l.path, l.reason) for l in want_losses], (source, target)


def decoded(chunks: list[bytes]) -> list:
    """The coalesced canonical events of an ollama body fed in ``chunks``."""
    return events_as_builtins(coalesce(decode(chunks, source="ollama")))


def test_the_sniff_reads_the_first_sniff_bytes_only():
    png = base64.b64encode(PNG_1PX).decode()
    for text, expected in [(png, "image/png"), (png[:SNIFF_BYTES], "image/png"), (png[:SNIFF_BYTES] + "]", "image/png"),
                           (png[:SNIFF_BYTES] + "]SUhEUg==", "image/png"), (png[:SNIFF_BYTES - 1] + "]", None),
                           ("A" * SNIFF_BYTES + png, None), (png[:12], "image/png"), (png[:3], None)]:
        assert sniff_media_type(text.encode()) == expected, text


# -- (b) round trips through openai ---------------------------------------------------

_INDEX = re.compile(r"\[(\d+)\]")
#: openai top-level keys -> the ollama field they came from or go to
_OPENAI_TO_OLLAMA = {"$.response_format": "$.format", "$.reasoning_effort": "$.think",
                     "$.max_completion_tokens": "$.options.num_predict", "$.max_tokens": "$.options.num_predict",
                     "$.temperature": "$.options.temperature", "$.top_p": "$.options.top_p",
                     "$.stop": "$.options.stop", "$.seed": "$.options.seed"}
_OLLAMA_TO_OPENAI = {v: k for k, v in _OPENAI_TO_OLLAMA.items() if k != "$.max_tokens"}


def remove_path(doc: dict, path: str) -> None:
    """Remove the field at a loss path (``$.a.b``, ``$.messages[3]``); a lost message
    becomes ``None`` so the other indexes stay put. Absent paths are ignored."""
    parts = [p for p in re.split(r"\.|(?=\[)", path[2:]) if p]
    node = doc
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        m = _INDEX.fullmatch(part)
        if m:
            i = int(m.group(1))
            if not isinstance(node, list) or i >= len(node):
                return
            if last:
                node[i] = None
                return
            node = node[i]
        else:
            if not isinstance(node, dict) or part not in node:
                return
            if last:
                del node[part]
                return
            node = node[part]


def _is_id_loss(loss) -> bool:
    return "carry no id" in loss.reason  # regenerated ids: a documented difference, normalised below


def compare(original: dict, back: dict, loss_paths: set[str], normalise) -> None:
    """Equal after removing the lost fields, then normalising (documented differences)."""
    a, b = copy.deepcopy(original), copy.deepcopy(back)
    for path in loss_paths:
        remove_path(a, path)
        remove_path(b, path)
    assert normalise(b) == normalise(a), f"losses: {sorted(loss_paths)}"


def normalise_ollama(body: dict) -> dict:
    """The documented differences of ollama -> openai -> ollama.

    * ``stream`` absent means true in ollama (openai is told ``true``).
    * ``format: ""`` means no format (openai ``{"type": "text"}`` comes back as nothing).
    * ``think: true`` goes to openai as ``medium`` (openai/controls.py) and comes back so.
    * a tool result's ``tool_name`` is what its linked call names (openai links by id, and the
      ollama encoder writes the name of the call the id points to).
    * ``options: {}``, ``tools: []`` and ``images: []`` mean what their absence means.
    * ``format: "json"`` and ``format: {"type": "object"}`` ask the same (JSON mode goes to openai
      as ``json_object`` only when a message says "json", else as a json_schema of any object,
      which comes back as that schema, its name a recorded loss: tests/test_json_mode.py).
    * a tool result without content comes back with ``content: ""`` (openai requires content);
      so does an assistant message with neither content nor tool calls (openai rejects an
      assistant message with nothing in it), and a user or system message with nothing in it.
    """
    body = copy.deepcopy(body)
    body.setdefault("stream", True)
    if body.get("format") == "":
        del body["format"]
    if body.get("format") == {"type": "object"}:
        body["format"] = "json"
    if body.get("think") is True:
        body["think"] = "medium"
    for key, empty in (("options", {}), ("tools", [])):  # empty = absent (lossless extensions)
        if body.get(key) == empty:
            del body[key]
    pending: list[list] = []  # [name, answered] of the last assistant message's calls
    for message in body.get("messages", []):
        if not isinstance(message, dict):
            continue
        if message.get("images") == []:
            del message["images"]
        if message.get("role") == "tool" and "content" not in message:
            message["content"] = ""
        if message.get("role") == "assistant" and "content" not in message and not message.get("tool_calls"):
            message["content"] = ""
        if message.get("role") in ("user", "system") and "content" not in message and not message.get("images"):
            message["content"] = ""  # openai requires a user / system message's content (rpt fx-empty-message-anthropic)
        if "tool_calls" in message:
            pending = [[c["function"]["name"], False] for c in message["tool_calls"]]
        if message.get("role") == "tool":  # linked as the ollama decoder links (module docstring)
            name = message.get("tool_name")
            call = next((c for c in pending if not c[1] and name in (None, c[0])), None)
            if call is not None:
                call[1] = True
                message.setdefault("tool_name", call[0])
    return body


def _after_the_run(messages: list) -> list:
    """User and system messages that came while the batch's calls awaited results, after the
    run of tool messages (in the order they came): where openai puts them (it takes no message
    between the calls and their results: the openai request encoder's ``_waits_for_results``;
    not recorded, only the place moves -- rpt/ollama-user-between-tool-results-openai pins it).
    The round trip cannot give such a request back in its order, and the loss paths of its
    messages name other places on each side: the property leaves these requests out."""
    out: list = []
    held: list = []
    pending: list[list] = []  # [id, name, answered] of the last batch's calls
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        open_batch = any(not answered for _, _, answered in pending)
        if held and role != "tool" and not (role in ("user", "system", "developer") and open_batch):
            out += held
            held = []
        if role in ("user", "system", "developer") and open_batch:
            held.append(message)
            continue
        out.append(message)
        if isinstance(message, dict) and message.get("tool_calls"):
            pending = [[c.get("id"), c["function"]["name"], False] for c in message["tool_calls"]]
        elif role == "tool":
            # (as the ollama decoder links it: by its tool_call_id when given -- an id no call
            # has answers none --, else the first call not answered with its tool_name)
            call_id, name = message.get("tool_call_id"), message.get("tool_name")
            call = next((c for c in pending if not c[2] and (c[0] == call_id if call_id is not None
                                                             else name in (None, c[1]))), None)
            if call is not None:
                call[2] = True
    return out + held


@given(requests)
def test_ollama_openai_ollama_keeps_what_both_carry(request):
    messages = request.get("messages")
    assume(not isinstance(messages, list) or _after_the_run(messages) == messages)
    body = json.dumps(request).encode()
    openai_body, losses1 = transcode([body], "ollama", "openai", REASONING)
    back, losses2 = transcode([openai_body], "openai", "ollama", REASONING)
    paths = {l.path for l in losses1 if not _is_id_loss(l)}
    paths |= {_OPENAI_TO_OLLAMA.get(l.path, l.path) for l in losses2 if not _is_id_loss(l)}
    compare(request, json.loads(back), paths, normalise_ollama)


# -- openai -> ollama -> openai ----------------------------------------------------------

# images openai takes: their bytes are png or jpeg (openai reads the bytes: "You uploaded an
# unsupported image"), whatever the label says; bytes that show no format are no image openai
# takes, and ollama -> openai drops them with a loss (rpt/image-media-type)
_MEDIA = st.one_of(
    st.binary(max_size=24).map(lambda b: ("image/png", PNG_1PX[:16] + b)),
    st.binary(max_size=24).map(lambda b: ("image/jpeg", JPEG_HEAD[:8] + b)),
    st.binary(max_size=24).map(lambda b: ("application/octet-stream", PNG_1PX[:16] + b)),  # bytes say png
    st.binary(max_size=24).map(lambda b: ("image/webp", JPEG_HEAD[:8] + b)),  # bytes say jpeg, not webp
)
openai_parts = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda m: {"type": "image_url", "image_url": {
        "url": f"data:{m[0]};base64,{base64.b64encode(m[1]).decode()}"}}, _MEDIA),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": "https://h/" + u}}, names),
)
def _text_after_image(parts: list) -> bool:
    kinds = [p["type"] for p in parts if not (p["type"] == "image_url" and "https:" in p["image_url"]["url"])]
    return "image_url" in kinds and "text" in kinds[kinds.index("image_url"):]


openai_calls = st.lists(st.builds(
    lambda i, n, a: {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}},
    st.integers(0, 99), names, json_objects), min_size=1, max_size=3, unique_by=lambda c: c["id"])
openai_messages = st.one_of(
    st.builds(lambda t: {"role": "system", "content": t}, texts),
    st.builds(lambda t: {"role": "developer", "content": t}, texts),
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    # not only https images: a message ollama cannot carry at all would shift the indexes;
    # no text after an image: it goes on in a following ollama message, which shifts them
    # too (pinned by rpt/mixed-content and rpt/image-before-text instead)
    st.builds(lambda p: {"role": "user", "content": p}, st.lists(openai_parts, min_size=1, max_size=4).filter(
        lambda parts: any("https:" not in json.dumps(p) for p in parts) and not _text_after_image(parts))),
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(lambda t, c: {"role": "assistant", "content": t, "tool_calls": c}, st.none() | texts, openai_calls),
    st.builds(lambda i, t: {"role": "tool", "tool_call_id": f"call_{i}", "content": t}, st.integers(0, 99), texts),
)
openai_requests = st.fixed_dictionaries(
    {"model": names, "messages": st.lists(openai_messages, max_size=6)},
    optional={"temperature": st.floats(0, 2), "top_p": st.floats(0, 1), "seed": st.integers(0, 2**31),
              "max_completion_tokens": st.integers(1, 4096),
              "stop": texts | st.lists(texts, max_size=2), "stream": st.booleans(),
              "reasoning_effort": st.sampled_from(["none", "minimal", "low", "medium", "high"]),
              "response_format": st.sampled_from([{"type": "text"}, {"type": "json_object"}]),
              "tool_choice": st.sampled_from(["auto", "none", "required"]),
              "tools": tools}).flatmap(
    # the legacy max_tokens instead, sometimes (both at once: rpt/max-tokens-twice)
    lambda r: st.sampled_from([r, {("max_tokens" if k == "max_completion_tokens" else k): v
                                   for k, v in r.items()}]))


def normalise_openai(body: dict) -> dict:
    """The documented differences of openai -> ollama -> openai.

    * tool-call ids are regenerated (``call_ollama_<message>_<n>``; the id loss is
      recorded): each call is renamed ``id0``, ``id1``... in order, and a result names
      the latest call with its id.
    * ``max_tokens`` is written ``max_completion_tokens``; a ``stop`` string is a list.
    * ``stream`` absent means false; ``response_format`` text means none.
    * one text part is the same as a string content; ``content: null`` is absent.
    * a stream asks for usage (``stream_options.include_usage``), as every request into openai does.
    * ``n: 1``, ``parallel_tool_calls: true``, ``tool_choice: "auto"`` ask for what ollama does
      anyway: absent (no loss; ``dialects/ollama/controls.py`` ``_OLLAMAS_OWN``).
    * an image's data URL labelled with no type (``application/octet-stream``) is labelled with
      the type its bytes show: ollama reads the bytes, and the label declared nothing to lose.
    * ``json_object`` and a json_schema of any object named ``response`` ask the same: ollama's
      ``"json"`` comes back as ``json_object`` only when a message says "json"
      (tests/test_json_mode.py).
    """
    body = copy.deepcopy(body)
    if body.get("response_format") == {"type": "json_schema", "json_schema": {"name": "response", "schema": {"type": "object"}}}:
        body["response_format"] = {"type": "json_object"}
    for key, default in (("n", 1), ("parallel_tool_calls", True), ("tool_choice", "auto")):
        if key in body and body[key] == default and type(body[key]) is type(default):
            del body[key]
    if body.get("stream") is True:
        body.setdefault("stream_options", {"include_usage": True})
    if "max_tokens" in body:
        body.setdefault("max_completion_tokens", body.pop("max_tokens"))
    if isinstance(body.get("stop"), str):
        body["stop"] = [body["stop"]]
    body.setdefault("stream", False)
    if body.get("response_format") == {"type": "text"}:
        del body["response_format"]
    if body.get("tools") == []:
        del body["tools"]
    ids: dict[str, str] = {}  # an id -> the name of the latest call that has it (results link to it)
    count = 0

    for message in body["messages"]:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            url = part.get("image_url", {}).get("url", "") if part.get("type") == "image_url" else ""
            label, _, data = url[5:].partition(";base64,") if url.startswith("data:") else ("", "", "")
            if type_named(label) in UNNAMED_TYPES and sniff_media_type(data[:SNIFF_BYTES].encode()):
                part["image_url"]["url"] = f"data:{sniff_media_type(data[:SNIFF_BYTES].encode())};base64,{data}"
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            message["content"] = content[0]["text"]
        if message.get("content", 0) is None:
            del message["content"]
        for call in message.get("tool_calls", []):
            ids[call["id"]] = call["id"] = f"id{count}"
            count += 1
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        if "tool_call_id" in message:
            message["tool_call_id"] = ids.get(message["tool_call_id"], "unknown")
    return body


@given(openai_requests)
def test_openai_ollama_openai_keeps_what_both_carry(request):
    # (a message between the calls and their tool messages: openai refuses it, and the way back
    # puts it after them -- see ``_after_the_run``)
    assume(_after_the_run(request["messages"]) == request["messages"])
    body = json.dumps(request).encode()
    ollama_body, losses1 = transcode([body], "openai", "ollama", REASONING)
    back, losses2 = transcode([ollama_body], "ollama", "openai", REASONING)
    paths = {_OLLAMA_TO_OPENAI.get(l.path, l.path) for l in losses1 + losses2 if not _is_id_loss(l)}
    compare(request, json.loads(back), paths, normalise_openai)
