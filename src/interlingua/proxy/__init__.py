"""interlingua.proxy: an ASGI app that lets any official client talk to any backend dialect.

    from interlingua.proxy import create_app, load_config
    app = create_app(load_config("proxy.toml"))     # mount it in any ASGI server

``interlingua serve --config proxy.toml`` runs it on uvicorn (README "Proxy").
Needs the ``proxy`` extra (anyio, aiohttp, httpx2, uvicorn). The names are
imported on first use, so ``interlingua`` commands that do not serve need none
of them.
"""

_NAMES = {"create_app": "app", "ProxyApp": "app", "Config": "config", "Backend": "config",
          "ConfigError": "config", "load_config": "config", "parse_config": "config"}

__all__ = list(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(name)
    from importlib import import_module
    return getattr(import_module(f".{_NAMES[name]}", __name__), name)
