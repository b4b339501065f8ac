"""anyio adapters over the sans-IO core: async byte chunks in, transcoded bytes out (asyncio or trio).

    from interlingua import Transcoder
    from interlingua.aio import transcode_stream, pump

    async with contextlib.aclosing(transcode_stream(response.aiter_bytes(), transcoder)) as out:
        async for piece in out:          # each piece: what one input chunk made possible
            await send(piece)

    await pump(receive_stream, send_stream, transcoder)   # anyio byte streams, both closed at the end

* **Backpressure.** Nothing is read ahead: the next input chunk is pulled only
  after the output of the previous one was taken by the consumer
  (``transcode_stream``) or written (``pump``).
* **Cancellation closes both sides.** When the consumer stops early, is
  cancelled, or the transcoder raises, the source is closed (``aclose``,
  shielded so a cancelled task still closes it); ``pump`` closes the send
  stream too. Closing an HTTP client's response iterator closes its
  connection, which is how the proxy cancels an upstream request at once.
* **Source failures.** Exceptions of the types in ``abort_on`` raised by the
  source (a dropped connection, a read timeout) or by the transcoder end the
  output with ``Transcoder.abort`` (the target dialect's error event) instead
  of propagating; any other exception propagates after the source is closed.

anyio is the one dependency (the ``aio`` extra; the core needs only msgspec).
Nothing here sleeps or spawns: it runs under whatever loop anyio finds.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Callable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .canonical import Error
from .pipeline import Transcoder

__all__ = ["transcode_stream", "pump", "aclose_quietly"]


async def aclose_quietly(resource: object) -> None:
    """``await resource.aclose()`` if it has one, shielded from cancellation; errors while closing are dropped.

    Closing happens on the way out of a cancelled or failed task: it must run
    to its end (shielded) and must not hide the exception being raised.
    """
    aclose = getattr(resource, "aclose", None)
    if aclose is None:
        return
    with anyio.CancelScope(shield=True):
        try:
            await aclose()
        except Exception:  # noqa: BLE001 -- a failing close must not mask the original outcome
            pass


async def transcode_stream(chunks: AsyncIterable[bytes], transcoder: Transcoder, *,
                           abort_on: tuple[type[BaseException], ...] = (),
                           on_abort: Callable[[BaseException], None] | None = None,
                           abort_error: Callable[[BaseException], BaseException | Error] | None = None,
                           ) -> AsyncIterator[bytes]:
    """Feed each chunk of ``chunks`` to ``transcoder``; yield the output as soon as it exists.

    ``chunks`` is any async iterable of bytes (an anyio ``ByteReceiveStream``
    is one). The last piece is what ``close()`` returns. Use it with
    ``contextlib.aclosing`` (or ``aclose()`` it) so that stopping early closes
    the source at once rather than when the generator is collected.
    ``on_abort`` is called with the exception before the error event is made
    (for logging). ``abort_error`` makes the error the output ends with (an
    exception or a canonical ``Error``) of the one caught: a proxy says an
    upstream's invalid answer is the upstream's fault, not the client's.
    """
    iterator = aiter(chunks)
    try:
        try:
            async for chunk in iterator:
                out = transcoder.feed(chunk)
                if out:
                    yield out
            out = transcoder.close()
        except abort_on as exc:
            if on_abort is not None:
                on_abort(exc)
            out = transcoder.abort(abort_error(exc) if abort_error is not None else exc)
        if out:
            yield out
    finally:
        await aclose_quietly(iterator)


async def pump(receive: ByteReceiveStream, send: ByteSendStream, transcoder: Transcoder, *,
               abort_on: tuple[type[BaseException], ...] = ()) -> None:
    """Transcode everything ``receive`` gives into ``send``, then close both streams.

    Each output piece is written (``await send.send``) before the next input
    chunk is read, so a slow reader slows the writer. Cancellation, an error
    or the end of input close both streams.
    """
    try:
        async with _closing(transcode_stream(receive, transcoder, abort_on=abort_on)) as pieces:
            async for piece in pieces:
                await send.send(piece)
    finally:
        await aclose_quietly(receive)
        await aclose_quietly(send)


class _closing:
    """``contextlib.aclosing``, closing shielded (the generator's own ``finally`` awaits a close)."""

    def __init__(self, generator: AsyncIterator[bytes]) -> None:
        self.generator = generator

    async def __aenter__(self) -> AsyncIterator[bytes]:
        return self.generator

    async def __aexit__(self, *exc_info: object) -> None:
        await aclose_quietly(self.generator)
