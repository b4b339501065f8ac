//! Every field of the official openai client's response models, classified
//! (`src/interlingua/dialects/openai/response_fields.py`, issue 14.2). Owner: helper RO (issue 12).
//!
//! `RESPONSE` covers `ChatCompletion`, `STREAM` `ChatCompletionChunk`. Python's
//! `tests/fidelity` walks the installed client's models against the Python table; the
//! native codecs carry the same dispositions in their rules (response.rs), and nothing
//! in the pipeline reads this table at run time. It is here, entry for entry and in the
//! Python dict's order, so that a rule and its classification can be read side by side;
//! `tests/native/test_openai_response_parity.py` holds it equal to Python's.
//!
//! Each entry is `(path, disposition, homes)`: `Mapped` (read into canonical events;
//! `homes`: the other dialects that hold it), `Structural` (says nothing beyond the
//! shape), `Extension` (no canonical meaning: the same dialect passes it through, any
//! other records it lost), `Timestamp` (when the response was made: passed through to
//! the same dialect, dropped by the others without a record). Paths use `[]` for any
//! element and `<type>` for one variant of a union.
#![forbid(unsafe_code)]

/// What a field is to the codecs (`MAPPED`, `STRUCTURAL`, `EXTENSION`, `TIMESTAMP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    Mapped,
    Structural,
    Extension,
    Timestamp,
}

impl Disposition {
    /// The Python constant's value.
    pub fn name(self) -> &'static str {
        match self {
            Disposition::Mapped => "mapped",
            Disposition::Structural => "structural",
            Disposition::Extension => "extension*",
            Disposition::Timestamp => "timestamp",
        }
    }
}

use Disposition::{Extension as E, Mapped as M, Structural as S, Timestamp as T};

/// `ALL`: every other dialect.
const ALL: &[&str] = &["anthropic", "ollama"];
const NONE: &[&str] = &[];
const ANTHROPIC: &[&str] = &["anthropic"];

pub type Fields = &'static [(&'static str, Disposition, &'static [&'static str])];

/// `RESPONSE`: `ChatCompletion`.
pub const RESPONSE: Fields = &[
    ("$.id", M, ANTHROPIC),
    ("$.model", M, ALL),
    ("$.object", S, ALL),
    ("$.created", T, ALL),
    ("$.service_tier", M, ANTHROPIC),
    ("$.system_fingerprint", E, NONE),
    ("$.moderation", E, NONE),
    ("$.choices", S, ALL),
    ("$.choices[].index", S, ALL),
    ("$.choices[].finish_reason", M, ALL),
    ("$.choices[].logprobs", E, NONE),
    ("$.usage", S, ALL),
    ("$.usage.prompt_tokens", M, ALL),
    ("$.usage.completion_tokens", M, ALL),
    ("$.usage.total_tokens", M, ALL),
    ("$.usage.prompt_tokens_details", S, ALL),
    ("$.usage.prompt_tokens_details.cached_tokens", M, ANTHROPIC),
    ("$.usage.prompt_tokens_details.cache_write_tokens", M, ANTHROPIC),
    ("$.usage.prompt_tokens_details.audio_tokens", E, NONE),
    ("$.usage.prompt_tokens_details.image_tokens", E, NONE),
    ("$.usage.prompt_tokens_details.text_tokens", E, NONE),
    ("$.usage.completion_tokens_details", S, ALL),
    ("$.usage.completion_tokens_details.reasoning_tokens", M, ANTHROPIC),
    ("$.usage.completion_tokens_details.audio_tokens", E, NONE),
    ("$.usage.completion_tokens_details.accepted_prediction_tokens", E, NONE),
    ("$.usage.completion_tokens_details.rejected_prediction_tokens", E, NONE),
    ("$.usage.completion_tokens_details.text_tokens", E, NONE),
    ("$.metadata", E, NONE),
    ("$.choices[].message", S, ALL),
    ("$.choices[].message.role", S, ALL),
    ("$.choices[].message.content", M, ALL),
    ("$.choices[].message.refusal", M, NONE),
    ("$.choices[].message.annotations", E, NONE),
    ("$.choices[].message.audio", E, NONE),
    ("$.choices[].message.function_call", E, NONE),
    ("$.choices[].message.tool_calls", S, ALL),
    ("$.choices[].message.tool_calls[]<function>.id", M, ALL),
    ("$.choices[].message.tool_calls[]<function>.type", S, ALL),
    ("$.choices[].message.tool_calls[]<function>.function", S, ALL),
    ("$.choices[].message.tool_calls[]<function>.function.name", M, ALL),
    ("$.choices[].message.tool_calls[]<function>.function.arguments", M, ALL),
    ("$.choices[].message.tool_calls[]<custom>", E, NONE),
];

/// `STREAM`: `ChatCompletionChunk`.
pub const STREAM: Fields = &[
    ("$.id", M, ANTHROPIC),
    ("$.model", M, ALL),
    ("$.object", S, ALL),
    ("$.created", T, ALL),
    ("$.service_tier", M, ANTHROPIC),
    ("$.system_fingerprint", E, NONE),
    ("$.moderation", E, NONE),
    ("$.choices", S, ALL),
    ("$.choices[].index", S, ALL),
    ("$.choices[].finish_reason", M, ALL),
    ("$.choices[].logprobs", E, NONE),
    ("$.usage", S, ALL),
    ("$.usage.prompt_tokens", M, ALL),
    ("$.usage.completion_tokens", M, ALL),
    ("$.usage.total_tokens", M, ALL),
    ("$.usage.prompt_tokens_details", S, ALL),
    ("$.usage.prompt_tokens_details.cached_tokens", M, ANTHROPIC),
    ("$.usage.prompt_tokens_details.cache_write_tokens", M, ANTHROPIC),
    ("$.usage.prompt_tokens_details.audio_tokens", E, NONE),
    ("$.usage.prompt_tokens_details.image_tokens", E, NONE),
    ("$.usage.prompt_tokens_details.text_tokens", E, NONE),
    ("$.usage.completion_tokens_details", S, ALL),
    ("$.usage.completion_tokens_details.reasoning_tokens", M, ANTHROPIC),
    ("$.usage.completion_tokens_details.audio_tokens", E, NONE),
    ("$.usage.completion_tokens_details.accepted_prediction_tokens", E, NONE),
    ("$.usage.completion_tokens_details.rejected_prediction_tokens", E, NONE),
    ("$.usage.completion_tokens_details.text_tokens", E, NONE),
    ("$.obfuscation", E, NONE),
    ("$.choices[].delta", S, ALL),
    ("$.choices[].delta.role", S, ALL),
    ("$.choices[].delta.content", M, ALL),
    ("$.choices[].delta.refusal", M, NONE),
    ("$.choices[].delta.audio", E, NONE),
    ("$.choices[].delta.function_call", E, NONE),
    ("$.choices[].delta.tool_calls", S, ALL),
    ("$.choices[].delta.tool_calls[].index", S, ALL),
    ("$.choices[].delta.tool_calls[].id", M, ALL),
    ("$.choices[].delta.tool_calls[].type", S, ALL),
    ("$.choices[].delta.tool_calls[].function", S, ALL),
    ("$.choices[].delta.tool_calls[].function.name", M, ALL),
    ("$.choices[].delta.tool_calls[].function.arguments", M, ALL),
];

/// A field's classification (`RESPONSE.get(path)` / `STREAM.get(path)`).
pub fn classify(fields: Fields, path: &str) -> Option<(Disposition, &'static [&'static str])> {
    fields.iter().find(|(p, _, _)| *p == path).map(|&(_, d, homes)| (d, homes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_once_and_the_shared_part_alike() {
        for fields in [RESPONSE, STREAM] {
            for (i, (path, _, _)) in fields.iter().enumerate() {
                assert!(!fields[..i].iter().any(|(p, _, _)| p == path), "{path} twice");
            }
        }
        // _TOP, _CHOICE, _USAGE: the first 27 entries of both
        assert_eq!(RESPONSE[..27], STREAM[..27]);
        assert_eq!(classify(STREAM, "$.created"), Some((Disposition::Timestamp, ALL)));
        assert_eq!(classify(RESPONSE, "$.choices[].delta"), None);
    }
}
