//! openai request-level settings <-> canonical controls (`src/interlingua/dialects/openai/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper D) ----------------------------------------------------------------

pub use decoding::{
    control_name, decode, response_format_to_canonical, tool_choice_to_canonical, tool_to_canonical, CLIENT_ONLY,
    CONTROLS, EXTENSIONS, STRUCTURAL,
};

mod decoding {
    use std::borrow::Cow;

    use crate::canonical::Control;
    use crate::compact::{lookup, Data, Key, Raw};
    use crate::decoding::{dumps, loads, Attr};
    use crate::error::{Error, ErrorClass, Result};
    use crate::dialects::fields;
    use crate::value::Value;

    /// Fields that are the request's structure, not settings.
    pub const STRUCTURAL: [&str; 3] = ["messages", "tools", "functions"];

    /// openai key -> canonical control name (`CONTROLS`), in the Python dict's order.
    pub const CONTROLS: &[(&str, &str)] = &[
        ("model", "model"),
        ("max_completion_tokens", "max_output_tokens"),
        ("max_tokens", "max_output_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("stop", "stop"),
        ("stream", "stream"),
        ("tool_choice", "tool_choice"),
        ("function_call", "tool_choice"),
        ("parallel_tool_calls", "parallel_tool_calls"),
        ("response_format", "response_format"),
        ("reasoning_effort", "reasoning"),
        // LiteLLM's thinking: anthropic's setting, read as anthropic's is (an openai target
        // gets it back as it came; another takes its budget as it takes anthropic's)
        ("thinking", "reasoning"),
        // OpenRouter's reasoning: {effort | max_tokens, enabled, exclude}
        ("reasoning", "reasoning"),
        ("user", "user"),
        ("seed", "seed"),
        ("n", "n"),
        ("frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty"),
        ("logprobs", "logprobs"),
        ("top_logprobs", "top_logprobs"),
        ("service_tier", "service_tier"),
        ("stream_options", "stream_options"),
        ("metadata", "metadata"),
    ];

    /// Fields with no canonical meaning (openai-only): passed through to openai targets.
    pub const EXTENSIONS: [&str; 12] = [
        "audio", "logit_bias", "modalities", "moderation", "prediction", "prompt_cache_key",
        "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "store",
        "verbosity", "web_search_options",
    ];

    /// Client-side arguments of `create` that never reach the body.
    pub const CLIENT_ONLY: [&str; 4] = ["extra_headers", "extra_query", "extra_body", "timeout"];

    /// `CONTROLS.get(key)`.
    pub fn control_name(key: &[u8]) -> Option<&'static str> {
        CONTROLS.iter().find(|(k, _)| k.as_bytes() == key).map(|&(_, name)| name)
    }

    fn get<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
        value.get(key)
    }

    fn is_str(value: Option<&Value>, text: &str) -> bool {
        matches!(value, Some(Value::Str(s)) if s == text.as_bytes())
    }

    fn is_one_of(value: Option<&Value>, texts: &[&str]) -> bool {
        texts.iter().any(|t| is_str(value, t))
    }

    fn object(members: Vec<(&str, Value)>) -> Value {
        Value::Object(members.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect())
    }

    fn string(text: &str) -> Value {
        Value::Str(text.as_bytes().to_vec())
    }

    /// `decode(key, raw)`: a top-level field as a control, or `None` (the caller
    /// makes it an extension). `raw` is the field's compact JSON.
    pub fn decode(key: &str, raw: &[u8]) -> Result<Option<Control<'static>>> {
        let Some(name) = control_name(key.as_bytes()) else {
            return Ok(None);
        };
        let control = |value: Vec<u8>, raw: Vec<u8>| Control {
            name: Cow::Borrowed(name),
            value: Cow::Owned(value),
            dialect: Some(Cow::Borrowed("openai")),
            key: Some(Cow::Owned(key.to_string())),
            raw: Some(Cow::Owned(raw)),
        };
        if !matches!(key, "stop" | "tool_choice" | "function_call" | "reasoning_effort" | "response_format")
            && fields::member_fields("openai", key).is_none()
            && Raw::canonical(raw).is_some()
        {
            // `to_canonical` keeps the value, and its text is its dumps (compact.rs): no tree
            return Ok(Some(control(raw.to_vec(), raw.to_vec())));
        }
        let mut value = loads(raw)?;
        fields::check_members("openai", key, &value)?;
        let mut raw = raw.to_vec();
        if key == "tool_choice" && lenient_choice(&value) {
            // {"type": "auto"|"none"|"required"} (some editors send it; not openai's form): the
            // string it means, written so to openai targets too -- nothing is lost
            value = get(&value, "type").cloned().unwrap_or(Value::Null);
            raw.clear();
            dumps(&value, &mut raw); // json.dumps of one of three ASCII words: the same text
        }
        let canonical = to_canonical(key, value)?;
        let mut json = Vec::new();
        dumps(&canonical, &mut json);
        Ok(Some(control(json, raw)))
    }

    fn lenient_choice(value: &Value) -> bool {
        matches!(value, Value::Object(members) if members.len() == 1 && members[0].0 == b"type")
            && is_one_of(get(value, "type"), &["auto", "none", "required"])
    }

    fn to_canonical(key: &str, value: Value) -> Result<Value> {
        Ok(match key {
            "stop" if matches!(value, Value::Str(_)) => Value::Array(vec![value]),
            "tool_choice" | "function_call" => tool_choice_to_canonical(value),
            "reasoning_effort" => object(vec![("effort", value)]),
            "thinking" => crate::dialects::anthropic::controls::thinking_to_canonical(&value, false)?,
            "reasoning" => openrouter_reasoning_to_canonical(&value)?,
            "response_format" => response_format_to_canonical(value)?,
            _ => value,
        })
    }

    /// `openrouter_reasoning_to_canonical`: OpenRouter's `reasoning` as canonical reasoning --
    /// `effort` an effort, `max_tokens` a budget (reasoning on unless `enabled` says otherwise),
    /// `enabled` itself; `exclude: true` and any other member named in `uncarried`, `exclude:
    /// false` and nulls the defaults. Its members' types were checked (`fields::check_members`);
    /// an integral float budget is its integer, one beyond 64 bits a SchemaError.
    fn openrouter_reasoning_to_canonical(value: &Value) -> Result<Value> {
        let Value::Object(members) = value else {
            return Ok(object(vec![("other", value.clone())]));
        };
        let given = |key: &str| value.get(key).filter(|v| !v.is_null());
        let mut out: Vec<(&str, Value)> = Vec::new();
        if let Some(enabled) = given("enabled") {
            out.push(("enabled", enabled.clone()));
        }
        if let Some(effort) = given("effort") {
            out.push(("effort", effort.clone()));
        }
        if let Some(budget) = given("max_tokens") {
            let digits = match budget {
                Value::Float(f) if (-TWO_63..TWO_63).contains(f) => Some((*f as i64).to_string()),
                Value::Int(digits) => digits.parse::<i64>().ok().map(|_| digits.clone()),
                _ => None,
            };
            let Some(digits) = digits else {
                return Err(Error::new(ErrorClass::Schema, "number out of range for reasoning.max_tokens: beyond a 64-bit integer")
                    .with_path(b"$.reasoning.max_tokens".to_vec()));
            };
            if !out.iter().any(|(k, _)| *k == "enabled") {
                out.push(("enabled", Value::Bool(true)));
            }
            out.push(("budget_tokens", Value::Int(digits)));
        }
        let rest: Vec<Value> = members.iter()
            .filter(|(key, v)| !v.is_null() && !matches!(key.as_slice(), b"enabled" | b"effort" | b"max_tokens")
                    && (key != b"exclude" || *v != Value::Bool(false)))
            .map(|(key, _)| Value::Str(key.clone()))
            .collect();
        if !rest.is_empty() {
            out.push(("uncarried", Value::Array(rest)));
        }
        Ok(object(out))
    }

    /// 2^63 as a float (`-2^63 <= f < 2^63` fits in an i64)
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;

    /// `tool_choice_to_canonical`: `{"type": "auto" | "none" | "required" | "tool", "name"?}`;
    /// other shapes kept as given (`{"type": "other", "value": ...}`).
    pub fn tool_choice_to_canonical(value: Value) -> Value {
        if is_one_of(Some(&value), &["auto", "none", "required"]) {
            return object(vec![("type", value)]);
        }
        if let Value::Object(members) = &value {
            if is_str(get(&value, "type"), "function") {
                if let Some(function @ Value::Object(_)) = get(&value, "function") {
                    let name = get(function, "name").cloned().unwrap_or(Value::Null);
                    return object(vec![("type", string("tool")), ("name", name)]);
                }
            }
            if members.len() == 1 && members[0].0 == b"name" {
                // legacy function_call {"name": ...}
                let name = members[0].1.clone();
                return object(vec![("type", string("tool")), ("name", name)]);
            }
        }
        object(vec![("type", string("other")), ("value", value)])
    }

    /// `response_format_to_canonical`.
    pub fn response_format_to_canonical(value: Value) -> Result<Value> {
        let kind = get(&value, "type");
        if is_str(kind, "json_schema") {
            let empty = Value::Object(Vec::new());
            let spec = match get(&value, "json_schema") {
                Some(spec) if spec.truthy() => spec, // `spec or {}`
                _ => &empty,
            };
            if !matches!(spec, Value::Object(_)) {
                return Err(Error::new(ErrorClass::Schema, "expected an object for json_schema")
                    .with_path(b"$.response_format.json_schema".to_vec()));
            }
            let Some(schema) = get(spec, "schema").filter(|schema| !schema.is_null()) else {
                return Ok(object(vec![("type", string("json_object"))])); // (no schema: JSON of any shape)
            };
            let mut out = vec![("type", string("json_schema")), ("schema", schema.clone())];
            for extra in ["name", "strict", "description"] {
                if let Some(v) = get(spec, extra).filter(|v| !v.is_null()) {
                    out.push((extra, v.clone())); // (a null one carries nothing)
                }
            }
            return Ok(object(out));
        }
        if is_one_of(kind, &["text", "json_object"]) {
            let kind = kind.cloned().unwrap_or(Value::Null);
            return Ok(object(vec![("type", kind)]));
        }
        Ok(object(vec![("type", string("other")), ("value", value)]))
    }

    /// `tool_to_canonical(tool, legacy)`: `(attrs, parameters schema)` of a function
    /// tool; `None` for other tool types. attrs: `name`, `description`, `strict` and,
    /// for other function keys, `openai_extra` (their JSON members, spliced back for
    /// openai targets), `legacy`; beside the function, `cache_control` (an anthropic tool's
    /// attribute) and `openai_tool_extra` (the other members, spliced back beside it). The
    /// schema: `None` when absent (Python's `function.get("parameters")`, so an explicit null too).
    /// `tool_members`: the tool's members when the caller has them already (`Raw::canonical_with_members`
    /// passed them: the function object, most of a tool's text, is not read again to skip it).
    pub fn tool_to_canonical<'a, D: Data<'a>>(tool: D, tool_members: Option<Vec<(Key<'a>, D)>>, legacy: bool)
                                              -> Option<(Vec<Attr>, Option<D>)> {
        let tool_members = match tool_members {
            _ if legacy => Vec::new(),
            Some(members) => members,
            None => tool.member_list(),
        };
        let function = if legacy {
            tool
        } else {
            if !tool.is_object() || !lookup(&tool_members, "type").is_some_and(|t| t.str_is("function")) {
                return None;
            }
            lookup(&tool_members, "function").filter(|f| f.is_object())?
        };
        if !function.is_object() {
            return None;
        }
        let members = function.member_list();
        let name = lookup(&members, "name").filter(|name| name.is_str())?;
        let mut attrs: Vec<Attr> = Vec::new();
        attrs.push((Cow::Borrowed("name"), name.to_json().into()));
        crate::decoding::keep_members(&members, &mut attrs, "openai_extra", &["description", "strict"], &["name", "parameters"]);
        if legacy {
            attrs.push((Cow::Borrowed("legacy"), Cow::Borrowed(b"true")));
        } else {
            crate::decoding::beside_function(&tool_members, &mut attrs, "openai_tool_extra", &["cache_control"]);
        }
        Some((attrs, lookup(&members, "parameters").filter(|v| !v.is_null())))
    }
}

// -- encoding (helper E) ----------------------------------------------------------------

use crate::canonical::Control;
use crate::dialects::anthropic::controls::THINKING_BUDGETS;
use crate::encoding::{attr, attr_truthy, lose_tool_attr, lose_uncarried, object_schema, reasoning_place, tool_capacity, tool_name_out, Attr};
use crate::unicode::py_value_repr;
use crate::error::Result;
use crate::jsonwriter::dumps_str;
use crate::losses::{lacks, path_subject};
use crate::session::Session;
use crate::value::Value;

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

/// `value.get("type")` of an object, when it is a string.
fn type_of(value: &Value) -> Option<&[u8]> {
    value.get("type").and_then(Value::as_wtf8)
}

/// `reasoning_loss`: what openai lacks for a reasoning block that cannot go there at all
/// (`(what, done)` for `lose_block`), or None: it goes to `reasoning_key`
/// (`Options.openai_reasoning_field`). Its signature is lost on its own (`lose_signature`).
pub fn reasoning_loss(attrs: &[Attr<'_>], reasoning_key: Option<&str>) -> Option<(&'static str, Option<&'static str>)> {
    if reasoning_key.is_none() {
        return Some(("reasoning field", Some("Options.openai_reasoning_field chooses one a compatible server reads")));
    }
    if attr_truthy(attrs, "redacted") {
        return Some(("field for encrypted reasoning", None));
    }
    None
}

/// `reasoning_effort`: canonical reasoning -> an openai effort. A token budget maps by a
/// documented table: < 2048 low, < 8192 medium, else high; `enabled: false` -> none;
/// `enabled: true` without a budget (ollama `think: true`) -> medium. None: no effort
/// (an `effort` of null too).
pub fn reasoning_effort(reasoning: &Value) -> Option<Value> {
    if !reasoning.is_object() {
        return None;
    }
    let enabled = reasoning.get("enabled");
    if enabled == Some(&Value::Bool(false)) {
        // an effort beside it too: never turn reasoning on (anthropic thinking disabled + output_config.effort)
        return Some(Value::str("none"));
    }
    if let Some(effort) = reasoning.get("effort") {
        return (!effort.is_null()).then(|| effort.clone());
    }
    if let Some(budget) = reasoning.get("budget_tokens").and_then(py_int) {
        return Some(Value::str(if budget < 2048 { "low" } else if budget < 8192 { "medium" } else { "high" }));
    }
    if enabled == Some(&Value::Bool(true)) {
        return Some(Value::str("medium"));
    }
    None
}

/// An `isinstance(v, int)` value (a bool too) as a number to compare (beyond i128: saturated).
fn py_int(value: &Value) -> Option<i128> {
    match value {
        Value::Bool(b) => Some(*b as i128),
        Value::Int(digits) => Some(digits.parse().unwrap_or(if digits.starts_with('-') { i128::MIN } else { i128::MAX })),
        _ => None,
    }
}

/// What `tool_choice_from_canonical` makes of a canonical choice.
enum Choice {
    /// "auto", "none" or "required"
    Kind(Value),
    /// `{"type": "function", "function": {"name": ...}}`: the name is the caller's to map
    Named,
}

/// `tool_choice_from_canonical`.
fn tool_choice_from_canonical(choice: &Value) -> Option<Choice> {
    match type_of(choice) {
        Some(kind @ (b"auto" | b"none" | b"required")) => Some(Choice::Kind(Value::Str(kind.to_vec()))),
        Some(b"tool") => Some(Choice::Named),
        _ => None,
    }
}

/// `JSON_OBJECT_SCHEMA`: the canonical JSON mode openai has no rule for the messages of: a
/// `json_schema` of any object (the request encoder sends it for a `json_object` no message
/// says "json" for)
pub const JSON_OBJECT_SCHEMA: &[u8] = br#"{"type":"json_schema","schema":{"type":"object"}}"#;

/// `json_mode(fmt)`: a canonical response format that is openai's `json_object`.
pub fn json_mode(fmt: &[u8]) -> bool {
    Value::loads(fmt).is_ok_and(|fmt| type_of(&fmt) == Some(&b"json_object"[..]))
}

/// `response_format_from_canonical`.
pub fn response_format_from_canonical(fmt: &Value) -> Option<Value> {
    let kind = type_of(fmt)?;
    let object = |members: Vec<(&str, Value)>| Value::Object(members.into_iter().map(|(k, v)| (k.as_bytes().to_vec(), v)).collect());
    match kind {
        b"text" | b"json_object" => Some(object(vec![("type", Value::Str(kind.to_vec()))])),
        b"json_schema" => {
            let mut spec = vec![("name", fmt.get("name").cloned().unwrap_or_else(|| Value::str("response")))];
            for extra in ["description", "strict"] {
                if let Some(value) = fmt.get(extra) {
                    spec.push((extra, value.clone()));
                }
            }
            spec.push(("schema", fmt.get("schema").cloned().unwrap_or(Value::Null)));
            Some(object(vec![("type", Value::str("json_schema")), ("json_schema", object(spec))]))
        }
        _ => None,
    }
}

/// `_lose_reasoning_detail`: what an effort level cannot say -- a token budget, unless the
/// effort's budget (`Options.anthropic_thinking_budgets`, which an anthropic target reads
/// back) is that very budget -- and the source members canonical reasoning did not carry.
fn lose_reasoning_detail(control: &Control<'_>, value: &Value, effort: &Value, session: &mut Session) -> Result<()> {
    let place = control.place();
    if value.get("enabled") == Some(&Value::Bool(false)) {
        if let Some(given) = value.get("effort").filter(|e| !e.is_null() && !matches!(e, Value::Str(s) if s == b"none")) {
            let where_ = reasoning_place(value, "effort", &place);
            let what = format!("effort with thinking off (effort {})", py_value_repr(given));
            let reason = lacks(path_subject(&where_), "openai", &what, Some("reasoning_effort is 'none'"));
            session.lose(where_.as_bytes(), &reason, control.dialect.as_deref())?;
        }
    }
    if let Some(budget) = value.get("budget_tokens").and_then(py_int) {
        let exact = effort.as_str().and_then(|e| effort_budget(session, e)) == Some(budget);
        if !exact {
            let place = reasoning_place(value, "budget_tokens", &place);
            let done = format!("sent as reasoning_effort {}", py_value_repr(effort));
            let reason = lacks(path_subject(&place), "openai", "thinking budget", Some(&done));
            session.lose(place.as_bytes(), &reason, control.dialect.as_deref())?;
        }
    }
    lose_uncarried(control, value, "openai", session)
}

/// `budgets.get(effort, THINKING_BUDGETS.get(effort))`: the budget an anthropic target gives
/// `effort` (an empty option is the default, as Python's `or`).
fn effort_budget(session: &Session, effort: &str) -> Option<i128> {
    let given = session.options.anthropic_thinking_budgets.as_ref().filter(|b| !b.is_empty());
    let default = || THINKING_BUDGETS.iter().find(|(e, _)| *e == effort).map(|(_, b)| *b);
    match given {
        Some(budgets) => budgets.iter().find(|(e, _)| e == effort).map(|(_, b)| *b).or_else(default),
        None => default(),
    }
    .map(i128::from)
}

/// "Up to 4 sequences" (the client's `stop` docstring; the API rejects more): `STOP_MAX`.
pub const STOP_MAX: usize = 4;

/// `capped_stop`: the first `STOP_MAX` stop sequences; each one after is a recorded loss at
/// its source path (anthropic `stop_sequences`, ollama `options.stop` take more).
fn capped_stop(control: &Control<'_>, value: Value, session: &mut Session) -> Result<Option<Value>> {
    let Value::Array(mut items) = value else {
        return Ok((!value.is_null()).then_some(value));
    };
    if items.len() > STOP_MAX {
        let key = control.key.as_deref().unwrap_or("None");
        for index in STOP_MAX..items.len() {
            let place = format!("$.{key}[{index}]");
            let what = format!("room for more than {STOP_MAX} stop sequences");
            let reason = lacks(path_subject(&place), "openai", &what, Some("not sent"));
            session.lose(place.as_bytes(), &reason, control.dialect.as_deref())?;
        }
        items.truncate(STOP_MAX);
    }
    Ok(Some(Value::Array(items)))
}

/// `encode_control`: a canonical control as an openai `(key, value JSON)`; None and a
/// recorded loss if none.
pub fn encode_control(control: &Control<'_>, session: &mut Session) -> Result<Option<(&'static str, Vec<u8>)>> {
    if control.name == "max_output_tokens" && crate::numbers::no_limit(control) {
        let place = format!("$.{}", control.key.as_deref().unwrap_or_default());
        let what = format!("max_completion_tokens for no limit (num_predict {})", String::from_utf8_lossy(&control.value));
        let reason = lacks(path_subject(&place), "openai", &what, Some("none is written: the model's own limit applies"));
        session.lose(place.as_bytes(), &reason, control.dialect.as_deref())?;
        return Ok(None);
    }
    let value = Value::loads(&control.value)?;
    let (key, mapped) = match control.name.as_ref() {
        "tool_choice" => {
            let mapped = match tool_choice_from_canonical(&value) {
                Some(Choice::Kind(kind)) => Some(kind.to_json()),
                Some(Choice::Named) => {
                    // a named tool: named as its definition is
                    let path = format!("$.{}", control.key.as_deref().unwrap_or("None"));
                    let name = session.tool_name_out(value.get("name"), &path)?;
                    let mut out = b"{\"type\":\"function\",\"function\":{\"name\":".to_vec();
                    dumps_str(name.as_bytes(), &mut out);
                    out.extend_from_slice(b"}}");
                    Some(out)
                }
                None => None,
            };
            (Some("tool_choice"), mapped)
        }
        "response_format" => (Some("response_format"), response_format_from_canonical(&value).map(|v| v.to_json())),
        "reasoning" => {
            let effort = reasoning_effort(&value);
            if let Some(effort) = &effort {
                lose_reasoning_detail(control, &value, effort, session)?;
            }
            (Some("reasoning_effort"), effort.map(|v| v.to_json()))
        }
        "stop" => (Some("stop"), capped_stop(control, value, session)?.map(|v| v.to_json())),
        name => {
            let key = same_value_key(name);
            // a number the source takes, outside openai's range: its nearest bound
            let bound = match key {
                Some(key) => {
                    let place = control.place();
                    crate::numbers::clamp(session, &place, control.dialect.as_deref(), "openai", key, &value)?
                }
                None => None,
            };
            (key, match bound {
                Some(bound) => Some(bound.to_string().into_bytes()),
                None => (!value.is_null()).then(|| value.to_json()),
            })
        }
    };
    match (key, mapped) {
        (Some(key), Some(mapped)) => Ok(Some((key, mapped))),
        _ => {
            let place = control.place();
            let reason = lacks(path_subject(&place), "openai", "such parameter", None);
            session.lose(place.as_bytes(), &reason, control.dialect.as_deref())?;
            Ok(None)
        }
    }
}

/// `tool_from_canonical`: the openai tool object for a canonical tool definition (compact JSON).
pub fn tool_from_canonical(attrs: &[Attr<'_>], schema_raw: &[u8], session: &mut Session) -> Result<Vec<u8>> {
    let name = attr(attrs, "name");
    let legacy = attr_truthy(attrs, "legacy");
    let mut body = Vec::with_capacity(tool_capacity(attrs, schema_raw));
    if !legacy {
        body.extend_from_slice(b"{\"type\":\"function\",\"function\":");
    }
    body.extend_from_slice(b"{\"name\":");
    let wire = tool_name_out(session, name, "$.tools")?;
    dumps_str(wire.as_bytes(), &mut body);
    // an openai tool's cache_control (beside its function: LiteLLM's spelling) is written back
    // there into openai from openai (openai-compatible upstreams -- OpenRouter, LiteLLM -- take
    // it, as a part's and a message's); another dialect's is a recorded loss: the official API
    // refuses members it does not declare
    let own_cache = if session.source == "openai" && !legacy { attr(attrs, "cache_control") } else { None };
    for (key, value) in attrs {
        match key.as_ref() {
            "cache_control" if own_cache.is_some() => {}
            "description" | "strict" => {
                body.push(b',');
                dumps_str(key.as_bytes(), &mut body);
                body.push(b':');
                body.extend_from_slice(value);
            }
            "openai_extra" => {
                body.push(b',');
                if let Value::Str(members) = Value::loads(value)? {
                    body.extend_from_slice(&members);
                }
            }
            // (internal ones -- ollama's tool shape among them -- are nothing lost)
            key if key == "name" || key == "openai_tool_extra" || crate::losses::is_internal_attr(key) => {}
            other => lose_tool_attr(other, value, attrs, "openai", session)?,
        }
    }
    if !schema_raw.is_empty() {
        body.extend_from_slice(b",\"parameters\":");
        if session.source != "openai" {
            object_schema(schema_raw, session, name, &mut body)?;
        } else {
            body.extend_from_slice(schema_raw);
        }
    }
    body.push(b'}');
    if !legacy {
        if let Some(cache) = own_cache {
            body.extend_from_slice(b",\"cache_control\":");
            body.extend_from_slice(cache);
        }
        if let Some(Value::Str(members)) = attr(attrs, "openai_tool_extra").map(Value::loads).transpose()? {
            body.push(b',');
            body.extend_from_slice(&members);
        }
        body.push(b'}');
    }
    Ok(body)
}
