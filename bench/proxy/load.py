"""Proxy load benchmark (not a test): interlingua's proxy vs the upstream directly vs LiteLLM's proxy.

    .venv/bin/python -m bench.proxy.load [--quick] [--no-litellm] [--out bench/proxy/RESULTS.md]

Everything on 127.0.0.1, each server its own process:

* the upstream (``bench/proxy/upstream_server.py``): anthropic dialect; a
  streaming answer is 200 text-delta frames (+ start/stop events) written as
  fast as the socket takes them; a non-streaming answer is a small message;
* ``interlingua serve`` (one uvicorn worker, uvloop + httptools, the aiohttp
  upstream client, request logging on) with one anthropic backend;
* LiteLLM's proxy (``litellm --config``, ``litellm[proxy]``, one worker) with
  the same backend as ``anthropic/claude-bench``, ``LITELLM_LOCAL_MODEL_COST_MAP``
  set and telemetry off (it makes no outside connection);
* the load generator (this process, aiohttp on uvloop) sends openai-dialect
  requests (``POST /v1/chat/completions``) through each proxy, and the
  equivalent anthropic request to the upstream directly ("direct").

Phases per target: unloaded latency (sequential small and streaming
requests), small non-streaming throughput (100 concurrent), streaming with
100 and 1,000 concurrent clients. Recorded: requests/s, frames/s, errors,
per-request latency p50/p99 (and time to first byte), the proxy process's
CPU per request (user+system, psutil), its RSS before and after. Added
latency = proxy minus direct at the same percentile; per frame = added
stream latency / frames. The machine has 2 cores shared by the load
generator, the upstream and the proxy: figures under load include that
contention (said in the output).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parents[2]
FRAMES = 200
OPENAI_SMALL = (b'{"model":"claude-bench","messages":[{"role":"system","content":"Be brief."},'
                b'{"role":"user","content":"Hello there, how are you?"}],"max_tokens":64}')
OPENAI_STREAM = OPENAI_SMALL[:-1] + b',"stream":true}'
ANTHROPIC_SMALL = (b'{"model":"claude-bench","max_tokens":64,"system":"Be brief.",'
                   b'"messages":[{"role":"user","content":"Hello there, how are you?"}]}')
ANTHROPIC_STREAM = ANTHROPIC_SMALL[:-1] + b',"stream":true}'
LITELLM_KEY = "sk-bench-master-key-0123456789abcdef"  # LiteLLM's proxy refuses to start without one


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


@dataclass
class Target:
    name: str
    url: str
    small: bytes
    stream: bytes
    headers: dict
    process: psutil.Process | None = None


@dataclass
class Result:
    target: str
    phase: str
    requests: int
    errors: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    ttfb: list[float] = field(default_factory=list)
    cpu: float | None = None  # proxy process CPU seconds during the phase
    rss_before: int | None = None
    rss_after: int | None = None
    frames: int = 0

    def pct(self, values: list[float], q: float) -> float | None:
        if not values:
            return None
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def one(session: aiohttp.ClientSession, target: Target, stream: bool, result: Result) -> None:
    started = time.perf_counter()
    first = None
    frames = 0
    try:
        async with session.post(target.url, data=target.stream if stream else target.small,
                                headers=target.headers) as response:
            tail = b""
            async for chunk in response.content.iter_any():
                if first is None:
                    first = time.perf_counter()
                frames += chunk.count(b"\n\n")
                tail = (tail + chunk)[-64:]
            ok = response.status == 200 and (not stream or frames >= FRAMES and (
                b"[DONE]" in tail or b"message_stop" in tail))
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        ok = False
    end = time.perf_counter()
    if ok:
        result.latencies.append(end - started)
        result.ttfb.append((first or end) - started)
        result.frames += frames
    else:
        result.errors += 1


async def phase(target: Target, name: str, *, stream: bool, concurrency: int, total: int,
                timeout: float) -> Result:
    result = Result(target.name, name, total, 0, 0.0)
    proc = target.process
    if proc is not None:
        result.rss_before = _rss(proc)
        cpu_before = _cpu(proc)
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        queue = iter(range(total))

        async def worker():
            for _ in queue:
                await one(session, target, stream, result)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        result.seconds = time.perf_counter() - started
    if proc is not None:
        result.cpu = _cpu(proc) - cpu_before
        result.rss_after = _rss(proc)
    return result


def _cpu(proc: psutil.Process) -> float:
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


# -- the servers ------------------------------------------------------------------------------


def start_upstream(port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "bench.proxy.upstream_server", "--port", str(port),
                                "--frames", str(FRAMES)], cwd=ROOT)
    wait_listening(port, process)
    return process


def start_interlingua(port: int, upstream: int, workdir: Path) -> subprocess.Popen:
    config = workdir / "interlingua.toml"
    config.write_text(f"""
[server]
host = "127.0.0.1"
port = {port}

[[backends]]
name = "bench"
dialect = "anthropic"
url = "http://127.0.0.1:{upstream}"
api_key = "upstream-key"
models = ["claude-bench"]
""")
    process = subprocess.Popen([sys.executable, "-m", "interlingua", "serve", "--config", str(config)],
                               cwd=ROOT, stderr=open(workdir / "interlingua.log", "wb"))
    wait_listening(port, process)
    return process


def start_litellm(port: int, upstream: int, workdir: Path) -> subprocess.Popen | None:
    exe = Path(sys.executable).parent / "litellm"
    if not exe.exists():
        return None
    config = workdir / "litellm.yaml"
    config.write_text(f"""
model_list:
  - model_name: claude-bench
    litellm_params:
      model: anthropic/claude-bench
      api_base: http://127.0.0.1:{upstream}
      api_key: upstream-key
litellm_settings:
  telemetry: false
  drop_params: true
general_settings:
  master_key: {LITELLM_KEY}
""")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "LITELLM_LOG": "ERROR", "NO_PROXY": "*", "DISABLE_SCHEMA_UPDATE": "True"}
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env.pop(key, None)
    process = subprocess.Popen([str(exe), "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                                "--num_workers", "1"], cwd=workdir, env=env,
                               stdout=open(workdir / "litellm.log", "wb"), stderr=subprocess.STDOUT)
    try:
        wait_listening(port, process, seconds=120)
    except RuntimeError:
        process.kill()
        return None
    return process


# -- report -----------------------------------------------------------------------------------


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.2f}"


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def table(results: list[Result]) -> str:
    direct = {r.phase: r for r in results if r.target == "direct"}
    lines = ["| target | phase | requests | errors | req/s | frames/s | p50 ms | p99 ms | added p50 ms | "
             "added p99 ms | added/frame p50 ms | TTFB p50 ms | added TTFB p50 ms | proxy CPU ms/req | "
             "RSS before MiB | RSS after MiB |",
             "|" + "---|" * 16]
    for r in results:
        base = direct.get(r.phase)
        p50, p99 = r.pct(r.latencies, 0.5), r.pct(r.latencies, 0.99)
        t50 = r.pct(r.ttfb, 0.5)
        added50 = added99 = added_t50 = per_frame = None
        if base is not None and r.target != "direct" and p50 is not None and base.latencies:
            added50 = p50 - base.pct(base.latencies, 0.5)
            added99 = p99 - base.pct(base.latencies, 0.99)
            added_t50 = t50 - base.pct(base.ttfb, 0.5)
            if "stream" in r.phase:
                per_frame = added50 / FRAMES
        done = r.requests - r.errors
        cpu = None if r.cpu is None or not done else r.cpu / done
        lines.append(
            f"| {r.target} | {r.phase} | {r.requests} | {r.errors} | {done / r.seconds:.0f} | "
            f"{r.frames / r.seconds:.0f} | {ms(p50)} | {ms(p99)} | {ms(added50)} | {ms(added99)} | "
            f"{ms(per_frame)} | {ms(t50)} | {ms(added_t50)} | {ms(cpu)} | {mib(r.rss_before)} | {mib(r.rss_after)} |")
    return "\n".join(lines)


async def run_target(target: Target, quick: bool, only_small: bool = False) -> list[Result]:
    scale = 0.25 if quick else 1.0
    out = []
    print(f"-- {target.name}", flush=True)
    await phase(target, "warm-up", stream=False, concurrency=10, total=100, timeout=60)  # pools, imports
    await phase(target, "warm-up", stream=True, concurrency=10, total=20, timeout=60)
    plan = [("unloaded small (1 at a time)", False, 1, int(300 * scale)),
            ("unloaded stream (1 at a time)", True, 1, int(40 * scale)),
            ("small x100 concurrent", False, 100, int(4000 * scale)),
            ("stream x100 concurrent", True, 100, int(300 * scale)),
            ("stream x1000 concurrent", True, 1000, 1000),
            ("stream x1000 concurrent (again)", True, 1000, 1000)]
    for name, stream, concurrency, total in plan:
        if only_small and stream and concurrency > 1 and "again" in name:
            continue
        result = await phase(target, name, stream=stream, concurrency=concurrency, total=total, timeout=300)
        print(f"   {name}: {result.requests - result.errors}/{result.requests} ok in {result.seconds:.1f} s",
              flush=True)
        out.append(result)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a quarter of the requests (not the 1,000 streams)")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--out", default=None, help="write the table (markdown) here too")
    args = parser.parse_args()
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    workdir = Path(tempfile.mkdtemp(prefix="interlingua-proxy-bench-"))
    ports = {name: free_port() for name in ("upstream", "interlingua", "litellm")}
    processes = []
    try:
        upstream = start_upstream(ports["upstream"])
        processes.append(upstream)
        proxy = start_interlingua(ports["interlingua"], ports["upstream"], workdir)
        processes.append(proxy)
        litellm = None if args.no_litellm else start_litellm(ports["litellm"], ports["upstream"], workdir)
        if litellm is not None:
            processes.append(litellm)
        anthropic_headers = {"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}
        openai_headers = {"content-type": "application/json", "authorization": "Bearer k"}
        targets = [Target("direct", f"http://127.0.0.1:{ports['upstream']}/v1/messages", ANTHROPIC_SMALL,
                          ANTHROPIC_STREAM, anthropic_headers),
                   Target("interlingua", f"http://127.0.0.1:{ports['interlingua']}/v1/chat/completions",
                          OPENAI_SMALL, OPENAI_STREAM, openai_headers, psutil.Process(proxy.pid))]
        if litellm is not None:
            targets.append(Target("litellm", f"http://127.0.0.1:{ports['litellm']}/v1/chat/completions",
                                  OPENAI_SMALL, OPENAI_STREAM,
                                  {**openai_headers, "authorization": f"Bearer {LITELLM_KEY}"},
                                  psutil.Process(litellm.pid)))
        else:
            print("(LiteLLM's proxy is not installed or did not start: install the bench extra)")
        results = []
        for target in targets:
            results += asyncio.run(run_target(target, args.quick))
            if args.out:  # what is measured so far survives an interrupted run
                Path(args.out).write_text(table(results) + "\n")
        header = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores shared by the load "
                  f"generator, the upstream and the proxy; Python {platform.python_version()}; "
                  f"{FRAMES} frames per streamed answer; {'quick' if args.quick else 'full'} run")
        text = header + "\n\n" + table(results)
        print()
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
