//! The anthropic response and stream codecs (`src/interlingua/dialects/anthropic/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RA (issue 12).
#![forbid(unsafe_code)]
