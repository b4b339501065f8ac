//! openai request-level settings <-> canonical controls (`src/interlingua/dialects/openai/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper D) ----------------------------------------------------------------

// -- encoding (helper E) ----------------------------------------------------------------

use std::borrow::Cow;

use crate::canonical::Control;
use crate::encoding::{attr_truthy, json_members, json_str, object_schema, tool_name_out, Attr};
use crate::error::Result;
use crate::session::Session;

/// `_SAME_VALUE`: canonical control -> openai key, for controls that keep their value as is.
fn same_value_key(name: &str) -> Option<&'static str> {
    Some(match name {
        "model" => "model",
        "max_output_tokens" => "max_completion_tokens",
        "temperature" => "temperature",
        "top_p" => "top_p",
        "stop" => "stop",
        "stream" => "stream",
        "parallel_tool_calls" => "parallel_tool_calls",
        "user" => "user",
        "seed" => "seed",
        "n" => "n",
        "frequency_penalty" => "frequency_penalty",
        "presence_penalty" => "presence_penalty",
        "logprobs" => "logprobs",
        "top_logprobs" => "top_logprobs",
        "service_tier" => "service_tier",
        "stream_options" => "stream_options",
        "metadata" => "metadata",
        _ => return None,
    })
}

/// `value.get(key)` of an object's compact JSON (None: absent, or not an object).
fn get<'r>(raw: &'r [u8], key: &str) -> Option<&'r [u8]> {
    json_members(raw)?.into_iter().find(|(k, _)| json_str(k).as_deref() == Some(key)).map(|(_, v)| v)
}

/// `value.get("type")` when the value is an object and its type a string.
fn type_of(raw: &[u8]) -> Option<String> {
    get(raw, "type").and_then(json_str)
}

/// `reasoning_loss`: what openai lacks for a reasoning block that cannot go there at all
/// (`(what, done)` for `lose_block`), or None: it goes to `reasoning_key`.
pub fn reasoning_loss(attrs: &[Attr<'_>], reasoning_key: Option<&str>) -> Option<(&'static str, Option<&'static str>)> {
    if reasoning_key.is_none() {
        return Some(("reasoning field", Some("Options.openai_reasoning_field chooses one a compatible server reads")));
    }
    if attr_truthy(attrs, "redacted") {
        return Some(("field for encrypted reasoning", None));
    }
    None
}

/// `reasoning_effort`: canonical reasoning -> an openai effort (JSON text). A token budget
/// maps by a documented table: < 2048 low, < 8192 medium, else high; `enabled: false` ->
/// none; `enabled: true` without a budget -> medium.
pub fn reasoning_effort(reasoning: &[u8]) -> Option<Vec<u8>> {
    let members = json_members(reasoning)?;
    let member = |key: &str| members.iter().find(|(k, _)| json_str(k).as_deref() == Some(key)).map(|(_, v)| *v);
    if let Some(effort) = member("effort") {
        return (effort != b"null").then(|| effort.to_vec());
    }
    let enabled = member("enabled");
    if enabled == Some(b"false") {
        return Some(b"\"none\"".to_vec());
    }
    if let Some(budget) = member("budget_tokens").and_then(py_int) {
        let effort: &[u8] = if budget < 2048 { b"\"low\"" } else if budget < 8192 { b"\"medium\"" } else { b"\"high\"" };
        return Some(effort.to_vec());
    }
    if enabled == Some(b"true") {
        return Some(b"\"medium\"".to_vec());
    }
    None
}

/// An `isinstance(v, int)` value (bools too) as a number to compare; ints beyond i128 saturate.
fn py_int(raw: &[u8]) -> Option<i128> {
    match raw {
        b"true" => Some(1),
        b"false" => Some(0),
        _ if raw.iter().all(|b| b.is_ascii_digit() || *b == b'-') && !raw.is_empty() => {
            let text = std::str::from_utf8(raw).ok()?;
            Some(text.parse().unwrap_or(if raw[0] == b'-' { i128::MIN } else { i128::MAX }))
        }
        _ => None,
    }
}

/// `response_format_from_canonical`.
pub fn response_format_from_canonical(fmt: &[u8]) -> Option<Vec<u8>> {
    let kind = get(fmt, "type")?;
    match json_str(kind).as_deref() {
        Some("text" | "json_object") => Some([&b"{\"type\":"[..], kind, b"}"].concat()),
        Some("json_schema") => {
            let mut spec = b"{\"name\":".to_vec();
            spec.extend_from_slice(get(fmt, "name").unwrap_or(b"\"response\""));
            for extra in ["description", "strict"] {
                if let Some(value) = get(fmt, extra) {
                    spec.extend_from_slice(format!(",\"{extra}\":").as_bytes());
                    spec.extend_from_slice(value);
                }
            }
            spec.extend_from_slice(b",\"schema\":");
            spec.extend_from_slice(get(fmt, "schema").unwrap_or(b"null"));
            spec.extend_from_slice(b"}");
            Some([&b"{\"type\":\"json_schema\",\"json_schema\":"[..], &spec, b"}"].concat())
        }
        _ => None,
    }
}

/// `encode_control`: a canonical control as an openai `(key, value JSON)`; None and a
/// recorded loss if none.
pub fn encode_control(control: &Control<'_>, session: &mut Session) -> Result<Option<(&'static str, Vec<u8>)>> {
    let value = control.value.as_ref();
    let (key, mapped) = match control.name.as_ref() {
        "tool_choice" => {
            let mapped = match type_of(value).as_deref() {
                Some(kind @ ("auto" | "none" | "required")) => Some(format!("\"{kind}\"").into_bytes()),
                Some("tool") => {
                    // a named tool: named as its definition is
                    let path = format!("$.{}", control.key.as_deref().unwrap_or("None"));
                    let name = tool_name_out(session, get(value, "name"), &path)?;
                    let mut out = b"{\"type\":\"function\",\"function\":{\"name\":".to_vec();
                    crate::encoding::dumps_str(&name, &mut out);
                    out.extend_from_slice(b"}}");
                    Some(out)
                }
                _ => None,
            };
            (Some("tool_choice"), mapped)
        }
        "response_format" => (Some("response_format"), response_format_from_canonical(value)),
        "reasoning" => (Some("reasoning_effort"), reasoning_effort(value)),
        name => (same_value_key(name), (value != b"null").then(|| value.to_vec())),
    };
    match (key, mapped) {
        (Some(key), Some(mapped)) => Ok(Some((key, mapped))),
        _ => {
            let place = match control.key.as_deref() {
                Some(key) if !key.is_empty() => Cow::Owned(format!("$.{key}")),
                _ => Cow::Borrowed(control.name.as_ref()),
            };
            let reason = crate::encoding::lacks(crate::encoding::path_subject(&place), "openai", "such parameter", None);
            crate::encoding::session_lose(session, &place, &reason, control.dialect.as_deref())?;
            Ok(None)
        }
    }
}

/// `tool_from_canonical`: the openai tool object for a canonical tool definition (compact JSON).
pub fn tool_from_canonical(attrs: &[Attr<'_>], schema_raw: &[u8], session: &mut Session) -> Result<Vec<u8>> {
    let name = crate::encoding::attr(attrs, "name");
    let mut body = b"{\"name\":".to_vec();
    let wire = tool_name_out(session, name, "$.tools")?;
    crate::encoding::dumps_str(&wire, &mut body);
    for (key, value) in attrs {
        match key.as_ref() {
            "description" | "strict" => {
                body.push(b',');
                crate::encoding::dumps_str(key, &mut body);
                body.push(b':');
                body.extend_from_slice(value);
            }
            "openai_extra" => {
                body.push(b',');
                body.extend_from_slice(json_str(value).unwrap_or_default().as_bytes());
            }
            "name" | "legacy" | "dialect" => {}
            other => {
                let reason = crate::encoding::lacks(&format!("{other} of a tool"), "openai", "field for it", None);
                crate::encoding::session_lose(session, "$.tools", &reason, None)?;
            }
        }
    }
    let mut schema = Cow::Borrowed(schema_raw);
    if !schema_raw.is_empty() && session.source != "openai" {
        schema = Cow::Owned(object_schema(schema_raw, session, name)?);
    }
    if !schema.is_empty() {
        body.extend_from_slice(b",\"parameters\":");
        body.extend_from_slice(&schema);
    }
    body.push(b'}');
    if attr_truthy(attrs, "legacy") {
        return Ok(body);
    }
    Ok([&b"{\"type\":\"function\",\"function\":"[..], &body, b"}"].concat())
}
