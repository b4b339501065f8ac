"""Anthropic Messages: ``request.py`` and ``response.py`` side by side."""

from .request import RequestDecoder, RequestEncoder
from .response import ResponseDecoder, ResponseEncoder, StreamDecoder, StreamEncoder

CODECS = {
    "request": (RequestDecoder, RequestEncoder),
    "response": (ResponseDecoder, ResponseEncoder),
    "stream": (StreamDecoder, StreamEncoder),
}
