"""Anthropic Messages."""

from .response import ResponseDecoder, ResponseEncoder, StreamDecoder, StreamEncoder

CODECS = {"response": (ResponseDecoder, ResponseEncoder), "stream": (StreamDecoder, StreamEncoder)}
