//! Numbers a target cannot take: the one check of a request control's numbers
//! (`src/interlingua/numbers.py`, the specification; its docstring says the rule).
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::Control;
use crate::error::Result;
use crate::losses::{lacks, path_subject};
use crate::session::Session;
use crate::unicode::py_value_repr;
use crate::value::Value;

/// 2^63 as a float: an integral float `f` fits in an `i64` when `-2^63 <= f < 2^63`.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

pub fn is_float_literal(text: &[u8]) -> bool {
    text.iter().any(|&b| matches!(b, b'.' | b'e' | b'E'))
}

fn float(text: &[u8]) -> f64 {
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).unwrap_or(f64::NAN)
}

/// `numbers.overflows`: a float literal beyond a float's range (`1e400`).
pub fn overflows(text: &[u8]) -> bool {
    is_float_literal(text) && float(text).is_infinite()
}

/// A number literal's integer value, as far as 64 bits tell it.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Whole {
    /// a fraction or an overflow: not an integer (`numbers.integral` is None)
    Not,
    Fits(i64),
    Beyond,
}

/// `numbers.integral`, bounded: `100`, `100.0`, `1e2` are 100.
pub fn whole(text: &[u8]) -> Whole {
    if !is_float_literal(text) {
        return match std::str::from_utf8(text).ok().and_then(|t| t.parse::<i64>().ok()) {
            Some(n) => Whole::Fits(n),
            None => Whole::Beyond, // (the tokenizer's integer text: only its size fails)
        };
    }
    let f = float(text);
    if !f.is_finite() || f.fract() != 0.0 {
        return Whole::Not;
    }
    if (-TWO_63..TWO_63).contains(&f) {
        Whole::Fits(f as i64)
    } else {
        Whole::Beyond
    }
}

/// `numbers.TOOL_OVERFLOW`: a tool definition is written from its value, and one holding an
/// overflowed float has no JSON text.
pub const TOOL_OVERFLOW: &str = "number out of range in a tool: a float literal in it overflows (no JSON number carries it)";

/// A canonical value's text holds an overflowed float: the core writes one as `Infinity`
/// (Python's `repr`), the only `I` outside a string that its JSON writer makes.
pub fn has_infinity(value: &[u8]) -> bool {
    // (the usual text has no such word at all: found with a SIMD search, not a byte loop)
    if !memchr::memchr_iter(b'I', value).any(|at| value[at..].starts_with(b"Infinity")) {
        return false;
    }
    let (mut in_string, mut escaped) = (false, false);
    for &b in value {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') | (false, _, b'"') => in_string = !in_string,
            (false, _, b'I') => return true,
            _ => {}
        }
    }
    false
}

fn is_number(text: &[u8]) -> bool {
    matches!(text.first(), Some(b'-' | b'0'..=b'9'))
}

/// `numbers._computed`: converting this integer control computes with it (64 bits).
fn computed(source: &str, target: &str, key: &str) -> bool {
    (source == "ollama" && key == "options.num_predict")
        || (target == "anthropic" && matches!(key, "max_tokens" | "max_completion_tokens"))
}

/// `numbers._made_integer`: the target's field for this control is an integer where the
/// source's is any number (openai max tokens into ollama's `num_predict`).
fn made_integer(source: &str, target: &str, key: &str) -> bool {
    source == "openai" && target == "ollama" && matches!(key, "max_tokens" | "max_completion_tokens")
}

/// `numbers.fault`: why the control `key` (its field's raw text, its canonical value's text)
/// cannot be converted for `target`, or None.
pub fn fault(source: &str, target: &str, key: &str, raw: &[u8], value: &[u8], integer: bool) -> Option<String> {
    // (no overflow without a `.` or an exponent: the tree is read only then)
    if has_infinity(value) {
        let shown = if is_number(raw) { String::from_utf8_lossy(raw).into_owned() } else { "a number in it".into() };
        return Some(format!(
            "number out of range for {key}: {shown} overflows a float (no JSON number carries it into {target})"));
    }
    if !is_number(value) || !(integer || computed(source, target, key) || made_integer(source, target, key)) {
        return None;
    }
    if whole(raw) == Whole::Beyond && (is_float_literal(raw) || computed(source, target, key)) {
        return Some(format!(
            "number out of range for {key}: {} is beyond a 64-bit integer (what converting it for {target} takes)",
            String::from_utf8_lossy(raw)));
    }
    None
}

/// `numbers.no_limit`: ollama's `num_predict` below 0 (no limit, fill the context).
pub fn no_limit(control: &Control<'_>) -> bool {
    control.dialect.as_deref() == Some("ollama")
        && control.key.as_deref() == Some("options.num_predict")
        && control.value.first() == Some(&b'-')
}

/// An integer field's integral float as its integer's text (`100.0` -> `100`), within 64 bits.
pub fn integral_text(value: &[u8]) -> Option<Cow<'static, [u8]>> {
    match (is_float_literal(value), whole(value)) {
        (true, Whole::Fits(n)) => Some(Cow::Owned(n.to_string().into_bytes())),
        _ => None,
    }
}

/// `numbers.RANGES`: what each API takes of a request control's number, `(least, most)`
/// (`None`: no bound); the docstring there says where each comes from.
pub fn range(dialect: &str, key: &str) -> Option<(i64, Option<i64>)> {
    Some(match (dialect, key) {
        ("openai", "max_completion_tokens" | "max_tokens" | "n") | ("anthropic", "max_tokens") => (1, None),
        ("openai", "temperature") => (0, Some(2)),
        ("openai", "top_p") | ("anthropic", "temperature" | "top_p") => (0, Some(1)),
        ("openai", "frequency_penalty" | "presence_penalty") => (-2, Some(2)),
        ("openai" | "ollama", "top_logprobs") => (0, Some(20)),
        ("anthropic", "top_k") => (0, None),
        ("anthropic", "thinking.budget_tokens") => (1024, None),
        _ => return None,
    })
}

/// `numbers._takes`: a range in words.
pub fn takes((least, most): (i64, Option<i64>)) -> String {
    match most {
        None => format!("{least} or more"),
        Some(most) => format!("{least} to {most}"),
    }
}

/// `numbers._outside`: a number (as a float: only its side of a small bound matters) beyond the range.
pub fn outside(number: f64, (least, most): (i64, Option<i64>)) -> bool {
    number < least as f64 || most.is_some_and(|most| number > most as f64)
}

/// `numbers.refusal`: why `dialect` itself refuses its control `key` (its field's raw text, its
/// canonical value's text): a number outside the dialect's range, or None.
pub fn refusal(dialect: &str, key: &str, raw: &[u8], value: &[u8]) -> Option<String> {
    let bounds = range(dialect, key)?;
    // (an overflowed float is `fault`'s, copied as it came to its own dialect)
    if !is_number(value) || float(value).is_infinite() || !outside(float(value), bounds) {
        return None;
    }
    Some(format!("number out of range for {key}: {} ({dialect} takes {})", String::from_utf8_lossy(raw), takes(bounds)))
}

/// `numbers.clamp`: for a number outside `target`'s range at `target_key`, the nearest bound,
/// after its loss at `place` (the control's source path); None: the value is taken as it is.
pub fn clamp(session: &mut Session, place: &str, dialect: Option<&str>, target: &str, target_key: &str,
             value: &Value) -> Result<Option<i64>> {
    let number = match value {
        Value::Int(digits) => float(digits.as_bytes()),
        Value::Float(f) => *f,
        _ => return Ok(None),
    };
    let Some(bounds) = range(target, target_key).filter(|&bounds| outside(number, bounds)) else { return Ok(None) };
    let bound = if number < bounds.0 as f64 { bounds.0 } else { bounds.1.unwrap_or(bounds.0) };
    let what = format!("{target_key} of {} (it takes {})", py_value_repr(value), takes(bounds));
    let reason = lacks(path_subject(place), target, &what, Some(&format!("sent as {bound}")));
    session.lose(place.as_bytes(), &reason, dialect)?;
    Ok(Some(bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers() {
        for (text, want) in [
            ("100", Whole::Fits(100)), ("100.0", Whole::Fits(100)), ("1e2", Whole::Fits(100)),
            ("-0.0", Whole::Fits(0)), ("0.5", Whole::Not), ("1e400", Whole::Not), ("1e-400", Whole::Fits(0)),
            ("9223372036854775807", Whole::Fits(i64::MAX)), ("9223372036854775808", Whole::Beyond),
            ("-9223372036854775808", Whole::Fits(i64::MIN)), ("1.5e308", Whole::Beyond),
            ("9.223372036854775807e18", Whole::Beyond), ("-9.223372036854775808e18", Whole::Fits(i64::MIN)),
        ] {
            assert_eq!(whole(text.as_bytes()), want, "{text}");
        }
    }

    #[test]
    fn faults() {
        assert!(fault("openai", "ollama", "temperature", b"1e400", b"Infinity", false).unwrap().contains("overflows"));
        assert!(fault("anthropic", "openai", "thinking", b"{}", br#"{"b":-Infinity}"#, false).unwrap().contains("in it"));
        assert_eq!(fault("openai", "ollama", "stop", b"[]", br#"["Infinity\\"]"#, false), None);
        assert!(fault("openai", "anthropic", "max_tokens", b"1e40", b"1e40", false).unwrap().contains("64-bit"));
        assert_eq!(fault("openai", "ollama", "seed", b"100000000000000000000", b"100000000000000000000", true), None);
        assert!(fault("ollama", "openai", "options.num_predict", b"100000000000000000000", b"1", true).is_some());
        assert!(fault("openai", "ollama", "max_tokens", b"1e19", b"1e+19", false).unwrap().contains("64-bit"));
        assert_eq!(fault("openai", "ollama", "max_tokens", b"100000000000000000000", b"100000000000000000000", false), None);
        assert_eq!(fault("openai", "ollama", "max_tokens", b"2.56e2", b"256.0", false), None);
        assert_eq!(fault("anthropic", "openai", "temperature", b"1e-400", b"1e-400", false), None);
    }

    #[test]
    fn ranges() {
        assert_eq!(refusal("openai", "max_completion_tokens", b"0.0", b"0.0").unwrap(),
                   "number out of range for max_completion_tokens: 0.0 (openai takes 1 or more)");
        assert_eq!(refusal("openai", "temperature", b"2", b"2"), None);
        assert!(refusal("openai", "temperature", b"2.5", b"2.5").unwrap().ends_with("(openai takes 0 to 2)"));
        assert_eq!(refusal("ollama", "options.temperature", b"9", b"9"), None);
        assert_eq!(refusal("openai", "temperature", b"\"x\"", b"\"x\""), None);
        assert!(outside(-0.5, (0, Some(1))) && !outside(-0.0, (0, Some(1))) && outside(1e30, (1, Some(20))));
    }
}
