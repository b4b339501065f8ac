"""The CLI on the native backend: every kind runs on ``_native.Transcoder`` / ``Decoder``
(``interlingua.Transcoder`` / ``Decoder`` dispatch by ``backend.BACKEND``), with the same
output and loss lines as the Python pipeline's."""

from __future__ import annotations

import io

import pytest

from interlingua import TranscodeError, backend, cli
from interlingua.backend import native_module
from interlingua.dialects import DIALECTS

native = native_module()


@pytest.mark.parametrize("kind", ["request", "response", "stream"])
def test_the_native_backend_runs_every_kind_natively(monkeypatch, kind):
    from interlingua import pipeline
    made = []
    for key, cls in list(pipeline._NATIVE_CLASSES.items()):  # (what the classes' metaclass returns)
        monkeypatch.setitem(pipeline._NATIVE_CLASSES, key,
                            lambda *a, _cls=cls, **k: made.append((_cls.__name__, k["kind"])) or _cls(*a, **k))
    monkeypatch.setattr(backend, "BACKEND", "native")
    for argv in (["transcode", "--from", "openai", "--to", "anthropic"], ["blocks", "--from", "openai"]):
        monkeypatch.setattr("sys.stdin", type("In", (), {"buffer": io.BytesIO(b"")})())
        cli.main([*argv, "--kind", kind])
    assert made == [("Transcoder", kind), ("Decoder", kind)], made


def _ported_pairs():
    for source in DIALECTS:
        for target in DIALECTS:
            try:
                native.Transcoder(source, target)
            except TranscodeError:
                continue
            yield source, target


def _run(monkeypatch, capfdbinary, tmp_path, argv, body: bytes) -> tuple:
    path = tmp_path / "in.json"
    path.write_bytes(body)
    with open(path, "rb") as stdin:
        monkeypatch.setattr("sys.stdin", type("In", (), {"buffer": stdin})())
        status = cli.main(argv)
    captured = capfdbinary.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("body", [
    b'{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi \\u00e9"}],"zz_unknown":1}',
    b'{"model":"m","messages":[{"role":"user","content":3}]}',
])
def test_the_native_cli_writes_what_the_python_cli_writes(monkeypatch, capfdbinary, tmp_path, body):
    pairs = list(_ported_pairs())
    if not pairs:
        pytest.skip("no request pair is ported to the native core yet")
    for source, target in pairs:
        argv = ["transcode", "--from", source, "--to", target, "--losses"]
        monkeypatch.setattr(backend, "BACKEND", "python")
        python = _run(monkeypatch, capfdbinary, tmp_path, argv, body)
        monkeypatch.setattr(backend, "BACKEND", "native")
        assert _run(monkeypatch, capfdbinary, tmp_path, argv, body) == python, (source, target)
