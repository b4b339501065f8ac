//! The ollama response and stream codecs (`src/interlingua/dialects/ollama/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RL (issue 12).
#![forbid(unsafe_code)]
