"""One peak-memory measurement in a fresh process.

``python memory_worker.py measure MODE BODY_FILE [SOURCE TARGET]`` spawns
``memory_worker.py MODE ...`` and prints its peak RSS in KiB, read with
``os.wait4`` (ru_maxrss). The extra hop matters: Linux carries the spawning
process's high-water RSS across exec into the child's ru_maxrss, so the child
must be spawned by this small launcher, not by the (large) benchmark process.
``baseline-*`` modes import what the measured mode imports and do nothing else.
"""

import json
import os
import sys

READ = 65536


def _stream(path, source, target):
    from interlingua import Transcoder

    transcoder = Transcoder(source, target)
    with open(path, "rb", buffering=0) as f, open(os.devnull, "wb") as out:
        while piece := f.read(READ):
            out.write(transcoder.feed(piece))
        out.write(transcoder.close())


def measure(*args) -> None:
    pid = os.posix_spawn(sys.executable, [sys.executable, __file__, *args], dict(os.environ))
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"worker failed: {args}")
    print(usage.ru_maxrss)


def main(mode, path=None, *pair):
    if mode == "measure":
        measure(path, *pair)
    elif mode == "baseline-interlingua":
        from interlingua import Transcoder

        Transcoder(*pair)  # imports the pair's codecs (loaded on first use), feeds nothing
    elif mode == "interlingua":
        _stream(path, *pair)
    elif mode == "baseline-json":
        with open(path, "rb"):
            pass
    elif mode == "json":
        with open(path, "rb") as f:
            json.dumps(json.loads(f.read()), ensure_ascii=False).encode()
    elif mode == "baseline-orjson":
        import orjson  # noqa: F401
    elif mode == "orjson":
        import orjson

        with open(path, "rb") as f:
            orjson.dumps(orjson.loads(f.read()))
    elif mode == "baseline-litellm":
        from contenders import litellm_adapter

        litellm_adapter()
    elif mode == "litellm":
        from contenders import litellm_adapter

        with open(path, "rb") as f:
            request, _ = litellm_adapter().translate_anthropic_to_openai(json.loads(f.read()))
        json.dumps(request, ensure_ascii=False, default=str).encode()
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(*sys.argv[1:])
