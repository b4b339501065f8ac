//! A small JSON value: what Python's `json.loads` gives the codecs for small
//! members (tool definitions, controls, attributes), and `jsonwriter.dumps` of it.
//!
//! Python semantics, byte for byte:
//! * object members keep their order (a repeated key keeps its first place and
//!   its last value, as a `dict` does; the tokenizer refuses repeated keys anyway);
//! * a number with a fraction or an exponent is a float (`float()`'s correctly
//!   rounded value, `1e400` -> inf), written back in Python's `repr`; an integer
//!   keeps its digits, however many (`-0` -> `0`);
//! * strings and keys are WTF-8: a `\ud800` escape is a lone surrogate, as in a
//!   Python `str`. They stay bytes, not `String`: `_data` and `_scalar` refuse
//!   lone surrogates (`parse`, `scalar`), but the controls' `json.loads(raw)`
//!   (`loads`) and `decode_escaped` do not, so an openai `"user": "\ud800"`
//!   reaches the anthropic encoder as a str holding one;
//! * `dumps` of a value holding a lone surrogate writes the whole value
//!   ASCII-escaped (`jsonwriter.dumps`'s fallback: `ensure_ascii=True`, which
//!   also escapes DEL and every non-ASCII character, astral ones as pairs).
//!
//! The text read is the tokenizer's JSON: `loads` refuses the `NaN` / `Infinity`
//! literals Python's `json.loads` would take (the tokenizer never passes them).
//!
//! Not the same: Python's `json` raises `RecursionError` (not a TranscodeError)
//! for values nested about 1,000 deep (reachable only with `Options(max_depth=...)`
//! above that); here `loads` / `parse` refuse values nested deeper than
//! `MAX_DEPTH` = 1,000 with a `NestingTooDeep` error (reading, dropping and
//! writing a value recurse: the bound keeps the stack small). Owner: helper S (see /work/coord/NATIVE.md).
#![forbid(unsafe_code)]

use std::collections::HashMap;

use crate::canonical::{has_lone_surrogate, unescape_into};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{escape_str_bytes, Token};
use crate::unicode::wtf8_code_point;

/// A decoded JSON value (Python data after `json.loads`).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// an integer's text as Python writes the int back (`-0` -> `0`)
    Int(String),
    Float(f64),
    /// the decoded string, WTF-8
    Str(Vec<u8>),
    Array(Vec<Value>),
    /// members in input order (keys WTF-8)
    Object(Vec<(Vec<u8>, Value)>),
}

/// Deepest value `parse` / `loads` read (the recursion bound; see the module doc).
pub const MAX_DEPTH: usize = 1_000;

/// `_lone_surrogate()`'s message (decoding.py).
pub const LONE_SURROGATE_MESSAGE: &str = "lone surrogate escape in a value read as text (not Unicode)";

fn lone_surrogate() -> Error {
    Error::new(ErrorClass::LoneSurrogate, LONE_SURROGATE_MESSAGE)
}

impl Value {
    /// `fields.value_type`: the type's name as `decoding::type_name` names a token's.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) | Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// `json.loads(raw)`: any JSON text (whitespace allowed); a lone surrogate is kept.
    pub fn loads(raw: &[u8]) -> Result<Value> {
        let mut parser = Parser { raw, at: 0 };
        parser.skip_space();
        let value = parser.value(0)?;
        parser.skip_space();
        if parser.at != raw.len() {
            return Err(parser.syntax("extra data"));
        }
        Ok(value)
    }

    /// `decoding._data(raw)`: a small value's compact JSON as data; an escaped
    /// lone surrogate anywhere in it (key or string) is a `LoneSurrogateError`
    /// (the caller locates it at the value's first byte, as `Decoder._at`).
    pub fn parse(raw: &[u8]) -> Result<Value> {
        let value = Value::loads(raw)?;
        if has_u_escape(raw) && value.has_lone_surrogate() {
            return Err(lone_surrogate());
        }
        Ok(value)
    }

    /// `decoding._scalar(kind, value)`: a scalar token as data (a string token's
    /// escaped bytes decoded; a lone surrogate refused). Containers and string
    /// fragments are not scalars: `None`.
    pub fn scalar(token: &Token<'_>) -> Option<Result<Value>> {
        Some(match *token {
            Token::String(escaped) => string_value(escaped),
            Token::Number(text) => Ok(number_value(text)),
            Token::True => Ok(Value::Bool(true)),
            Token::False => Ok(Value::Bool(false)),
            Token::Null => Ok(Value::Null),
            _ => return None,
        })
    }

    /// Whether a string or key anywhere in the value holds a lone surrogate.
    pub fn has_lone_surrogate(&self) -> bool {
        match self {
            Value::Str(s) => has_lone_surrogate(s),
            Value::Array(items) => items.iter().any(Value::has_lone_surrogate),
            Value::Object(members) => members.iter().any(|(k, v)| has_lone_surrogate(k) || v.has_lone_surrogate()),
            _ => false,
        }
    }

    // -- accessors ---------------------------------------------------------------

    /// `value.get(key)` of an object (`None` for a non-object too).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A string's text, when it is valid UTF-8 (no lone surrogate).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => std::str::from_utf8(s).ok(),
            _ => None,
        }
    }

    /// A string's WTF-8 bytes.
    pub fn as_wtf8(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An int that fits in i64 (not a bool: use `is_py_int` for Python's `isinstance(v, int)`).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(digits) => digits.parse().ok(),
            _ => None,
        }
    }

    /// `float(v)` of an int or a float (a huge int: Python raises OverflowError; here inf).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(digits) => digits.parse().ok(),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(Vec<u8>, Value)]> {
        match self {
            Value::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }

    pub fn is_str(&self) -> bool {
        matches!(self, Value::Str(_))
    }

    /// Python's `isinstance(v, int)`: an int or a bool.
    pub fn is_py_int(&self) -> bool {
        matches!(self, Value::Int(_) | Value::Bool(_))
    }

    /// Python's truth value (`bool(v)`): `None`, `False`, `0`, `0.0`, `""`, `[]`, `{}` are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(digits) => digits != "0",
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(items) => !items.is_empty(),
            Value::Object(members) => !members.is_empty(),
        }
    }

    /// A string value of `text`.
    pub fn str(text: &str) -> Value {
        Value::Str(text.as_bytes().to_vec())
    }

    /// An int value.
    pub fn int(n: i64) -> Value {
        Value::Int(n.to_string())
    }

    /// `jsonwriter.dumps(self)` as a new vector.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        dumps(self, &mut out);
        out
    }
}

/// `decoding._data` of a value read token by token (`Read::Value` of a container, or of a
/// string in fragments): the `Value` that `Value::parse` makes of the tokens' compact
/// JSON, built from the tokens themselves (the text is not parsed again). The faults are
/// `parse`'s: a value nested deeper than `MAX_DEPTH` (the first one), else a lone
/// surrogate in any key or string.
#[derive(Debug, Default)]
pub struct ValueBuilder {
    /// the open containers, innermost last
    open: Vec<Open>,
    /// the escaped bytes of a string in fragments so far
    string: Vec<u8>,
    /// the value, once complete
    done: Option<Value>,
    too_deep: bool,
    lone: bool,
}

#[derive(Debug)]
enum Open {
    Array(Vec<Value>),
    /// the members so far and the key of the member whose value is due
    Object(Vec<(Vec<u8>, Value)>, Vec<u8>),
}

impl ValueBuilder {
    /// Ready for a new value (buffers kept).
    pub fn reset(&mut self) {
        self.open.clear();
        self.string.clear();
        self.done = None;
        self.too_deep = false;
        self.lone = false;
    }

    /// One token of the value; true once the value is complete (`finish` gives it).
    pub fn feed(&mut self, token: &Token<'_>) -> bool {
        match *token {
            Token::ObjectStart | Token::ArrayStart => {
                self.value_begins();
                let open = match token {
                    Token::ObjectStart => Open::Object(Vec::new(), Vec::new()),
                    _ => Open::Array(Vec::new()),
                };
                self.open.push(open);
                false
            }
            Token::Key(key) => {
                self.lone |= has_lone_surrogate(key);
                if let Some(Open::Object(_, pending)) = self.open.last_mut() {
                    pending.clear();
                    pending.extend_from_slice(key);
                }
                false
            }
            Token::ObjectEnd | Token::ArrayEnd => match self.open.pop() {
                Some(Open::Object(members, _)) => self.complete(Value::Object(members)),
                Some(Open::Array(items)) => self.complete(Value::Array(items)),
                None => self.complete(Value::Null), // (not a value's token: the caller's bug)
            },
            Token::StringOpen(part) => {
                self.value_begins();
                self.string.clear();
                self.string.extend_from_slice(part);
                false
            }
            Token::StringPart(part) => {
                self.string.extend_from_slice(part);
                false
            }
            Token::StringClose(part) => {
                self.string.extend_from_slice(part);
                let escaped = std::mem::take(&mut self.string);
                let value = self.string_data(&escaped);
                self.string = escaped;
                self.complete(value)
            }
            Token::String(escaped) => {
                self.value_begins();
                let value = self.string_data(escaped);
                self.complete(value)
            }
            Token::Number(text) => {
                self.value_begins();
                self.complete(number_value(text))
            }
            Token::True | Token::False | Token::Null => {
                self.value_begins();
                let value = Value::scalar(token).and_then(Result::ok).unwrap_or(Value::Null);
                self.complete(value)
            }
        }
    }

    /// The complete value, or `parse`'s fault.
    pub fn finish(&mut self) -> Result<Value> {
        if self.too_deep {
            return Err(Error::new(ErrorClass::NestingTooDeep, format!("value nested deeper than {MAX_DEPTH}")));
        }
        if self.lone {
            return Err(lone_surrogate());
        }
        Ok(self.done.take().unwrap_or(Value::Null))
    }

    /// A value begins inside the open containers (`Parser::value`'s depth bound).
    fn value_begins(&mut self) {
        self.too_deep |= self.open.len() > MAX_DEPTH;
    }

    /// A string's escaped bytes as data; a lone surrogate is noted (a fault at `finish`).
    fn string_data(&mut self, escaped: &[u8]) -> Value {
        match string_value(escaped) {
            Ok(value) => value,
            Err(_) => {
                self.lone = true; // (the tokenizer let only well-formed escapes through)
                Value::Null
            }
        }
    }

    /// A value is complete: the whole one (true), or a member or element of the innermost container.
    fn complete(&mut self, value: Value) -> bool {
        match self.open.last_mut() {
            None => {
                self.done = Some(value);
                true
            }
            Some(Open::Array(items)) => {
                items.push(value);
                false
            }
            Some(Open::Object(members, key)) => {
                members.push((std::mem::take(key), value));
                false
            }
        }
    }
}

/// A string token's escaped bytes as data (`_scalar`'s string case).
fn string_value(escaped: &[u8]) -> Result<Value> {
    if crate::json::find_special(escaped, 0).is_none() {
        return Ok(Value::Str(escaped.to_vec())); // nothing to decode (no escape, so no surrogate)
    }
    let mut text = Vec::with_capacity(escaped.len());
    unescape_into(escaped, &mut text)?;
    if has_u_escape(escaped) && has_lone_surrogate(&text) {
        return Err(lone_surrogate());
    }
    Ok(Value::Str(text))
}

/// A float's text (well-formed JSON) as `float()` reads it.
pub(crate) fn float_of(text: &[u8]) -> f64 {
    // the text is ASCII (the caller checked the grammar); Rust's parse is correctly rounded, as float()
    std::str::from_utf8(text).unwrap_or("nan").parse().unwrap_or(f64::NAN)
}

/// A number's text (well-formed JSON) as `json.loads` reads it.
fn number_value(text: &[u8]) -> Value {
    if text.iter().any(|&b| matches!(b, b'.' | b'e' | b'E')) {
        return Value::Float(float_of(text));
    }
    if text == b"-0" {
        return Value::Int("0".to_string());
    }
    // (a number's text is ASCII, so this is a copy: no lossy decoding, no second allocation)
    Value::Int(String::from_utf8(text.to_vec()).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

// -- json.loads --------------------------------------------------------------------

struct Parser<'a> {
    raw: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn syntax(&self, what: &str) -> Error {
        Error::new(ErrorClass::JsonSyntax, format!("not a JSON value: {what} (byte {})", self.at))
    }

    fn skip_space(&mut self) {
        while matches!(self.raw.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8], value: Value) -> Result<Value> {
        if self.raw[self.at..].starts_with(word) {
            self.at += word.len();
            return Ok(value);
        }
        Err(self.syntax("expecting a value"))
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(Error::new(ErrorClass::NestingTooDeep, format!("value nested deeper than {MAX_DEPTH}")));
        }
        match self.raw.get(self.at) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.syntax("expecting a value")),
        }
    }

    /// A string at `self.at` (its opening quote), decoded. One pass finds its end
    /// (`json::find_special`); a string without escapes is copied as it is.
    fn string(&mut self) -> Result<Vec<u8>> {
        let start = self.at + 1;
        let mut i = start;
        let mut decode = false;
        loop {
            let Some(j) = crate::json::find_special(self.raw, i) else {
                self.at = self.raw.len();
                return Err(self.syntax("unterminated string"));
            };
            match self.raw[j] {
                b'"' => {
                    i = j;
                    break;
                }
                b'\\' => {
                    decode = true;
                    i = j + 2; // the byte after the backslash is never the closing quote
                    if i > self.raw.len() {
                        self.at = self.raw.len();
                        return Err(self.syntax("unterminated string"));
                    }
                }
                _ => {
                    decode = true; // a raw control character: unescape_into refuses it (once the end is known)
                    i = j + 1;
                }
            }
        }
        let text = if decode {
            let mut text = Vec::with_capacity(i - start);
            unescape_into(&self.raw[start..i], &mut text).map_err(|_| {
                self.at = start;
                self.syntax("bad string")
            })?;
            text
        } else {
            self.raw[start..i].to_vec()
        };
        self.at = i + 1;
        Ok(text)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` at `self.at`.
    fn number(&mut self) -> Result<Value> {
        let start = self.at;
        let raw = self.raw;
        let digits = |mut i: usize| {
            let from = i;
            while raw.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            (i, i - from)
        };
        let mut i = start + usize::from(raw[start] == b'-');
        match raw.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(i).0,
            _ => return Err(self.syntax("expecting a value")),
        }
        if raw.get(i) == Some(&b'.') {
            match digits(i + 1) {
                (end, n) if n > 0 => i = end,
                _ => return Err(self.syntax("bad number")),
            }
        }
        if matches!(raw.get(i), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(raw.get(i + 1), Some(b'+' | b'-')));
            match digits(i + 1 + sign) {
                (end, n) if n > 0 => i = end,
                _ => return Err(self.syntax("bad number")),
            }
        }
        self.at = i;
        Ok(number_value(&raw[start..i]))
    }

    /// After an element: `,` (more follow: true) or the closer (false).
    fn more(&mut self, closer: u8) -> Result<bool> {
        self.skip_space();
        match self.raw.get(self.at) {
            Some(b',') => {
                self.at += 1;
                self.skip_space();
                Ok(true)
            }
            Some(&b) if b == closer => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(self.syntax("expecting ',' or a closer")),
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value> {
        self.at += 1;
        self.skip_space();
        let mut items = Vec::new();
        if self.raw.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if !self.more(b']')? {
                return Ok(Value::Array(items));
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value> {
        self.at += 1;
        self.skip_space();
        let mut members = Members::default();
        if self.raw.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(Value::Object(members.list));
        }
        loop {
            if self.raw.get(self.at) != Some(&b'"') {
                return Err(self.syntax("expecting a key"));
            }
            let key = self.string()?;
            self.skip_space();
            if self.raw.get(self.at) != Some(&b':') {
                return Err(self.syntax("expecting ':'"));
            }
            self.at += 1;
            self.skip_space();
            let value = self.value(depth + 1)?;
            members.insert(key, value);
            if !self.more(b'}')? {
                return Ok(Value::Object(members.list));
            }
        }
    }
}

/// An object being read, as a Python dict fills: a repeated key keeps its
/// place and takes the new value. The index is made only for large objects.
#[derive(Default)]
struct Members {
    list: Vec<(Vec<u8>, Value)>,
    index: Option<HashMap<Vec<u8>, usize>>,
}

impl Members {
    const INDEXED_FROM: usize = 16;

    fn insert(&mut self, key: Vec<u8>, value: Value) {
        if self.index.is_none() && self.list.len() >= Self::INDEXED_FROM {
            self.index = Some(self.list.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect());
        }
        let found = match &self.index {
            Some(index) => index.get(&key).copied(),
            None => self.list.iter().position(|(k, _)| *k == key),
        };
        match found {
            Some(i) => self.list[i].1 = value,
            None => {
                if let Some(index) = &mut self.index {
                    index.insert(key.clone(), self.list.len());
                }
                self.list.push((key, value));
            }
        }
    }
}

// -- Python equality ----------------------------------------------------------------

/// Python `==` of JSON data: numbers by value across int, float and bool; objects whatever
/// their members' order.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.iter().any(|(k2, v2)| k == k2 && py_eq(v, v2)))
        }
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// A number (or bool) for `py_eq`: exact for integers within `i128`, and for a float
/// against an integer when the float is integral.
#[derive(PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
    /// an integer beyond `i128`: compared by its digits
    Big(String),
}

fn number(value: &Value) -> Option<Num> {
    Some(match value {
        Value::Bool(b) => Num::Int(*b as i128),
        Value::Int(digits) => digits.parse::<i128>().map_or_else(|_| Num::Big(digits.clone()), Num::Int),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 1.7e38 => Num::Int(*f as i128),
        Value::Float(f) => Num::Float(*f),
        _ => return None,
    })
}

// -- jsonwriter.dumps --------------------------------------------------------------

/// `jsonwriter.dumps(value)` appended to `out`: compact JSON as Python's
/// `json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))` writes it, or,
/// when a string or key holds a lone surrogate, as the ASCII encoder writes it.
pub fn dumps(value: &Value, out: &mut Vec<u8>) {
    let start = out.len();
    if write_value(value, Mode::Utf8, out).is_err() {
        out.truncate(start);
        let _ = write_value(value, Mode::Ascii, out);
    }
}

/// `dumps(text)` of a string as its own buffer (`dumps_str` into a new one).
pub fn str_json(text: impl AsRef<[u8]>) -> Vec<u8> {
    let text = text.as_ref();
    let mut out = Vec::with_capacity(text.len() + 2);
    dumps_str(text, &mut out);
    out
}

/// The longest string `dumps_str` checks byte by byte for its plain fast path (longer
/// ones go to the vector search of `escape_str_bytes`).
const SHORT_PLAIN: usize = 64;

/// The bytes `dumps_str` writes as they are in any string: printable ASCII but `"` and `\\`.
static PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0x20;
    while b < 0x7f {
        plain[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    plain
};

/// Whether `dumps_str` writes `text` as it is between quotes (printable ASCII, no `"` or `\\`).
/// Eight bytes at a time (SWAR): a key or a name is checked at every `dumps_str`, and a
/// byte-by-byte table look-up was most of the fast path's cost.
pub(crate) fn is_plain(text: &[u8]) -> bool {
    let Some(last) = text.last_chunk::<8>() else {
        return text.iter().all(|&b| PLAIN[usize::from(b)]);
    };
    // whole words, then the last eight bytes (over the last word's: one test, not a byte loop)
    text.chunks_exact(8).all(|word| word_is_plain(u64::from_le_bytes(word.try_into().unwrap_or([0; 8]))))
        && word_is_plain(u64::from_le_bytes(*last))
}

/// `is_plain` of eight bytes: none is special to a JSON string (`json::special_mask`: `"`,
/// `\\`, below 0x20), has its high bit set, or is 0x7f.
fn word_is_plain(x: u64) -> bool {
    use crate::json::{special_mask, zero_bytes, HIGHS, ONES};
    (special_mask(x) | (x & HIGHS) | (zero_bytes(x ^ (ONES * 0x7f)) & HIGHS)) == 0
}

/// Whether JSON text holds a `\u` escape (or a backslash before a `u`: only an escape has
/// one). memchr's search for the backslash: no searcher to build per call, as memmem's is.
fn has_u_escape(text: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', text).any(|at| text.get(at + 1) == Some(&b'u'))
}

/// `jsonwriter.dumps(text)` of a string (WTF-8) appended to `out`: `key_bytes`, roles, names.
pub fn dumps_str(text: &[u8], out: &mut Vec<u8>) {
    if text.len() <= SHORT_PLAIN && is_plain(text) {
        // the usual name (a key, a role, an id): nothing to escape, so it is itself in quotes
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text);
        out.push(b'"');
        return;
    }
    let start = out.len();
    if write_str(text, Mode::Utf8, out).is_err() {
        out.truncate(start);
        let _ = write_str(text, Mode::Ascii, out);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `ensure_ascii=False`
    Utf8,
    /// `ensure_ascii=True` (the fallback)
    Ascii,
}

/// A lone surrogate met while writing UTF-8 (Python's `UnicodeEncodeError`).
struct NotUtf8;

fn write_value(value: &Value, mode: Mode, out: &mut Vec<u8>) -> std::result::Result<(), NotUtf8> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(digits) => out.extend_from_slice(digits.as_bytes()),
        Value::Float(f) => write_float(*f, out),
        Value::Str(text) => write_str(text, mode, out)?,
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_value(item, mode, out)?;
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (n, (key, item)) in members.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_str(key, mode, out)?;
                out.push(b':');
                write_value(item, mode, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn write_str(text: &[u8], mode: Mode, out: &mut Vec<u8>) -> std::result::Result<(), NotUtf8> {
    // room for the quotes and the text at once: callers often start from an empty Vec,
    // which would otherwise grow for the quote, then for the text, then for the last quote
    out.reserve(text.len() + 2);
    out.push(b'"');
    match mode {
        Mode::Utf8 => {
            if has_lone_surrogate(text) {
                return Err(NotUtf8);
            }
            escape_str_bytes(text, out);
        }
        Mode::Ascii => escape_ascii(text, out),
    }
    out.push(b'"');
    Ok(())
}

/// `py_encode_basestring_ascii`: printable ASCII as it is (but `"` and `\`),
/// the short escapes, every other code point `\uxxxx` (astral: a surrogate pair).
fn escape_ascii(text: &[u8], out: &mut Vec<u8>) {
    let mut units = [0u16; 2];
    let mut i = 0;
    while i < text.len() {
        let (code, len) = wtf8_code_point(&text[i..]);
        i += len;
        match code {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x20..=0x7E => out.push(code as u8),
            _ => {
                let units: &[u16] = match char::from_u32(code) {
                    Some(c) => c.encode_utf16(&mut units),
                    None => {
                        units[0] = code as u16; // a lone surrogate
                        &units[..1]
                    }
                };
                for unit in units {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
        }
    }
}

/// Python's `float.__repr__` (json's float writer): the shortest digits that
/// round-trip, in positional form for a decimal exponent from -4 up to 16
/// (`0.0001`, `1e+16`), else `d.ddde±XX`; `Infinity`, `-Infinity`, `NaN`.
pub fn write_float(f: f64, out: &mut Vec<u8>) {
    if f.is_nan() {
        return out.extend_from_slice(b"NaN");
    }
    if f.is_infinite() {
        return out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    let (digits, point) = shortest_digits(f.abs());
    let digits = digits.as_bytes();
    let n = digits.len() as i32;
    if point <= -4 || point > 16 {
        let exponent = point - 1;
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.extend_from_slice(format!("e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs()).as_bytes());
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-point) as usize));
        out.extend_from_slice(digits);
    } else if point < n {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    } else {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', (point - n) as usize));
        out.extend_from_slice(b".0");
    }
}

/// The shortest digits that read back as `f` (finite, not negative) and the
/// decimal point's place: `f` = 0.d1d2... x 10^point (Python's `decpt`).
///
/// Rust's `{:e}` writes the shortest round-trip digits, the nearest to `f`
/// among them -- as Python's `repr` (David Gay's dtoa, mode 0) -- except where
/// `f` lies exactly halfway between two such candidates: dtoa takes the one
/// whose last digit is even (`562949953421312.25` -> `...312.2`), Rust may
/// round up (`...312.3`). That case is found exactly and decided as dtoa does.
fn shortest_digits(f: f64) -> (String, i32) {
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    let point = exponent.parse::<i32>().unwrap_or(0) + 1;
    match halfway_even(f, &digits, point) {
        Some(even) => even,
        None => (digits, point),
    }
}

/// When `f` is exactly halfway between the two candidates of `digits`' length
/// (the last digit's place 10^k, with k = point - len), the one with an even
/// last digit, if it reads back as `f`.
fn halfway_even(f: f64, digits: &str, point: i32) -> Option<(String, i32)> {
    if f == 0.0 {
        return None;
    }
    let k = point - digits.len() as i32;
    // f = m * 2^e, m odd. A value halfway between two multiples of 10^k is
    // (2D+1) * 5^k * 2^(k-1) (k > 0) or (2D+1) / (5^-k * 2^(1-k)) (k <= 0): e = k - 1.
    let bits = f.to_bits();
    let (fraction, biased) = (bits & ((1 << 52) - 1), ((bits >> 52) & 0x7FF) as i32);
    let (m, e) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
    if e + m.trailing_zeros() as i32 != k - 1 {
        return None;
    }
    // f's exact decimal text ends at 10^(k-1); it must end in a 5 there
    let exact = if k >= 1 { format!("{f:.0}") } else { format!("{f:.prec$}", prec = (1 - k) as usize) };
    let exact: String = exact.chars().filter(|&c| c != '.').collect();
    let tail = exact.len().checked_sub(k.max(1) as usize)?;
    if exact.as_bytes()[tail] != b'5' || exact.as_bytes()[tail + 1..].iter().any(|&b| b != b'0') {
        return None;
    }
    let low = exact[..tail].trim_start_matches('0');
    let high = increment(low);
    let even = if low.bytes().last().is_some_and(|d| (d - b'0').is_multiple_of(2)) { low.to_string() } else { high };
    if even.is_empty() || even.trim_matches('0').is_empty() {
        return None;
    }
    if format!("{even}e{k}").parse::<f64>().ok()? != f {
        return None;
    }
    let significant = even.trim_end_matches('0');
    let point = k + even.len() as i32;
    Some((significant.to_string(), point))
}

/// A decimal integer's digits plus one.
fn increment(digits: &str) -> String {
    let mut out = digits.as_bytes().to_vec();
    for d in out.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return String::from_utf8(out).unwrap_or_default();
        }
    }
    out.insert(0, b'1');
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(raw: &str) -> String {
        String::from_utf8(Value::loads(raw.as_bytes()).unwrap().to_json()).unwrap()
    }

    /// The word-at-a-time `is_plain` says what the byte table says: every byte value at
    /// every position of a word and of the tail, among plain bytes.
    #[test]
    fn is_plain_is_the_table_byte_by_byte() {
        let by_table = |text: &[u8]| text.iter().all(|&b| PLAIN[usize::from(b)]);
        for len in [1usize, 7, 8, 9, 16, 23] {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    assert_eq!(is_plain(&text), by_table(&text), "byte {b:#x} at {at} of {len}");
                }
            }
        }
        assert!(is_plain(b"") && is_plain(b"prompt_tokens_details") && !is_plain("caf\u{e9} au lait".as_bytes()));
    }

    #[test]
    fn numbers_as_python_reads_and_writes_them() {
        let table = [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "-0.0"),
            ("1E2", "100.0"),
            ("1e400", "Infinity"),
            ("-1e400", "-Infinity"),
            ("1e-400", "0.0"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("1e16", "1e+16"),
            ("1e15", "1000000000000000.0"),
            ("9999999999999998.0", "9999999999999998.0"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("123456789012345680.0", "1.2345678901234568e+17"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("2.5e-7", "2.5e-07"),
            ("1.5e300", "1.5e+300"),
            ("12.5", "12.5"),
            ("-3.0e0", "-3.0"),
            // exactly halfway between two shortest candidates: the even one (dtoa)
            ("562949953421312.25", "562949953421312.2"),
            ("562949953421312.75", "562949953421312.8"),
        ];
        for (raw, python) in table {
            assert_eq!(roundtrip(raw), python, "{raw}");
        }
    }

    #[test]
    fn strings_and_the_ascii_fallback() {
        assert_eq!(roundtrip(r#""a\"\\\/\b\f\n\r\t\u0001\u007f é\u2028""#), "\"a\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\u{7f} é\u{2028}\"");
        // a lone surrogate anywhere: the whole value ASCII-escaped, as Python's fallback
        assert_eq!(
            roundtrip(r#"{"é":["\ud800","😀\u007f"]}"#),
            r#"{"\u00e9":["\ud800","\ud83d\ude00\u007f"]}"#
        );
        assert_eq!(roundtrip(r#"{"\udc00":1}"#), r#"{"\udc00":1}"#);
    }

    #[test]
    fn containers_keep_order_and_a_repeated_key_its_first_place() {
        assert_eq!(roundtrip(r#" { "b" : [ 1 , { } , [ ] ] , "a" : null , "b" : true } "#), r#"{"b":true,"a":null}"#);
        let many: Vec<String> = (0..40).map(|i| format!("\"k{}\":{i}", i % 20)).collect();
        let expected: Vec<String> = (0..20).map(|i| format!("\"k{i}\":{}", i + 20)).collect();
        assert_eq!(roundtrip(&format!("{{{}}}", many.join(","))), format!("{{{}}}", expected.join(",")));
    }

    #[test]
    fn parse_refuses_lone_surrogates_as_data_loads_keeps_them() {
        for raw in [&br#""\ud800""#[..], br#"{"\udfff":1}"#, br#"[{"a":"x\ud83d"}]"#] {
            assert!(Value::loads(raw).is_ok());
            let err = Value::parse(raw).unwrap_err();
            assert_eq!((err.class, err.message.as_str()), (ErrorClass::LoneSurrogate, LONE_SURROGATE_MESSAGE));
        }
        assert_eq!(Value::parse(br#""\ud83d\ude00""#).unwrap(), Value::str("😀"));
        let scalar = |t: Token<'_>| Value::scalar(&t).unwrap();
        assert_eq!(scalar(Token::String(br"\u00e9")).unwrap(), Value::str("é"));
        assert_eq!(scalar(Token::String(br"\ud800")).unwrap_err().class, ErrorClass::LoneSurrogate);
        assert_eq!(scalar(Token::Number(b"-0")).unwrap(), Value::int(0));
        assert_eq!(scalar(Token::Number(b"2e0")).unwrap(), Value::Float(2.0));
        assert_eq!(scalar(Token::Null).unwrap(), Value::Null);
        assert!(Value::scalar(&Token::ObjectStart).is_none());
    }

    /// `ValueBuilder` fed a document's tokens (cut at `cut`: strings in fragments) gives what
    /// `Value::parse` gives of their compact text (`RawValue`), value or fault.
    #[test]
    fn a_value_built_from_tokens_is_the_parsed_one() {
        use crate::json::{Frames, Sink, Tokenizer};
        use crate::jsonwriter::RawValue;
        struct Both(ValueBuilder, RawValue, Vec<u8>);
        impl Sink for Both {
            fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
                self.0.feed(&token);
                self.1.feed(&token, &mut self.2);
                Ok(())
            }
        }
        let docs: [&[u8]; 12] = [
            br#"{"a": [1, -0, 2.50, -1e3, true, false, null, {}, []], "b": {"c": "d\n\"e\" \u00e9 \ud83d\ude00"}}"#,
            br#"[]"#, br#"{}"#, br#""plain""#, br#""x\u0041\/""#, br#"[[[["deep"]]]]"#,
            br#"{"\ud800": 1}"#, br#"[1, "\udfff"]"#, br#"{"a": {"b": "x\ud83d"}}"#, br#"{"k\u00e9y": "v", "\"q\"": []}"#,
            "{\"\u{e9}\u{2028}\": \"\u{4e16}\"}".as_bytes(), br#"[{"a": 1}, {"a": 2}, 0.1, 1E+2]"#,
        ];
        for doc in docs {
            for cut in 0..=doc.len() {
                let mut both = Both(ValueBuilder::default(), RawValue::new(), Vec::new());
                let mut tokenizer = Tokenizer::default();
                tokenizer.feed(&doc[..cut], &mut both).unwrap();
                tokenizer.feed(&doc[cut..], &mut both).unwrap();
                tokenizer.close(&mut both).unwrap();
                let built = both.0.finish().map_err(|e| e.class);
                let parsed = Value::parse(&both.2).map_err(|e| e.class);
                assert_eq!(built, parsed, "{} cut {cut}", String::from_utf8_lossy(doc));
            }
        }
        // nested deeper than MAX_DEPTH: parse's fault, before a lone surrogate's
        let mut deep = ValueBuilder::default();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.feed(&Token::ArrayStart);
        }
        deep.feed(&Token::String(br"\ud800"));
        assert_eq!(deep.finish().map_err(|e| e.class), Err(ErrorClass::NestingTooDeep));
    }

    #[test]
    fn not_json_is_an_error_never_a_panic() {
        for bad in ["", "[", "{\"a\"", "{\"a\":}", "[1,]", "01", "1.", "1e", "-", "tru", "\"\\", "\"a", "\"\\u12\"",
            "[1 2]", "{1:2}", "1 2", "\"\n\"", "nul"] {
            assert!(Value::loads(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2);
        assert_eq!(Value::loads(deep.as_bytes()).unwrap_err().class, ErrorClass::NestingTooDeep);
    }

    #[test]
    fn accessors() {
        let v = Value::parse(br#"{"a":"x","n":-12,"f":1.5,"b":false,"l":[1],"o":{}}"#).unwrap();
        assert_eq!(v.get("a").and_then(Value::as_str), Some("x"));
        assert_eq!(v.get("n").and_then(Value::as_i64), Some(-12));
        assert_eq!(v.get("f").and_then(Value::as_f64), Some(1.5));
        assert_eq!(v.get("b").and_then(Value::as_bool), Some(false));
        assert!(v.get("b").unwrap().is_py_int() && !v.get("b").unwrap().truthy());
        assert_eq!(v.get("l").and_then(Value::as_array).map(<[Value]>::len), Some(1));
        assert!(v.get("o").unwrap().is_object() && !v.get("o").unwrap().truthy());
        assert!(v.get("zz").is_none() && Value::Null.get("a").is_none());
    }
}
