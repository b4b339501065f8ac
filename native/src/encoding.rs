//! The shared machinery of dialect encoders (`src/interlingua/encoding.py`):
//! canonical events in, the target's JSON out, written as it becomes possible.
//! The trait is the contract between the stages; the rest of this file is
//! helper E's (NATIVE.md).
#![forbid(unsafe_code)]

use crate::canonical::Event;
use crate::error::Result;
use crate::session::Session;

/// A dialect encoder (`encoding.Encoder`): `out` is the run's output of this
/// feed; what must wait (a hold) goes to `session.reorder` and is written later.
pub trait Encode {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()>;
    /// The source ended (`finish`): write the rest.
    fn finish(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()>;
}
