//! The shared machinery of dialect decoders (`src/interlingua/decoding.py`): a
//! pushdown machine over tokens, and the readers every dialect needs (a small
//! value, a string streamed as fragments, a value copied as raw JSON text).
//!
//! In Rust a decoder is an explicit state machine: its states are named enums
//! on a stack (DESIGN §9), not closures. The traits below are the contract
//! between the stages; the rest of this file is helper D's (NATIVE.md).
#![forbid(unsafe_code)]

use crate::canonical::Event;
use crate::error::Result;
use crate::json::{Frames, Token};
use crate::session::Session;

/// Where a decoder's canonical events go: the encoder (a `Transcoder`), or a
/// list (a `Decoder`). An event may borrow the chunk being fed.
pub trait EventSink {
    fn event(&mut self, event: Event<'_>, session: &mut Session) -> Result<()>;
}

/// A dialect decoder: tokens in, canonical events out (`decoding.Decoder`).
pub trait Decode {
    /// One token of the document (`on_token`); `path` is where the tokenizer is.
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()>;
    /// After each fed chunk: hand on raw text gathered so far (`flush`).
    fn flush(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// After the tokenizer closed successfully (`finish`).
    fn finish(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// Offset of the token being read: an error raised past the tokenizer (a
    /// budget, strict mode) is located there (`Decoder.at`).
    fn at(&self) -> u64;
}
