//! openai request-level settings <-> canonical controls (`src/interlingua/dialects/openai/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper D) ----------------------------------------------------------------

// -- encoding (helper E) ----------------------------------------------------------------
