//! anthropic requests (`src/interlingua/dialects/anthropic/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper AD) -----------------------------------------------------------------

// -- encoder (helper AE) -----------------------------------------------------------------
