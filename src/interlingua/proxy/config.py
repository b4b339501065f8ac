"""The proxy's configuration: one TOML file (stdlib ``tomllib``), documented key by key in README.md.

    [server]
    host = "127.0.0.1"          port = 8080
    api_keys = ["sk-local-1"]   # optional: clients must present one
    max_body_bytes = 33554432   # a larger client body gets 413

    [options]                   # what interlingua.Options takes
    strict = false

    [[backends]]
    name = "claude"  dialect = "anthropic"  url = "https://api.anthropic.com"
    api_key_env = "ANTHROPIC_API_KEY"  models = ["claude-*"]

Unknown keys are an error (a typo must not silently change nothing), and so
is a wrong type; ``ConfigError`` names the key.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..session import Options

DIALECT_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
DEFAULT_MAX_BODY = 32 << 20
GLOB_CHARS = frozenset("*?[")


class ConfigError(ValueError):
    """The configuration is not valid: names the key and what is wrong."""


@dataclass(frozen=True)
class Backend:
    """One upstream: where it is, which dialect it speaks, which client model names go there."""

    name: str
    dialect: str
    url: str
    models: tuple[str, ...]
    api_key: str | None = None
    model: str | None = None  # the model name sent upstream (None: the client's)
    path: str | None = None  # overrides the dialect's path appended to url
    connect_timeout: float = 10.0
    read_timeout: float = 300.0  # the longest wait for the next byte from upstream
    anthropic_version: str = "2023-06-01"

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + (self.path or DIALECT_PATHS[self.dialect])

    def serves(self, model: str) -> bool:
        return any(fnmatch.fnmatchcase(model, pattern) for pattern in self.models)

    def listed_models(self) -> list[str]:
        """The names ``/v1/models`` and ``/api/tags`` show: the literal ones (a glob is not a model)."""
        return [m for m in self.models if not GLOB_CHARS & set(m)]

    def auth_headers(self) -> list[tuple[bytes, bytes]]:
        """The backend's own credentials, per dialect (the client's never reach the upstream)."""
        headers = []
        if self.dialect == "anthropic":
            headers.append((b"anthropic-version", self.anthropic_version.encode()))
            if self.api_key:
                headers.append((b"x-api-key", self.api_key.encode()))
        elif self.api_key:  # openai; ollama needs none, but a hosted one takes a bearer token
            headers.append((b"authorization", b"Bearer " + self.api_key.encode()))
        return headers


@dataclass(frozen=True)
class Config:
    backends: tuple[Backend, ...]
    host: str = "127.0.0.1"
    port: int = 8080
    api_keys: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY
    options: Options = field(default_factory=Options)
    log_requests: bool = True  # one structured log line per request
    upstream_client: str = "auto"  # aiohttp on asyncio, httpx2 under trio (upstream.py says why)

    def backend_for(self, model: str) -> Backend | None:
        """The first backend (in file order) whose ``models`` match."""
        for backend in self.backends:
            if backend.serves(model):
                return backend
        return None


_SERVER_KEYS = {"host": str, "port": int, "api_keys": list, "max_body_bytes": int, "log_requests": bool,
                "upstream_client": str}
UPSTREAM_CLIENTS = ("auto", "aiohttp", "httpx2")
_BACKEND_KEYS = {"name": str, "dialect": str, "url": str, "models": list, "api_key": str, "api_key_env": str,
                 "model": str, "path": str, "connect_timeout": (int, float), "read_timeout": (int, float),
                 "anthropic_version": str}


def _check(table: dict, allowed: dict, where: str) -> None:
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(allowed))})")
        if not isinstance(value, allowed[key]) or isinstance(value, bool) and allowed[key] is not bool:
            raise ConfigError(f"{where}.{key}: wrong type {type(value).__name__}")


def _check_header_value(value: str, where: str) -> None:
    """A value sent as a header: printable ASCII, no surrounding space. A key read from a file keeps its
    newline; the HTTP clients then refuse it (aiohttp) or quote it in their error (httpx). The message
    never holds the value: it is a secret."""
    if not value or not value.isascii() or not value.isprintable() or value != value.strip():
        raise ConfigError(f"{where}: must be printable ASCII without surrounding spaces (a newline or other "
                          f"control character, a space at either end or a non-ASCII character is not sent as a "
                          f"header); the value is not shown")


def _backend(table: dict, i: int) -> Backend:
    where = f"backends[{i}]"
    _check(table, _BACKEND_KEYS, where)
    for key in ("name", "dialect", "url", "models"):
        if key not in table:
            raise ConfigError(f"{where}: missing {key!r}")
    if table["dialect"] not in DIALECT_PATHS:
        raise ConfigError(f"{where}.dialect: {table['dialect']!r} is not one of {', '.join(DIALECT_PATHS)}")
    if not table["url"].startswith(("http://", "https://")):
        raise ConfigError(f"{where}.url: must start with http:// or https://")
    if not table["models"] or not all(isinstance(m, str) for m in table["models"]):
        raise ConfigError(f"{where}.models: a non-empty list of model names or glob patterns")
    api_key = table.get("api_key")
    if "api_key_env" in table:
        if api_key is not None:
            raise ConfigError(f"{where}: api_key and api_key_env are exclusive")
        api_key = os.environ.get(table["api_key_env"])
        if api_key is None:
            raise ConfigError(f"{where}.api_key_env: environment variable {table['api_key_env']} is not set")
    if api_key is not None:
        _check_header_value(api_key, f"{where}.api_key_env ({table['api_key_env']})" if "api_key_env" in table
                            else f"{where}.api_key")
    if "anthropic_version" in table:
        _check_header_value(table["anthropic_version"], f"{where}.anthropic_version")
    fields = {k: v for k, v in table.items() if k not in ("models", "api_key", "api_key_env")}
    for key in ("connect_timeout", "read_timeout"):
        if key in fields:
            fields[key] = float(fields[key])
    return Backend(models=tuple(table["models"]), api_key=api_key, **fields)


def _options(table: dict) -> Options:
    try:
        return Options(**table)
    except TypeError as exc:
        raise ConfigError(f"options: {exc}") from None


def parse_config(data: dict[str, Any]) -> Config:
    """A ``Config`` from parsed TOML (or any dict of the same shape)."""
    unknown = set(data) - {"server", "backends", "options"}
    if unknown:
        raise ConfigError(f"unknown table(s): {', '.join(sorted(unknown))} (known: server, backends, options)")
    server = data.get("server", {})
    _check(server, _SERVER_KEYS, "server")
    backends = data.get("backends")
    if not backends:
        raise ConfigError("backends: at least one [[backends]] table is needed")
    names = [b.get("name") for b in backends]
    if len(set(names)) != len(names):
        raise ConfigError("backends: names must be unique")
    api_keys = tuple(server.get("api_keys", ()))
    if not all(isinstance(k, str) and k for k in api_keys):
        raise ConfigError("server.api_keys: a list of non-empty strings")
    if server.get("upstream_client", "auto") not in UPSTREAM_CLIENTS:
        raise ConfigError(f"server.upstream_client: one of {', '.join(UPSTREAM_CLIENTS)}")
    options = _options(data.get("options", {}))
    try:
        import msgspec
        options = msgspec.convert(msgspec.to_builtins(options), Options)  # type-checks each field
    except msgspec.ValidationError as exc:
        raise ConfigError(f"options: {exc}") from None
    return Config(
        backends=tuple(_backend(b, i) for i, b in enumerate(backends)),
        host=server.get("host", "127.0.0.1"), port=server.get("port", 8080), api_keys=api_keys,
        max_body_bytes=server.get("max_body_bytes", DEFAULT_MAX_BODY),
        log_requests=server.get("log_requests", True), options=options,
        upstream_client=server.get("upstream_client", "auto"),
    )


def load_config(path: str | os.PathLike) -> Config:
    """Read and check a TOML configuration file."""
    with open(Path(path), "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return parse_config(data)
