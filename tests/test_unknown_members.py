"""Nothing dropped silently: a member no dialect defines, put into any object of any valid
body (the rpt scenarios: requests, responses, streams), transcoded into another dialect,
is carried (its name is in the output) or recorded (a loss whose path holds the member, or
names it, or -- a stream, whose losses name the response's place, not the event's -- one
more loss than the body without it). Sampled under hypothesis (``ci`` profile: a few
seconds; ``HYPOTHESIS_PROFILE=deep`` by hand); ``python tests/test_unknown_members.py`` runs
every case. The backend is whatever ``interlingua.Transcoder`` is.

Left out, as the README says: an error object's members, and those beside it at the top of an
error body or event (the error is carried; an upstream error's extras are not worth failing its
delivery in strict mode)."""

from __future__ import annotations

import sys
from functools import lru_cache

from hypothesis import given, strategies as st

import fuzz
from fuzz import Obj, dump, parse, paths
from interlingua import Transcoder, TranscodeError

MEMBER = "zz_extra"


def _node(root, path: tuple):
    node, names = root, []
    for step in path:
        if isinstance(node, Obj):
            names.append(node[step][0])
            node = node[step][1]
        else:
            names.append(f"[{step}]")
            node = node[step]
    return node, names


def _json_path(names: list[str]) -> str:
    return "$" + "".join(n if n.startswith("[") else "." + n for n in names) + "." + MEMBER


def _response_path(seed: fuzz.Seed, root, where: str) -> str:
    """An anthropic stream event's path as its losses name it: the response's place
    (``$.content_block.x`` / ``$.delta.x`` of the event at ``index`` i: ``$.content[i].x``; a
    citations delta's ``citation``: the block's ``citations``)."""
    if (seed.dialect, seed.kind) != ("anthropic", "stream"):
        return where
    index = dict(root).get("index")
    for event, block in (("$.delta.citation.", "citations."), ("$.content_block.", ""), ("$.delta.", "")):
        if where.startswith(event) and isinstance(index, int):
            return f"$.content[{index}].{block}{where[len(event):]}"
    return where


def _exempt(seed: fuzz.Seed, target: str, root, path: tuple, names: list[str]) -> bool:
    """An error object's members, and those beside it in an error body or event (its top)."""
    return "error" in names or (not path and any(key == "error" and value is not None for key, value in root))


@lru_cache(maxsize=None)
def _cases() -> tuple:
    """(seed, document index, object path, target) for every object of every seed's documents."""
    cases = []
    for seed in fuzz.seeds():
        for i, (_, doc) in enumerate(_documents(seed)):
            root = parse(doc)
            for path in paths(root):
                node, names = _node(root, path)
                if isinstance(node, Obj):
                    for target in fuzz.DIALECTS:
                        if target != seed.dialect and not _exempt(seed, target, root, path, names):
                            cases.append((seed, i, path, target))
    return tuple(cases)


@lru_cache(maxsize=None)
def _documents(seed: fuzz.Seed) -> tuple:
    """(place, JSON document) of a body: the body itself, or each frame's JSON."""
    if seed.kind != "stream":
        return ((None, seed.body),)
    frames = fuzz.split_frames(seed.dialect, seed.body)
    out = []
    for i, frame in enumerate(frames):
        parts = fuzz.frame_json(frame)
        if parts is not None:
            out.append(((i, tuple(frames), parts), parts[1]))
    return tuple(out)


def _run(source: str, target: str, kind: str, body: bytes):
    # (the backend's own class; the target-API rules of tests/validity.py, which wraps the Python
    # class, hold here too: a member beside an empty text part broke them -- an empty text block
    # into anthropic -- until the encoders' placing of an empty first fragment could wait)
    transcoder = Transcoder(source, target, kind=kind)
    try:
        out = transcoder.feed(body) + transcoder.close()
    except TranscodeError:
        return None
    return out, [(loss.path, loss.reason) for loss in transcoder.losses]


@lru_cache(maxsize=None)
def _base(seed: fuzz.Seed, target: str):
    return _run(seed.dialect, target, seed.kind, seed.body)


def check(seed: fuzz.Seed, doc: int, path: tuple, target: str) -> None:
    place, text = _documents(seed)[doc]
    root = parse(text)
    mutant = parse(dump(root))
    node, names = _node(mutant, path)
    node.append([MEMBER, "v"])
    new_doc = dump(mutant).encode()
    if place is None:
        body = new_doc
    else:
        i, frames, (before, _, after) = place
        body = b"".join(frames[:i]) + before + new_doc + after + b"".join(frames[i + 1:])
    base, got = _base(seed, target), _run(seed.dialect, target, seed.kind, body)
    if base is None or got is None:
        return  # (an error either way: the fuzzer's properties, not this one's)
    out, losses = got
    if MEMBER.encode() in out:
        return
    where = _json_path(names)
    places = {where, _response_path(seed, root, where)}
    if any(MEMBER in (reason or "") or any(w.startswith((p + ".", p + "[")) or p == w for w in places)
           for p, reason in losses):
        return
    if seed.kind == "stream" and len(losses) > len(base[1]):
        return
    raise AssertionError(f"{seed.name} -> {target}: {where} dropped with nothing recorded; losses {losses}")


@given(data=st.data())
def test_a_member_no_dialect_defines_is_carried_or_recorded(data):
    seed, doc, path, target = data.draw(st.sampled_from(_cases()), label="case")
    check(seed, doc, path, target)


def test_the_cases_cover_every_dialect_and_kind():
    covered = {(seed.dialect, seed.kind) for seed, _, _, _ in _cases()}
    assert len(covered) == 9, covered


if __name__ == "__main__":  # every case (minutes): the failures, one a line
    import fixed_clock

    fixed_clock.install()
    failed = 0
    for case in _cases():
        try:
            check(*case)
        except AssertionError as exc:
            failed += 1
            print(exc)
    print(f"{len(_cases())} cases, {failed} failures", file=sys.stderr)


#: (source, target, member): a request's top-level member of the source's body that the source
#: does not define but the target does under the same name -- a ``system`` in an openai body,
#: ollama's ``think`` sent to an anthropic endpoint (LiteLLM's ``thinking`` in an openai body was
#: one; it is read now, as anthropic's is: rpt request-openai-thinking)
SAME_NAME = [("openai", "anthropic", "system", "Be brief."),
             ("anthropic", "ollama", "think", True),
             ("anthropic", "ollama", "options", {"num_ctx": 4096}),
             ("ollama", "openai", "reasoning_effort", "low")]


def test_a_member_named_as_the_targets_own_field_is_said_not_to_be_it():
    """It is recorded as any unknown member is, and the reason does not say the target has no such
    field (it has one): it says the target's own is not read from another dialect's body. A member
    the target has not either keeps the plain wording."""
    import json
    for source, target, member, value in SAME_NAME:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], member: value, "zz_extra": 1}
        if source == "anthropic":
            body["max_tokens"] = 5
        t = Transcoder(source, target)
        t.feed(json.dumps(body).encode())
        t.close()
        reasons = {loss.path: loss.reason for loss in t.losses}
        assert reasons[f"$.{member}"] == (f"{member}: {target} has no such field of {source}'s (its own {member} "
                                          f"is not read from another dialect's body)"), reasons
        assert reasons["$.zz_extra"] == f"zz_extra: {target} has no such field"
