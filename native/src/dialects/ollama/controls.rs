//! ollama request-level settings <-> canonical controls (`src/interlingua/dialects/ollama/controls.py`).
//!
//! Pure functions over small values (`value::Value`, Python data after
//! `json.loads`); the mapping decisions are the Python module's docstring.
//! Control and attribute values leave here as compact JSON (`jsonwriter::dumps`),
//! the canonical events' form.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::Control;
use crate::compact::{lookup, Data, Key};
use crate::encoding::{lose_uncarried, reasoning_place, sets_no_reasoning};
use crate::dialects::fields::check_members;
use crate::error::{Error, ErrorClass, Result};
use crate::losses::{json_truthy, lacks, path_subject};
use crate::session::Session;
use crate::value::Value;

pub const DIALECT: &str = "ollama";

// -- decoding (helper L) ----------------------------------------------------------------

/// `CONTROLS`: top-level key -> canonical control name.
const CONTROLS: &[(&str, &str)] = &[
    ("model", "model"),
    ("stream", "stream"),
    ("format", "response_format"),
    ("think", "reasoning"),
    ("logprobs", "logprobs"),
    ("top_logprobs", "top_logprobs"),
];

/// `OPTION_CONTROLS`: `options` key -> canonical control name; with the control's key
/// (`options.<key>`) as a constant.
const OPTION_CONTROLS: &[(&str, &str, &str)] = &[
    ("num_predict", "max_output_tokens", "options.num_predict"),
    ("temperature", "temperature", "options.temperature"),
    ("top_p", "top_p", "options.top_p"),
    ("top_k", "top_k", "options.top_k"),
    ("stop", "stop", "options.stop"),
    ("seed", "seed", "options.seed"),
    ("presence_penalty", "presence_penalty", "options.presence_penalty"),
    ("frequency_penalty", "frequency_penalty", "options.frequency_penalty"),
];

/// (key, control name) of a key of `CONTROLS`.
fn control_key(key: &[u8]) -> Option<(&'static str, &'static str)> {
    CONTROLS.iter().find(|(k, _)| k.as_bytes() == key).copied()
}

/// `CONTROLS[key]`.
pub fn control_name(key: &[u8]) -> Option<&'static str> {
    control_key(key).map(|(_, name)| name)
}

/// `OPTION_CONTROLS[key]`.
pub fn option_control_name(key: &[u8]) -> Option<&'static str> {
    OPTION_CONTROLS.iter().find(|(k, ..)| k.as_bytes() == key).map(|&(_, name, _)| name)
}

/// `decode`: a top-level field as a control, or None (the caller makes it an extension).
/// `raw` is the member's compact JSON (`read_raw`).
pub fn decode<'r>(key: &[u8], raw: &'r [u8]) -> Result<Option<Control<'r>>> {
    let Some((key, name)) = control_key(key) else { return Ok(None) };
    let value = match key {
        "format" => mapped(raw, format_to_canonical)?,
        "think" => {
            let value = Value::loads(raw)?;
            if let Value::Str(level) = &value {
                if !THINK_LEVELS.iter().any(|l| l.as_bytes() == level.as_slice()) {
                    // (ollama answers 400: a level it does not know is the input's fault, as
                    // openai's unknown reasoning_effort is; another dialect's effort scale is
                    // mapped on encoding)
                    let message = format!("unknown think level {} (one of {})", String::from_utf8_lossy(raw), THINK_LEVELS.join(", "));
                    return Err(Error::new(ErrorClass::Schema, message).with_path(b"$.think".to_vec()));
                }
            }
            Cow::Owned(think_to_canonical(value).to_json())
        }
        _ => as_is(raw)?,
    };
    Ok(Some(control(name, key, value, raw)))
}

/// `decode_option`: an `options` member as a control, or None.
pub fn decode_option<'r>(key: &[u8], raw: &'r [u8]) -> Result<Option<Control<'r>>> {
    let Some(&(_, name, key)) = OPTION_CONTROLS.iter().find(|(k, ..)| k.as_bytes() == key) else { return Ok(None) };
    let value = match name {
        "stop" => {
            let value = Value::loads(raw)?;
            check_members(DIALECT, "options.stop", &value)?;
            Cow::Owned(match value {
                Value::Str(text) => Value::Array(vec![Value::Str(text)]),
                value => value,
            }.to_json())
        }
        _ => as_is(raw)?,
    };
    Ok(Some(control(name, key, value, raw)))
}

/// `dumps(json.loads(raw))`: `raw` itself when it is that already (compact.rs), no copy.
fn as_is(raw: &[u8]) -> Result<Cow<'_, [u8]>> {
    Ok(match crate::compact::Raw::canonical(raw) {
        Some(_) => Cow::Borrowed(raw),
        None => Cow::Owned(Value::loads(raw)?.to_json()),
    })
}

/// `dumps(map(json.loads(raw)))`.
fn mapped(raw: &[u8], map: fn(Value) -> Value) -> Result<Cow<'static, [u8]>> {
    Ok(Cow::Owned(map(Value::loads(raw)?).to_json()))
}

fn control<'r>(name: &'static str, key: &'static str, value: Cow<'r, [u8]>, raw: &'r [u8]) -> Control<'r> {
    Control {
        name: Cow::Borrowed(name),
        value,
        dialect: Some(Cow::Borrowed(DIALECT)),
        key: Some(Cow::Borrowed(key)),
        raw: Some(Cow::Borrowed(raw)),
    }
}

fn object(members: Vec<(&str, Value)>) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect())
}

fn text(s: &str) -> Value {
    Value::Str(s.as_bytes().to_vec())
}

pub fn format_to_canonical(value: Value) -> Value {
    match value {
        Value::Str(ref s) if s == b"json" => object(vec![("type", text("json_object"))]),
        Value::Str(ref s) if s.is_empty() => object(vec![("type", text("text"))]),
        Value::Null => object(vec![("type", text("text"))]),
        Value::Object(_) => object(vec![("type", text("json_schema")), ("schema", value)]),
        value => object(vec![("type", text("other")), ("value", value)]),
    }
}

pub fn think_to_canonical(value: Value) -> Value {
    match value {
        Value::Bool(_) => object(vec![("enabled", value)]),
        Value::Str(_) => object(vec![("effort", value)]),
        value => object(vec![("other", value)]),
    }
}

/// `tool_to_canonical`: `(attrs, parameters schema)` of a function tool; None for
/// other shapes. attrs are `(name, compact JSON)` in the Python dict's order. `members`: the
/// tool's, when the caller read them already (`Raw::canonical_with_members`).
pub fn tool_to_canonical<'a, D: Data<'a>>(tool: D, members: Option<Vec<(Key<'a>, D)>>)
                                          -> Option<(Vec<(Cow<'static, str>, Cow<'static, [u8]>)>, Option<D>)> {
    if !tool.is_object() {
        return None;
    }
    let members = members.unwrap_or_else(|| tool.member_list());
    let kind = lookup(&members, "type");
    if kind.is_some_and(|kind| !kind.str_is("function")) {
        return None;
    }
    let function = lookup(&members, "function").filter(|f| f.is_object())?;
    let function_members = function.member_list();
    let name = lookup(&function_members, "name").filter(|name| name.is_str())?;
    let mut attrs: Vec<(Cow<'static, str>, Cow<'static, [u8]>)> = vec![(Cow::Borrowed("name"), Cow::Owned(name.to_json()))];
    crate::decoding::keep_members(&function_members, &mut attrs, "ollama_extra", &["description"], &["name", "parameters"]);
    crate::decoding::beside_function(&members, &mut attrs, "ollama_tool_extra", &[]);
    if kind.is_none() {
        attrs.push((Cow::Borrowed("ollama_no_type"), Cow::Borrowed(b"true")));
    }
    let parameters = lookup(&function_members, "parameters");
    if parameters.is_some_and(|p| p.is_null()) {
        attrs.push((Cow::Borrowed("ollama_null_parameters"), Cow::Borrowed(b"true")));
    }
    Some((attrs, parameters.filter(|p| !p.is_null())))
}

// -- encoding (helper L) ----------------------------------------------------------------

/// `_CANONICAL_TO_TOP`
fn top_key(name: &str) -> Option<&'static str> {
    Some(match name {
        "model" => "model",
        "stream" => "stream",
        "logprobs" => "logprobs",
        "top_logprobs" => "top_logprobs",
        _ => return None,
    })
}

/// `_CANONICAL_TO_OPTION`, as the member written (`options.<key>`)
fn option_key(name: &str) -> Option<&'static str> {
    Some(match name {
        "max_output_tokens" => "options.num_predict",
        "temperature" => "options.temperature",
        "top_p" => "options.top_p",
        "top_k" => "options.top_k",
        "stop" => "options.stop",
        "seed" => "options.seed",
        "presence_penalty" => "options.presence_penalty",
        "frequency_penalty" => "options.frequency_penalty",
        _ => return None,
    })
}

/// `SOURCE_SAMPLING_DEFAULTS`: each source API's documented sampling defaults
/// (`Options.ollama_sampling_defaults`), as `(option key, compact JSON)`.
pub fn source_sampling_defaults(source: &str) -> &'static [(&'static str, &'static [u8])] {
    match source {
        "openai" => &[("temperature", b"1.0"), ("top_p", b"1.0")],
        "anthropic" => &[("temperature", b"1.0")],
        _ => &[],
    }
}

/// The levels ollama's `think` takes (api.ThinkValue).
const THINK_LEVELS: [&str; 4] = ["low", "medium", "high", "max"];

/// `_NEAREST_LEVEL`: efforts outside ollama's levels, per source scale.
fn nearest_level(dialect: Option<&str>, effort: &[u8]) -> Option<&'static str> {
    let anthropic = dialect == Some("anthropic");
    Some(match effort {
        b"minimal" => "low",
        b"xhigh" if anthropic => "high",
        b"xhigh" => "max",
        b"ultra" => "max",
        _ => return None,
    })
}

/// `encode_control`: a canonical control as ollama `(key, compact JSON)` pairs;
/// `options.x` keys go in `options`. Empty: nothing is written (a recorded loss
/// where something was meant).
/// A member the value of a control passes to as it is borrows it (the usual controls: no
/// parse, no copy); the others are parsed.
/// `_OLLAMAS_OWN`: settings that ask for what ollama does anyway (one answer; the model calls
/// any tools, as many as it likes), as compact JSON.
const OLLAMAS_OWN: [(&str, &[u8]); 3] = [("n", b"1"), ("parallel_tool_calls", b"true"), ("tool_choice", br#"{"type":"auto"}"#)];

pub fn encode_control<'c>(control: &'c Control<'_>, session: &mut Session)
                          -> Result<Vec<(Cow<'static, str>, Cow<'c, [u8]>)>> {
    let name = control.name.as_ref();
    let dialect = control.dialect.as_deref();
    if let Some(key) = top_key(name).or_else(|| option_key(name)) {
        return Ok(vec![(Cow::Borrowed(key), integer(key, control, session)?)]);
    }
    let value = &Value::loads(&control.value)?;
    let where_ = control.place();
    if name == "response_format" {
        let kind = if matches!(value, Value::Object(_)) { value.get("type") } else { None };
        if kind.is_some_and(|k| is_str(k, "json_object")) {
            return Ok(vec![(Cow::Borrowed("format"), Cow::Borrowed(b"\"json\""))]);
        }
        if kind.is_some_and(|k| is_str(k, "text")) {
            return Ok(Vec::new()); // no format is the default
        }
        if kind.is_some_and(|k| is_str(k, "json_schema")) {
            for extra in ["name", "description", "strict"] {
                if value.get(extra).is_some() {
                    let path = if dialect == Some("openai") {
                        format!("{where_}.json_schema.{extra}")
                    } else {
                        format!("{where_}.{extra}")
                    };
                    lose(session, &path, "field for it", None, dialect)?;
                }
            }
            let schema = value.get("schema").map_or_else(|| b"null".to_vec(), Value::to_json);
            return Ok(vec![(Cow::Borrowed("format"), Cow::Owned(schema))]);
        }
    } else if name == "reasoning" {
        if sets_no_reasoning(value) {
            lose_uncarried(control, value, DIALECT, session)?;
            return Ok(Vec::new());
        }
        return Ok(match reasoning_to_think(value, &where_, dialect, session)? {
            Some(think) => {
                lose_uncarried(control, value, DIALECT, session)?;
                vec![(Cow::Borrowed("think"), Cow::Owned(think))]
            }
            None => Vec::new(),
        });
    } else if name == "stream_options"
        && matches!(value, Value::Object(members) if members.iter().all(|(key, _)| key == b"include_usage"))
    {
        return Ok(Vec::new()); // ollama's last line always has its counts (it was a loss)
    } else if OLLAMAS_OWN.iter().any(|&(own, raw)| own == name && raw == control.value.as_ref()) {
        return Ok(Vec::new()); // what ollama does anyway: nothing is lost without it
    }
    lose(session, &where_, "such parameter", None, dialect)?;
    Ok(Vec::new())
}

/// `INTEGER_KEYS`: the fields the ollama client declares `int` that a control is written to.
const INTEGER_KEYS: &[&str] = &["options.num_predict", "options.top_k", "options.seed", "top_logprobs"];

/// `_integer`: another dialect's float for an integer field as its integer: an integral float
/// is that integer, a fraction rounded down (recorded); a float beyond 64 bits (refused by the
/// decoder first: `numbers::fault`) is left as it is.
fn integer<'c>(key: &str, control: &'c Control<'_>, session: &mut Session) -> Result<Cow<'c, [u8]>> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let value = &control.value;
    if !INTEGER_KEYS.contains(&key) || !crate::numbers::is_float_literal(value) || value.first() == Some(&b'"') {
        return Ok(Cow::Borrowed(value));
    }
    let Value::Float(f) = Value::loads(value)? else { return Ok(Cow::Borrowed(value)) };
    if !f.is_finite() || !(-TWO_63..TWO_63).contains(&f) {
        return Ok(Cow::Borrowed(value));
    }
    if f.fract() != 0.0 {
        let where_ = match control.key.as_deref() {
            Some(k) if !k.is_empty() => format!("$.{k}"),
            _ => control.name.to_string(),
        };
        let field = key.strip_prefix("options.").unwrap_or(key);
        let what = format!("fractional {field} ({})", py_repr(&Value::Float(f)));
        lose(session, &where_, &what, Some("rounded down"), control.dialect.as_deref())?;
    }
    Ok(Cow::Owned((f.trunc() as i64).to_string().into_bytes()))
}

fn lose(session: &mut Session, where_: &str, what: &str, done: Option<&str>, dialect: Option<&str>) -> Result<()> {
    session.lose(where_, lacks(path_subject(where_), DIALECT, what, done), dialect)
}

/// `reasoning_to_think`: canonical reasoning -> ollama `think` (compact JSON), or
/// None (nothing written, the loss recorded).
pub fn reasoning_to_think(value: &Value, where_: &str, dialect: Option<&str>, session: &mut Session)
                          -> Result<Option<Vec<u8>>> {
    if !matches!(value, Value::Object(_)) {
        lose(session, where_, "such reasoning setting", None, dialect)?;
        return Ok(None);
    }
    let effort = value.get("effort");
    if matches!(value.get("enabled"), Some(Value::Bool(false))) {
        // thinking disabled wins over an effort given beside it: never turn reasoning on
        if let Some(effort) = effort.filter(|e| !matches!(e, Value::Null) && !is_str(e, "none")) {
            let what = format!("effort with thinking off (effort {})", py_repr(effort));
            lose(session, &reasoning_place(value, "effort", where_), &what, Some("think is false"), dialect)?;
        }
        if value.get("budget_tokens").is_some() {
            // (OpenRouter's reasoning: enabled false beside a max_tokens)
            lose(session, &reasoning_place(value, "budget_tokens", where_), "thinking budget with thinking off",
                 Some("think is false"), dialect)?;
        }
        return Ok(Some(b"false".to_vec()));
    }
    let budget = value.get("budget_tokens").is_some();
    if let Some(effort) = effort {
        let think = think_level(effort, &reasoning_place(value, "effort", where_), dialect, session)?;
        if budget {
            // (beside it: anthropic thinking + output_config.effort)
            lose(session, &reasoning_place(value, "budget_tokens", where_), "thinking budget beside an effort",
                 Some("the effort decides think"), dialect)?;
        }
        return Ok(think);
    }
    if let Some(enabled) = value.get("enabled") {
        if budget {
            lose(session, &reasoning_place(value, "budget_tokens", where_), "thinking budget", Some("think is on or off"),
                 dialect)?;
        }
        return Ok(Some(if enabled.truthy() { b"true".to_vec() } else { b"false".to_vec() }));
    }
    if budget {
        lose(session, &reasoning_place(value, "budget_tokens", where_), "thinking budget", Some("think is on"), dialect)?;
        return Ok(Some(b"true".to_vec()));
    }
    lose(session, where_, "such reasoning setting", None, dialect)?;
    Ok(None)
}

/// An effort as a think level; `where_`: the effort's place.
fn think_level(effort: &Value, where_: &str, dialect: Option<&str>, session: &mut Session) -> Result<Option<Vec<u8>>> {
    if let Value::Str(level) = effort {
        if THINK_LEVELS.iter().any(|l| l.as_bytes() == level.as_slice()) {
            return Ok(Some(effort.to_json()));
        }
        if level == b"none" {
            return Ok(Some(b"false".to_vec()));
        }
    }
    let what = format!("think level for effort {}", py_repr(effort));
    // (Python looks a non-string effort up in a dict: a list or object there is a
    // TypeError; every decoder gives a string)
    let nearest = match effort {
        Value::Str(level) => nearest_level(dialect, level),
        _ => None,
    };
    if let Some(nearest) = nearest {
        lose(session, where_, &what, Some(&format!("sent as think '{nearest}'")), dialect)?;
        return Ok(Some(text(nearest).to_json()));
    }
    lose(session, where_, &what, None, dialect)?;
    Ok(None)
}

/// `_TOOL_SHAPE_ATTRS`
const TOOL_SHAPE_ATTRS: [&str; 9] = ["name", "description", "ollama_extra", "ollama_tool_extra", "ollama_no_type",
                                     "ollama_null_parameters", "dialect", "path", "legacy"];

/// `tool_from_canonical`: the ollama tool object for a canonical tool definition
/// (compact JSON). `attrs`: the block's `(name, compact JSON)` attributes.
pub fn tool_from_canonical(attrs: &[(Cow<'_, str>, Cow<'_, [u8]>)], schema_raw: &[u8], session: &mut Session)
                           -> Result<Vec<u8>> {
    let attr = |name: &str| attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_ref());
    let mut body = Vec::with_capacity(crate::encoding::tool_capacity(attrs, schema_raw));
    body.extend_from_slice(if attr("ollama_no_type").is_some_and(json_truthy) {
        b"{\"function\":"
    } else {
        b"{\"type\":\"function\",\"function\":"
    });
    body.extend_from_slice(b"{\"name\":");
    body.extend_from_slice(attr("name").unwrap_or(b"null"));
    if let Some(description) = attr("description") {
        body.extend_from_slice(b",\"description\":");
        body.extend_from_slice(description);
    }
    if let Some(extra) = attr("ollama_extra") {
        body.push(b',');
        if let Ok(Value::Str(text)) = Value::loads(extra) {
            body.extend_from_slice(&text);
        }
    }
    for (key, value) in attrs {
        if !TOOL_SHAPE_ATTRS.contains(&key.as_ref()) {
            crate::encoding::lose_tool_attr(key, value, attrs, DIALECT, session)?;
        }
    }
    if !schema_raw.is_empty() {
        body.extend_from_slice(b",\"parameters\":");
        body.extend_from_slice(schema_raw);
    } else if attr("ollama_null_parameters").is_some_and(json_truthy) {
        body.extend_from_slice(b",\"parameters\":null");
    }
    body.push(b'}');
    if let Some(Ok(Value::Str(members))) = attr("ollama_tool_extra").map(Value::loads) {
        body.push(b',');
        body.extend_from_slice(&members);
    }
    body.push(b'}');
    Ok(body)
}

// -- small value helpers ----------------------------------------------------------------

fn is_str(value: &Value, text: &str) -> bool {
    matches!(value, Value::Str(s) if s == text.as_bytes())
}

/// Python `repr` of a small value (loss wording): `unicode::py_value_repr` (lists and
/// dicts as Python writes them, `{'k': v}`, not their JSON).
pub(crate) fn py_repr(value: &Value) -> String {
    crate::unicode::py_value_repr(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs_are_pythons() {
        assert_eq!(crate::unicode::py_repr(b"a\xed\xa0\x80'"), "\"a\\ud800'\"");
        assert_eq!(crate::unicode::py_repr(b"\xed\xb0\x80\"x"), "'\\udc00\"x'");
        assert_eq!(crate::unicode::py_repr(b"plain"), "'plain'");
        assert_eq!(py_repr(&Value::Bool(true)), "True");
    }

    #[test]
    fn format_and_think_map_as_python_does() {
        let canon = |v: &[u8]| format_to_canonical(Value::loads(v).unwrap()).to_json();
        assert_eq!(canon(b"\"json\""), b"{\"type\":\"json_object\"}");
        assert_eq!(canon(b"\"\""), b"{\"type\":\"text\"}");
        assert_eq!(canon(b"{\"a\":1}"), b"{\"type\":\"json_schema\",\"schema\":{\"a\":1}}");
        assert_eq!(canon(b"\"yaml\""), b"{\"type\":\"other\",\"value\":\"yaml\"}");
        let think = |v: &[u8]| think_to_canonical(Value::loads(v).unwrap()).to_json();
        assert_eq!(think(b"true"), b"{\"enabled\":true}");
        assert_eq!(think(b"\"max\""), b"{\"effort\":\"max\"}");
        assert_eq!(think(b"null"), b"{\"other\":null}");
    }
}
