"""The exact request bytes each official client sends (captured with a mock transport).

The clients are the authority on key order: the anthropic client, for one,
serialises ``messages`` before ``system`` and ``tools`` -- the case that makes
an openai encoder hold. Nothing here touches the network.
"""

from __future__ import annotations

import json

from tests.official_clients import CAPTURE, anthropic_request, ollama_request, openai_request  # noqa: F401


def is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True
