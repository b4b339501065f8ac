//! The ollama dialect (`src/interlingua/dialects/ollama/`).
#![forbid(unsafe_code)]

pub mod controls;
pub mod request;
pub mod response;
