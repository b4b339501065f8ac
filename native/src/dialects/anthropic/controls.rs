//! anthropic request-level settings <-> canonical controls (`src/interlingua/dialects/anthropic/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper AD) ----------------------------------------------------------------

// -- encoding (helper AE) ----------------------------------------------------------------
