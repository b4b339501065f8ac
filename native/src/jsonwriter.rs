//! Writing JSON incrementally, for encoders; re-serialising tokens, for decoders
//! (`src/interlingua/jsonwriter.py`: `JsonWriter`, `RawValue`, `dumps`, `key_bytes`).
//! Owner: helper S.
#![forbid(unsafe_code)]
