"""The proxy's TOML configuration, and Transcoder(model=...) that backends with an upstream model name use."""

from __future__ import annotations

import json

import pytest

from interlingua import Options, Transcoder
from interlingua.proxy import ConfigError, load_config, parse_config

BODIES = {
    "openai": b'{"messages":[{"role":"user","content":"hi"}],"model":"client-name","temperature":0.5}',
    "anthropic": b'{"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"model":"client-name"}',
    "ollama": b'{"model":"client-name","messages":[{"role":"user","content":"hi"}],"stream":false}',
}
DIALECTS = tuple(BODIES)


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("source", DIALECTS)
def test_transcoder_model_renames_for_every_pair(source, target):
    plain = Transcoder(source, target)
    expected = json.loads(plain.feed(BODIES[source]) + plain.close())
    renamed = Transcoder(source, target, model='up"stream')
    out = json.loads(renamed.feed(BODIES[source]) + renamed.close())
    assert out["model"] == 'up"stream'
    assert {**out, "model": "client-name"} == expected  # nothing else changes
    assert renamed.losses == plain.losses


EXAMPLE = """
[server]
host = "127.0.0.1"
port = 9000
api_keys = ["k1", "k2"]
max_body_bytes = 1000

[options]
strict = false
openai_reasoning_field = "reasoning_content"
reorder_budget = 1048576

[[backends]]
name = "claude"
dialect = "anthropic"
url = "https://api.anthropic.com"
api_key_env = "PROXY_TEST_KEY"
models = ["claude-*", "sonnet"]
model = "claude-sonnet-4-5"
read_timeout = 30

[[backends]]
name = "local"
dialect = "ollama"
url = "http://127.0.0.1:11434"
models = ["*"]
"""


def test_example_config_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("PROXY_TEST_KEY", "secret")
    path = tmp_path / "proxy.toml"
    path.write_text(EXAMPLE)
    config = load_config(path)
    assert config.port == 9000 and config.api_keys == ("k1", "k2") and config.max_body_bytes == 1000
    assert config.options == Options(openai_reasoning_field="reasoning_content", reorder_budget=1048576)
    claude, local = config.backends
    assert claude.api_key == "secret" and claude.read_timeout == 30.0 and claude.endpoint.endswith("/v1/messages")
    assert (claude.listed_models(), local.listed_models()) == (["sonnet"], [])
    assert config.backend_for("claude-3") is claude and config.backend_for("llama3") is local
    assert (b"x-api-key", b"secret") in claude.auth_headers()


def test_readme_example_config_loads(monkeypatch):
    """The configuration shown in the README is the one documented key by key: it must load."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("```toml\n# proxy.toml") + len("```toml\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    import tomllib
    config = parse_config(tomllib.loads(readme[start:readme.index("```", start)]))
    assert config.backends


BASE = {"backends": [{"name": "b", "dialect": "openai", "url": "http://127.0.0.1:1", "models": ["*"]}]}


@pytest.mark.parametrize(("change", "names"), [
    ({"server": {"prot": 1}}, "prot"),
    ({"server": {"port": "80"}}, "server.port"),
    ({"backends": []}, "backends"),
    ({"backends": [{"name": "b", "dialect": "gemini", "url": "http://x", "models": ["*"]}]}, "dialect"),
    ({"backends": [{"name": "b", "dialect": "openai", "url": "ftp://x", "models": ["*"]}]}, "url"),
    ({"backends": [{"name": "b", "dialect": "openai", "url": "http://x", "models": []}]}, "models"),
    ({"backends": [{"dialect": "openai", "url": "http://x", "models": ["*"]}]}, "name"),
    ({"backends": [{"name": "b", "dialect": "openai", "url": "http://x", "models": ["*"],
                    "api_key_env": "PROXY_TEST_UNSET_VARIABLE"}]}, "PROXY_TEST_UNSET_VARIABLE"),
    ({"options": {"stritc": True}}, "options"),
    ({"options": {"strict": "yes"}}, "options"),
    ({"extra": {}}, "extra"),
    ({"server": {"upstream_client": "requests"}}, "upstream_client"),
])
def test_config_errors_name_the_key(change, names):
    with pytest.raises(ConfigError, match=names):
        parse_config({**BASE, **change})


@pytest.mark.parametrize("key", ["sk-SECRET\n", "sk-SECRET\r\n", "sk-\x7fSECRET", " sk-SECRET", "sk-SECRET\t",
                                 "sk-SECRETé", ""])
def test_a_backend_key_that_cannot_be_a_header_is_refused_without_showing_it(key, monkeypatch):
    """A key read from a file with its newline (``export K="$(cat key.txt; echo)"``), a CRLF .env: refused
    at load, naming the backend and where the key came from, never the key."""
    monkeypatch.setenv("PROXY_TEST_BAD_KEY", key)
    table = {"name": "b", "dialect": "anthropic", "url": "http://x", "models": ["*"]}
    with pytest.raises(ConfigError, match=r"backends\[0\]\.api_key_env \(PROXY_TEST_BAD_KEY\)") as info:
        parse_config({"backends": [{**table, "api_key_env": "PROXY_TEST_BAD_KEY"}]})
    assert "SECRET" not in str(info.value)
    with pytest.raises(ConfigError, match=r"backends\[0\]\.api_key:") as info:
        parse_config({"backends": [{**table, "api_key": key}]})
    assert "SECRET" not in str(info.value)
    with pytest.raises(ConfigError, match=r"anthropic_version"):
        parse_config({"backends": [{**table, "anthropic_version": "2023-06-01\n"}]})
