"""OpenAI Chat Completions: ``request.py`` (and, later, ``response.py``) side by side."""

from .request import RequestDecoder, RequestEncoder

CODECS = {"request": (RequestDecoder, RequestEncoder)}
