//! The anthropic dialect (`src/interlingua/dialects/anthropic/`).
#![forbid(unsafe_code)]

pub mod controls;
pub mod request;
pub mod response;
