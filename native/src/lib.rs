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

pub mod canonical;
pub mod error;
pub mod framing;
pub mod json;
pub mod reorder;

#[cfg(feature = "python")]
mod python;
