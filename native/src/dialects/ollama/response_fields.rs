//! The ollama response's fields (`src/interlingua/dialects/ollama/response_fields.py`):
//! every field of the official client's `ChatResponse`, classified, and the groups the
//! codecs read (a stream's lines are `ChatResponse` objects too: `STREAM` is `RESPONSE`).
//! Owner: helper RL (issue 12).
#![forbid(unsafe_code)]

/// How a field is carried (`MAPPED`, `STRUCTURAL`, `EXTENSION`, `TIMESTAMP` of the Python module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    Mapped,
    Structural,
    /// an ollama extension: other dialects record a loss
    Extension,
    Timestamp,
    /// mapped for some targets only (`"mapped*"`: the logprobs entries go whole)
    MappedSome,
}

/// The targets a field reaches: both others, none, or openai only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Targets {
    All,
    None,
    Openai,
}

use Disposition::*;

/// `RESPONSE`, in the Python dict's order.
pub const RESPONSE: &[(&str, Disposition, Targets)] = &[
    ("$.model", Mapped, Targets::All),
    ("$.created_at", Timestamp, Targets::All),
    ("$.done", Structural, Targets::All),
    ("$.done_reason", Mapped, Targets::All),
    ("$.total_duration", Extension, Targets::None),
    ("$.load_duration", Extension, Targets::None),
    ("$.prompt_eval_count", Mapped, Targets::All),
    ("$.prompt_eval_duration", Extension, Targets::None),
    ("$.eval_count", Mapped, Targets::All),
    ("$.eval_duration", Extension, Targets::None),
    ("$.message", Structural, Targets::All),
    ("$.message.role", Structural, Targets::All),
    ("$.message.content", Mapped, Targets::All),
    // anthropic writes it as thinking with "signature": "" -- a recorded loss; openai: only
    // with openai_reasoning_field
    ("$.message.thinking", Mapped, Targets::None),
    ("$.message.images", Extension, Targets::None),
    ("$.message.tool_name", Extension, Targets::None),
    ("$.message.tool_calls", Structural, Targets::All),
    ("$.message.tool_calls[].function", Structural, Targets::All),
    ("$.message.tool_calls[].function.name", Mapped, Targets::All),
    ("$.message.tool_calls[].function.arguments", Mapped, Targets::All),
    // issue 17.3: openai choices[].logprobs.content; anthropic has none (a recorded loss)
    ("$.logprobs", MappedSome, Targets::Openai),
];
pub const STREAM: &[(&str, Disposition, Targets)] = RESPONSE;

/// `_DURATIONS` of response.py: ollama extensions, written back on the done line in this order.
pub const DURATIONS: [&str; 4] = ["total_duration", "load_duration", "prompt_eval_duration", "eval_duration"];
/// `_COUNTS`: the token counts (`Usage` input, output).
pub const COUNTS: [&str; 2] = ["prompt_eval_count", "eval_count"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_are_fields_of_the_table() {
        for key in DURATIONS {
            assert!(RESPONSE.contains(&(&*format!("$.{key}"), Extension, Targets::None)), "{key}");
        }
        for key in COUNTS {
            assert!(RESPONSE.iter().any(|(path, d, _)| *path == format!("$.{key}") && *d == Mapped), "{key}");
        }
    }
}
