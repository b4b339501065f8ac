//! anthropic request-level settings <-> canonical controls (`src/interlingua/dialects/anthropic/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper AD) ----------------------------------------------------------------
//
// `decode` / `tool_to_canonical`: pure functions over `value::Value` (Python data after
// `json.loads`); a control's value and a tool's attributes leave as compact JSON
// (`jsonwriter::dumps`), as `canonical.rs` carries them.

use std::borrow::Cow;

use crate::canonical::{Control, RawJson};
use crate::error::{Error, ErrorClass, Result};
use crate::value::Value;

pub const DIALECT: &str = "anthropic";

/// `CONTROLS`: anthropic key -> canonical control name (`output_config` also gives
/// `response_format`, `tool_choice` also `parallel_tool_calls`).
pub fn control_name(key: &[u8]) -> Option<&'static str> {
    Some(match key {
        b"model" => "model",
        b"max_tokens" => "max_output_tokens",
        b"temperature" => "temperature",
        b"top_p" => "top_p",
        b"top_k" => "top_k",
        b"stop_sequences" => "stop",
        b"stream" => "stream",
        b"tool_choice" => "tool_choice",
        b"thinking" => "reasoning",
        b"output_config" => "reasoning",
        b"metadata" => "user",
        b"service_tier" => "service_tier",
        _ => return None,
    })
}

/// `controls.decode`: the controls a top-level field means (the first carries the
/// raw JSON, the others are derived: `raw` None), or None (an extension).
/// `key` is one of `CONTROLS` when Some is returned, so it is ASCII.
pub fn decode(key: &[u8], raw: &[u8]) -> Result<Option<Vec<Control<'static>>>> {
    let Some(name) = control_name(key) else { return Ok(None) };
    let key = std::str::from_utf8(key).unwrap_or(name);
    let value = Value::loads(raw)?;
    let pairs = to_canonical(key, name, &value)?;
    let control = |name: String, value: Vec<u8>, raw: Option<&[u8]>| Control {
        name: Cow::Owned(name),
        value: Cow::Owned(value),
        dialect: Some(Cow::Borrowed(DIALECT)),
        key: Some(Cow::Owned(key.to_string())),
        raw: raw.map(|r| Cow::Owned(r.to_vec())),
    };
    if pairs.is_empty() {
        // nothing canonical in it (e.g. empty metadata): still written back verbatim
        return Ok(Some(vec![control(format!("anthropic:{key}"), value.to_json(), Some(raw))]));
    }
    Ok(Some(
        pairs
            .into_iter()
            .enumerate()
            .map(|(i, (name, value))| control(name.to_string(), value.to_json(), if i == 0 { Some(raw) } else { None }))
            .collect(),
    ))
}

fn to_canonical(key: &str, name: &'static str, value: &Value) -> Result<Vec<(&'static str, Value)>> {
    Ok(match key {
        "stop_sequences" => vec![("stop", value.clone())],
        "tool_choice" => tool_choice_to_canonical(value),
        "thinking" => vec![("reasoning", thinking_to_canonical(value))],
        "output_config" => output_config_to_canonical(value)?,
        "metadata" => match value.get("user_id") {
            Some(user) if *user != Value::Null => vec![("user", user.clone())],
            _ => vec![],
        },
        "service_tier" => {
            let tier = if *value == str_value("standard_only") { str_value("default") } else { value.clone() };
            vec![("service_tier", tier)]
        }
        _ => vec![(name, value.clone())],
    })
}

fn output_config_to_canonical(value: &Value) -> Result<Vec<(&'static str, Value)>> {
    let mut pairs = Vec::new();
    if !matches!(value, Value::Object(_)) {
        return Ok(pairs);
    }
    match value.get("effort") {
        None | Some(Value::Null) => {}
        Some(effort @ Value::Str(_)) => pairs.push(("reasoning", object(vec![("effort", effort.clone())]))),
        Some(_) => {
            // (no offset: the pipeline locates it at the token being read)
            return Err(Error::new(ErrorClass::Schema, "expected a string for effort")
                .with_path(b"$.output_config.effort".to_vec()));
        }
    }
    if let Some(format @ Value::Object(_)) = value.get("format") {
        if format.get("type") == Some(&str_value("json_schema")) {
            let schema = format.get("schema").cloned().unwrap_or(Value::Null);
            pairs.push(("response_format", object(vec![("type", str_value("json_schema")), ("schema", schema)])));
        }
    }
    Ok(pairs)
}

/// `tool_choice_to_canonical`.
pub fn tool_choice_to_canonical(value: &Value) -> Vec<(&'static str, Value)> {
    let kind = value.get("type");
    let choice = match kind {
        Some(Value::Str(k)) if k == b"auto" || k == b"none" => object(vec![("type", Value::Str(k.clone()))]),
        Some(Value::Str(k)) if k == b"any" => object(vec![("type", str_value("required"))]),
        Some(Value::Str(k)) if k == b"tool" => object(vec![
            ("type", str_value("tool")),
            ("name", value.get("name").cloned().unwrap_or(Value::Null)),
        ]),
        _ => object(vec![("type", str_value("other")), ("value", value.clone())]),
    };
    let mut pairs = vec![("tool_choice", choice)];
    match value.get("disable_parallel_tool_use") {
        None | Some(Value::Null) => {}
        Some(disable) => pairs.push(("parallel_tool_calls", Value::Bool(!disable.truthy()))),
    }
    pairs
}

/// `thinking_to_canonical`.
pub fn thinking_to_canonical(value: &Value) -> Value {
    match value.get("type") {
        Some(Value::Str(k)) if k == b"enabled" => {
            let mut out = vec![("enabled", Value::Bool(true))];
            if let Some(budget) = value.get("budget_tokens") {
                out.push(("budget_tokens", budget.clone()));
            }
            object(out)
        }
        Some(Value::Str(k)) if k == b"disabled" => object(vec![("enabled", Value::Bool(false))]),
        Some(Value::Str(k)) if k == b"adaptive" => {
            object(vec![("enabled", Value::Bool(true)), ("adaptive", Value::Bool(true))])
        }
        _ => object(vec![("other", value.clone())]),
    }
}

/// keys of a custom tool that are canonical tool-definition attrs (`_TOOL_ATTRS`)
const TOOL_ATTRS: [&str; 3] = ["description", "strict", "cache_control"];

/// A canonical block's attributes: (name, compact JSON), in Python's dict order.
pub type Attrs = Vec<(Cow<'static, str>, RawJson<'static>)>;

/// `tool_to_canonical`: `(attrs, input_schema)` of a custom tool; None for server
/// tools (carried raw). `tool` is an object.
pub fn tool_to_canonical(tool: &Value) -> Option<(Attrs, &Value)> {
    match tool.get("type") {
        None | Some(Value::Null) => {}
        Some(Value::Str(t)) if t == b"custom" => {}
        Some(_) => return None,
    }
    let name = match tool.get("name") {
        Some(name @ Value::Str(_)) => name,
        _ => return None,
    };
    let schema = tool.get("input_schema")?;
    let mut attrs: Attrs = vec![(Cow::Borrowed("name"), Cow::Owned(name.to_json()))];
    let mut extra: Vec<u8> = Vec::new();
    let Value::Object(members) = tool else { return None };
    for (key, value) in members {
        if let Some(attr) = TOOL_ATTRS.iter().find(|a| a.as_bytes() == key.as_slice()) {
            attrs.push((Cow::Borrowed(attr), Cow::Owned(value.to_json())));
        } else if key != b"name" && key != b"input_schema" {
            if !extra.is_empty() {
                extra.push(b',');
            }
            extra.extend_from_slice(&Value::Str(key.clone()).to_json());
            extra.push(b':');
            extra.extend_from_slice(&value.to_json());
        }
    }
    if !extra.is_empty() {
        attrs.push((Cow::Borrowed("anthropic_extra"), Cow::Owned(Value::Str(extra).to_json())));
    }
    Some((attrs, schema))
}

fn str_value(text: &str) -> Value {
    Value::Str(text.as_bytes().to_vec())
}

fn object(members: Vec<(&str, Value)>) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect())
}

#[cfg(test)]
mod decoding_tests {
    use super::*;

    fn controls(key: &str, raw: &str) -> Vec<(String, String, bool)> {
        decode(key.as_bytes(), raw.as_bytes()).unwrap().unwrap().into_iter()
            .map(|c| (c.name.into_owned(), String::from_utf8(c.value.into_owned()).unwrap(), c.raw.is_some()))
            .collect()
    }

    fn one(name: &str, value: &str, raw: bool) -> (String, String, bool) {
        (name.to_string(), value.to_string(), raw)
    }

    #[test]
    fn one_field_several_controls_the_first_carries_the_raw() {
        assert_eq!(controls("tool_choice", r#"{"type":"any","disable_parallel_tool_use":true}"#),
                   [one("tool_choice", r#"{"type":"required"}"#, true), one("parallel_tool_calls", "false", false)]);
        assert_eq!(controls("output_config", r#"{"effort":"high","format":{"type":"json_schema"}}"#),
                   [one("reasoning", r#"{"effort":"high"}"#, true),
                    one("response_format", r#"{"type":"json_schema","schema":null}"#, false)]);
        assert_eq!(controls("tool_choice", r#"{"type":"x"}"#),
                   [one("tool_choice", r#"{"type":"other","value":{"type":"x"}}"#, true)]);
    }

    #[test]
    fn canonical_values() {
        assert_eq!(controls("thinking", r#"{"type":"enabled","budget_tokens":2048}"#),
                   [one("reasoning", r#"{"enabled":true,"budget_tokens":2048}"#, true)]);
        assert_eq!(controls("thinking", r#"{"type":"adaptive"}"#),
                   [one("reasoning", r#"{"enabled":true,"adaptive":true}"#, true)]);
        assert_eq!(controls("service_tier", r#""standard_only""#), [one("service_tier", r#""default""#, true)]);
        assert_eq!(controls("metadata", r#"{"user_id":"u"}"#), [one("user", r#""u""#, true)]);
        // nothing canonical in it: still written back verbatim
        assert_eq!(controls("metadata", "{}"), [one("anthropic:metadata", "{}", true)]);
        assert!(decode(b"container", b"1").unwrap().is_none());
    }

    #[test]
    fn an_effort_that_is_not_a_string() {
        let err = decode(b"output_config", br#"{"effort":1}"#).unwrap_err();
        assert_eq!((err.class, err.message.as_str()), (ErrorClass::Schema, "expected a string for effort"));
        assert_eq!(err.path.as_deref(), Some(&b"$.output_config.effort"[..]));
    }

    #[test]
    fn custom_tools_and_server_tools() {
        let tool = Value::loads(br#"{"name":"f","input_schema":{"type":"object"},"x":[1],"strict":true}"#).unwrap();
        let (attrs, schema) = tool_to_canonical(&tool).unwrap();
        let attrs: Vec<(String, String)> =
            attrs.into_iter().map(|(k, v)| (k.into_owned(), String::from_utf8(v.into_owned()).unwrap())).collect();
        assert_eq!(attrs, [("name".into(), r#""f""#.into()), ("strict".into(), "true".into()),
                           ("anthropic_extra".into(), r#""\"x\":[1]""#.into())]);
        assert_eq!(schema.to_json(), br#"{"type":"object"}"#);
        assert!(tool_to_canonical(&Value::loads(br#"{"type":"web_search_20250305","name":"w"}"#).unwrap()).is_none());
        assert!(tool_to_canonical(&Value::loads(br#"{"name":"f"}"#).unwrap()).is_none());
    }
}

// -- encoding (helper AE) ----------------------------------------------------------------
