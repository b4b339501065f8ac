"""interlingua.aio under asyncio and trio: same output as the sync core, no read-ahead, both sides closed."""

from __future__ import annotations

import contextlib

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from interlingua import Transcoder, TranscodeError
from interlingua.aio import pump, transcode_stream

pytestmark = pytest.mark.anyio

REQUEST = (b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello \\"w\\u00e9rld\\""},'
           b'{"role":"assistant","content":"hi"}]}')
STREAM = b"".join(
    b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
    b'"delta":{"content":"t%d"},"finish_reason":null}]}\n\n' % i for i in range(5)
) + (b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,'
       b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


def cuts(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


class Source:
    """An async byte source that records what was pulled and whether it was closed."""

    def __init__(self, chunks: list[bytes], fail_after: int | None = None) -> None:
        self.chunks = list(chunks)
        self.pulled = 0
        self.closed = False
        self.fail_after = fail_after

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        if self.fail_after is not None and self.pulled == self.fail_after:
            raise ConnectionResetError("upstream dropped the connection")
        if self.pulled == len(self.chunks):
            raise StopAsyncIteration
        self.pulled += 1
        await anyio.sleep(0)
        return self.chunks[self.pulled - 1]

    async def aclose(self) -> None:
        self.closed = True


def sync_output(data: bytes, source: str, target: str, kind: str) -> bytes:
    t = Transcoder(source, target, kind=kind)
    return t.feed(data) + t.close()


@pytest.mark.parametrize("size", [1, 7, 4096])
@pytest.mark.parametrize(("kind", "data", "source", "target"), [
    ("request", REQUEST, "anthropic", "openai"),
    ("stream", STREAM, "openai", "anthropic"),
    ("stream", STREAM, "openai", "ollama"),
])
async def test_same_bytes_as_the_sync_core(kind, data, source, target, size):
    src = Source(cuts(data, size))
    out = [piece async for piece in transcode_stream(src, Transcoder(source, target, kind=kind))]
    assert b"".join(out) == sync_output(data, source, target, kind)
    assert all(out)  # empty pieces are not yielded
    assert src.closed


async def test_no_read_ahead():
    """The next chunk is pulled only after the previous one's output was taken."""
    src = Source(cuts(STREAM, 40))
    pulled_when_taken = []
    async with contextlib.aclosing(transcode_stream(src, Transcoder("openai", "anthropic", kind="stream"))) as out:
        async for _ in out:
            pulled_when_taken.append(src.pulled)
    # each output piece was produced by the chunk pulled last; nothing beyond it was read
    assert pulled_when_taken == sorted(pulled_when_taken)
    assert len(set(pulled_when_taken)) == len(pulled_when_taken)


async def test_consumer_stopping_early_closes_the_source():
    src = Source(cuts(STREAM, 40))
    async with contextlib.aclosing(transcode_stream(src, Transcoder("openai", "anthropic", kind="stream"))) as out:
        async for _ in out:
            break
    assert src.closed
    assert src.pulled < len(src.chunks)


async def test_cancellation_closes_the_source():
    class Slow(Source):
        async def __anext__(self):
            if self.pulled == 2:
                await anyio.sleep(10)
            return await super().__anext__()

    src = Slow(cuts(STREAM, 200))
    got = []
    with anyio.move_on_after(0.2):
        async with contextlib.aclosing(transcode_stream(src, Transcoder("openai", "anthropic", kind="stream"))) as out:
            async for piece in out:
                got.append(piece)
    assert src.closed and got


async def test_source_failure_ends_with_the_target_error_event():
    src = Source(cuts(STREAM, 40), fail_after=3)
    seen = []
    out = b"".join([piece async for piece in transcode_stream(
        src, Transcoder("openai", "anthropic", kind="stream"), abort_on=(OSError,), on_abort=seen.append)])
    assert out.rstrip().endswith(b"}") and b"event: error" in out
    assert isinstance(seen[0], ConnectionResetError)
    assert src.closed


async def test_source_failure_not_in_abort_on_propagates_after_closing():
    src = Source(cuts(STREAM, 40), fail_after=2)
    with pytest.raises(ConnectionResetError):
        async for _ in transcode_stream(src, Transcoder("openai", "anthropic", kind="stream")):
            pass
    assert src.closed


async def test_bad_input_propagates_as_transcode_error_with_source_closed():
    src = Source([b'{"model":"m","messages":[{"role":"user","content":"x"}', b"]]"])
    with pytest.raises(TranscodeError) as info:
        async for _ in transcode_stream(src, Transcoder("openai", "anthropic")):
            pass
    assert info.value.offset is not None and src.closed


async def test_pump_between_anyio_byte_streams_with_backpressure():
    """A zero-buffer memory stream: each write waits for the reader, so the reader paces the writer."""
    send_in, receive_in = anyio.create_memory_object_stream[bytes](0)
    send_out, receive_out = anyio.create_memory_object_stream[bytes](0)
    got = []

    async def reader(stream: MemoryObjectReceiveStream) -> None:
        async with stream:
            async for piece in stream:
                got.append(piece)

    async def writer() -> None:
        async with send_in:
            for chunk in cuts(STREAM, 64):
                await send_in.send(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader, receive_out)
        tg.start_soon(writer)
        await pump(_Bytes(receive_in), _Bytes(send_out), Transcoder("openai", "ollama", kind="stream"))
    assert b"".join(got) == sync_output(STREAM, "openai", "ollama", "stream")


async def test_pump_cancelled_closes_both_sides():
    send_in, receive_in = anyio.create_memory_object_stream[bytes](1)
    send_out, receive_out = anyio.create_memory_object_stream[bytes](1)
    await send_in.send(STREAM[:50])
    with anyio.move_on_after(0.1):
        await pump(_Bytes(receive_in), _Bytes(send_out), Transcoder("openai", "ollama", kind="stream"))
    with pytest.raises(anyio.ClosedResourceError):
        await receive_in.receive()  # closed by pump
    with pytest.raises(anyio.ClosedResourceError):
        await send_out.send(b"x")
    await send_in.aclose()
    await receive_out.aclose()


class _Bytes:
    """A memory object stream of bytes seen as a byte stream (anyio's own wrappers need a socket)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.stream.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def aclose(self) -> None:
        await self.stream.aclose()
