//! openai requests (`src/interlingua/dialects/openai/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper D) -----------------------------------------------------------------

// -- encoder (helper E) -----------------------------------------------------------------
