//! The ollama response's fields (`src/interlingua/dialects/ollama/response_fields.py`).
//! Owner: helper RL (issue 12).
#![forbid(unsafe_code)]
