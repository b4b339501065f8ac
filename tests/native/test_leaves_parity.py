"""The native leaves the codecs share against their Python modules: naming.py
(ids and tool names), hashlib / base64 (native/src/digest.rs), losses.py (the
wording and paths of losses) and session.py (``lose``, ``lose_member``,
``tool_name_out``, ``tool_name_in``) -- the same strings, records and errors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json

from hypothesis import example, given, strategies as st

from interlingua import losses, naming
from interlingua.canonical import Section
from interlingua.session import Options, Session

from .differential import error_facts

from interlingua.backend import native_module

native = native_module()

#: text without lone surrogates (a Rust str has none; ids and names are read as data)
_chars = st.characters(codec="utf-8", exclude_categories=("Cs",))
names = st.text(st.sampled_from("abcXYZ019_-") | st.sampled_from(list("./: é世😀\x00\t")) | _chars, max_size=140) | st.sampled_from(
    ["", "ilid_", "ilid_x", "get_weather", "a" * 64, "a" * 65, "a" * 128, "a" * 129, "x" * 40, "x" * 41, "é" * 40])
DIALECTS = ["openai", "anthropic", "ollama"]


# -- naming ---------------------------------------------------------------------------

@given(names)
def test_ids_and_names(text):
    assert native.naming_call("anthropic_id", text) == naming.anthropic_id(text)
    assert native.naming_call("openai_id", text) == naming.openai_id(text)
    assert native.naming_call("canonical_id", text) == naming.canonical_id(text)
    assert native.naming_call("canonical_id", naming.anthropic_id(text)) == text
    for dialect in DIALECTS:
        assert native.naming_call("name_fits", text, dialect) == naming.name_fits(text, dialect)
        assert native.naming_call("wire_name", text, dialect) == naming.wire_name(text, dialect)


@given(st.text(st.sampled_from("ABCxyz019-_+/=é. "), max_size=14))
@example("Zh")
@example("YWJj")
def test_canonical_id_of_any_escaped_looking_id(rest):
    wire = naming.ID_MARK + rest
    assert native.naming_call("canonical_id", wire) == naming.canonical_id(wire)


# -- digest ---------------------------------------------------------------------------

@given(st.binary(max_size=300))
def test_sha256_and_base64(data):
    assert native.digest_call("sha256_hex", data) == hashlib.sha256(data).hexdigest().encode()
    assert native.digest_call("b64encode", data) == base64.b64encode(data)
    assert native.digest_call("urlsafe_b64encode", data) == base64.urlsafe_b64encode(data)
    assert native.digest_call("b64decode", base64.b64encode(data)) == data


@given(st.binary(max_size=40) | st.text(st.sampled_from("ABCabc019+/=-_ \n\x00é"), max_size=24).map(str.encode))
@example(b"Zg=x=")
@example(b"Zm9=v")
def test_b64decode_is_as_lenient_as_binascii(data):
    try:
        expected = base64.b64decode(data)
    except (binascii.Error, ValueError):
        expected = None
    assert native.digest_call("b64decode", data) == expected


# -- losses ---------------------------------------------------------------------------

_attr_values = st.sampled_from([True, False, None, 0, 1, 0.0, "", "developer", "critic", "user", [], {}, [0]])
_attr_names = st.sampled_from(["role", "redacted", "in_result", "name", "cache_control"])
attrs = st.none() | st.dictionaries(_attr_names, _attr_values, max_size=4)
payloads = st.sampled_from([b"", b'{"type":"web_search_tool_result","id":1}', b'{"type":""}', b'{"type":"x',
                            b'{"type":"\xc3\xa9\xff"}', b'[1]'])
sections = st.sampled_from(list(Section))
dialects = st.sampled_from(DIALECTS + ["gemini"])


def as_native_attrs(value):
    return None if value is None else [(k, json.dumps(v).encode()) for k, v in value.items()]


@given(dialects, sections, attrs, payloads, st.sampled_from(["detail", "filename", "file_id", "signature", "index", "x"]))
def test_subjects(dialect, section, attrs, payload, key):
    assert native.losses_call("block_subject", (dialect, section.value, as_native_attrs(attrs), payload)) == \
        losses.block_subject(dialect, section, attrs, payload)
    assert native.losses_call("field_subject", (dialect, key, section.value, as_native_attrs(attrs))) == \
        losses.field_subject(dialect, key, section, attrs)
    assert native.losses_call("raw_block_type", (payload,)) == losses.raw_block_type(payload)


paths = st.sampled_from(["$.messages[0].content[1].thinking", "$.messages[2]", "$.system", "$", "", ".text",
                         "$.content[0].arguments", "$.a.b.partial_json", "$.options.num_ctx", "x.reasoning"])


@given(dialects, st.sampled_from(["request", "response", "stream"]), st.integers(-2, 5), paths,
       st.sampled_from(["signature", "name", "x"]))
def test_paths(dialect, kind, index, path, key):
    assert native.losses_call("finish_path", (dialect, kind, index)) == losses.finish_path(dialect, kind, index)
    assert native.losses_call("block_path", (dialect, kind, index)) == losses.block_path(dialect, kind, index)
    assert native.losses_call("field_path", (path, key)) == losses.field_path(path, key)
    assert native.losses_call("path_subject", (path,)) == losses.path_subject(path)


@given(st.text(max_size=6), st.text(max_size=6), st.text(max_size=6), st.none() | st.text(max_size=6))
def test_lacks_and_article(subject, target, what, done):
    if any(0xD800 <= ord(c) < 0xE000 for c in subject + target + what + (done or "")):
        return
    assert native.losses_call("lacks", (subject, target, what, done)) == losses.lacks(subject, target, what, done)
    assert native.losses_call("article", (subject,)) == losses.article(subject)


# -- session ----------------------------------------------------------------------------

tool_names = st.none() | st.sampled_from([None, 3, True, "", "ok_name", "mcp.read", "a" * 70, "a" * 130, "é", "x y"]).map(
    lambda v: json.dumps(v).encode())
ops = st.lists(st.one_of(
    st.tuples(st.just("lose"), paths, st.sampled_from(["r", "s"]), st.sampled_from([None, "", "openai", "anthropic"])),
    st.tuples(st.just("lose_member"), paths, st.sampled_from(["such field", "response id"]), st.none() | st.just("dropped")),
    st.tuples(st.just("tool_name_out"), tool_names, paths),
    st.tuples(st.just("tool_name_in"), st.sampled_from(["a_1", "b", ""])),
), max_size=8)


def python_session_ops(source, target, kind, ops, *, strict, passthrough, tool_names):
    session = Session(Options(strict=strict, tool_names=tool_names), source=source, target=target, kind=kind)
    session.passthrough = passthrough
    results, error = [], None
    try:
        for op in ops:
            if op[0] == "lose":
                results.append(session.lose(op[1], op[2], dialect=op[3]))
            elif op[0] == "lose_member":
                results.append(session.lose_member(op[1], op[2], op[3]))
            elif op[0] == "tool_name_out":
                name = None if op[1] is None else json.loads(op[1])
                results.append(session.tool_name_out(name, op[2]))
            else:
                results.append(session.tool_name_in(op[1]))
    except Exception as exc:  # noqa: BLE001
        error = exc
    found = [(loss.dialect, loss.path, loss.reason) for loss in session.losses]
    return results, found, session.tool_names, error


@given(st.sampled_from(DIALECTS), st.sampled_from(DIALECTS + [""]), st.sampled_from(["request", "response", "stream"]),
       ops, st.booleans(), st.booleans(), st.none() | st.just({"a_1": "a.1"}))
def test_session(source, target, kind, ops, strict, passthrough, tool_names):
    kwargs = {"strict": strict, "passthrough": passthrough, "tool_names": tool_names}
    n_results, n_losses, n_names, n_error = native.session_ops(source, target, kind, ops, **kwargs)
    p_results, p_losses, p_names, p_error = python_session_ops(source, target, kind, ops, **kwargs)
    assert (n_results, n_losses, n_names, error_facts(n_error)) == (p_results, p_losses, p_names, error_facts(p_error))


# -- unicode: Python's repr -------------------------------------------------------------

def test_printable_table_is_this_pythons():
    import unicodedata

    import pytest
    if unicodedata.unidata_version != "14.0.0":
        pytest.skip(f"the table is Unicode 14.0.0 (Python 3.11); this Python has {unicodedata.unidata_version}")
    expected, start = [], None
    for code in range(0x110000):
        if not chr(code).isprintable():
            if start is None:
                start = code
        elif start is not None:
            expected.append((start, code - 1))
            start = None
    expected.append((start, 0x10FFFF))
    assert native.not_printable_ranges() == expected


@given(st.text(st.characters(codec=None) | st.sampled_from(["'", '"', "\\", "\ud800", "\udfff", "\x7f", "\xa0", "\u3000",
                                                            "\U0010ffff", "\U000e0001", "\u0378"]), max_size=12))
@example("it's")
@example("'\"")
def test_repr(text):
    assert native.unicode_repr(text) == repr(text)
