"""The binding and threads: the GIL is released while the core works on a chunk, and an
object used from two threads at once raises instead of corrupting its state."""

from __future__ import annotations

import threading
import time

import pytest

from interlingua.backend import native_module

native = native_module()
# ~24 MB of one JSON array of strings: long enough (tens of ms) to overlap with other threads
BODY = b"[" + b",".join([b'"' + b"x" * 200 + b'\\n\\u00e9"'] * 100_000) + b"]"
# the array's start and end and its strings, and one token more for each 256 KiB slice end
# inside a string (a chunk is scanned in slices, json.py's `_SLICE`): counted once, alone
TOKENS = native.TokenCounter().feed(BODY)
assert TOKENS > 2 + 100_000


def test_the_gil_is_released_while_a_chunk_is_worked_on():
    ticks = []
    done = threading.Event()

    def python_work():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0)

    def feed_once() -> tuple[float, float]:
        counter = native.TokenCounter()
        start = time.perf_counter()
        count = counter.feed(BODY)
        end = time.perf_counter()
        assert count == TOKENS
        return start, end

    def ticks_inside(windows) -> int:
        return sum(start < t < end for start, end in windows for t in list(ticks))

    worker = threading.Thread(target=python_work)
    worker.start()
    windows = []
    try:
        time.sleep(0.01)
        # one feed takes ~10-20 ms: on a loaded machine the other thread may get few
        # turns in one, so feed again (a new tokenizer each time) until it has had enough
        while len(windows) < 20 and ticks_inside(windows) <= 10:
            windows.append(feed_once())
    finally:
        done.set()
        worker.join()
    # the Python thread ran while a feed was in the core (with the GIL held it could not)
    assert ticks_inside(windows) > 10


def test_a_tokenizer_used_from_two_threads_at_once_raises_and_is_not_corrupted():
    counter = native.TokenCounter()
    refused = []
    started = threading.Event()

    def intruder():
        started.wait()
        deadline = time.perf_counter() + 5
        while not refused and time.perf_counter() < deadline:
            try:
                counter.feed(b"     " * 1000)  # whitespace: harmless if it got in
            except RuntimeError as exc:
                refused.append(str(exc))

    thread = threading.Thread(target=intruder)
    thread.start()
    started.set()
    total = 0
    for _ in range(20):
        if refused:
            break
        counter.reset()
        total = counter.feed(BODY) + counter.close()
    thread.join()
    assert refused and "in use by another thread" in refused[0]
    counter.reset()
    assert counter.feed(BODY) + counter.close() == TOKENS  # the state is whole


def test_errors_come_through_the_released_gil_as_transcode_errors():
    import interlingua
    counter = native.TokenCounter(dialect="openai")
    with pytest.raises(interlingua.JsonSyntaxError) as caught:
        counter.feed(BODY[:-1] + b"}")
    assert caught.value.offset == len(BODY) - 1 and caught.value.dialect == "openai"
