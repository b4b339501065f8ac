"""``interlingua`` command line: transcode stdin to stdout as a stream, or print canonical events.

Bad input: one line on stderr naming the error class, dialect, offset and path;
exit status 2. Any other failure (a bug) is one line and exit 2 too, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib import resources

import msgspec

from .canonical import Block
from .dialects import DIALECTS, KINDS
from .errors import TranscodeError
from .pipeline import Decoder, Transcoder
from .session import Options

READ_SIZE = 16384


def _options(args) -> Options:
    return Options(strict=args.strict, openai_reasoning_field=args.openai_reasoning_field,
                   refuse_reorder=args.refuse_reorder,
                   **({"reorder_budget": args.reorder_budget} if args.reorder_budget else {}))


def _chunks(stream):
    """Whatever is available, as soon as it is (not waiting for READ_SIZE bytes)."""
    fd = stream.fileno()
    while True:
        data = os.read(fd, READ_SIZE)
        if not data:
            return
        yield data


def event_json(event) -> dict:
    """An event as a JSON-able dict (payload decoded for reading)."""
    data = msgspec.to_builtins(event)
    if isinstance(event, Block):
        data["payload"] = event.payload.decode("utf-8", "replace")
    elif "raw" in data and data["raw"] is not None:
        data["raw"] = event.raw.decode("utf-8", "replace")
    return data


def _transcode(args, source) -> int:
    transcoder = Transcoder(args.source, args.target, kind=args.kind, options=_options(args))
    out = sys.stdout.buffer
    try:
        for chunk in source:
            data = transcoder.feed(chunk)
            if data:
                out.write(data)
                out.flush()
        out.write(transcoder.close())
        out.flush()
    except TranscodeError:
        out.write(transcoder.pending_output())  # the valid prefix produced before the error
        out.flush()
        raise
    finally:
        if args.losses:
            for loss in transcoder.losses:
                sys.stderr.write(json.dumps(msgspec.to_builtins(loss)) + "\n")
    return 0


def _blocks(args, source) -> int:
    decoder = Decoder(args.source, kind=args.kind, options=_options(args))
    out = sys.stdout
    for chunk in source:
        for event in decoder.feed(chunk):
            out.write(json.dumps(event_json(event), ensure_ascii=False) + "\n")
        out.flush()
    for event in decoder.close():
        out.write(json.dumps(event_json(event), ensure_ascii=False) + "\n")
    return 0


def _sample(name: str) -> bytes:
    return resources.files("interlingua").joinpath("samples", name).read_bytes()


def _demo(args) -> int:
    """The README's main job: transcode the shipped sample request and show its canonical blocks."""
    body = _sample("openai-request.json")
    print("== sample openai request ==")
    print(body.decode())
    print("== canonical events (fed in 7-byte chunks) ==")
    decoder = Decoder("openai")
    for i in range(0, len(body), 7):
        for event in decoder.feed(body[i:i + 7]):
            print(json.dumps(event_json(event), ensure_ascii=False))
    for event in decoder.close():
        print(json.dumps(event_json(event), ensure_ascii=False))
    print("== openai -> openai ==")
    transcoder = Transcoder("openai", "openai")
    print((transcoder.feed(body) + transcoder.close()).decode())
    print()
    from .proxy import showcase  # the proxy end to end over real HTTP (needs the proxy extra)
    return showcase.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="interlingua", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--from", dest="source", choices=DIALECTS, required=True)
        p.add_argument("--kind", choices=KINDS, default="request")
        p.add_argument("--strict", action="store_true", help="a field the target cannot carry is an error")
        p.add_argument("--openai-reasoning-field", choices=["reasoning_content", "reasoning"], default=None)
        p.add_argument("--reorder-budget", type=int, default=None, help="bytes that may be held for reordering")
        p.add_argument("--refuse-reorder", action="store_true", help="fail instead of holding anything")

    t = sub.add_parser("transcode", help="stdin (source dialect) -> stdout (target dialect), streaming")
    common(t)
    t.add_argument("--to", dest="target", choices=DIALECTS, required=True)
    t.add_argument("--losses", action="store_true", help="print loss records to stderr as JSON lines")
    b = sub.add_parser("blocks", help="print the canonical events of stdin, one JSON object a line")
    common(b)
    sub.add_parser("demo", help="transcode the shipped sample request and show its canonical blocks")
    from .proxy import serve as proxy_serve  # imports nothing of the proxy's dependencies until run
    proxy_serve.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            return _demo(args)
        if args.command == "serve":
            return proxy_serve.main(args)
        source = _chunks(sys.stdin.buffer)
        return _transcode(args, source) if args.command == "transcode" else _blocks(args, source)
    except TranscodeError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"interlingua: {type(exc).__name__}: {exc}\n")
        return 2
    except ValueError as exc:  # unknown dialect/kind pair
        sys.stderr.write(f"interlingua: {exc}\n")
        return 2
    except Exception as exc:  # a bug: still one line and exit 2, never a traceback (say it is ours)
        sys.stdout.flush()
        where = f" ({args.source})" if getattr(args, "source", None) else ""
        sys.stderr.write(f"interlingua: internal error{where}: {type(exc).__name__}: {exc}"
                         .replace("\n", " ") + "\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
