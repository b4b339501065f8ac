//! The openai dialect (`src/interlingua/dialects/openai/`).
#![forbid(unsafe_code)]

pub mod controls;
pub mod request;
pub mod response;
