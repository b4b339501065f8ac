"""OpenAI requests: the installed client is the authority (its signature, its bytes, its types)."""

from __future__ import annotations

import base64
import inspect
import json

import pytest
from hypothesis import given, strategies as st
from openai.resources.chat.completions import Completions

from interlingua import Decoder, SchemaError, Transcoder, decode
from interlingua.dialects.openai import controls

from official_clients import openai_request
from rpt import coalesce


def test_every_create_parameter_is_classified():
    """A parameter added by a future client release fails here until it is classified."""
    params = set(inspect.signature(Completions.create).parameters) - {"self"}
    known = set(controls.CONTROLS) | controls.EXTENSIONS | controls.STRUCTURAL | controls.CLIENT_ONLY
    assert params - known == set(), "classify these in dialects/openai/controls.py"


capture_openai = openai_request


CLIENT_REQUESTS = {
    "plain": dict(model="gpt-4o", messages=[{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "Hi"}]),
    "tools": dict(model="gpt-4o", messages=[
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "w", "arguments": '{"c": "Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "w", "arguments": '{"c": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_2", "content": "21C"}],
        tools=[{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}],
        tool_choice="required", parallel_tool_calls=True, max_completion_tokens=50),
    "images": dict(model="gpt-4o", messages=[{"role": "user", "content": [
        {"type": "text", "text": "What?"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg==", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]),
    "document": dict(model="gpt-4o", messages=[{"role": "user", "content": [
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "x.pdf"}},
        {"type": "text", "text": "Summarise"}]}]),
    "controls": dict(model="gpt-4o", messages=[{"role": "user", "content": "x"}], temperature=0.3, top_p=0.8,
                     stop=["a"], seed=1, user="u", reasoning_effort="high", n=1,
                     response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}),
}


@pytest.mark.parametrize("name", CLIENT_REQUESTS)
def test_client_bodies_round_trip_and_validate(name):
    body = capture_openai(**CLIENT_REQUESTS[name])
    transcoder = Transcoder("openai", "openai")
    out = b"".join(transcoder.feed(body[i:i + 5]) for i in range(0, len(body), 5)) + transcoder.close()
    assert json.loads(out) == json.loads(body)
    assert transcoder.losses == []
    # the output is what the client itself would send: re-send it through the client
    resent = capture_openai(**json.loads(out))
    assert json.loads(resent) == json.loads(body)


def test_output_begins_before_input_ends():
    body = capture_openai(model="m", messages=[{"role": "user", "content": "x" * 100000}])
    transcoder = Transcoder("openai", "openai")
    first = transcoder.feed(body[: len(body) // 2])
    assert first.startswith(b'{"model":"m","messages":[{"role":"user","content":"xxx')


def test_reorder_buffer_holds_only_for_content_before_role():
    in_order = b'{"model":"m","messages":[{"role":"user","content":"' + b"y" * 5000 + b'"}]}'
    sorted_keys = b'{"messages":[{"content":"' + b"y" * 5000 + b'","role":"user"}],"model":"m"}'
    t = Transcoder("openai", "openai")
    t.feed(in_order[:100])
    t.feed(in_order[100:])
    t.close()
    assert t.reorder.high_water == 0
    t = Transcoder("openai", "openai")
    for i in range(0, len(sorted_keys), 1000):
        t.feed(sorted_keys[i:i + 1000])
    t.close()
    assert t.reorder.high_water_by_reason.get("openai:content-before-role", 0) >= 4000


# -- properties ---------------------------------------------------------------

texts = st.text(max_size=30)
parts = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda d, det: {"type": "image_url", "image_url": {"url": "data:image/png;base64," + d, "detail": det}},
              st.from_regex(r"[A-Za-z0-9+/]{0,40}", fullmatch=True), st.sampled_from(["low", "high", "auto"])),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": "https://h/" + u}},
              st.from_regex(r"[a-z]{1,10}", fullmatch=True)),
)
tool_calls = st.lists(st.builds(
    lambda i, n, a: {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}},
    st.integers(0, 99), st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)), min_size=1, max_size=3)
messages = st.one_of(
    st.builds(lambda t: {"role": "system", "content": t}, texts),
    st.builds(lambda t: {"role": "developer", "content": t}, texts),
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda p: {"role": "user", "content": p}, st.lists(parts, min_size=1, max_size=4)),
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(lambda c: {"role": "assistant", "content": None, "tool_calls": c}, tool_calls),
    st.builds(lambda i, t: {"role": "tool", "tool_call_id": f"call_{i}", "content": t}, st.integers(0, 99), texts),
    st.builds(lambda t, n: {"role": "user", "content": t, "name": n}, texts, st.from_regex(r"[a-z]{1,6}", fullmatch=True)),
)
requests = st.builds(lambda m, model, extra: {"messages": m, "model": model, **extra},
                     st.lists(messages, max_size=6), st.text(min_size=1, max_size=10),
                     st.fixed_dictionaries({}, optional={"temperature": st.floats(0, 2), "stop": st.lists(texts, max_size=2),
                                                         "max_tokens": st.integers(1, 1000), "unknown_x": st.integers()}))


def _shuffle_keys(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffle_keys(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffle_keys(v, rng) for v in value]
    return value


@given(requests, st.lists(st.integers(0, 10**5), max_size=10), st.randoms(use_true_random=False), st.booleans())
def test_chunking_invariance_and_round_trip(request, points, rng, shuffle):
    if shuffle:  # any key order: sorted, reversed, random serialisers
        request = _shuffle_keys(request, rng)
    body = json.dumps(request, ensure_ascii=bool(points) and points[0] % 2 == 0).encode()
    cuts = sorted({p % (len(body) + 1) for p in points})
    chunks = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]

    def run(pieces):
        decoder = Decoder("openai")
        events = [e for c in pieces for e in decoder.feed(c)] + decoder.close()
        t = Transcoder("openai", "openai")
        out = b"".join(t.feed(c) for c in pieces) + t.close()
        return coalesce(events), out

    whole_events, whole_out = run([body])
    events, out = run(chunks)
    assert events == whole_events
    assert out == whole_out
    assert json.loads(out) == request


@pytest.mark.parametrize("key", ["url", "file_data"])
def test_a_data_url_header_reads_the_same_at_every_cut(key):
    """Where the 256 bytes held of a media URL end (request.py ``_DATA_URL_PREFIX_LIMIT``) the header
    is a data URL's only if its comma came within them: whole, byte by byte or cut anywhere in it
    (rpt/openai-data-url-long-header)."""
    def events(pieces):
        return coalesce(decode(pieces, source="openai"))

    mime = "image/" if key == "url" else "application/"
    for size in range(250, 263):  # the header "data:<mime>x...x;base64", 250 to 262 bytes
        url = f"data:{mime}{'x' * (size - len('data:' + mime + ';base64'))};base64,iVBORw0KGgo="
        part = ({"type": "image_url", "image_url": {"url": url}} if key == "url"
                else {"type": "file", "file": {"file_data": url, "filename": "f.pdf"}})
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": [part]}]}).encode()
        start = body.index(b"data:")
        whole = events([body])
        assert events([body[i:i + 1] for i in range(len(body))]) == whole, size
        for at in range(start + 245, start + len(url) + 1):
            assert events([body[:at], body[at:]]) == whole, (size, at)
        media = [e for e in whole if getattr(e, "attrs", None) and "source" in e.attrs]
        assert (media[0].attrs.get("media_type") is not None) == (size <= 256), size


_FILES = [(b"%PDF-1.4\n%\xc7\xec\x8f\xa2\n", "application/pdf"), (b"\x89PNG\r\n\x1a\n" + bytes(8), "image/png"),
          (bytes.fromhex("ffd8ffe000104a4649460001"), "image/jpeg"), (b"GIF89a" + bytes(10), "image/gif"),
          (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"), (b"hello world\n", None), (b"%PD", None)]


@pytest.mark.parametrize("raw,media_type", _FILES)
def test_a_raw_base64_files_type_is_its_first_bytes_at_every_cut(raw, media_type):
    """A file_data without a data URL is named by its first decoded bytes (``images.sniff_file_type``),
    read from its first 16 characters, escaped or not, wherever the string is cut (what anthropic
    gets of each: rpt/request-openai-raw-base64-files)."""
    text = base64.b64encode(raw).decode()
    for written in (text, "".join("\\u%04x" % ord(c) if n % 3 == 0 else c.replace("/", "\\/")
                                  for n, c in enumerate(text))):
        body = (b'{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"'
                + written.encode() + b'","filename":"f"}}]}]}')
        whole = coalesce(decode([body], source="openai"))
        assert [e.attrs.get("media_type") for e in whole if getattr(e, "attrs", None) and "source" in e.attrs] \
            == [media_type]
        assert coalesce(decode([body[i:i + 1] for i in range(len(body))], source="openai")) == whole
        for at in range(len(body)):
            assert coalesce(decode([body[:at], body[at:]], source="openai")) == whole, at


#: data URL labels: those that name no type (``images.UNNAMED_TYPES``, any case, escaped or not) and
#: some that name one (kept whatever the bytes are: the sender said what it is)
_UNNAMED_LABELS = ["application/octet-stream", "binary/octet-stream", "Application/Octet-Stream",
                   "application\\/octet-stream"]
_NAMED_LABELS = ["application/pdf", "text/plain", "", "application/x-octet-stream"]


@pytest.mark.parametrize("label", _UNNAMED_LABELS + _NAMED_LABELS)
@pytest.mark.parametrize("raw,media_type", _FILES)
def test_a_file_data_url_labelled_with_no_type_is_named_by_its_bytes_at_every_cut(label, raw, media_type):
    """A file's data URL labelled ``application/octet-stream`` (or ``binary/octet-stream``) has the type
    its first 16 characters show, read past the comma wherever the string is cut, and keeps its label
    as ``data_url_type`` (openai gets the URL back as it came); a label that names a type stays the
    type; an image_url is not named so (its targets read the bytes themselves). What anthropic gets
    of each: rpt/request-openai-octet-stream-files."""
    text = base64.b64encode(raw).decode()
    decoded_label = label.replace("\\/", "/")
    unnamed = label in _UNNAMED_LABELS and media_type is not None
    for written in (text, text.replace("/", "\\/")):
        url = f"data:{label};base64,{written}"
        for part in ({"type": "file", "file": {"file_data": "URL", "filename": "f"}},
                     {"type": "image_url", "image_url": {"url": "URL"}}):
            body = json.dumps({"model": "m", "messages": [{"role": "user", "content": [part]}]}).encode()
            body = body.replace(b"URL", url.encode())
            whole = coalesce(decode([body], source="openai"))
            [media] = [e for e in whole if getattr(e, "attrs", None) and "source" in e.attrs]
            named = unnamed and "file" in part
            assert media.attrs["media_type"] == (media_type if named else decoded_label)
            assert media.attrs.get("data_url_type") == (decoded_label if named else None)
            for at in range(body.index(b"data:"), len(body)):
                assert coalesce(decode([body[:at], body[at:]], source="openai")) == whole, at
            t = Transcoder("openai", "openai")
            assert json.loads(t.feed(body) + t.close()) == json.loads(body)  # (the URL as it came)


@pytest.mark.parametrize("label", _UNNAMED_LABELS + ["image/png", "image/jpeg", "image/gif"])
def test_an_image_url_label_that_names_no_type_is_no_loss_into_ollama(label):
    """ollama reads an image's bytes (it has no media type field): a declared type other than what
    the bytes show is a recorded loss, but a label that names no type (``application/octet-stream``)
    declared nothing to lose -- as a file so labelled, which is named by its bytes."""
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
    url = f"data:{label};base64,{png}"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "URL"}}]}]}).encode().replace(b"URL", url.encode())
    t = Transcoder("openai", "ollama")
    out = json.loads(t.feed(body) + t.close())
    assert out["messages"][0]["images"] == [png]
    media = [loss.reason for loss in t.losses if "media type" in loss.reason]
    declared = label.replace("\\/", "/").lower()
    names_another = declared != "image/png" and declared not in ("application/octet-stream", "binary/octet-stream")
    assert len(media) == names_another, t.losses


def test_a_file_type_is_a_pdf_or_an_image():
    from interlingua.images import sniff_file_type, sniff_media_type
    for raw, media_type in _FILES:
        b64 = base64.b64encode(raw)
        assert sniff_file_type(b64) == media_type
        assert sniff_media_type(b64) == (None if media_type == "application/pdf" else media_type)  # (images only)


#: a request's stream_options -> Transcoder.asks_stream_usage (as ``value.get("include_usage") is True``)
STREAM_OPTIONS = [
    (None, False), ('{"include_usage":true}', True), ('{"include_usage":false}', False),
    ('{}', False), ('{"include_obfuscation":false,"include_usage":true}', True), ('null', False),
]


@pytest.mark.parametrize("target", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("member", ['"include_usage":1', '"include_usage":"true"', '"include_obfuscation":0'])
def test_stream_options_of_another_type_are_the_sources_error(member, target):
    """The client declares both members booleans (the API answers 400): a SchemaError at the
    member's path, at the field's first byte (dialects/fields.MEMBER_FIELDS), at every cut."""
    body = ('{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{'
            + member + "}}").encode()
    name = member.split('"')[1]
    for size in (1, 7, len(body)):
        t = Transcoder("openai", target)
        with pytest.raises(SchemaError) as caught:
            for i in range(0, len(body), size):
                t.feed(body[i:i + size])
            t.close()
        assert (caught.value.path, caught.value.offset) == (f"$.stream_options.{name}", body.index(b'{"include'))


@pytest.mark.parametrize("target", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("stream_options, asked", STREAM_OPTIONS)
def test_asks_stream_usage_reads_include_usage(stream_options, asked, target):
    """What the proxy sets ``Options.openai_stream_usage`` from, whatever the target, at every cut."""
    body = ('{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]'
            + (f',"stream_options":{stream_options}' if stream_options else "") + "}").encode()
    for size in (1, 7, len(body)):
        t = Transcoder("openai", target)
        for i in range(0, len(body), size):
            t.feed(body[i:i + size])
        t.close()
        assert t.asks_stream_usage is asked, (size, stream_options)
    other = Transcoder("anthropic", "openai")  # only an openai request can ask
    other.feed(b'{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}')
    other.close()
    assert other.asks_stream_usage is False
