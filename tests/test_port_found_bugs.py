"""Request-pipeline bugs the native port found (helper b, 2026-12-01), each pinned by its rpt
scenario (rpt/b-*) and tested here by class, on both backends (the ``backend`` fixture)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings, strategies as st

import fuzz
from interlingua import Options, TranscodeError, Transcoder

#: the characters that break a value spliced into output text unescaped, or split as a path
_HOSTILE = st.sampled_from(['"', "\\", ".", ":", ",", ";", "[", "]", "{", "}", "$", " ", "\x00", "\x1f", "\n",
                            "\ud800", "\udc00", "\u2028", "é", "😀", "a", "b", "/"])
hostile_text = st.lists(_HOSTILE, max_size=8).map("".join)
#: the ``backend`` fixture only sets which backend the Transcoder constructor picks: the same for every example
per_backend = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def _transcode(source: str, target: str, body: bytes, **options) -> tuple[bytes, list]:
    t = Transcoder(source, target, kind="request", options=Options(**options))
    out = t.feed(body) + t.close()
    return out, list(t.losses)


def _body(value) -> bytes:
    return fuzz.dump(value).encode("utf-8")


# -- 1. a decoded value spliced into output text is escaped -------------------------------------

def _image(source: str, media_type: str):
    if source == "anthropic":
        return {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": "AAAA"}}]}]}
    return {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,AAAA"}}]}]}


@per_backend
@given(media_type=hostile_text, source=st.sampled_from(["anthropic", "openai"]))
@example(media_type="\ud800\udc00", source="anthropic")  # (the deep profile's find: a pair, escaped)
def test_any_media_type_makes_a_valid_openai_data_url(backend, media_type, source):
    """openai carries a base64 image's media type inside its data URL, a JSON string: whatever
    the type holds (quotes, backslashes, controls, a lone surrogate), the output is strict JSON
    and the URL says that type (or the source's value-as-text rule rejects it, typed)."""
    if source == "openai" and "," in media_type:
        media_type = media_type.replace(",", "")  # a data URL's type ends at its first comma
    try:
        out, _ = _transcode(source, "openai", _body(_image(source, media_type)))
    except TranscodeError:
        return
    url = fuzz.strict_json(out)["messages"][0]["content"][0]["image_url"]["url"]
    # (as JSON reads the type: two surrogates that make a pair, escaped, are the one character)
    assert url == json.loads(json.dumps(f"data:{media_type};base64,AAAA"))


# -- 2. a tool message's link to its call, whatever its member order ---------------------------

_TOOL_MESSAGE = {"role": "tool", "content": "here", "images": ["iVBORw0KGgoAAAANSUhEUg=="], "thinking": "hm",
                 "tool_name": "shot", "tool_call_id": "c1"}


@per_backend
@given(order=st.permutations(list(_TOOL_MESSAGE)), cut=st.integers(1, 64))
def test_a_tool_message_keeps_its_link_in_any_member_order(backend, order, cut):
    """``tool_name`` / ``tool_call_id`` may come after the images (Go's order) or the role
    (sorted keys): the result carries them, into ollama and into openai, however it is cut."""
    message = {key: _TOOL_MESSAGE[key] for key in order}
    body = json.dumps({"model": "m", "messages": [
        {"role": "user", "content": "look"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "shot", "arguments": {}}}]},
        message]}).encode()
    t = Transcoder("ollama", "ollama")
    out = b"".join(t.feed(body[i:i + cut]) for i in range(0, len(body), cut)) + t.close()
    result = json.loads(out)["messages"][2]
    assert (result["tool_name"], result["tool_call_id"]) == ("shot", "c1")
    assert not [loss for loss in t.losses if "tool_" in loss.path]
    t = Transcoder("ollama", "openai")
    out = t.feed(body) + t.close()
    assert json.loads(out)["messages"][2]["tool_call_id"] == "c1"


# -- 3. openai -> openai keeps a tool call's extra members; 5. each loss recorded once ----------

_KEYS = st.text(st.sampled_from("abxyz_.:\"\\é"), min_size=1, max_size=4).filter(
    lambda k: k not in ("id", "type", "function", "name", "arguments"))
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), hostile_text, st.lists(st.integers(0, 3), max_size=2))


@per_backend
@given(call_extra=st.dictionaries(_KEYS, _VALUES, max_size=2), function_extra=st.dictionaries(_KEYS, _VALUES, max_size=2),
       sort_keys=st.booleans())
@example(call_extra={}, function_extra={":": "\ud800\udc00"}, sort_keys=False)  # (deep profile: a pair, escaped)
def test_openai_tool_call_members_come_back_for_openai(backend, call_extra, function_extra, sort_keys):
    """Members of a history tool call and of its function that openai's client does not
    declare come back where they were for openai, in either key order; for another target
    each is a recorded loss (a null one says nothing: none), and no loss is recorded twice."""
    call = {"id": "c1", "type": "function", **call_extra,
            "function": {"name": "f", "arguments": "{}", **function_extra}}
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]},
                                       {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
    wire = json.dumps(body, sort_keys=sort_keys).encode()
    out, losses = _transcode("openai", "openai", wire)
    assert json.loads(out)["messages"][1]["tool_calls"] == json.loads(json.dumps([call]))  # (as JSON reads it)
    assert not losses
    for target in ("anthropic", "ollama"):
        _, losses = _transcode("openai", target, wire)
        reasons = [loss.reason for loss in losses if loss.path == "$.messages[1]"]
        said = [any(value is not None for value in extra.values()) for extra in (call_extra, function_extra)]
        assert len(reasons) == len(set(reasons)) == sum(said), reasons


#: one tool call with the fields each source carries beside id, name and arguments
_FOREIGN_CALLS = {
    "ollama": {"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [
        {"function": {"index": 0, "name": "f", "arguments": {}, "q": 1}, "r": 2}]},
        {"role": "tool", "content": "ok", "tool_name": "f"}]},
    "openai": {"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "custom", "function": {"name": "f", "arguments": "{}", "q": 1}, "r": 2}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]},
    "anthropic": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "go"}, {
        "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {},
                                          "cache_control": {"type": "ephemeral"}, "q": 1}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]},
}


def test_a_tool_call_field_is_lost_once(backend):
    """Every field of a tool call a target cannot carry is one loss record -- early (the
    call's first fragment) or late (sorted keys: its last), never both."""
    for source, body in _FOREIGN_CALLS.items():
        for sort_keys in (False, True):
            for target in ("openai", "anthropic", "ollama"):
                _, losses = _transcode(source, target, json.dumps(body, sort_keys=sort_keys).encode())
                records = [(loss.path, loss.reason) for loss in losses]
                assert len(records) == len(set(records)), (source, target, sort_keys, records)


# -- 4. the ollama encoder: a block with no ollama member is a loss, role attr or not ------------

def _encode_events(backend: str, source: str, target: str, events: list) -> tuple[bytes, list]:
    """A request encoder fed canonical events (what a transform or the turn compiler hands it)."""
    if backend == "native":
        from interlingua import _native
        per_event, tail, losses, error = _native.encode_events(source, target, "request", events, {})
    else:
        from native.differential import python_encode_events
        per_event, tail, losses, error = python_encode_events(source, target, "request", events)
    assert error is None, error
    return b"".join(per_event) + tail, [tuple(loss)[1:] for loss in losses]


def test_an_ollama_block_without_a_member_is_lost_with_a_role_too(backend):
    """Documents, audio, video and citations have no ollama member: a recorded loss whether
    or not the block carries a ``role`` (a producer of events may give one); it was dropped
    silently when it did. (No wire source makes such a block: the decoders give these
    sections no role attribute, so this is pinned on events, not by an rpt scenario.)"""
    from interlingua.canonical import Block, End, MessagesEnd, Section, SystemEnd
    for section in (Section.USER_DOCUMENT, Section.USER_AUDIO, Section.USER_VIDEO, Section.CITATIONS):
        for role in (None, "user", "assistant", "system", "critic"):
            attrs = {"in_parts": True} if role is None else {"in_parts": True, "role": role}
            events = [SystemEnd(), Block(Section.USER_TEXT, 0, b"hi"), Block(section, 1, b"AAAA", attrs=attrs),
                      Block(Section.USER_TEXT, 2, b"more"), MessagesEnd(), End()]
            out, losses = _encode_events(backend, "anthropic", "ollama", events)
            assert [path for path, _ in losses] == ["$.messages[1]"], (section, role, losses)
            assert [m["content"] for m in json.loads(out)["messages"]] == ["hi", "more"]


# -- 6. a member key holding "." is never split -------------------------------------------------

@per_backend
@given(key=st.text(st.sampled_from("ab.é\\\"$[]"), min_size=1, max_size=6).filter(
           lambda k: k not in ("role", "content", "name", "tool_calls", "tool_call_id", "images", "thinking",
                               "tool_name", "refusal", "function_call", "audio", "reasoning_content",
                               "reasoning")),
       first=st.booleans(), dialect=st.sampled_from(["openai", "anthropic", "ollama"]))
def test_a_message_member_comes_back_under_its_whole_key(backend, key, first, dialect):
    """An undeclared message member comes back to its own dialect under its key, whatever
    the key holds (it was written under the part after its last ``.``), before or after the
    message's first block."""
    message = {key: 1, "role": "user", "content": "hi"} if first else {"role": "user", "content": "hi", key: 1}
    body = {"model": "m", "messages": [message]}
    if dialect == "anthropic":
        body["max_tokens"] = 5
    out, _ = _transcode(dialect, dialect, json.dumps(body).encode())
    assert fuzz.strict_json(out)["messages"][0][key] == 1


# -- 7. only TranscodeError comes out of the request pipeline; 8. the error does not depend on the cut

#: a string value or key with these in it; ``\x01`` / ``\q`` / ``\xff`` are spliced in as raw bytes
_BAD_BYTES = {"@CTRL@": b"\x01", "@ESC@": b"\\q", "@UTF8@": b"\xff"}
_MUTANT_TEXT = st.one_of(hostile_text, st.tuples(hostile_text, st.sampled_from(sorted(_BAD_BYTES)), hostile_text)
                         .map("".join))


def _raw(body: bytes) -> bytes:
    for marker, raw in _BAD_BYTES.items():
        body = body.replace(marker.encode(), raw)
    return body


class _JsonOnly:
    """A Transcoder judged on JSON and errors only (as tests/test_fuzz.py's ``JsonOnly``): the
    target-API rules are tests/validity.py's layer, and odd inputs (an empty tool name) make
    outputs those rules refuse. Either backend."""

    def __init__(self, *args, **kwargs) -> None:
        self._t = Transcoder(*args, **kwargs)

    def _forget(self) -> None:
        getattr(self._t, "__dict__", {}).pop("_validity", None)

    def feed(self, data: bytes) -> bytes:
        out = self._t.feed(data)
        self._forget()
        return out

    def close(self) -> bytes:
        self._forget()
        return self._t.close()

    def pending_output(self) -> bytes:
        return self._t.pending_output()


@per_backend
@given(data=st.data(), source=st.sampled_from(["openai", "anthropic", "ollama"]))
def test_hostile_text_anywhere_gives_valid_output_or_a_typed_error(backend, data, source):
    """Any string value or member key of a request replaced by hostile text (quotes,
    backslashes, dots, colons, controls, lone surrogates; or a raw bad byte): every target
    gives strict JSON or a TranscodeError subclass naming the source, an offset and a path,
    the same whole and cut (tests/fuzz.py's properties). A json.JSONDecodeError, a
    UnicodeEncodeError -- any other exception -- fails here."""
    seeds = [s for s in fuzz.seeds_of(source, "request") if len(s.body) < 1500]
    seed = data.draw(st.sampled_from(seeds), "seed")
    root = fuzz.parse(seed.body)
    spots = [p for p in fuzz.paths(root) if p]
    path = data.draw(st.sampled_from(spots), "path")
    text = data.draw(_MUTANT_TEXT, "text")
    parent, step = fuzz._parent(root, path)
    if not isinstance(parent, fuzz.Obj):
        parent[step] = text
    elif data.draw(st.booleans(), "as key"):
        parent[step][0] = text
    else:
        parent[step][1] = text
    body = _raw(fuzz.dump(root).encode("utf-8"))
    points = data.draw(st.lists(st.integers(0, len(body)), max_size=4), "cuts")
    for target in ("openai", "anthropic", "ollama"):
        fuzz.check(_JsonOnly, source, target, "request", body, points)


def test_a_tool_name_that_must_be_renamed_with_a_lone_surrogate_is_refused_typed(backend):
    """A tool name with an escaped lone surrogate has no wire name (no hash of it):
    LoneSurrogateError, as for any value read as text (it was a UnicodeEncodeError). (A
    tool_choice naming it waits for the tools sent, so the tool's own name raises first.)"""
    from interlingua import LoneSurrogateError
    bodies = {"openai": b'{"model":"m","messages":[{"role":"user","content":"hi"}],'
                        b'"tool_choice":{"type":"function","function":{"name":"a\\ud800"}},'
                        b'"tools":[{"type":"function","function":{"name":"a\\ud800"}}]}',
              "anthropic": b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],'
                           b'"tool_choice":{"type":"tool","name":"a\\ud800"},'
                           b'"tools":[{"name":"a\\ud800","input_schema":{"type":"object"}}]}'}
    for source, body in bodies.items():
        for target in ("openai", "anthropic"):
            if target == source:
                continue
            try:
                _transcode(source, target, body)
            except LoneSurrogateError as exc:
                assert exc.dialect == source and exc.offset is not None
            else:
                raise AssertionError(f"{source} -> {target}: no error")


# -- 10. every number field the official clients declare is type-checked -------------------------

def _number_fields(params) -> set[str]:
    import types
    import typing

    def number(t) -> bool:
        if typing.get_origin(t) in (typing.Union, types.UnionType):
            return any(number(a) for a in typing.get_args(t))
        return t in (int, float)
    return {k for k, t in typing.get_type_hints(params).items() if number(t)}


def test_every_declared_number_field_is_type_checked(backend):
    """A string where the official client declares a number is a SchemaError at that field
    (openai's temperature and top_p sat inside a comment of fields.py: never checked)."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsBase
    from anthropic.types.message_create_params import MessageCreateParamsBase
    from interlingua import SchemaError
    base = {"openai": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            "anthropic": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}}
    fields = {"openai": _number_fields(CompletionCreateParamsBase), "anthropic": _number_fields(MessageCreateParamsBase)}
    assert {"temperature", "top_p"} <= fields["openai"]
    for source, names in fields.items():
        for name in sorted(names):
            body = json.dumps({**base[source], name: "7"}).encode()
            try:
                _transcode(source, source, body)
            except SchemaError as exc:
                assert exc.path == f"$.{name}", (source, name, exc)
            else:
                raise AssertionError(f"{source} {name}: a string taken")


# -- 11. anthropic gets no base64 image without a media type -----------------------------------------

def test_an_image_without_a_media_type_is_lost_for_anthropic(backend):
    """ollama's image whose bytes show no png/jpeg/gif/webp has no media type; anthropic requires
    one: a recorded loss, not an image anthropic rejects. (A png's is sniffed and kept.)"""
    for data, kept in (("AAAA", False), ("iVBORw0KGgoAAAANSUhEUg==", True)):
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "what?", "images": [data]}]}).encode()
        out, losses = _transcode("ollama", "anthropic", body)
        blocks = json.loads(out)["messages"][0]["content"]
        images = [b for b in blocks if b["type"] == "image"]
        assert bool(images) == kept and (kept or [loss.path for loss in losses] == ["$.messages[0]"])
        for image in images:
            assert image["source"]["media_type"] == "image/png"


# -- 9. after an anthropic replay, the decoder's offset is the body's again ----------------------

def test_after_a_replay_the_offset_is_in_the_body(monkeypatch):
    """Sorted keys hold a block's members until its ``type`` and replay them through a tokenizer
    of the held copy, whose offsets start at 0: once the replay is done, ``Decoder.at`` (where an
    error raised past the tokenizer -- a budget, at a chunk's end -- is reported) is the body's
    token again, not an offset inside the copy. (Python's internals: the native decoder restores
    its ``at`` the same way, anthropic/request.rs ``replay``; no wire input was found whose error
    shows the difference.)"""
    from interlingua import backend as backends
    monkeypatch.setattr(backends, "BACKEND", "python")
    body = json.dumps({"max_tokens": 5, "messages": [{"content": [
        {"source": {"data": "iVBORw0KGgo=", "media_type": "image/png", "type": "base64"}, "type": "image"}],
        "role": "user"}], "model": "m"}).encode()
    end_of_type = body.index(b'"image"') + len(b'"image"')
    t = Transcoder("anthropic", "openai")
    t.feed(body[:end_of_type])  # the replay runs when the type's value is read
    assert t._front.decoder.at == body.index(b'"image"')
