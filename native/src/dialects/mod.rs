//! One folder per dialect, request and response side by side (`src/interlingua/dialects/`).
#![forbid(unsafe_code)]

pub mod anthropic;
pub mod fields;
pub mod ollama;
pub mod openai;

pub const DIALECTS: [&str; 3] = ["openai", "anthropic", "ollama"];
