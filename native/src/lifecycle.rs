//! The response lifecycle (`src/interlingua/lifecycle.py`): finish-reason tables,
//! usage from and to each dialect, service tiers, times and generated ids (`Stamp`),
//! logprobs, and the helpers the response and stream codecs share (`BlockStream`,
//! `KeyFirst`, `ReasoningFirst`, `Deferred`, `OpenFrame`). Owner: helper RF (issue 12).
//!
//! The Python module is the specification; every function here is its namesake
//! there, with the same loss records (dialect, path, reason) and errors. Where a
//! Python function takes a `dict` read from the source, this one takes the
//! `Value` the decoder read (`Machine`'s `Read::Value`). Usage counts are `i64`, as
//! Python's are (`in_64_bits`): a count beyond it, or a sum of counts beyond it, is a
//! `SchemaError` at the count's path.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{Extension, Usage};
use crate::error::{Error, ErrorClass, Result};
use crate::losses::{finish_path, lacks};
use crate::session::{Kind, ResponseStart, Session, MAX_CLOCK};
use crate::unicode::py_repr;
use crate::value::Value;

// -- finish reasons -------------------------------------------------------------------

/// `FINISH_TO[dialect][reason]`: the target's reason for a canonical one.
pub fn finish_to_table(dialect: &str, reason: &str) -> Option<&'static str> {
    Some(match (dialect, reason) {
        ("openai", "end_turn" | "stop_sequence") => "stop",
        ("openai", "max_tokens" | "context_window") => "length",
        ("openai", "tool_use") => "tool_calls",
        ("openai", "content_filter" | "refusal") => "content_filter",
        ("anthropic", "end_turn") => "end_turn",
        ("anthropic", "stop_sequence") => "stop_sequence",
        ("anthropic", "max_tokens") => "max_tokens",
        ("anthropic", "tool_use") => "tool_use",
        ("anthropic", "content_filter" | "refusal") => "refusal",
        ("anthropic", "pause_turn") => "pause_turn",
        ("anthropic", "context_window") => "model_context_window_exceeded",
        ("ollama", "end_turn" | "stop_sequence" | "tool_use") => "stop",
        ("ollama", "max_tokens" | "context_window") => "length",
        _ => return None,
    })
}

/// `FINISH_FROM[dialect][reason]`: the canonical reason of a dialect's own.
pub fn finish_from_table(dialect: &str, reason: &str) -> Option<&'static str> {
    Some(match (dialect, reason) {
        ("openai", "stop") => "end_turn",
        ("openai", "length") => "max_tokens",
        ("openai", "tool_calls" | "function_call") => "tool_use",
        ("openai", "content_filter") => "content_filter",
        ("anthropic", "end_turn") => "end_turn",
        ("anthropic", "stop_sequence") => "stop_sequence",
        ("anthropic", "max_tokens") => "max_tokens",
        ("anthropic", "tool_use") => "tool_use",
        ("anthropic", "pause_turn") => "pause_turn",
        ("anthropic", "refusal") => "refusal",
        ("anthropic", "model_context_window_exceeded") => "context_window",
        ("ollama", "stop") => "end_turn",
        ("ollama", "length") => "max_tokens",
        _ => return None,
    })
}

/// `_PLAIN_STOP[dialect]`: what a reason the target does not define is sent as.
pub fn plain_stop(dialect: &str) -> &'static str {
    if dialect == "anthropic" {
        "end_turn"
    } else {
        "stop"
    }
}

/// `finish_from(dialect, reason)`: a reason the dialect does not define is kept as
/// `"<dialect>:<reason>"`.
pub fn finish_from(dialect: &str, reason: Option<&str>) -> Option<Cow<'static, str>> {
    let reason = reason?;
    Some(match finish_from_table(dialect, reason) {
        Some(mapped) => Cow::Borrowed(mapped),
        None => Cow::Owned(format!("{dialect}:{reason}")),
    })
}

/// `finish_to(dialect, reason, session, stop_sequence)`: the target's reason for a
/// canonical one; lossy mappings are recorded. The stop sequence that ended
/// generation has a field in anthropic only: elsewhere its value is a recorded loss.
pub fn finish_to<'r>(dialect: &str, reason: Option<&'r str>, session: &mut Session,
                     stop_sequence: Option<&str>) -> Result<Option<Cow<'r, str>>> {
    if let Some(sequence) = stop_sequence {
        if dialect != "anthropic" {
            let path = if session.kind == Kind::Stream { "$.delta.stop_sequence" } else { "$.stop_sequence" };
            let what = format!("stop_sequence {}", py_repr(sequence.as_bytes()));
            let reason = lacks(&what, dialect, "field for the stop sequence that ended generation",
                               Some("the finish reason is kept"));
            session.lose(path, &reason, None)?;
        }
    }
    let Some(reason) = reason else { return Ok(None) };
    if let Some(mapped) = finish_to_table(dialect, reason) {
        return Ok(Some(Cow::Borrowed(mapped)));
    }
    let (source, raw) = reason.split_once(':').unwrap_or((reason, ""));
    if !raw.is_empty() && source == dialect {
        return Ok(Some(Cow::Borrowed(raw)));
    }
    let path = finish_path(session.source, session.kind.name(), 0);
    let field = path.rsplit('.').next().unwrap_or(&path);
    let shown = if raw.is_empty() { reason } else { raw };
    let what = format!("{field} {}", py_repr(shown.as_bytes()));
    let done = format!("sent as {}", py_repr(plain_stop(dialect).as_bytes()));
    session.lose(&path, lacks(&what, dialect, "such finish reason", Some(&done)), None)?;
    Ok(Some(Cow::Borrowed(plain_stop(dialect))))
}

// -- usage ----------------------------------------------------------------------------

/// `beyond_64_bits(key, what)`: the message of a count beyond a signed 64-bit integer.
pub fn beyond_64_bits(key: &str, what: &str) -> String {
    format!("number out of range for {key}: {what} is beyond a 64-bit integer")
}

/// What `in_64_bits` raises: a `SchemaError` at `path`.
#[cold]
fn beyond(key: &str, what: &str, path: impl Into<Vec<u8>>) -> Error {
    Error::new(ErrorClass::Schema, beyond_64_bits(key, what)).with_path(path.into())
}

/// `in_64_bits(n, key, path, what)` of a sum computed wide (`i128`: no step overflows).
fn in_64_bits(n: i128, key: &str, what: &str, path: impl FnOnce() -> Vec<u8>) -> Result<i64> {
    i64::try_from(n).map_err(|_| beyond(key, what, path()))
}

const A_COUNT: &str = "a token count";
/// `_ANTHROPIC_SUM`: what anthropic's canonical input adds up.
const ANTHROPIC_SUM: &str = "input_tokens + cache_read_input_tokens + cache_creation_input_tokens";

/// `_int(value)`: an int (not a bool) as a count (the decoder refused one beyond `i64`
/// at its value: `Err` here only for a caller that did not).
fn int_of(value: Option<&Value>, key: &str) -> Result<Option<i64>> {
    match value {
        Some(Value::Int(digits)) => int_of_digits(digits.as_bytes()).map(Some).ok_or_else(|| beyond(key, A_COUNT, format!("$.{key}"))),
        _ => Ok(None),
    }
}

/// A usage path in two parts (`("$.usage", ".prompt_tokens_details")`), joined when a
/// message needs it.
type At<'p> = (&'p str, &'p str);

/// `_count(obj, key, path)`: a token count -- an integer, or absent/null; an
/// integral float (`30.0`, some servers write them) is the same count; any other
/// value is a `SchemaError` at `{path}.{key}` (`path`: `at`'s two parts, joined only
/// for an error or a loss, which most bodies never have).
fn count(obj: &UsageObject<'_>, key: &str, path: At<'_>) -> Result<Option<i64>> {
    let too_big = || beyond(key, A_COUNT, format!("{}{}.{key}", path.0, path.1));
    match obj.get(key) {
        None | Some(Field::Null) => Ok(None),
        Some(Field::Int(digits)) => int_of_digits(digits).map(Some).ok_or_else(too_big),
        Some(Field::Float(f)) if f.fract() == 0.0 && f >= 0.0 => {
            if f < 9.223_372_036_854_776e18 {
                Ok(Some(f as i64))
            } else {
                Err(too_big())
            }
        }
        Some(_) => Err(Error::new(ErrorClass::Schema, format!("expected an integer for {key}"))
            .with_path(format!("{}{}.{key}", path.0, path.1).into_bytes())),
    }
}

/// `_details(obj, key, path)`: a details object (absent/null: empty); any other
/// type is a `SchemaError` at `{path}.{key}`.
fn details<'v>(obj: &'v UsageObject<'_>, key: &str, path: At<'_>) -> Result<UsageObject<'v>> {
    match obj.get(key) {
        None | Some(Field::Null) => Ok(UsageObject::Table(Table::empty())),
        Some(Field::Object(value)) => Ok(obj.of_field(value)),
        Some(_) => Err(Error::new(ErrorClass::Schema, format!("expected an object for {key}"))
            .with_path(format!("{}{}.{key}", path.0, path.1).into_bytes())),
    }
}

/// `_lose_details(obj, path, known, session)`: every other non-zero member is a loss
/// (a same-dialect copy records none: nothing to look at).
fn lose_details(obj: &UsageObject<'_>, path: At<'_>, known: &[&str], session: &mut Session) -> Result<()> {
    if session.passthrough {
        return Ok(());
    }
    for (key, value) in obj.members() {
        // (a key that is not UTF-8 is none of the known ones, which are ASCII; a known
        // one's value is not looked at)
        if !known.iter().any(|k| k.as_bytes() == key) && value.field().nonzero() {
            session.lose_member_pieces(&[path.0.as_bytes(), path.1.as_bytes(), b".", key], "such usage field", None)?;
        }
    }
    Ok(())
}

// -- usage objects, read raw ------------------------------------------------------------

/// The object `usage_from_*` reads (`obj`, a details object). A usage object is a dozen
/// counts: built as a `Value` tree (a key, a number and a vector slot each, all dropped
/// after) it cost more than the rest of a small response's decoding, so a decoder reads
/// it raw (its compact JSON text, `Read::Raw`) and `UsageObject::read` finds its members,
/// and those of the objects in it, in one pass over the text (`Table`) wherever the text
/// can hold none of the value's own faults (`Value::parse`'s: an escape -- maybe a lone
/// surrogate -- or nesting deeper than `MAX_DEPTH`, which takes more than `2 * MAX_DEPTH`
/// bytes); other text is parsed.
#[derive(Clone, Debug)]
pub enum UsageObject<'a> {
    Data(&'a Value),
    Parsed(Value),
    /// the top object of a scanned text
    Table(Table<'a>),
    /// an object within it (`Table`'s object number)
    Within(&'a Table<'a>, u8),
}

impl<'a> UsageObject<'a> {
    /// `_data(raw)` of a usage value read raw, as an object (`None`: any other value, the
    /// readers' `isinstance(value, dict)`); `Err`: the value's fault, for the caller to
    /// locate at its first byte.
    pub fn read(raw: &'a [u8]) -> Result<Option<Self>> {
        if raw.len() <= 2 * crate::value::MAX_DEPTH && memchr::memchr(b'\\', raw).is_none() {
            return Ok(raw.starts_with(b"{").then(|| UsageObject::of_text(raw)));
        }
        let value = Value::parse(raw)?;
        Ok(value.is_object().then_some(UsageObject::Parsed(value)))
    }

    /// An object's compact JSON text without an escape (a member of one `read` scanned).
    fn of_text(text: &'a [u8]) -> Self {
        match Table::scan(text) {
            Some(table) => UsageObject::Table(table),
            // (more members than a table holds: the text is well-formed, so this parses)
            None => UsageObject::Parsed(Value::parse(text).unwrap_or(Value::Null)),
        }
    }

    /// The object a member's value is (`Field::Object`), as the rules read it.
    fn of_field(&'a self, object: Object<'a>) -> Self {
        match (object, self) {
            (Object::Data(value), _) => UsageObject::Data(value),
            (Object::Within(n), UsageObject::Table(table)) => UsageObject::Within(table, n),
            (Object::Within(n), UsageObject::Within(table, _)) => UsageObject::Within(table, n),
            (Object::Within(_), _) => UsageObject::Table(Table::empty()), // (no table makes one: not met)
            (Object::Text(text), _) => UsageObject::of_text(text),
        }
    }

    /// `obj.get(key)`.
    fn get(&self, key: &str) -> Option<Field<'_>> {
        match self {
            UsageObject::Data(value) => value.get(key).map(Field::of_value),
            UsageObject::Parsed(value) => value.get(key).map(Field::of_value),
            UsageObject::Table(table) => table.get(0, key.as_bytes()),
            UsageObject::Within(table, object) => table.get(*object, key.as_bytes()),
        }
    }

    /// `obj.items()`, in order (each value read when asked: `Member::field`).
    fn members(&self) -> impl Iterator<Item = (&[u8], Member<'_>)> {
        let (data, table) = match self {
            UsageObject::Data(value) => (value.as_object().unwrap_or(&[]), None),
            UsageObject::Parsed(value) => (value.as_object().unwrap_or(&[]), None),
            UsageObject::Table(table) => (&[][..], Some((table, 0))),
            UsageObject::Within(table, object) => (&[][..], Some((*table, *object))),
        };
        let data = data.iter().map(|(key, value)| (key.as_slice(), Member::Data(value)));
        let table = table.into_iter().flat_map(|(table, object)| {
            table.numbers(object).map(move |n| (table.key(n), Member::Table(table, n)))
        });
        data.chain(table)
    }
}

/// A member's value, not read yet.
#[derive(Clone, Copy)]
enum Member<'a> {
    Data(&'a Value),
    Table(&'a Table<'a>, usize),
}

impl<'a> Member<'a> {
    fn field(self) -> Field<'a> {
        match self {
            Member::Data(value) => Field::of_value(value),
            Member::Table(table, n) => table.field(n),
        }
    }
}

/// A member's value as the usage rules look at it (`Value`'s kinds, borrowed).
#[derive(Clone, Copy, Debug)]
enum Field<'a> {
    Null,
    Bool(bool),
    /// the digits as Python writes the int back (`-0`: `0`)
    Int(&'a [u8]),
    Float(f64),
    Str(&'a [u8]),
    Object(Object<'a>),
    Array,
}

/// An object member's value, not yet looked into.
#[derive(Clone, Copy, Debug)]
enum Object<'a> {
    Data(&'a Value),
    /// an object the table's scan went into (its object number)
    Within(u8),
    /// its compact JSON text (no escape in it), not scanned yet
    Text(&'a [u8]),
}

impl<'a> Field<'a> {
    fn of_value(value: &'a Value) -> Self {
        match value {
            Value::Null => Field::Null,
            Value::Bool(b) => Field::Bool(*b),
            Value::Int(digits) => Field::Int(digits.as_bytes()),
            Value::Float(f) => Field::Float(*f),
            Value::Str(s) => Field::Str(s),
            Value::Object(_) => Field::Object(Object::Data(value)),
            Value::Array(_) => Field::Array,
        }
    }

    /// A value's compact JSON text (no escape in it).
    fn of_text(text: &'a [u8]) -> Self {
        match text.first() {
            Some(b'n') => Field::Null,
            Some(b't') => Field::Bool(true),
            Some(b'f') => Field::Bool(false),
            Some(b'"') => Field::Str(text.get(1..text.len() - 1).unwrap_or_default()),
            Some(b'{') => Field::Object(Object::Text(text)),
            Some(b'[') => Field::Array,
            _ if text.iter().any(|&b| matches!(b, b'.' | b'e' | b'E')) => Field::Float(crate::value::float_of(text)),
            _ if text == b"-0" => Field::Int(b"0"),
            _ => Field::Int(text),
        }
    }

    /// Python's `value is not None and value != 0` (`False == 0` and `0.0 == 0` too).
    fn nonzero(self) -> bool {
        match self {
            Field::Null | Field::Bool(false) => false,
            Field::Int(digits) => digits != b"0",
            Field::Float(f) => f != 0.0,
            _ => true,
        }
    }
}

/// An int's digits (JSON's: an optional `-`, then digits) as `i64`; `None` beyond it.
pub fn int_of_digits(digits: &[u8]) -> Option<i64> {
    let (negative, magnitude) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if magnitude.is_empty() || magnitude.len() > 18 || !magnitude.iter().all(u8::is_ascii_digit) {
        // (19 digits and more may not fit: the checked parse says)
        return std::str::from_utf8(digits).ok()?.parse().ok();
    }
    let n = magnitude.iter().fold(0i64, |n, &b| n * 10 + i64::from(b - b'0'));
    Some(if negative { -n } else { n })
}

/// The most members a `Table` holds, nested objects' included (a usage object has at
/// most a dozen); more: the text is parsed.
const TABLE_MEMBERS: usize = 24;

/// How deep `Table::scan` goes into objects (the top one, the details objects in it);
/// an object deeper is a member's text, scanned if a rule looks into it (none does).
const TABLE_DEPTH: usize = 2;

/// An object's members, and those of the objects in it, found in one pass over its
/// compact JSON text (no escape in it, at most `2 * MAX_DEPTH` bytes: offsets fit `u16`,
/// and the table is small to move). Objects are numbered: 0 the top one, `n + 1` the value
/// of member `n` when the scan went into it.
#[derive(Clone, Debug)]
pub struct Table<'a> {
    text: &'a [u8],
    /// each member's key and value: `[key_start, key_end, value_start, value_end]` in `text`
    spans: [[u16; 4]; TABLE_MEMBERS],
    /// the object each member is in
    parents: [u8; TABLE_MEMBERS],
    /// the members whose value the scan went into (bit `n`: member `n`)
    scanned: u32,
    len: usize,
}

impl<'a> Table<'a> {
    fn empty() -> Self {
        Table { text: b"{}", spans: [[0; 4]; TABLE_MEMBERS], parents: [0; TABLE_MEMBERS], scanned: 0, len: 0 }
    }

    /// `{"key":value,"key":{"key":value}}`: a key has no escape, so its closing quote is the
    /// next one. `None`: more members than a table holds, a text too long for its offsets
    /// (or text that is not a compact object: parsed instead).
    fn scan(text: &'a [u8]) -> Option<Self> {
        let offset = |n: usize| u16::try_from(n).ok();
        offset(text.len())?;
        let mut table = Table { text, ..Table::empty() };
        // the objects open around `at`: their numbers
        let mut open = [0u8; TABLE_DEPTH];
        let mut depth = 0;
        let mut at = 0; // a `{` or `,` before a member, or a `}` that closes an object
        loop {
            match (text.get(at)?, text.get(at + 1)) {
                (b'{' | b',', Some(b'"')) => {
                    let n = table.len;
                    let key_start = at + 2;
                    let key_end = next_quote(text, key_start);
                    let value_start = key_end + 2; // past `":`
                    *table.parents.get_mut(n)? = if depth == 0 { 0 } else { open[depth - 1] };
                    table.len += 1;
                    if text.get(value_start) == Some(&b'{') && depth + 1 < TABLE_DEPTH {
                        // into the object (its end is filled in at its `}`)
                        table.spans[n] = [offset(key_start)?, offset(key_end)?, offset(value_start)?, 0];
                        table.scanned |= 1 << n;
                        open[depth] = u8::try_from(n + 1).ok()?;
                        depth += 1;
                        at = value_start;
                        continue;
                    }
                    let value_end = compact_value_end(text, value_start);
                    table.spans[n] = [offset(key_start)?, offset(key_end)?, offset(value_start)?, offset(value_end)?];
                    at = value_end;
                }
                (b'{', Some(b'}')) => at += 1,
                (b'}', _) if depth == 0 => return Some(table),
                (b'}', _) => {
                    depth -= 1;
                    let member = usize::from(open[depth]) - 1;
                    table.spans[member][3] = offset(at + 1)?;
                    at += 1;
                }
                _ => return None,
            }
        }
    }

    /// The text from `a` to `b`.
    fn part(&self, a: u16, b: u16) -> &'a [u8] {
        self.text.get(usize::from(a)..usize::from(b)).unwrap_or_default()
    }

    /// Member `n`'s key.
    fn key(&self, n: usize) -> &'a [u8] {
        let [k0, k1, _, _] = self.spans[n];
        self.part(k0, k1)
    }

    /// Member `n`'s value.
    fn field(&self, n: usize) -> Field<'a> {
        if self.scanned & (1 << n) != 0 {
            return Field::Object(Object::Within(n as u8 + 1));
        }
        let [_, _, v0, v1] = self.spans[n];
        Field::of_text(self.part(v0, v1))
    }

    /// The members of object `object`, in order (their numbers).
    fn numbers(&self, object: u8) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).filter(move |&n| self.parents[n] == object)
    }

    fn get(&self, object: u8, key: &[u8]) -> Option<Field<'a>> {
        self.numbers(object).find(|&n| self.key(n) == key).map(|n| self.field(n))
    }
}

/// The next `"` in `text` from `from` (or its end).
fn next_quote(text: &[u8], from: usize) -> usize {
    text.get(from..).and_then(|rest| memchr::memchr(b'"', rest)).map_or(text.len(), |i| from + i)
}

/// Where the compact JSON value (no escape in it) at `text[at]` ends.
fn compact_value_end(text: &[u8], at: usize) -> usize {
    match text.get(at) {
        Some(b'"') => next_quote(text, at + 1) + 1,
        Some(b'{' | b'[') => {
            let (mut depth, mut i) = (0usize, at);
            while let Some(&b) = text.get(i) {
                match b {
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    b'"' => i = next_quote(text, i + 1),
                    _ => {}
                }
                i += 1;
            }
            text.len()
        }
        _ => text.get(at..).and_then(|rest| rest.iter().position(|b| matches!(b, b',' | b'}' | b']')))
            .map_or(text.len(), |i| at + i),
    }
}

/// `USAGE_PATHS[dialect][name]`: where each canonical usage field was in each source.
pub fn usage_source_path(dialect: &str, name: &str) -> Option<&'static str> {
    Some(match (dialect, name) {
        ("openai", "input") => "$.usage.prompt_tokens",
        ("openai", "output") => "$.usage.completion_tokens",
        ("openai", "total") => "$.usage.total_tokens",
        ("openai", "cache_read") => "$.usage.prompt_tokens_details.cached_tokens",
        ("openai", "cache_write") => "$.usage.prompt_tokens_details.cache_write_tokens",
        ("openai", "reasoning") => "$.usage.completion_tokens_details.reasoning_tokens",
        ("openai", "service_tier") => "$.service_tier",
        ("anthropic", "input") => "$.usage.input_tokens",
        ("anthropic", "output") => "$.usage.output_tokens",
        ("anthropic", "cache_read") => "$.usage.cache_read_input_tokens",
        ("anthropic", "cache_write") => "$.usage.cache_creation_input_tokens",
        ("anthropic", "reasoning") => "$.usage.output_tokens_details.thinking_tokens",
        ("anthropic", "service_tier") => "$.usage.service_tier",
        ("ollama", "input") => "$.prompt_eval_count",
        ("ollama", "output") => "$.eval_count",
        _ => return None,
    })
}

/// `usage_path(session, name)`: the source path of a canonical usage count (an
/// anthropic stream gives the full usage in `message_start`: `$.message.usage`).
pub fn usage_path(session: &Session, name: &str) -> String {
    usage_path_pieces(session, name).concat()
}

/// `usage_path`'s text in pieces (a loss writes them into its own buffer).
fn usage_path_pieces<'n>(session: &Session, name: &'n str) -> [&'n str; 3] {
    let (path, name) = match usage_source_path(session.source, name) {
        Some(path) => (path, ""),
        None => ("$.usage.", name),
    };
    if session.source == "anthropic" && session.kind == Kind::Stream && path.starts_with("$.usage.") {
        ["$.message.", &path[2..], name]
    } else {
        [path, "", name]
    }
}

/// `_lose_count`: a usage count the target cannot report, named by its field in the source.
fn lose_count(session: &mut Session, name: &str, target: &str, what: &str) -> Result<()> {
    let path = usage_path_pieces(session, name).map(str::as_bytes);
    session.lose_lacking(&path, target, what, None, None)
}

/// `USAGE_COUNTS`: the usage counts, in the order their losses are recorded.
fn usage_counts(u: &Usage) -> [(&'static str, Option<i64>); 6] {
    [("input", u.input), ("output", u.output), ("cache_read", u.cache_read), ("cache_write", u.cache_write),
     ("reasoning", u.reasoning), ("total", u.total)]
}

/// `lose_unasked_usage`: an openai stream whose request did not ask for usage
/// (`Options.openai_stream_usage` off) gets none, as from OpenAI: each count is a loss.
pub fn lose_unasked_usage(u: &Usage, session: &mut Session) -> Result<()> {
    for (name, count) in usage_counts(u) {
        if count.is_some() {
            let path = usage_path_pieces(session, name).map(str::as_bytes);
            session.lose_lacking(&path, "openai", "usage chunk without stream_options.include_usage", Some("not sent"), None)?;
        }
    }
    Ok(())
}

/// `SERVICE_TIERS[dialect]`: canonical name -> the dialect's (its client's literal).
const SERVICE_TIERS: &[(&str, &[(&str, &str)])] = &[
    ("openai", &[("standard", "default"), ("priority", "priority"), ("flex", "flex"), ("scale", "scale"),
                 ("auto", "auto"), ("fast", "fast")]),
    ("anthropic", &[("standard", "standard"), ("priority", "priority"), ("batch", "batch")]),
];

fn tiers(dialect: &str) -> &'static [(&'static str, &'static str)] {
    SERVICE_TIERS.iter().find(|(d, _)| *d == dialect).map_or(&[], |(_, t)| t)
}

/// `tier_from(dialect, value)`: the canonical tier of a dialect's (a string), kept
/// as `"<dialect>:<value>"` when the dialect does not name it; not a string: `None`.
pub fn tier_from(dialect: &str, value: Option<&Value>) -> Option<Cow<'static, str>> {
    tier_from_text(dialect, value?.as_wtf8())
}

/// `tier_from` of a string's text (WTF-8); `None`: not a string.
fn tier_from_text(dialect: &str, text: Option<&[u8]>) -> Option<Cow<'static, str>> {
    let text = String::from_utf8_lossy(text?);
    match tiers(dialect).iter().find(|(_, own)| *own == text) {
        Some((canonical, _)) => Some(Cow::Borrowed(canonical)),
        None => Some(Cow::Owned(format!("{dialect}:{text}"))),
    }
}

/// `tier_to(dialect, u, session)`: the target's name for the usage's tier; a tier
/// it does not name is a recorded loss.
pub fn tier_to<'u>(dialect: &str, u: &'u Usage, session: &mut Session) -> Result<Option<&'u str>> {
    let Some(tier) = u.service_tier.as_deref() else { return Ok(None) };
    if let Some((_, own)) = tiers(dialect).iter().find(|(canonical, _)| *canonical == tier) {
        return Ok(Some(own));
    }
    let (source, raw) = tier.split_once(':').unwrap_or((tier, ""));
    if !raw.is_empty() && source == dialect {
        return Ok(Some(raw));
    }
    lose_count(session, "service_tier", dialect, &format!("service tier {}", py_repr(tier.as_bytes())))?;
    Ok(None)
}

/// `usage_from_openai(obj, session, path)` (`path`: `"$.usage"` by default).
pub fn usage_from_openai(obj: &UsageObject<'_>, session: &mut Session, path: &str) -> Result<Usage> {
    let top = (path, "");
    let prompt = details(obj, "prompt_tokens_details", top)?;
    let completion = details(obj, "completion_tokens_details", top)?;
    let prompt_path = (path, ".prompt_tokens_details");
    let completion_path = (path, ".completion_tokens_details");
    // (a server's own counts -- DeepSeek's prompt_cache_hit_tokens, a router's cost -- had been
    // dropped with nothing recorded)
    lose_details(obj, top, &["prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
                             "completion_tokens_details"], session)?;
    lose_details(&prompt, prompt_path, &["cached_tokens", "cache_write_tokens"], session)?;
    lose_details(&completion, completion_path, &["reasoning_tokens"], session)?;
    Ok(Usage {
        input: count(obj, "prompt_tokens", top)?,
        output: count(obj, "completion_tokens", top)?,
        cache_read: count(&prompt, "cached_tokens", prompt_path)?,
        cache_write: count(&prompt, "cache_write_tokens", prompt_path)?,
        reasoning: count(&completion, "reasoning_tokens", completion_path)?,
        total: count(obj, "total_tokens", top)?,
        service_tier: None,
    })
}

/// The exact sum of counts (wide: no step overflows, only the sum may).
fn wide_sum(parts: &[i64]) -> i128 {
    parts.iter().map(|&n| i128::from(n)).sum()
}

/// `n` in decimal (what `Value::int(n)` dumps), without the formatting machinery.
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, n.unsigned_abs());
}

/// `n` in decimal.
pub fn push_u64(out: &mut Vec<u8>, n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8); // (a stream's every chunk writes its index: one digit)
        return;
    }
    out.extend_from_slice(Decimal::of(n).as_bytes());
}

/// A number's decimal digits, written on the stack (two at a time: half the divisions).
pub struct Decimal {
    digits: [u8; 21],
    at: usize,
}

impl Decimal {
    pub fn signed(n: i64) -> Self {
        let mut decimal = Decimal::of(n.unsigned_abs());
        if n < 0 {
            decimal.at -= 1;
            decimal.digits[decimal.at] = b'-';
        }
        decimal
    }

    pub fn of(mut n: u64) -> Self {
        const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
                                    5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
        let mut digits = [0u8; 21];
        let mut at = digits.len();
        while n >= 100 {
            let pair = (n % 100) as usize * 2;
            n /= 100;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = n as usize * 2;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        } else {
            at -= 1;
            digits[at] = b'0' + n as u8;
        }
        Decimal { digits, at }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.digits[self.at..]
    }
}

/// A compact JSON object written member by member (the usage objects: ASCII keys,
/// counts), as `dumps` of the `Value` would write it.
struct ObjectOut<'o> {
    out: &'o mut Vec<u8>,
    open: bool,
}

impl<'o> ObjectOut<'o> {
    fn new(out: &'o mut Vec<u8>) -> Self {
        ObjectOut { out, open: false }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        self.out.push(if self.open { b',' } else { b'{' });
        self.open = true;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn count(&mut self, key: &str, n: i64) {
        push_int(self.key(key), n);
    }

    /// `{"<key>":n}` as the member's value.
    fn nested_count(&mut self, key: &str, inner: &str, n: i64) {
        let out = self.key(key);
        let mut nested = ObjectOut::new(out);
        nested.count(inner, n);
        nested.close();
    }

    fn close(self) {
        self.out.extend_from_slice(if self.open { b"}" } else { b"{}" });
    }
}

/// `usage_to_openai(u, session)`: the openai usage object's compact JSON (the
/// service tier goes at the body's top: `tier_to`), or `None` when the usage has no
/// count at all (the member is left out).
pub fn usage_to_openai(u: &Usage, session: &Session) -> Result<Option<Vec<u8>>> {
    if !has_openai_usage(u) {
        return Ok(None);
    }
    let mut json = Vec::with_capacity(128);
    push_usage_openai(u, session, &mut json)?;
    Ok(Some(json))
}

/// Whether `usage_to_openai` writes a usage object: the usage has some count.
pub fn has_openai_usage(u: &Usage) -> bool {
    [u.input, u.output, u.total, u.cache_read, u.cache_write, u.reasoning].iter().any(Option::is_some)
}

/// `usage_to_openai` written at the end of `json` (an encoder's body: no buffer of its
/// own; the caller asks `has_openai_usage` first). The three counts openai's
/// `CompletionUsage` requires are always written: 0 for one the source did not give
/// (a schema placeholder, lifecycle.py's docstring), the total then the sum written
/// (beyond 64 bits: a `SchemaError` at the source's output count; `json` is as it was).
pub fn push_usage_openai(u: &Usage, session: &Session, json: &mut Vec<u8>) -> Result<()> {
    let (input, output) = (u.input.unwrap_or(0), u.output.unwrap_or(0));
    let total = match u.total {
        Some(total) => total,
        None => in_64_bits(wide_sum(&[input, output]), "total_tokens", "prompt_tokens + completion_tokens",
                           || usage_path(session, "output").into_bytes())?,
    };
    let mut out = ObjectOut::new(json);
    for (key, n) in [("prompt_tokens", input), ("completion_tokens", output), ("total_tokens", total)] {
        out.count(key, n);
    }
    if u.cache_read.is_some() || u.cache_write.is_some() {
        let mut prompt = ObjectOut::new(out.key("prompt_tokens_details"));
        for (key, n) in [("cached_tokens", u.cache_read), ("cache_write_tokens", u.cache_write)] {
            if let Some(n) = n {
                prompt.count(key, n);
            }
        }
        prompt.close();
    }
    if let Some(n) = u.reasoning {
        out.nested_count("completion_tokens_details", "reasoning_tokens", n);
    }
    out.close();
    Ok(())
}

/// `usage_from_anthropic(obj, session, path)`: `input_tokens` excludes the cache
/// reads and writes: the canonical input adds them.
pub fn usage_from_anthropic(obj: &UsageObject<'_>, session: &mut Session, path: &str) -> Result<Usage> {
    let top = (path, "");
    let read = count(obj, "cache_read_input_tokens", top)?;
    let write = count(obj, "cache_creation_input_tokens", top)?;
    let raw_input = count(obj, "input_tokens", top)?;
    let input = match raw_input {
        None => None,
        Some(n) => Some(in_64_bits(wide_sum(&[n, read.unwrap_or(0), write.unwrap_or(0)]), "input_tokens",
                                   ANTHROPIC_SUM, || format!("{path}.input_tokens").into_bytes())?),
    };
    lose_details(obj, top, &["input_tokens", "output_tokens", "cache_read_input_tokens",
                             "cache_creation_input_tokens", "output_tokens_details", "service_tier"], session)?;
    let output_details = details(obj, "output_tokens_details", top)?;
    let details_path = (path, ".output_tokens_details");
    lose_details(&output_details, details_path, &["thinking_tokens"], session)?;
    Ok(Usage {
        input,
        output: count(obj, "output_tokens", top)?,
        cache_read: read,
        cache_write: write,
        reasoning: count(&output_details, "thinking_tokens", details_path)?,
        total: None,
        service_tier: tier_from_text("anthropic", tier(obj, top)?),
    })
}

/// `_tier(obj, path)`: an anthropic usage's `service_tier`, a string or absent/null; any other
/// value is a `SchemaError` at `{path}.service_tier`.
fn tier<'v>(obj: &'v UsageObject<'_>, path: At<'_>) -> Result<Option<&'v [u8]>> {
    let got = match obj.get("service_tier") {
        None | Some(Field::Null) => return Ok(None),
        Some(Field::Str(text)) => return Ok(Some(text)),
        Some(Field::Bool(_)) => "boolean",
        Some(Field::Int(_) | Field::Float(_)) => "number",
        Some(Field::Array) => "array",
        Some(Field::Object(_)) => "object",
    };
    Err(Error::new(ErrorClass::Schema, format!("expected a string or null for service_tier, got {got}"))
        .with_path(format!("{}{}.service_tier", path.0, path.1).into_bytes()))
}

/// `usage_to_anthropic(u, session, require_input)`: an anthropic usage object's
/// compact JSON; `output_tokens` always (schema), the input when required (a 0
/// placeholder) or known.
pub fn usage_to_anthropic(u: &Usage, session: &mut Session, require_input: bool) -> Result<Vec<u8>> {
    let mut json = Vec::with_capacity(128);
    push_usage_anthropic(u, session, require_input, &mut json)?;
    Ok(json)
}

/// `usage_to_anthropic` written at the end of `json` (an encoder's event: no buffer of
/// its own); on an error `json` is as it was.
pub fn push_usage_anthropic(u: &Usage, session: &mut Session, require_input: bool, json: &mut Vec<u8>) -> Result<()> {
    let start = json.len();
    let written = write_usage_anthropic(u, session, require_input, json);
    if written.is_err() {
        json.truncate(start);
    }
    written
}

fn write_usage_anthropic(u: &Usage, session: &mut Session, require_input: bool, json: &mut Vec<u8>) -> Result<()> {
    let mut out = ObjectOut::new(json);
    if let Some(input) = u.input {
        let cached = wide_sum(&[u.cache_read.unwrap_or(0), u.cache_write.unwrap_or(0)]);
        let uncached = in_64_bits((i128::from(input) - cached).max(0), "input_tokens", "the input less its cache counts",
                                  || usage_path(session, "input").into_bytes())?;
        out.count("input_tokens", uncached);
    } else if require_input {
        out.count("input_tokens", 0); // schema placeholder (lifecycle.py's docstring)
    }
    if let Some(n) = u.cache_write {
        out.count("cache_creation_input_tokens", n);
    }
    if let Some(n) = u.cache_read {
        out.count("cache_read_input_tokens", n);
    }
    out.count("output_tokens", u.output.unwrap_or(0));
    if let Some(n) = u.reasoning {
        out.nested_count("output_tokens_details", "thinking_tokens", n);
    }
    if let Some(tier) = tier_to("anthropic", u, session)? {
        crate::value::dumps_str(tier.as_bytes(), out.key("service_tier"));
    }
    lose_odd_total(u, session, "anthropic")?;
    out.close();
    Ok(())
}

/// A total the target cannot write (it has input and output only) that is not their sum.
fn lose_odd_total(u: &Usage, session: &mut Session, target: &str) -> Result<()> {
    if let (Some(total), Some(input), Some(output)) = (u.total, u.input, u.output) {
        if i128::from(total) != i128::from(input) + i128::from(output) {
            lose_count(session, "total", target, "total other than input + output")?;
        }
    }
    Ok(())
}

/// `usage_from_ollama(obj)` of the two counts (`obj.get("prompt_eval_count")`,
/// `obj.get("eval_count")`): an int (not a bool) counts, anything else is absent.
pub fn usage_from_ollama(prompt_eval_count: Option<&Value>, eval_count: Option<&Value>) -> Result<Usage> {
    Ok(Usage {
        input: int_of(prompt_eval_count, "prompt_eval_count")?,
        output: int_of(eval_count, "eval_count")?,
        ..Usage::default()
    })
}

/// `usage_to_ollama(u, session)`: the counts' members (a `Value::Object`); what
/// ollama has no count for is a recorded loss.
pub fn usage_to_ollama(u: &Usage, session: &mut Session) -> Result<Value> {
    let [input, output] = ollama_counts(u, session)?;
    let members = [("prompt_eval_count", input), ("eval_count", output)];
    Ok(Value::Object(members.iter().filter_map(|(key, n)| Some((key.as_bytes().to_vec(), Value::int((*n)?)))).collect()))
}

/// `usage_to_ollama`'s two counts (`prompt_eval_count`, `eval_count`), for an encoder
/// that writes them itself (no `Value` to build and drop); the losses are recorded.
pub fn ollama_counts(u: &Usage, session: &mut Session) -> Result<[Option<i64>; 2]> {
    for (name, what, n) in [("cache_read", "cache-read token count", u.cache_read),
                            ("cache_write", "cache-write token count", u.cache_write),
                            ("reasoning", "reasoning token count", u.reasoning)] {
        if n.is_some_and(|n| n != 0) {
            lose_count(session, name, "ollama", what)?;
        }
    }
    if u.service_tier.is_some() {
        lose_count(session, "service_tier", "ollama", "service tier")?;
    }
    lose_odd_total(u, session, "ollama")?;
    Ok([u.input, u.output])
}

/// `merge_anthropic_usage(old, new)`: `merge_usage` of two anthropic usages as the
/// anthropic client accumulates a stream: the input is the merged `input_tokens`
/// plus the merged cache counts (a `message_delta` without `message_start`'s cache
/// reads keeps them, in the input too; a sum beyond 64 bits: a `SchemaError` at
/// `path`'s `input_tokens`).
pub fn merge_anthropic_usage(old: Option<&Usage>, new: Usage, path: &str) -> Result<Usage> {
    let Some(old) = old else { return Ok(new) };
    let raw = anthropic_input(&new).or_else(|| anthropic_input(old));
    let mut merged = merge_usage(Some(old), new);
    merged.input = match raw {
        None => None,
        Some(n) => Some(in_64_bits(wide_sum(&[n, merged.cache_read.unwrap_or(0), merged.cache_write.unwrap_or(0)]),
                                   "input_tokens", ANTHROPIC_SUM, || format!("{path}.input_tokens").into_bytes())?),
    };
    Ok(merged)
}

/// The `input_tokens` a usage was read from: the canonical input less the cache counts
/// (`usage_from_anthropic` added them, so this cannot overflow).
fn anthropic_input(u: &Usage) -> Option<i64> {
    u.input.map(|n| n.wrapping_sub(u.cache_read.unwrap_or(0)).wrapping_sub(u.cache_write.unwrap_or(0)))
}

/// `merge_usage(old, new)`: later counts win; a count the later report lacks keeps
/// its earlier value.
pub fn merge_usage(old: Option<&Usage>, new: Usage) -> Usage {
    let Some(old) = old else { return new };
    Usage {
        input: new.input.or(old.input),
        output: new.output.or(old.output),
        cache_read: new.cache_read.or(old.cache_read),
        cache_write: new.cache_write.or(old.cache_write),
        reasoning: new.reasoning.or(old.reasoning),
        total: new.total.or(old.total),
        service_tier: new.service_tier.or_else(|| old.service_tier.clone()),
    }
}

// -- response ids and times (see lifecycle.py's comment block) ----------------------------

const US: i64 = 1_000_000;
/// `MAX_CLOCK * _US` (exact in a float: the comparison is Python's int-float one)
const MAX_TIME_US: i64 = MAX_CLOCK as i64 * US;

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count from 1970-01-01 (`civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Fixed-width ASCII digits (what `datetime.fromisoformat` reads).
fn ascii_number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |n, &c| c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0')))
}

/// `_RFC3339.match(text)` + `datetime.fromisoformat` + the epoch difference, in
/// microseconds; `None` where Python gets no match or a `ValueError`. `text` is
/// WTF-8; the pattern (re.ASCII, anchored at both ends) matches ASCII text only, so
/// it is read as bytes.
fn rfc3339_us(text: &[u8]) -> Option<i64> {
    if !text.is_ascii() {
        return None;
    }
    let c = text.strip_suffix(b"\n").unwrap_or(text); // `$` matches before a final newline
    let is_digit = |i: usize| c.get(i).is_some_and(u8::is_ascii_digit);
    let is = |i: usize, ch: u8| c.get(i) == Some(&ch);
    // (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)
    let shape = [4, 7, 10, 13, 16];
    let separators = [b'-', b'-', b'T', b':', b':'];
    let digits_ok = (0..19).filter(|i| !shape.contains(i)).all(is_digit);
    if !digits_ok || !shape.iter().zip(separators).all(|(&i, ch)| is(i, ch)) {
        return None;
    }
    // (?:\.(\d+))?
    let mut at = 19;
    let mut fraction = 0i64;
    if is(at, b'.') && is_digit(at + 1) {
        let start = at + 1;
        at = start;
        while is_digit(at) {
            at += 1;
        }
        // int(((fraction) + "000000")[:6])
        for i in 0..6 {
            let digit = if start + i < at { i64::from(c[start + i] - b'0') } else { 0 };
            fraction = fraction * 10 + digit;
        }
    }
    // (Z|[+-]\d\d:\d\d)$
    let offset_s = if is(at, b'Z') && at + 1 == c.len() {
        0
    } else if (is(at, b'+') || is(at, b'-')) && is_digit(at + 1) && is_digit(at + 2) && is(at + 3, b':')
        && is_digit(at + 4) && is_digit(at + 5) && at + 6 == c.len()
    {
        let hours = ascii_number(&c[at + 1..at + 3])?;
        let minutes = ascii_number(&c[at + 4..at + 6])?;
        let offset = hours * 3600 + minutes * 60; // fromisoformat does not bound the minutes
        if offset >= 86_400 {
            return None; // "offset must be a timedelta strictly between ..."
        }
        if is(at, b'-') { -offset } else { offset }
    } else {
        return None;
    };
    let field = |from: usize, to: usize| ascii_number(&c[from..to]);
    let (year, month, day) = (field(0, 4)?, field(5, 7)?, field(8, 10)?);
    let (hour, minute, second) = (field(11, 13)?, field(14, 16)?, field(17, 19)?);
    let valid = (1..=9999).contains(&year) && (1..=12).contains(&month) && day >= 1
        && day <= days_in_month(year, month) && hour < 24 && minute < 60 && second < 60;
    if !valid {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(seconds * US + fraction)
}

/// `ollama_time_us(raw)`: microseconds since the epoch of an ollama `created_at`
/// (raw JSON; finer digits are cut), or `None` when it is not an RFC 3339 time
/// (or not after the epoch and before year 10000).
pub fn ollama_time_us(raw: &[u8]) -> Option<i64> {
    let us = match plain_string(raw) {
        Some(text) => rfc3339_us(text),
        None => match Value::loads(raw) {
            Ok(Value::Str(text)) => rfc3339_us(&text),
            _ => return None,
        },
    };
    us.filter(|&us| 0 < us && us < MAX_TIME_US)
}

/// The content of a raw JSON string without escapes (what a wire time is), read
/// without `Value::loads`; `None` for any other raw value.
fn plain_string(raw: &[u8]) -> Option<&[u8]> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    (!inner.contains(&b'\\') && !inner.contains(&b'"')).then_some(inner)
}

/// `source_error_message(value)`: an error's `message` as it came: a string's text, null's
/// none; any other value its compact JSON (was Python's `str`: `{'detail': 'busy'}`).
pub fn source_error_message(value: Option<&Value>) -> Vec<u8> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Str(text)) => text.clone(), // (WTF-8: a lone surrogate stays one)
        Some(other) => {
            let mut json = Vec::new();
            crate::value::dumps(other, &mut json);
            json
        }
    }
}

/// `lose_error_members(err, session, carried)`: the members of a source's error object other
/// than its message and type (openai's `code` and `param`, anthropic's `details`): no target's
/// error event has a place for them (a canonical error's status is written nowhere): each
/// recorded (null: nothing). `carried`: members the error's kind carries (an openai code that
/// names it).
pub fn lose_error_members(err: &Value, session: &mut Session, carried: &[&str]) -> Result<()> {
    for (key, value) in err.as_object().unwrap_or(&[]) {
        let named = |name: &str| key.as_slice() == name.as_bytes();
        if !named("message") && !named("type") && !carried.iter().any(|c| named(c)) && !value.is_null() {
            session.lose_member_pieces(&[b"$.error.", key], "such error field", None)?;
        }
    }
    Ok(())
}

/// `source_error_type(value)`: an error's `type`, a name; anything else `api_error`.
pub fn source_error_type(value: Option<&Value>) -> String {
    match value {
        Some(Value::Str(text)) if !text.is_empty() => String::from_utf8_lossy(text).into_owned(),
        _ => "api_error".to_string(),
    }
}

/// `answer_and_error()`: what a response encoder (not a stream's) returns for an `Error` after
/// its body began, or content after the error body it wrote: a body is an answer or an error,
/// never both. The decoder locates it (the source's dialect, the member that made it).
pub fn answer_and_error() -> Error {
    Error::new(ErrorClass::Schema, "a response with both an answer and an error: a response body is one or the other \
                                    (only a stream can end its answer with an error)")
}

/// `answer_after_error()`: what a stream encoder returns for content after the source's error
/// event: the target's error event ended its stream. Other events after it go on as before.
pub fn answer_after_error() -> Error {
    Error::new(ErrorClass::Schema, "an answer after the stream's error: the error event ends the stream")
}

/// `_AFTER_ERROR`: what `lose_*_after_error` say (the target's stream ended at its error event).
const AFTER_ERROR: &str = "place after its stream's error event";

/// `lose_after_error(Finish)`: a finish a stream encoder did not write because its error event
/// ended the stream (it came after it, or was held for the end the error took the place of).
pub fn lose_finish_after_error(reason: Option<&str>, stop_sequence: Option<&str>, choice: i64,
                               session: &mut Session, target: &str) -> Result<()> {
    if reason.is_none() && stop_sequence.is_none() {
        return Ok(());
    }
    let path = finish_path(session.source, session.kind.name(), choice);
    let reason = lacks(crate::losses::path_subject(&path), target, AFTER_ERROR, Some("not sent"));
    session.lose(&path, &reason, None)
}

/// `lose_after_error(Usage)`: each count of a usage a stream encoder did not write (as above).
pub fn lose_usage_after_error(u: Option<&Usage>, session: &mut Session, target: &str) -> Result<()> {
    lose_counts_after_error(u.map_or(0, counts_given), session, target)
}

/// The counts a usage gives, a bit each (`usage_counts`' order): what an encoder keeps of the
/// usage it has not written, for `lose_counts_after_error` (a `Usage` would not fit its box).
pub fn counts_given(u: &Usage) -> u8 {
    let counts = usage_counts(u).iter().enumerate().fold(0, |bits, (i, (_, count))| bits | (u8::from(count.is_some()) << i));
    counts | if u.service_tier.is_some() { TIER_GIVEN } else { 0 }
}

/// `counts_given`'s bit of the service tier (after the counts').
const TIER_GIVEN: u8 = 1 << 7;

/// `lose_after_error(Logprobs)`: token logprobs a stream encoder did not write (as above).
pub fn lose_logprobs_after_error(session: &mut Session, target: &str) -> Result<()> {
    session.lose("$.logprobs", lacks("token logprobs", target, AFTER_ERROR, Some("not sent")), None)
}

/// `lose_usage_after_error` of the counts `counts_given` marked, in `USAGE_COUNTS`' order.
pub fn lose_counts_after_error(counts: u8, session: &mut Session, target: &str) -> Result<()> {
    for (i, (name, _)) in usage_counts(&Usage::default()).iter().enumerate() {
        if counts & (1 << i) != 0 {
            let path = usage_path_pieces(session, name).map(str::as_bytes);
            session.lose_lacking(&path, target, AFTER_ERROR, Some("not sent"), None)?;
        }
    }
    if counts & TIER_GIVEN != 0 && target != "openai" {
        // (the tier goes with the end's counts; openai writes it on each chunk as it comes)
        let path = usage_path_pieces(session, "service_tier").map(str::as_bytes);
        session.lose_lacking(&path, target, AFTER_ERROR, Some("not sent"), None)?;
    }
    Ok(())
}

/// `openai_time_us(raw)`: microseconds since the epoch of an openai `created` (raw
/// JSON seconds), or `None` (not a positive integer: `0` is what a server that does
/// not know writes).
pub fn openai_time_us(raw: &[u8]) -> Option<i64> {
    // (a wire time is plain digits, JSON's: no leading zero; read as they are, not through `Value::loads`)
    let plain = raw.iter().all(u8::is_ascii_digit) && (raw.len() == 1 || raw.first().is_some_and(|&d| d != b'0'));
    let seconds: i64 = if plain {
        std::str::from_utf8(raw).ok()?.parse().ok()? // beyond i64: beyond MAX_CLOCK too
    } else {
        // an integral float (`1.7e9`) is the integer it means
        match Value::loads(raw) {
            Ok(Value::Int(digits)) => digits.parse().ok()?,
            Ok(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 1e18 => f as i64,
            _ => return None,
        }
    };
    (0 < seconds && seconds < MAX_CLOCK as i64).then(|| seconds * US)
}

/// `openai_created(time_us)`: an openai `created`, whole seconds.
pub fn openai_created(time_us: i64) -> Vec<u8> {
    let mut json = Vec::with_capacity(20);
    push_openai_created(time_us, &mut json);
    json
}

/// `openai_created(time_us)` appended to `out`.
pub fn push_openai_created(time_us: i64, out: &mut Vec<u8>) {
    push_int(out, time_us.div_euclid(US));
}

/// `ollama_created_at(time_us)`: an ollama `created_at` (raw JSON): RFC 3339 in UTC,
/// microseconds with trailing zeros trimmed, no fraction for a whole second (Go's
/// `RFC3339Nano`, which Ollama writes).
pub fn ollama_created_at(time_us: i64) -> Vec<u8> {
    let mut text = Vec::with_capacity(40);
    push_ollama_created_at(time_us, &mut text);
    text
}

/// `ollama_created_at(time_us)` appended to `text` (a response writes it once, in place).
pub fn push_ollama_created_at(time_us: i64, out: &mut Vec<u8>) {
    let seconds = time_us.div_euclid(US);
    let fraction = time_us.rem_euclid(US);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let in_day = seconds.rem_euclid(86_400);
    if !(0..=9999).contains(&year) {
        // (no clock reading gets here: `MAX_CLOCK` bounds them; `format!` writes what Python's would)
        let mut text = format!("\"{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}", in_day / 3600, in_day / 60 % 60, in_day % 60);
        if fraction != 0 {
            text.push('.');
            text.push_str(format!("{fraction:06}").trim_end_matches('0'));
        }
        text.push_str("Z\"");
        out.extend_from_slice(text.as_bytes());
        return;
    }
    // fixed-width fields written by hand (`format!`'s padding costs ten times more), each
    // filled from its last digit (a division by the constant 10, not by a power computed per digit)
    let digits = |text: &mut Vec<u8>, mut n: i64, width: usize| {
        let mut field = [b'0'; 6];
        for digit in field[..width].iter_mut().rev() {
            *digit = b'0' + (n % 10) as u8;
            n /= 10;
        }
        text.extend_from_slice(&field[..width]);
    };
    out.push(b'"');
    digits(out, year, 4);
    for (separator, n) in [(b'-', month), (b'-', day), (b'T', in_day / 3600), (b':', in_day / 60 % 60), (b':', in_day % 60)] {
        out.push(separator);
        digits(out, n, 2);
    }
    if fraction != 0 {
        out.push(b'.');
        digits(out, fraction, 6);
        while out.last() == Some(&b'0') {
            out.pop();
        }
    }
    out.extend_from_slice(b"Z\"");
}

/// Whether an extension is a source's time field (`_TIME_FIELDS`).
fn is_time_field(ext: &Extension<'_>) -> bool {
    matches!((ext.dialect.as_ref(), ext.path.as_ref()), ("ollama", b"$.created_at") | ("openai", b"$.created"))
}

/// `source_time_us(ext)`: the response's time when the extension is a source's
/// time field, else `None`.
pub fn source_time_us(ext: &Extension<'_>) -> Option<i64> {
    match (ext.dialect.as_ref(), ext.path.as_ref()) {
        ("ollama", b"$.created_at") => ollama_time_us(&ext.raw),
        ("openai", b"$.created") => openai_time_us(&ext.raw),
        _ => None,
    }
}

/// `prefix + _digest(*parts)`: the prefix, then 24 hex digits of SHA-256 over the parts
/// joined with NUL (hashed piece by piece: no joined copy).
fn digest_id(prefix: &str, parts: &[&[u8]]) -> String {
    let mut hash = crate::digest::Sha256::default();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hash.update(b"\0");
        }
        hash.update(part);
    }
    let mut id = String::with_capacity(prefix.len() + 24);
    id.push_str(prefix);
    crate::digest::push_hex(&hash.finish()[..12], &mut id);
    id
}

/// `generated_response_id(prefix, nonce, time_us, model)`: the id of a response whose
/// source has none (`model`: WTF-8, `None` as empty).
pub fn generated_response_id(prefix: &str, nonce: &[u8], time_us: i64, model: Option<&[u8]>) -> String {
    digest_id(prefix, &[nonce, Decimal::signed(time_us).as_bytes(), model.unwrap_or(b"")])
}

/// `generated_tool_id(response_id, n)`: the id of the `n`-th tool call (from 0) of a
/// response whose source gave it none.
pub fn generated_tool_id(response_id: &[u8], n: u64) -> String {
    digest_id("call_", &[response_id, Decimal::of(n).as_bytes()])
}

/// `Stamp`: one response's id and time as an encoder writes them -- the source's
/// where it has them, else generated from the `ResponseStart`. The first source
/// time counts; once the time or a generated id is written it stays, so every frame
/// of a stream carries the same. An encoder makes one in its constructor
/// (`Stamp::new(session.start())`), feeds it every `Extension` (`source`), and asks
/// `time_us()` / `response_id(..)` when it writes them.
#[derive(Clone, Debug)]
pub struct Stamp {
    pub start: ResponseStart,
    pub source_us: Option<i64>,
    time_us: Option<i64>,
    id: Option<String>,
}

impl Stamp {
    pub fn new(start: ResponseStart) -> Self {
        Stamp { start, source_us: None, time_us: None, id: None }
    }

    /// `source(ext)`: take the time of a source's time field; true when `ext` is one.
    pub fn source(&mut self, ext: &Extension<'_>) -> bool {
        if self.source_us.is_none() {
            self.source_us = source_time_us(ext);
        }
        is_time_field(ext)
    }

    /// `time_us`: the response's time, fixed by its first use.
    pub fn time_us(&mut self) -> i64 {
        *self.time_us.get_or_insert(self.source_us.unwrap_or(self.start.time_us))
    }

    /// `response_id(prefix, source_id, model)`: the source's id when it has one (not
    /// empty), else the generated one (made once).
    pub fn response_id(&mut self, prefix: &str, source_id: Option<&str>, model: Option<&str>) -> String {
        self.response_id_ref(prefix, source_id, model).into_owned()
    }

    /// `response_id`, borrowed from the source's id or the one generated (an encoder
    /// writes it into its head: no copy).
    pub fn response_id_ref<'s>(&'s mut self, prefix: &str, source_id: Option<&'s str>, model: Option<&str>) -> Cow<'s, str> {
        if let Some(id) = source_id.filter(|id| !id.is_empty()) {
            return Cow::Borrowed(id);
        }
        if self.id.is_none() {
            let time_us = self.time_us();
            self.id = Some(generated_response_id(prefix, &self.start.nonce, time_us, model.map(str::as_bytes)));
        }
        Cow::Borrowed(self.id.as_deref().unwrap_or_default())
    }
}

// -- logprobs ----------------------------------------------------------------------------

/// `logprob_to_openai(raw)`: a canonical token entry as openai's
/// `ChatCompletionTokenLogprob` (a `Value::Object`): `bytes` a required (nullable)
/// member, `top_logprobs` a required list (each entry with `bytes` first).
pub fn logprob_to_openai(raw: &[u8]) -> Result<Value> {
    let entry = Value::loads(raw)?;
    let refused = || Error::new(ErrorClass::Schema, "expected a token entry (an object; top_logprobs a list of objects)")
        .with_path(b"$.logprobs".to_vec());
    let Value::Object(mut members) = entry else { return Err(refused()) };
    // `tops or []`: a false value (null, 0, "", {}, false) is no list
    let tops = match members.iter().find(|(k, _)| k == b"top_logprobs").map(|(_, v)| v) {
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => items.clone(),
        Some(value) if value.truthy() => return Err(refused()),
        _ => Vec::new(),
    };
    if !members.iter().any(|(k, _)| k == b"bytes") {
        members.push((b"bytes".to_vec(), Value::Null));
    }
    let tops: Vec<Value> = tops
        .into_iter()
        .map(|top| {
            let mut out = vec![(b"bytes".to_vec(), Value::Null)];
            for (key, value) in top.as_object().unwrap_or(&[]) {
                match out.iter_mut().find(|(k, _)| k == key) {
                    Some(slot) => slot.1 = value.clone(),
                    None => out.push((key.clone(), value.clone())),
                }
            }
            Value::Object(out)
        })
        .collect();
    match members.iter_mut().find(|(k, _)| k == b"top_logprobs") {
        Some(slot) => slot.1 = Value::Array(tops),
        None => members.push((b"top_logprobs".to_vec(), Value::Array(tops))),
    }
    Ok(Value::Object(members))
}

// -- output frames (encoders) ---------------------------------------------------------------

/// `OpenFrame`: at most one output frame (SSE event, NDJSON line) open for streaming
/// fragments. `key` names what the open frame carries (a block); a fragment with the
/// same key continues it, anything else closes it first (its `tail` goes out). One
/// source frame makes one output frame, whatever the chunking (`framing.FrameEnd`).
///
/// Use (an encoder): one `OpenFrame<K>` field; per fragment
/// `frame.fragment(key, |out| write_head(out), TAIL, payload, out)`; `frame.close(out)`
/// before anything else is written and at each `FrameEnd`.
#[derive(Clone, Debug)]
pub struct OpenFrame<K> {
    pub key: Option<K>,
    tail: Vec<u8>,
}

impl<K> Default for OpenFrame<K> {
    fn default() -> Self {
        OpenFrame { key: None, tail: Vec::new() }
    }
}

impl<K: PartialEq> OpenFrame<K> {
    pub fn new() -> Self {
        OpenFrame::default()
    }

    /// `fragment(key, head, tail, payload)`: an empty payload writes nothing; a new key
    /// closes the open frame and writes `head` first (and keeps `tail` for its close).
    pub fn fragment(&mut self, key: K, head: impl FnOnce(&mut Vec<u8>), tail: &[u8], payload: &[u8], out: &mut Vec<u8>) {
        if payload.is_empty() {
            return;
        }
        if self.key.as_ref() != Some(&key) {
            self.close(out);
            head(out);
            self.key = Some(key);
            self.tail.clear();
            self.tail.extend_from_slice(tail);
        }
        out.extend_from_slice(payload);
    }

    /// `close()`: the open frame's tail, if one is open.
    pub fn close(&mut self, out: &mut Vec<u8>) {
        if self.key.take().is_some() {
            out.extend_from_slice(&self.tail);
            self.tail.clear();
        }
    }

    pub fn is_open(&self) -> bool {
        self.key.is_some()
    }
}

// -- decoder helpers ---------------------------------------------------------------------

/// The length of a whole scalar's raw JSON: what `Read::Raw` copies (the token's text
/// as written: `jsonwriter::RawValue`) and holds to `max_value_bytes`; `None` for the
/// first token of a container or of a string in fragments. A decoder that skips a
/// repeated field it would read raw and drop does so only where that read could not
/// have failed.
pub fn raw_len(token: &crate::json::Token<'_>) -> Option<usize> {
    use crate::json::Token;
    match token {
        Token::Number(text) => Some(text.len()),
        Token::String(text) => Some(text.len() + 2),
        Token::True | Token::Null => Some(4),
        Token::False => Some(5),
        _ => None,
    }
}

/// `BlockStream`: one canonical block emitted fragment by fragment, possibly across
/// many frames. The first non-empty fragment carries `attrs` (which members may fill
/// until then: they are read when it goes); `close(late)` makes the last (empty)
/// fragment with the late attributes (a thinking signature).
///
/// Python's emits; this one returns the block to emit and the caller routes it
/// (`ResponseBase::out`: through the gate until the message starts):
/// `if let Some(b) = stream.fragment(data) { base.out(Event::Block(b), cx)? }`.
#[derive(Clone, Debug)]
pub struct BlockStream {
    pub section: crate::canonical::Section,
    pub message: i64,
    pub attrs: Vec<crate::decoding::Attr>,
    pub started: bool,
    /// what opened it (a tool-call index, a content-block index)
    pub key: Option<i64>,
}

impl BlockStream {
    pub fn new(section: crate::canonical::Section, message: i64, attrs: Vec<crate::decoding::Attr>, key: Option<i64>) -> Self {
        BlockStream { section, message, attrs, started: false, key }
    }

    fn block<'d>(&self, payload: Cow<'d, [u8]>, init: bool, fin: bool,
                 attrs: Option<Vec<(Cow<'d, str>, Cow<'d, [u8]>)>>) -> crate::canonical::Block<'d> {
        crate::canonical::Block { section: self.section, message: self.message, payload, init, fin, attrs }
    }

    /// `fragment(data)` (a `FragmentSink`; a string's `fin` is not the block's end):
    /// `None` for empty data.
    pub fn fragment<'d>(&mut self, data: &'d [u8]) -> Option<crate::canonical::Block<'d>> {
        if data.is_empty() {
            return None;
        }
        let attrs = if self.started { None } else { crate::decoding::block_attrs(&self.attrs) };
        let block = self.block(Cow::Borrowed(data), !self.started, false, attrs);
        self.started = true;
        Some(block)
    }

    /// `announce()`: the first fragment now, even empty (a tool call's id and name,
    /// before its arguments); `None` when it went already.
    pub fn announce(&mut self) -> Option<crate::canonical::Block<'static>> {
        if self.started {
            return None;
        }
        self.started = true;
        Some(self.block(Cow::Borrowed(b""), true, false, crate::decoding::block_attrs(&self.attrs)))
    }

    /// `close(late)`: the last fragment (a block never started is one whole empty
    /// fragment with the attributes and the late ones merged).
    pub fn close(&mut self, late: &[crate::decoding::Attr]) -> crate::canonical::Block<'static> {
        let block = if self.started {
            self.block(Cow::Borrowed(b""), false, true, crate::decoding::block_attrs(late))
        } else if late.is_empty() {
            self.block(Cow::Borrowed(b""), true, true, crate::decoding::block_attrs(&self.attrs))
        } else {
            let mut attrs = self.attrs.clone();
            for (name, json) in late {
                crate::decoding::set_attr(&mut attrs, name.clone(), json.clone());
            }
            self.block(Cow::Borrowed(b""), true, true, crate::decoding::block_attrs(&attrs))
        };
        self.started = true;
        block
    }
}

/// Held byte pieces of one rule, kept contiguous in buffers that live as long as
/// their owner (no allocation per frame once they have grown): Python's `Hold` of
/// `write`s, each piece counted with its size, drained in order.
#[derive(Debug, Default)]
pub struct Pieces {
    /// the reorder-buffer tally (made at the first piece: Python's `hold is not None`)
    hold: Option<crate::reorder::Hold<()>>,
    text: HeldText,
}

/// The pieces' bytes: one buffer, and where each piece but the last ends in it (a whole
/// body's one piece: no second buffer).
#[derive(Debug, Default)]
pub struct HeldText {
    bytes: Vec<u8>,
    cuts: Vec<usize>,
    /// a piece is held (maybe an empty one)
    held: bool,
}

impl Pieces {
    pub fn push(&mut self, reason: &'static str, data: &[u8], session: &mut Session) -> Result<()> {
        let hold = self.hold.get_or_insert_with(|| session.reorder.hold(reason));
        hold.append(&mut session.reorder, (), data.len() as u64)?;
        let text = &mut self.text;
        if text.held {
            text.cuts.push(text.bytes.len());
        }
        text.bytes.extend_from_slice(data);
        text.held = true;
        Ok(())
    }

    /// No piece held.
    pub fn is_empty(&self) -> bool {
        !self.text.held
    }

    /// Every piece, in order, to `sink` (their bytes released first, as Python's
    /// `drain`); the buffers keep their capacity.
    fn drain(&mut self, session: &mut Session, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let Some(mut hold) = self.hold.take() else { return Ok(()) };
        hold.drain(&mut session.reorder).for_each(drop);
        self.text.each_then_clear(sink)
    }

    /// `drain` in two steps, for an owner whose sink needs the session: the bytes leave
    /// the reorder buffer (the tally kept for the next piece: a stream holds one per
    /// delta) and come out, for `HeldText::each_then_clear`; `restore` gives the buffers back.
    pub fn release(&mut self, reorder: &mut crate::reorder::ReorderBuffer) -> HeldText {
        if let Some(hold) = self.hold.as_mut() {
            hold.drain(reorder).for_each(drop);
        }
        std::mem::take(&mut self.text)
    }

    /// The buffers `release` took, emptied (their capacity kept).
    pub fn restore(&mut self, text: HeldText) {
        self.text = text;
    }
}

impl HeldText {
    /// Every piece, in order, to `sink` (until an error), then none held.
    pub fn each_then_clear(&mut self, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if !self.held {
            return Ok(());
        }
        let mut start = 0;
        let mut result = Ok(());
        for end in self.cuts.iter().copied().chain([self.bytes.len()]) {
            if result.is_ok() {
                result = sink(&self.bytes[start..end]);
            }
            start = end;
        }
        self.bytes.clear();
        self.cuts.clear();
        self.held = false;
        result
    }
}

/// `ReasoningFirst`: text that one message object writes before its reasoning goes
/// after it (Ollama's Go struct order writes `content` before `thinking`; an
/// openai-compatible server may put `content` before `reasoning_content`). The text
/// waits in the reorder buffer (rule `reason`) from its first byte until the object's
/// next member shows whether reasoning follows: another member or the object's end
/// releases it at once; a reasoning member releases it when that reasoning string
/// ends. With `refuse_reorder` nothing is held (the wire order is kept).
///
/// Use: the text member's fragments go to `text(data, session)`: `true` means "pass
/// `data` on now, with its init/fin" (refuse_reorder); `false`, it was held. Each
/// member's key to `member(is_reasoning, ..)`, the reasoning string's last fragment to
/// `reasoning_end(..)`, the object's end to `release(..)`: each hands the held pieces,
/// in order, to `sink` (the text sink: Python passes them as `(data, False, False)`).
/// One per message reader, kept across frames: its buffers are reused.
#[derive(Debug)]
pub struct ReasoningFirst {
    reason: &'static str,
    pieces: Pieces,
    /// a reasoning member is being read: the held text waits for its end
    waiting: bool,
}

impl ReasoningFirst {
    pub fn new(reason: &'static str) -> Self {
        ReasoningFirst { reason, pieces: Pieces::default(), waiting: false }
    }

    /// `text(data, init, fin)`.
    pub fn text(&mut self, data: &[u8], session: &mut Session) -> Result<bool> {
        if session.options.refuse_reorder {
            return Ok(true);
        }
        if !data.is_empty() {
            self.pieces.push(self.reason, data, session)?;
        }
        Ok(false)
    }

    /// `member(reasoning)`: the next member of the object starts.
    pub fn member(&mut self, reasoning: bool, session: &mut Session, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if reasoning {
            self.waiting = self.is_holding();
            return Ok(());
        }
        self.release(session, sink)
    }

    /// `reasoning_end()`: the reasoning string ended.
    pub fn reasoning_end(&mut self, session: &mut Session, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if self.waiting {
            return self.release(session, sink);
        }
        Ok(())
    }

    /// `release()`: the object's end, or what the text waited for came.
    pub fn release(&mut self, session: &mut Session, sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.waiting = false;
        self.pieces.drain(session, sink)
    }

    pub fn is_holding(&self) -> bool {
        self.pieces.hold.is_some()
    }
}

/// `Deferred`: fragments of a block whose attributes are not all known yet (sorted
/// keys put a tool call's `arguments`/`input` before its `name`): held in the
/// reorder buffer until the caller's `ready()`, then streamed. A source in the usual
/// order holds nothing.
///
/// Use: `fragment(data, ready, session)` with Python's `ready()` answered now:
/// `true`, pass `data` to the block (opened by the caller, Python's `open_block()`);
/// `false`, held. `release(session)`: the held fragments, in order, for the block the
/// caller opens then (Python's `release()` returns that block).
#[derive(Debug)]
pub struct Deferred {
    reason: &'static str,
    pieces: Pieces,
}

impl Deferred {
    pub fn new(reason: &'static str) -> Self {
        Deferred { reason, pieces: Pieces::default() }
    }

    pub fn fragment(&mut self, data: &[u8], ready: bool, session: &mut Session) -> Result<bool> {
        if !self.is_holding() && ready {
            return Ok(true);
        }
        self.pieces.push(self.reason, data, session)?;
        Ok(false)
    }

    /// The held fragments (owned: the caller feeds them to the block it opens, which
    /// borrows the decoder; only a source in sorted-key order holds any).
    pub fn release(&mut self, session: &mut Session) -> Vec<Vec<u8>> {
        let mut held = Vec::new();
        let _ = self.pieces.drain(session, |data| {
            held.push(data.to_vec());
            Ok(())
        });
        held
    }

    pub fn is_holding(&self) -> bool {
        self.pieces.hold.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Options;

    fn session(source: &'static str, kind: Kind) -> Session {
        Session::new(Options::default(), source, "openai", kind)
    }

    #[test]
    fn decimal_digits() {
        for n in [0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 12345, 4_812_339_105, i64::MAX, i64::MIN, -1, -10, -100] {
            let mut out = Vec::new();
            push_int(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
        assert_eq!(Decimal::of(u64::MAX).as_bytes(), u64::MAX.to_string().as_bytes());
    }

    #[test]
    fn finish_reasons_both_ways() {
        assert_eq!(finish_from("openai", Some("function_call")).as_deref(), Some("tool_use"));
        assert_eq!(finish_from("ollama", Some("odd")).as_deref(), Some("ollama:odd"));
        assert_eq!(finish_from("ollama", None), None);
        let mut s = session("anthropic", Kind::Stream);
        assert_eq!(finish_to("openai", Some("openai:odd"), &mut s, None).unwrap().as_deref(), Some("odd"));
        assert_eq!(finish_to("openai", Some("pause_turn"), &mut s, Some("END")).unwrap().as_deref(), Some("stop"));
        let reasons: Vec<&[u8]> = s.losses.iter().map(|l| l.reason()).collect();
        assert_eq!(reasons, [
            &b"stop_sequence 'END': openai has no field for the stop sequence that ended generation; the finish reason is kept"[..],
            b"stop_reason 'pause_turn': openai has no such finish reason; sent as 'stop'",
        ]);
        assert_eq!(s.losses[1].path(), b"$.delta.stop_reason");
    }

    #[test]
    fn anthropic_stream_input_is_the_merged_input_tokens_plus_the_merged_cache_counts() {
        // (input_tokens, cache_read, cache_write) of message_start and message_delta, every
        // combination of which event gives which: the later given member wins
        let pick = |on: u8, bit: u8, n: i64| (on & bit != 0).then_some(n);
        for start in 0..8u8 {
            for delta in 0..8u8 {
                let read = |on: u8, base: i64| {
                    let (raw, r, w) = (pick(on, 1, base), pick(on, 2, base + 1), pick(on, 4, base + 2));
                    Usage { input: raw.map(|n| n + r.unwrap_or(0) + w.unwrap_or(0)), cache_read: r, cache_write: w,
                            ..Usage::default() }
                };
                let merged = merge_anthropic_usage(Some(&read(start, 10)), read(delta, 20), "$.usage").unwrap();
                let later = |bit: u8, off: i64| pick(delta, bit, 20 + off).or(pick(start, bit, 10 + off));
                let want = later(1, 0).map(|n| n + later(2, 1).unwrap_or(0) + later(4, 2).unwrap_or(0));
                assert_eq!((merged.input, merged.cache_read, merged.cache_write), (want, later(2, 1), later(4, 2)),
                           "{start} {delta}");
            }
        }
    }

    #[test]
    fn ollama_has_no_refusal_or_content_filter_finish() {
        for reason in ["refusal", "content_filter", "pause_turn"] {
            let mut s = Session::new(Options::default(), "anthropic", "ollama", Kind::Response);
            assert_eq!(finish_to("ollama", Some(reason), &mut s, None).unwrap().as_deref(), Some("stop"));
            assert_eq!(s.losses.len(), 1, "{reason}");
        }
    }

    #[test]
    fn usage_absent_is_not_zero_and_cache_counts_convert() {
        let mut s = session("anthropic", Kind::Response);
        let obj = Value::loads(br#"{"input_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":5,"output_tokens":30.0}"#).unwrap();
        let u = usage_from_anthropic(&UsageObject::Data(&obj), &mut s, "$.usage").unwrap();
        assert_eq!((u.input, u.output, u.cache_read, u.cache_write, u.total), (Some(12), Some(30), Some(4), Some(5), None));
        assert_eq!(usage_to_anthropic(&u, &mut s, false).unwrap(),
                   br#"{"input_tokens":3,"cache_creation_input_tokens":5,"cache_read_input_tokens":4,"output_tokens":30}"#);
        assert_eq!(usage_to_openai(&Usage { input: Some(1), ..Usage::default() }, &s).unwrap().unwrap(),
                   br#"{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}"#);
        assert_eq!(usage_to_anthropic(&Usage::default(), &mut s, true).unwrap(), br#"{"input_tokens":0,"output_tokens":0}"#);
        let every = Usage { input: Some(9), output: Some(-2), cache_read: Some(1), cache_write: Some(i64::MAX), reasoning: Some(0),
                            total: Some(i64::MIN), service_tier: Some("anthropic:x\"é".into()) };
        assert_eq!(usage_to_openai(&every, &s).unwrap().unwrap(), br#"{"prompt_tokens":9,"completion_tokens":-2,"total_tokens":-9223372036854775808,"prompt_tokens_details":{"cached_tokens":1,"cache_write_tokens":9223372036854775807},"completion_tokens_details":{"reasoning_tokens":0}}"#);
        assert_eq!(usage_to_openai(&Usage::default(), &s).unwrap(), None);
        let every = Usage { cache_write: Some(2), ..every };
        assert_eq!(usage_to_anthropic(&every, &mut s, false).unwrap(), r#"{"input_tokens":6,"cache_creation_input_tokens":2,"cache_read_input_tokens":1,"output_tokens":-2,"output_tokens_details":{"thinking_tokens":0},"service_tier":"x\"é"}"#.as_bytes());
        let err = usage_from_openai(&UsageObject::Data(&Value::loads(br#"{"prompt_tokens_details":3}"#).unwrap()), &mut s, "$.usage").unwrap_err();
        assert_eq!((err.message.as_str(), err.path.as_deref()), ("expected an object for prompt_tokens_details", Some(&b"$.usage.prompt_tokens_details"[..])));
        let big = Value::loads(br#"{"prompt_tokens":99999999999999999999}"#).unwrap();
        let err = usage_from_openai(&UsageObject::Data(&big), &mut s, "$.usage").unwrap_err();
        assert_eq!((err.class, err.message.as_str(), err.path.as_deref()),
                   (ErrorClass::Schema, "number out of range for prompt_tokens: a token count is beyond a 64-bit integer",
                    Some(&b"$.usage.prompt_tokens"[..])));
        let sum = Value::loads(br#"{"input_tokens":9223372036854775807,"cache_read_input_tokens":1}"#).unwrap();
        let err = usage_from_anthropic(&UsageObject::Data(&sum), &mut s, "$.usage").unwrap_err();
        assert_eq!(err.path.as_deref(), Some(&b"$.usage.input_tokens"[..]));
        let wide = Usage { input: Some(i64::MAX), output: Some(1), ..Usage::default() };
        assert!(usage_to_openai(&wide, &s).unwrap_err().message.contains("total_tokens"));
    }

    /// A usage object read off its compact text (`UsageObject::read`) reads as the same
    /// object parsed (`Value::parse`, the decoders' `_data`): counts, losses and errors.
    #[test]
    fn usage_read_off_the_text_is_usage_read_from_the_value() {
        let many: String = (0..20).map(|n| format!(",\"x{n}\":{n}")).collect();
        let texts = [
            r#"{"prompt_tokens":48213,"completion_tokens":1377,"total_tokens":49590,"prompt_tokens_details":{"cached_tokens":45056,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":512,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}"#.to_string(),
            r#"{"input_tokens":48213,"cache_creation_input_tokens":2048,"cache_read_input_tokens":45056,"cache_creation":{"ephemeral_5m_input_tokens":2048,"ephemeral_1h_input_tokens":0},"output_tokens":1377,"service_tier":"standard"}"#.to_string(),
            r#"{}"#.to_string(),
            r#"{"prompt_tokens":-0,"completion_tokens":0.0,"total_tokens":-0.0,"input_tokens":30.0,"output_tokens":1e2,"cache_read_input_tokens":null}"#.to_string(),
            r#"{"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":null,"odd":false,"more":true,"text":"","list":[],"deep":{"a":[{"b":"}"}]},"z":-0,"f":-0.0,"g":0.5}}"#.to_string(),
            r#"{"a":"x","b":[1,{"c":"]"}],"service_tier":"priority","output_tokens_details":{"thinking_tokens":7,"other":[0]},"cache_creation":{"k":1}}"#.to_string(),
            r#"{"prompt_tokens":"12"}"#.to_string(),
            r#"{"prompt_tokens":true}"#.to_string(),
            r#"{"completion_tokens_details":[]}"#.to_string(),
            r#"{"output_tokens_details":"x"}"#.to_string(),
            r#"{"input_tokens":99999999999999999999}"#.to_string(),
            r#"{"input_tokens":1e30}"#.to_string(),
            r#"{"input_tokens":9223372036854775807,"cache_read_input_tokens":1}"#.to_string(),
            r#"{"service_tier":"odd tier","x\u00e9":1,"prompt_tokens_details":{"caf\u00e9":2}}"#.to_string(),
            format!(r#"{{"prompt_tokens":1{many},"prompt_tokens_details":{{"cached_tokens":3{many}}}}}"#),
            format!(r#"{{"prompt_tokens_details":{{"cached_tokens":3{many}}}}}"#),
            r#"{"completion_tokens_details":{},"prompt_tokens_details":{"cached_tokens":{},"x":{"y":{"z":1}}},"output_tokens_details":{"thinking_tokens":{"a":1}}}"#.to_string(),
            r#"{"cache_creation":{"a":{},"b":[{}]},"input_tokens":-7,"output_tokens":123456789012345678,"cache_read_input_tokens":1234567890123456789}"#.to_string(),
            r#"{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808,"total_tokens":9223372036854775808}"#.to_string(),
            r#"{"prompt_tokens":-0,"prompt_tokens_details":{"cached_tokens":-12}}"#.to_string(),
            r#"null"#.to_string(),
        ];
        type Read = fn(&UsageObject<'_>, &mut Session, &str) -> Result<Usage>;
        for text in &texts {
            for (name, read) in [("openai", usage_from_openai as Read), ("anthropic", usage_from_anthropic as Read)] {
                let run = |obj: Option<&UsageObject<'_>>| {
                    let mut s = Session::new(Options::default(), name, "ollama", Kind::Response); // (not a copy: losses)
                    let usage = obj.map(|obj| read(obj, &mut s, "$.usage").map_err(|e| (e.message.clone(), e.path.clone())));
                    (usage, s.losses.iter().map(|l| (l.path().to_vec(), l.reason().to_vec())).collect::<Vec<_>>())
                };
                let value = Value::parse(text.as_bytes()).unwrap();
                let want = run(value.is_object().then_some(&UsageObject::Data(&value)));
                let read_off = UsageObject::read(text.as_bytes()).unwrap();
                assert_eq!(run(read_off.as_ref()), want, "{name} {text}");
            }
        }
        let lone = UsageObject::read(br#"{"\ud800":1}"#).unwrap_err();
        assert_eq!(lone.class, ErrorClass::LoneSurrogate);
        let deep = format!("{}{}", "[".repeat(1001), "]".repeat(1001));
        assert_eq!(UsageObject::read(format!(r#"{{"a":{deep}}}"#).as_bytes()).unwrap_err().class, ErrorClass::NestingTooDeep);
    }

    #[test]
    fn times_read_and_write_back() {
        assert_eq!(ollama_time_us(br#""2024-01-01T01:00:00.1234567+01:00""#), Some(1_704_067_200_123_456));
        // ASCII digits only: a fraction in Arabic-Indic digits is no time (rpt/fx-ollama-time-ascii-digits)
        assert_eq!(ollama_time_us("\"2024-01-01T00:00:00.\u{663}Z\"".as_bytes()), None);
        assert_eq!(ollama_time_us(br#""2023-02-29T00:00:00Z""#), None);
        assert_eq!(ollama_time_us(br#""1970-01-01T00:00:00Z""#), None);
        assert_eq!(ollama_created_at(1_704_067_200_120_000), br#""2024-01-01T00:00:00.12Z""#);
        assert_eq!(ollama_created_at(951_782_400_000_000), br#""2000-02-29T00:00:00Z""#);
        assert_eq!(ollama_created_at(253_402_300_799_000_001), br#""9999-12-31T23:59:59.000001Z""#);
        assert_eq!(ollama_created_at(1_000_000_010), br#""1970-01-01T00:16:40.00001Z""#);
        assert_eq!((openai_time_us(b"1704067200"), openai_time_us(b"0"), openai_time_us(b"true")), (Some(1_704_067_200_000_000), None, None));
        assert_eq!(openai_created(1_704_067_200_999_999), b"1704067200");
    }

    #[test]
    fn stamp_keeps_the_first_time_and_id() {
        let mut stamp = Stamp::new(ResponseStart { time_us: 5_000_000, nonce: [7; 12] });
        let ext = |dialect: &'static str, path: &'static str, raw: &'static [u8]| Extension {
            dialect: dialect.into(), path: Cow::Borrowed(path.as_bytes()), raw: Cow::Borrowed(raw), message: None, lossless: false };
        assert!(stamp.source(&ext("openai", "$.created", b"1704067200")));
        assert!(!stamp.source(&ext("openai", "$.id", b"\"x\"")));
        assert_eq!(stamp.time_us(), 1_704_067_200_000_000);
        let id = stamp.response_id("chatcmpl-", None, Some("m"));
        assert_eq!(id, generated_response_id("chatcmpl-", &[7; 12], 1_704_067_200_000_000, Some(b"m")));
        assert_eq!((id.len(), stamp.response_id("chatcmpl-", Some(""), None)), (33, id.clone()));
        assert_eq!(stamp.response_id("chatcmpl-", Some("src"), None), "src");
        assert!(generated_tool_id(id.as_bytes(), 0).starts_with("call_"));
    }

    #[test]
    fn logprobs_as_openai() {
        let entry = logprob_to_openai(br#"{"token":"a","top_logprobs":[{"token":"b","bytes":[98]}]}"#).unwrap();
        assert_eq!(entry.to_json(), br#"{"token":"a","top_logprobs":[{"bytes":[98],"token":"b"}],"bytes":null}"#);
        assert_eq!(logprob_to_openai(br#"{"top_logprobs":0}"#).unwrap().to_json(), br#"{"top_logprobs":[],"bytes":null}"#);
        assert_eq!(logprob_to_openai(b"[1]").unwrap_err().path.as_deref(), Some(&b"$.logprobs"[..]));
    }
}
