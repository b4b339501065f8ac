"""Ollama chat (``POST /api/chat``): ``request.py`` (and, later, the responses) side by side."""

from .request import RequestDecoder, RequestEncoder

CODECS = {"request": (RequestDecoder, RequestEncoder)}
