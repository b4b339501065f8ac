"""``interlingua serve``: the proxy on uvicorn.

    interlingua serve --config proxy.toml [--host H] [--port P] [--workers N]
    interlingua serve                       # 127.0.0.1:8080 with the embedded demo backend

``--host``/``--port`` override ``[server]``. With ``--workers N`` uvicorn
forks N processes sharing the socket; each builds the app from the config
path passed in the environment (``INTERLINGUA_PROXY_CONFIG``). A proxy is
stateless, so it scales by processes and by instances behind a balancer.

Under trio instead (hypercorn; the upstream client is then httpx2)::

    INTERLINGUA_PROXY_CONFIG=proxy.toml hypercorn -k trio --bind 127.0.0.1:8080 \\
        'interlingua.proxy.serve:app_from_env()'
"""

from __future__ import annotations

import logging
import os
import sys

ENV_CONFIG = "INTERLINGUA_PROXY_CONFIG"
ENV_DEMO = "INTERLINGUA_PROXY_DEMO"  # "host:port" of a demo server (serve without --config, several workers)


def setup_logging() -> None:
    """One line per request on stderr: the structured JSON of ``app.Exchange.log_line``."""
    logger = logging.getLogger("interlingua.proxy")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


def app_from_env():
    """The app for a worker process: from ``INTERLINGUA_PROXY_CONFIG``, or the demo."""
    setup_logging()
    demo = os.environ.get(ENV_DEMO)
    if demo:
        from .demo import demo_app
        host, _, port = demo.rpartition(":")
        return demo_app(host, int(port))
    from .app import create_app
    return create_app(os.environ[ENV_CONFIG])


def serve(config_path: str | None, host: str | None, port: int | None, workers: int) -> int:
    try:
        import uvicorn
    except ImportError:
        sys.stderr.write("interlingua serve needs the proxy extra: pip install 'interlingua[proxy]'\n")
        return 2
    from .config import load_config
    if config_path:
        config = load_config(config_path)  # checked here, so a bad file fails before any fork
        os.environ[ENV_CONFIG] = os.path.abspath(config_path)
        os.environ.pop(ENV_DEMO, None)
        host, port = host or config.host, port or config.port
    else:
        host, port = host or "127.0.0.1", port or 8080
        os.environ[ENV_DEMO] = f"{host}:{port}"
        sys.stderr.write(f"interlingua serve: no --config, every model goes to the embedded demo backend "
                         f"(anthropic dialect) at http://{host}:{port}/_demo\n"
                         f"  openai:    OpenAI(base_url='http://{host}:{port}/v1', api_key='x')\n"
                         f"  anthropic: Anthropic(base_url='http://{host}:{port}', api_key='x')\n"
                         f"  ollama:    ollama.Client(host='http://{host}:{port}')\n")
    setup_logging()
    uvicorn.run("interlingua.proxy.serve:app_from_env", factory=True, host=host, port=port, workers=workers,
                access_log=False, log_level="info", lifespan="on", timeout_graceful_shutdown=5)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="run the proxy (ASGI on uvicorn); without --config, with a demo backend")
    p.add_argument("--config", default=None, help="the TOML configuration (README 'Proxy')")
    p.add_argument("--host", default=None, help="overrides [server] host (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="overrides [server] port (default 8080)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")


def main(args) -> int:
    from .config import ConfigError
    try:
        return serve(args.config, args.host, args.port, args.workers)
    except (ConfigError, OSError) as exc:
        sys.stderr.write(f"interlingua serve: {exc}\n")
        return 2
