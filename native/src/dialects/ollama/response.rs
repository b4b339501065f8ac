//! The ollama response and stream codecs (`src/interlingua/dialects/ollama/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RL (issue 12).
//!
//! The decisions (content before thinking goes after it, tool calls whole, `done_reason`
//! absent means stop, the durations as extensions, `created_at` carried, one line per
//! source frame and block ...) are the Python module's docstring; this is the same
//! machine with its states named.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use super::response_fields::{COUNTS, DURATIONS};
use crate::canonical::{escape_raw_json, Block, Event, Extension, Section, Usage};
use crate::decoding::{
    set_attr, Attr, Cx, Decode, Dialect, EventSink, Framing, Frame, Gate, Machine, Read, BOOLEAN, NULL, OPT_INTEGER,
    OPT_STRING,
};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{Frames, Token};
use crate::reorder::Hold;
use crate::session::Session;
use crate::value::{dumps_str, Value};

pub const DIALECT: &str = "ollama";

// -- decoder ---------------------------------------------------------------------------

/// The decoder's handlers (`decoding::Machine` states): which reader gets a token or a
/// value; the data they work on is in `Lines`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    /// a document's first token (`_document`)
    Document,
    /// the document's members (`_member`), its end (`_document_end`)
    Response,
    Model,
    Done,
    DoneReason,
    /// `prompt_eval_count` (0) / `eval_count` (1)
    Count(u8),
    Error,
    /// `logprobs[]` and one entry read whole (`_logprob`)
    Logprobs,
    Logprob,
    /// a duration (index into `DURATIONS`) or `created_at` (None), read raw (`_extension`)
    Extension(Option<u8>),
    /// a member no canonical event carries, read raw (a loss unless null)
    Lost,
    /// `message` members (`_message_member`), its end (`_message_end`)
    Message,
    Content,
    Thinking,
    /// a message member read raw (a loss unless null or [])
    MessageLost,
    /// `tool_calls[]` (`_tool_call`) and a call's keys (`_tool_key`)
    ToolCalls,
    ToolCall,
    CallId,
    /// `function` (its `{`) and its keys (`_function_key`)
    Function,
    FunctionKeys,
    Name,
    Index,
    /// `arguments`: its first token, then JSON text (a string's fragments) or a raw value
    Arguments,
    ArgumentsText,
    ArgumentsRaw,
    /// a function member read raw (always a loss)
    FunctionLost,
    /// `skip_value`: a value consumed and dropped (a container or a string in fragments read raw)
    Skip,
    Skipped,
}

/// `_section_sink`'s attributes of the two text blocks.
const CONTENT_PATH: &[u8] = b"\"$.message.content\"";
const THINKING_PATH: &[u8] = b"\"$.message.thinking\"";

/// One canonical block emitted fragment by fragment, possibly across many lines
/// (`lifecycle.BlockStream`): the first non-empty fragment carries `attrs`.
// (a stand-in until lifecycle.rs has BlockStream: helper RF)
#[derive(Debug)]
struct BlockStream {
    section: Section,
    attrs: Vec<Attr>,
    started: bool,
}

impl BlockStream {
    fn new(section: Section, attrs: Vec<Attr>) -> Self {
        BlockStream { section, attrs, started: false }
    }

    fn fragment<'d>(&mut self, data: &'d [u8]) -> Option<Block<'d>> {
        if data.is_empty() {
            return None;
        }
        let init = !self.started;
        let attrs = if init { crate::decoding::block_attrs(&self.attrs) } else { None };
        self.started = true;
        Some(Block { section: self.section, message: 0, payload: Cow::Borrowed(data), init, fin: false, attrs })
    }

    fn close(&mut self) -> Block<'static> {
        let (init, attrs) = if self.started { (false, None) } else { (true, crate::decoding::block_attrs(&self.attrs)) };
        self.started = true;
        Block { section: self.section, message: 0, payload: Cow::Borrowed(&b""[..]), init, fin: true, attrs }
    }
}

/// The tool call being read (`_tool_call`'s `call` dict).
#[derive(Debug)]
struct Call {
    /// its position in this `tool_calls` array (loss paths)
    position: i64,
    attrs: Vec<Attr>,
    /// `arguments` came (`call["args"]`)
    args: bool,
    /// its block was opened (`call["open"]`: then it is `Lines::block`)
    open: bool,
    /// `call["block"]`: the `Deferred` of its arguments -- `Some` once `arguments` began;
    /// the hold is made when a fragment must wait for the name (`ollama:arguments-before-name`)
    deferred: Option<Option<Hold<(usize, usize)>>>,
}

/// The decoder's data (`_Decoder`'s attributes).
struct Lines {
    // ResponseDecoderBase (a stand-in until decoding.rs has it: helper RF)
    gate: Gate,
    model: Option<String>,
    started: bool,
    errored: bool,

    /// the open block (`self.block`)
    block: Option<BlockStream>,
    /// tool calls seen in the whole response (`self.tools`)
    tools: i64,
    /// the done line was read (`self.ended`)
    ended: bool,
    // per line (`_reset`)
    done: bool,
    reason: Option<String>,
    /// a count member came (`bool(self.counts)`), and the counts (None: null or absent)
    counted: bool,
    counts: [Option<i64>; 2],
    /// the first `created_at` went out (`self._created`)
    created: bool,
    /// the element of the current `tool_calls` array (`_call_position`)
    call_position: i64,
    call: Option<Call>,
    /// the key of the member being read raw (for its loss path)
    key: Vec<u8>,
    /// `ReasoningFirst` (rule `ollama:content-before-thinking`): the content text waits in
    /// `text_hold` (item: its end in `text`) until the message's next member shows whether
    /// thinking follows
    text_hold: Option<Hold<usize>>,
    text: Vec<u8>,
    text_waiting: bool,
    /// the arguments held for a call's name (`Deferred`): one call at a time
    args: Vec<u8>,
}

const CONTENT_BEFORE_THINKING: &str = "ollama:content-before-thinking";
const ARGUMENTS_BEFORE_NAME: &str = "ollama:arguments-before-name";

impl Lines {
    fn new() -> Self {
        Lines {
            gate: Gate::new("ollama:content-before-model"),
            model: None,
            started: false,
            errored: false,
            block: None,
            tools: 0,
            ended: false,
            done: false,
            reason: None,
            counted: false,
            counts: [None, None],
            created: false,
            call_position: -1,
            call: None,
            key: Vec::new(),
            text_hold: None,
            text: Vec::new(),
            text_waiting: false,
            args: Vec::new(),
        }
    }

    fn reset(&mut self) {
        self.done = false;
        self.reason = None;
        self.counted = false;
        self.counts = [None, None];
    }

    // -- ResponseDecoderBase -------------------------------------------------------------

    /// `out`: an event that must follow the message start.
    fn out(&mut self, event: Event<'_>, cx: &mut Cx<'_>) -> Result<()> {
        if self.gate.open {
            cx.emit(event)
        } else {
            self.gate.hold(event, cx.session)
        }
    }

    fn start_message(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let model = self.model.clone().map(Cow::Owned);
        cx.emit(Event::MessageStart { id: None, model, choice: 0 })?;
        self.gate.release(cx, |event, cx| cx.emit(event))
    }

    // -- blocks ----------------------------------------------------------------------------

    /// `_open(section, attrs).fragment(data)`: the open block continues when it is of
    /// `section` (never a tool call's: each call is a block of its own).
    fn text_fragment(&mut self, section: Section, path: &'static [u8], data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if !matches!(&self.block, Some(block) if block.section == section) {
            self.close_block(cx)?;
            self.block = Some(BlockStream::new(section, vec![(Cow::Borrowed("path"), path.to_vec())]));
        }
        self.block_fragment(data, cx)
    }

    fn block_fragment(&mut self, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        match self.block.as_mut().and_then(|block| block.fragment(data)) {
            Some(block) => self.out(Event::Block(block), cx),
            None => Ok(()),
        }
    }

    /// `_close`: the open block gets its last fragment.
    fn close_block(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        match self.block.take() {
            Some(mut block) => self.out(Event::Block(block.close()), cx),
            None => Ok(()),
        }
    }

    // -- ReasoningFirst ----------------------------------------------------------------------

    /// `ReasoningFirst.text`: content text waits (unless reordering is refused).
    fn content(&mut self, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        if cx.session.options.refuse_reorder {
            return self.text_fragment(Section::AssistantText, CONTENT_PATH, data, cx);
        }
        if data.is_empty() {
            return Ok(());
        }
        let hold = self.text_hold.get_or_insert_with(|| cx.session.reorder.hold(CONTENT_BEFORE_THINKING));
        hold.append(&mut cx.session.reorder, self.text.len() + data.len(), data.len() as u64)?;
        self.text.extend_from_slice(data);
        Ok(())
    }

    /// `ReasoningFirst.member(reasoning)`: the message's next member starts.
    fn text_member(&mut self, reasoning: bool, cx: &mut Cx<'_>) -> Result<()> {
        if reasoning {
            self.text_waiting = self.text_hold.is_some();
            Ok(())
        } else {
            self.release_text(cx)
        }
    }

    /// `ReasoningFirst.release`: the held text goes on, piece by piece as it was written.
    fn release_text(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.text_waiting = false;
        let Some(mut hold) = self.text_hold.take() else { return Ok(()) };
        let ends: Vec<usize> = hold.drain(&mut cx.session.reorder).collect();
        let text = std::mem::take(&mut self.text);
        let mut start = 0;
        let mut result = Ok(());
        for end in ends {
            result = self.text_fragment(Section::AssistantText, CONTENT_PATH, &text[start..end], cx);
            if result.is_err() {
                break;
            }
            start = end;
        }
        self.text = text;
        self.text.clear();
        result
    }

    // -- tool calls ----------------------------------------------------------------------------

    fn call(&mut self) -> Result<&mut Call> {
        self.call.as_mut().ok_or_else(|| internal("no tool call is being read"))
    }

    /// `call["attrs"][name] = value` (the open block's too: it reads them at its first fragment).
    fn call_attr(&mut self, name: &'static str, json: Vec<u8>) -> Result<()> {
        let call = self.call.as_mut().ok_or_else(|| internal("no tool call is being read"))?;
        if call.open {
            if let Some(block) = self.block.as_mut() {
                set_attr(&mut block.attrs, Cow::Borrowed(name), json.clone());
            }
        }
        set_attr(&mut call.attrs, Cow::Borrowed(name), json);
        Ok(())
    }

    /// `_tool_open(call)`: the call's block, opened once.
    fn tool_open(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let call = self.call()?;
        if call.open {
            return Ok(());
        }
        call.open = true;
        let attrs = call.attrs.clone();
        self.close_block(cx)?;
        self.block = Some(BlockStream::new(Section::ToolCall, attrs));
        Ok(())
    }

    /// `Deferred.fragment`: an arguments fragment, held while the call has no name.
    fn arguments(&mut self, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        let Lines { call, args, .. } = self;
        let call = call.as_mut().ok_or_else(|| internal("no tool call is being read"))?;
        let ready = crate::decoding::get_attr(&call.attrs, "name").is_some();
        match &mut call.deferred {
            Some(None) if ready => {
                self.tool_open(cx)?;
                self.block_fragment(data, cx)
            }
            Some(slot) => {
                let hold = slot.get_or_insert_with(|| cx.session.reorder.hold(ARGUMENTS_BEFORE_NAME));
                let start = args.len();
                hold.append(&mut cx.session.reorder, (start, start + data.len()), data.len() as u64)?;
                args.extend_from_slice(data);
                Ok(())
            }
            None => Err(internal("arguments without their Deferred")),
        }
    }

    /// `_tool_end(call)`: the held arguments go out (`Deferred.release`), `{}` when there were
    /// none, and the call's block closes.
    fn tool_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let mut call = self.call.take().ok_or_else(|| internal("no tool call is being read"))?;
        let held = call.deferred.take();
        let args = call.args;
        self.call = Some(call);
        self.tool_open(cx)?;
        if let Some(Some(mut hold)) = held {
            let pieces: Vec<(usize, usize)> = hold.drain(&mut cx.session.reorder).collect();
            let data = std::mem::take(&mut self.args);
            let mut result = Ok(());
            for (start, end) in pieces {
                result = self.block_fragment(&data[start..end], cx);
                if result.is_err() {
                    break;
                }
            }
            self.args = data;
            self.args.clear();
            result?;
        }
        if !args {
            self.block_fragment(b"{}", cx)?;
        }
        self.call = None;
        self.close_block(cx)
    }

    // -- the document's end -----------------------------------------------------------------

    /// `_document_end`: the done line ends the message.
    fn document_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if self.errored || !self.done {
            return Ok(());
        }
        self.start_message(cx)?;
        self.close_block(cx)?;
        if self.reason.is_none() {
            // done without done_reason: a normal stop (what Ollama's own openai layer
            // says); the marker lets an ollama target leave it out again
            self.out(extension("$.done_reason", b"null", true), cx)?;
        }
        let mut reason = finish_from(self.reason.as_deref().unwrap_or("stop"));
        if reason == "end_turn" && self.tools != 0 {
            reason = "tool_use".to_string();
        }
        self.out(Event::Finish { reason: Some(Cow::Owned(reason)), stop_sequence: None, choice: 0 }, cx)?;
        if self.counted {
            let usage = Usage { input: self.counts[0], output: self.counts[1], ..Usage::default() };
            self.out(Event::Usage(usage), cx)?;
        }
        self.ended = true;
        cx.emit(Event::End)
    }

    /// `_error`: the stream's error object ends the message.
    fn error(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
        self.gate.release(cx, |event, cx| cx.emit(event))?;
        self.close_block(cx)?; // every block gets its last fragment; the error follows it
        let message = match &value {
            Value::Object(_) => value.get("message").cloned().unwrap_or(Value::Null),
            _ => value,
        };
        cx.emit(Event::Error { kind: Cow::Borrowed("api_error"), message: Cow::Owned(py_str(&message)), status: None })?;
        self.errored = true;
        Ok(())
    }

    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
    }

    /// The member being read raw, as a path under `prefix` (`"$." + key`).
    fn key_path(&self, prefix: &str) -> String {
        format!("{prefix}{}", String::from_utf8_lossy(&self.key))
    }
}

fn extension(path: &'static str, raw: &[u8], lossless: bool) -> Event<'static> {
    Event::Extension(Extension {
        dialect: Cow::Borrowed(DIALECT),
        path: Cow::Borrowed(path),
        raw: Cow::Owned(raw.to_vec()),
        message: None,
        lossless,
    })
}

/// `lifecycle.finish_from("ollama", reason)`.
// (a stand-in until lifecycle.rs has it: helper RF)
fn finish_from(reason: &str) -> String {
    match reason {
        "stop" => "end_turn".to_string(),
        "length" => "max_tokens".to_string(),
        other => format!("{DIALECT}:{other}"),
    }
}

fn internal(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the native core: {what}"))
}

/// Python's `str(value)` of small JSON data (an error's message): a string's text, `repr` of
/// anything else.
fn py_str(value: &Value) -> String {
    match value {
        Value::Str(text) => String::from_utf8_lossy(text).into_owned(),
        other => py_repr(other),
    }
}

/// Python's `repr` of JSON data.
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(digits) => digits.clone(),
        Value::Float(f) if f.is_infinite() => (if *f > 0.0 { "inf" } else { "-inf" }).into(),
        Value::Float(_) => String::from_utf8_lossy(&value.to_json()).into_owned(),
        Value::Str(text) => crate::unicode::py_repr(text),
        Value::Array(items) => format!("[{}]", items.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(members) => format!(
            "{{{}}}",
            members.iter().map(|(k, v)| format!("{}: {}", crate::unicode::py_repr(k), py_repr(v))).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Python's `v == n` of JSON data and an int (`True == 1`, `1.0 == 1`).
fn py_equals_int(value: &Value, n: i64) -> bool {
    match value {
        Value::Bool(b) => *b as i64 == n,
        Value::Int(digits) => digits.parse::<i64>().is_ok_and(|v| v == n),
        Value::Float(f) => *f == n as f64,
        _ => false,
    }
}

/// Python's `repr(data)` of bytes (`b'...'`).
fn py_bytes_repr(data: &[u8]) -> String {
    let quote = if data.contains(&b'\'') && !data.contains(&b'"') { b'"' } else { b'\'' };
    let mut out = String::with_capacity(data.len() + 3);
    out.push('b');
    out.push(quote as char);
    for &b in data {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b if b == quote => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push(quote as char);
    out
}

fn str_json(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 2);
    dumps_str(text, &mut out);
    out
}

/// `skip_value`: a container or a string in fragments is read raw (bounded) and dropped.
fn skip(m: &mut Machine<S>, token: &Token<'_>) {
    if matches!(token, Token::ObjectStart | Token::ArrayStart | Token::StringOpen(_)) {
        m.read(Read::Raw(S::Skipped, None, ""));
    }
}

impl Dialect for Lines {
    type State = S;

    fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Document => {
                // `_document`: the document's reader takes its place
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for the response", offset));
                }
                m.push(Frame::Members(S::Response));
                if self.ended {
                    return Err(cx.error("chunk after the done chunk", offset));
                }
                self.reset();
                Ok(())
            }
            S::ToolCall => match token {
                Token::Key(key) => {
                    m.then(match key {
                        b"function" => Read::State(S::Function),
                        b"id" => Read::Value(S::CallId, Some(OPT_STRING), "a tool call's id"),
                        _ => Read::State(S::Skip),
                    });
                    Ok(())
                }
                _ => {
                    m.pop();
                    self.tool_end(cx)
                }
            },
            S::Function => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for function", offset));
                }
                m.push(Frame::State(S::FunctionKeys));
                Ok(())
            }
            S::FunctionKeys => match token {
                Token::Key(key) => {
                    m.then(match key {
                        b"name" => Read::Value(S::Name, Some(OPT_STRING), "a tool call's name"),
                        b"arguments" => Read::State(S::Arguments),
                        b"index" => Read::Value(S::Index, None, ""),
                        key => {
                            self.set_key(key);
                            Read::Raw(S::FunctionLost, None, "")
                        }
                    });
                    Ok(())
                }
                _ => {
                    m.pop();
                    Ok(())
                }
            },
            S::Arguments => {
                // the name must ride on the first fragment: hold the arguments until it came
                let call = self.call()?;
                call.deferred = Some(None);
                call.args = true;
                m.read(match token {
                    Token::String(_) | Token::StringOpen(_) => Read::String(S::ArgumentsText, "arguments"),
                    _ => Read::StreamRaw(S::ArgumentsRaw),
                });
                Ok(())
            }
            S::Skip => {
                skip(m, &token);
                Ok(())
            }
            s => Err(internal(&format!("state {s:?} takes no token"))),
        }
    }

    fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, _offset: u64, cx: &mut Cx<'_>)
              -> Result<()> {
        match s {
            S::Response => {
                match key {
                    b"model" => {
                        if self.started && matches!(token, Token::String(_) | Token::StringOpen(_)) {
                            // every line repeats it: once the message started it changes nothing
                            skip(m, &token);
                        } else {
                            m.read(Read::Value(S::Model, Some(OPT_STRING), "model"));
                        }
                    }
                    b"message" => m.read(Read::Members(S::Message, "message")),
                    b"done" => m.read(Read::Value(S::Done, Some(BOOLEAN.or(NULL)), "done")),
                    b"done_reason" => m.read(Read::Value(S::DoneReason, Some(OPT_STRING), "done_reason")),
                    b"prompt_eval_count" => m.read(Read::Value(S::Count(0), Some(OPT_INTEGER), COUNTS[0])),
                    b"eval_count" => m.read(Read::Value(S::Count(1), Some(OPT_INTEGER), COUNTS[1])),
                    b"error" => m.read(Read::Value(S::Error, None, "")),
                    b"logprobs" => {
                        // one token's entry at a time (bounded by the entry)
                        if token != Token::Null {
                            m.read(Read::Elements(S::Logprobs, "logprobs"));
                        }
                    }
                    b"created_at" => m.read(Read::Raw(S::Extension(None), None, "")),
                    key => match DURATIONS.iter().position(|d| d.as_bytes() == key) {
                        Some(i) => m.read(Read::Raw(S::Extension(Some(i as u8)), None, "")),
                        None => {
                            self.set_key(key);
                            m.read(Read::Raw(S::Lost, None, ""));
                        }
                    },
                }
                Ok(())
            }
            S::Message => {
                if key != b"content" {
                    self.text_member(key == b"thinking" && token != Token::Null, cx)?;
                }
                match key {
                    b"content" if token != Token::Null => m.read(Read::String(S::Content, "content")),
                    b"thinking" if token != Token::Null => m.read(Read::String(S::Thinking, "thinking")),
                    b"content" | b"thinking" => {}
                    b"tool_calls" => {
                        if token != Token::Null {
                            self.call_position = -1; // the element of this tool_calls array (for loss paths)
                            m.read(Read::Objects(S::ToolCalls, "tool_calls"));
                        }
                    }
                    b"role" => skip(m, &token),
                    key => {
                        self.set_key(key);
                        m.read(Read::Raw(S::MessageLost, None, ""));
                    }
                }
                Ok(())
            }
            s => Err(internal(&format!("state {s:?} takes no member"))),
        }
    }

    fn element(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Logprobs => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for a logprobs entry", offset));
                }
                m.read(Read::Raw(S::Logprob, None, ""));
                Ok(())
            }
            s => Err(internal(&format!("state {s:?} takes no element"))),
        }
    }

    fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::ToolCalls => {
                // `_tool_call`
                self.close_block(cx)?;
                self.tools += 1;
                self.call_position += 1;
                let path = format!("$.message.tool_calls[{}]", self.call_position);
                self.call = Some(Call {
                    position: self.call_position,
                    attrs: vec![(Cow::Borrowed("path"), str_json(path.as_bytes()))],
                    args: false,
                    open: false,
                    deferred: None,
                });
                m.push(Frame::State(S::ToolCall));
                Ok(())
            }
            s => Err(internal(&format!("state {s:?} takes no object"))),
        }
    }

    fn end(&mut self, _m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Response => self.document_end(cx),
            S::Message => self.release_text(cx),
            _ => Ok(()),
        }
    }

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Logprob => Err(Error::new(ErrorClass::Transcode, "ollama logprobs: not ported yet (Event::Logprobs)")),
            S::Extension(None) => {
                if !self.created {
                    self.created = true;
                    cx.emit(extension("$.created_at", raw, true))?;
                }
                Ok(())
            }
            S::Extension(Some(i)) => {
                let path = DURATION_PATHS[i as usize];
                self.out(extension(path, raw, false), cx)
            }
            S::Lost => {
                if raw != b"null" {
                    cx.session.lose_member(&self.key_path("$."), "such field", None)?;
                }
                Ok(())
            }
            S::MessageLost => {
                if raw != b"null" && raw != b"[]" {
                    cx.session.lose_member(&self.key_path("$.message."), "such field", None)?;
                }
                Ok(())
            }
            S::FunctionLost => {
                let position = self.call()?.position;
                let path = self.key_path(&format!("$.message.tool_calls[{position}].function."));
                cx.session.lose_member(&path, "such field", None)
            }
            S::Skipped => Ok(()),
            s => Err(internal(&format!("state {s:?} takes no raw value"))),
        }
    }

    fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Model => {
                self.model = match value {
                    Value::Str(text) => Some(String::from_utf8_lossy(&text).into_owned()),
                    _ => None,
                };
                self.start_message(cx)
            }
            S::Done => {
                self.done = value.truthy();
                Ok(())
            }
            S::DoneReason => {
                self.reason = match value {
                    Value::Str(text) => Some(String::from_utf8_lossy(&text).into_owned()),
                    _ => None,
                };
                Ok(())
            }
            S::Count(i) => {
                self.counted = true;
                self.counts[i as usize] = value.as_i64();
                Ok(())
            }
            S::Error => self.error(value, cx),
            S::CallId => self.call_attr("id", value.to_json()),
            S::Name => {
                let json = match &value {
                    Value::Str(text) => {
                        let text = String::from_utf8_lossy(text);
                        str_json(cx.session.tool_name_in(&text).as_bytes())
                    }
                    other => other.to_json(),
                };
                self.call_attr("name", json)
            }
            S::Index => {
                // Go writes the call's position: nothing to carry when it is that
                if py_equals_int(&value, self.tools - 1) {
                    return Ok(());
                }
                let position = self.call()?.position;
                let path = format!("$.message.tool_calls[{position}].function.index");
                let what = format!("tool-call index other than its position ({})", py_repr(&value));
                cx.session.lose_member(&path, &what, None)
            }
            s => Err(internal(&format!("state {s:?} takes no value"))),
        }
    }

    fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool, cx: &mut Cx<'_>)
                -> Result<()> {
        match s {
            S::Content => self.content(data, cx),
            S::Thinking => {
                self.text_fragment(Section::AssistantReasoning, THINKING_PATH, data, cx)?;
                if fin && self.text_waiting {
                    self.release_text(cx)?;
                }
                Ok(())
            }
            S::ArgumentsText => self.arguments(data, cx),
            S::ArgumentsRaw => {
                let mut escaped = Vec::with_capacity(data.len() + 8);
                escape_raw_json(data, &mut escaped);
                self.arguments(&escaped, cx)
            }
            s => Err(internal(&format!("state {s:?} takes no fragment"))),
        }
    }
}

/// `"$." + key` of each duration.
const DURATION_PATHS: [&str; 4] = ["$.total_duration", "$.load_duration", "$.prompt_eval_duration", "$.eval_duration"];

/// The decoders' shared driving (`_Decoder`): the machine and its data.
struct Decoder {
    m: Machine<S>,
    d: Lines,
}

impl Decoder {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()> {
        self.m.feed(&mut self.d, token, offset, &mut Cx::new(path, session, out))
    }

    /// `finish`: a response that ended before its done line is truncated (after an error
    /// object it ends there).
    fn finish(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        if self.d.ended {
            return Ok(());
        }
        if self.d.errored {
            self.d.ended = true;
            return Cx::outside(session, out).emit(Event::End);
        }
        Err(Error::new(ErrorClass::TruncatedInput, "ollama response ended before its done chunk").in_dialect(DIALECT))
    }
}

/// `ResponseDecoder`: one `/api/chat` response object -> canonical events.
pub struct ResponseDecoder(Decoder);

impl ResponseDecoder {
    pub fn new(_session: &Session) -> Self {
        ResponseDecoder(Decoder { m: Machine::starting(Read::State(S::Document)), d: Lines::new() })
    }
}

/// `StreamDecoder`: NDJSON lines, one response object each, the last `done: true`.
pub struct StreamDecoder(Decoder);

impl StreamDecoder {
    pub fn new(_session: &Session) -> Self {
        StreamDecoder(Decoder { m: Machine::new(), d: Lines::new() })
    }
}

macro_rules! decode_common {
    () => {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
                 out: &mut dyn EventSink) -> Result<()> {
            self.0.token(token, offset, path, session, out)
        }

        fn flush(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            self.0.m.flush(&mut self.0.d, &mut Cx::outside(session, out))
        }

        fn interrupted(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            self.0.m.interrupted(&mut self.0.d, &mut Cx::outside(session, out))
        }

        fn finish(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            self.0.finish(session, out)
        }

        fn at(&self) -> u64 {
            self.0.m.at
        }

        fn framing(&self) -> Framing {
            Framing::Ndjson
        }
    };
}

impl Decode for ResponseDecoder {
    decode_common!();
}

impl Decode for StreamDecoder {
    decode_common!();

    fn begin_frame(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        self.0.m.restart(Read::State(S::Document));
        Ok(())
    }

    fn end_frame(&mut self, _event: Option<&str>, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let d = &mut self.0.d;
        if !d.started && d.model.is_none() && !d.errored {
            d.start_message(&mut Cx::outside(session, out))?;
        }
        Ok(())
    }

    fn frame_text(&mut self, _event: Option<&str>, data: &[u8], _session: &mut Session,
                  _out: &mut dyn EventSink) -> Result<()> {
        let head = &data[..data.len().min(40)];
        Err(Error::new(ErrorClass::Schema, format!("NDJSON line is not a JSON object: {}", py_bytes_repr(head)))
            .in_dialect(DIALECT))
    }
}
