"""The structural fuzzer (tests/fuzz.py) under hypothesis: for every dialect x kind,
valid bodies (the rpt scenarios) mutated at every JSON path, into every target, cut
at random. Properties: strict JSON out (per body / frame / line, no duplicate key)
or a TranscodeError naming the source dialect, an offset and (inside a document) a
path; never another exception; the same result for every cut.

The ``ci`` profile keeps this to a few seconds; ``HYPOTHESIS_PROFILE=deep`` by hand
(and ``python -m tests.fuzz`` for the exhaustive sweep). The backend is whatever
``interlingua.Transcoder`` is (``INTERLINGUA_BACKEND``): the native core runs the same.
"""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import given, strategies as st

import fuzz
from interlingua import Transcoder

CASES = [(d, k) for d in fuzz.DIALECTS for k in fuzz.KINDS if fuzz.seeds_of(d, k)]


class JsonOnly:
    """The backend's own ``Transcoder`` (a subclass would be the Python pipeline on both
    backends: this was one, so the fuzzer never ran the native core). The fuzzer judges JSON
    validity and error locations; the target-API rules are tests/validity.py's own layer (it
    wraps the Python class): its record is dropped, which keeps its checks out of these runs."""

    def __init__(self, source: str, target: str, *, kind: str) -> None:
        self.transcoder = Transcoder(source, target, kind=kind)

    def feed(self, data: bytes) -> bytes:
        out = self.transcoder.feed(data)
        getattr(self.transcoder, "__dict__", {}).pop("_validity", None)
        return out

    def close(self) -> bytes:
        return self.transcoder.close()

    def pending_output(self) -> bytes:
        return self.transcoder.pending_output()


@lru_cache(maxsize=None)
def _mutants(seed: fuzz.Seed) -> tuple:
    return (("unchanged", seed.body),) + tuple(fuzz.mutants(seed))


@pytest.mark.parametrize("source,kind", CASES)
@given(data=st.data())
def test_mutated_bodies_give_strict_json_or_a_located_error(source, kind, data):
    seed = data.draw(st.sampled_from(fuzz.seeds_of(source, kind)), label="seed")
    what, body = data.draw(st.sampled_from(_mutants(seed)), label="mutant")
    target = data.draw(st.sampled_from(fuzz.DIALECTS), label="target")
    points = data.draw(st.lists(st.integers(0, max(len(body), 1)), max_size=8), label="cuts")
    fuzz.check(JsonOnly, source, target, kind, body, points)


def test_the_fuzzer_covers_every_dialect_and_kind():
    assert len(CASES) == 9
    for source, kind in CASES:
        assert len(fuzz.seeds_of(source, kind)) >= 3, (source, kind)


def test_the_properties_catch_what_they_are_for():
    """The checker itself: a duplicate key, a hole, NaN, bad UTF-8 are caught."""
    for bad in (b'{"a":1,"a":2}', b'{"a":,"b":1}', b'{"a":NaN}', b'{"a":"\xff"}'):
        with pytest.raises(fuzz.Invalid):
            fuzz.strict_json(bad)
    with pytest.raises(fuzz.Invalid):
        fuzz.check_error("openai", "request", ("error", "SchemaError", "ollama", 3, "$", None, "x"))
    with pytest.raises(fuzz.Invalid):
        fuzz.check_error("openai", "request", ("error", "SchemaError", "openai", None, "$", None, "x"))
