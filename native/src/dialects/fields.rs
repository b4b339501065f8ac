//! The JSON type of each top-level request field, per dialect, and the members a
//! request cannot go without (`src/interlingua/dialects/fields.py`). Owner: helper D.
//!
//! A decoder checks a field's first token against its table before it reads the
//! field (`Cx::expect`): a wrong type is a `SchemaError` at that token's offset
//! and path. Fields not listed (extensions) are copied as they came, any type.
#![forbid(unsafe_code)]

use crate::decoding::{Expect, ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING};

const INT: Expect = INTEGER.or(NULL);
const NUM: Expect = NUMBER.or(NULL);
const BOOL: Expect = BOOLEAN.or(NULL);
const STR: Expect = STRING.or(NULL);
const OBJ: Expect = OBJECT.or(NULL);
const ARR: Expect = ARRAY.or(NULL);

/// A dialect's table: `REQUEST_FIELDS[dialect]`, in the Python dict's order.
pub type Fields = &'static [(&'static str, Expect)];

pub const OPENAI: Fields = &[
    ("model", STRING),
    ("messages", ARRAY),
    ("tools", ARRAY), // the client declares it Iterable, not Optional
    ("functions", ARRAY),
    ("max_completion_tokens", NUM),
    ("max_tokens", NUM),
    ("temperature", NUM),
    ("top_p", NUM),
    ("stop", STRING.or(ARRAY).or(NULL)),
    ("stream", BOOL),
    ("tool_choice", STRING.or(OBJECT).or(NULL)),
    ("function_call", STRING.or(OBJECT).or(NULL)),
    ("parallel_tool_calls", BOOL),
    ("response_format", OBJ),
    ("reasoning_effort", STR),
    ("user", STR),
    ("seed", INT),
    ("n", INT),
    ("frequency_penalty", NUM),
    ("presence_penalty", NUM),
    ("logprobs", BOOL),
    ("top_logprobs", INT),
    ("service_tier", STR),
    ("stream_options", OBJ),
    ("metadata", OBJ),
];

pub const ANTHROPIC: Fields = &[
    ("model", STRING),
    ("max_tokens", INTEGER),
    ("messages", ARRAY),
    ("system", STRING.or(ARRAY)),
    ("tools", ARRAY),
    ("temperature", NUM),
    ("top_p", NUM),
    ("top_k", INT),
    ("stop_sequences", ARR),
    ("stream", BOOL),
    ("tool_choice", OBJ),
    ("thinking", OBJ),
    ("output_config", OBJ),
    ("metadata", OBJ),
    ("service_tier", STR),
];

pub const OLLAMA: Fields = &[
    ("model", STRING),
    ("messages", ARRAY),
    ("tools", ARR),
    ("options", OBJ),
    ("stream", BOOL),
    ("format", STRING.or(OBJECT).or(NULL)),
    ("think", BOOLEAN.or(STRING).or(NULL)),
    ("logprobs", BOOL),
    ("top_logprobs", INT),
    ("keep_alive", STRING.or(NUMBER).or(NULL)),
];

/// `REQUEST_FIELDS["ollama.options"]`
pub const OLLAMA_OPTIONS: Fields = &[
    ("num_predict", INT),
    ("temperature", NUM),
    ("top_p", NUM),
    ("top_k", INT),
    ("stop", ARR),
    ("seed", INT),
    ("presence_penalty", NUM),
    ("frequency_penalty", NUM),
];

/// `REQUEST_FIELDS[dialect]` (`"ollama.options"` included).
pub fn request_fields(dialect: &str) -> Option<Fields> {
    match dialect {
        "openai" => Some(OPENAI),
        "anthropic" => Some(ANTHROPIC),
        "ollama" => Some(OLLAMA),
        "ollama.options" => Some(OLLAMA_OPTIONS),
        _ => None,
    }
}

/// `REQUEST_FIELDS[dialect].get(key)`: the type a field must have, if it is listed.
pub fn field(fields: Fields, key: &[u8]) -> Option<Expect> {
    fields.iter().find(|(name, _)| name.as_bytes() == key).map(|&(_, expect)| expect)
}

/// `declared_integer`: whether the source declares the field at `key` (`options.x` for
/// ollama's options) an integer (numbers.rs: its integral float is taken as the integer).
pub fn declared_integer(dialect: &str, key: &str) -> bool {
    let (table, key) = match key.strip_prefix("options.") {
        Some(option) if dialect == "ollama" => ("ollama.options", option),
        _ => (dialect, key),
    };
    request_fields(table).and_then(|fields| field(fields, key.as_bytes())).is_some_and(|e| e.is_integer())
}

/// openai's reasoning_effort values (the official client's `ReasoningEffort`).
pub const OPENAI_REASONING_EFFORTS: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// What each dialect's request cannot go without (`REQUIRED`): a missing one is
/// a `SchemaError` naming it, at the body's closing brace.
pub const OPENAI_REQUIRED: &[&str] = &["model", "messages"];
pub const ANTHROPIC_REQUIRED: &[&str] = &["model", "max_tokens", "messages"];
pub const OLLAMA_REQUIRED: &[&str] = &["model"];

/// `REQUIRED[dialect]`.
pub fn required(dialect: &str) -> &'static [&'static str] {
    match dialect {
        "openai" => OPENAI_REQUIRED,
        "anthropic" => ANTHROPIC_REQUIRED,
        "ollama" => OLLAMA_REQUIRED,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_python_composes_them() {
        assert_eq!(field(OPENAI, b"stop").unwrap().name(), "a string or an array or null");
        assert_eq!(field(OLLAMA, b"think").unwrap().name(), "a boolean or a string or null");
        assert_eq!(field(ANTHROPIC, b"max_tokens").unwrap().name(), "an integer");
        assert_eq!(field(OPENAI, b"temperature").unwrap().name(), "a number or null");
        assert_eq!(field(OLLAMA_OPTIONS, b"num_predict").unwrap().name(), "an integer or null");
        assert_eq!(required("anthropic"), &["model", "max_tokens", "messages"]);
    }
}
