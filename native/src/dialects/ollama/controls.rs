//! ollama request-level settings <-> canonical controls (`src/interlingua/dialects/ollama/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper L) ----------------------------------------------------------------

// -- encoding (helper L) ----------------------------------------------------------------
