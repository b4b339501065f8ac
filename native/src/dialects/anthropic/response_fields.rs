//! The anthropic response's fields (`src/interlingua/dialects/anthropic/response_fields.py`).
//! Owner: helper RA (issue 12).
#![forbid(unsafe_code)]
