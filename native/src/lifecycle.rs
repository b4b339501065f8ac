//! The response lifecycle (`src/interlingua/lifecycle.py`): finish-reason tables,
//! usage from and to each dialect, times and generated ids (`Stamp`), logprobs, and the
//! helpers the response and stream codecs share (`BlockStream`, `KeyFirst`,
//! `ReasoningFirst`, `Deferred`, `OpenFrame`). Owner: helper RF (issue 12).
#![forbid(unsafe_code)]
