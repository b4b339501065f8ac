//! ollama requests (`src/interlingua/dialects/ollama/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper L) -----------------------------------------------------------------

// -- encoder (helper L) -----------------------------------------------------------------
