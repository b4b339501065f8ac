//! anthropic request-level settings <-> canonical controls (`src/interlingua/dialects/anthropic/controls.py`).
#![forbid(unsafe_code)]

// -- decoding (helper AD) ----------------------------------------------------------------
//
// `decode` / `tool_to_canonical`: pure functions over `value::Value` (Python data after
// `json.loads`); a control's value and a tool's attributes leave as compact JSON
// (`jsonwriter::dumps`), as `canonical.rs` carries them.

use std::borrow::Cow;

use crate::canonical::{Control, RawJson};
use crate::compact::{lookup, Data, Key, Raw};
use crate::error::{Error, ErrorClass, Result};
use crate::dialects::fields::{check_members, member_fields};
use crate::value::Value;

pub const DIALECT: &str = "anthropic";

/// `CONTROLS`: anthropic key -> canonical control name (`output_config` also gives
/// `response_format`, `tool_choice` also `parallel_tool_calls`).
const CONTROLS: &[(&str, &str)] = &[
    ("model", "model"),
    ("max_tokens", "max_output_tokens"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("top_k", "top_k"),
    ("stop_sequences", "stop"),
    ("stream", "stream"),
    ("tool_choice", "tool_choice"),
    ("thinking", "reasoning"),
    ("output_config", "reasoning"),
    ("metadata", "user"),
    ("service_tier", "service_tier"),
];

/// (the key, its control name) of a key of `CONTROLS`, both as constants.
fn control_key(key: &[u8]) -> Option<(&'static str, &'static str)> {
    CONTROLS.iter().find(|(k, _)| k.as_bytes() == key).copied()
}

/// `CONTROLS[key]`.
pub fn control_name(key: &[u8]) -> Option<&'static str> {
    control_key(key).map(|(_, name)| name)
}

/// `controls.decode`: the controls a top-level field means (the first carries the
/// raw JSON, the others are derived: `raw` None), or None (an extension). A value
/// kept as it is borrows `raw` (no copy per control).
pub fn decode<'r>(key: &[u8], raw: &'r [u8]) -> Result<Option<Vec<Control<'r>>>> {
    let Some((key, name)) = control_key(key) else { return Ok(None) };
    let control = |name: Cow<'static, str>, value: Cow<'r, [u8]>, raw: Option<&'r [u8]>| Control {
        name,
        value,
        dialect: Some(Cow::Borrowed(DIALECT)),
        key: Some(Cow::Borrowed(key)),
        raw: raw.map(Cow::Borrowed),
    };
    if keeps_value(key) && member_fields(DIALECT, key).is_none() && Raw::canonical(raw).is_some() {
        // the value as it is, and its text is its dumps (compact.rs): no tree
        return Ok(Some(vec![control(Cow::Borrowed(name), Cow::Borrowed(raw), Some(raw))]));
    }
    let value = Value::loads(raw)?;
    check_members(DIALECT, key, &value)?;
    let pairs = to_canonical(key, name, &value)?;
    if pairs.is_empty() {
        // nothing canonical in it (e.g. empty metadata): still written back verbatim
        return Ok(Some(vec![control(Cow::Owned(format!("anthropic:{key}")), Cow::Owned(value.to_json()), Some(raw))]));
    }
    Ok(Some(
        pairs
            .into_iter()
            .enumerate()
            .map(|(i, (name, value))| {
                let mut one = control(Cow::Borrowed(name), Cow::Owned(value.to_json()), if i == 0 { Some(raw) } else { None });
                if i > 0 {
                    // derived from one member of the field: a loss of it names that member
                    one.key = Some(Cow::Owned(format!("{key}.{}", derived_member(name))));
                }
                one
            })
            .collect(),
    ))
}

/// `DERIVED_MEMBER`: the member of a field that a second control of it comes from.
fn derived_member(name: &str) -> &'static str {
    match name {
        "parallel_tool_calls" => "disable_parallel_tool_use",
        _ => "format", // response_format, of output_config
    }
}

/// Whether `to_canonical` gives the one control `(name, value)` for this key, the value unchanged.
fn keeps_value(key: &str) -> bool {
    !matches!(key, "tool_choice" | "thinking" | "output_config" | "metadata" | "service_tier")
}

fn to_canonical(key: &str, name: &'static str, value: &Value) -> Result<Vec<(&'static str, Value)>> {
    Ok(match key {
        "stop_sequences" => vec![("stop", value.clone())],
        "tool_choice" => tool_choice_to_canonical(value),
        "thinking" => vec![("reasoning", thinking_to_canonical(value, true)?)],
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
    // (its type was checked: fields::check_members)
    if let Some(effort @ Value::Str(_)) = value.get("effort") {
        pairs.push(("reasoning", object(vec![("effort", effort.clone())])));
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

/// `thinking_to_canonical`. `least_budget`: a budget below anthropic's least is the input's
/// fault (anthropic's own body); LiteLLM's thinking in an openai body passes `false` (openai
/// has no such rule; an anthropic target raises the budget to its least, recorded).
pub fn thinking_to_canonical(value: &Value, least_budget: bool) -> Result<Value> {
    let kind = match value.get("type") {
        Some(Value::Str(kind)) => kind.as_slice(),
        _ => b"",
    };
    let (mut out, carried): (Vec<(&str, Value)>, &[&str]) = match kind {
        b"enabled" => {
            let mut out = vec![("enabled", Value::Bool(true))];
            if let Some(budget) = value.get("budget_tokens") {
                out.push(("budget_tokens", checked_budget(budget, least_budget)?));
            }
            (out, &["type", "budget_tokens"])
        }
        b"disabled" => (vec![("enabled", Value::Bool(false))], &["type"]),
        b"adaptive" => (vec![("enabled", Value::Bool(true)), ("adaptive", Value::Bool(true))], &["type"]),
        _ => return Ok(object(vec![("other", value.clone())])),
    };
    // members it does not carry (`display`, any other) are named, so another target records
    // each as a loss; an explicit null is absent
    if let Value::Object(members) = value {
        let rest: Vec<Value> = members.iter()
            .filter(|(key, v)| !v.is_null() && !carried.iter().any(|c| c.as_bytes() == key.as_slice()))
            .map(|(key, _)| Value::Str(key.clone()))
            .collect();
        if !rest.is_empty() {
            out.push(("uncarried", Value::Array(rest)));
        }
    }
    Ok(object(out))
}

const BUDGET_PATH: &[u8] = b"$.thinking.budget_tokens";

/// `_budget`: `thinking.budget_tokens` as anthropic takes it -- an integer (an integral float
/// is that integer), at least 1024; a fraction or a smaller one is a SchemaError at its path
/// (no offset: the pipeline locates it at the field's first byte). Its type was checked
/// before (`fields::check_members`: an integer, or an integral float).
fn checked_budget(budget: &Value, least_budget: bool) -> Result<Value> {
    let refused = |message: String| Err(Error::new(ErrorClass::Schema, message).with_path(BUDGET_PATH.to_vec()));
    let digits = match budget {
        Value::Float(f) if f.fract() != 0.0 => {
            return refused("expected an integer for budget_tokens, got a number with a fraction".into());
        }
        Value::Float(f) if !(-TWO_63..TWO_63).contains(f) => {
            return refused("number out of range for thinking.budget_tokens: beyond a 64-bit integer".into());
        }
        Value::Float(f) => (*f as i64).to_string(),
        Value::Int(digits) => digits.clone(),
        _ => return Ok(budget.clone()), // (not a number: refused by check_members before)
    };
    if !least_budget && digits.parse::<i64>().is_err() {
        // (openai's: beyond 64 bits no API takes it -- as a float one is for anthropic's own)
        return refused("number out of range for thinking.budget_tokens: beyond a 64-bit integer".into());
    }
    let least = crate::numbers::range(DIALECT, "thinking.budget_tokens").map_or(1024, |(least, _)| least);
    // (digits beyond i64: the sign decides)
    if least_budget && digits.parse::<i64>().map_or(digits.starts_with('-'), |n| n < least) {
        return refused(format!("number out of range for thinking.budget_tokens: {digits} (anthropic takes {least} or more)"));
    }
    Ok(Value::Int(digits))
}

/// 2^63 as a float (`-2^63 <= f < 2^63` fits in an i64)
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// keys of a custom tool that are canonical tool-definition attrs (`_TOOL_ATTRS`)
const TOOL_ATTRS: [&str; 3] = ["description", "strict", "cache_control"];

/// A canonical block's attributes: (name, compact JSON), in Python's dict order.
pub type Attrs = Vec<(Cow<'static, str>, RawJson<'static>)>;

/// `tool_to_canonical`: `(attrs, input_schema)` of a custom tool; None for server
/// tools (carried raw). `tool` is an object: a `&Value`, or its canonical text
/// (`compact::Raw`, read without a tree). `members`: the tool's, when the caller read them
/// already (`Raw::canonical_with_members`).
pub fn tool_to_canonical<'a, D: Data<'a>>(tool: D, members: Option<Vec<(Key<'a>, D)>>) -> Option<(Attrs, D)> {
    if !tool.is_object() {
        return None;
    }
    let members = members.unwrap_or_else(|| tool.member_list());
    match lookup(&members, "type") {
        None => {}
        Some(t) if t.is_null() || t.str_is("custom") => {}
        Some(_) => return None,
    }
    let name = lookup(&members, "name").filter(|name| name.is_str())?;
    let schema = lookup(&members, "input_schema")?;
    let mut attrs: Attrs = vec![(Cow::Borrowed("name"), Cow::Owned(name.to_json()))];
    // (type: "custom" or null, absent's meaning)
    crate::decoding::keep_members(&members, &mut attrs, "anthropic_extra", &TOOL_ATTRS, &["name", "input_schema", "type"]);
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
    fn a_derived_control_is_keyed_by_its_member() {
        // each control of one field has its own key: a loss of it names what is lost, once
        for (key, raw, keys) in [
            ("tool_choice", r#"{"type":"auto","disable_parallel_tool_use":true}"#,
             ["tool_choice", "tool_choice.disable_parallel_tool_use"]),
            ("output_config", r#"{"effort":"high","format":{"type":"json_schema"}}"#,
             ["output_config", "output_config.format"]),
        ] {
            let got: Vec<String> = decode(key.as_bytes(), raw.as_bytes()).unwrap().unwrap().into_iter()
                .map(|c| c.key.unwrap().into_owned()).collect();
            assert_eq!(got, keys);
        }
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
        assert_eq!((err.class, err.message.as_str()), (ErrorClass::Schema, "expected a string or null for output_config.effort, got number"));
        assert_eq!(err.path.as_deref(), Some(&b"$.output_config.effort"[..]));
    }

    #[test]
    fn custom_tools_and_server_tools() {
        let tool = Value::loads(br#"{"name":"f","input_schema":{"type":"object"},"x":[1],"strict":true}"#).unwrap();
        let (attrs, schema) = tool_to_canonical(&tool, None).unwrap();
        let attrs: Vec<(String, String)> =
            attrs.into_iter().map(|(k, v)| (k.into_owned(), String::from_utf8(v.into_owned()).unwrap())).collect();
        assert_eq!(attrs, [("name".into(), r#""f""#.into()), ("strict".into(), "true".into()),
                           ("anthropic_extra".into(), r#""\"x\":[1]""#.into())]);
        assert_eq!(schema.to_json(), br#"{"type":"object"}"#);
        assert!(tool_to_canonical(&Value::loads(br#"{"type":"web_search_20250305","name":"w"}"#).unwrap(), None).is_none());
        assert!(tool_to_canonical(&Value::loads(br#"{"name":"f"}"#).unwrap(), None).is_none());
    }
}

// -- encoding (helper AE) ----------------------------------------------------------------
//
// `controls.encode` and the tool definition of `tool_from_canonical`: canonical controls
// of another dialect -> anthropic fields. Every rule, loss and wording is Python's; the
// mapping decisions are documented there (`encode`, `_reasoning`). `max_tokens` beyond 64
// bits is a SchemaError in both (numbers.rs). Not ported: a thinking budget beyond 128 bits
// given to the Encoder API (a TranscodeError "... not ported yet"). Python's regex `\d` (a Unicode decimal digit) in
// `ADAPTIVE_MODELS` is taken as any numeric character (the core has no Unicode database).
// Values no decoder makes where Python raises AttributeError / TypeError (a tool choice or
// response format that is not an object, an unhashable effort or service tier): read as
// "no such value" (the loss Python records for an unknown one).

pub use self::to_anthropic::{encode, string_text, tool_from_canonical, Foreign, THINKING_BUDGETS};

mod to_anthropic {
    use crate::encoding::{attr, lose_tool_attr, object_schema, tool_capacity, tool_name_repr, Attr, COMBINATORS};
    use crate::canonical::control_place;
    use crate::encoding::{blank_text, lose_uncarried_of, merged_fields, reasoning_place, sets_no_reasoning, ReasoningField};
    use crate::error::{Error, ErrorClass, Result};
    use crate::jsonwriter::{dumps_str, key_bytes};
    use crate::losses::{lacks, path_subject};
    use crate::session::Session;
    use crate::value::Value;

    use super::{DIALECT, TOOL_ATTRS};

    /// `request.EXTRA_ATTR`: members of an anthropic object without canonical meaning, as JSON text
    const EXTRA_ATTR: &str = "anthropic_extra";

    /// A control of another dialect as `encode` reads it: the canonical `Control` with its
    /// value parsed (`Control.value`), and where it came from (for its losses).
    #[derive(Clone, Debug)]
    pub struct Foreign {
        pub name: String,
        pub value: Value,
        pub dialect: Option<String>,
        pub key: Option<String>,
        /// its source value was a list (`control.raw[:1] == b"["`; no raw: the value is one)
        pub listed: bool,
    }

    /// `_SAME` but `max_output_tokens` (written first, by `_max_tokens` / `_reasoning`).
    const SAME: [(&str, &str); 2] = [("model", "model"), ("stream", "stream")];
    const UNDECLARED: [&str; 3] = ["temperature", "top_p", "top_k"];
    const EFFORTS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];
    /// the controls `encode` maps itself (`handled`)
    const HANDLED: [&str; 10] = [
        "model", "max_output_tokens", "stream", "stop", "tool_choice", "parallel_tool_calls", "reasoning",
        "response_format", "user", "service_tier",
    ];
    /// `THINKING_BUDGETS`: each effort's thinking budget (default `Options.anthropic_thinking_budgets`)
    pub const THINKING_BUDGETS: [(&str, i64); 6] =
        [("minimal", 1024), ("low", 1024), ("medium", 4096), ("high", 16384), ("xhigh", 32768), ("max", 65536)];
    const MIN_BUDGET: i128 = 1024;

    /// `encode`: all foreign controls at once (`controls`: canonical name -> the controls of
    /// that name, in the order they came) -> `[(anthropic key, raw JSON)]`. `unthought_tool_turn`:
    /// the request's last assistant message calls tools and does not begin with a thinking block
    /// (thinking is then a recorded loss: `_reasoning`).
    pub fn encode(controls: &[(String, Vec<Foreign>)], session: &mut Session, unthought_tool_turn: bool,
                  tools_sent: Option<&crate::encoding::ToolsSent>) -> Result<Vec<(&'static str, Vec<u8>)>> {
        let mut given: Vec<(&str, &Foreign)> = Vec::with_capacity(controls.len());
        for (name, items) in controls {
            if name != "reasoning" {
                given.push((name, first(items, session)?));
            }
        }
        let find = |name: &str| given.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
        let max_tokens = max_tokens_of(find("max_output_tokens"), session)?;
        let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
        for (name, control) in &given {
            if let Some((_, key)) = SAME.iter().find(|(n, _)| n == name) {
                out.push((key, control.value.to_json()));
            }
        }
        if let Some(stop) = find("stop") {
            stop_sequences(stop, session, &mut out)?;
        }
        let forced = tool_choice(find("tool_choice"), find("parallel_tool_calls"), tools_sent, session, &mut out)?;
        let reasoning: &[Foreign] = controls.iter().find(|(n, _)| n == "reasoning").map_or(&[], |(_, v)| v);
        let max_tokens = reasoning_fields(reasoning, find("model"), find("response_format"), session, &mut out,
                                          max_tokens, forced, unthought_tool_turn)?;
        out.insert(0, ("max_tokens", max_tokens.to_string().into_bytes()));
        if let Some(user) = find("user") {
            out.push(("metadata", Value::Object(vec![(b"user_id".to_vec(), user.value.clone())]).to_json()));
        }
        if let Some(tier) = find("service_tier") {
            match &tier.value {
                Value::Str(s) if s == b"default" => out.push(("service_tier", b"\"standard_only\"".to_vec())),
                Value::Str(s) if s == b"auto" => out.push(("service_tier", b"\"auto\"".to_vec())),
                other => lose(session, tier, &format!("service tier {}", py_repr(other)), None, "")?,
            }
        }
        for (name, control) in &given {
            if HANDLED.contains(name) {
                continue;
            }
            if UNDECLARED.contains(name) {
                lose(session, control, "such parameter", Some("the client's messages.create does not declare it"), "")?;
                continue;
            }
            if is_default(name, &control.value) {
                continue;
            }
            if *name == "stream_options" && only_usage(&control.value) {
                continue; // anthropic streams always report usage
            }
            lose(session, control, "such parameter", None, "")?;
        }
        Ok(out)
    }

    /// `_DEFAULTS`: a control whose value means "not given" (Python `==`: `1.0 == 1`, `0 == False`).
    fn is_default(name: &str, value: &Value) -> bool {
        let default = match name {
            "n" => Value::Int("1".into()),
            "frequency_penalty" | "presence_penalty" => Value::Int("0".into()),
            "logprobs" => Value::Bool(false),
            "parallel_tool_calls" => Value::Bool(true),
            _ => return false,
        };
        py_eq(value, &default)
    }

    /// `set(control.value or {}) <= {"include_usage"}` (a stream_options that asks only for usage).
    fn only_usage(value: &Value) -> bool {
        if !value.truthy() {
            return true;
        }
        match value {
            Value::Object(members) => members.iter().all(|(k, _)| k == b"include_usage"),
            Value::Array(items) => items.iter().all(|v| matches!(v, Value::Str(s) if s == b"include_usage")),
            _ => false, // a string's characters (never "include_usage"); Python raises for a number
        }
    }

    /// `_first`: the control written of several with one name; the others are losses unless equal.
    fn first<'c>(items: &'c [Foreign], session: &mut Session) -> Result<&'c Foreign> {
        let head = &items[0];
        for other in &items[1..] {
            if !py_eq(&other.value, &head.value) {
                lose(session, other, &format!("second value for {}", other.name), Some("the first is kept"), "")?;
            }
        }
        Ok(head)
    }

    /// `_stop_sequences`: `stop_sequences` of the canonical stop list; a sequence without a
    /// non-whitespace character (anthropic refuses one) is not sent, recorded at its element (the
    /// field when it came as a string); none left, no field.
    fn stop_sequences(control: &Foreign, session: &mut Session, out: &mut Vec<(&'static str, Vec<u8>)>) -> Result<()> {
        let stops = match &control.value {
            Value::Str(_) => std::slice::from_ref(&control.value),
            Value::Array(items) => items.as_slice(),
            other => {
                out.push(("stop_sequences", other.to_json()));
                return Ok(());
            }
        };
        let mut kept = Vec::with_capacity(stops.len());
        for (i, sequence) in stops.iter().enumerate() {
            match sequence {
                Value::Str(text) if blank_text(text) => {
                    let what = format!("stop sequence {} without a non-whitespace character (it refuses one)",
                                       py_repr(sequence));
                    let sub = if control.listed { format!("[{i}]") } else { String::new() };
                    lose(session, control, &what, Some("not sent"), &sub)?;
                }
                _ => kept.push(sequence.clone()),
            }
        }
        if !kept.is_empty() || stops.is_empty() {
            out.push(("stop_sequences", Value::Array(kept).to_json()));
        }
        Ok(())
    }

    /// `_lose`: `control` (or its member `sub`) has no anthropic form, named by its source path.
    fn lose(session: &mut Session, control: &Foreign, what: &str, done: Option<&str>, sub: &str) -> Result<()> {
        let mut path = control_place(control.key.as_deref(), &control.name);
        path.push_str(sub);
        let reason = lacks(path_subject(&path), DIALECT, what, done);
        session.lose(&path, &reason, control.dialect.as_deref())
    }

    /// `_lose_member`: a loss about `member` of the reasoning settings merged, at the field it came
    /// from (the last that has it; `encoding::reasoning_place`), the last field when none has it.
    fn lose_member(session: &mut Session, items: &[Foreign], merged: &Value, member: &str, what: &str,
                   done: Option<&str>) -> Result<()> {
        let Some(last) = items.last() else { return Ok(()) };
        let place = control_place(last.key.as_deref(), &last.name);
        let path = reasoning_place(merged, member, &place);
        let reason = lacks(path_subject(&path), DIALECT, what, done);
        session.lose(&path, &reason, last.dialect.as_deref())
    }

    /// `_max_tokens`: anthropic's required `max_tokens` from the source's: an integral float as
    /// its integer, another number rounded down (recorded); `None`: the source gave none, or
    /// one that is not a number (recorded).
    fn max_tokens_of(control: Option<&Foreign>, session: &mut Session) -> Result<Option<i128>> {
        let Some(control) = control else { return Ok(None) };
        let Some(n) = max_tokens_value(control, session)? else { return Ok(None) };
        // (ollama num_predict 0: anthropic takes 1 or more)
        let place = control_place(control.key.as_deref(), &control.name);
        let value = Value::Int(n.to_string());
        let bound = crate::numbers::clamp(session, &place, control.dialect.as_deref(), DIALECT, "max_tokens", &value)?;
        Ok(Some(bound.map_or(n, i128::from)))
    }

    /// `_max_tokens` before the range: the source's number as an integer, or None (recorded).
    fn max_tokens_value(control: &Foreign, session: &mut Session) -> Result<Option<i128>> {
        if no_limit(control) {
            lose(session, control, &format!("max_tokens for no limit (num_predict {})", py_repr(&control.value)),
                 Some("Options.default_max_tokens is written"), "")?;
            return Ok(None);
        }
        match &control.value {
            Value::Int(digits) => match digits.parse::<i64>() {
                Ok(n) => Ok(Some(i128::from(n))),
                Err(_) => Err(beyond_64_bits(control)),
            },
            Value::Float(f) if f.is_finite() => {
                if f.fract() != 0.0 {
                    lose(session, control, &format!("fractional max_tokens ({})", py_repr(&control.value)),
                         Some("rounded down"), "")?;
                }
                if !(-TWO_63..TWO_63).contains(f) {
                    return Err(beyond_64_bits(control));
                }
                Ok(Some(f.trunc() as i128))
            }
            other => {
                lose(session, control, &format!("max_tokens that is not a number ({})", py_repr(other)),
                     Some("Options.default_max_tokens is written"), "")?;
                Ok(None)
            }
        }
    }

    /// A Python int as `i128` (a thinking budget an encoder is given); one beyond it is not
    /// ported (Python's ints are unbounded; a Transcoder's budgets come from anthropic itself).
    fn big_int(digits: &str) -> Result<i128> {
        digits.parse::<i128>().map_err(|_| {
            Error::new(ErrorClass::Transcode, format!("an integer control beyond 128 bits ({digits}) is not ported yet"))
        })
    }

    const TWO_63: f64 = 9_223_372_036_854_775_808.0;

    /// `_beyond_64_bits`: max tokens an encoder is given beyond 64 bits (a Transcoder's decoder
    /// refuses it first, at the value: numbers.rs), the same wording, at its source path.
    fn beyond_64_bits(control: &Foreign) -> Error {
        let key = control.key.as_deref().filter(|k| !k.is_empty()).unwrap_or(&control.name);
        let message = format!("number out of range for {key}: {} is beyond a 64-bit integer \
                               (what converting it for anthropic takes)", py_repr(&control.value));
        Error::new(ErrorClass::Schema, message).with_path(format!("$.{key}").into_bytes())
    }

    /// `numbers.no_limit` of a gathered control: ollama's `num_predict` below 0.
    fn no_limit(control: &Foreign) -> bool {
        let negative = match &control.value {
            Value::Int(digits) => digits.starts_with('-'),
            Value::Float(f) => *f < 0.0,
            _ => false,
        };
        negative && control.dialect.as_deref() == Some("ollama") && control.key.as_deref() == Some("options.num_predict")
    }

    /// `_tool_choice`: writes `tool_choice`; whether it forces tool use (`any` / `tool`).
    /// `tools_sent`: the tools the request carries (None: not known): with none, a choice is
    /// not written (anthropic refuses one without tools) -- a forced one is a recorded loss, the
    /// others say nothing then; a named tool that is not sent is a recorded loss.
    fn tool_choice(choice: Option<&Foreign>, parallel: Option<&Foreign>, tools_sent: Option<&crate::encoding::ToolsSent>,
                   session: &mut Session, out: &mut Vec<(&'static str, Vec<u8>)>) -> Result<bool> {
        // (kind, the named tool's wire name)
        let mut written: Option<(&'static str, Option<String>)> = None;
        if let Some(control) = choice {
            let kind = control.value.get("type");
            let fate = tools_sent.map_or((true, None), |sent| crate::encoding::choice_fate(Some(&control.value), sent));
            match fate {
                (_, Some(loss)) => lose(session, control, loss, Some("not sent"), "")?,
                (false, None) => {} // auto / none without tools: nothing to choose, nothing lost
                (true, None) => match kind {
                    Some(Value::Str(s)) if s == b"auto" => written = Some(("auto", None)),
                    Some(Value::Str(s)) if s == b"none" => written = Some(("none", None)),
                    Some(Value::Str(s)) if s == b"required" => written = Some(("any", None)),
                    Some(Value::Str(s)) if s == b"tool" => {
                        let name = session.tool_name_out(control.value.get("name"), "$.tool_choice")?;
                        written = Some(("tool", Some(name)));
                    }
                    _ => lose(session, control, "such tool choice", None, "")?,
                },
            }
        }
        let no_tools = tools_sent.is_some_and(|sent| sent.is_empty());
        let disable = matches!(parallel, Some(c) if c.value == Value::Bool(false)) && !no_tools;
        if disable && written.is_none() {
            written = Some(("auto", None));
        }
        let Some((kind, name)) = written else { return Ok(false) };
        let mut members = vec![(b"type".to_vec(), Value::Str(kind.as_bytes().to_vec()))];
        if let Some(name) = name {
            members.push((b"name".to_vec(), Value::Str(name.into_bytes())));
        }
        if disable && kind != "none" {
            // (no tool use at all: nothing to disable)
            members.push((b"disable_parallel_tool_use".to_vec(), Value::Bool(true)));
        }
        out.push(("tool_choice", Value::Object(members).to_json()));
        Ok(kind == "any" || kind == "tool")
    }

    /// `ADAPTIVE_MODELS.match(model)`, the regex written out:
    /// `(?:.*[/.:])?claude-(?:(?:opus|sonnet|haiku)-4-(?:[6-9]|[1-9]\d)|[a-z]+-(?:[5-9]|[1-9]\d)|mythos|fable)(?!\d)`
    /// (`re.match`: anchored at the start only; `.` is any character but a newline).
    pub fn adaptive_model(model: &str) -> bool {
        if claude_tail(model) {
            return true;
        }
        for (i, c) in model.char_indices() {
            if c == '\n' {
                return false; // `.*` does not cross a newline
            }
            if matches!(c, '/' | '.' | ':') && claude_tail(&model[i + 1..]) {
                return true;
            }
        }
        false
    }

    /// `\d` of the pattern (``re.ASCII``: a model name's version digits are ASCII ones).
    fn is_digit(c: Option<char>) -> bool {
        c.is_some_and(|c| c.is_ascii_digit())
    }

    fn claude_tail(s: &str) -> bool {
        let Some(rest) = s.strip_prefix("claude-") else { return false };
        for family in ["opus", "sonnet", "haiku"] {
            if let Some(version) = rest.strip_prefix(family).and_then(|r| r.strip_prefix("-4-")) {
                if version_then_no_digit(version, '6') {
                    return true;
                }
            }
        }
        let letters = rest.bytes().take_while(u8::is_ascii_lowercase).count();
        if letters > 0 {
            if let Some(version) = rest[letters..].strip_prefix('-') {
                if version_then_no_digit(version, '5') {
                    return true;
                }
            }
        }
        for name in ["mythos", "fable"] {
            if let Some(after) = rest.strip_prefix(name) {
                if !is_digit(after.chars().next()) {
                    return true;
                }
            }
        }
        false
    }

    /// `(?:[low-9]|[1-9]\d)(?!\d)` at the start of `s`.
    fn version_then_no_digit(s: &str, low: char) -> bool {
        let mut chars = s.chars();
        let (a, b, c) = (chars.next(), chars.next(), chars.next());
        let Some(a) = a else { return false };
        if (low..='9').contains(&a) && !is_digit(b) {
            return true;
        }
        ('1'..='9').contains(&a) && is_digit(b) && !is_digit(c)
    }

    /// `thinking_mode`: `adaptive` or `budget` (`Options.anthropic_thinking`; `auto` by the model).
    pub fn thinking_mode(session: &Session, model: Option<&Value>) -> bool {
        match session.options.anthropic_thinking.as_ref() {
            "adaptive" => true,
            "auto" => matches!(model, Some(Value::Str(name)) if adaptive_model(&String::from_utf8_lossy(name))),
            _ => false,
        }
    }

    /// `budgets.get(effort, THINKING_BUDGETS[effort])`.
    /// (`effort` is one of `THINKING_BUDGETS`; an empty option is the default, as Python's `or`.)
    fn effort_budget(session: &Session, effort: &str) -> i128 {
        let options = session.options.anthropic_thinking_budgets.as_ref().filter(|b| !b.is_empty());
        let found = options.and_then(|b| b.iter().find(|(e, _)| e == effort)).map(|(_, b)| *b);
        let default = THINKING_BUDGETS.iter().find(|(e, _)| *e == effort).map_or(0, |(_, b)| *b);
        found.unwrap_or(default) as i128
    }

    /// The `thinking` member being decided.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Thinking {
        Disabled,
        Adaptive,
        /// `{"type": "enabled", "budget_tokens": n}`; `repr`: the budget as Python writes it
        /// in a loss (`True` for a boolean budget of a constructed event)
        Enabled(i128, bool),
    }

    /// `_reasoning`: writes `thinking` / `output_config`; returns the `max_tokens` to write.
    fn reasoning_fields(items: &[Foreign], model: Option<&Foreign>, response_format: Option<&Foreign>,
                        session: &mut Session, out: &mut Vec<(&'static str, Vec<u8>)>, mut max_tokens: Option<i128>,
                        forced: bool, unthought_tool_turn: bool) -> Result<i128> {
        let fields: Vec<ReasoningField<'_>> = items.iter()
            .map(|c| ReasoningField { key: c.key.as_deref(), dialect: c.dialect.as_deref(), name: &c.name, value: &c.value })
            .collect();
        // one setting, as every target merges it (each member's field in its `at`)
        let mut merged = Value::Object(Vec::new());
        if let Some(last) = items.last() {
            merged = merged_fields(&fields, DIALECT, session)?;
            // (LiteLLM's thinking.display of an openai body)
            lose_uncarried_of(last.key.as_deref(), last.dialect.as_deref(), &merged, DIALECT, session)?;
        }
        let merged = &merged;
        let get = |key: &str| merged.get(key);
        let adaptive = thinking_mode(session, model.map(|m| &m.value));
        let mut effort_out: Option<Vec<u8>> = None;
        let mut thinking: Option<Thinking> = None;
        let last = items.last();
        let mut decided_by = "enabled"; // the member the thinking is made of: its losses are at its field
        let mut effort = get("effort");
        if get("enabled") == Some(&Value::Bool(false))
            && effort.is_some_and(|e| !matches!(e, Value::Null) && !matches!(e, Value::Str(s) if s == b"none"))
        {
            // never turn reasoning on (as ollama's think and openai's effort do)
            let what = format!("effort with thinking off (effort {})", py_repr(effort.unwrap_or(&Value::Null)));
            lose_member(session, items, merged, "effort", &what, Some("thinking is off"))?;
            effort = None;
        }
        match effort {
            Some(effort) if *effort != Value::Null => {
                decided_by = "effort";
                if matches!(effort, Value::Str(s) if s == b"none") {
                    thinking = Some(Thinking::Disabled);
                } else {
                    let mut level = match effort {
                        Value::Str(s) => std::str::from_utf8(s).ok().filter(|e| EFFORTS.contains(e)),
                        _ => None,
                    };
                    if level.is_none() {
                        lose_member(session, items, merged, "effort", &format!("effort level {}", py_repr(effort)),
                                    Some("approximated as 'low'"))?;
                        level = Some("low");
                    }
                    let level = level.unwrap_or("low");
                    if adaptive {
                        effort_out = Some(level.as_bytes().to_vec());
                        thinking = Some(Thinking::Adaptive);
                    } else {
                        thinking = Some(Thinking::Enabled(effort_budget(session, level), false));
                    }
                    if get("budget_tokens").is_some() {
                        // (beside it: LiteLLM's thinking + reasoning_effort)
                        lose_member(session, items, merged, "budget_tokens", "thinking budget beside an effort",
                                    Some("the effort decides the thinking"))?;
                    }
                }
            }
            _ => {
                let enabled = get("enabled");
                if enabled == Some(&Value::Bool(false)) {
                    thinking = Some(Thinking::Disabled);
                    if get("budget_tokens").is_some() {
                        // (OpenRouter's reasoning: enabled false beside a max_tokens)
                        lose_member(session, items, merged, "budget_tokens", "thinking budget with thinking off",
                                    Some("thinking is off"))?;
                    }
                } else if get("adaptive").is_some_and(Value::truthy)
                    || (enabled == Some(&Value::Bool(true)) && get("budget_tokens").is_none())
                {
                    // on, no budget given (ollama think: true): the model decides, or openai's default depth
                    thinking = Some(if adaptive { Thinking::Adaptive } else {
                        Thinking::Enabled(effort_budget(session, "medium"), false)
                    });
                } else if let Some(budget) = get("budget_tokens").and_then(int_value) {
                    let (budget, boolean) = budget?;
                    thinking = Some(Thinking::Enabled(budget, boolean));
                    decided_by = "budget_tokens";
                } else if let Some(control) = last.filter(|_| !sets_no_reasoning(merged)) {
                    lose(session, control, "such reasoning setting", None, "")?;
                }
            }
        }
        if forced && matches!(thinking, Some(Thinking::Adaptive | Thinking::Enabled(..))) {
            if let Some(control) = last {
                lose(session, control, "thinking together with a forced tool choice",
                     Some("the tool choice is kept, thinking is off"), "")?;
            }
            thinking = None;
        }
        if unthought_tool_turn && matches!(thinking, Some(Thinking::Adaptive | Thinking::Enabled(..))) {
            // anthropic: "a final assistant message must start with a thinking block"
            if let Some(control) = last {
                lose(session, control, "thinking in a tool loop whose last assistant turn does not begin with its thinking",
                     Some("thinking is off"), "")?;
            }
            thinking = None;
        }
        if let (Some(Thinking::Enabled(budget, boolean)), Some(_)) = (thinking, last) {
            let (fitted, max) = fit_budget(budget, boolean, max_tokens, items, merged, decided_by, session)?;
            thinking = fitted.map(|b| Thinking::Enabled(b, false));
            max_tokens = Some(max);
        }
        let max_tokens = max_tokens.unwrap_or(session.options.default_max_tokens as i128);
        let mut format: Option<Value> = None;
        if let Some(control) = response_format {
            let kind = control.value.get("type");
            if matches!(kind, Some(Value::Str(s)) if s == b"json_schema") {
                let schema = control.value.get("schema").cloned().unwrap_or(Value::Null);
                format = Some(Value::Object(vec![
                    (b"type".to_vec(), Value::Str(b"json_schema".to_vec())),
                    (b"schema".to_vec(), schema),
                ]));
                for extra in ["name", "description", "strict"] {
                    if control.value.get(extra).is_some() {
                        let sub = if control.dialect.as_deref() == Some("openai") {
                            format!(".json_schema.{extra}")
                        } else {
                            format!(".{extra}")
                        };
                        lose(session, control, "field for it", None, &sub)?;
                    }
                }
            } else if !matches!(kind, Some(Value::Str(s)) if s == b"text") {
                let repr = kind.map_or_else(|| "None".to_string(), py_repr);
                lose(session, control, &format!("response format {repr}"), None, "")?;
            }
        }
        match thinking {
            Some(Thinking::Disabled) => out.push(("thinking", b"{\"type\":\"disabled\"}".to_vec())),
            Some(Thinking::Adaptive) => out.push(("thinking", b"{\"type\":\"adaptive\"}".to_vec())),
            Some(Thinking::Enabled(budget, _)) => {
                out.push(("thinking", format!("{{\"type\":\"enabled\",\"budget_tokens\":{budget}}}").into_bytes()))
            }
            None => {}
        }
        if effort_out.is_some() || format.is_some() {
            let mut config = Vec::new();
            if let Some(effort) = effort_out {
                config.push((b"effort".to_vec(), Value::Str(effort)));
            }
            if let Some(format) = format {
                config.push((b"format".to_vec(), format));
            }
            out.push(("output_config", Value::Object(config).to_json()));
        }
        Ok(max_tokens)
    }

    /// `isinstance(v, int)` (a bool is one): `(its value, whether it is a bool)`.
    fn int_value(value: &Value) -> Option<Result<(i128, bool)>> {
        match value {
            Value::Int(digits) => Some(big_int(digits).map(|n| (n, false))),
            Value::Bool(b) => Some(Ok((*b as i128, true))),
            _ => None,
        }
    }

    /// `_fit_budget`: `(budget or None: thinking off, max_tokens)` with `1024 <= budget < max_tokens`.
    /// `_fit_budget`; its losses are at the field of `decided_by`, the member the budget came from.
    fn fit_budget(budget: i128, boolean: bool, max_tokens: Option<i128>, items: &[Foreign], merged: &Value, decided_by: &str,
                  session: &mut Session) -> Result<(Option<i128>, i128)> {
        let mut budget = budget;
        if budget < MIN_BUDGET {
            let shown = if boolean { (if budget == 1 { "True" } else { "False" }).to_string() } else { budget.to_string() };
            lose_member(session, items, merged, decided_by, &format!("thinking budget below {MIN_BUDGET} ({shown})"),
                        Some(&format!("raised to {MIN_BUDGET}")))?;
            budget = MIN_BUDGET;
        }
        let Some(max_tokens) = max_tokens else {
            return Ok((Some(budget), session.options.default_max_tokens as i128 + budget));
        };
        if budget < max_tokens {
            return Ok((Some(budget), max_tokens));
        }
        if max_tokens > MIN_BUDGET {
            // (`max_tokens - 1 >= 1024`)
            lose_member(session, items, merged, decided_by, &format!("thinking budget of max_tokens or more ({budget})"),
                        Some(&format!("cut to {}", max_tokens - 1)))?;
            return Ok((Some(max_tokens - 1), max_tokens));
        }
        lose_member(session, items, merged, decided_by,
                    &format!("room below max_tokens {max_tokens} for the least thinking budget ({MIN_BUDGET})"),
                    Some("thinking is off"))?;
        Ok((None, max_tokens))
    }

    // -- tools --


    /// `tool_from_canonical`: the anthropic custom tool for a canonical tool definition
    /// (`attrs`: the block's, values as compact JSON); a tool without a parameter schema gets
    /// `{"type":"object","properties":{}}` (anthropic requires `input_schema`).
    pub fn tool_from_canonical(attrs: &[Attr<'_>], schema_raw: &[u8], session: &mut Session) -> Result<Vec<u8>> {
        let name_raw = attr(attrs, "name");
        let name = name_raw.map(Value::loads).transpose()?;
        let wire = session.tool_name_out(name.as_ref(), "$.tools")?;
        let mut body = Vec::with_capacity(tool_capacity(attrs, schema_raw));
        body.extend_from_slice(b"{\"name\":");
        dumps_str(wire.as_bytes(), &mut body);
        for (key, value) in attrs {
            if TOOL_ATTRS.contains(&key.as_ref()) {
                body.push(b',');
                key_bytes(key.as_bytes(), &mut body);
                body.push(b':');
                body.extend_from_slice(value);
            } else if key == EXTRA_ATTR {
                body.push(b',');
                body.extend_from_slice(&string_text(value)?);
            } else if key != "name" && !crate::losses::is_internal_attr(key) {
                // (internal ones -- ollama's tool shape among them -- are nothing lost)
                lose_tool_attr(key, value, attrs, DIALECT, session)?;
            }
        }
        body.extend_from_slice(b",\"input_schema\":");
        if schema_raw.is_empty() {
            body.extend_from_slice(b"{\"type\":\"object\",\"properties\":{}}");
        } else if session.source != DIALECT {
            let start = body.len();
            if object_schema(schema_raw, session, name_raw, &mut body)? {
                let flat = flat_schema(&body[start..], session, name_raw)?;
                body.truncate(start);
                body.extend_from_slice(&flat);
            }
        } else {
            body.extend_from_slice(schema_raw);
        }
        body.push(b'}');
        Ok(body)
    }

    /// `flat_schema`: another dialect's object schema (`schema`, with `allOf` / `anyOf` / `oneOf`
    /// at its top: `object_schema` said so) as one object schema anthropic takes: the branches'
    /// `properties` merged into the schema's (a name it has keeps its own; keywords and branches
    /// in order), an `allOf` branch's `required` names required, the rest recorded. A
    /// `properties` or `required` that is not an object / list is left as it is.
    fn flat_schema(schema: &[u8], session: &mut Session, name: Option<&[u8]>) -> Result<Vec<u8>> {
        let Value::Object(members) = Value::loads(schema)? else { return Ok(schema.to_vec()) };
        let found: Vec<&[u8]> = members.iter().map(|(k, _)| k.as_slice()).filter(|k| COMBINATORS.contains(k)).collect();
        let get = |key: &[u8]| members.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let mut merged = match get(b"properties") {
            None => Some(Vec::new()),
            Some(Value::Object(props)) => Some(props.clone()),
            Some(_) => None,
        };
        let mut needed = match get(b"required") {
            None => Some(Vec::new()),
            Some(Value::Array(names)) => Some(names.clone()),
            Some(_) => None,
        };
        for &key in &found {
            let Some(Value::Array(branches)) = get(key) else { continue };
            for branch in branches {
                if let (Some(merged), Some(Value::Object(props))) = (merged.as_mut(), branch.get("properties")) {
                    for (prop, value) in props {
                        if !merged.iter().any(|(k, _)| k == prop) {
                            merged.push((prop.clone(), value.clone()));
                        }
                    }
                }
                if let (true, Some(needed), Some(Value::Array(names))) = (key == b"allOf", needed.as_mut(), branch.get("required")) {
                    for n in names {
                        if !needed.iter().any(|have| py_eq(have, n)) {
                            needed.push(n.clone());
                        }
                    }
                }
            }
        }
        let mut flat: Vec<(Vec<u8>, Value)> =
            members.iter().filter(|(k, _)| !COMBINATORS.contains(&k.as_slice())).cloned().collect();
        let mut set = |key: &[u8], value: Value| match flat.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = value,
            None => flat.push((key.to_vec(), value)),
        };
        if let Some(merged) = merged.filter(|m| !m.is_empty() || get(b"properties").is_some()) {
            set(b"properties", Value::Object(merged));
        }
        if let Some(needed) = needed.filter(|n| !n.is_empty() || get(b"required").is_some()) {
            set(b"required", Value::Array(needed));
        }
        let keywords: Vec<String> = found.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect();
        let subject = format!("parameters of tool {}, with {} at the top level", tool_name_repr(name)?, keywords.join(" and "));
        let reason = lacks(&subject, DIALECT, "tool schema with allOf, anyOf or oneOf at its top (it refuses one)",
                           Some("their branches' properties are merged into the object schema, the rest is not sent"));
        session.lose("$.tools", &reason, None)?;
        Ok(Value::Object(flat).to_json())
    }

    /// `value.encode()` of an attribute holding JSON members as a string (`anthropic_extra`).
    pub fn string_text(raw: &[u8]) -> Result<Vec<u8>> {
        match Value::loads(raw)? {
            Value::Str(text) => Ok(text),
            _ => Err(Error::new(ErrorClass::Transcode, "anthropic_extra that is not a string")),
        }
    }

    // -- Python data, as the rules above read it --

    pub use crate::value::py_eq;

    /// Python's `repr` of JSON data (loss reasons quote values so): `unicode::py_value_repr`.
    pub fn py_repr(value: &Value) -> String {
        crate::unicode::py_value_repr(value)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::session::{Kind, Options};

        fn options(json: &str) -> Options {
            let mut options = Options::default();
            let value = Value::loads(json.as_bytes()).unwrap();
            for (key, v) in value.as_object().unwrap() {
                match (key.as_slice(), v) {
                    (b"anthropic_thinking", Value::Str(mode)) => {
                        options.anthropic_thinking = String::from_utf8(mode.clone()).unwrap().into()
                    }
                    (b"default_max_tokens", v) => options.default_max_tokens = v.as_i64().unwrap(),
                    (b"strict", Value::Bool(b)) => options.strict = *b,
                    (b"anthropic_thinking_budgets", Value::Object(budgets)) => {
                        options.anthropic_thinking_budgets = Some(
                            budgets.iter().map(|(e, b)| (String::from_utf8(e.clone()).unwrap(), b.as_i64().unwrap())).collect(),
                        )
                    }
                    _ => panic!("option {key:?}"),
                }
            }
            options
        }

        /// `controls.encode` of foreign controls: the fields and losses Python writes
        /// (the table was made by running Python's `encode` on the same controls).
        #[test]
        fn foreign_controls_map_as_python_maps_them() {
            // (source, [(name, value, key)], options, the fields written, the losses)
            type Row<'a> = (&'a str, Vec<(&'a str, &'a str, &'a str)>, &'a str, &'a str, &'a str);
            let table: Vec<Row<'_>> = vec![
            ("openai", vec![("model", r#""gpt-x""#, "model"), ("max_output_tokens", r#"100"#, "max_tokens"), ("stream", r#"true"#, "stream")], r#"{}"#, r#"{"max_tokens":100,"model":"gpt-x","stream":true}"#, r#"[]"#),
            ("openai", vec![("model", r#""claude-opus-4-6""#, "model"), ("reasoning", r#"{"effort":"high"}"#, "reasoning_effort")], r#"{}"#, r#"{"max_tokens":4096,"model":"claude-opus-4-6","thinking":{"type":"adaptive"},"output_config":{"effort":"high"}}"#, r#"[]"#),
            ("openai", vec![("model", r#""m""#, "model"), ("reasoning", r#"{"effort":"minimal"}"#, "reasoning_effort"), ("max_output_tokens", r#"2000"#, "max_completion_tokens")], r#"{}"#, r#"{"max_tokens":2000,"model":"m","thinking":{"type":"enabled","budget_tokens":1024}}"#, r#"[["openai", "$.reasoning_effort", "reasoning_effort: anthropic has no effort level 'minimal'; approximated as 'low'"]]"#),
            ("openai", vec![("reasoning", r#"{"effort":"none"}"#, "reasoning_effort")], r#"{}"#, r#"{"max_tokens":4096,"thinking":{"type":"disabled"}}"#, r#"[]"#),
            ("openai", vec![("max_output_tokens", r#"1.5"#, "max_tokens"), ("max_output_tokens", r#"2"#, "max_completion_tokens")], r#"{}"#, r#"{"max_tokens":1}"#, r#"[["openai", "$.max_completion_tokens", "max_completion_tokens: anthropic has no second value for max_output_tokens; the first is kept"], ["openai", "$.max_tokens", "max_tokens: anthropic has no fractional max_tokens (1.5); rounded down"]]"#),
            ("openai", vec![("max_output_tokens", r#"3.0"#, "max_tokens")], r#"{}"#, r#"{"max_tokens":3}"#, r#"[]"#),
            ("openai", vec![("max_output_tokens", r#"1e+18"#, "max_tokens")], r#"{}"#, r#"{"max_tokens":1000000000000000000}"#, r#"[]"#),
            ("openai", vec![("tool_choice", r#"{"type":"required"}"#, "tool_choice"), ("reasoning", r#"{"effort":"low"}"#, "reasoning_effort"), ("parallel_tool_calls", r#"false"#, "parallel_tool_calls")], r#"{}"#, r#"{"max_tokens":4096,"tool_choice":{"type":"any","disable_parallel_tool_use":true}}"#, r#"[["openai", "$.reasoning_effort", "reasoning_effort: anthropic has no thinking together with a forced tool choice; the tool choice is kept, thinking is off"]]"#),
            ("openai", vec![("tool_choice", r#"{"type":"none"}"#, "tool_choice"), ("parallel_tool_calls", r#"false"#, "parallel_tool_calls")], r#"{}"#, r#"{"max_tokens":4096,"tool_choice":{"type":"none"}}"#, r#"[]"#),
            ("openai", vec![("tool_choice", r#"{"type":"other","value":5}"#, "tool_choice")], r#"{}"#, r#"{"max_tokens":4096}"#, r#"[["openai", "$.tool_choice", "tool_choice: anthropic has no such tool choice"]]"#),
            ("openai", vec![("stop", r#""x""#, "stop"), ("user", r#""u1""#, "user"), ("service_tier", r#""default""#, "service_tier"), ("seed", r#"3"#, "seed"), ("n", r#"1.0"#, "n"), ("temperature", r#"0.5"#, "temperature"), ("logprobs", r#"false"#, "logprobs"), ("stream_options", r#"{"include_usage":true}"#, "stream_options"), ("frequency_penalty", r#"0"#, "frequency_penalty")], r#"{}"#, r#"{"max_tokens":4096,"stop_sequences":["x"],"metadata":{"user_id":"u1"},"service_tier":"standard_only"}"#, r#"[["openai", "$.seed", "seed: anthropic has no such parameter"], ["openai", "$.temperature", "temperature: anthropic has no such parameter; the client's messages.create does not declare it"]]"#),
            ("openai", vec![("service_tier", r#""flex""#, "service_tier"), ("response_format", r#"{"type":"json_object"}"#, "response_format"), ("stream_options", r#"{"x":1}"#, "stream_options")], r#"{}"#, r#"{"max_tokens":4096}"#, r#"[["openai", "$.response_format", "response_format: anthropic has no response format 'json_object'"], ["openai", "$.service_tier", "service_tier: anthropic has no service tier 'flex'"], ["openai", "$.stream_options", "stream_options: anthropic has no such parameter"]]"#),
            ("openai", vec![("response_format", r#"{"type":"json_schema","schema":{"type":"object"},"name":"n","strict":true}"#, "response_format"), ("reasoning", r#"{"effort":"medium"}"#, "reasoning_effort"), ("model", r#""claude-sonnet-4-6""#, "model")], r#"{}"#, r#"{"max_tokens":4096,"model":"claude-sonnet-4-6","thinking":{"type":"adaptive"},"output_config":{"effort":"medium","format":{"type":"json_schema","schema":{"type":"object"}}}}"#, r#"[["openai", "$.response_format.json_schema.name", "response_format.json_schema.name: anthropic has no field for it"], ["openai", "$.response_format.json_schema.strict", "response_format.json_schema.strict: anthropic has no field for it"]]"#),
            ("ollama", vec![("reasoning", r#"{"enabled":true}"#, "think"), ("max_output_tokens", r#"1500"#, "options.num_predict")], r#"{}"#, r#"{"max_tokens":1500,"thinking":{"type":"enabled","budget_tokens":1499}}"#, r#"[["ollama", "$.think", "think: anthropic has no thinking budget of max_tokens or more (4096); cut to 1499"]]"#),
            ("ollama", vec![("reasoning", r#"{"enabled":true}"#, "think"), ("max_output_tokens", r#"500"#, "options.num_predict")], r#"{}"#, r#"{"max_tokens":500}"#, r#"[["ollama", "$.think", "think: anthropic has no room below max_tokens 500 for the least thinking budget (1024); thinking is off"]]"#),
            ("ollama", vec![("reasoning", r#"{"effort":"high"}"#, "think")], r#"{"anthropic_thinking": "budget", "anthropic_thinking_budgets": {"high": 500}}"#, r#"{"max_tokens":5120,"thinking":{"type":"enabled","budget_tokens":1024}}"#, r#"[["ollama", "$.think", "think: anthropic has no thinking budget below 1024 (500); raised to 1024"]]"#),
            ("ollama", vec![("reasoning", r#"{"effort":"high"}"#, "think"), ("max_output_tokens", r#"5000"#, "options.num_predict")], r#"{"anthropic_thinking": "budget"}"#, r#"{"max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":4999}}"#, r#"[["ollama", "$.think", "think: anthropic has no thinking budget of max_tokens or more (16384); cut to 4999"]]"#),
            ("ollama", vec![("reasoning", r#"{"enabled":true}"#, "think")], r#"{"anthropic_thinking": "adaptive", "default_max_tokens": 10}"#, r#"{"max_tokens":10,"thinking":{"type":"adaptive"}}"#, r#"[]"#),
            ("openai", vec![("reasoning", r#"{"budget_tokens":true}"#, "x")], r#"{}"#, r#"{"max_tokens":5120,"thinking":{"type":"enabled","budget_tokens":1024}}"#, r#"[["openai", "$.x", "x: anthropic has no thinking budget below 1024 (True); raised to 1024"]]"#),
            ("openai", vec![("reasoning", r#""weird""#, "reasoning_effort")], r#"{}"#, r#"{"max_tokens":4096}"#, r#"[["openai", "$.reasoning_effort", "reasoning_effort: anthropic has no such reasoning setting"]]"#),
            ("openai", vec![("tool_choice", r#"{"type":"tool","name":"a.b"}"#, "tool_choice")], r#"{}"#, r#"{"max_tokens":4096,"tool_choice":{"type":"tool","name":"a_b_2e7336dc"}}"#, r#"[["openai", "$.tool_choice", "tool name 'a.b': anthropic has no such tool name (^[a-zA-Z0-9_-]{1,128}$); sent as 'a_b_2e7336dc'"]]"#),
            ("openai", vec![("stop", r#"["\n","END"," ",""]"#, "stop")], r#"{}"#, r#"{"max_tokens":4096,"stop_sequences":["END"]}"#, r#"[["openai", "$.stop[0]", "stop[0]: anthropic has no stop sequence '\\n' without a non-whitespace character (it refuses one); not sent"], ["openai", "$.stop[2]", "stop[2]: anthropic has no stop sequence ' ' without a non-whitespace character (it refuses one); not sent"], ["openai", "$.stop[3]", "stop[3]: anthropic has no stop sequence '' without a non-whitespace character (it refuses one); not sent"]]"#),
            ("ollama", vec![("stop", r#"" \t""#, "options.stop")], r#"{}"#, r#"{"max_tokens":4096}"#, r#"[["ollama", "$.options.stop", "options.stop: anthropic has no stop sequence ' \\t' without a non-whitespace character (it refuses one); not sent"]]"#),
            ("openai", vec![("model", r#""m""#, "model"), ("model", r#""m2""#, "model"), ("stop", r#"["a","b"]"#, "stop"), ("metadata", r#"{"k":"v"}"#, "metadata")], r#"{"strict": false}"#, r#"{"max_tokens":4096,"model":"m","stop_sequences":["a","b"]}"#, r#"[["openai", "$.model", "model: anthropic has no second value for model; the first is kept"], ["openai", "$.metadata", "metadata: anthropic has no such parameter"]]"#),
            ];
            for (source, items, opts, want, want_losses) in table {
                let mut session = Session::new(options(opts), if source == "openai" { "openai" } else { "ollama" },
                                               "anthropic", Kind::Request);
                let mut gathered: Vec<(String, Vec<Foreign>)> = Vec::new();
                for (name, value, key) in &items {
                    let control = Foreign {
                        name: name.to_string(),
                        value: Value::loads(value.as_bytes()).unwrap(),
                        dialect: Some(source.to_string()),
                        key: Some(key.to_string()),
                        listed: value.starts_with('['),
                    };
                    match gathered.iter_mut().find(|(n, _)| n == name) {
                        Some((_, list)) => list.push(control),
                        None => gathered.push((name.to_string(), vec![control])),
                    }
                }
                let out = encode(&gathered, &mut session, false, None).unwrap();
                let mut body = b"{".to_vec();
                for (i, (key, raw)) in out.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    dumps_str(key.as_bytes(), &mut body);
                    body.push(b':');
                    body.extend_from_slice(raw);
                }
                body.push(b'}');
                assert_eq!(String::from_utf8(body).unwrap(), want, "{items:?}");
                let losses: Vec<Value> = session.losses.iter()
                    .map(|l| Value::Array(vec![Value::str(&l.dialect), Value::Str(l.path().to_vec()), Value::Str(l.reason().to_vec())]))
                    .collect();
                assert_eq!(Value::Array(losses), Value::loads(want_losses.as_bytes()).unwrap(), "{items:?}");
            }
        }

        /// `ADAPTIVE_MODELS.match` (the table: Python's `re` on the same names).
        #[test]
        fn adaptive_models_are_the_regexs() {
            for (model, adaptive) in [
            ("claude-opus-4-6", true),
            ("claude-opus-4-5", false),
            ("claude-opus-4-10", true),
            ("claude-opus-4-60", true),
            ("claude-opus-4-6x", true),
            ("claude-opus-4-61", true),
            ("claude-sonnet-4-7-20250101", true),
            ("claude-haiku-4-9", true),
            ("claude-sonnet-4-5-20250929", false),
            ("claude-3-7-sonnet", false),
            ("claude-foo-5", true),
            ("claude-foo-4", false),
            ("claude-foo-12", true),
            ("claude-foo-123", false),
            ("claude-mythos", true),
            ("claude-mythos1", false),
            ("claude-fable-x", true),
            ("x/claude-opus-4-6", true),
            ("a.b:claude-mythos", true),
            ("anthropic.claude-opus-4-6-v1:0", true),
            ("us.anthropic.claude-sonnet-4-5", false),
            ("x\n/claude-opus-4-6", false),
            ("claude-opus-4-6\n", true),
            ("Claude-opus-4-6", false),
            ("claude-", false),
            ("claude-a-5", true),
            ("claude--5", false),
            ("claude-ab-05", false),
            ("claude-opus-4-06", false),
            ("claude-opus-4-1", false),
            ("claude-opus-4-16", true),
            ("m", false),
            ("", false),
            ("foo/bar/claude-x-9", true),
            ("claude-x-9/other", true),
            ("claude-opus-4-6\u{663}", true),
            ("claude-x-5\u{663}", true),
            ("prefix-claude-opus-4-6", false),
            ("claude-opus-5", true),
            ("claude-sonnet-5-0", true),
            ] {
                assert_eq!(adaptive_model(model), adaptive, "{model:?}");
            }
        }

        #[test]
        fn python_equality_and_repr() {
            let v = |s: &str| Value::loads(s.as_bytes()).unwrap();
            assert!(py_eq(&v("1"), &v("1.0")) && py_eq(&v("true"), &v("1")) && py_eq(&v("0"), &v("false")));
            assert!(py_eq(&v("{\"a\":1,\"b\":[2]}"), &v("{\"b\":[2.0],\"a\":true}")));
            assert!(!py_eq(&v("1.5"), &v("1")) && !py_eq(&v("\"1\""), &v("1")) && !py_eq(&v("null"), &v("false")));
            assert_eq!(py_repr(&v("{\"a\":[1,2.5,null,true],\"b\":\"x'y\"}")), "{'a': [1, 2.5, None, True], 'b': \"x'y\"}");
            assert_eq!(py_repr(&v("1e400")), "inf");
            assert_eq!(py_repr(&v("1e16")), "1e+16");
        }
    }
}
