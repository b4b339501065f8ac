"""What runs on a body: interlingua (one per available target) and the whole-body baselines.

Baselines parse and re-serialise the whole body (they cannot start before it
has all arrived): ``json`` (stdlib), ``orjson``, and LiteLLM's
anthropic -> openai request translation for anthropic request bodies.
"""

from __future__ import annotations

import json
import os
from typing import Callable

from interlingua import Transcoder

from bodies import Body, targets

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import


def backends() -> list[str]:
    """The backends this build can run requests on: python, and native where the extension covers them."""
    from interlingua.backend import NATIVE_COVERS, REQUEST_PIPELINE

    return ["python", "native"] if REQUEST_PIPELINE in NATIVE_COVERS else ["python"]


def transcoder_class(backend: str):
    """The request Transcoder of one backend, whatever ``INTERLINGUA_BACKEND`` says: the
    native class itself, or a constructor that builds the Python pipeline's."""
    from interlingua import backend as selection
    from interlingua.backend import native_module

    if backend == "native":
        return native_module().Transcoder

    def python_transcoder(*args, **kwargs):
        chosen, selection.BACKEND = selection.BACKEND, "python"  # (read at construction)
        try:
            return Transcoder(*args, **kwargs)
        finally:
            selection.BACKEND = chosen

    return python_transcoder


def interlingua_run(body: Body, target: str) -> Callable[[], int]:
    data, frame, kind, source = body.data, body.frame or 65536, body.kind, body.dialect
    pieces = [data[i:i + frame] for i in range(0, len(data), frame)]  # cut before timing

    def run() -> int:
        transcoder = Transcoder(source, target, kind=kind)
        feed = transcoder.feed
        n = 0
        for piece in pieces:
            n += len(feed(piece))
        return n + len(transcoder.close())

    return run


def _lines(data: bytes) -> list[bytes]:
    """The JSON documents of a stream: SSE ``data:`` lines or NDJSON lines."""
    out = []
    for line in data.split(b"\n"):
        if line.startswith(b"data: "):
            line = line[6:]
        if line[:1] in (b"{", b"[") and line != b"[DONE]":  # openai's end marker is not JSON
            out.append(line)
    return out


def json_run(body: Body) -> Callable[[], int]:
    if body.kind == "stream":
        lines = _lines(body.data)
        return lambda: sum(len(json.dumps(json.loads(line)).encode()) for line in lines)
    data = body.data
    return lambda: len(json.dumps(json.loads(data), ensure_ascii=False).encode())


def orjson_run(body: Body) -> Callable[[], int] | None:
    try:
        import orjson
    except ImportError:
        return None
    if body.kind == "stream":
        lines = _lines(body.data)
        return lambda: sum(len(orjson.dumps(orjson.loads(line))) for line in lines)
    data = body.data
    return lambda: len(orjson.dumps(orjson.loads(data)))


# Where LiteLLM keeps its anthropic -> openai adapter: it moved between releases (the newest first).
_LITELLM_ADAPTER_MODULES = ("litellm.llms.anthropic.pass_through.adapters",
                            "litellm.llms.anthropic.messages.adapters")


def litellm_adapter():
    import importlib
    for name in _LITELLM_ADAPTER_MODULES:
        try:
            return importlib.import_module(name).LiteLLMAnthropicMessagesAdapter()
        except Exception:  # not installed, or a release that keeps it elsewhere
            continue
    return None


def litellm_run(body: Body) -> Callable[[], int] | None:
    """LiteLLM's anthropic -> openai request translation, bytes in and bytes out like the others."""
    if body.dialect != "anthropic" or body.kind != "request":
        return None
    adapter = litellm_adapter()
    if adapter is None:
        return None
    data = body.data

    def run() -> int:
        request, _ = adapter.translate_anthropic_to_openai(json.loads(data))
        return len(json.dumps(request, ensure_ascii=False, default=str).encode())

    return run


def contenders(body: Body) -> list[tuple[str, Callable[[], int]]]:
    """(name, callable) for every contender that applies to ``body``; empty if interlingua cannot read it
    and no third-party baseline applies (then the group would compare nothing)."""
    runs = [(f"interlingua {body.dialect}->{t}", interlingua_run(body, t)) for t in targets(body.dialect, body.kind)]
    litellm = litellm_run(body)
    if not runs and litellm is None:
        return []
    runs.append(("json loads+dumps", json_run(body)))
    orjson = orjson_run(body)
    if orjson is not None:
        runs.append(("orjson loads+dumps", orjson))
    if litellm is not None:
        runs.append(("litellm anthropic->openai", litellm))
    return runs
