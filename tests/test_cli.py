"""The command line: streaming through a pipe, bounded memory, errors on one line with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

CMD = [sys.executable, "-m", "interlingua"]


def _wait_peak_rss_kib(proc: subprocess.Popen) -> tuple[int, int]:
    """Reap the child; (exit status, its peak RSS in KiB) from the kernel's rusage."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss


def _baseline_rss_kib() -> int:
    """Peak RSS of the interpreter with the package and its CLI imported, doing nothing."""
    proc = subprocess.Popen([sys.executable, "-c", "import interlingua, interlingua.cli"])
    return _wait_peak_rss_kib(proc)[1]


def test_10mb_string_streams_in_bounded_memory():
    text = ("Lorem ipsum \"dolor\" sit amet, é 中 😀\\n " * 300000)[: 10 * 1024 * 1024]
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}, ensure_ascii=False).encode()
    baseline = _baseline_rss_kib()
    proc = subprocess.Popen(CMD + ["transcode", "--from", "openai", "--to", "openai"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    written_all = threading.Event()
    first_output_before_end = []

    def writer():
        for i in range(0, len(body), 16384):
            proc.stdin.write(body[i:i + 16384])
            proc.stdin.flush()
        written_all.set()
        proc.stdin.close()

    thread = threading.Thread(target=writer)
    thread.start()
    first = proc.stdout.read1(65536)
    first_output_before_end.append(not written_all.is_set())
    rest = proc.stdout.read()
    thread.join()
    status, peak = _wait_peak_rss_kib(proc)
    assert status == 0
    out = first + rest
    assert first_output_before_end == [True], "output must begin before the input ends"
    assert json.loads(out) == json.loads(body)
    growth_mib = (peak - baseline) / 1024
    assert growth_mib < 20, f"peak RSS grew {growth_mib:.1f} MiB over the interpreter baseline"


def test_bad_input_one_line_on_stderr_exit_2():
    proc = subprocess.run(CMD + ["transcode", "--from", "openai", "--to", "openai"],
                          input=b'{"model": "m", "messages": [{"role": "user", "content": 12}]}',
                          capture_output=True)
    assert proc.returncode == 2
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert "SchemaError" in lines[0] and "byte 56" in lines[0] and "$.messages[0].content" in lines[0]
    valid = subprocess.run(CMD + ["transcode", "--from", "openai", "--to", "openai"],
                           input=b'{"model": "m", "messages": [{"role": "user", "content": "12"}]}',
                           capture_output=True, check=True).stdout
    assert proc.stdout and valid.startswith(proc.stdout), "output before the error is a prefix"


def test_blocks_prints_one_event_per_line():
    proc = subprocess.run(CMD + ["blocks", "--from", "openai"],
                          input=b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
                          capture_output=True, check=True)
    events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    blocks = [e for e in events if e["event"] == "block"]
    # a block starts where its payload begins; its last fragment (empty here) closes it
    assert blocks == [{"event": "block", "section": "user-text", "message": 0, "payload": "hi",
                       "init": True, "fin": False, "attrs": None},
                      {"event": "block", "section": "user-text", "message": 0, "payload": "",
                       "init": False, "fin": True, "attrs": None}]


def test_demo_runs():
    proc = subprocess.run(CMD + ["demo"], capture_output=True, check=True)
    assert b"tool-call" in proc.stdout and b"openai -> openai" in proc.stdout


_ANTHROPIC_STREAM_CUT = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"a","model":"m"}}\n\n')

# One failure of each class the command can meet: each is exit 2 and one stderr line
# naming the class, the dialect, the byte and (inside a document) the path.
FAILURES = [
    (["--from", "openai", "--to", "anthropic"], b'{"model": "m", "messages": [{"role": "user", "content": tru}]}',
     "JsonSyntaxError", "byte 59", "$.messages[0].content"),
    (["--from", "anthropic", "--to", "openai"], b'{"model": "m", "model": "n"}', "DuplicateKeyError", "byte 15", "$.model"),
    (["--from", "openai", "--to", "ollama"], b'{"model": "m", "messages": [{"role": "user", "content": 5}]}',
     "SchemaError", "byte 56", "$.messages[0].content"),
    (["--from", "ollama", "--to", "openai"], b'{"model": "m", "messages": [{"role": "user", "content": "\xff"}]}',
     "InvalidUtf8Error", "byte 57", "$.messages[0].content"),
    (["--from", "openai", "--to", "anthropic", "--strict"],
     b'{"model": "m", "seed": 1, "messages": [{"role": "user", "content": "hi"}]}', "LossError", "byte", "$.seed"),
    (["--from", "anthropic", "--to", "openai", "--refuse-reorder"],
     b'{"max_tokens": 5, "messages": [{"content": "x", "role": "user"}], "model": "m"}',
     "ReorderRefusedError", "byte 43", "$.messages[0].content"),
    (["--from", "anthropic", "--to", "openai", "--kind", "stream"], _ANTHROPIC_STREAM_CUT,
     "TruncatedInputError", "byte 86", None),
    (["--from", "openai", "--to", "anthropic"], b'{"model": "m", "messages": [', "TruncatedInputError", "byte 28", "$.messages"),
]


@pytest.mark.parametrize("args,body,cls,byte,path", FAILURES)
def test_every_failure_is_one_line_and_exit_2(args, body, cls, byte, path):
    proc = subprocess.run(CMD + ["transcode"] + args, input=body, capture_output=True)
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr.decode(), proc.stderr
    line = lines[0]
    assert line.startswith(f"interlingua: {cls}: ") and args[1] in line and byte in line, line
    assert path is None or f"at {path}" in line, line


def test_an_internal_error_is_one_line_and_exit_2_too(monkeypatch, capsys):
    """A bug (an exception that is not a TranscodeError) still gives one line, no traceback."""
    from interlingua import cli

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(cli, "_transcode", broken)
    assert cli.main(["transcode", "--from", "openai", "--to", "ollama"]) == 2
    err = capsys.readouterr().err
    assert err == "interlingua: internal error (openai): TypeError: a bug\n"
