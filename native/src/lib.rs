//! interlingua's native core: plain Rust, no Python.
//!
//! The stages mirror the Python reference pipeline in `src/interlingua/`
//! module by module (see native/README.md). `python.rs` is the only file that
//! names PyO3; it is compiled only with the `python` feature (maturin turns it
//! on), so `cargo test` and the fuzz targets drive the core without an
//! interpreter.
//!
//! Every core module carries `#![forbid(unsafe_code)]`. The crate root cannot:
//! PyO3's macros expand to `unsafe` blocks inside `python.rs`, and `forbid`
//! cannot be lifted for one module. Without the `python` feature the whole
//! crate forbids it.
#![cfg_attr(not(feature = "python"), forbid(unsafe_code))]

// the stages below the codecs
pub mod canonical;
pub mod error;
pub mod framing;
pub mod json;
pub mod reorder;
// what the codecs share (session.py, losses.py, naming.py, jsonwriter.py, a small JSON value)
pub mod compact;
pub mod digest;
pub mod images;
pub mod jsonwriter;
pub mod losses;
pub mod naming;
pub mod numbers;
pub mod session;
pub mod spare;
pub mod unicode;
pub mod value;
// the codec machinery and the codecs
pub mod decoding;
pub mod dialects;
pub mod encoding;
pub mod lifecycle;
pub mod passthrough;
pub mod pipeline;

#[cfg(feature = "python")]
mod python;
/// A transcoder's decoder and encoder are boxed once per response (and the transcoder by
/// the binding): each must stay within
/// the 1032 bytes glibc's thread cache serves, or its malloc and free take the slow path
/// (~1k instructions per response; the anthropic decoder and the ollama encoder were over).
#[cfg(test)]
mod box_sizes {
    #[test]
    fn response_codecs_fit_the_allocators_thread_cache() {
        use crate::dialects::{anthropic, ollama, openai};
        use std::mem::size_of;
        let sizes = [
            ("openai response decoder", size_of::<openai::response::ResponseDecoder>()),
            ("openai stream decoder", size_of::<openai::response::StreamDecoder>()),
            ("anthropic response decoder", size_of::<anthropic::response::ResponseDecoder>()),
            ("anthropic stream decoder", size_of::<anthropic::response::StreamDecoder>()),
            ("ollama response decoder", size_of::<ollama::response::ResponseDecoder>()),
            ("ollama stream decoder", size_of::<ollama::response::StreamDecoder>()),
            ("openai response encoder", size_of::<openai::response::ResponseEncoder>()),
            ("openai stream encoder", size_of::<openai::response::StreamEncoder>()),
            ("anthropic response encoder", size_of::<anthropic::response::ResponseEncoder>()),
            ("anthropic stream encoder", size_of::<anthropic::response::StreamEncoder>()),
            ("ollama response encoder", size_of::<ollama::response::ResponseEncoder>()),
            ("ollama stream encoder", size_of::<ollama::response::StreamEncoder>()),
            ("transcoder", size_of::<crate::pipeline::Transcoder>()),
        ];
        for (name, size) in sizes {
            assert!(size <= 1032, "{name}: {size} bytes");
        }
    }
}
