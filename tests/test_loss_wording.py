"""Loss records speak the user's language (issue 16 item 8), over the whole corpus and every
rpt cross transcoding: the reason is ``interlingua.losses.lacks`` wording naming the target,
contains none of the pivot's internal names, and the path is a path of the source dialect
that exists in the source (for a stream: in one of its frames)."""

from __future__ import annotations

import json
import re

import pytest

from corpus import ITEMS, cases, run
from corpus.targets import anthropic_final, openai_final
from interlingua.dialects import available
from interlingua.losses import INTERNAL_WORDS
from rpt import cross_pairs, split_stream_events, transcode_all

FINALS = {"openai": openai_final, "anthropic": anthropic_final}
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(-?\d+)\]")


def resolves(value, path: str) -> bool:
    """Whether the JSON path ``$.a.b[0]`` names a member that exists in ``value``. In a
    stream frame an array element may be named by its ``index`` member (openai's
    ``choices`` and ``tool_calls`` deltas)."""
    if not path.startswith("$"):
        return False
    rest, at = path[1:], 0
    while at < len(rest):
        m = _SEGMENT.match(rest, at)
        if m is None:
            return False
        key, index = m.groups()
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                return False
            value = value[key]
        else:
            if not isinstance(value, list):
                return False
            keyed = [e for e in value if isinstance(e, dict) and e.get("index") == int(index)]
            if keyed:
                value = keyed[0]
            elif 0 <= int(index) < len(value):
                value = value[int(index)]
            else:
                return False
        at = m.end()
    return True


def problems(losses, source: str, target: str, kind: str, body: bytes) -> list[str]:
    """What is wrong with each loss record's wording (empty: all good)."""
    if kind == "stream":  # a frame, or the message the source's own client accumulates
        docs = [v for _, v in split_stream_events(body) if isinstance(v, (dict, list))]
        try:
            docs.append(FINALS[source]("stream", body).model_dump(exclude_none=True))
        except Exception:  # noqa: BLE001 -- no accumulated message (an error event, ollama's lines)
            pass
    else:
        docs = [json.loads(body)]
    out = []
    for dialect, path, reason in losses:
        where = f"{path} {reason!r}"
        if dialect != source:
            out.append(f"dialect {dialect} is not the source {source}: {where}")
        words = [w for w in INTERNAL_WORDS if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", reason)]
        if words:
            out.append(f"internal names {words}: {where}")
        if not re.match(rf"^.+?: {target} has no \S", reason):
            out.append(f"not '<field>: {target} has no <what>': {where}")
        if not any(resolves(doc, path) for doc in docs):
            out.append(f"no such {source} path: {where}")
    return out


@pytest.mark.parametrize("name,target", [c for c in cases() if c[1] != ITEMS[c[0]].dialect],
                         ids=[f"{n}->{t}" for n, t in cases() if t != ITEMS[n].dialect])
def test_corpus_losses_name_source_fields_and_what_the_target_lacks(name, target):
    item = ITEMS[name]
    try:
        _, losses = run(name, target)
    except Exception:  # noqa: BLE001 -- a failing case is test_corpus's business (strict xfail there)
        pytest.skip("transcoding fails (see test_corpus)")
    assert problems(losses, item.dialect, target, item.kind, item.body) == []


def _rpt_pairs():
    """Every cross pair that transcodes (a `not-from` one too: its losses are worded all the same)."""
    return [pytest.param(source, target, id=f"{source.scenario}:{source.kind}:{source.dialect}->{target.dialect}")
            for source, target in cross_pairs(carried=False)
            if available(source.dialect, source.kind) and source.dialect not in target.errors_from]


@pytest.mark.parametrize("source,target", _rpt_pairs())
def test_rpt_losses_name_source_fields_and_what_the_target_lacks(source, target):
    options = source.make_options(**target.options)
    _, transcoder = transcode_all(source, target.dialect, source.frames[-1], options)
    losses = [(x.dialect, x.path, x.reason) for x in transcoder.losses]
    assert problems(losses, source.dialect, target.dialect, source.kind, source.body) == []


def test_resolves():
    doc = {"messages": [{"content": [{"type": "text"}]}], "a.b": 1}
    assert resolves(doc, "$.messages[0].content[0].type")
    assert not resolves(doc, "$.messages[1]") and not resolves(doc, "$.messages[-2]")
    assert not resolves(doc, "$.message") and resolves(doc, "$")
