//! The shared machinery of dialect decoders (`src/interlingua/decoding.py`): a
//! pushdown machine over tokens, and the readers every dialect needs (a small
//! value, a string streamed as fragments, a value copied as raw JSON text).
//!
//! In Rust a decoder is an explicit state machine: its states are named enums
//! on a stack (DESIGN §9), not closures. The traits `EventSink` and `Decode`
//! are the contract between the stages; the rest of this file is helper D's
//! (NATIVE.md).
//!
//! # How a dialect decoder is built on it
//!
//! Python's decoder is a stack of handler closures; here it is a [`Machine`]
//! holding a stack of [`Frame`]s over the dialect's own state enum `S` (small,
//! `Copy`: *which* handler, never the data), and the dialect's data lives in
//! its decoder struct (the current message, part, tool call: the nesting of a
//! request is fixed by its schema, so each level's reader is a field).
//!
//! * A handler is a variant of `S`; its code is a `match` arm in the dialect's
//!   [`Dialect`] methods. `token` gets every token of a `Frame::State(s)` (or the
//!   one token announced with [`Machine::then`]); `member` / `element` / `object`
//!   / `end` are the callbacks of `each_member` / `each_element` / `each_object`;
//!   `raw`, `value` and `fragment` are the `done` / `sink` callbacks of
//!   `read_raw`, `read_value`, `read_string` / `stream_raw`.
//! * The readers are [`Read`] values naming the state that gets the result:
//!   `m.then(Read::Value(S::ToolId, Some(STRING), "a tool call's id"))` reads the
//!   *next* value (Python `then_value`); `m.read(Read::String(S::Content, "content"))`
//!   hands the *current* token to a reader (Python `read_string(kind, value, ...)`
//!   called from a handler). `read` must be the handler's last step: the reader
//!   starts when the handler returns (in Python `done` runs inside the call; the
//!   handlers call it last, so the order of events is the same).
//! * Errors are made by [`Cx`] (`cx.error`, `cx.wrong_type`, `cx.expect`,
//!   `cx.missing`): the same messages as Python's, at the offset given and the
//!   tokenizer's path at the token being read.
//! * Events go out through `cx.emit`; a block may borrow the chunk. What must
//!   wait is held owned (`Gate`, `MessageBase`).
//!
//! ```ignore
//! #[derive(Clone, Copy)]
//! enum S { Body, Model, Tools, Tool }
//! impl Dialect for MyDecoder {
//!     type State = S;
//!     fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, offset: u64,
//!               cx: &mut Cx<'_>) -> Result<()> {
//!         match key {
//!             b"tools" => m.read(Read::Elements(S::Tools, "tools")),
//!             _ => m.read(Read::Raw(S::Model, None, "")),
//!         }
//!         Ok(())
//!     }
//!     fn element(&mut self, m: &mut Machine<S>, _s: S, _t: Token<'_>, _o: u64, _cx: &mut Cx<'_>) -> Result<()> {
//!         m.read(Read::Value(S::Tool, None, ""));
//!         Ok(())
//!     }
//!     fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
//!         /* S::Tool: a whole tool definition as data */
//!         Ok(())
//!     }
//!     /* raw, fragment, end ... */
//! }
//! // and the `Decode` impl: `self.m.feed(&mut self.dialect, token, offset, &mut Cx::new(path, session, out))`
//! ```
//!
//! `RequestBody` is `RequestBodyDecoder`'s frame (body members, required
//! members, `SystemEnd` / `MessagesEnd` / `End`), `MessageBase` is
//! `MessageReaderBase` (blocks wait for the role), `BlockBuilder` is Python's
//! (late attributes ride on the last fragment), `Gate` the events held for what
//! decides them.
//!
//! The response side (issue 12) adds: `ResponseBase` (`ResponseDecoderBase`: the
//! gate until the message starts, `start_message`), `Machine::key_first`
//! (`lifecycle.KeyFirst`: an object's tokens recorded until its key, then replayed
//! into the reader `Dialect::key_first` pushes), `Read::Skip`
//! (`lifecycle.skip_value`), `Read::Scalar` (`KeyFirst.read_key`) and `Read::Top`
//! (a handler's `d.on_token(...)`). Python's `RawStream` is `Read::StreamRaw`. The
//! block and text helpers (`BlockStream`, `ReasoningFirst`, `Deferred`) and the
//! encoders' `OpenFrame` are in lifecycle.rs.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{Block, Control, Event, Extension, Section};
use crate::compact::{push_member, Data, Key};
use crate::dialects::fields::declared_integer;
use crate::numbers;
use crate::error::{Error, ErrorClass, Result};
use crate::json::{py_str_repr, Frames, Token};
use crate::jsonwriter::{RawLen, RawValue};
use crate::reorder::Hold;
use crate::session::Session;
use crate::value::{Value, ValueBuilder};

/// Where a decoder's canonical events go: the encoder (a `Transcoder`), or a
/// list (a `Decoder`). An event may borrow the chunk being fed.
pub trait EventSink {
    fn event(&mut self, event: Event<'_>, session: &mut Session) -> Result<()>;
}

/// A dialect decoder: tokens in, canonical events out (`decoding.Decoder`).
pub trait Decode {
    /// One token of the document (`on_token`); `path` is where the tokenizer is.
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()>;
    /// A member's key and its value's first token (`json::Sink::member`): the two tokens.
    #[allow(clippy::too_many_arguments)]
    fn member(&mut self, key: &[u8], key_offset: u64, value: Token<'_>, offset: u64, path: &Frames,
              session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.token(Token::Key(key), key_offset, path, session, out)?;
        self.token(value, offset, path, session, out)
    }
    /// `json::Sink::whole_text`: the text buffer of the value the container just opened
    /// belongs to, if it is read only as text (`Machine::whole_text`).
    fn whole_text(&mut self, _max_value_bytes: usize) -> Option<(&mut Vec<u8>, usize)> {
        None
    }
    /// After each fed chunk: hand on raw text gathered so far (`flush`).
    fn flush(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// The chunk being fed failed (the tokenizer's error, or the decoder's): hand
    /// on what the decoder held only to join string fragments (`Machine::interrupted`;
    /// Python had sent it before the fault). Not in Python: its fragments need no joining.
    fn interrupted(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// After the tokenizer closed successfully (`finish`).
    fn finish(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// Offset of the token being read: an error raised past the tokenizer (a
    /// budget, strict mode) is located there (`Decoder.at`).
    fn at(&self) -> u64;

    // -- streams: the pipeline's stream front (`_StreamFront`) calls these; a body
    // decoder (request, response) never sees them. Python's `ResponseDecoderBase`
    // and the stream decoders define them; the defaults are its base's.

    /// The stream's framing stage (`framing = "sse" | "ndjson"`).
    fn framing(&self) -> Framing {
        Framing::Sse
    }
    /// A frame's data begins a JSON document (`begin_frame`): the tokenizer was reset.
    fn begin_frame(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// The frame's JSON document ended and was flushed (`end_frame(event)`);
    /// `event`: its SSE `event:` name.
    fn end_frame(&mut self, _event: Option<&str>, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// A frame whose data is not a JSON object (openai's `[DONE]`), stripped
    /// (`frame_text(event, data)`).
    fn frame_text(&mut self, _event: Option<&str>, _data: &[u8], _session: &mut Session,
                  _out: &mut dyn EventSink) -> Result<()> {
        Ok(())
    }
    /// The frame a copy of this stream adds when the source ended without it
    /// (`missing_terminator`; passthrough.rs).
    fn missing_terminator(&self) -> &'static [u8] {
        b""
    }
    /// `source_done`: the source's last event, or its error event, came: nothing after it
    /// belongs to the answer (a copy's abort adds no error event after it).
    fn source_done(&self) -> bool {
        false
    }
}

/// A stream's framing stage (`ResponseDecoderBase.framing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Sse,
    Ndjson,
}

// -- the type table ---------------------------------------------------------------

/// One JSON type a member may have (the parts an `Expect` is made of).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    String,
    Integer,
    Number,
    Boolean,
    Object,
    Array,
    Null,
}

impl JsonType {
    fn name(self) -> &'static str {
        match self {
            JsonType::String => "a string",
            JsonType::Integer => "an integer",
            JsonType::Number => "a number",
            JsonType::Boolean => "a boolean",
            JsonType::Object => "an object",
            JsonType::Array => "an array",
            JsonType::Null => "null",
        }
    }

    fn takes(self, token: &Token<'_>) -> bool {
        match self {
            JsonType::String => matches!(token, Token::String(_) | Token::StringOpen(_)),
            JsonType::Integer | JsonType::Number => matches!(token, Token::Number(_)),
            JsonType::Boolean => matches!(token, Token::True | Token::False),
            JsonType::Object => matches!(token, Token::ObjectStart),
            JsonType::Array => matches!(token, Token::ArrayStart),
            JsonType::Null => matches!(token, Token::Null),
        }
    }

    /// `takes`, for a value read as data (`fields._TOKEN_KINDS`).
    fn takes_value(self, value: &Value) -> bool {
        match self {
            JsonType::String => matches!(value, Value::Str(_)),
            JsonType::Integer | JsonType::Number => matches!(value, Value::Int(_) | Value::Float(_)),
            JsonType::Boolean => matches!(value, Value::Bool(_)),
            JsonType::Object => matches!(value, Value::Object(_)),
            JsonType::Array => matches!(value, Value::Array(_)),
            JsonType::Null => matches!(value, Value::Null),
        }
    }
}

/// What a member's value must be (`decoding.Expect`): the types it may have (so
/// a wrong type is refused at its first token, with that token's offset and
/// path, before anything is read or copied). `Integer` also refuses a number
/// with a fraction or an exponent. `a.or(b)` is Python's `a | b`; the name is
/// the parts' names joined with " or ", in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    parts: [JsonType; 8],
    len: usize,
}

impl Expect {
    pub const fn of(part: JsonType) -> Expect {
        Expect { parts: [part; 8], len: 1 }
    }

    pub const fn or(self, other: Expect) -> Expect {
        let mut parts = self.parts;
        let mut len = self.len;
        let mut i = 0;
        while i < other.len && len < 8 {
            parts[len] = other.parts[i];
            len += 1;
            i += 1;
        }
        Expect { parts, len }
    }

    fn parts(&self) -> &[JsonType] {
        &self.parts[..self.len]
    }

    /// `Expect.name`: "a string or null".
    pub fn name(&self) -> String {
        self.parts().iter().map(|p| p.name()).collect::<Vec<_>>().join(" or ")
    }

    fn integer(&self) -> bool {
        self.parts().contains(&JsonType::Integer)
    }

    /// `Expect.integer`: one of its types is an integer.
    pub fn is_integer(&self) -> bool {
        self.integer()
    }

    /// The token's kind is one of the types (`kind in expect.kinds`).
    fn takes_kind(&self, token: &Token<'_>) -> bool {
        self.parts().iter().any(|p| p.takes(token))
    }

    /// `fields._refusal`: what it refuses in a value read as data (the type's name, or the
    /// number's fault for an integer), in `Decoder.expect`'s words; None when it takes it.
    pub fn refusal_of(&self, value: &Value) -> Option<&'static str> {
        if !self.parts().iter().any(|part| part.takes_value(value)) {
            return Some(value.type_name());
        }
        match value {
            Value::Float(f) if self.integer() && f.is_infinite() => Some("a number beyond a float's range"),
            Value::Float(f) if self.integer() && f.fract() != 0.0 => Some("a number with a fraction"),
            _ => None,
        }
    }

    /// `Expect.refuses(kind, value)`.
    pub fn refuses(&self, token: &Token<'_>) -> bool {
        if !self.takes_kind(token) {
            return true;
        }
        match token {
            Token::Number(text) => self.integer() && !integral(text),
            _ => false,
        }
    }
}

/// `numbers.integral(text) is not None`: `100`, `100.0`, `1e2` (any size); not a fraction
/// or an overflow.
fn integral(number: &[u8]) -> bool {
    !numbers::is_float_literal(number) || numbers::whole(number) != numbers::Whole::Not
}

fn refused_number(token: &Token<'_>) -> &'static str {
    match token {
        Token::Number(text) if numbers::overflows(text) => "a number beyond a float's range",
        _ => "a number with a fraction",
    }
}

pub const STRING: Expect = Expect::of(JsonType::String);
pub const INTEGER: Expect = Expect::of(JsonType::Integer);
pub const NUMBER: Expect = Expect::of(JsonType::Number);
pub const BOOLEAN: Expect = Expect::of(JsonType::Boolean);
pub const OBJECT: Expect = Expect::of(JsonType::Object);
pub const ARRAY: Expect = Expect::of(JsonType::Array);
pub const NULL: Expect = Expect::of(JsonType::Null);
pub const OPT_STRING: Expect = STRING.or(NULL);
pub const OPT_INTEGER: Expect = INTEGER.or(NULL);
pub const OPT_OBJECT: Expect = OBJECT.or(NULL);
pub const OPT_ARRAY: Expect = ARRAY.or(NULL);
pub const SCALAR: Expect = STRING.or(NUMBER).or(BOOLEAN).or(NULL);
pub const ANY: Expect = OBJECT.or(ARRAY).or(SCALAR);

/// `decoding.type_name(kind)`: what a wrong-type error says the value was.
pub fn type_name(token: &Token<'_>) -> &'static str {
    match token {
        Token::ObjectStart => "object",
        Token::ArrayStart => "array",
        Token::String(_) | Token::StringOpen(_) => "string",
        Token::Number(_) => "number",
        Token::True | Token::False => "boolean",
        Token::Null => "null",
        // json.KIND_NAMES (a value never starts with these)
        Token::ObjectEnd => "object-end",
        Token::ArrayEnd => "array-end",
        Token::Key(_) => "key",
        Token::StringPart(_) => "string-part",
        Token::StringClose(_) => "string-close",
    }
}

// -- the context of a call: path, session, output -----------------------------------

/// What a handler works with besides its own state: the tokenizer's path (for
/// errors), the run's session, and where events go.
pub struct Cx<'a> {
    /// `None` outside a token (flush, finish): errors say `$`
    pub path: Option<&'a Frames>,
    pub session: &'a mut Session,
    pub out: &'a mut dyn EventSink,
}

impl<'a> Cx<'a> {
    pub fn new(path: &'a Frames, session: &'a mut Session, out: &'a mut dyn EventSink) -> Self {
        Cx { path: Some(path), session, out }
    }

    /// Outside a token (`flush`, `finish`).
    pub fn outside(session: &'a mut Session, out: &'a mut dyn EventSink) -> Self {
        Cx { path: None, session, out }
    }

    pub fn emit(&mut self, event: Event<'_>) -> Result<()> {
        self.out.event(event, self.session)
    }

    /// `RequestBodyDecoder.checked`: a control of the top-level field whose text is `raw` (at
    /// `offset`) as it is emitted: an integer field's integral float as its integer, and a
    /// number the target cannot take refused at the value (numbers.rs), and one outside the
    /// source's own range refused for every target (`numbers::refusal`).
    pub fn checked<'c>(&self, mut control: Control<'c>, raw: &[u8], offset: u64) -> Result<Control<'c>> {
        let Some(key) = control.key.as_deref() else { return Ok(control) };
        let source = self.session.source;
        let integer = declared_integer(source, key);
        if integer {
            if let Some(text) = numbers::integral_text(&control.value) {
                control.value = text;
            }
        }
        let target = self.session.target;
        if !target.is_empty() && target != source && raw.first() != Some(&b'"') {
            if let Some(why) = numbers::fault(source, target, key, raw, &control.value, integer) {
                let path = format!("$.{key}").into_bytes();
                return Err(Error::new(ErrorClass::Schema, why).at(offset).with_path(path).in_dialect(source));
            }
        }
        // the source's own range: refused whatever the target
        if let Some(why) = numbers::refusal(source, key, raw, &control.value) {
            let path = format!("$.{key}").into_bytes();
            return Err(Error::new(ErrorClass::Schema, why).at(offset).with_path(path).in_dialect(source));
        }
        Ok(control)
    }

    /// `Decoder.extension`: a dialect field without canonical meaning (`path` WTF-8:
    /// `member_path` makes one ending in a key).
    pub fn extension(&mut self, dialect: &'static str, path: impl Into<Vec<u8>>, raw: &[u8], message: Option<i64>,
                     lossless: bool) -> Result<()> {
        self.emit(Event::Extension(Extension {
            dialect: Cow::Borrowed(dialect),
            path: Cow::Owned(path.into()),
            raw: Cow::Borrowed(raw),
            message,
            lossless,
        }))
    }

    /// `Decoder.path()`: the JSON path of the token being read.
    pub fn path(&self) -> Vec<u8> {
        self.path.map_or_else(|| b"$".to_vec(), Frames::render)
    }

    /// `Decoder.error(message, offset, cls)`.
    #[cold]
    pub fn error_of(&self, class: ErrorClass, message: impl Into<String>, offset: u64) -> Error {
        Error::new(class, message).at(offset).with_path(self.path())
    }

    /// `Decoder.error(message, offset)`: a `SchemaError`.
    /// `Decoder.refuse_overflow`: a tool definition is written from its value, and one whose
    /// canonical text holds an overflowed float (`1e400`) has no JSON text.
    pub fn refuse_overflow(&self, canonical: &[u8], offset: u64) -> Result<()> {
        if crate::numbers::has_infinity(canonical) {
            return Err(self.error(crate::numbers::TOOL_OVERFLOW, offset));
        }
        Ok(())
    }

    /// `Decoder.check_tool_attrs`: a tool definition's carried members (`fields::TOOL_MEMBERS`;
    /// `where_`: the object holding them, `$.tools[0].function`): the first of the wrong type is
    /// a SchemaError at its path, at the tool's first byte; an explicit null is dropped (absent).
    pub fn check_tool_attrs(&self, attrs: &mut Vec<Attr>, where_: &str, offset: u64) -> Result<()> {
        for (key, raw) in attrs.iter() {
            let Some(expect) = crate::dialects::fields::tool_member(key) else { continue };
            let value = Value::loads(raw)?;
            if let Some(got) = expect.refusal_of(&value) {
                let message = format!("expected {} for {}.{key}, got {got}", expect.name(), &where_[2..]);
                return Err(self.error(message, offset).with_path(format!("{where_}.{key}").into_bytes()));
            }
        }
        attrs.retain(|(key, raw)| crate::dialects::fields::tool_member(key).is_none() || raw.as_ref() != b"null");
        Ok(())
    }

    #[cold]
    pub fn error(&self, message: impl Into<String>, offset: u64) -> Error {
        self.error_of(ErrorClass::Schema, message, offset)
    }

    /// `Decoder.wrong_type`: "expected {expected}, got {type}".
    #[cold]
    pub fn wrong_type(&self, token: &Token<'_>, expected: &str, offset: u64) -> Error {
        self.error(format!("expected {expected}, got {}", type_name(token)), offset)
    }

    /// `Decoder.expect`, the one type check: a value (its first token) that
    /// `expect` refuses is a `SchemaError` naming `what`.
    pub fn expect(&self, token: &Token<'_>, offset: u64, expect: Option<Expect>, what: &str) -> Result<()> {
        match expect {
            Some(expect) if expect.refuses(token) => {
                let got = if expect.takes_kind(token) { refused_number(token) } else { type_name(token) };
                Err(self.error(format!("expected {} for {what}, got {got}", expect.name()), offset))
            }
            _ => Ok(()),
        }
    }

    /// `Decoder.missing`: a required member that is absent (at its object's end).
    pub fn missing(&self, member: &str, what: &str, offset: u64) -> Error {
        self.error(format!("{what} has no {} (required)", py_str_repr(member.as_bytes())), offset)
    }

    /// `Decoder.data(raw, offset)`: a small value's compact JSON as data; a lone
    /// surrogate is an error at the value's first byte.
    pub fn data(&self, raw: &[u8], offset: u64) -> Result<Value> {
        parse_value(raw).map_err(|e| self.located(e, offset))
    }

    /// `Decoder._at`: an error of decoding a value, at its first byte and the current path.
    #[cold]
    pub(crate) fn located(&self, mut err: Error, offset: u64) -> Error {
        err.offset = Some(offset);
        err.path = Some(self.path());
        err
    }

    /// `bound_scalar`: a scalar that came as one token under `max_value_bytes`, as its
    /// text would be in fragments (a string cut by a chunk end is counted fragment by
    /// fragment): the same value passes or fails however the body was cut.
    pub fn bound_scalar(&self, token: &Token<'_>, offset: u64) -> Result<()> {
        if !self.within_bound(token) {
            return Err(self.budget(offset));
        }
        Ok(())
    }

    /// Would `bound_scalar` pass `token`? (A decoder's shortcut for a value it would
    /// read as data is taken only then: otherwise the checked way refuses it.)
    pub fn within_bound(&self, token: &Token<'_>) -> bool {
        crate::lifecycle::raw_len(token).unwrap_or(0) <= self.session.options.max_value_bytes
    }

    fn budget(&self, offset: u64) -> Error {
        let limit = self.session.options.max_value_bytes;
        self.error_of(ErrorClass::BudgetExceeded, format!("value larger than max_value_bytes ({limit})"), offset)
    }
}

// -- the machine ---------------------------------------------------------------

/// A reader of one value, started at its first token (Python's handlers that
/// `then` names or a handler calls with the token it got). `S` is the dialect
/// state that gets the result; `&'static str` is what errors call the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read<S> {
    /// the dialect's handler `S` gets the token (`Dialect::token`)
    State(S),
    /// `read_value`: the value as data, to `Dialect::value` (type checked first)
    Value(S, Option<Expect>, &'static str),
    /// `read_raw`: the value's compact JSON text, to `Dialect::raw` (type checked first)
    Raw(S, Option<Expect>, &'static str),
    /// `read_string`: a string's escaped fragments, to `Dialect::fragment`
    String(S, &'static str),
    /// `stream_raw`: the value's compact JSON in fragments (one per fed chunk), to `Dialect::fragment`
    StreamRaw(S),
    /// `each_member`: an object; each member's value to `Dialect::member`, its end to `Dialect::end`
    Members(S, &'static str),
    /// `each_element`: an array; each element's first token to `Dialect::element`, its end to `end`
    Elements(S, &'static str),
    /// `each_object`: an array of objects; each `{` to `Dialect::object`, the array's end to `end`
    Objects(S, &'static str),
    /// `lifecycle.skip_value`: a value consumed without keeping it (a container or a
    /// string in fragments is read whole under `max_value_bytes`, as `read_raw`)
    Skip,
    /// `KeyFirst.read_key`: a scalar (else "expected a scalar for {what}"), read as
    /// data (`expect` checked first) to `Dialect::value`
    Scalar(S, Option<Expect>, &'static str),
    /// the token goes to the frame on top of the stack (a handler's
    /// `d.on_token(kind, value, offset)`: after `Machine::key_first`, the member
    /// token that showed the key is not first goes to the new frame)
    Top,
}

/// One entry of the stack: who gets the tokens of the level being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<S> {
    /// the dialect's handler (every token of its level: keys, ends, values)
    State(S),
    /// `MemberReader`: keys remembered, values to `member`, `}` to `end`
    Members(S),
    Elements(S, &'static str),
    Objects(S, &'static str),
    /// a container read whole (`read_raw`, or `read_value` when `data`), begun at `offset`
    Whole { state: S, offset: u64, data: bool },
    /// a string's later fragments (`read_string`)
    String(S),
    /// a container's raw JSON streamed (`stream_raw`)
    RawStream(S),
    /// a value skipped (`Read::Skip`), begun at `offset`
    Skip { offset: u64 },
    /// an object whose members wait for its key (`Machine::key_first`)
    KeyFirst(S),
    /// the key's value of a `KeyFirst`, a string in fragments, begun at `offset`
    KeyValue { offset: u64 },
}

/// What the dialect implements: one method per kind of callback, each a
/// `match` over its states. The defaults are "this state takes no such
/// callback" (a bug in the dialect, reported as an internal error, never a panic).
#[allow(unused_variables)]
pub trait Dialect {
    type State: Copy + std::fmt::Debug;

    /// A token for handler `s` (a `Frame::State(s)` on top, or `Read::State(s)`).
    fn token(&mut self, m: &mut Machine<Self::State>, s: Self::State, token: Token<'_>, offset: u64,
             cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("token", s))
    }
    /// A member's value (its first token) in an object read with `Read::Members(s, ..)`.
    fn member(&mut self, m: &mut Machine<Self::State>, s: Self::State, key: &[u8], token: Token<'_>,
              offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("member", s))
    }
    /// An element's first token in an array read with `Read::Elements(s, ..)`.
    fn element(&mut self, m: &mut Machine<Self::State>, s: Self::State, token: Token<'_>, offset: u64,
               cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("element", s))
    }
    /// An object begins in an array read with `Read::Objects(s, ..)`: push its
    /// key handler (`m.push(Frame::State(..))`), popped by it at the `}`.
    fn object(&mut self, m: &mut Machine<Self::State>, s: Self::State, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("object", s))
    }
    /// The end of the object or array of `Read::Members` / `Elements` / `Objects` (`on_end`);
    /// its frame is popped already. By default nothing happens (`on_end=None`).
    fn end(&mut self, m: &mut Machine<Self::State>, s: Self::State, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        Ok(())
    }
    /// A value read with `Read::Raw`: its compact JSON text; `offset`: its first byte.
    fn raw(&mut self, m: &mut Machine<Self::State>, s: Self::State, raw: &[u8], offset: u64,
           cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("raw", s))
    }
    /// A value read with `Read::Value`, as data; `offset`: its first byte.
    fn value(&mut self, m: &mut Machine<Self::State>, s: Self::State, value: Value, offset: u64,
             cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("value", s))
    }
    /// A fragment of `Read::String` (escaped bytes) or `Read::StreamRaw` (raw JSON text).
    fn fragment(&mut self, m: &mut Machine<Self::State>, s: Self::State, data: &[u8], init: bool, fin: bool,
                cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("fragment", s))
    }
    /// `KeyFirst`'s `start(value)` for `Machine::key_first(s, ..)`: the key's value
    /// (`None`: the object ended without it). Push the reader of the object's members
    /// (`m.push(Frame::Members(..))`): the tokens held so far are replayed into it next.
    fn key_first(&mut self, m: &mut Machine<Self::State>, s: Self::State, value: Option<Value>, offset: u64,
                 cx: &mut Cx<'_>) -> Result<()> {
        Err(unhandled("key_first", s))
    }
}

fn unhandled(what: &str, state: impl std::fmt::Debug) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the native core: state {state:?} takes no {what}"))
}

/// The pushdown machine (`decoding.Decoder`'s driving part): the stack, the
/// reader of the next token (`then`), the offset of the token being read, and
/// the one value being read whole (only one is ever open: its tokens are all
/// its own).
pub struct Machine<S> {
    stack: Vec<Frame<S>>,
    next: Option<Read<S>>,
    /// the token being handled goes on to this reader (`read`)
    redirect: Option<Read<S>>,
    /// `Decoder.at`: offset of the token being read
    pub at: u64,
    /// the key of the member whose value is due (`MemberReader.key`)
    key: Vec<u8>,
    /// the value being read whole, or the pending text of a streamed one
    whole: Vec<u8>,
    copier: RawValue,
    /// the value being read whole as data (`read_value`), built from its tokens, and
    /// the length of its compact text (no text is written)
    builder: ValueBuilder,
    data_len: RawLen,
    /// `stream_raw`: a fragment has been handed on
    stream_started: bool,
    /// the first string fragment of a feed, copied until the string's next
    /// fragment in the same feed or the feed's end (see `HeldFragment`)
    held: Option<HeldFragment<S>>,
    /// a chunk ended (`flush`): the next token is the first of a feed
    feed_start: bool,
    /// the token being routed is the first of its feed
    first_of_feed: bool,
    /// the object whose tokens wait for its key (`key_first`): one at a time (its
    /// tokens are all recorded, none is routed, until the key comes)
    key_first: Option<Box<KeyFirstState<S>>>,
}

/// Where a chunk boundary split an escape or a UTF-8 character inside a string,
/// the native tokenizer delivers the completed unit as a fragment of its own
/// before the fragment that borrows the new chunk; json.py delivers the two
/// joined (native/README.md, "Parity of string fragments"). A decoder's events
/// depend on fragment boundaries (`BlockBuilder` sends a fragment at once and
/// keeps only a string's last one), so the machine joins them back: a string
/// fragment that opens a feed is held (it is at most that completed unit plus
/// the rest of the chunk) and handed on joined with the next fragment of its
/// string in the same feed, or alone when the feed ends -- Python's boundaries.
/// Only a fragment of at most `CARRIED_MAX` bytes can be such a unit, so only
/// those are held (a larger first fragment goes on at once, uncopied).
/// The longest fragment the native tokenizer makes of carried bytes (json.rs: the
/// carry and a held character completed with the chunk's first `HEAD` bytes).
const CARRIED_MAX: usize = 26;

#[derive(Debug)]
struct HeldFragment<S> {
    state: S,
    data: Vec<u8>,
    init: bool,
    /// the token's offset (`at` while it is handed on, as Python's joined token)
    at: u64,
}

impl<S: Copy + std::fmt::Debug> Default for Machine<S> {
    fn default() -> Self {
        Machine::new()
    }
}

std::thread_local! {
    /// A dropped machine's `key` and `whole` buffers, for the next one (`crate::spare`).
    static SPARE_MACHINE: std::cell::Cell<Option<(Vec<u8>, Vec<u8>)>> = const { std::cell::Cell::new(None) };
}

impl<S> Drop for Machine<S> {
    fn drop(&mut self) {
        use crate::spare::small;
        if small(&self.key) && small(&self.whole) && self.whole.capacity() > 0 {
            let (mut key, mut whole) = (std::mem::take(&mut self.key), std::mem::take(&mut self.whole));
            key.clear();
            whole.clear();
            crate::spare::give(&SPARE_MACHINE, (key, whole));
        }
    }
}

impl<S: Copy + std::fmt::Debug> Machine<S> {
    pub fn new() -> Self {
        // (sized once: a raw read -- a usage object, a kept field -- grows `whole` from empty
        // otherwise), or the buffers a dropped machine left on this thread
        let (key, whole) = crate::spare::take(&SPARE_MACHINE).unwrap_or_else(|| (Vec::with_capacity(32), Vec::with_capacity(512)));
        Machine {
            stack: Vec::with_capacity(8),
            next: None,
            redirect: None,
            at: 0,
            key,
            whole,
            copier: RawValue::new(),
            builder: ValueBuilder::default(),
            data_len: RawLen::default(),
            stream_started: false,
            held: None,
            feed_start: false,
            first_of_feed: false,
            key_first: None,
        }
    }

    /// The machine for a document whose first token goes to `first` (a request decoder's `then(_body)`).
    pub fn starting(first: Read<S>) -> Self {
        let mut m = Machine::new();
        m.next = Some(first);
        m
    }

    pub fn push(&mut self, frame: Frame<S>) {
        self.stack.push(frame);
    }

    pub fn pop(&mut self) {
        self.stack.pop();
    }

    pub fn replace(&mut self, frame: Frame<S>) {
        if let Some(top) = self.stack.last_mut() {
            *top = frame;
        }
    }

    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// A new document (a stream's next frame): `first` reads its first token.
    pub fn restart(&mut self, first: Read<S>) {
        self.stack.clear();
        self.next = Some(first);
        self.redirect = None;
        self.held = None;
        self.key_first = None;
    }

    /// Read the next value with `read` (after a key): it gets the value's first
    /// token, ahead of the frame on top of the stack (`Decoder.then`).
    pub fn then(&mut self, read: Read<S>) {
        debug_assert!(self.next.is_none(), "then() twice before a token");
        self.next = Some(read);
    }

    /// Hand the token being handled to `read` once the handler returns (the
    /// handler's last step: Python's `self.d.read_string(kind, value, offset, ...)`).
    pub fn read(&mut self, read: Read<S>) {
        self.redirect = Some(read);
    }

    /// `Decoder.on_token`: route one token (inlined into each decoder's `token`: a layer of
    /// calls less per token).
    #[inline(always)]
    pub fn feed<D: Dialect<State = S>>(&mut self, dialect: &mut D, token: Token<'_>, offset: u64,
                                       cx: &mut Cx<'_>) -> Result<()> {
        self.at = offset;
        self.first_of_feed = std::mem::take(&mut self.feed_start);
        // `next` and `redirect` are tested in place before they are taken: a `Read` is
        // five words, and most tokens have neither (the frame on top reads them)
        if self.next.is_some() {
            let read = self.next.take();
            self.start_taken(dialect, read, token, offset, cx)?;
        } else if let Some(&Frame::Members(s)) = self.stack.last() {
            self.member_token(dialect, s, token, offset, cx)?; // (the usual frame: no call of `top`)
        } else {
            self.top(dialect, token, offset, cx)?;
        }
        while self.redirect.is_some() {
            let read = self.redirect.take();
            self.start_taken(dialect, read, token, offset, cx)?;
        }
        Ok(())
    }

    /// `feed` of a member's key and its value's first token (`json::Sink::member`): in an
    /// object read with `Read::Members` (the usual case) the value goes straight to
    /// `Dialect::member` with the key where the tokenizer has it -- no copy, one call for
    /// the two tokens; anywhere else they are fed one by one.
    #[inline(always)]
    pub fn feed_member<D: Dialect<State = S>>(&mut self, dialect: &mut D, key: &[u8], key_offset: u64,
                                              value: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let Some(&Frame::Members(s)) = self.stack.last().filter(|_| self.next.is_none()) else {
            self.feed(dialect, Token::Key(key), key_offset, cx)?;
            return self.feed(dialect, value, offset, cx);
        };
        // (what `feed` of the key then of the value leaves: the key was the feed's first token)
        self.at = offset;
        self.feed_start = false;
        self.first_of_feed = false;
        dialect.member(self, s, key, value, offset, cx)?;
        while self.redirect.is_some() {
            let read = self.redirect.take();
            self.start_taken(dialect, read, value, offset, cx)?;
        }
        Ok(())
    }

    /// The token to the reader taken from `next` (`then` announced it) or from `redirect`
    /// (a handler handed the token on); out of line: few tokens have one.
    #[inline(never)]
    fn start_taken<D: Dialect<State = S>>(&mut self, dialect: &mut D, read: Option<Read<S>>, token: Token<'_>,
                                          offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match read {
            Some(read) => self.start(dialect, read, token, offset, cx),
            None => Ok(()),
        }
    }

    /// `json::Sink::whole_text`: the container just opened belongs to a value whose tokens
    /// only the copier reads -- one read whole as text (`Read::Raw`), skipped, or streamed
    /// raw: the text's buffer, and how many bytes more it may take (a streamed value's
    /// are not counted). The closing bracket then comes as a token, the text before it
    /// already in the buffer (the tokenizer's `skim`), and is read as any token is.
    pub fn whole_text(&mut self, max_value_bytes: usize) -> Option<(&mut Vec<u8>, usize)> {
        let room = match self.stack.last()? {
            Frame::Whole { data: false, .. } | Frame::Skip { .. } => max_value_bytes.saturating_sub(self.whole.len()),
            Frame::RawStream(_) => usize::MAX,
            _ => return None,
        };
        Some((&mut self.whole, room))
    }

    /// `Decoder.flush`: raw text of a streamed value gathered in this chunk goes on.
    pub fn flush<D: Dialect<State = S>>(&mut self, dialect: &mut D, cx: &mut Cx<'_>) -> Result<()> {
        self.feed_start = true;
        self.record_pending(cx)?;
        if let Some(held) = self.held.take() {
            self.at = held.at;
            dialect.fragment(self, held.state, &held.data, held.init, false, cx)?;
        }
        let Some(&Frame::RawStream(state)) = self.stack.iter().rev().find(|f| matches!(f, Frame::RawStream(_)))
        else {
            return Ok(());
        };
        if self.whole.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.whole);
        let init = !self.stream_started;
        self.stream_started = true;
        let result = dialect.fragment(self, state, &data, init, false, cx);
        self.give_back(data);
        result
    }

    /// The chunk failed before its end (`Decode::interrupted`): a held string
    /// fragment goes on, as Python's tokenizer had delivered it before the fault.
    pub fn interrupted<D: Dialect<State = S>>(&mut self, dialect: &mut D, cx: &mut Cx<'_>) -> Result<()> {
        self.record_pending(cx)?;
        match self.held.take() {
            Some(held) => {
                self.at = held.at;
                dialect.fragment(self, held.state, &held.data, held.init, false, cx)
            }
            None => Ok(()),
        }
    }

    /// The buffer of a value read whole, back for reuse (its capacity kept).
    fn give_back(&mut self, mut data: Vec<u8>) {
        data.clear();
        if self.whole.is_empty() {
            self.whole = data;
        }
    }

    /// A value's first token, to the reader that reads it.
    fn start<D: Dialect<State = S>>(&mut self, d: &mut D, read: Read<S>, token: Token<'_>, offset: u64,
                                    cx: &mut Cx<'_>) -> Result<()> {
        match read {
            Read::State(s) => d.token(self, s, token, offset, cx),
            Read::Value(s, expect, what) => {
                cx.expect(&token, offset, expect, what)?;
                match token {
                    Token::String(_) | Token::Number(_) | Token::True | Token::False | Token::Null => {
                        cx.bound_scalar(&token, offset)?;
                        let value = Value::scalar(&token).unwrap_or(Ok(Value::Null)).map_err(|e| cx.located(e, offset))?;
                        d.value(self, s, value, offset, cx)
                    }
                    _ => self.begin_whole(d, s, token, offset, true, cx),
                }
            }
            Read::Raw(s, expect, what) => {
                cx.expect(&token, offset, expect, what)?;
                self.begin_whole(d, s, token, offset, false, cx)
            }
            Read::String(s, what) => match token {
                Token::String(data) => d.fragment(self, s, data, true, true, cx),
                Token::StringOpen(data) => {
                    self.push(Frame::String(s));
                    if self.first_of_feed && data.len() <= CARRIED_MAX {
                        self.held = Some(HeldFragment { state: s, data: data.to_vec(), init: true, at: offset });
                        return Ok(());
                    }
                    d.fragment(self, s, data, true, false, cx)
                }
                _ => Err(cx.wrong_type(&token, &format!("a string for {what}"), offset)),
            },
            Read::StreamRaw(s) => {
                self.whole.clear();
                self.copier = RawValue::new();
                if self.copier.feed(&token, &mut self.whole) {
                    return self.finish_stream(d, s, cx);
                }
                self.stream_started = false;
                self.push(Frame::RawStream(s));
                Ok(())
            }
            Read::Members(s, what) => match token {
                Token::ObjectStart => {
                    self.push(Frame::Members(s));
                    Ok(())
                }
                _ => Err(cx.wrong_type(&token, &format!("an object for {what}"), offset)),
            },
            Read::Elements(s, what) | Read::Objects(s, what) => match token {
                Token::ArrayStart => {
                    let objects = matches!(read, Read::Objects(..));
                    self.push(if objects { Frame::Objects(s, what) } else { Frame::Elements(s, what) });
                    Ok(())
                }
                _ => Err(cx.wrong_type(&token, &format!("an array for {what}"), offset)),
            },
            Read::Skip => match token {
                Token::ObjectStart | Token::ArrayStart | Token::StringOpen(_) => {
                    self.begin_copy(&token, offset, cx)?;
                    self.push(Frame::Skip { offset });
                    Ok(())
                }
                _ => cx.bound_scalar(&token, offset),
            },
            Read::Scalar(s, expect, what) => {
                if !is_scalar_start(&token) {
                    return Err(cx.error(format!("expected a scalar for {what}"), offset));
                }
                self.start(d, Read::Value(s, expect, what), token, offset, cx)
            }
            Read::Top => self.top(d, token, offset, cx),
        }
    }

    /// A copy of a value begun (`Skip`, `KeyValue`): the copier reset, the first
    /// token's text in, the budget checked (the value is not done: a container or a
    /// string in fragments).
    fn begin_copy(&mut self, token: &Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        self.whole.clear();
        self.copier = RawValue::new();
        self.copier.feed(token, &mut self.whole);
        if self.whole.len() > cx.session.options.max_value_bytes {
            return Err(cx.budget(offset));
        }
        Ok(())
    }

    /// A token of a value being copied (`Skip`, `KeyValue`): true when it completed it.
    fn copy_token(&mut self, token: &Token<'_>, first: u64, cx: &mut Cx<'_>) -> Result<bool> {
        let done = self.copier.feed(token, &mut self.whole);
        if self.whole.len() > cx.session.options.max_value_bytes {
            return Err(cx.budget(first));
        }
        Ok(done)
    }

    /// `read_raw` from the value's first token: a scalar is done at once.
    fn begin_whole<D: Dialect<State = S>>(&mut self, d: &mut D, s: S, token: Token<'_>, offset: u64, data: bool,
                                          cx: &mut Cx<'_>) -> Result<()> {
        self.whole.clear();
        self.copier = RawValue::new();
        if data {
            self.builder.reset();
            self.data_len.len = 0;
        }
        if self.whole_token(&token, offset, data, cx)? {
            return self.finish_whole(d, s, offset, data, cx);
        }
        self.push(Frame::Whole { state: s, offset, data });
        Ok(())
    }

    /// A token of a value read whole (its compact text counts against `max_value_bytes`;
    /// as data its `Value` is built too): true when it completed the value.
    fn whole_token(&mut self, token: &Token<'_>, first: u64, data: bool, cx: &mut Cx<'_>) -> Result<bool> {
        let (done, size) = if data {
            self.builder.feed(token);
            (self.copier.feed(token, &mut self.data_len), self.data_len.len)
        } else {
            (self.copier.feed(token, &mut self.whole), self.whole.len())
        };
        if size > cx.session.options.max_value_bytes {
            return Err(cx.budget(first));
        }
        Ok(done)
    }

    fn finish_whole<D: Dialect<State = S>>(&mut self, d: &mut D, s: S, offset: u64, data: bool,
                                           cx: &mut Cx<'_>) -> Result<()> {
        if data {
            let value = self.builder.finish().map_err(|e| cx.located(e, offset))?;
            return d.value(self, s, value, offset, cx);
        }
        let raw = std::mem::take(&mut self.whole);
        let result = d.raw(self, s, &raw, offset, cx);
        self.give_back(raw);
        result
    }

    fn finish_stream<D: Dialect<State = S>>(&mut self, d: &mut D, s: S, cx: &mut Cx<'_>) -> Result<()> {
        let data = std::mem::take(&mut self.whole);
        let init = !self.stream_started;
        self.stream_started = false;
        let result = d.fragment(self, s, &data, init, true, cx);
        self.give_back(data);
        result
    }

    /// A token for a `Frame::Members(s)` on top: keys remembered, values to `member`, `}` to `end`.
    #[inline(always)] // (a plain #[inline] was dropped by one build: +2% instructions on anthropic streams)
    fn member_token<D: Dialect<State = S>>(&mut self, d: &mut D, s: S, token: Token<'_>, offset: u64,
                                           cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::Key(key) => {
                self.key.clear();
                self.key.extend_from_slice(key);
                Ok(())
            }
            Token::ObjectEnd => {
                self.pop();
                d.end(self, s, offset, cx)
            }
            _ => {
                let key = std::mem::take(&mut self.key);
                let result = d.member(self, s, &key, token, offset, cx);
                self.key = key;
                result
            }
        }
    }

    /// A token for the frame on top of the stack.
    fn top<D: Dialect<State = S>>(&mut self, d: &mut D, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let Some(&frame) = self.stack.last() else {
            return Err(Error::new(ErrorClass::Transcode, "internal error in the native core: a token after the document"));
        };
        match frame {
            Frame::State(s) => d.token(self, s, token, offset, cx),
            Frame::Members(s) => self.member_token(d, s, token, offset, cx),
            Frame::Elements(s, _) => match token {
                Token::ArrayEnd => {
                    self.pop();
                    d.end(self, s, offset, cx)
                }
                _ => d.element(self, s, token, offset, cx),
            },
            Frame::Objects(s, what) => match token {
                Token::ObjectStart => d.object(self, s, offset, cx),
                Token::ArrayEnd => {
                    self.pop();
                    d.end(self, s, offset, cx)
                }
                _ => Err(cx.wrong_type(&token, &format!("an object in {what}"), offset)),
            },
            Frame::Whole { state, offset: first, data } => {
                if !self.whole_token(&token, first, data, cx)? {
                    return Ok(());
                }
                self.pop();
                self.at = first; // (what the value makes fails at its first byte, however cut)
                self.finish_whole(d, state, first, data, cx)
            }
            Frame::String(s) => match token {
                Token::StringPart(data) | Token::StringClose(data) => {
                    let fin = matches!(token, Token::StringClose(_));
                    if fin {
                        self.pop();
                    }
                    match self.held.take() {
                        Some(mut held) => {
                            held.data.extend_from_slice(data);
                            self.at = held.at;
                            d.fragment(self, s, &held.data, held.init, fin, cx)
                        }
                        None if self.first_of_feed && !fin && data.len() <= CARRIED_MAX => {
                            self.held = Some(HeldFragment { state: s, data: data.to_vec(), init: false, at: offset });
                            Ok(())
                        }
                        None => d.fragment(self, s, data, false, fin, cx),
                    }
                }
                _ => Err(unhandled("a token inside a string", s)),
            },
            Frame::RawStream(s) => {
                if !self.copier.feed(&token, &mut self.whole) {
                    return Ok(());
                }
                self.pop();
                self.finish_stream(d, s, cx)
            }
            Frame::Skip { offset: first } => {
                if self.copy_token(&token, first, cx)? {
                    self.pop();
                    self.whole.clear();
                    self.at = first;
                }
                Ok(())
            }
            Frame::KeyFirst(s) => self.key_first_token(d, s, token, offset, cx),
            Frame::KeyValue { offset: first } => {
                if !self.copy_token(&token, first, cx)? {
                    return Ok(());
                }
                self.pop();
                self.at = first;
                let raw = std::mem::take(&mut self.whole);
                let value = cx.data(&raw, first);
                self.give_back(raw);
                self.key_found(d, Some(value?), first, cx)
            }
        }
    }
}

// -- KeyFirst: an object whose member `key` says how to read the others ---------------------

/// `KeyFirst`'s state while its object's tokens wait for the key.
#[derive(Debug)]
struct KeyFirstState<S> {
    state: S,
    key: &'static str,
    expect: Option<Expect>,
    reason: &'static str,
    hold: Option<Hold<HeldToken>>,
    /// nesting inside the object (0: its own members)
    depth: i64,
    /// the key came: the next token is its value
    want_value: bool,
    /// a string fragment that opened a feed, kept to be joined with its string's next
    /// fragment in the same feed (as json.py delivers them: see `HeldFragment`)
    pending: Option<HeldToken>,
}

/// A token held owned (`KeyFirst`'s record), with its offset.
#[derive(Clone, Debug)]
struct HeldToken {
    kind: u8,
    bytes: Vec<u8>,
    offset: u64,
}

impl HeldToken {
    fn of(token: &Token<'_>, offset: u64) -> Self {
        HeldToken { kind: token.kind(), bytes: token.bytes().map(<[u8]>::to_vec).unwrap_or_default(), offset }
    }

    fn token(&self) -> Token<'_> {
        let b = self.bytes.as_slice();
        match self.kind {
            1 => Token::ObjectStart,
            2 => Token::ObjectEnd,
            3 => Token::ArrayStart,
            4 => Token::ArrayEnd,
            5 => Token::Key(b),
            6 => Token::String(b),
            7 => Token::StringOpen(b),
            8 => Token::StringPart(b),
            9 => Token::StringClose(b),
            10 => Token::Number(b),
            11 => Token::True,
            12 => Token::False,
            _ => Token::Null,
        }
    }

    /// What Python's hold counts: 16 + `len(value)` (a key is a `str`: code points), a string's
    /// later fragments (part, close) no 16: a string costs the same however it was cut.
    fn size(&self) -> u64 {
        let len = match self.kind {
            5 => self.bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count(),
            _ => self.bytes.len(),
        };
        let head = if matches!(self.kind, 8 | 9) { 0 } else { 16 };
        head + len as u64
    }

    /// Two fragments of one string in one feed, as json.py delivers them: one token.
    fn join(mut self, next: &Token<'_>) -> HeldToken {
        if let Some(bytes) = next.bytes() {
            self.bytes.extend_from_slice(bytes);
        }
        self.kind = match (self.kind, next) {
            (7, Token::StringClose(_)) => 6,    // open + close: a whole string
            (7, _) => 7,                        // open + part: still open
            (_, Token::StringClose(_)) => 9,    // part + close
            _ => 8,
        };
        self
    }
}

/// `_KEY_KINDS`: what a `KeyFirst` key's value may start with.
fn is_scalar_start(token: &Token<'_>) -> bool {
    matches!(token, Token::String(_) | Token::StringOpen(_) | Token::Number(_) | Token::Null | Token::True | Token::False)
}

impl<S: Copy + std::fmt::Debug> Machine<S> {
    /// Python `KeyFirst(decoder, key, start, reason, expect)`: reads an object whose
    /// member `key` says how to read the others. Call it after the object's `{` was
    /// consumed (in `object`, or a member's `token`); to hand the current token (a
    /// member's key that is not `key`) to it, end the handler with
    /// `m.read(Read::Top)`. Until `key` comes every token is recorded into a
    /// reorder-buffer hold (rule `reason`); when it comes (a scalar, `expect`:
    /// its type, errors naming `key`) `Dialect::key_first(s, Some(value))` pushes the
    /// reader of the object's members and the recorded tokens are replayed into it;
    /// an object that ends without `key` gets `key_first(s, None)`, the replay and
    /// then its `}`. Sources that put `key` first cost nothing (no hold is made).
    pub fn key_first(&mut self, state: S, key: &'static str, expect: Option<Expect>, reason: &'static str) {
        self.key_first = Some(Box::new(KeyFirstState {
            state,
            key,
            expect,
            reason,
            hold: None,
            depth: 0,
            want_value: false,
            pending: None,
        }));
        self.push(Frame::KeyFirst(state));
    }

    /// A token of the object a `KeyFirst` reads.
    fn key_first_token<D: Dialect<State = S>>(&mut self, d: &mut D, _s: S, token: Token<'_>, offset: u64,
                                              cx: &mut Cx<'_>) -> Result<()> {
        let Some(kf) = self.key_first.as_mut() else {
            return Err(unhandled("a KeyFirst token without its state", _s));
        };
        if kf.want_value {
            let (key, expect) = (kf.key, kf.expect);
            self.record_pending(cx)?;
            if !is_scalar_start(&token) {
                return Err(cx.error(format!("expected a scalar for {key}"), offset));
            }
            cx.expect(&token, offset, expect, key)?;
            if let Some(value) = Value::scalar(&token) {
                cx.bound_scalar(&token, offset)?;
                let value = value.map_err(|e| cx.located(e, offset))?;
                return self.key_found(d, Some(value), offset, cx);
            }
            self.begin_copy(&token, offset, cx)?;
            self.push(Frame::KeyValue { offset });
            return Ok(());
        }
        if kf.depth == 0 {
            match token {
                Token::Key(k) if k == kf.key.as_bytes() => {
                    kf.want_value = true;
                    return self.record_pending(cx);
                }
                Token::ObjectEnd => {
                    self.record_pending(cx)?;
                    self.key_found(d, None, offset, cx)?;
                    return self.feed(d, token, offset, cx);
                }
                _ => {}
            }
        }
        match token {
            Token::ObjectStart | Token::ArrayStart => kf.depth += 1,
            Token::ObjectEnd | Token::ArrayEnd => kf.depth -= 1,
            _ => {}
        }
        self.record(token, offset, cx)
    }

    /// Record one token of a `KeyFirst`'s object (a string fragment that opened the
    /// feed waits for the next one, to be joined as json.py delivers them).
    fn record(&mut self, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let first_of_feed = self.first_of_feed;
        let Some(kf) = self.key_first.as_mut() else { return Ok(()) };
        if let Some(pending) = kf.pending.take() {
            if matches!(token, Token::StringPart(_) | Token::StringClose(_)) {
                let joined = pending.join(&token);
                return self.commit(joined, cx);
            }
            self.commit(pending, cx)?;
        }
        let Some(kf) = self.key_first.as_mut() else { return Ok(()) };
        let carried = matches!(token, Token::StringOpen(b) | Token::StringPart(b) if b.len() <= CARRIED_MAX);
        if first_of_feed && carried {
            kf.pending = Some(HeldToken::of(&token, offset));
            return Ok(());
        }
        self.commit(HeldToken::of(&token, offset), cx)
    }

    /// The pending fragment into the hold (the feed ended, or another token came).
    fn record_pending(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        match self.key_first.as_mut().and_then(|kf| kf.pending.take()) {
            Some(pending) => self.commit(pending, cx),
            None => Ok(()),
        }
    }

    fn commit(&mut self, held: HeldToken, cx: &mut Cx<'_>) -> Result<()> {
        let Some(kf) = self.key_first.as_mut() else { return Ok(()) };
        let reason = kf.reason;
        let size = held.size();
        self.at = held.offset; // a budget error is at the token Python was recording
        let hold = kf.hold.get_or_insert_with(|| cx.session.reorder.hold(reason));
        hold.append(&mut cx.session.reorder, held, size)
    }

    /// `_found(value)` / the object's end without the key: the frame goes, the
    /// dialect pushes its reader, the recorded tokens are replayed into it.
    fn key_found<D: Dialect<State = S>>(&mut self, d: &mut D, value: Option<Value>, offset: u64,
                                        cx: &mut Cx<'_>) -> Result<()> {
        let Some(kf) = self.key_first.take() else {
            return Err(Error::new(ErrorClass::Transcode, "internal error in the native core: KeyFirst without its state"));
        };
        if matches!(self.stack.last(), Some(Frame::KeyFirst(_))) {
            self.pop();
        }
        d.key_first(self, kf.state, value, offset, cx)?;
        let Some(mut hold) = kf.hold else { return Ok(()) };
        let held: Vec<HeldToken> = hold.drain(&mut cx.session.reorder).collect();
        for token in &held {
            self.feed(d, token.token(), token.offset, cx)?;
        }
        Ok(())
    }
}

// -- value readers ------------------------------------------------------------------

/// `decoding._data`: compact JSON as data (json.loads), a lone surrogate refused.
/// A dialect's decoder: its machine and its data, run as a `Decode` (the one forwarding
/// impl the request decoders share: each is `MachineDecoder<ItsData>`). The stream hooks
/// keep `Decode`'s defaults (the Python base's); a decoder that needs its own writes its impl.
pub struct MachineDecoder<D: Dialect> {
    pub(crate) m: Machine<D::State>,
    pub(crate) d: D,
}

impl<D: Dialect> Decode for MachineDecoder<D> {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()> {
        self.m.feed(&mut self.d, token, offset, &mut Cx::new(path, session, out))
    }

    fn member(&mut self, key: &[u8], key_offset: u64, value: Token<'_>, offset: u64, path: &Frames,
              session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.m.feed_member(&mut self.d, key, key_offset, value, offset, &mut Cx::new(path, session, out))
    }

    fn whole_text(&mut self, max_value_bytes: usize) -> Option<(&mut Vec<u8>, usize)> {
        self.m.whole_text(max_value_bytes)
    }

    fn flush(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.m.flush(&mut self.d, &mut Cx::outside(session, out))
    }

    /// (helper D) the chunk failed: a string fragment the machine held to join goes on
    /// (Python's tokenizer had delivered it before the fault).
    fn interrupted(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.m.interrupted(&mut self.d, &mut Cx::outside(session, out))
    }

    fn at(&self) -> u64 {
        self.m.at
    }
}

/// The path of member `key` under `prefix` (`f"$.messages[{i}].{key}"`), WTF-8 as the
/// decoded key is: a key may hold an escaped lone surrogate (`Extension.path`).
pub fn member_path(prefix: std::fmt::Arguments<'_>, key: &[u8]) -> Vec<u8> {
    let mut path = std::fmt::format(prefix).into_bytes();
    path.extend_from_slice(key);
    path
}

fn parse_value(raw: &[u8]) -> Result<Value> {
    Value::parse(raw)
}

/// `json.loads(raw)`: any value, a lone surrogate kept (the controls' `json.loads`).
pub fn loads(raw: &[u8]) -> Result<Value> {
    Value::loads(raw)
}

/// `jsonwriter.dumps(value)` (value.rs) and `dumps(text)` of a string (WTF-8: a key, a
/// role, a name), under the names the decoders use.
pub use crate::value::{dumps, dumps_str as dumps_key};

// -- canonical output helpers ---------------------------------------------------------

/// A block attribute: its name and its value's compact JSON (`dumps(value)`; a constant
/// one, a source path, borrowed: no copy into the attributes and none into the block).
pub type Attr = (Cow<'static, str>, Cow<'static, [u8]>);

/// `dict.__setitem__` on attributes kept as a list: a name set again keeps its place.
pub fn set_attr(attrs: &mut Vec<Attr>, name: Cow<'static, str>, json: impl Into<Cow<'static, [u8]>>) {
    let json = json.into();
    match attrs.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = json,
        None => attrs.push((name, json)),
    }
}

/// `index_at`: whether a tool call's `index` member (as data) is the call's 0-based `position`
/// among its message's calls: an integer (not a boolean, not `0.0`) equal to it
/// (`losses::CALL_INDEX`).
pub fn index_at(value: &Value, position: usize) -> bool {
    matches!(value, Value::Int(text) if *text == position.to_string())
}

/// `carries_nothing(raw)`: a message member's raw JSON that carries nothing -- null, or an
/// empty list or object (openai's `annotations: []` on every assistant message an SDK hands back).
pub fn carries_nothing(raw: &[u8]) -> bool {
    matches!(raw, b"null" | b"[]" | b"{}")
}

/// `beside_function`: the members beside a wrapped tool's `type` and `function` (openai,
/// ollama) into `attrs`: one of `carried` is the tool's attribute of its name (openai
/// `cache_control`, as an anthropic tool's), the others `extra_attr` (their JSON members,
/// written back beside the function by their own dialect, a loss at their own path in another).
pub fn beside_function<'a, D: Data<'a>>(members: &[(Key<'a>, D)], attrs: &mut Vec<Attr>, extra_attr: &'static str,
                                        carried: &[&'static str]) {
    keep_members(members, attrs, extra_attr, carried, &["type", "function"]);
}

/// `keep_members`: an object's members into a block's `attrs`: one of `carried` is the
/// attribute of its name, one of `skipped` the reader's own (read apart), the others
/// `extra_attr` -- their JSON text (`"k":v,...`), written back by their own dialect, a loss at
/// their own path in another.
pub fn keep_members<'a, D: Data<'a>>(members: &[(Key<'a>, D)], attrs: &mut Vec<Attr>, extra_attr: &'static str,
                                     carried: &[&'static str], skipped: &[&str]) {
    let mut extra = Vec::new();
    for &(key, value) in members {
        if let Some(&name) = carried.iter().find(|name| key.is(name)) {
            set_attr(attrs, Cow::Borrowed(name), value.to_json());
        } else if !skipped.iter().any(|name| key.is(name)) {
            push_member(&mut extra, key, value);
        }
    }
    if !extra.is_empty() {
        let mut json = Vec::with_capacity(extra.len() + 8);
        dumps_key(&extra, &mut json);
        set_attr(attrs, Cow::Borrowed(extra_attr), json);
    }
}

pub fn get_attr<'x>(attrs: &'x [Attr], name: &str) -> Option<&'x [u8]> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_ref())
}

/// Attributes as a block carries them (`attrs or None`).
pub fn block_attrs<'a>(attrs: &[Attr]) -> Option<Vec<(Cow<'a, str>, Cow<'a, [u8]>)>> {
    if attrs.is_empty() {
        return None;
    }
    Some(attrs.iter().map(|(n, v)| (n.clone(), v.clone())).collect())
}

/// `decoding.BlockBuilder`: one block's fragments; the last is kept until `close()`, never
/// the first: a payload that came whole goes out as it came, `close()` adds an empty last
/// fragment (when a block starts is where its payload begins, however the body was cut:
/// rpt/ollama-result-images-any-cut).
///
/// Attributes set before the payload began ride on the first fragment; those
/// set after it began (a `detail` after the `url`, a `name` after `arguments`
/// when keys are sorted) ride on the last one. "Began" is the source's key
/// order, not the chunking: the events are the same however the input was cut.
/// Keeping only the last fragment back costs at most one chunk. The builder
/// returns the blocks to emit (the caller routes them: gate, role); Python's
/// `done` callback is the caller acting on `fin`.
///
/// While its events would wait, what it keeps back counts in the gate they would wait
/// in (`count_in`; Python's `recount`): the caller recounts after a `fragment` that
/// `recounts` (`MessageBase::recount`) and uncounts before `close` (`uncount`).
#[derive(Clone, Debug)]
pub struct BlockBuilder {
    pub section: Section,
    pub message: i64,
    pub attrs: Vec<Attr>,
    pub late: Vec<Attr>,
    /// the payload has begun (in source order)
    pub begun: bool,
    /// the first fragment has been emitted
    pub started: bool,
    /// the kept last fragment (Python's `builder.last is not None`: `has_last`); the
    /// buffer is the thread's spare one (`SPARE_LAST`) while the builder lives
    last: Vec<u8>,
    has_last: bool,
    /// where what it keeps back is counted (Python's `_keeper`, `_counted`)
    counted: Option<Counted>,
}

/// Bytes a builder keeps back, counted in a gate (named by its id: a gate released
/// since gave them back with the rest).
#[derive(Clone, Copy, Debug)]
pub struct Counted {
    gate: u64,
    size: u64,
}

std::thread_local! {
    /// The buffer of a closed builder's last fragment, for the next builder: a text
    /// block's last fragment is often a whole chunk, and a malloc of that size (with
    /// the heap consolidation it sets off) costs more than the copy into it.
    static SPARE_LAST: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest spare buffer a thread keeps (memory stays bounded by a chunk).
const SPARE_LAST_MAX: usize = 64 << 10;

impl Drop for BlockBuilder {
    fn drop(&mut self) {
        if self.last.capacity() > 0 && self.last.capacity() <= SPARE_LAST_MAX {
            let last = std::mem::take(&mut self.last);
            SPARE_LAST.with(|spare| spare.set(last));
        }
    }
}

impl BlockBuilder {
    pub fn new(section: Section, message: i64, attrs: Vec<Attr>) -> Self {
        let last = SPARE_LAST.with(std::cell::Cell::take);
        BlockBuilder { section, message, attrs, late: Vec::new(), begun: false, started: false, last, has_last: false, counted: None }
    }

    /// Whether `fragment(_, fin)` can change what is kept back and counted: recount after it.
    pub fn recounts(&self, fin: bool) -> bool {
        fin || self.counted.is_some()
    }

    /// `_uncount`: what was counted goes to `give_back`, to be given back where it was
    /// (`Gate::uncount`; a gate that opened since released it with the rest).
    pub fn uncount(&mut self, give_back: impl FnOnce(Counted)) {
        if let Some(counted) = self.counted.take() {
            give_back(counted);
        }
    }

    /// Counts what is kept back in `gate`, the one its events would wait in now (as the
    /// block it will be counts there: `event_size`).
    pub fn count_in(&mut self, gate: &mut Gate, session: &mut Session) -> Result<()> {
        if !self.has_last {
            return Ok(());
        }
        let size = self.last.len() as u64 + if self.started { 0 } else { EVENT_OVERHEAD };
        gate.keep(size, session)?;
        self.counted = Some(Counted { gate: gate.id, size });
        Ok(())
    }

    /// `fragment(data, init, fin)`: the block to emit now, if any (a `fin` fragment is kept,
    /// but a payload's start goes out: `first_of_last`).
    pub fn fragment<'d>(&mut self, data: &'d [u8], fin: bool) -> Option<Block<'d>> {
        self.begun = true;
        if fin {
            if !self.has_last {
                self.last.clear();
                self.has_last = true;
            }
            if self.started || (self.last.is_empty() && data.is_empty()) {
                self.last.extend_from_slice(data);
                return None;
            }
            return Some(self.first_of_last(data));
        }
        let payload: Cow<'d, [u8]> = if self.has_last {
            // a payload in several values (raw parts)
            self.has_last = false;
            let mut joined = std::mem::take(&mut self.last);
            joined.extend_from_slice(data);
            Cow::Owned(joined)
        } else {
            Cow::Borrowed(data)
        };
        let attrs = if self.started { None } else { block_attrs(&self.attrs) };
        let block = Block { section: self.section, message: self.message, payload, init: !self.started, fin: false, attrs };
        self.started = true;
        Some(block)
    }

    /// A whole payload (kept, then `data`) is the block's first fragment: it goes out as it
    /// would in pieces, and an empty last fragment is kept for `close` (Python's `fragment`).
    fn first_of_last<'d>(&mut self, data: &'d [u8]) -> Block<'d> {
        let payload: Cow<'d, [u8]> = if self.last.is_empty() {
            Cow::Borrowed(data)
        } else {
            let mut joined = std::mem::take(&mut self.last);
            joined.extend_from_slice(data);
            Cow::Owned(joined)
        };
        self.started = true;
        Block { section: self.section, message: self.message, payload, init: true, fin: false, attrs: block_attrs(&self.attrs) }
    }

    /// `set(key, value)`: `json` is `dumps(value)`.
    pub fn set(&mut self, name: impl Into<Cow<'static, str>>, json: impl Into<Cow<'static, [u8]>>) {
        let attrs = if self.begun { &mut self.late } else { &mut self.attrs };
        set_attr(attrs, name.into(), json);
    }

    /// `close()`: the last fragment (and, when late attributes came before any
    /// fragment went out, a second one carrying them); it borrows the builder's buffer.
    pub fn close(&mut self) -> (Block<'_>, Option<Block<'_>>) {
        let kept = std::mem::take(&mut self.has_last);
        let last = Cow::Borrowed(if kept { &self.last[..] } else { &b""[..] });
        let block = |payload, init, fin, attrs| Block { section: self.section, message: self.message, payload, init, fin, attrs };
        let closed = if !self.started && !self.late.is_empty() {
            // Late attributes stay on a last fragment of their own, as they
            // would have had the payload arrived in pieces.
            (block(last, true, false, block_attrs(&self.attrs)), Some(block(Cow::Borrowed(&b""[..]), false, true, block_attrs(&self.late))))
        } else if !self.started {
            (block(last, true, true, block_attrs(&self.attrs)), None)
        } else {
            (block(last, false, true, block_attrs(&self.late)), None)
        };
        self.started = true;
        closed
    }
}

// -- (helper AD) what the anthropic request decoder needs of BlockBuilder --------------

impl BlockBuilder {
    /// Python's `builder.last is not None`: a final fragment is kept for `close` (the
    /// tool_result reader asks whether its head block has a payload yet).
    pub fn has_last(&self) -> bool {
        self.has_last
    }
}

/// `decoding.EVENT_OVERHEAD`: what a held event costs the reorder budget beyond its
/// payload (a block's: once).
pub const EVENT_OVERHEAD: u64 = 64;

/// `decoding.event_size`: what a held event counts against the reorder budget -- its
/// payload, and `EVENT_OVERHEAD` once per block (at its first fragment: a block cut into
/// more fragments by smaller chunks costs the same).
pub fn event_size(event: &Event<'_>) -> u64 {
    match event {
        Event::Block(block) if !block.init => block.payload.len() as u64,
        Event::Block(block) => block.payload.len() as u64 + EVENT_OVERHEAD,
        _ => EVENT_OVERHEAD,
    }
}

/// `decoding.Gate`: events that wait for what decides them (a message's
/// `role`; a response's `id`/`model`). Until `release` they go into a
/// reorder-buffer hold (owned), then straight through.
#[derive(Debug)]
pub struct Gate {
    reason: &'static str,
    pub open: bool,
    hold: Option<Hold<Event<'static>>>,
    /// what names it to the builders that counted bytes in it (`Counted`): unique
    id: u64,
}

/// The next gate's id.
static NEXT_GATE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Gate {
    pub fn new(reason: &'static str) -> Self {
        let id = NEXT_GATE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Gate { reason, open: false, hold: None, id }
    }

    /// `keep(size)`: counts bytes kept back for events that will come through here (a
    /// block builder's last fragment) while shut; released with the rest.
    pub fn keep(&mut self, size: u64, session: &mut Session) -> Result<()> {
        if self.open {
            return Ok(());
        }
        let reason = self.reason;
        let hold = self.hold.get_or_insert_with(|| session.reorder.hold(reason));
        hold.count(&mut session.reorder, size)
    }

    /// `keep(-size)` of what a builder counted here (false: it was counted elsewhere).
    pub fn uncount(&mut self, counted: Counted, session: &mut Session) -> bool {
        if counted.gate != self.id {
            return false;
        }
        if let (false, Some(hold)) = (self.open, self.hold.as_mut()) {
            hold.uncount(&mut session.reorder, counted.size);
        }
        true
    }

    /// Hold `event` (the gate is closed; the caller emits directly when it is open).
    pub fn hold(&mut self, event: Event<'_>, session: &mut Session) -> Result<()> {
        let size = event_size(&event);
        let reason = self.reason;
        let hold = self.hold.get_or_insert_with(|| session.reorder.hold(reason));
        hold.append(&mut session.reorder, into_owned(event), size)
    }

    /// `release()`: the held events, in order, to `emit`; later ones go straight.
    pub fn release(&mut self, cx: &mut Cx<'_>, mut emit: impl FnMut(Event<'static>, &mut Cx<'_>) -> Result<()>) -> Result<()> {
        if self.open {
            return Ok(());
        }
        self.open = true;
        if let Some(mut hold) = self.hold.take() {
            let held: Vec<Event<'static>> = hold.drain(&mut cx.session.reorder).collect();
            for event in held {
                emit(event, cx)?;
            }
        }
        Ok(())
    }
}

/// An event owning its bytes (to hold it past the chunk).
pub fn into_owned(event: Event<'_>) -> Event<'static> {
    fn own<T: ToOwned + ?Sized>(c: Cow<'_, T>) -> Cow<'static, T> {
        Cow::Owned(c.into_owned())
    }
    fn own_opt<T: ToOwned + ?Sized>(c: Option<Cow<'_, T>>) -> Option<Cow<'static, T>> {
        c.map(own)
    }
    match event {
        Event::Block(block) => Event::Block(block.into_owned()),
        Event::Control(c) => Event::Control(crate::canonical::Control {
            name: own(c.name),
            value: own(c.value),
            dialect: own_opt(c.dialect),
            key: own_opt(c.key),
            raw: own_opt(c.raw),
        }),
        Event::Extension(e) => Event::Extension(Extension {
            dialect: own(e.dialect),
            path: own(e.path),
            raw: own(e.raw),
            message: e.message,
            lossless: e.lossless,
        }),
        Event::SystemEnd => Event::SystemEnd,
        Event::MessagesEnd => Event::MessagesEnd,
        Event::MessageStart { id, model, choice } => Event::MessageStart { id: own_opt(id), model: own_opt(model), choice },
        Event::Finish { reason, stop_sequence, choice } => {
            Event::Finish { reason: own_opt(reason), stop_sequence: own_opt(stop_sequence), choice }
        }
        Event::Usage(usage) => Event::Usage(usage),
        Event::Logprobs { raw, choice } => Event::Logprobs { raw: own(raw), choice },
        Event::Error { kind, message, status } => Event::Error { kind: own(kind), message: own(message), status },
        Event::End => Event::End,
        Event::FrameEnd => Event::FrameEnd,
    }
}

// -- the request frame ----------------------------------------------------------------

/// `RequestBodyDecoder`'s state: the body object whose members the dialect
/// reads, a message list numbered by position, and the markers -- `SystemEnd`
/// (at the body's start for dialects whose system is a list message, else when
/// the dialect says), `MessagesEnd`, `End`.
///
/// Use: the dialect's machine starts with `Machine::starting(Read::State(S::Start))`;
/// `token(S::Start)` calls `body.start(m, S::Body, token, offset, cx)` (the `{`,
/// `SystemEnd`, the members frame); `member(S::Body, key, ..)` calls
/// `body.seen(key)` first; `end(S::Body)` calls `body.end(offset, cx)?`, the
/// dialect's own `_body_ending` events, then `body.finish(cx)` (the `End`).
/// Messages: `Read::Objects(S::Messages, "messages")`; `object(S::Messages)`
/// takes `body.next_message()` as the index and pushes the message's handler;
/// `end(S::Messages)` calls `body.messages_end(cx)`.
#[derive(Clone, Debug)]
pub struct RequestBody {
    /// members the dialect's request cannot go without (`dialects/fields.REQUIRED`)
    pub required: &'static [&'static str],
    /// False: a top-level system may come anywhere (anthropic)
    pub system_in_list: bool,
    message_index: i64,
    system_done: bool,
    messages_done: bool,
    /// which of `required` were seen (bit i: `required[i]`)
    seen: u64,
    /// `_element_counts`: elements seen of each top-level array (tools, functions)
    element_counts: Vec<(&'static str, u64)>,
}

impl RequestBody {
    pub fn new(required: &'static [&'static str], system_in_list: bool) -> Self {
        RequestBody {
            required, system_in_list, message_index: -1, system_done: false, messages_done: false, seen: 0,
            element_counts: Vec::new(),
        }
    }

    /// `next_element_path`: `$.<key>[i]` of the next element of a top-level array (a tool),
    /// counted as they come: a tool definition's source path, for its losses (attr `path`).
    pub fn next_element_path(&mut self, key: &'static str) -> String {
        let index = match self.element_counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, count)) => {
                *count += 1;
                *count - 1
            }
            None => {
                self.element_counts.push((key, 1));
                0
            }
        };
        format!("$.{key}[{index}]")
    }

    /// `_body`: the body's first token must be `{` (its members go to `state`,
    /// a `Frame::Members`); `SystemEnd` goes out at once when the system is a list message.
    pub fn start<S: Copy + std::fmt::Debug>(&mut self, m: &mut Machine<S>, state: S, token: &Token<'_>, offset: u64,
                                            cx: &mut Cx<'_>) -> Result<()> {
        if !matches!(token, Token::ObjectStart) {
            return Err(cx.wrong_type(token, "an object for the request body", offset));
        }
        m.push(Frame::Members(state));
        if self.system_in_list {
            self.system_end(cx)?;
        }
        Ok(())
    }

    /// `_top_seen`: a body member's key.
    pub fn seen(&mut self, key: &[u8]) {
        if let Some(i) = self.required.iter().position(|r| r.as_bytes() == key) {
            self.seen |= 1 << i;
        }
    }

    /// `_body_end` up to its hook: required members (at the body's closing
    /// brace, offset `at`), `SystemEnd`, `MessagesEnd`.
    pub fn end(&mut self, at: u64, cx: &mut Cx<'_>) -> Result<()> {
        for (i, member) in self.required.iter().enumerate() {
            if self.seen & (1 << i) == 0 {
                return Err(cx.missing(member, "the request body", at));
            }
        }
        self.system_end(cx)?;
        self.messages_end(cx)
    }

    /// The rest of `_body_end`, after the dialect's `_body_ending` events: `End`.
    pub fn finish(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        cx.emit(Event::End)
    }

    pub fn system_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if !self.system_done {
            self.system_done = true;
            cx.emit(Event::SystemEnd)?;
        }
        Ok(())
    }

    /// `_message`: the index of the message that begins.
    pub fn next_message(&mut self) -> i64 {
        self.message_index += 1;
        self.message_index
    }

    pub fn messages_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if !self.messages_done {
            self.messages_done = true;
            cx.emit(Event::MessagesEnd)?;
        }
        Ok(())
    }
}

/// `MessageReaderBase`: what the request decoders' message readers share -- a
/// message's blocks wait for its `role` (sources that sort keys put it after
/// `content`). Until the role is known blocks go into a `Gate` (reason
/// `<dialect>:content-before-role`); `resolve` (the dialect's `_resolve`) gives
/// each block its role's form on the way out. Most sources put the role first:
/// then no hold is made and blocks go straight out.
#[derive(Debug)]
pub struct MessageBase {
    pub index: i64,
    pub role: Option<String>,
    gate: Option<Gate>,
    /// a block of this message has gone out (or is held)
    pub emitted: bool,
    hold_reason: &'static str,
    /// the roles the dialect accepts (None: any string)
    known_roles: Option<&'static [&'static str]>,
    /// once the role is known, the rule blocks still wait by (the dialect says while:
    /// openai's tool message in a request with custom calls, until its call id), and
    /// the gate they wait in
    pub awaits: Option<&'static str>,
    then: Option<Gate>,
}

impl MessageBase {
    pub fn new(index: i64, hold_reason: &'static str, known_roles: Option<&'static [&'static str]>) -> Self {
        MessageBase { index, role: None, gate: None, emitted: false, hold_reason, known_roles, awaits: None, then: None }
    }

    /// `emit(block)`: straight out (resolved) when the role is known and nothing else is
    /// awaited, else held (unresolved).
    pub fn emit<'e>(&mut self, block: Block<'e>, cx: &mut Cx<'_>,
                    resolve: impl FnOnce(&str, Block<'e>) -> Block<'e>) -> Result<()> {
        self.emitted = true;
        if self.gate.is_none() && self.role.is_some() && self.awaits.is_none() {
            let role = self.role.as_deref().unwrap_or_default();
            return cx.emit(Event::Block(resolve(role, block)));
        }
        match self.waiting() {
            Some(gate) => gate.hold(Event::Block(block), cx.session),
            None => Ok(()),
        }
    }

    /// `waiting()`: the gate this message's blocks would wait in now (the role's while it
    /// is unknown, then the awaited one's, if any).
    pub fn waiting(&mut self) -> Option<&mut Gate> {
        if self.role.is_none() {
            let reason = self.hold_reason;
            return Some(self.gate.get_or_insert_with(|| Gate::new(reason)));
        }
        let reason = self.awaits?;
        Some(self.then.get_or_insert_with(|| Gate::new(reason)))
    }

    /// Gives back what a builder counted in this message's gates (if there, still shut).
    pub fn uncount(&mut self, counted: Counted, session: &mut Session) {
        for gate in [self.gate.as_mut(), self.then.as_mut()].into_iter().flatten() {
            if gate.uncount(counted, session) {
                return;
            }
        }
    }

    /// What was awaited is known: the blocks held for it go out (resolved), later ones straight.
    pub fn release_awaited(&mut self, cx: &mut Cx<'_>,
                           mut resolve: impl FnMut(&str, Block<'static>) -> Block<'static>) -> Result<()> {
        self.awaits = None;
        if let Some(mut gate) = self.then.take() {
            let role = self.role.clone().unwrap_or_default();
            gate.release(cx, |event, cx| match event {
                Event::Block(block) => cx.emit(Event::Block(resolve(&role, block))),
                other => cx.emit(other),
            })?;
        }
        Ok(())
    }

    /// `BlockBuilder.recount` for a builder whose events wait where this message's do.
    pub fn recount(&mut self, builder: &mut BlockBuilder, session: &mut Session) -> Result<()> {
        builder.uncount(|counted| self.uncount(counted, session));
        match self.waiting() {
            Some(gate) => builder.count_in(gate, session),
            None => Ok(()),
        }
    }

    /// `_set_role`: the role is read: checked, then held blocks go out
    /// (resolved), later ones go straight.
    pub fn set_role(&mut self, role: Value, offset: u64, cx: &mut Cx<'_>,
                    mut resolve: impl FnMut(&str, Block<'static>) -> Block<'static>) -> Result<()> {
        let Value::Str(role) = role else {
            return Err(cx.error("expected a string for role", offset));
        };
        let role = String::from_utf8(role).map_err(|_| cx.error("expected a string for role", offset))?;
        if let Some(known) = self.known_roles {
            if !known.contains(&role.as_str()) {
                return Err(cx.error(format!("unknown message role {}", py_str_repr(role.as_bytes())), offset));
            }
        }
        self.role = Some(role);
        if let Some(mut gate) = self.gate.take() {
            let role = self.role.clone().unwrap_or_default();
            let (awaits, then) = (self.awaits, &mut self.then);
            gate.release(cx, |event, cx| match (event, awaits) {
                // out of the role's gate into the awaited one (resolved when that opens)
                (Event::Block(block), Some(reason)) => {
                    then.get_or_insert_with(|| Gate::new(reason)).hold(Event::Block(block), cx.session)
                }
                (Event::Block(block), None) => cx.emit(Event::Block(resolve(&role, block))),
                (other, _) => cx.emit(other),
            })?;
        }
        Ok(())
    }
}

// -- the response frame (`ResponseDecoderBase`) ---------------------------------------------

/// `decoding.ResponseDecoderBase`: what the response and stream decoders share --
/// content waits (a `Gate`) until the message can start (a source that sorts keys
/// puts `id`/`model` after it), and the `MessageStart` goes out first.
///
/// Use: a field `base: ResponseBase` made with the hold's rule
/// (`"<dialect>:content-before-<wait_for>"`, Python's `wait_for` is `"id"` by
/// default); every event that must follow the message start goes through
/// `base.out(event, cx)` (Python `self.out`); `base.id` / `base.model` are set as
/// they are read; `base.start_message(cx, |cx| ..)` sends what the dialect's
/// `_starting` hook sends, then `MessageStart(id, model)`, then what the gate held
/// (once: later calls do nothing); `base.release(cx)` opens the gate without a
/// start (`self.gate.release()`: an error needs no id). The stream hooks
/// (`framing`, `begin_frame`, `end_frame`, `frame_text`, `missing_terminator`)
/// are `Decode`'s methods; `Machine::restart` is Python's `restart`.
#[derive(Debug)]
pub struct ResponseBase {
    pub gate: Gate,
    pub id: Option<String>,
    pub model: Option<String>,
    pub started: bool,
    pub errored: bool,
}

impl ResponseBase {
    pub fn new(hold_reason: &'static str) -> Self {
        ResponseBase { gate: Gate::new(hold_reason), id: None, model: None, started: false, errored: false }
    }

    /// `out(event)`: an event that must follow the message start.
    pub fn out(&mut self, event: Event<'_>, cx: &mut Cx<'_>) -> Result<()> {
        if self.gate.open {
            return cx.emit(event);
        }
        self.gate.hold(event, cx.session)
    }

    /// `start_message()`: `starting` (the `_starting` hook: what goes out just
    /// before), `MessageStart`, then the held events.
    pub fn start_message(&mut self, cx: &mut Cx<'_>, starting: impl FnOnce(&mut Cx<'_>) -> Result<()>) -> Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        starting(cx)?;
        // (handed over, not copied: the encoder keeps them, and a decoder reads them only
        // to know whether to start, which it did)
        let (id, model) = (self.id.take().map(Cow::Owned), self.model.take().map(Cow::Owned));
        cx.emit(Event::MessageStart { id, model, choice: 0 })?;
        self.release(cx)
    }

    /// `gate.release()`: the held events go out, later ones straight.
    pub fn release(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.gate.release(cx, |event, cx| cx.emit(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Tokenizer;
    use crate::session::{Kind, Options};

    fn options() -> Options {
        Options {
            strict: false,
            reorder_budget: 1 << 20,
            refuse_reorder: false,
            openai_reasoning_field: None,
            default_max_tokens: 4096,
            max_depth: 128,
            max_value_bytes: 64,
            tool_names: None,
            anthropic_thinking: "auto".into(),
            anthropic_thinking_budgets: None,
            ollama_sampling_defaults: false,
            openai_stream_usage: true,
        }
    }

    /// A toy dialect: `{"name": <value as data>, "raw": <raw>, "text": <string>, "list": [..], "stream": <any>}`;
    /// it records what each callback got.
    #[derive(Default)]
    struct Toy {
        log: Vec<String>,
    }

    #[derive(Clone, Copy, Debug)]
    enum S {
        Doc,
        Name,
        Raw,
        Text,
        List,
        Stream,
    }

    impl Dialect for Toy {
        type State = S;

        fn member(&mut self, m: &mut Machine<S>, _s: S, key: &[u8], _t: Token<'_>, _o: u64, _cx: &mut Cx<'_>) -> Result<()> {
            m.read(match key {
                b"name" => Read::Value(S::Name, Some(STRING.or(NUMBER)), "name"),
                b"text" => Read::String(S::Text, "text"),
                b"list" => Read::Elements(S::List, "list"),
                b"stream" => Read::StreamRaw(S::Stream),
                _ => Read::Raw(S::Raw, None, ""),
            });
            Ok(())
        }
        fn element(&mut self, m: &mut Machine<S>, _s: S, _t: Token<'_>, _o: u64, _cx: &mut Cx<'_>) -> Result<()> {
            m.read(Read::Value(S::Name, None, ""));
            Ok(())
        }
        fn end(&mut self, _m: &mut Machine<S>, s: S, offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("end {s:?} {offset}"));
            Ok(())
        }
        fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("raw {s:?} {} {offset}", String::from_utf8_lossy(raw)));
            Ok(())
        }
        fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("value {s:?} {value:?} {offset}"));
            Ok(())
        }
        fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], init: bool, fin: bool, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("fragment {s:?} {} {init} {fin}", String::from_utf8_lossy(data)));
            Ok(())
        }
    }

    struct Run {
        m: Machine<S>,
        toy: Toy,
        session: Session,
    }

    struct NoEvents;
    impl EventSink for NoEvents {
        fn event(&mut self, _event: Event<'_>, _session: &mut Session) -> Result<()> {
            Ok(())
        }
    }

    impl crate::json::Sink for Run {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
            let mut out = NoEvents;
            let mut cx = Cx::new(path, &mut self.session, &mut out);
            self.m.feed(&mut self.toy, token, offset, &mut cx)
        }
    }

    fn run(chunks: &[&[u8]]) -> (Vec<String>, Option<Error>) {
        let mut r = Run {
            m: Machine::starting(Read::Members(S::Doc, "the document")),
            toy: Toy::default(),
            session: Session::new(options(), "openai", "openai", Kind::Request),
        };
        let mut tokenizer = Tokenizer::default();
        for chunk in chunks {
            if let Err(e) = tokenizer.feed(chunk, &mut r) {
                return (r.toy.log, Some(e));
            }
            let mut out = NoEvents;
            let mut cx = Cx::outside(&mut r.session, &mut out);
            if let Err(e) = r.m.flush(&mut r.toy, &mut cx) {
                return (r.toy.log, Some(e));
            }
        }
        let err = tokenizer.close(&mut r).err();
        (r.toy.log, err)
    }

    #[test]
    fn readers_route_values_to_their_states() {
        let doc = br#"{"name":"a\u00e9","raw":{"k":[1,true,null,"x"]},"text":"hello","list":[1,2.5,{"a":"b"}],"stream":{"z":"q"}}"#;
        let (log, err) = run(&[doc]);
        assert_eq!(err, None);
        assert_eq!(
            log,
            vec![
                "value Name Str([97, 195, 169]) 8",
                r#"raw Raw {"k":[1,true,null,"x"]} 24"#,
                "fragment Text hello true true",
                r#"value Name Int("1") 71"#,
                "value Name Float(2.5) 73",
                r#"value Name Object([([97], Str([98]))]) 77"#,
                "end List 86",
                r#"fragment Stream {"z":"q"} true true"#,
                "end Doc 106",
            ]
        );
        // cut anywhere: the same callbacks (string and stream fragments joined)
        for cut in 1..doc.len() {
            let (cut_log, err) = run(&[&doc[..cut], &doc[cut..]]);
            assert_eq!(err, None);
            let joined = join_fragments(&cut_log);
            assert_eq!(joined, join_fragments(&log), "cut at {cut}");
        }
    }

    fn join_fragments(log: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for line in log {
            if let Some(rest) = line.strip_prefix("fragment ") {
                let mut parts: Vec<&str> = rest.splitn(2, ' ').collect();
                let body = parts.pop().unwrap_or("");
                let (data, flags) = body.rsplit_once(' ').map(|(d, _fin)| d.rsplit_once(' ').unwrap()).unwrap();
                let _ = flags;
                if let Some(prev) = out.last_mut().filter(|p| p.starts_with("fragment ") && !p.ends_with("|fin")) {
                    prev.push_str(data);
                } else {
                    out.push(format!("fragment {data}"));
                }
                if line.ends_with(" true") {
                    if let Some(p) = out.last_mut() {
                        p.push_str("|fin");
                    }
                }
            } else {
                out.push(line.clone());
            }
        }
        out
    }

    #[test]
    fn a_completed_unit_joins_the_rest_of_its_feed() {
        // the chunk boundary cuts `\u00e9`: json.py gives "ab" then "\u00e9cd" as one fragment;
        // the native tokenizer makes "\u00e9" a fragment of its own: the machine joins it
        let doc = br#"{"text":"ab\u00e9cd"}"#;
        let cut = doc.iter().position(|&b| b == b'0').unwrap();
        let (log, err) = run(&[&doc[..cut], &doc[cut..]]);
        assert_eq!(err, None);
        assert_eq!(log[..2], ["fragment Text ab true false".to_string(), r"fragment Text \u00e9cd false true".to_string()]);
        // a string that begins in the carry: one whole fragment, as json.py's STRING
        let doc = br#"{"text":"\u00e9cd"}"#;
        let cut = doc.iter().position(|&b| b == b'0').unwrap();
        let (log, _) = run(&[&doc[..cut], &doc[cut..]]);
        assert_eq!(log[0], r"fragment Text \u00e9cd true true");
    }

    #[test]
    fn type_checks_and_budgets_say_what_python_says() {
        let (_, err) = run(&[br#"{"name":[1]}"#]);
        let err = err.unwrap();
        assert_eq!(err.message, "expected a string or a number for name, got array");
        assert_eq!((err.offset, err.path.as_deref()), (Some(8), Some(&b"$.name"[..])));
        let (_, err) = run(&[br#"{"text":5}"#]);
        assert_eq!(err.unwrap().message, "expected a string for text, got number");
        let (_, err) = run(&[br#"{"list":{}}"#]);
        assert_eq!(err.unwrap().message, "expected an array for list, got object");
        let (_, err) = run(&[br#"[]"#]);
        assert_eq!(err.unwrap().message, "expected an object for the document, got array");
        let big = format!(r#"{{"raw":["{}"]}}"#, "x".repeat(70));
        let (_, err) = run(&[big.as_bytes()]);
        let err = err.unwrap();
        assert_eq!((err.class, err.message.as_str()), (ErrorClass::BudgetExceeded, "value larger than max_value_bytes (64)"));
        assert_eq!((err.offset, err.path.as_deref()), (Some(7), Some(&b"$.raw[0]"[..])));
        assert_eq!(INTEGER.or(NULL).name(), "an integer or null");
        let mut cx_session = Session::new(options(), "openai", "openai", Kind::Request);
        let mut out = NoEvents;
        let frames = Frames::default();
        let cx = Cx::new(&frames, &mut cx_session, &mut out);
        assert_eq!(cx.expect(&Token::Number(b"1.5"), 3, Some(OPT_INTEGER), "n").unwrap_err().message,
                   "expected an integer or null for n, got a number with a fraction");
        assert!(cx.expect(&Token::Number(b"15"), 3, Some(OPT_INTEGER), "n").is_ok());
        assert_eq!(cx.missing("model", "the request body", 9).message, "the request body has no 'model' (required)");
    }

    /// A toy of `KeyFirst`: `[{..}, ..]`, each object's members read by its `"type"`
    /// (first or not); strings in fragments, the rest as data; `"skip"` skipped.
    #[derive(Default)]
    struct Typed {
        log: Vec<String>,
    }

    #[derive(Clone, Copy, Debug)]
    enum T {
        List,
        Object,
        Members,
        Text,
        Value,
    }

    impl Dialect for Typed {
        type State = T;
        fn object(&mut self, m: &mut Machine<T>, _s: T, _o: u64, _cx: &mut Cx<'_>) -> Result<()> {
            m.key_first(T::Object, "type", Some(STRING.or(NULL)), "toy:content-before-type");
            Ok(())
        }
        fn key_first(&mut self, m: &mut Machine<T>, _s: T, value: Option<Value>, offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("typed {value:?} {offset}"));
            m.push(Frame::Members(T::Members));
            Ok(())
        }
        fn member(&mut self, m: &mut Machine<T>, _s: T, key: &[u8], _t: Token<'_>, _o: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("member {}", String::from_utf8_lossy(key)));
            m.read(match key {
                b"text" => Read::String(T::Text, "text"),
                b"skip" => Read::Skip,
                b"type" => Read::Scalar(T::Value, Some(STRING), "type"),
                _ => Read::Value(T::Value, None, ""),
            });
            Ok(())
        }
        fn end(&mut self, _m: &mut Machine<T>, s: T, offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("end {s:?} {offset}"));
            Ok(())
        }
        fn value(&mut self, _m: &mut Machine<T>, _s: T, value: Value, offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("value {value:?} {offset}"));
            Ok(())
        }
        fn fragment(&mut self, _m: &mut Machine<T>, s: T, data: &[u8], init: bool, fin: bool, _cx: &mut Cx<'_>) -> Result<()> {
            self.log.push(format!("fragment {s:?} {} {init} {fin}", String::from_utf8_lossy(data)));
            Ok(())
        }
    }

    struct TypedRun {
        m: Machine<T>,
        toy: Typed,
        session: Session,
    }

    impl crate::json::Sink for TypedRun {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
            let mut out = NoEvents;
            let mut cx = Cx::new(path, &mut self.session, &mut out);
            self.m.feed(&mut self.toy, token, offset, &mut cx)
        }
    }

    fn typed_run(chunks: &[&[u8]], budget: u64) -> (Vec<String>, Option<Error>, u64) {
        let mut r = TypedRun {
            m: Machine::starting(Read::Objects(T::List, "the list")),
            toy: Typed::default(),
            session: Session::new(Options { reorder_budget: budget, ..options() }, "openai", "openai", Kind::Response),
        };
        let mut tokenizer = Tokenizer::default();
        for chunk in chunks {
            let fed = tokenizer.feed(chunk, &mut r);
            let mut out = NoEvents;
            let mut cx = Cx::outside(&mut r.session, &mut out);
            let after = match fed {
                Ok(()) => r.m.flush(&mut r.toy, &mut cx),
                Err(e) => Err(r.m.interrupted(&mut r.toy, &mut cx).err().unwrap_or(e)),
            };
            if let Err(e) = after {
                return (r.toy.log, Some(e), r.session.reorder.high_water());
            }
        }
        let err = tokenizer.close(&mut r).err();
        (r.toy.log, err, r.session.reorder.high_water())
    }

    #[test]
    fn key_first_replays_what_came_before_the_key() {
        let doc = r#"[{"type":"a","text":"x\u00e9y"},{"text":"hello é \u00e9 world","n":[1,{"k":2}],"skip":{"z":"\n"},"type":"b"},{"n":3}]"#.as_bytes();
        let (log, err, high) = typed_run(&[doc], 1 << 20);
        assert_eq!(err, None);
        assert_eq!(log, vec![
            r#"typed Some(Str([97])) 9"#,
            "member text",
            r"fragment Text x\u00e9y true true",
            "end Members 30",
            r#"typed Some(Str([98])) 105"#,
            "member text",
            r"fragment Text hello é \u00e9 world true true",
            "member n",
            r#"value Array([Int("1"), Object([([107], Int("2"))])]) 68"#,
            "member skip",
            "end Members 108",
            "typed None 116",
            "member n",
            r#"value Int("3") 115"#,
            "end Members 116",
            "end List 117",
        ]);
        // the second object's tokens before "type": Python's hold counts 16 + len(value) each
        let held: u64 = [4 + 16, 21 + 16, 1 + 16, 16, 1 + 16, 16, 1 + 16, 1 + 16, 16, 16, 4 + 16, 16, 1 + 16, 2 + 16, 16]
            .iter().sum();
        assert_eq!(high, held);
        for cut in 1..doc.len() {
            let (cut_log, err, cut_high) = typed_run(&[&doc[..cut], &doc[cut..]], 1 << 20);
            assert_eq!(err, None, "cut at {cut}");
            assert_eq!(join_fragments(&cut_log), join_fragments(&log), "cut at {cut}");
            // a held string cut by the feed is two tokens, its later one without the 16:
            // the same count however it was cut
            assert_eq!(cut_high, held, "cut at {cut}");
        }
        // "hello \xc3|\xa9": the native tokenizer delivers the completed character alone
        let inside = doc.windows(2).position(|w| w == "é".as_bytes()).unwrap() + 1;
        assert_eq!(typed_run(&[&doc[..inside], &doc[inside..]], 1 << 20).2, held);
        let (_, err, _) = typed_run(&[doc], 100);
        assert_eq!(err.unwrap().class, ErrorClass::BudgetExceeded);
    }

    #[test]
    fn key_first_checks_the_key_as_read_key() {
        let (_, err, _) = typed_run(&[br#"[{"a":1,"type":[1]}]"#], 1 << 20);
        let err = err.unwrap();
        assert_eq!((err.message.as_str(), err.offset), ("expected a scalar for type", Some(15)));
        let (_, err, _) = typed_run(&[br#"[{"type":1}]"#], 1 << 20);
        assert_eq!(err.unwrap().message, "expected a string or null for type, got number");
        // a long key value in fragments
        let doc = br#"[{"n":1,"type":"a long type name"}]"#;
        let (log, err, _) = typed_run(&[&doc[..20], &doc[20..]], 1 << 20);
        assert_eq!((err, log[0].as_str()), (None, r#"typed Some(Str([97, 32, 108, 111, 110, 103, 32, 116, 121, 112, 101, 32, 110, 97, 109, 101])) 15"#));
    }

    struct Events(Vec<String>);
    impl EventSink for Events {
        fn event(&mut self, event: Event<'_>, _session: &mut Session) -> Result<()> {
            self.0.push(match event {
                Event::Block(b) => format!("block {}", String::from_utf8_lossy(&b.payload)),
                other => other.tag().to_string(),
            });
            Ok(())
        }
    }

    #[test]
    fn response_base_holds_content_until_the_message_starts() {
        let mut session = Session::new(options(), "openai", "anthropic", Kind::Response);
        let mut out = Events(Vec::new());
        let mut base = ResponseBase::new("openai:content-before-id");
        let text = |t: &'static [u8]| Event::Block(Block { section: Section::AssistantText, message: 0, payload: Cow::Borrowed(t), init: true, fin: false, attrs: None });
        {
            let mut cx = Cx::outside(&mut session, &mut out);
            base.out(text(b"a"), &mut cx).unwrap();
            base.id = Some("id".into());
            base.start_message(&mut cx, |cx| cx.emit(Event::SystemEnd)).unwrap();
            base.start_message(&mut cx, |cx| cx.emit(Event::SystemEnd)).unwrap();
            base.out(text(b"b"), &mut cx).unwrap();
        }
        assert_eq!(out.0, ["system-end", "message-start", "block a", "block b"]);
        assert_eq!(session.reorder.report().1, vec![("openai:content-before-id", 65)]);
    }

    #[test]
    fn block_builder_late_attributes_ride_on_the_last_fragment() {
        let mut b = BlockBuilder::new(Section::ToolCall, 2, vec![("id".into(), Cow::Borrowed(&b"\"c1\""[..]))]);
        let first = b.fragment(b"{\"a\"", false).unwrap();
        assert!(first.init && !first.fin && first.attrs.is_some());
        assert!(b.fragment(b":1}", true).is_none());
        b.set("name", b"\"f\"".to_vec());
        let (last, extra) = b.close();
        assert_eq!((last.payload.as_ref(), last.init, last.fin), (&b":1}"[..], false, true));
        assert_eq!(last.attrs.unwrap()[0].0, "name");
        assert!(extra.is_none());

        // a whole payload goes out as it comes (as it would in pieces); the late
        // attributes ride on the empty last fragment the close adds
        let mut b = BlockBuilder::new(Section::UserText, 0, Vec::new());
        let first = b.fragment(b"hi", true).unwrap();
        assert_eq!((first.payload.as_ref(), first.init, first.fin, first.attrs.is_none()), (&b"hi"[..], true, false, true));
        b.set("cache_control", b"{}".to_vec());
        let (last, extra) = b.close();
        assert_eq!((last.payload.as_ref(), last.init, last.fin), (&b""[..], false, true));
        assert_eq!(last.attrs.unwrap()[0].0, "cache_control");
        assert!(extra.is_none());

        // late attributes on an empty payload, which waits for the close: a last fragment of their own
        let mut b = BlockBuilder::new(Section::UserText, 0, Vec::new());
        assert!(b.fragment(b"", true).is_none());
        b.set("cache_control", b"{}".to_vec());
        let (first, second) = b.close();
        assert_eq!((first.payload.as_ref(), first.init, first.fin, first.attrs.is_none()), (&b""[..], true, false, true));
        let second = second.unwrap();
        assert_eq!((second.payload.as_ref(), second.init, second.fin), (&b""[..], false, true));
    }
}
