//! The pipeline (`src/interlingua/pipeline.py`): framing -> tokenizer -> dialect
//! decoder -> canonical events -> dialect encoder. `Transcoder` (bytes to bytes)
//! and the codec table. Owner: helper P (NATIVE.md); the dialect helpers add
//! their codec to the table, one arm each.
#![forbid(unsafe_code)]

use crate::decoding::Decode;
use crate::encoding::Encode;
use crate::error::{Error, ErrorClass, Result};
use crate::session::{Kind, Session};

fn not_ported(dialect: &str, kind: Kind, side: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("the native core has no {dialect} {kind:?} {side} yet"))
}

/// `dialects.codecs(dialect, kind)[0]`: the decoder of a dialect and kind.
pub fn decoder(dialect: &str, kind: Kind, session: &Session) -> Result<Box<dyn Decode>> {
    let _ = session;
    match (dialect, kind) {
        // ("openai", Kind::Request) => Ok(Box::new(crate::dialects::openai::request::RequestDecoder::new(session))),
        _ => Err(not_ported(dialect, kind, "decoder")),
    }
}

/// `dialects.codecs(dialect, kind)[1]`: the encoder of a dialect and kind.
pub fn encoder(dialect: &str, kind: Kind, session: &Session) -> Result<Box<dyn Encode>> {
    match (dialect, kind) {
        ("openai", Kind::Request) => Ok(Box::new(crate::dialects::openai::request::RequestEncoder::new(session))),
        _ => Err(not_ported(dialect, kind, "encoder")),
    }
}
