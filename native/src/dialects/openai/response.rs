//! The openai response and stream codecs (`src/interlingua/dialects/openai/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RO (issue 12).
#![forbid(unsafe_code)]
