//! The ollama response and stream codecs (`src/interlingua/dialects/ollama/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RL (issue 12).
//!
//! The decisions (content before thinking goes after it, tool calls whole, `done_reason`
//! absent means stop, the durations as extensions, `created_at` carried, one line per
//! source frame and block ...) are the Python module's docstring; this is the same
//! machine with its states named.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{escape_raw_json, Block, Event, Extension, Section, Usage};
use crate::lifecycle::{
    beyond_64_bits, finish_from, finish_to, merge_usage, ollama_counts, ollama_created_at, push_int, push_ollama_created_at, usage_from_ollama, BlockStream, Pieces, Stamp,
};
use crate::decoding::{
    set_attr, Attr, Cx, Decode, Dialect, EventSink, Framing, Frame, Gate, Machine, Read, BOOLEAN, NULL, OPT_INTEGER,
    OPT_STRING,
};
use crate::decoding::member_path;
use crate::error::{Error, ErrorClass, Result};
use crate::json::{Frames, Token};
use crate::reorder::Hold;
use crate::session::Session;
use crate::value::{dumps_str, str_json, Value};

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
    /// a tool call's member other than function, id and type, read raw (a loss unless null)
    CallLost,
}

/// `_section_sink`'s attributes of the two text blocks.
const CONTENT_PATH: &[u8] = b"\"$.message.content\"";
const THINKING_PATH: &[u8] = b"\"$.message.thinking\"";

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
    /// `streams`: a stream's lines go on after its error; a body's error is all it says
    streams: bool,

    /// the open block (`self.block`)
    block: Option<BlockStream>,
    /// tool calls seen in the whole response (`self.tools`)
    tools: i64,
    /// the done line was read (`self.ended`)
    ended: bool,
    // per line (`_reset`)
    done: bool,
    reason: Option<String>,
    /// a count member came (`bool(self.counts)`), and the counts as read (`COUNTS` order)
    counted: bool,
    counts: [Option<Value>; 2],
    /// the first `created_at` went out (`self._created`)
    created: bool,
    /// the element of the current `tool_calls` array (`_call_position`)
    call_position: i64,
    call: Option<Call>,
    /// the key of the member being read raw (for its loss path)
    key: Vec<u8>,
    /// `ReasoningFirst` (rule `ollama:content-before-thinking`): the content text waits in
    /// `text` until the message's next member shows whether thinking follows (kept
    /// across lines: `hold is not None` of Python is "holds a piece")
    text: Pieces,
    text_waiting: bool,
    /// the arguments held for a call's name (`Deferred`): one call at a time
    args: Vec<u8>,
}

const CONTENT_BEFORE_THINKING: &str = "ollama:content-before-thinking";
const ARGUMENTS_BEFORE_NAME: &str = "ollama:arguments-before-name";
const CALL_BEFORE_ID: &str = "ollama:call-before-id";

impl Lines {
    fn new(streams: bool) -> Self {
        Lines {
            gate: Gate::new("ollama:content-before-model"),
            model: None,
            started: false,
            errored: false,
            streams,
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
            text: Pieces::default(),
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
        // (handed over, not copied: the encoder keeps it, and the decoder reads it only to
        // know whether to start, which it did)
        let model = self.model.take().map(Cow::Owned);
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
            self.block = Some(BlockStream::new(section, 0, vec![(Cow::Borrowed("path"), Cow::Borrowed(path))], None));
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
            Some(mut block) => self.out(Event::Block(block.close(&[])), cx),
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
        self.text.push(CONTENT_BEFORE_THINKING, data, cx.session)
    }

    /// `ReasoningFirst.member(reasoning)`: the message's next member starts.
    fn text_member(&mut self, reasoning: bool, cx: &mut Cx<'_>) -> Result<()> {
        if reasoning {
            self.text_waiting = self.text_held();
            Ok(())
        } else {
            self.release_text(cx)
        }
    }

    /// Content text is held (`self.hold is not None`).
    fn text_held(&self) -> bool {
        !self.text.is_empty()
    }

    /// `ReasoningFirst.release`: the held text goes on, piece by piece as it was written.
    fn release_text(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.text_waiting = false;
        if self.text.is_empty() {
            return Ok(());
        }
        let mut text = self.text.release(&mut cx.session.reorder); // (the sink needs the decoder)
        let result = text.each_then_clear(|piece| self.text_fragment(Section::AssistantText, CONTENT_PATH, piece, cx));
        self.text.restore(text); // (its capacity kept for the next line)
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
        self.block = Some(BlockStream::new(Section::ToolCall, 0, attrs, None));
        Ok(())
    }

    /// `Deferred.fragment`: an arguments fragment, held while the call has no name or no id
    /// (`_call_ready`; with reordering refused the id is not waited for).
    fn arguments(&mut self, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        let Lines { call, args, .. } = self;
        let call = call.as_mut().ok_or_else(|| internal("no tool call is being read"))?;
        let named = crate::decoding::get_attr(&call.attrs, "name").is_some();
        let ready = named && (crate::decoding::get_attr(&call.attrs, "id").is_some() || cx.session.reorder.refuse);
        match &mut call.deferred {
            Some(None) if ready => {
                self.tool_open(cx)?;
                self.block_fragment(data, cx)
            }
            Some(slot) => {
                // `_call_rule`: the name first, then the id
                let reason = if named { CALL_BEFORE_ID } else { ARGUMENTS_BEFORE_NAME };
                let hold = slot.get_or_insert_with(|| cx.session.reorder.hold(reason));
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

    /// `_document_end`: the done line (after a stream's error, what it gives goes on).
    fn document_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if !self.done || self.errored && !self.streams {
            return Ok(()); // (an error body: its done members say nothing more)
        }
        if !self.errored {
            self.done_finish(cx)?;
        } else if let Some(reason) = self.reason.as_deref() {
            // a done line after a stream's error: it goes on, for the encoder to record
            let reason = finish_from(DIALECT, Some(reason));
            self.out(Event::Finish { reason, stop_sequence: None, choice: 0 }, cx)?;
        }
        if self.counted {
            let usage = usage_from_ollama(self.counts[0].as_ref(), self.counts[1].as_ref())?;
            self.out(Event::Usage(usage), cx)?;
        }
        self.ended = true;
        cx.emit(Event::End)
    }

    /// `_done_finish`: the done line ends the message: its last block, and the finish.
    fn done_finish(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.start_message(cx)?;
        self.close_block(cx)?;
        if self.reason.is_none() {
            // done without done_reason: a normal stop (what Ollama's own openai layer
            // says); the marker lets an ollama target leave it out again
            self.out(extension("$.done_reason", b"null", true), cx)?;
        }
        let mut reason = finish_from(DIALECT, Some(self.reason.as_deref().unwrap_or("stop")));
        if reason.as_deref() == Some("end_turn") && self.tools != 0 {
            reason = Some(Cow::Borrowed("tool_use"));
        }
        self.out(Event::Finish { reason, stop_sequence: None, choice: 0 }, cx)
    }

    /// `_error`: the stream's error object ends the message.
    fn error(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
        if value.is_null() {
            return Ok(()); // ("error": null, as a serializer that writes every field does: no error)
        }
        self.gate.release(cx, |event, cx| cx.emit(event))?;
        self.close_block(cx)?; // every block gets its last fragment; the error follows it
        crate::lifecycle::lose_error_members(&value, cx.session, &[])?;
        let message = match &value {
            Value::Object(_) => value.get("message").cloned().unwrap_or(Value::Null),
            _ => value,
        };
        let message = crate::lifecycle::source_error_message(Some(&message));
        cx.emit(Event::Error { kind: Cow::Borrowed("api_error"), message: Cow::Owned(message), status: None })?;
        self.errored = true;
        Ok(())
    }

    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
    }

    /// `session.lose_member(prefix + key)` of the member being read raw (the key WTF-8,
    /// as Python's str).
    fn lose_key(&self, prefix: std::fmt::Arguments<'_>, cx: &mut Cx<'_>) -> Result<()> {
        cx.session.lose_member_wtf8(&member_path(prefix, &self.key), "such field", None)
    }
}

/// An ollama field kept as an extension (`raw` borrowed: a gate that holds the event copies it).
fn extension<'r>(path: &'static str, raw: &'r [u8], lossless: bool) -> Event<'r> {
    Event::Extension(Extension {
        dialect: Cow::Borrowed(DIALECT),
        path: Cow::Borrowed(path.as_bytes()),
        raw: Cow::Borrowed(raw),
        message: None,
        lossless,
    })
}

#[cold]
fn internal(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the native core: {what}"))
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
                        b"type" => Read::Skip, // ("function", where a server writes it: it carries nothing)
                        key => {
                            // (was dropped with nothing recorded)
                            self.set_key(key);
                            Read::Raw(S::CallLost, None, "")
                        }
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
                            m.read(Read::Skip);
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
                    b"created_at" => {
                        // every line repeats it and only the first goes out: a later one is
                        // skipped where its raw read could not fail (a scalar within the budget)
                        // (the response's time, carried: a string, checked in every line)
                        let within = crate::lifecycle::raw_len(&token).is_some_and(|n| n <= cx.session.options.max_value_bytes);
                        if self.created && within && !OPT_STRING.refuses(&token) {
                            m.read(Read::Skip);
                        } else {
                            m.read(Read::Raw(S::Extension(None), Some(OPT_STRING), "created_at"));
                        }
                    }
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
                if key != b"content" && token != Token::Null {
                    // (a null member shows nothing: the text waits on)
                    self.text_member(key == b"thinking", cx)?;
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
                    b"role" => m.read(Read::Skip),
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
                    attrs: vec![(Cow::Borrowed("path"), str_json(path.as_bytes()).into())],
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

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Logprob => {
                // (`_checked_logprob`) its members' types, at the entry's first byte
                let path = cx.path();
                let path = String::from_utf8_lossy(&path);
                crate::dialects::fields::check_logprob(&cx.data(raw, offset)?, &path).map_err(|err| err.at(offset))?;
                self.out(Event::Logprobs { raw: Cow::Borrowed(raw), choice: 0 }, cx)
            }
            S::Extension(None) => {
                if !self.created {
                    self.created = true;
                    cx.emit(extension("$.created_at", raw, true))?;
                }
                Ok(())
            }
            S::Extension(Some(i)) => {
                let path = DURATION_PATHS[i as usize];
                self.out(extension(path, raw, raw == b"null"), cx) // (null: no duration)
            }
            S::Lost => {
                if raw != b"null" {
                    self.lose_key(format_args!("$."), cx)?;
                }
                Ok(())
            }
            S::MessageLost => {
                if raw != b"null" && raw != b"[]" {
                    self.lose_key(format_args!("$.message."), cx)?;
                }
                Ok(())
            }
            S::FunctionLost => {
                let position = self.call()?.position;
                self.lose_key(format_args!("$.message.tool_calls[{position}].function."), cx)
            }
            S::CallLost if raw == b"null" => Ok(()),
            S::CallLost => {
                let position = self.call()?.position;
                self.lose_key(format_args!("$.message.tool_calls[{position}]."), cx)
            }
            s => Err(internal(&format!("state {s:?} takes no raw value"))),
        }
    }

    fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Model => {
                self.model = crate::unicode::text_of(value);
                self.start_message(cx)
            }
            S::Done => {
                self.done = value.truthy();
                Ok(())
            }
            S::DoneReason => {
                self.reason = crate::unicode::text_of(value);
                Ok(())
            }
            S::Count(i) => {
                // an integral float is that count, another float an error; beyond 64 bits:
                // refused at its value (Python's `_count`)
                let key = COUNTS[i as usize];
                let value = match value {
                    Value::Float(f) if f.fract() != 0.0 || !(f >= 0.0) || f.is_infinite() => {
                        return Err(cx.error(format!("expected an integer for {key}"), offset));
                    }
                    Value::Float(f) if f >= 9.223_372_036_854_776e18 => {
                        return Err(cx.error(beyond_64_bits(key, "a token count"), offset));
                    }
                    Value::Float(f) => Value::int(f as i64),
                    other => other,
                };
                if let Value::Int(digits) = &value {
                    if crate::lifecycle::int_of_digits(digits.as_bytes()).is_none() {
                        return Err(cx.error(beyond_64_bits(key, "a token count"), offset));
                    }
                }
                self.counted = true;
                self.counts[i as usize] = Some(value);
                Ok(())
            }
            S::Error => self.error(value, cx),
            S::CallId => {
                // `_call_id`: with reordering refused the call went out without waiting for it
                if self.call()?.open {
                    return Err(cx.session.reorder.refused(CALL_BEFORE_ID));
                }
                self.call_attr("id", value.to_json())
            }
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
                // Go writes the call's position: nothing to carry when it is that (an integer, as
                // a request's: `index_at`; `true` or `1.0` says more)
                if usize::try_from(self.tools - 1).is_ok_and(|position| crate::decoding::index_at(&value, position)) {
                    return Ok(());
                }
                let position = self.call()?.position;
                let path = format!("$.message.tool_calls[{position}].function.index");
                let what = format!("tool-call index other than its position ({})", crate::unicode::py_value_repr(&value));
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
            let mut cx = Cx::outside(session, out);
            self.d.close_block(&mut cx)?; // (an answer after the error opened a block: it gets its last fragment)
            return cx.emit(Event::End);
        }
        Err(Error::new(ErrorClass::TruncatedInput, "ollama response ended before its done chunk").in_dialect(DIALECT))
    }
}

/// `ResponseDecoder`: one `/api/chat` response object -> canonical events.
pub struct ResponseDecoder(Decoder);

impl ResponseDecoder {
    pub fn new(_session: &Session) -> Self {
        ResponseDecoder(Decoder { m: Machine::starting(Read::State(S::Document)), d: Lines::new(false) })
    }
}

/// `StreamDecoder`: NDJSON lines, one response object each, the last `done: true`.
pub struct StreamDecoder(Decoder);

impl StreamDecoder {
    pub fn new(_session: &Session) -> Self {
        StreamDecoder(Decoder { m: Machine::new(), d: Lines::new(true) })
    }
}

macro_rules! decode_common {
    () => {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
                 out: &mut dyn EventSink) -> Result<()> {
            self.0.token(token, offset, path, session, out)
        }

        fn member(&mut self, key: &[u8], key_offset: u64, value: Token<'_>, offset: u64, path: &Frames,
                  session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            let cx = &mut Cx::new(path, session, out);
            self.0.m.feed_member(&mut self.0.d, key, key_offset, value, offset, cx)
        }

        fn whole_text(&mut self, max_value_bytes: usize) -> Option<(&mut Vec<u8>, usize)> {
            self.0.m.whole_text(max_value_bytes)
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
        Err(Error::new(ErrorClass::Schema, format!("NDJSON line is not a JSON object: {}", crate::unicode::py_bytes_repr(head)))
            .in_dialect(DIALECT))
    }

    fn source_done(&self) -> bool {
        self.0.d.ended || self.0.d.errored
    }
}

// -- encoders ----------------------------------------------------------------------------

use crate::encoding::{other_choice, 
    arguments_object, attr, attr_truthy, foreign_extension, lose_block, lose_signature, lose_unplaced, BlockHead,
    BlockRef, Encode, HeldArguments, Io, JoinedFields, lose_joined, MessageAssembler, Opener, WriterId, Writers,
};

/// `_DURATIONS`: ollama extensions, written back on the done line in this order.
const DURATIONS: [&str; 4] = ["total_duration", "load_duration", "prompt_eval_duration", "eval_duration"];
/// `_COUNTS`: the token counts (`Usage` input, output).
const COUNTS: [&str; 2] = ["prompt_eval_count", "eval_count"];

/// Where a block goes in an ollama message (`_classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Content,
    Thinking,
    ToolCalls,
}

impl Member {
    fn key(self) -> &'static str {
        match self {
            Member::Content => "content",
            Member::Thinking => "thinking",
            Member::ToolCalls => "tool_calls",
        }
    }
}

/// `_EncoderBase`: what both encoders keep of the lifecycle events.
struct Common {
    model: Option<String>,
    /// an ollama source's `created_at` (raw): written as it came; else the stamp's, once written
    created: Option<Vec<u8>>,
    stamp: Stamp,
    /// the durations of an ollama source (raw), by `DURATIONS` index
    durations: [Option<Vec<u8>>; 4],
    usage: Option<Usage>,
    /// choice 0's (reason, stop sequence)
    finish: Option<(Option<String>, Option<String>)>,
    /// the ollama source's done line had no done_reason
    no_reason: bool,
    /// token entries (`ollama:logprobs-after-message`): a line's go on that line (stream), a
    /// response's after done_reason; the entries' text joined by `,` in `logprob_text`
    logprobs: Option<Hold<()>>,
    logprob_text: Vec<u8>,
    done: bool,
    /// `_head()`'s text once written (empty: not yet, or the model changed): a stream
    /// writes it on every line, and neither the model nor `created_at` changes between
    head_text: Vec<u8>,
}

impl Common {
    fn new(session: &Session) -> Result<Self> {
        Ok(Common {
            model: None,
            created: None,
            stamp: Stamp::new(session.start()),
            durations: [None, None, None, None],
            usage: None,
            finish: None,
            no_reason: false,
            logprobs: None, // (made at the first entry: Python makes it here, no behaviour differs)
            logprob_text: Vec::new(),
            done: false,
            head_text: Vec::new(),
        })
    }

    /// `_common`: the lifecycle events; false for any other.
    fn event(&mut self, event: &Event<'_>, session: &mut Session) -> Result<bool> {
        match event {
            Event::MessageStart { id, model, choice } => {
                if *choice == 0 {
                    self.model = model.as_ref().map(|m| m.to_string());
                    self.head_text.clear();
                    if id.is_some() && session.source != DIALECT {
                        let stream = session.source == "anthropic" && session.kind == crate::session::Kind::Stream;
                        session.lose_member(if stream { "$.message.id" } else { "$.id" }, "response id", None)?;
                    }
                }
            }
            Event::Extension(ext) => self.extension(ext, session)?,
            Event::Usage(usage) => self.usage = Some(merge_usage(self.usage.as_ref(), usage.clone())),
            Event::Logprobs { raw, choice } => self.logprob(raw, *choice, session)?,
            Event::Finish { reason, stop_sequence, choice } => {
                if *choice == 0 {
                    self.finish = Some((reason.as_ref().map(|r| r.to_string()), stop_sequence.as_ref().map(|s| s.to_string())));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn extension(&mut self, ext: &Extension<'_>, session: &mut Session) -> Result<()> {
        if self.stamp.source(ext) {
            // a time field (lifecycle: response ids and times)
            if ext.dialect == DIALECT && self.created.is_none() {
                self.created = Some(ext.raw.to_vec());
            }
        } else if ext.dialect == DIALECT && ext.path.as_ref() == b"$.done_reason" {
            self.no_reason = true;
        } else if let Some(i) = duration_of(ext) {
            self.durations[i] = Some(ext.raw.to_vec());
        } else {
            foreign_extension(session, DIALECT, ext)?;
        }
        Ok(())
    }

    /// A token entry of choice 0 held for its line; another choice's is a loss.
    fn logprob(&mut self, raw: &[u8], choice: i64, session: &mut Session) -> Result<()> {
        if choice != 0 {
            return session.lose(format!("$.choices[{choice}].logprobs"), "ollama has no choices (n > 1)", None);
        }
        let hold = self.logprobs.get_or_insert_with(|| session.reorder.hold("ollama:logprobs-after-message"));
        hold.append(&mut session.reorder, (), raw.len() as u64)?;
        if !self.logprob_text.is_empty() {
            self.logprob_text.push(b',');
        }
        self.logprob_text.extend_from_slice(raw);
        Ok(())
    }

    /// The held entries are dropped (their bytes released).
    fn drop_logprobs(&mut self, session: &mut Session) {
        if let Some(hold) = self.logprobs.as_mut() {
            hold.drain(&mut session.reorder).for_each(drop);
        }
        self.logprob_text.clear();
    }

    /// `_logprobs_member`: `,"logprobs":[...]` of the entries held since the last line (or nothing).
    fn logprobs_member(&mut self, session: &mut Session, out: &mut Vec<u8>) {
        if !self.has_logprobs() {
            return;
        }
        out.extend_from_slice(b",\"logprobs\":[");
        out.extend_from_slice(&self.logprob_text);
        out.push(b']');
        self.drop_logprobs(session);
    }

    /// `bool(self.logprobs)`: entries are held.
    fn has_logprobs(&self) -> bool {
        self.logprobs.as_ref().is_some_and(|hold| !hold.is_empty())
    }

    /// `_head`: a line's opening up to its `created_at`, from the cache (every line has the same).
    fn head(&mut self, out: &mut Vec<u8>) {
        if self.head_text.is_empty() {
            if self.created.is_none() {
                // once written, every line has the same
                self.created = Some(ollama_created_at(self.stamp.time_us()));
            }
            let mut head = std::mem::take(&mut self.head_text);
            head.reserve(88 + self.model.as_deref().map_or(0, str::len)); // (once: no growth series)
            self.head_members(&mut head);
            self.head_text = head;
        }
        out.extend_from_slice(&self.head_text);
    }

    /// `_head`'s text, written into `out` (a response writes it once: no cache). The time is
    /// the stamp's, fixed by its first use.
    fn head_members(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"model\":");
        dumps_str(self.model.as_deref().unwrap_or("").as_bytes(), out);
        out.extend_from_slice(b",\"created_at\":");
        match &self.created {
            Some(created) => out.extend_from_slice(created),
            None => push_ollama_created_at(self.stamp.time_us(), out),
        }
    }

    /// `_tail`: `"done":true` and what comes with it.
    fn tail(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let reason = match &self.finish {
            Some((reason, stop)) => finish_to(DIALECT, reason.as_deref(), session, stop.as_deref())?,
            None => None,
        };
        out.extend_from_slice(b",\"done\":true");
        if let Some(reason) = reason.filter(|_| !self.no_reason) {
            out.extend_from_slice(b",\"done_reason\":");
            dumps_str(reason.as_bytes(), out);
        }
        self.logprobs_member(session, out);
        let counts = match &self.usage {
            Some(usage) => ollama_counts(usage, session)?,
            None => [None, None],
        };
        let count = |out: &mut Vec<u8>, i: usize| {
            if let Some(n) = counts[i] {
                member_key(out, COUNTS[i]);
                push_int(out, n);
            }
        };
        let duration = |out: &mut Vec<u8>, i: usize| {
            if let Some(raw) = &self.durations[i] {
                member_key(out, DURATIONS[i]);
                out.extend_from_slice(raw);
            }
        };
        duration(out, 0);
        duration(out, 1);
        count(out, 0);
        duration(out, 2);
        count(out, 1);
        duration(out, 3);
        out.push(b'}');
        Ok(())
    }
}

/// `,"<key>":` (an ASCII key).
fn member_key(out: &mut Vec<u8>, key: &str) {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// An ollama extension that is one of the durations (its `DURATIONS` index).
fn duration_of(ext: &Extension<'_>) -> Option<usize> {
    if ext.dialect != DIALECT {
        return None;
    }
    let key = crate::encoding::skip_chars(&ext.path, 2); // (`event.path[2:]`)
    DURATIONS.iter().position(|d| d.as_bytes() == key)
}

/// `_classify`: the member a block's first fragment goes to, or None (the loss recorded).
fn classify(block: &Block<'_>, session: &mut Session) -> Result<Option<Member>> {
    let b = BlockRef::of(block);
    Ok(match block.section {
        Section::AssistantText => Some(Member::Content),
        Section::AssistantRefusal => {
            lose_block(session, DIALECT, b, "refusal field", Some("written as content"), None)?;
            Some(Member::Content)
        }
        Section::AssistantReasoning => {
            if attr_truthy(b.attrs, "redacted") {
                lose_block(session, DIALECT, b, "field for encrypted thinking", None, None)?;
                return Ok(None);
            }
            lose_signature(session, DIALECT, b, b.attrs)?;
            Some(Member::Thinking)
        }
        Section::ToolCall => Some(Member::ToolCalls),
        _ => {
            lose_unplaced(session, DIALECT, b)?;
            None
        }
    })
}

/// `_call_head`: a tool call's opening up to its function object: the id first (Go's
/// order) when the source has one (the current API carries ids).
fn call_head(attrs: &[crate::encoding::Attr<'_>], out: &mut Vec<u8>) {
    match attr(attrs, "id").filter(|id| crate::encoding::truthy(id)) {
        Some(id) => {
            out.extend_from_slice(b"{\"id\":");
            out.extend_from_slice(id);
            out.extend_from_slice(b",\"function\":");
        }
        None => out.extend_from_slice(b"{\"function\":"),
    }
}

/// `_call_head(attrs) + '{"name":' + dumps(attrs.get("name", "")) + ',"arguments":'`.
fn call_opening(attrs: &[crate::encoding::Attr<'_>], out: &mut Vec<u8>) {
    call_head(attrs, out);
    out.extend_from_slice(b"{\"name\":");
    out.extend_from_slice(attr(attrs, "name").unwrap_or(b"\"\""));
    out.extend_from_slice(b",\"arguments\":");
}

/// `lifecycle.OpenFrame`: at most one output line open for streaming fragments; `key`
/// names the block it carries. (A stand-in until lifecycle.rs has it: helper RF.)
#[derive(Default)]
struct OpenFrame {
    key: Option<u64>,
    tail: Vec<u8>,
}

impl OpenFrame {
    fn fragment(&mut self, key: u64, head: impl FnOnce(&mut Vec<u8>), tail: &[u8], payload: &[u8], out: &mut Vec<u8>) {
        if payload.is_empty() {
            return;
        }
        if self.key != Some(key) {
            self.close(out);
            head(out);
            self.key = Some(key);
            self.tail.clear();
            self.tail.extend_from_slice(tail);
        }
        out.extend_from_slice(payload);
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        if self.key.take().is_some() {
            out.extend_from_slice(&self.tail);
            self.tail.clear();
        }
    }
}

const LINE_TAIL: &[u8] = b"\"},\"done\":false}\n";
const CONTENT_HEAD: &[u8] = b",\"message\":{\"role\":\"assistant\",\"content\":\"";
const THINKING_HEAD: &[u8] = b",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"";

/// `_error_object`: `{"error": message}`; an empty message is the error's type (then
/// `"error"`): the ollama client raises `ResponseError` only for a non-empty `error`.
fn error_object(error: &Event<'_>, out: &mut Vec<u8>) {
    let message = match error {
        Event::Error { message, .. } if !message.is_empty() => message.as_ref(),
        Event::Error { kind, .. } if !kind.is_empty() => kind.as_bytes(),
        _ => b"error",
    };
    out.extend_from_slice(b"{\"error\":");
    dumps_str(message, out);
    out.push(b'}');
}

/// `StreamEncoder`: NDJSON lines -- one per source frame and block, a tool call whole, the
/// done line last; an error becomes an `{"error": ...}` line that ends the stream.
pub struct StreamEncoder {
    c: Common,
    frame: OpenFrame,
    kind: Option<Member>,
    seq: u64,
    /// the call being held whole (`ollama:whole-tool-call`): its first fragment, its arguments
    /// (boxed: a stream's text lines need none of it, and the encoder stays within glibc's
    /// thread cache, `box_sizes`)
    tool: Option<Box<(BlockHead, HeldArguments)>>,
    errored: bool,
    /// the fields a block went into (`_lose_joined`)
    joined: JoinedFields<Member>,
}

impl StreamEncoder {
    pub fn new(session: &Session) -> Result<Self> {
        Ok(StreamEncoder { c: Common::new(session)?, frame: OpenFrame::default(), kind: None, seq: 0, tool: None, errored: false,
                          joined: JoinedFields::default() })
    }

    fn frame_end(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.c.has_logprobs() && self.frame.key.is_some() {
            // on the line of the content they score
            let mut tail = std::mem::take(&mut self.frame.tail);
            tail.truncate(tail.len().saturating_sub(2));
            self.c.logprobs_member(session, &mut tail);
            tail.extend_from_slice(b"}\n");
            self.frame.tail = tail;
        } else if self.c.has_logprobs() && !self.c.done {
            // a line without streamed text (a whole tool call)
            self.c.drop_logprobs(session);
            session.lose("$.logprobs", "token logprobs of a line without text: not carried", None)?;
        }
        self.frame.close(out);
        Ok(())
    }

    fn block(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if other_choice(session, DIALECT, block)? {
            return Ok(());
        }
        if block.init {
            self.frame.close(out);
            self.seq += 1;
            self.kind = classify(block, session)?;
            match self.kind {
                Some(Member::ToolCalls) => {
                    self.tool = Some(Box::new((BlockHead::of(block), HeldArguments::new(session, "ollama:whole-tool-call"))));
                }
                Some(kind) => self.joined.lose_joined(block, kind, session, DIALECT)?,
                None => {}
            }
        }
        let Some(kind) = self.kind else { return Ok(()) };
        if kind == Member::ToolCalls {
            let Some(held) = self.tool.as_mut() else { return Err(internal("a tool call's fragment without its first")) };
            held.1.feed(&block.payload, session)?;
            if block.fin {
                let Some(held) = self.tool.take() else { return Ok(()) };
                let (first, args) = *held;
                let mut arguments = arguments_object(session, DIALECT, args, first.as_ref())?;
                crate::framing::one_line(&mut arguments);
                self.c.head(out);
                out.extend_from_slice(b",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[");
                call_opening(&first.attrs, out);
                out.extend_from_slice(if arguments.is_empty() { b"{}" } else { &arguments });
                out.extend_from_slice(b"}}]},\"done\":false}\n");
            }
            return Ok(());
        }
        let head = if kind == Member::Content { CONTENT_HEAD } else { THINKING_HEAD };
        let c = &mut self.c;
        self.frame.fragment(self.seq, |out| {
            c.head(out);
            out.extend_from_slice(head);
        }, LINE_TAIL, &block.payload, out);
        if block.fin && !block.init {
            lose_signature(session, DIALECT, BlockRef::of(block), block.attrs.as_deref().unwrap_or(&[]))?;
        }
        Ok(())
    }

    fn end(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.c.done {
            return Ok(());
        }
        self.c.done = true;
        if self.errored {
            return Ok(());
        }
        self.frame.close(out);
        let mut line = Vec::with_capacity(384); // (sized once: head, message and the done members)
        self.c.head(&mut line);
        line.extend_from_slice(b",\"message\":{\"role\":\"assistant\",\"content\":\"\"}");
        self.c.tail(session, &mut line)?;
        line.push(b'\n');
        out.extend_from_slice(&line);
        Ok(())
    }
}

impl Encode for StreamEncoder {
    /// Every line, its text included, line-safe (`ndjson_safe`, Python's wrapped `write`).
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        let written = self.on_event(event, session, out);
        crate::framing::ndjson_safe(out, start);
        written
    }

    fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }

    fn abort(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        let written = self.error_line(error, session, out);
        crate::framing::ndjson_safe(out, start);
        written
    }
}

impl StreamEncoder {
    fn on_event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.errored && matches!(event, Event::Block(_)) {
            // the error event ended the target's stream
            return Err(crate::lifecycle::answer_after_error());
        }
        match &event {
            Event::FrameEnd => self.frame_end(session, out),
            Event::Block(block) => {
                if self.c.done {
                    return Ok(());
                }
                self.block(block, session, out)
            }
            Event::Error { .. } => self.error_line(&event, session, out),
            Event::End => self.end(session, out),
            // (its error line ended the stream)
            Event::Usage(usage) if self.errored => crate::lifecycle::lose_usage_after_error(Some(usage), session, DIALECT),
            Event::Finish { reason, stop_sequence, choice: 0 } if self.errored => {
                crate::lifecycle::lose_finish_after_error(reason.as_deref(), stop_sequence.as_deref(), 0, session, DIALECT)
            }
            Event::Finish { .. } => {
                self.frame.close(out);
                self.c.event(&event, session).map(drop)
            }
            _ => self.c.event(&event, session).map(drop),
        }
    }

    /// `abort`: the error line, and the stream ends there.
    fn error_line(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.c.done || self.errored {
            return Ok(());
        }
        self.frame.close(out);
        self.errored = true;
        let mut line = Vec::new();
        error_object(error, &mut line);
        crate::framing::ndjson_line(out, &line);
        // its error line ends the stream: the done line's finish and counts are not sent
        if let Some((reason, stop_sequence)) = &self.c.finish {
            crate::lifecycle::lose_finish_after_error(reason.as_deref(), stop_sequence.as_deref(), 0, session, DIALECT)?;
        }
        crate::lifecycle::lose_usage_after_error(self.c.usage.as_ref(), session, DIALECT)
    }
}

/// The block being written into the response's message (`placed`).
enum Placed {
    /// a string member: fragments go to its writer
    Text(WriterId),
    /// a tool call: its arguments held whole (`ollama:tool-arguments`), then its writer gets them
    /// (the arguments boxed: a tokenizer in place made the encoder too big for glibc's thread cache)
    Call { writer: WriterId, args: Box<HeldArguments>, first: BlockHead },
}

/// `ResponseEncoder`: one `/api/chat` response object, its message assembled from the
/// blocks in whatever order they come (`ollama:member-order`).
pub struct ResponseEncoder {
    c: Common,
    writers: Writers,
    /// (boxed: with it in place the encoder was over the 1032 bytes glibc's thread cache
    /// serves -- a slow malloc and free per response)
    msg: Option<Box<MessageAssembler>>,
    placed: Option<Placed>,
    lost: bool,
    /// the body written is the source's error: no answer may follow it
    errored: bool,
    /// the message was opened (Python's `msg is not None`, which stays so after the end): an
    /// error after it has no place
    begun: bool,
}

impl ResponseEncoder {
    pub fn new(session: &Session) -> Result<Self> {
        Ok(ResponseEncoder { c: Common::new(session)?, writers: Writers::default(), msg: None, placed: None, lost: false,
                             errored: false, begun: false })
    }

    /// `_message`: the message object, opened (with the response's head) on first use; after the
    /// source's error body, refused (`answer_and_error`).
    fn message<'m>(msg: &'m mut Option<Box<MessageAssembler>>, c: &mut Common, io: &mut Io<'_>,
                   errored: bool) -> Result<&'m mut MessageAssembler> {
        if msg.is_none() {
            if errored {
                return Err(crate::lifecycle::answer_and_error());
            }
            c.head_members(io.out); // (the output's writer: written straight)
            io.out.extend_from_slice(b",\"message\":");
            let mut opened = MessageAssembler::new(WriterId::OUT, io, "ollama:member-order", b"", None)?;
            opened.scalar(io, "role", b"\"assistant\"")?;
            *msg = Some(Box::new(opened));
        }
        msg.as_deref_mut().ok_or_else(|| internal("no message"))
    }

    fn block(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
        if other_choice(io.session, DIALECT, block)? {
            return Ok(());
        }
        if block.init {
            let kind = classify(block, io.session)?;
            self.lost = kind.is_none();
            let Some(kind) = kind else { return Ok(()) };
            let msg = Self::message(&mut self.msg, &mut self.c, io, self.errored)?;
            self.begun = true;
            self.placed = Some(if kind == Member::ToolCalls {
                let writer = msg.member(io, "tool_calls", Opener::Array)?;
                io.separate(writer)?;
                let mut opening = Vec::new();
                call_opening(block.attrs.as_deref().unwrap_or(&[]), &mut opening);
                io.write(writer, &opening)?;
                let args = Box::new(HeldArguments::new(io.session, "ollama:tool-arguments"));
                Placed::Call { writer, args, first: BlockHead::of(block) }
            } else {
                lose_joined(msg.has(kind.key()), block, io.session, DIALECT)?;
                Placed::Text(msg.member(io, kind.key(), Opener::String)?)
            });
        }
        if self.lost {
            return Ok(());
        }
        match self.placed.as_mut() {
            Some(Placed::Text(writer)) => io.write(*writer, &block.payload)?,
            Some(Placed::Call { args, .. }) => args.feed(&block.payload, io.session)?,
            None => return Err(internal("a fragment of no block")),
        }
        if block.fin {
            if let Some(Placed::Call { writer, args, first }) = self.placed.take() {
                let mut arguments = arguments_object(io.session, DIALECT, *args, first.as_ref())?;
                arguments.extend_from_slice(b"}}");
                io.write(writer, &arguments)?;
            }
            if !block.init {
                lose_signature(io.session, DIALECT, BlockRef::of(block), block.attrs.as_deref().unwrap_or(&[]))?;
            }
        }
        Ok(())
    }

    /// Run `f` with the writers (taken out of `self` meanwhile).
    fn with_io(&mut self, session: &mut Session, out: &mut Vec<u8>,
               f: impl FnOnce(&mut Self, &mut Io<'_>) -> Result<()>) -> Result<()> {
        let mut writers = std::mem::take(&mut self.writers);
        let result = f(self, &mut Io { out, session, writers: &mut writers });
        self.writers = writers;
        result
    }

    fn end(&mut self, io: &mut Io<'_>) -> Result<()> {
        if self.c.done {
            return Ok(());
        }
        self.c.done = true;
        let msg = Self::message(&mut self.msg, &mut self.c, io, self.errored)?;
        self.begun = true;
        if !msg.has("content") {
            msg.scalar(io, "content", b"\"\"")?;
        }
        if let Some(msg) = self.msg.take() {
            msg.close(io)?;
        }
        // (the output's writer: written straight, as the head; nothing of it stays on an error)
        let at = io.out.len();
        let result = self.c.tail(io.session, io.out);
        if result.is_err() {
            io.out.truncate(at);
        }
        result
    }
}

impl Encode for ResponseEncoder {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        match &event {
            Event::Block(block) => self.with_io(session, out, |enc, io| enc.block(block, io)),
            Event::Error { .. } => {
                // `_error`: the error body when nothing was written yet; after the answer began, refused
                if self.begun {
                    return Err(crate::lifecycle::answer_and_error());
                }
                if !self.c.done {
                    self.errored = true;
                }
                self.abort(&event, session, out)
            }
            Event::End => self.with_io(session, out, |enc, io| enc.end(io)),
            Event::FrameEnd => Ok(()),
            _ => self.c.event(&event, session).map(drop),
        }
    }

    fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }

    fn abort(&mut self, error: &Event<'_>, _session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.c.done {
            return Ok(());
        }
        self.c.done = true;
        if self.msg.is_none() {
            error_object(error, out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Front;
    use crate::session::{Kind, Options};

    /// The events of a stream, each into the ollama stream encoder (a sink of the front).
    struct Encoding<'e> {
        encoder: &'e mut StreamEncoder,
        out: Vec<u8>,
        events: usize,
    }

    impl EventSink for Encoding<'_> {
        fn event(&mut self, event: Event<'_>, session: &mut Session) -> Result<()> {
            self.events += 1;
            self.encoder.event(event, session, &mut self.out)
        }
    }

    fn text_stream(n: usize) -> Vec<Vec<u8>> {
        let mut lines: Vec<Vec<u8>> = (0..n)
            .map(|i| format!("{{\"model\":\"qwen3\",\"created_at\":\"2025-06-01T10:00:00.{:06}Z\",\"message\":{{\"role\":\"assistant\",\"content\":\" tok{i}\"}},\"done\":false}}\n", i + 1).into_bytes())
            .collect();
        lines.push(b"{\"model\":\"qwen3\",\"created_at\":\"2025-06-01T10:00:01Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"total_duration\":5,\"prompt_eval_count\":3,\"eval_count\":1001}\n".to_vec());
        lines
    }

    /// One frame per feed through the stream front, the decoder and the encoder: the bytes
    /// each line makes (a line of text per source line, then the done line).
    fn transcode(lines: &[Vec<u8>]) -> (Vec<u8>, usize) {
        let mut session = Session::new(Options::default(), DIALECT, DIALECT, Kind::Stream);
        session.response_start = Some(crate::session::ResponseStart { time_us: 1, nonce: [0; 12] });
        let mut front = Front::new(DIALECT, Kind::Stream, &session).unwrap();
        let mut encoder = StreamEncoder::new(&session).unwrap();
        let mut sink = Encoding { encoder: &mut encoder, out: Vec::new(), events: 0 };
        for line in lines {
            front.feed(line, &mut session, &mut sink).unwrap();
        }
        front.close(&mut session, &mut sink).unwrap();
        (sink.out, sink.events)
    }

    #[test]
    fn a_stream_through_both_codecs_is_the_same_lines() {
        let lines = text_stream(3);
        let (out, _) = transcode(&lines);
        let text = String::from_utf8(out).unwrap();
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], r#"{"model":"qwen3","created_at":"2025-06-01T10:00:00.000001Z","message":{"role":"assistant","content":" tok0"},"done":false}"#);
        assert_eq!(got[3], r#"{"model":"qwen3","created_at":"2025-06-01T10:00:00.000001Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":5,"prompt_eval_count":3,"eval_count":1001}"#);
    }

    /// `cargo test --release -- --ignored --nocapture per_frame`: µs per frame of the decoder
    /// (a counting sink) and of decoder + encoder, one line per feed.
    #[test]
    #[ignore]
    fn per_frame_cost() {
        struct Count(usize);
        impl EventSink for Count {
            fn event(&mut self, _event: Event<'_>, _session: &mut Session) -> Result<()> {
                self.0 += 1;
                Ok(())
            }
        }
        let lines = text_stream(1000);
        let best = |f: &mut dyn FnMut()| {
            let reps = std::env::var("RL_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(20);
            (0..reps).map(|_| {
                let t = std::time::Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e6 / lines.len() as f64
            }).fold(f64::MAX, f64::min)
        };
        let decode = best(&mut || {
            let mut session = Session::new(Options::default(), DIALECT, "", Kind::Stream);
            let mut front = Front::new(DIALECT, Kind::Stream, &session).unwrap();
            let mut count = Count(0);
            for line in &lines {
                front.feed(line, &mut session, &mut count).unwrap();
            }
            front.close(&mut session, &mut count).unwrap();
        });
        let both = best(&mut || {
            transcode(&lines);
        });
        println!("ollama stream, 1,001 lines: decode {decode:.3} us/frame, decode + encode {both:.3} us/frame");
    }
}
