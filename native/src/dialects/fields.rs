//! The JSON type of each top-level request field, per dialect, and the members a
//! request cannot go without (`src/interlingua/dialects/fields.py`). Owner: helper D.
//!
//! A decoder checks a field's first token against its table before it reads the
//! field (`Cx::expect`): a wrong type is a `SchemaError` at that token's offset
//! and path. Fields not listed (extensions) are copied as they came, any type.
#![forbid(unsafe_code)]

use crate::decoding::{Expect, ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, OBJECT, STRING};
use crate::error::{Error, ErrorClass, Result};
use crate::json::py_str_repr;
use crate::value::Value;

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
    ("thinking", OBJ), // LiteLLM's (and other gateways'): anthropic's thinking setting in an openai body
    ("reasoning", OBJ), // OpenRouter's (and other gateways'): one reasoning setting for every model
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

// -- inside a control's value (fields.py MEMBER_FIELDS, REQUIRED_MEMBERS) ----------------
//
// A control's value is read whole, so its members are checked on the value: a member of
// the wrong type is a SchemaError at `$.<field>.<member>` (an element: `$.<field>[i]`),
// located at the field's first byte; the first wrong member in the input's order is named.

/// A field's members by dotted path inside it (`[]`: every element of an array value).
type Members = &'static [(&'static str, Expect)];

/// `MEMBER_FIELDS[dialect][key]`.
pub fn member_fields(dialect: &str, key: &str) -> Option<Members> {
    Some(match (dialect, key) {
        ("openai", "stop") => &[("[]", STRING)],
        ("openai", "stream_options") => &[("include_usage", BOOL), ("include_obfuscation", BOOL)],
        ("openai", "tool_choice") => &[("type", STRING), ("function.name", STRING)],
        ("openai", "function_call") => &[("name", STRING)],
        ("openai", "response_format") => &[
            ("type", STRING),
            ("json_schema.name", STRING),
            ("json_schema.strict", BOOL),
            ("json_schema.description", STR),
        ],
        ("openai" | "anthropic", "thinking") => &[("type", STRING), ("budget_tokens", INTEGER), ("display", STR)],
        ("openai", "reasoning") => &[("effort", STR), ("max_tokens", INT), ("enabled", BOOL), ("exclude", BOOL)],
        ("anthropic", "stop_sequences") => &[("[]", STRING)],
        ("anthropic", "tool_choice") => &[("type", STRING), ("name", STRING), ("disable_parallel_tool_use", BOOL)],
        ("anthropic", "metadata") => &[("user_id", STR)],
        ("anthropic", "output_config") => &[("effort", STR), ("format", OBJ), ("format.type", STRING), ("format.schema", OBJECT)],
        ("ollama", "options.stop") => &[("[]", STRING)],
        _ => return None,
    })
}

/// `REQUIRED_MEMBERS[dialect][key]`: the members any value needs, then those its `type` needs.
fn required_members(dialect: &str, key: &str, kind: Option<&[u8]>) -> (&'static [&'static str], &'static [&'static str]) {
    match (dialect, key, kind) {
        ("anthropic", "tool_choice", Some(b"tool")) => (&["type"], &["name"]),
        ("anthropic", "tool_choice", _) => (&["type"], &[]),
        ("anthropic", "thinking", Some(b"enabled")) => (&["type"], &["budget_tokens"]),
        ("anthropic", "thinking", _) => (&["type"], &[]),
        _ => (&[], &[]),
    }
}

/// `TOKEN_LOGPROB` / `LOGPROB_ENTRY`: an ollama logprobs entry's members (Go's `Logprob`: a
/// `TokenLogprob` -- token, logprob, bytes -- and its `top_logprobs`, each a `TokenLogprob`).
const TOKEN_LOGPROB: &[(&str, Expect)] = &[("token", STRING), ("logprob", NUMBER), ("bytes", ARR)];
const LOGPROB_ENTRY: &[(&str, Expect)] = &[("token", STRING), ("logprob", NUMBER), ("bytes", ARR), ("top_logprobs", ARR)];
/// `LOGPROB_REQUIRED`: Go always writes them; openai requires them.
const LOGPROB_REQUIRED: [&str; 2] = ["token", "logprob"];

/// `check_logprob(entry, path)`: an ollama logprobs entry at `path` (`$.logprobs[0]`); a
/// SchemaError at the first member that is wrong (its path; the caller locates it).
pub fn check_logprob(entry: &Value, path: &str) -> Result<()> {
    check_token_logprob(entry, path, LOGPROB_ENTRY)?;
    let tops = match entry.get("top_logprobs") {
        Some(Value::Array(tops)) => tops.as_slice(),
        _ => &[],
    };
    for (i, top) in tops.iter().enumerate() {
        let at = format!("{path}.top_logprobs[{i}]");
        if !matches!(top, Value::Object(_)) {
            return Err(schema(format!("expected an object for {}, got {}", subject(&at), top.type_name()), &at));
        }
        check_token_logprob(top, &at, TOKEN_LOGPROB)?;
    }
    Ok(())
}

fn check_token_logprob(entry: &Value, path: &str, spec: &[(&str, Expect)]) -> Result<()> {
    let what = subject(path);
    for (member, item) in entry.as_object().unwrap_or(&[]) {
        let Some((name, expect)) = spec.iter().find(|(name, _)| name.as_bytes() == member.as_slice()) else { continue };
        if let Some(got) = expect.refusal_of(item) {
            let message = format!("expected {} for {what}.{name}, got {got}", expect.name());
            return Err(schema(message, &format!("{path}.{name}")));
        }
    }
    if let Some(member) = LOGPROB_REQUIRED.iter().find(|member| entry.get(member).is_none()) {
        return Err(schema(format!("{what} has no {} (required)", py_str_repr(member.as_bytes())), path));
    }
    let bytes = match entry.get("bytes") {
        Some(Value::Array(bytes)) => bytes.as_slice(),
        _ => &[],
    };
    for (i, byte) in bytes.iter().enumerate() {
        if let Some(got) = INTEGER.refusal_of(byte) {
            let message = format!("expected {} for {what}.bytes[{i}], got {got}", INTEGER.name());
            return Err(schema(message, &format!("{path}.bytes[{i}]")));
        }
    }
    Ok(())
}

/// A path as the subject of a message: `$.logprobs[0]` -> `logprobs[0]` (`path[2:]`).
fn subject(path: &str) -> &str {
    path.strip_prefix("$.").unwrap_or(path)
}

fn schema(message: String, path: &str) -> Error {
    Error::new(ErrorClass::Schema, message).with_path(path.as_bytes().to_vec())
}

/// `KNOWN_MEMBERS`: the members of a control's value its decoder knows -- a member and, for an
/// object member looked into, its own (`None`: taken as it is, a schema or a string).
pub struct Known(pub &'static str, pub Option<&'static [Known]>);

const LEAF: Option<&'static [Known]> = None;

fn known_members(dialect: &str, key: &str) -> Option<&'static [Known]> {
    Some(match (dialect, key) {
        ("openai", "tool_choice") => &[Known("type", LEAF), Known("function", Some(&[Known("name", LEAF)])),
                                       Known("allowed_tools", LEAF), Known("custom", LEAF)],
        ("openai", "function_call") => &[Known("name", LEAF)],
        ("openai", "response_format") => &[Known("type", LEAF), Known("json_schema", Some(&[
            Known("name", LEAF), Known("schema", LEAF), Known("strict", LEAF), Known("description", LEAF)]))],
        ("anthropic", "tool_choice") => &[Known("type", LEAF), Known("name", LEAF), Known("disable_parallel_tool_use", LEAF)],
        ("anthropic", "metadata") => &[Known("user_id", LEAF)],
        ("anthropic", "output_config") => &[Known("effort", LEAF), Known("format", Some(&[Known("type", LEAF), Known("schema", LEAF)]))],
        _ => return None,
    })
}

/// `SETTING_MAPS`: control fields that are maps of settings: `{}`, or every member null,
/// sets nothing (`web_search_options` is not one: `{}` turns search on).
const SETTING_MAPS: &[(&str, &[u8])] = &[("openai", b"metadata"), ("openai", b"logit_bias"), ("openai", b"reasoning"),
                                         ("anthropic", b"metadata"), ("anthropic", b"output_config")];

/// `SETTING_DEFAULTS`: members of a settings map whose value says the default, as null does
/// (dialect, field, member, the default): OpenRouter's `reasoning.exclude: false`.
const SETTING_DEFAULTS: [(&str, &[u8], &[u8], Value); 1] = [("openai", b"reasoning", b"exclude", Value::Bool(false))];

/// `sets_nothing(dialect, key, raw)`: a top-level field's raw JSON that means the same as the
/// field absent: `null`, or a settings map with no member but nulls and defaults. A decoder
/// makes it a lossless extension: no control, so no target records a loss.
pub fn sets_nothing(dialect: &str, key: &[u8], raw: &[u8]) -> Result<bool> {
    if raw == b"null" {
        return Ok(true);
    }
    if !raw.starts_with(b"{") || !SETTING_MAPS.iter().any(|&(d, k)| d == dialect && k == key) {
        return Ok(false);
    }
    let is_default = |member: &[u8], value: &Value| {
        SETTING_DEFAULTS.iter().any(|(d, k, m, default)| *d == dialect && *k == key && *m == member && default == value)
    };
    Ok(Value::loads(raw)?.as_object().is_some_and(|members| {
        members.iter().all(|(member, value)| value.is_null() || is_default(member, value))
    }))
}

/// `unknown_members(dialect, key, raw)`: the dotted paths, inside the field, of a control
/// value's members no target carries (`KNOWN_MEMBERS`), in the input's order (WTF-8 bytes);
/// `raw`, the field's JSON, is read only for a field that has a table.
pub fn unknown_members(dialect: &str, key: &str, raw: &[u8]) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    if let Some(spec) = known_members(dialect, key) {
        unknown(spec, &Value::loads(raw)?, b"", &mut out);
    }
    Ok(out)
}

fn unknown(spec: &[Known], value: &Value, prefix: &[u8], out: &mut Vec<Vec<u8>>) {
    for (member, item) in value.as_object().unwrap_or(&[]) {
        match spec.iter().find(|known| known.0.as_bytes() == member.as_slice()) {
            None if !item.is_null() => out.push([prefix, member].concat()),
            Some(Known(name, Some(inner))) => unknown(inner, item, &[prefix, name.as_bytes(), b"."].concat(), out),
            _ => {}
        }
    }
}

/// `TOOL_MEMBERS[key]`: the type of a tool definition's member every dialect carries.
pub fn tool_member(key: &str) -> Option<Expect> {
    match key {
        "description" => Some(STR),
        "strict" => Some(BOOL),
        _ => None,
    }
}

/// `check_members`: the members of a control's value; a SchemaError at the first wrong one.
pub fn check_members(dialect: &str, key: &str, value: &Value) -> Result<()> {
    if let Some(members) = member_fields(dialect, key) {
        check(members, key, "", value)?;
    }
    if let Value::Object(_) = value {
        let kind = match value.get("type") {
            Some(Value::Str(kind)) => Some(kind.as_slice()),
            _ => None,
        };
        let (any, typed) = required_members(dialect, key, kind);
        if let Some(member) = any.iter().chain(typed).find(|member| value.get(member).is_none()) {
            return Err(Error::new(ErrorClass::Schema, format!("{key} has no {} (required)", py_str_repr(member.as_bytes())))
                .with_path(format!("$.{key}").into_bytes()));
        }
    }
    Ok(())
}

fn check(members: Members, key: &str, prefix: &str, value: &Value) -> Result<()> {
    let lookup = |path: &str| members.iter().find(|(p, _)| *p == path).map(|&(_, expect)| expect);
    match value {
        Value::Array(items) if prefix.is_empty() => {
            if let Some(expect) = lookup("[]") {
                for (i, item) in items.iter().enumerate() {
                    wrong(expect, &format!("{key}[{i}]"), item)?;
                }
            }
            Ok(())
        }
        Value::Object(pairs) => {
            for (member, item) in pairs {
                let path = format!("{prefix}{}", String::from_utf8_lossy(member));
                if let Some(expect) = lookup(&path) {
                    wrong(expect, &format!("{key}.{path}"), item)?;
                }
                let nested = format!("{path}.");
                if matches!(item, Value::Object(_)) && members.iter().any(|(p, _)| p.starts_with(&nested)) {
                    check(members, key, &nested, item)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn wrong(expect: Expect, what: &str, value: &Value) -> Result<()> {
    match expect.refusal_of(value) {
        Some(got) => Err(Error::new(ErrorClass::Schema, format!("expected {} for {what}, got {got}", expect.name()))
            .with_path(format!("$.{what}").into_bytes())),
        None => Ok(()),
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

    fn member_error(dialect: &str, key: &str, raw: &str) -> Option<(String, String)> {
        let value = Value::loads(raw.as_bytes()).unwrap();
        check_members(dialect, key, &value)
            .err()
            .map(|e| (e.message.clone(), String::from_utf8(e.path.clone().unwrap_or_default()).unwrap()))
    }

    #[test]
    fn members_of_a_control_value() {
        let error = |message: &str, path: &str| Some((message.to_string(), path.to_string()));
        assert_eq!(member_error("anthropic", "stop_sequences", r#"["a",5]"#),
                   error("expected a string for stop_sequences[1], got number", "$.stop_sequences[1]"));
        assert_eq!(member_error("anthropic", "thinking", r#"{"type":"enabled","budget_tokens":true}"#),
                   error("expected an integer for thinking.budget_tokens, got boolean", "$.thinking.budget_tokens"));
        assert_eq!(member_error("anthropic", "thinking", r#"{"type":"enabled","budget_tokens":2048.5}"#),
                   error("expected an integer for thinking.budget_tokens, got a number with a fraction",
                         "$.thinking.budget_tokens"));
        assert_eq!(member_error("anthropic", "thinking", r#"{"type":"enabled","budget_tokens":2048.0}"#), None);
        assert_eq!(member_error("anthropic", "thinking", r#"{"type":"enabled"}"#),
                   error("thinking has no 'budget_tokens' (required)", "$.thinking"));
        assert_eq!(member_error("anthropic", "output_config", r#"{"format":{"type":"json_schema","schema":5}}"#),
                   error("expected an object for output_config.format.schema, got number", "$.output_config.format.schema"));
        assert_eq!(member_error("openai", "tool_choice", r#"{"type":"function","function":{"name":5}}"#),
                   error("expected a string for tool_choice.function.name, got number", "$.tool_choice.function.name"));
        // the first wrong member in the input's order
        assert_eq!(member_error("openai", "stream_options", r#"{"include_obfuscation":1,"include_usage":"x"}"#),
                   error("expected a boolean or null for stream_options.include_obfuscation, got number",
                         "$.stream_options.include_obfuscation"));
        assert_eq!(member_error("openai", "temperature", "5"), None);
    }
}
