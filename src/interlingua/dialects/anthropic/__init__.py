"""Anthropic Messages: ``request.py`` (requests); ``controls.py`` maps top-level fields."""

from .request import RequestDecoder, RequestEncoder

CODECS = {"request": (RequestDecoder, RequestEncoder)}
