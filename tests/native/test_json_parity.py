"""The native JSON tokenizer against json.py: same tokens, offsets and errors, cut anywhere.

The parity rule for string fragments (native/src/json.rs): after every feed
the content delivered is the same bytes; fragments within one feed are
compared joined. Every other token, every offset and every error (class,
message, offset, path) must be equal.
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from interlingua.backend import native_module

from .differential import (
    cut_points, error_facts, joined_per_feed, json_documents, mutated, python_tokenize,
)

native = native_module()

LIMITS = st.fixed_dictionaries({
    "max_depth": st.sampled_from([128, 3]),
    "max_key_bytes": st.sampled_from([65536, 4]),
    "max_number_bytes": st.sampled_from([1024, 5]),
    "max_seen_key_bytes": st.sampled_from([1 << 20, 6]),
})


def check(data: bytes, cuts, **limits) -> None:
    n_tokens, n_error = native.tokenize(data, cuts, dialect="openai", **limits)
    p_tokens, p_error = python_tokenize(data, cuts, dialect="openai", **limits)
    assert error_facts(n_error) == error_facts(p_error), (data, cuts)
    assert joined_per_feed(n_tokens) == joined_per_feed(p_tokens), (data, cuts)


@given(st.data(), json_documents())
def test_valid_documents_cut_anywhere(data, document):
    check(document, data.draw(cut_points(document)))


@given(st.data(), mutated())
def test_mutated_documents_cut_anywhere(data, document):
    check(document, data.draw(cut_points(document)))


@given(st.data(), json_documents() | mutated(), LIMITS)
def test_limits_cut_anywhere(data, document, limits):
    check(document, data.draw(cut_points(document)), **limits)


@given(st.data(), st.binary(max_size=40))
def test_any_bytes(data, blob):
    check(blob, data.draw(cut_points(blob)))


# Each rejection class and limit at least once, cut at every byte.
CASES = [
    b'{"a": [1, "x", true, null, false, -2.5e3, {}], "b": {"c": []}}',
    '{"k\u00e9y": "\u4e16\u754c \\ud83d\\ude00 \\u00e9\\n", "\\ud800x": 1}'.encode(),
    b"", b"   ", b"[", b'{"a"', b'{"a":', b'{"a":1,', b'["abc', b'["ab\\u12', b"[1, 2, tru", b"[1, 2, trux]",
    b"nul", b"nulx", b'{"a" 1}', b'{"a":1,}', b'{"a":1]', b"[}", b"{]", b"[1,]", b"[01]", b"[-]", b"[1.]",
    b"[1e+]", b"[-01.5]", b"0001", b"1 2", b'"abc" x', b'{"a\\q": 1}', b'["a\\x"]', b'["a\\u12G4"]',
    b'["a\x01"]', b'{"a\x1f": 1}', b'["\xff"]', b'["\xe2\x82"]', b'["\xed\xa0\x80"]', b'["\xc0\xaf"]',
    b'["\xf4\x90\x80\x80"]', b"[\xe2\x82\xac]", b'["\\ud83d"]', b'["\\ud83d\\u00e9"]', b"\xef\xbb\xbf{}",
    b"[[[[1]]]]", b'{"abcdef": 1}', b'{"ab\\u0041": 1}', b"[123456789]", b"[1.23456e7]", b"[1, NaN]",
    b'{"a": 1, "b": {"a": 2}, "\\u0061": 3}', '{"\u00e9\u00ad\u2028": 1, "\u00e9\u00ad\u2028": 2}'.encode(),
    b'{"\\ud800": 1, "\\ud800": 2}', b'{"it\'s": 1, "it\'s": 2}', b'{"ab": {"cd": 1}, "ef": {"gh": [1]}}',
    # an object past 16 keys hashes them (json.rs `LINEAR_MAX`): duplicates, budgets and paths after it
    b"{" + b", ".join(b'"k%d": %d' % (i, i) for i in range(20)) + b', "k3": 1}',
    b"{" + b", ".join(b'"k%d": %d' % (i, i) for i in range(17)) + b', "x": {"y": {"y": 1}, "y": 2}, "z": [tru]}',
    b"{" + b", ".join(b'"k%d": %d' % (i, i) for i in range(17)) + b', "x": {"y": [1, {"k0": 1, "k0": 2}]}}',
    b'{"a": {"b": 1, "c": {"d": 1}, "e": [1, x]}}', b'{"a": 1, "b": 2, "a": 3}', b'{"ab": 1, "ba": 2, "ab": 3}',
]


@pytest.mark.parametrize("document", CASES)
@pytest.mark.parametrize("limits", [{}, {"max_depth": 3, "max_key_bytes": 4, "max_number_bytes": 5,
                                     "max_seen_key_bytes": 5}])
def test_every_cut_of_each_rejection_class(document, limits):
    check(document, [])
    check(document, list(range(1, len(document))))
    for cut in range(len(document) + 1):
        check(document, [cut], **limits)


def test_errors_are_the_python_classes():
    import interlingua
    _, error = native.tokenize(b'{"a": [1, x]}', [])
    assert isinstance(error, interlingua.JsonSyntaxError)
    assert (error.offset, error.path) == (10, "$.a[1]")
    _, error = native.tokenize(b"[[[", [], max_depth=2)
    assert isinstance(error, interlingua.NestingTooDeepError) and error.status == 413
