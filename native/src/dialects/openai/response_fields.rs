//! The openai response's fields (`src/interlingua/dialects/openai/response_fields.py`).
//! Owner: helper RO (issue 12).
#![forbid(unsafe_code)]
