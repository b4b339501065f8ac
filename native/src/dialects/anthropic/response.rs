//! The anthropic response and stream codecs (`src/interlingua/dialects/anthropic/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RA (issue 12).
//!
//! # Decoding
//!
//! Python's reader objects are the decoder's fields: the response's start (`ResponseDecoderBase`:
//! id, model, the gate content waits behind until the message starts), at most one content block
//! (`_ContentBlock`: the `message` body reads one `content[]` element at a time, a stream has one
//! block open between content_block_start and its stop), and a stream's frame (`f_type`,
//! `f_index`, `f_usage`, `f_stop`). Their handlers and `done` callbacks are the states `S` of the
//! decoding machine (decoding.rs). The rules are response.py's docstring; the notes here say
//! only where the Rust shape differs.
//!
//! * A content block's members before its `type` (sorted keys) are held as tokens (reorder
//!   buffer, `anthropic:content-before-type`) and replayed into the machine when the type comes
//!   (`KeyFirst`); a source that puts `type` first holds nothing.
//! * A frame's `type` and `index`, and a delta's type, are read from the token where it is
//!   a plain string or number (no escape): nothing is allocated per frame for them.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{escape_raw_json, unescape_json_text, Block, Event, Section, Usage};
use crate::decoding::{
    dumps, dumps_key, into_owned, set_attr, Attr, Cx, Decode, Dialect, EventSink, Frame, Machine, Read, ResponseBase,
    INTEGER, OBJECT, OPT_ARRAY, OPT_OBJECT, OPT_STRING, STRING,
};
use crate::encoding::{other_choice, 
    arguments_object, attr, attr_is, attr_truthy, foreign_extension, json_str, lose_block, lose_unplaced, response_tool_name,
    truthy, BlockHead, BlockRef, Encode, HeldArguments,
};
use crate::error::{Error, ErrorClass, Result};
use crate::framing::{sse_event, sse_open};
use crate::json::{Frames, Token};
use crate::lifecycle::{
    finish_from, finish_to, generated_tool_id, merge_anthropic_usage, merge_usage, usage_from_anthropic, push_usage_anthropic, BlockStream, UsageObject,
    Deferred, OpenFrame, Stamp,
};
use crate::losses::{finish_path, lacks};
use crate::unicode::text_of;
use crate::naming::{anthropic_id, canonical_id};
use crate::reorder::{ByteHold, Hold};
use crate::session::Session;
use crate::value::Value;

const DIALECT: &str = "anthropic";

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// The handlers (Python's reader methods and `done` callbacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum S {
    // -- the `message` body (`ResponseDecoder._member`)
    Body,
    StopReason,
    StopSequence,
    BodyUsage,
    Content,
    // -- shared by both decoders
    Id,
    Model,
    /// the body's `type` (`body_type`)
    BodyType,
    /// `_error`
    ErrorValue,
    /// a member without canonical field: a loss at `lost_path` unless it is `null`
    LoseNonNull,
    /// the same, even when it is `null` (a stream event's unknown member)
    LoseAlways,
    // -- a content block (`_ContentBlock`)
    /// the block's members (`_ContentBlock.member`), read once its `type` is known (`KeyFirst`)
    Block,
    BlockText,
    Signature,
    CitationList,
    ToolId,
    ToolName,
    ToolInput,
    ServerInput,
    ServerMember,
    // -- a stream event (`StreamDecoder`)
    Document,
    Event,
    Type,
    Index,
    /// message_start's `message` (`_message_member`)
    Message,
    MessageUsage,
    MessageContent,
    MessageStop,
    /// the top-level `usage` of an event (`_delta_usage`)
    EventUsage,
    Delta,
    DeltaStopReason,
    DeltaStopSequence,
    DeltaText,
    PartialJson,
    Citation,
}

/// A content block's type (`_ContentBlock.type`): the four it maps, or a block carried raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    RedactedThinking,
    ToolUse,
    /// server_tool_use, web_search_tool_result, ... (and no type at all): server-tool-result
    Server,
}

/// One content block being decoded (`_ContentBlock`, with its `BlockStream` and its
/// `Deferred` input).
#[derive(Debug)]
struct ContentBlock {
    index: u64,
    kind: Kind,
    /// the type as the source wrote it (`None`: none; errors name it)
    type_name: Option<String>,
    /// its fragments (the first's attributes: a tool call's id and name fill them until it goes)
    stream: BlockStream,
    /// late attributes: a thinking block's signature
    late: Vec<Attr>,
    citations: Option<Hold<Vec<u8>>>,
    /// a tool_use got input (deltas or a non-empty object)
    json_seen: bool,
    /// a server block whose input comes as deltas
    deferred_input: bool,
    json_parts: bool,
    /// a tool_use's `input` member came: what it holds until id and name come
    deferred: Option<Deferred>,
    /// `_input_fragment`'s head: the first bytes, kept while they may be the `{}` placeholder
    head: Option<Vec<u8>>,
}

impl ContentBlock {
    fn new(index: u64) -> Self {
        ContentBlock {
            index,
            kind: Kind::Server,
            type_name: None,
            stream: BlockStream::new(Section::ServerToolResult, 0, Vec::new(), None),
            late: Vec::new(),
            citations: None,
            json_seen: false,
            deferred_input: false,
            json_parts: false,
            deferred: None,
            head: None,
        }
    }

    fn at(&self) -> String {
        format!("$.content[{}]", self.index)
    }

    /// `BlockStream.fragment`: a fragment of the block (the first carries the attributes).
    fn fragment(&mut self, data: &[u8], start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        match self.stream.fragment(data) {
            Some(block) => start.out(Event::Block(block), cx),
            None => Ok(()),
        }
    }

    /// `BlockStream.announce`: the first fragment now, even empty (a tool call's id and name).
    fn announce(&mut self, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        match self.stream.announce() {
            Some(block) => start.out(Event::Block(block), cx),
            None => Ok(()),
        }
    }

    /// `BlockStream.close(late)`: the last (empty) fragment, with the late attributes.
    fn close(&mut self, late: &[Attr], start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        let block = self.stream.close(late);
        start.out(Event::Block(block), cx)
    }

    /// `_typed`: the block's type is known (`None`: the object had none).
    fn typed(&mut self, value: Option<String>, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        let index = self.index;
        // `"$.content[<index>]<suffix>"` (ASCII, nothing to escape: the JSON is written as is)
        let path = |suffix: &str| {
            let mut json = Vec::with_capacity(24 + suffix.len());
            json.extend_from_slice(b"\"$.content[");
            crate::lifecycle::push_u64(&mut json, index);
            json.push(b']');
            json.extend_from_slice(suffix.as_bytes());
            json.push(b'"');
            json
        };
        self.kind = match value.as_deref() {
            Some("text") => Kind::Text,
            Some("thinking") => Kind::Thinking,
            Some("redacted_thinking") => Kind::RedactedThinking,
            Some("tool_use") => Kind::ToolUse,
            _ => Kind::Server,
        };
        let (section, attrs): (Section, Vec<Attr>) = match self.kind {
            Kind::Text => (Section::AssistantText, vec![("path".into(), path(".text").into())]),
            Kind::Thinking => (Section::AssistantReasoning, vec![("path".into(), path(".thinking").into())]),
            Kind::RedactedThinking => {
                (Section::AssistantReasoning, vec![("redacted".into(), Cow::Borrowed(b"true")), ("path".into(), path(".data").into())])
            }
            // (its BlockStream is made when id and name are known, or at its input: the same events)
            Kind::ToolUse => (Section::ToolCall, vec![("path".into(), path("").into())]),
            Kind::Server => (Section::ServerToolResult, vec![("dialect".into(), Cow::Borrowed(b"\"anthropic\"")), ("path".into(), path("").into())]),
        };
        self.stream = BlockStream::new(section, 0, attrs, None);
        if self.kind == Kind::Server {
            let mut head = b"{\"type\":".to_vec();
            match value.as_deref() {
                Some(t) => dumps_key(t.as_bytes(), &mut head),
                None => head.extend_from_slice(b"null"),
            }
            self.fragment(&head, start, cx)?;
        }
        self.type_name = value;
        Ok(())
    }

    /// `_signature`: a truthy signature rides on the last fragment.
    fn signature(&mut self, value: &Value) {
        if value.truthy() {
            set_attr(&mut self.late, "signature".into(), json_of(value));
        }
    }

    /// `citation(raw)`: held until the block stops (`anthropic:citations-after-text`).
    fn citation(&mut self, raw: Vec<u8>, session: &mut Session) -> Result<()> {
        let size = raw.len() as u64;
        let hold = self.citations.get_or_insert_with(|| session.reorder.hold("anthropic:citations-after-text"));
        hold.append(&mut session.reorder, raw, size)
    }

    /// `Deferred.fragment` of a tool call's input: straight on once its id and name are known
    /// (and nothing was held), else held (`anthropic:input-before-name`).
    fn deferred_fragment(&mut self, data: &[u8], start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        let has = |name: &str| self.stream.attrs.iter().any(|(n, _)| n == name);
        let ready = has("id") && has("name");
        let deferred = self.deferred.get_or_insert_with(|| Deferred::new("anthropic:input-before-name"));
        if deferred.fragment(data, ready, cx.session)? {
            return self.fragment(data, start, cx);
        }
        Ok(())
    }

    /// `Deferred.release`: the held input goes out.
    fn release_deferred(&mut self, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        let held = match self.deferred.as_mut() {
            Some(deferred) => deferred.release(cx.session),
            None => return Ok(()),
        };
        for data in held {
            self.fragment(&data, start, cx)?;
        }
        Ok(())
    }

    /// `_input_fragment`'s sink: the input object's raw JSON, escaped, through the `Deferred`
    /// (`{}` alone is a stream's placeholder: no payload).
    fn input_fragment(&mut self, data: &[u8], fin: bool, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        let data: Cow<'_, [u8]> = match self.head.as_mut() {
            Some(head) => {
                head.extend_from_slice(data);
                if head.len() < 3 && !fin {
                    return Ok(());
                }
                let head = self.head.take().unwrap_or_default();
                if fin && head == b"{}" {
                    return Ok(());
                }
                Cow::Owned(head)
            }
            None => Cow::Borrowed(data),
        };
        self.json_seen = true;
        let mut escaped = Vec::with_capacity(data.len() + 8);
        escape_raw_json(&data, &mut escaped);
        self.deferred_fragment(&escaped, start, cx)
    }

    /// `_server_input`: a server block's input object (`{}`: its JSON comes as deltas).
    fn server_input(&mut self, raw: &[u8], start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        if raw == b"{}" {
            self.deferred_input = true;
            return Ok(());
        }
        let mut data = b",\"input\":".to_vec();
        data.extend_from_slice(raw);
        self.fragment(&data, start, cx)
    }

    /// `partial_json(data)`: an input_json_delta fragment.
    fn partial_json(&mut self, data: &[u8], start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        if self.kind == Kind::ToolUse {
            if !data.is_empty() {
                self.json_seen = true;
            }
            return self.fragment(data, start, cx);
        }
        if self.deferred_input {
            if !self.json_parts {
                self.fragment(b",\"input\":", start, cx)?;
                self.json_parts = true;
            }
            let text = unescape_json_text(data)?;
            return self.fragment(&text, start, cx);
        }
        Err(Error::new(ErrorClass::Schema, format!("input_json_delta on a {} block", self.type_text()))
            .in_dialect(DIALECT))
    }

    /// `f"{self.type}"`
    fn type_text(&self) -> &str {
        self.type_name.as_deref().unwrap_or("None")
    }

    /// `end(offset)`: the block object's `}` (a tool call is announced: id and name first).
    fn object_end(&mut self, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        if self.kind == Kind::ToolUse {
            self.release_deferred(start, cx)?;
            self.announce(start, cx)?;
        }
        Ok(())
    }

    /// `stop()`: the block's end (its last fragment), then its citations.
    fn stop(&mut self, start: &mut ResponseBase, cx: &mut Cx<'_>) -> Result<()> {
        match self.kind {
            Kind::ToolUse => {
                if !self.json_seen {
                    self.fragment(b"{}", start, cx)?;
                }
                self.close(&[], start, cx)?;
            }
            Kind::Text | Kind::Thinking | Kind::RedactedThinking => {
                let mut late = std::mem::take(&mut self.late);
                if !late.is_empty() {
                    let mut path = Vec::new();
                    dumps_key(format!("{}.{}", self.at(), self.type_text()).as_bytes(), &mut path);
                    set_attr(&mut late, "path".into(), path);
                }
                self.close(&late, start, cx)?;
            }
            Kind::Server => {
                let tail: &[u8] = match (self.deferred_input, self.json_parts) {
                    (true, true) | (false, _) => b"}",
                    (true, false) => b",\"input\":{}}",
                };
                self.fragment(tail, start, cx)?;
                self.close(&[], start, cx)?;
            }
        }
        if let Some(mut hold) = self.citations.take() {
            let mut raw = b"[".to_vec();
            for (i, citation) in hold.drain(&mut cx.session.reorder).enumerate() {
                if i > 0 {
                    raw.push(b',');
                }
                raw.extend_from_slice(&citation);
            }
            raw.push(b']');
            let mut path = Vec::new();
            dumps_key(format!("{}.citations", self.at()).as_bytes(), &mut path);
            let attrs = vec![(Cow::Borrowed("dialect"), Cow::Borrowed(&b"\"anthropic\""[..])), (Cow::Borrowed("path"), Cow::Owned(path))];
            start.out(Event::Block(Block { section: Section::Citations, message: 0, payload: Cow::Owned(raw), init: true,
                                           fin: true, attrs: Some(attrs) }), cx)?;
        }
        Ok(())
    }
}

/// A stream frame's `type` (`f_type`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum FrameType {
    MessageStart,
    ContentBlockStart,
    ContentBlockDelta,
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Ping,
    Error,
    Other(String),
}

impl FrameType {
    fn of(text: &[u8]) -> FrameType {
        if text == b"content_block_delta" {
            return FrameType::ContentBlockDelta; // (a stream's frames are deltas but a few: one comparison)
        }
        match text {
            b"message_start" => FrameType::MessageStart,
            b"content_block_start" => FrameType::ContentBlockStart,
            b"content_block_stop" => FrameType::ContentBlockStop,
            b"message_delta" => FrameType::MessageDelta,
            b"message_stop" => FrameType::MessageStop,
            b"ping" => FrameType::Ping,
            b"error" => FrameType::Error,
            other => FrameType::Other(String::from_utf8_lossy(other).into_owned()),
        }
    }

    fn name(&self) -> &str {
        match self {
            FrameType::MessageStart => "message_start",
            FrameType::ContentBlockStart => "content_block_start",
            FrameType::ContentBlockDelta => "content_block_delta",
            FrameType::ContentBlockStop => "content_block_stop",
            FrameType::MessageDelta => "message_delta",
            FrameType::MessageStop => "message_stop",
            FrameType::Ping => "ping",
            FrameType::Error => "error",
            FrameType::Other(name) => name,
        }
    }
}

/// A frame's `index` (`f_index`): an integer (`repr` is its digits) or absent.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FrameIndex {
    Absent,
    Small(u64),
    /// negative or beyond u64: never a block's index; its Python repr
    Other(String),
}

/// The state of one frame of a stream (`_reset_frame`).
#[derive(Debug)]
struct FrameState {
    type_: Option<FrameType>,
    index: FrameIndex,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    stop_sequence: Option<String>,
}

impl FrameState {
    fn new() -> Self {
        FrameState { type_: None, index: FrameIndex::Absent, usage: None, stop_reason: None, stop_sequence: None }
    }
}

/// The readers' data of both decoders (`_Base` and its subclasses).
pub(crate) struct Readers {
    stream: bool,
    /// `ResponseDecoderBase`: id, model, the gate content waits behind until the message starts
    start: ResponseBase,
    /// (boxed: the decoder is allocated per response, and with the block in place it was
    /// over the 1032 bytes glibc's thread cache serves -- a slow malloc and free per response)
    block: Option<Box<ContentBlock>>,
    /// the target is another dialect: tool ids are made canonical (`own`)
    foreign: bool,
    /// where a member without a field was (the loss recorded when its value is complete; WTF-8)
    lost_path: Vec<u8>,
    // -- the `message` body
    stop_reason: Option<String>,
    stop_sequence: Option<String>,
    usage: Option<Usage>,
    position: u64,
    /// the body's `type` read so far: `Some(is "error")` (`body_type`; null or absent: `None`)
    body_type: Option<bool>,
    /// the body's `content` came (`content_seen`)
    content_seen: bool,
    // -- a stream
    blocks_seen: u64,
    ended: bool,
    message_seen: bool,
    frame: FrameState,
}

/// `ResponseDecoder`: the `message` body -> canonical events (the machine and the readers).
pub(crate) type ResponseDecoder = crate::decoding::MachineDecoder<Readers>;

/// `StreamDecoder`: the SSE lifecycle -> canonical events.
pub struct StreamDecoder {
    m: Machine<S>,
    d: Readers,
}

impl Readers {
    fn new(session: &Session, stream: bool) -> Self {
        Readers {
            stream,
            start: ResponseBase::new("anthropic:content-before-id"),
            block: None,
            foreign: session.target != DIALECT,
            lost_path: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: None,
            position: 0,
            body_type: None,
            content_seen: false,
            blocks_seen: 0,
            ended: false,
            message_seen: false,
            frame: FrameState::new(),
        }
    }
}

impl ResponseDecoder {
    pub fn new(session: &Session) -> Self {
        crate::decoding::MachineDecoder { m: Machine::starting(Read::Members(S::Body, "the response body")), d: Readers::new(session, false) }
    }
}

impl StreamDecoder {
    pub fn new(session: &Session) -> Self {
        StreamDecoder { m: Machine::new(), d: Readers::new(session, true) }
    }
}

impl Decode for StreamDecoder {
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

    fn interrupted(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.m.interrupted(&mut self.d, &mut Cx::outside(session, out))
    }

    /// `finish`: a stream must end with message_stop (or an error event).
    fn finish(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let d = &mut self.d;
        if d.ended {
            return Ok(());
        }
        if d.start.errored {
            d.ended = true;
            return Cx::outside(session, out).emit(Event::End);
        }
        Err(Error::new(ErrorClass::TruncatedInput, "stream ended before message_stop").in_dialect(DIALECT))
    }

    fn source_done(&self) -> bool {
        self.d.ended || self.d.start.errored
    }

    fn at(&self) -> u64 {
        self.m.at
    }

    /// `begin_frame`: a new event document.
    fn begin_frame(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
        self.d.frame = FrameState::new();
        self.m.restart(Read::State(S::Document));
        Ok(())
    }

    fn end_frame(&mut self, _event: Option<&str>, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.d.end_frame(&mut Cx::outside(session, out))
    }

    fn frame_text(&mut self, _event: Option<&str>, data: &[u8], _session: &mut Session,
                  _out: &mut dyn EventSink) -> Result<()> {
        let head = &data[..data.len().min(40)];
        Err(Error::new(ErrorClass::Schema, format!("SSE data is not a JSON object: {}", crate::unicode::py_bytes_repr(head)))
            .in_dialect(DIALECT))
    }
}

/// An invariant of the decoder broke (a bug, never the input's fault): an error, not a panic.
#[cold]
fn internal(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the anthropic response decoder: {what}"))
}

fn json_of(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    dumps(value, &mut out);
    out
}


/// `skip_value`: consume a value without keeping it (`Read::Skip`).
fn skip_value(m: &mut Machine<S>) {
    m.read(Read::Skip);
}

/// A plain string token's text, when it has no escape (else the value is read as data).
fn plain_string<'t>(token: &Token<'t>) -> Option<&'t [u8]> {
    match *token {
        Token::String(text) if !crate::json::has_escape(text) => Some(text),
        _ => None,
    }
}

impl Readers {
    fn block(&mut self) -> Result<&mut ContentBlock> {
        self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))
    }

    /// A loss at `prefix + key`, recorded when the member's value is complete.
    fn lose_later(&mut self, m: &mut Machine<S>, prefix: &str, key: &[u8], always: bool) {
        self.lost_path.clear();
        self.lost_path.extend_from_slice(prefix.as_bytes());
        self.lost_path.extend_from_slice(key);
        m.read(Read::Raw(if always { S::LoseAlways } else { S::LoseNonNull }, None, ""));
    }

    /// `_error`: an error member or event; every open block gets its last fragment first.
    fn error(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
        use crate::lifecycle::{source_error_message, source_error_type};
        if value.is_null() && self.typed_not_error() {
            return Ok(()); // ("error": null beside a type that says what the object is, as a serializer that writes every field)
        }
        let (kind, message) = match &value {
            Value::Object(_) => (source_error_type(value.get("type")), source_error_message(value.get("message"))),
            other => ("api_error".to_string(), source_error_message(Some(other))),
        };
        crate::lifecycle::lose_error_members(&value, cx.session, &[])?;
        self.start.release(cx)?;
        if self.stream {
            self.close_block(cx)?;
        }
        cx.emit(Event::Error { kind: Cow::Owned(kind), message: Cow::Owned(message), status: None })?;
        self.start.errored = true;
        Ok(())
    }

    /// `_typed_not_error`: the object being read has a `type` other than `"error"` (read so
    /// far: a null error before its type is still read as an error).
    fn typed_not_error(&self) -> bool {
        match self.stream {
            true => matches!(&self.frame.type_, Some(t) if *t != FrameType::Error),
            false => self.body_type == Some(false),
        }
    }

    /// `_close_block` / `close_open`.
    fn close_block(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if let Some(mut block) = self.block.take() {
            block.stop(&mut self.start, cx)?;
        }
        Ok(())
    }

    // -- the `message` body ------------------------------------------------------------------

    fn body_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, cx: &Cx<'_>) -> Result<()> {
        match key {
            b"id" => m.read(Read::Value(S::Id, Some(OPT_STRING), "id")),
            b"model" => m.read(Read::Value(S::Model, Some(OPT_STRING), "model")),
            b"content" => {
                self.content_seen = true;
                m.read(Read::Objects(S::Content, "content"))
            }
            b"stop_reason" => m.read(Read::Value(S::StopReason, Some(OPT_STRING), "stop_reason")),
            b"stop_sequence" => m.read(Read::Value(S::StopSequence, Some(OPT_STRING), "stop_sequence")),
            // (usage is read raw: `lifecycle::UsageObject` reads its counts off the text)
            b"usage" => m.read(Read::Raw(S::BodyUsage, Some(OPT_OBJECT), "usage")),
            // (a plain string within the bound has nothing `read_value` could refuse: nothing to read)
            b"type" if plain_string(&token).is_some() && cx.within_bound(&token) => {
                self.body_type = Some(plain_string(&token) == Some(&b"error"[..]));
            }
            b"type" => m.read(Read::Value(S::BodyType, None, "")),
            b"role" => skip_value(m),
            b"error" => m.read(Read::Value(S::ErrorValue, None, "")),
            _ => self.lose_later(m, "$.", key, false),
        }
        Ok(())
    }

    /// `ResponseDecoder._end`: the body's `}`.
    fn body_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if self.start.errored {
            return cx.emit(Event::End);
        }
        if !self.content_seen {
            // (`{}`, another dialect's body: not an empty answer)
            return Err(Error::new(ErrorClass::Schema, "a message without content (and no error)")
                .in_dialect(DIALECT).with_path(b"$.content".to_vec()));
        }
        self.start.start_message(cx, |_| Ok(()))?;
        if self.stop_reason.is_some() || self.stop_sequence.is_some() {
            let reason = finish_from(DIALECT, self.stop_reason.as_deref());
            cx.emit(Event::Finish { reason, stop_sequence: self.stop_sequence.as_deref().map(Cow::Borrowed),
                                    choice: 0 })?;
        }
        if let Some(usage) = &self.usage {
            cx.emit(Event::Usage(usage.clone()))?;
        }
        cx.emit(Event::End)
    }

    // -- a content block ---------------------------------------------------------------------

    /// A content block's `{`: its members wait for its type (`KeyFirst`), then `key_first`.
    fn open_block(&mut self, m: &mut Machine<S>, index: u64) {
        self.block = Some(Box::new(ContentBlock::new(index)));
        m.key_first(S::Block, "type", Some(STRING), "anthropic:content-before-type");
    }

    fn block_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, cx: &mut Cx<'_>) -> Result<()> {
        let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
        let kind = block.kind;
        match (kind, key) {
            (Kind::Text, b"text") | (Kind::Thinking, b"thinking") | (Kind::RedactedThinking, b"data") => {
                m.read(Read::String(S::BlockText, if kind == Kind::Text { "text" } else if kind == Kind::Thinking { "thinking" } else { "data" }));
            }
            (Kind::Thinking, b"signature") => m.read(Read::Value(S::Signature, Some(OPT_STRING), "signature")),
            (Kind::Text, b"citations") => m.read(Read::Value(S::CitationList, Some(OPT_ARRAY), "citations")),
            (Kind::ToolUse, b"id") => m.read(Read::Value(S::ToolId, Some(STRING), "id")),
            (Kind::ToolUse, b"name") => m.read(Read::Value(S::ToolName, Some(STRING), "name")),
            (Kind::ToolUse, b"input") => {
                // an object, as the client declares it (was: 5 became openai arguments "5")
                cx.expect(&token, m.at, Some(OBJECT), "input")?;
                // id and name must ride on the first fragment: the input waits until both came
                block.deferred = Some(Deferred::new("anthropic:input-before-name"));
                block.head = Some(Vec::new());
                m.read(Read::StreamRaw(S::ToolInput));
            }
            (Kind::Text | Kind::Thinking | Kind::RedactedThinking | Kind::ToolUse, _) => {
                let prefix = format!("{}.", block.at());
                self.lose_later(m, &prefix, key, false);
            }
            (Kind::Server, _) => {
                if key == b"input" && token == Token::ObjectStart && block.type_name.as_deref() == Some("server_tool_use") {
                    // streams send input {} at the start and the JSON in deltas
                    m.read(Read::Raw(S::ServerInput, None, ""));
                    return Ok(());
                }
                let mut head = b",".to_vec();
                dumps_key(key, &mut head);
                head.push(b':');
                block.fragment(&head, &mut self.start, cx)?;
                m.read(Read::StreamRaw(S::ServerMember));
            }
        }
        Ok(())
    }

    /// The block object's `}` (`_ContentBlock.end`, then `block_read`: the body's block stops there).
    fn block_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
        block.object_end(&mut self.start, cx)?;
        if !self.stream {
            self.close_block(cx)?;
        }
        Ok(())
    }

    // -- a stream event ----------------------------------------------------------------------

    fn event_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match key {
            b"type" => {
                if let Some(text) = plain_string(&token).filter(|_| cx.within_bound(&token)) {
                    self.frame.type_ = Some(FrameType::of(text));
                } else {
                    m.read(Read::Value(S::Type, Some(STRING), "type"));
                }
            }
            b"index" => match token {
                Token::Number(digits) if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) && digits.len() < 19
                    && cx.within_bound(&token) => {
                    self.frame.index = FrameIndex::Small(digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')));
                }
                _ => m.read(Read::Value(S::Index, Some(INTEGER), "index")),
            },
            b"message" => m.read(Read::Members(S::Message, "message")),
            b"content_block" => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for content_block", offset));
                }
                self.close_block(cx)?;
                // numbered by arrival, not by its index member (which may come after it)
                let index = self.blocks_seen;
                self.blocks_seen += 1;
                self.open_block(m, index);
            }
            b"delta" => m.read(Read::Members(S::Delta, "delta")),
            b"usage" => m.read(Read::Raw(S::EventUsage, Some(OPT_OBJECT), "usage")),
            b"error" => m.read(Read::Value(S::ErrorValue, None, "")),
            _ => self.lose_later(m, "$.", key, true),
        }
        Ok(())
    }

    /// `_message_member`: message_start's `message`.
    fn message_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match key {
            b"id" => m.read(Read::Value(S::Id, Some(OPT_STRING), "id")),
            b"model" => m.read(Read::Value(S::Model, Some(OPT_STRING), "model")),
            b"usage" => {
                cx.expect(&token, offset, Some(OPT_OBJECT), "usage")?;
                m.read(Read::Raw(S::MessageUsage, None, ""));
            }
            b"content" => m.read(Read::Raw(S::MessageContent, None, "")),
            b"stop_reason" | b"stop_sequence" => {
                // null here: message_delta carries the stop
                self.lost_path.clear();
                self.lost_path.extend_from_slice(b"$.message.");
                self.lost_path.extend_from_slice(key);
                m.read(Read::Raw(S::MessageStop, None, ""));
            }
            b"type" | b"role" => skip_value(m),
            // container, diagnostics ...: no canonical field
            _ => self.lose_later(m, "$.message.", key, false),
        }
        Ok(())
    }

    /// `_delta_member`: a delta (of a content block, or message_delta's).
    fn delta_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match key {
            b"type" => {
                if !matches!(token, Token::String(_)) {
                    skip_value(m); // (a whole string, the usual type, is skipped already)
                }
                return Ok(());
            }
            b"stop_reason" => {
                m.read(Read::Value(S::DeltaStopReason, Some(OPT_STRING), "stop_reason"));
                return Ok(());
            }
            b"stop_sequence" => {
                m.read(Read::Value(S::DeltaStopSequence, Some(OPT_STRING), "stop_sequence"));
                return Ok(());
            }
            // (`_BLOCK_DELTA_KEYS`: the delta members that belong to a content block)
            b"text" | b"thinking" | b"partial_json" | b"signature" | b"citation" => {}
            _ => {
                // message_delta's container, stop_details ...: no canonical field
                self.lose_later(m, "$.delta.", key, false);
                return Ok(());
            }
        }
        let key_text = || String::from_utf8_lossy(key); // (one of `_BLOCK_DELTA_KEYS`; for errors only)
        let Some(block) = self.block.as_deref_mut() else {
            return Err(cx.error(format!("{} delta outside a content block", key_text()), offset));
        };
        match key {
            b"text" | b"thinking" => {
                if block.type_name.as_deref().map(str::as_bytes) != Some(key) {
                    return Err(cx.error(format!("{} delta on a {} block", key_text(), block.type_text()), offset));
                }
                m.read(Read::String(S::DeltaText, if key == b"text" { "text" } else { "thinking" }));
            }
            b"partial_json" => m.read(Read::String(S::PartialJson, "partial_json")),
            b"signature" => m.read(Read::Value(S::Signature, Some(OPT_STRING), "signature")),
            _ => m.read(Read::Raw(S::Citation, Some(OBJECT), "citation")), // (an object, as the client declares it)
        }
        Ok(())
    }

    /// `end_frame`: what the event means, once its document ended.
    fn end_frame(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let t = self.frame.type_.take();
        self.check_order(t.as_ref())?;
        match t {
            Some(FrameType::MessageStart) => {
                self.start.start_message(cx, |_| Ok(()))?;
                if let Some(usage) = self.frame.usage.take() {
                    self.usage = Some(usage.clone());
                    cx.emit(Event::Usage(usage))?;
                }
            }
            Some(FrameType::ContentBlockStop) => self.close_block(cx)?,
            Some(FrameType::MessageDelta) => {
                self.close_block(cx)?;
                let reason = finish_from(DIALECT, self.frame.stop_reason.as_deref());
                let seq = self.frame.stop_sequence.take();
                self.start.out(Event::Finish { reason, stop_sequence: seq.map(Cow::Owned), choice: 0 }, cx)?;
                if let Some(usage) = self.frame.usage.take() {
                    let merged = merge_anthropic_usage(self.usage.as_ref(), usage, "$.usage")?;
                    self.usage = Some(merged.clone());
                    self.start.out(Event::Usage(merged), cx)?;
                }
            }
            Some(FrameType::MessageStop) => {
                self.close_block(cx)?;
                self.ended = true;
                self.start.release(cx)?;
                cx.emit(Event::End)?;
            }
            Some(FrameType::ContentBlockStart | FrameType::ContentBlockDelta | FrameType::Ping | FrameType::Error) => {}
            None => return Err(Error::new(ErrorClass::Schema, "event without type").in_dialect(DIALECT)),
            Some(FrameType::Other(name)) => {
                let target = if cx.session.target.is_empty() { "the target" } else { cx.session.target };
                let reason = lacks(&format!("{name} event"), target, "such event", None);
                cx.session.lose("$.type", &reason, None)?;
            }
        }
        Ok(())
    }

    /// `_check_order`: message_start first (once); a block's deltas and stop name the open block.
    fn check_order(&mut self, t: Option<&FrameType>) -> Result<()> {
        let schema = |message: String| Error::new(ErrorClass::Schema, message).in_dialect(DIALECT);
        match t {
            Some(FrameType::MessageStart) => {
                if self.message_seen {
                    return Err(schema("a second message_start".into()));
                }
                self.message_seen = true;
            }
            Some(t @ (FrameType::ContentBlockStart | FrameType::ContentBlockDelta | FrameType::ContentBlockStop
                     | FrameType::MessageDelta)) if !self.message_seen => {
                return Err(schema(format!("{} before message_start", t.name())));
            }
            _ => {}
        }
        if let Some(t @ (FrameType::ContentBlockDelta | FrameType::ContentBlockStop)) = t {
            let open = self.block.as_deref().map(|b| b.index);
            let matches = matches!((&self.frame.index, open), (FrameIndex::Small(i), Some(o)) if *i == o);
            if !matches {
                let index = match &self.frame.index {
                    FrameIndex::Absent => "None".to_string(),
                    FrameIndex::Small(i) => i.to_string(),
                    FrameIndex::Other(repr) => repr.clone(),
                };
                let open_one = match open {
                    None => "no block is open".to_string(),
                    Some(o) => format!("block {o} is open"),
                };
                return Err(schema(format!("{} for block {index}, but {open_one}", t.name())));
            }
        }
        Ok(())
    }
}


/// `usage_from_anthropic` of a usage value read raw (`None`: not an object); the value's
/// own fault (`_data`'s) is located at its first byte.
fn usage_of(raw: &[u8], offset: u64, path: &str, cx: &mut Cx<'_>) -> Result<Option<Usage>> {
    let obj = UsageObject::read(raw).map_err(|e| cx.located(e, offset))?;
    obj.map(|obj| usage_from_anthropic(&obj, cx.session, path)).transpose()
}

impl Dialect for Readers {
    type State = S;

    fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Document => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for an event", offset));
                }
                m.push(Frame::Members(S::Event));
                if self.ended {
                    return Err(cx.error("event after message_stop", offset));
                }
                Ok(())
            }
            _ => Err(internal("a token for a state that reads none")),
        }
    }

    fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, offset: u64,
              cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Body => self.body_member(m, key, token, cx),
            S::Block => self.block_member(m, key, token, cx),
            S::Event => self.event_member(m, key, token, offset, cx),
            S::Message => self.message_member(m, key, token, offset, cx),
            S::Delta => self.delta_member(m, key, token, offset, cx),
            _ => Err(internal("a member for a state that reads none")),
        }
    }

    /// `KeyFirst`'s `start(value)` (`_typed`): the block is typed, its members are read (what
    /// came before the type is replayed into them by the machine).
    fn key_first(&mut self, m: &mut Machine<S>, _s: S, value: Option<Value>, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
        block.typed(value.and_then(text_of), &mut self.start, cx)?;
        m.push(Frame::Members(S::Block));
        Ok(())
    }

    fn object(&mut self, m: &mut Machine<S>, _s: S, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
        let index = self.position;
        self.position += 1;
        self.open_block(m, index);
        Ok(())
    }

    fn end(&mut self, _m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Body => self.body_end(cx),
            S::Block => self.block_end(cx),
            _ => Ok(()),
        }
    }

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::BodyUsage => {
                if let Some(usage) = usage_of(raw, offset, "$.usage", cx)? {
                    self.usage = Some(usage);
                }
                Ok(())
            }
            S::MessageUsage => {
                self.frame.usage = usage_of(raw, offset, "$.message.usage", cx)?;
                Ok(())
            }
            S::EventUsage => {
                if let Some(usage) = usage_of(raw, offset, "$.usage", cx)? {
                    self.frame.usage = Some(usage);
                }
                Ok(())
            }
            S::LoseNonNull if raw == b"null" => Ok(()),
            S::LoseNonNull | S::LoseAlways => cx.session.lose_member_wtf8(&self.lost_path, "such field", None),
            S::MessageContent if raw == b"[]" => Ok(()),
            S::MessageContent => cx.session.lose_member("$.message.content", "content in a stream's first event",
                                                        Some("the content blocks that follow are read")),
            S::MessageStop if raw == b"null" => Ok(()),
            S::MessageStop => cx.session.lose_member_wtf8(&self.lost_path, "place for a stop in message_start",
                                          Some("message_delta's stop is used")),
            S::ServerInput => {
                let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
                block.server_input(raw, &mut self.start, cx)
            }
            S::Citation => {
                let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
                block.citation(raw.to_vec(), cx.session)
            }
            _ => Err(internal("a raw value for a state that reads none")),
        }
    }

    fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Id | S::Model => {
                let text = text_of(value);
                if s == S::Id {
                    self.start.id = text;
                } else {
                    self.start.model = text;
                }
                if !self.stream && self.start.id.is_some() && self.start.model.is_some() {
                    self.start.start_message(cx, |_| Ok(()))?;
                }
                Ok(())
            }
            S::StopReason => {
                self.stop_reason = text_of(value);
                Ok(())
            }
            S::StopSequence => {
                self.stop_sequence = text_of(value);
                Ok(())
            }
            S::BodyType => {
                self.body_type = match &value {
                    Value::Null => None,
                    Value::Str(text) => Some(text == b"error"),
                    _ => Some(false),
                };
                Ok(())
            }
            S::ErrorValue => self.error(value, cx),
            S::Signature => {
                self.block()?.signature(&value);
                Ok(())
            }
            S::CitationList => {
                let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
                if let Value::Array(items) = &value {
                    for citation in items {
                        block.citation(json_of(citation), cx.session)?;
                    }
                }
                Ok(())
            }
            S::ToolId | S::ToolName => {
                let text = text_of(value).unwrap_or_default();
                let owned = if s == S::ToolName {
                    cx.session.tool_name_in(&text).into_owned()
                } else if self.foreign {
                    canonical_id(&text)
                } else {
                    text
                };
                let mut json = Vec::new();
                dumps_key(owned.as_bytes(), &mut json);
                let name = if s == S::ToolName { "name" } else { "id" };
                set_attr(&mut self.block()?.stream.attrs, name.into(), json);
                Ok(())
            }
            S::Type => {
                self.frame.type_ = text_of(value).map(|t| FrameType::of(t.as_bytes()));
                Ok(())
            }
            S::Index => {
                self.frame.index = match &value {
                    Value::Int(digits) => match digits.parse::<u64>() {
                        Ok(n) => FrameIndex::Small(n),
                        Err(_) => FrameIndex::Other(digits.clone()),
                    },
                    _ => FrameIndex::Absent,
                };
                Ok(())
            }
            S::DeltaStopReason => {
                self.frame.stop_reason = text_of(value);
                Ok(())
            }
            S::DeltaStopSequence => {
                self.frame.stop_sequence = text_of(value);
                Ok(())
            }
            _ => Err(internal("a value for a state that reads none")),
        }
    }

    fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool,
                cx: &mut Cx<'_>) -> Result<()> {
        let block = self.block.as_deref_mut().ok_or_else(|| internal("no content block is open"))?;
        match s {
            S::BlockText | S::DeltaText | S::ServerMember => block.fragment(data, &mut self.start, cx),
            S::ToolInput => block.input_fragment(data, fin, &mut self.start, cx),
            S::PartialJson => block.partial_json(data, &mut self.start, cx),
            _ => Err(internal("a fragment for a state that reads none")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// What an anthropic block is written as (`_classify`; `_EncoderBase.kind` of the open block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Text,
    Thinking,
    RedactedThinking,
    ToolUse,
    /// a server block of anthropic, written back whole
    Server,
    Citations,
}

/// `_EncoderBase`: what both encoders keep of the response.
struct EncoderBase {
    id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    tool_count: u64,
    /// the source's time; a generated id
    stamp: Stamp,
    /// what the open block is
    kind: Option<Out>,
    /// the open thinking block's first fragment (its loss names it)
    thinking_block: Option<BlockHead>,
    logprobs_lost: bool,
}

impl EncoderBase {
    fn new(session: &Session) -> Self {
        EncoderBase { id: None, model: None, usage: None, tool_count: 0, stamp: Stamp::new(session.start()), kind: None,
                      thinking_block: None, logprobs_lost: false }
    }

    /// `_stop_reason`: `finish_to`'s stop reason, but `tool_use` only when a tool_use block
    /// was written: a turn whose every tool call anthropic could not carry (an openai custom
    /// call, each recorded; or a source that said so with none) has nothing for the client to
    /// answer. Recorded, sent as `end_turn`.
    fn stop_reason<'r>(&self, reason: Option<&'r str>, session: &mut Session) -> Result<Option<Cow<'r, str>>> {
        let reason = finish_to(DIALECT, reason, session, None)?;
        if reason.as_deref() == Some("tool_use") && self.tool_count == 0 {
            let path = finish_path(session.source, session.kind.name(), 0);
            let leaf = path.rsplit('.').next().unwrap_or_default();
            let why = lacks(leaf, DIALECT, "tool_use block to stop for (no tool call was carried)", Some("sent as 'end_turn'"));
            session.lose(&path, why, None)?;
            return Ok(Some(Cow::Borrowed("end_turn")));
        }
        Ok(reason)
    }

    /// `_classify`: the anthropic block type for a canonical block (None: lost, recorded).
    fn classify(&self, block: &Block<'_>, session: &mut Session) -> Result<Option<Out>> {
        let attrs = block.attrs.as_deref().unwrap_or(&[]);
        let at = BlockRef::of(block);
        Ok(Some(match block.section {
            Section::AssistantText => Out::Text,
            Section::AssistantRefusal => {
                lose_block(session, DIALECT, at, "refusal block", Some("written as text"), None)?;
                Out::Text
            }
            Section::AssistantReasoning if attr_truthy(attrs, "redacted") => Out::RedactedThinking,
            Section::AssistantReasoning => Out::Thinking,
            Section::ToolCall => Out::ToolUse,
            Section::ServerToolResult if attr_is(attrs, "dialect", DIALECT) => Out::Server,
            Section::Citations if attr_is(attrs, "dialect", DIALECT) => Out::Citations,
            _ => {
                lose_unplaced(session, DIALECT, at)?;
                return Ok(None);
            }
        }))
    }

    /// `_lose_logprobs`: once per response (anthropic has none at all).
    fn lose_logprobs(&mut self, session: &mut Session) -> Result<()> {
        if self.logprobs_lost {
            return Ok(());
        }
        self.logprobs_lost = true;
        session.lose("$.logprobs", "token logprobs: anthropic has no logprobs", None)
    }

    /// `_lose_unsigned`: thinking whose source gave no signature, written with `"signature": ""`.
    fn lose_unsigned(block: BlockRef<'_>, session: &mut Session) -> Result<()> {
        lose_block(session, DIALECT, block,
                   "thinking without a signature: written with \"signature\": \"\" (anthropic cannot replay it)", None, None)
    }

    /// `_tool_head`: `{"type":"tool_use","id":...,"name":...` (a generated id where the source has none).
    fn tool_head(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let attrs = block.attrs.as_deref().unwrap_or(&[]);
        out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
        match attr(attrs, "id").filter(|raw| truthy(raw)) {
            Some(raw) => match json_str(raw) {
                // another dialect's id may not fit (`naming`)
                Some(id) if session.source != DIALECT => dumps_key(anthropic_id(&id).as_bytes(), out),
                _ => out.extend_from_slice(raw),
            },
            None => {
                let count = self.tool_count;
                dumps_key(generated_tool_id(self.message_id().as_bytes(), count).as_bytes(), out);
            }
        }
        self.tool_count += 1;
        out.extend_from_slice(b",\"name\":");
        out.extend_from_slice(&response_tool_name(session, BlockRef::of(block))?);
        Ok(())
    }

    /// The message's id, borrowed (the source's, or the one generated).
    fn message_id(&mut self) -> Cow<'_, str> {
        self.stamp.response_id_ref("msg_", self.id.as_deref(), self.model.as_deref())
    }

    /// `_message_head`: `{"id":...,"type":"message","role":"assistant","model":...`
    fn message_head(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"id\":");
        dumps_key(self.message_id().as_bytes(), out);
        out.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
        dumps_key(self.model.as_deref().unwrap_or("").as_bytes(), out);
    }

    /// The message's id and model, kept (taken as they come: a decoder hands its own over).
    fn message_start(&mut self, id: Option<Cow<'_, str>>, model: Option<Cow<'_, str>>) {
        self.id = id.map(Cow::into_owned);
        self.model = model.map(Cow::into_owned);
    }

    /// `_extension`: a source's time field is the stamp's; another dialect's field is a loss.
    fn extension(&mut self, ext: &crate::canonical::Extension<'_>, session: &mut Session) -> Result<()> {
        if !self.stamp.source(ext) && ext.dialect != DIALECT {
            foreign_extension(session, DIALECT, ext)?;
        }
        Ok(())
    }

    /// The usage object's JSON (`dumps(usage_to_anthropic(self.usage or Usage(), ...))`).
    fn usage_json(&self, session: &mut Session, require_input: bool, out: &mut Vec<u8>) -> Result<()> {
        let none = Usage::default();
        push_usage_anthropic(self.usage.as_ref().unwrap_or(&none), session, require_input, out)
    }
}

/// `_error_type`: the anthropic error type of a canonical error.
fn error_type(kind: &str) -> &'static str {
    match kind {
        "invalid_request_error" => "invalid_request_error",
        "request_too_large" => "request_too_large",
        "overloaded_error" => "overloaded_error",
        "rate_limit_error" => "rate_limit_error",
        "authentication_error" => "authentication_error",
        "permission_error" => "permission_error",
        "not_found_error" => "not_found_error",
        "timeout_error" => "timeout_error",
        "billing_error" => "billing_error",
        _ => "api_error",
    }
}

/// `{"type":<error type>,"message":<message>}` of an `Event::Error`.
fn error_object(error: &Event<'_>, out: &mut Vec<u8>) {
    let (kind, message) = match error {
        Event::Error { kind, message, .. } => (kind.as_ref(), message.as_ref()),
        _ => ("", &b""[..]),
    };
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(error_type(kind).as_bytes());
    out.extend_from_slice(b"\",\"message\":");
    dumps_key(message, out);
    out.push(b'}');
}

/// A block index's digits (formatted into `out`: no allocation per frame).
fn index_text(index: i64, out: &mut Vec<u8>) {
    crate::lifecycle::push_int(out, index); // (every delta frame: no formatting machinery)
}

/// What closes an open `content_block_delta` frame of text, thinking or partial JSON.
const DELTA_TAIL: &[u8] = b"\"}}\n\n";

/// `_fragment`'s frame: `content_block_delta` of block `index`, its delta's head written.
fn delta_frame<'h>(index: i64, delta_head: &'h [u8]) -> impl FnOnce(&mut Vec<u8>) + 'h {
    move |out: &mut Vec<u8>| {
        sse_open(out, Some("content_block_delta"));
        out.extend_from_slice(b"{\"type\":\"content_block_delta\",\"index\":");
        index_text(index, out);
        out.extend_from_slice(b",\"delta\":");
        out.extend_from_slice(delta_head);
    }
}

/// `StreamEncoder`: canonical events -> the anthropic SSE lifecycle.
pub struct StreamEncoder {
    base: EncoderBase,
    /// the open delta frame, keyed by its block index
    frame: OpenFrame<i64>,
    /// message_start written
    started: bool,
    index: i64,
    block_open: bool,
    /// a block written whole at its end (redacted thinking, server blocks)
    held: Option<ByteHold>,
    /// the open thinking block's signature (raw JSON), written as its signature_delta
    signature: Option<Vec<u8>>,
    /// Finish events waiting for usage (`anthropic:finish-before-usage`)
    finish_hold: Option<Hold<Event<'static>>>,
    /// the counts given since message_start / message_delta (`unsent_usage`'s, `counts_given`)
    unsent_counts: u8,
    done: bool,
    errored: bool,
    /// the current block is not carried
    lost: bool,
    delta_written: bool,
    /// the Finish the last message_delta carried (a later one repeats its stop); boxed: the
    /// encoder stays within the allocator's thread cache (lib.rs `box_sizes`)
    delta_finish: Option<Box<Event<'static>>>,
    /// a call's held arguments and its first fragment
    args: Option<(HeldArguments, BlockHead)>,
}

impl StreamEncoder {
    pub fn new(session: &Session) -> Self {
        StreamEncoder { base: EncoderBase::new(session), frame: OpenFrame::new(), started: false, index: -1,
                        block_open: false, held: None, signature: None, finish_hold: None, unsent_counts: 0, done: false,
                        errored: false, lost: false, delta_written: false, delta_finish: None, args: None }
    }

    /// `_start`: message_start, once (a first usage rides on it; required counts unknown yet are 0).
    fn start(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let mut data = b"{\"type\":\"message_start\",\"message\":".to_vec();
        self.base.message_head(&mut data);
        data.extend_from_slice(b",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":");
        self.base.usage_json(session, true, &mut data)?;
        data.extend_from_slice(b"}}");
        sse_event(out, Some("message_start"), &data);
        Ok(())
    }

    /// `_open(content_block)`: the next block's content_block_start.
    fn open(&mut self, content_block: &[u8], session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        self.close_block(session, out)?;
        self.index += 1;
        self.block_open = true;
        let mut data = b"{\"type\":\"content_block_start\",\"index\":".to_vec();
        index_text(self.index, &mut data);
        data.extend_from_slice(b",\"content_block\":");
        data.extend_from_slice(content_block);
        data.push(b'}');
        sse_event(out, Some("content_block_start"), &data);
        Ok(())
    }

    /// `_close_block`: the open block's signature_delta (or the unsigned loss), then its stop.
    fn close_block(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        self.frame.close(out);
        if !self.block_open {
            return Ok(());
        }
        if let Some(signature) = self.signature.take() {
            let mut delta = b"{\"type\":\"signature_delta\",\"signature\":".to_vec();
            delta.extend_from_slice(&signature);
            delta.push(b'}');
            self.delta(&delta, out);
        } else if self.base.kind == Some(Out::Thinking) {
            if let Some(head) = &self.base.thinking_block {
                EncoderBase::lose_unsigned(head.as_ref(), session)?;
            }
        }
        self.block_open = false;
        self.base.kind = None;
        let mut data = b"{\"type\":\"content_block_stop\",\"index\":".to_vec();
        index_text(self.index, &mut data);
        data.push(b'}');
        sse_event(out, Some("content_block_stop"), &data);
        Ok(())
    }

    /// `_fragment(delta_head, payload)`: a fragment into the open delta frame of the block
    /// (one output frame per source frame, whatever the chunking).
    fn fragment(&mut self, delta_head: &[u8], payload: &[u8], out: &mut Vec<u8>) {
        self.frame.fragment(self.index, delta_frame(self.index, delta_head), DELTA_TAIL, payload, out);
    }

    /// `_delta(delta)`: one whole content_block_delta event.
    fn delta(&mut self, delta: &[u8], out: &mut Vec<u8>) {
        self.frame.close(out);
        let mut data = b"{\"type\":\"content_block_delta\",\"index\":".to_vec();
        index_text(self.index, &mut data);
        data.extend_from_slice(b",\"delta\":");
        data.extend_from_slice(delta);
        data.push(b'}');
        sse_event(out, Some("content_block_delta"), &data);
    }

    fn block(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if other_choice(session, DIALECT, block)? {
            return Ok(());
        }
        if block.init {
            self.start(session, out)?;
            self.lost = false;
            let Some(kind) = self.base.classify(block, session)? else {
                self.lost = true;
                return Ok(());
            };
            if kind == Out::Citations {
                return self.citations(block, session, out);
            }
            let attrs = block.attrs.as_deref().unwrap_or(&[]);
            match kind {
                Out::RedactedThinking | Out::Server => {
                    self.close_block(session, out)?;
                    let reason = if kind == Out::Server { "anthropic:whole-server" } else { "anthropic:whole-redacted_thinking" };
                    self.held = Some(session.reorder.byte_hold(reason));
                    self.base.kind = Some(kind);
                }
                Out::Text => self.open(b"{\"type\":\"text\",\"text\":\"\"}", session, out)?,
                Out::Thinking => {
                    self.open(b"{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}", session, out)?;
                    self.base.thinking_block = Some(BlockHead::of(block));
                }
                _ => {
                    let mut head = Vec::new();
                    self.base.tool_head(block, session, &mut head)?;
                    head.extend_from_slice(b",\"input\":{}}");
                    self.open(&head, session, out)?;
                }
            }
            self.base.kind = Some(kind);
            self.signature = attr(attrs, "signature").filter(|raw| *raw != b"null").map(<[u8]>::to_vec);
        }
        if self.lost {
            return Ok(());
        }
        let kind = self.base.kind;
        if let Some(held) = self.held.as_mut() {
            held.write(&mut session.reorder, &block.payload)?;
            if block.fin {
                let mut payload = Vec::new();
                held.take_into(&mut session.reorder, &mut payload);
                self.held = None;
                if kind == Some(Out::Server) {
                    self.open(&payload, session, out)?;
                } else {
                    let mut content = b"{\"type\":\"redacted_thinking\",\"data\":\"".to_vec();
                    content.extend_from_slice(&payload);
                    content.extend_from_slice(b"\"}");
                    self.open(&content, session, out)?;
                }
                self.base.kind = kind;
            }
        } else {
            match kind {
                Some(Out::Text) => self.fragment(b"{\"type\":\"text_delta\",\"text\":\"", &block.payload, out),
                Some(Out::Thinking) => {
                    self.fragment(b"{\"type\":\"thinking_delta\",\"thinking\":\"", &block.payload, out)
                }
                Some(Out::ToolUse) => self.tool_arguments(block, session, out)?,
                _ => {}
            }
        }
        if block.fin {
            if let Some(signature) = block.attrs.as_deref().and_then(|attrs| attr(attrs, "signature")) {
                self.signature = (signature != b"null").then(|| signature.to_vec());
            }
        }
        Ok(())
    }

    /// `_tool_arguments`: input_json_delta, held until the call ends (clients parse the
    /// partial JSON): one JSON object as it is, else `{"_raw_arguments": ...}`; empty
    /// arguments send no delta (`input` stays `{}`).
    fn tool_arguments(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if block.init {
            self.args = Some((HeldArguments::new(session, "anthropic:tool-arguments"), BlockHead::of(block)));
        }
        let Some((args, _)) = self.args.as_mut() else {
            return Err(internal_encoder("tool arguments without their call"));
        };
        args.feed(&block.payload, session)?;
        if !block.fin {
            return Ok(());
        }
        let Some((args, first)) = self.args.take() else {
            return Err(internal_encoder("tool arguments without their call"));
        };
        let mut data = arguments_object(session, DIALECT, args, first.as_ref())?;
        if let Some(replaced) = crate::canonical::without_lone_surrogates(&data) {
            // (its clients' parser refuses one: the whole call's input was lost)
            data = replaced;
            let subject = format!("a lone surrogate in the arguments of a {}", crate::encoding::subject(session, first.as_ref(), None));
            crate::encoding::lose(session, DIALECT, first.as_ref(), &subject, "lone surrogate its stream clients can parse",
                                  Some("written as U+FFFD"), None)?;
        }
        if data != b"{}" {
            // the JSON text as a string: any whitespace in it escaped too
            let mut escaped = Vec::with_capacity(data.len() + 8);
            crate::json::escape_str_bytes(&data, &mut escaped);
            self.fragment(b"{\"type\":\"input_json_delta\",\"partial_json\":\"", &escaped, out);
        }
        Ok(())
    }

    /// `_citations`: a text block's citations, one citations_delta each.
    fn citations(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        self.lost = true; // nothing more to write for this block
        if self.base.kind != Some(Out::Text) || !self.block_open {
            return lose_block(session, DIALECT, BlockRef::of(block), "text block for these citations",
                              Some("a citation needs the text it cites"), None);
        }
        let payload: &[u8] = if block.payload.is_empty() { b"[]" } else { &block.payload };
        if let Value::Array(items) = Value::loads(payload)? {
            for citation in &items {
                let mut delta = b"{\"type\":\"citations_delta\",\"citation\":".to_vec();
                dumps(citation, &mut delta);
                delta.push(b'}');
                self.delta(&delta, out);
            }
        }
        Ok(())
    }

    /// `_message_delta`: the stop (the last Finish held) and the usage so far.
    fn message_delta(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        // a later one repeats the stop (the client keeps each delta's)
        let mut finish = self.delta_finish.take().map(|finish| *finish);
        if let Some(mut hold) = self.finish_hold.take() {
            finish = hold.drain(&mut session.reorder).next_back().or(finish);
        }
        let (reason, stop_sequence) = match &finish {
            Some(Event::Finish { reason, stop_sequence, .. }) => (reason.as_deref(), stop_sequence.as_deref()),
            _ => (None, None),
        };
        let reason = match finish {
            Some(_) => self.base.stop_reason(reason, session)?,
            None => None,
        };
        let mut data = b"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":".to_vec();
        json_opt_str(reason.as_deref(), &mut data);
        data.extend_from_slice(b",\"stop_sequence\":");
        json_opt_str(stop_sequence, &mut data);
        data.extend_from_slice(b"},\"usage\":");
        self.base.usage_json(session, false, &mut data)?;
        data.push(b'}');
        sse_event(out, Some("message_delta"), &data);
        self.delta_written = true;
        self.delta_finish = finish.map(Box::new);
        self.unsent_counts = 0;
        Ok(())
    }

    /// `_end`: the last block's stop, message_delta (unless written), message_stop.
    fn end(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        if self.errored {
            return Ok(());
        }
        self.start(session, out)?;
        self.close_block(session, out)?;
        if self.finish_hold.is_some() || !self.delta_written {
            self.message_delta(session, out)?;
        }
        sse_event(out, Some("message_stop"), b"{\"type\":\"message_stop\"}");
        Ok(())
    }
}

/// `dumps(text or None)`.
fn json_opt_str(text: Option<&str>, out: &mut Vec<u8>) {
    match text {
        Some(text) => dumps_key(text.as_bytes(), out),
        None => out.extend_from_slice(b"null"),
    }
}

fn internal_encoder(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the anthropic response encoder: {what}"))
}

impl Encode for StreamEncoder {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.errored && matches!(event, Event::Block(_)) {
            // the error event ended the target's stream
            return Err(crate::lifecycle::answer_after_error());
        }
        if let Event::MessageStart { id, model, choice } = event {
            // (by value: the id and model a decoder handed over are kept, not copied)
            if choice == 0 {
                self.base.message_start(id, model);
            }
            return Ok(());
        }
        match &event {
            Event::FrameEnd => self.frame.close(out),
            Event::Block(block) => {
                if !self.done {
                    self.block(block, session, out)?;
                }
            }
            Event::MessageStart { .. } => {} // (taken above)
            Event::Extension(ext) => self.base.extension(ext, session)?,
            // (its error event ended the stream)
            Event::Usage(usage) if self.errored => crate::lifecycle::lose_usage_after_error(Some(usage), session, DIALECT)?,
            Event::Finish { reason, stop_sequence, choice: 0 } if self.errored => {
                crate::lifecycle::lose_finish_after_error(reason.as_deref(), stop_sequence.as_deref(), 0, session, DIALECT)?
            }
            Event::Usage(usage) => {
                self.base.usage = Some(merge_usage(self.base.usage.as_ref(), usage.clone()));
                if self.started {
                    self.unsent_counts |= crate::lifecycle::counts_given(usage);
                }
                if self.finish_hold.is_some() || self.delta_written && !self.done {
                    self.message_delta(session, out)?; // (after one was written: another, with the counts it lacked)
                }
            }
            Event::Finish { choice, .. } => {
                if *choice == 0 && !self.done {
                    self.start(session, out)?;
                    self.close_block(session, out)?;
                    let hold = self.finish_hold.get_or_insert_with(|| session.reorder.hold("anthropic:finish-before-usage"));
                    hold.append(&mut session.reorder, into_owned(event), 64)?;
                }
            }
            Event::Logprobs { .. } => self.base.lose_logprobs(session)?,
            Event::Error { .. } => self.abort(&event, session, out)?,
            Event::End => self.end(session, out)?,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }

    /// `abort`: `event: error`, and the stream ends there.
    fn abort(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.done || self.errored {
            return Ok(());
        }
        self.frame.close(out);
        self.errored = true;
        let mut data = b"{\"type\":\"error\",\"error\":".to_vec();
        error_object(error, &mut data);
        data.push(b'}');
        sse_event(out, Some("error"), &data);
        // its error event ends the stream: the message_delta's finish and counts are not sent
        if let Some(mut hold) = self.finish_hold.take() {
            for finish in hold.drain(&mut session.reorder) {
                if let Event::Finish { reason, stop_sequence, .. } = finish {
                    crate::lifecycle::lose_finish_after_error(reason.as_deref(), stop_sequence.as_deref(), 0, session, DIALECT)?;
                }
            }
        }
        let unsent = match self.started {
            true => std::mem::take(&mut self.unsent_counts),
            false => self.base.usage.as_ref().map_or(0, crate::lifecycle::counts_given),
        };
        crate::lifecycle::lose_counts_after_error(unsent, session, DIALECT)
    }
}

/// `ResponseEncoder`: canonical events -> one `message` body.
pub struct ResponseEncoder {
    base: EncoderBase,
    begun: bool,
    count: u64,
    /// what closes the open block (written when the next event shows no citations follow)
    tail: &'static [u8],
    finish: Option<(Option<String>, Option<String>)>,
    done: bool,
    /// the body written is the source's error: no answer may follow it
    errored: bool,
    lost: bool,
    /// the open thinking block's first signature (raw JSON)
    signature: Option<Vec<u8>>,
    args: Option<(HeldArguments, BlockHead)>,
}

impl ResponseEncoder {
    pub fn new(session: &Session) -> Self {
        ResponseEncoder { base: EncoderBase::new(session), begun: false, count: 0, tail: b"", finish: None, done: false,
                          errored: false, lost: false, signature: None, args: None }
    }

    fn begin(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if !self.begun {
            if self.errored {
                return Err(crate::lifecycle::answer_and_error());
            }
            self.begun = true;
            self.base.message_head(out);
            out.extend_from_slice(b",\"content\":[");
        }
        Ok(())
    }

    /// `_error`: the source's error -- the error body when nothing was written yet; after the
    /// answer began, refused (`answer_and_error`).
    fn error(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.begun {
            return Err(crate::lifecycle::answer_and_error());
        }
        if !self.done {
            self.errored = true;
        }
        self.abort(error, session, out)
    }

    fn seal(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(std::mem::take(&mut self.tail));
    }

    fn block(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if other_choice(session, DIALECT, block)? {
            return Ok(());
        }
        if block.init {
            self.lost = false;
            let Some(kind) = self.base.classify(block, session)? else {
                self.lost = true;
                return Ok(());
            };
            self.begin(out)?;
            if kind == Out::Citations {
                if self.base.kind == Some(Out::Text) && !self.tail.is_empty() {
                    out.extend_from_slice(b",\"citations\":");
                    out.extend_from_slice(if block.payload.is_empty() { b"[]" } else { &block.payload });
                } else {
                    lose_block(session, DIALECT, BlockRef::of(block), "text block for these citations",
                               Some("a citation needs the text it cites"), None)?;
                }
                self.lost = true;
                return Ok(());
            }
            self.seal(out);
            if self.count > 0 {
                out.push(b',');
            }
            self.count += 1;
            self.base.kind = Some(kind);
            let attrs = block.attrs.as_deref().unwrap_or(&[]);
            match kind {
                Out::Text => out.extend_from_slice(b"{\"type\":\"text\",\"text\":\""),
                Out::Thinking => {
                    // the first fragment: its attrs name the source path
                    self.base.thinking_block = Some(BlockHead::of(block));
                    out.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":\"");
                    self.signature = attr(attrs, "signature").map(<[u8]>::to_vec);
                }
                Out::RedactedThinking => out.extend_from_slice(b"{\"type\":\"redacted_thinking\",\"data\":\""),
                Out::ToolUse => {
                    self.base.tool_head(block, session, out)?;
                    out.extend_from_slice(b",\"input\":");
                    self.args = Some((HeldArguments::new(session, "anthropic:tool-arguments"), BlockHead::of(block)));
                }
                Out::Server | Out::Citations => {}
            }
        }
        if self.lost {
            return Ok(());
        }
        let kind = self.base.kind;
        if kind == Some(Out::ToolUse) {
            let Some((args, _)) = self.args.as_mut() else {
                return Err(internal_encoder("tool arguments without their call"));
            };
            args.feed(&block.payload, session)?;
        } else {
            out.extend_from_slice(&block.payload);
        }
        if !block.fin {
            return Ok(());
        }
        match kind {
            Some(Out::Text) => {
                out.push(b'"');
                self.tail = b"}";
            }
            Some(Out::Thinking) => {
                let late = block.attrs.as_deref().and_then(|attrs| attr(attrs, "signature")).filter(|raw| truthy(raw));
                let first = self.signature.as_deref().filter(|raw| truthy(raw));
                let signature = late.or(first);
                if signature.is_none() {
                    let head = self.base.thinking_block.as_ref().map_or_else(|| BlockRef::of(block), BlockHead::as_ref);
                    EncoderBase::lose_unsigned(head, session)?;
                }
                out.extend_from_slice(b"\",\"signature\":");
                out.extend_from_slice(signature.unwrap_or(b"\"\""));
                out.push(b'}');
            }
            Some(Out::RedactedThinking) => out.extend_from_slice(b"\"}"),
            Some(Out::ToolUse) => {
                let Some((args, first)) = self.args.take() else {
                    return Err(internal_encoder("tool arguments without their call"));
                };
                out.extend_from_slice(&arguments_object(session, DIALECT, args, first.as_ref())?);
                out.push(b'}');
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        self.begin(out)?;
        self.seal(out);
        let (reason, stop_sequence) = match &self.finish {
            Some((reason, seq)) => (self.base.stop_reason(reason.as_deref(), session)?, seq.as_deref()),
            None => (None, None),
        };
        out.extend_from_slice(b"],\"stop_reason\":");
        json_opt_str(reason.as_deref(), out);
        out.extend_from_slice(b",\"stop_sequence\":");
        json_opt_str(stop_sequence, out);
        out.extend_from_slice(b",\"usage\":");
        self.base.usage_json(session, true, out)?;
        out.push(b'}');
        Ok(())
    }
}

impl Encode for ResponseEncoder {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if let Event::MessageStart { id, model, choice } = event {
            // (by value: the id and model a decoder handed over are kept, not copied)
            if choice == 0 {
                self.base.message_start(id, model);
            }
            return Ok(());
        }
        match &event {
            Event::Block(block) => self.block(block, session, out)?,
            Event::MessageStart { .. } => {} // (taken above)
            Event::Extension(ext) => self.base.extension(ext, session)?,
            Event::Usage(usage) => self.base.usage = Some(merge_usage(self.base.usage.as_ref(), usage.clone())),
            Event::Finish { reason, stop_sequence, choice } => {
                if *choice == 0 {
                    self.finish = Some((reason.as_deref().map(str::to_string), stop_sequence.as_deref().map(str::to_string)));
                }
            }
            Event::Logprobs { .. } => self.base.lose_logprobs(session)?,
            Event::Error { .. } => self.error(&event, session, out)?,
            Event::End => self.end(session, out)?,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }

    /// `abort`: an error body if nothing was written yet.
    fn abort(&mut self, error: &Event<'_>, _session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        if !self.begun {
            out.extend_from_slice(b"{\"type\":\"error\",\"error\":");
            error_object(error, out);
            out.push(b'}');
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The codecs without Python: the hold and replay of members before a block's type,
    //! the stream's grammar, the encoders' abort, and no panic on any event sequence.
    //! Parity with Python: tests/native/test_anthropic_response_parity.py.
    use super::*;
    use crate::json::{Sink, Tokenizer};
    use crate::session::{Kind, Options, ResponseStart};

    #[derive(Default)]
    struct Events(Vec<Event<'static>>);

    impl EventSink for Events {
        fn event(&mut self, event: Event<'_>, _session: &mut Session) -> Result<()> {
            self.0.push(into_owned(event));
            Ok(())
        }
    }

    struct Run<'a, D: Decode> {
        decoder: &'a mut D,
        session: &'a mut Session,
        out: &'a mut Events,
    }

    impl<D: Decode> Sink for Run<'_, D> {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
            self.decoder.token(token, offset, path, self.session, self.out)
        }
    }

    fn new_session(kind: Kind) -> Session {
        let mut session = Session::new(Options::default(), DIALECT, "openai", kind);
        session.response_start = Some(ResponseStart { time_us: 1_764_579_600_123_456, nonce: [0; 12] });
        session
    }

    /// A body fed in pieces cut at `cut`; the events with fragments joined.
    fn decode_body(body: &[u8], cut: usize) -> (Vec<Event<'static>>, Option<Error>) {
        let mut session = new_session(Kind::Response);
        let mut decoder = ResponseDecoder::new(&session);
        let mut out = Events::default();
        let mut tokenizer = Tokenizer::default();
        let mut result = Ok(());
        for piece in [&body[..cut], &body[cut..]] {
            let mut run = Run { decoder: &mut decoder, session: &mut session, out: &mut out };
            result = result.and_then(|()| tokenizer.feed(piece, &mut run));
            result = result.and_then(|()| decoder.flush(&mut session, &mut out));
        }
        let mut run = Run { decoder: &mut decoder, session: &mut session, out: &mut out };
        result = result.and_then(|()| tokenizer.close(&mut run));
        (joined(out.0), result.err())
    }

    /// Stream documents, one per frame (what the stream front hands the decoder).
    fn decode_stream(documents: &[&[u8]]) -> (Vec<Event<'static>>, Option<Error>) {
        let mut session = new_session(Kind::Stream);
        let mut decoder = StreamDecoder::new(&session);
        let mut out = Events::default();
        let mut tokenizer = Tokenizer::default();
        let mut result = Ok(());
        for doc in documents {
            tokenizer.reset();
            result = result.and_then(|()| decoder.begin_frame(&mut session, &mut out));
            let mut run = Run { decoder: &mut decoder, session: &mut session, out: &mut out };
            result = result.and_then(|()| tokenizer.feed(doc, &mut run)).and_then(|()| tokenizer.close(&mut run));
            result = result.and_then(|()| decoder.flush(&mut session, &mut out));
            result = result.and_then(|()| decoder.end_frame(None, &mut session, &mut out));
            if result.is_err() {
                break;
            }
        }
        result = result.and_then(|()| decoder.finish(&mut session, &mut out));
        (joined(out.0), result.err())
    }

    fn joined(events: Vec<Event<'static>>) -> Vec<Event<'static>> {
        let mut out: Vec<Event<'static>> = Vec::new();
        for event in events {
            if let (Some(Event::Block(last)), Event::Block(block)) = (out.last_mut(), &event) {
                if !block.init && !last.fin && last.section == block.section {
                    last.payload.to_mut().extend_from_slice(&block.payload);
                    last.fin = block.fin;
                    if block.attrs.is_some() {
                        last.attrs.get_or_insert_with(Vec::new).extend(block.attrs.clone().unwrap_or_default());
                    }
                    continue;
                }
            }
            out.push(event);
        }
        out
    }

    #[test]
    fn members_before_a_block_s_type_are_replayed_when_it_comes() {
        let client = br#"{"id":"m","model":"c","content":[{"type":"text","text":"a\u00e9b","citations":[{"n":1}]},{"type":"tool_use","id":"t","name":"f","input":{"q":[1,"x"]}}],"stop_reason":"tool_use"}"#;
        let sorted = br#"{"content":[{"citations":[{"n":1}],"text":"a\u00e9b","type":"text"},{"id":"t","input":{"q":[1,"x"]},"name":"f","type":"tool_use"}],"id":"m","model":"c","stop_reason":"tool_use"}"#;
        let (expected, err) = decode_body(client, client.len());
        assert_eq!(err, None);
        assert_eq!(expected.len(), 6, "{expected:?}"); // start, text, citations, tool call (one fragment), finish, end
        for cut in 1..sorted.len() {
            let (events, err) = decode_body(sorted, cut);
            assert_eq!(err, None, "cut at {cut}");
            assert_eq!(events, expected, "cut at {cut}");
        }
    }

    #[test]
    fn the_stream_s_grammar_is_checked() {
        let start: &[u8] = br#"{"type":"message_start","message":{"id":"a","model":"m"}}"#;
        let block: &[u8] = br#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        let cases: [(&[&[u8]], &str); 4] = [
            (&[start, block, br#"{"type":"content_block_delta","index":3,"delta":{"text":"x"}}"#],
             "content_block_delta for block 3, but block 0 is open"),
            (&[block], "content_block_start before message_start"),
            (&[start, start], "a second message_start"),
            (&[start, block], "stream ended before message_stop"),
        ];
        for (documents, message) in cases {
            let (_, err) = decode_stream(documents);
            assert_eq!(err.map(|e| e.message.clone()), Some(message.to_string()));
        }
        let (events, err) = decode_stream(&[start, block, br#"{"type":"content_block_delta","index":0,"delta":{"text":"hi"}}"#,
                                            br#"{"type":"message_stop"}"#]);
        assert_eq!(err, None);
        assert!(matches!(&events[1], Event::Block(b) if b.payload.as_ref() == b"hi" && b.init && b.fin));
    }

    fn encode(encoder: &mut dyn Encode, events: Vec<Event<'static>>, session: &mut Session) -> (Vec<u8>, Result<()>) {
        let mut out = Vec::new();
        for event in events {
            if let Err(e) = encoder.event(event, session, &mut out) {
                return (out, Err(e));
            }
        }
        let result = encoder.finish(session, &mut out);
        (out, result)
    }

    #[test]
    fn abort_ends_the_output_with_anthropic_s_error() {
        let error = Event::Error { kind: "boom_error".into(), message: b"boom"[..].into(), status: None };
        let mut session = new_session(Kind::Stream);
        let mut stream = StreamEncoder::new(&session);
        let text = Event::Block(Block { section: Section::AssistantText, message: 0, payload: Cow::Borrowed(b"Hi"),
                                        init: true, fin: false, attrs: None });
        let (out, result) = encode(&mut stream, vec![Event::MessageStart { id: Some("c1".into()), model: Some("g".into()), choice: 0 },
                                                     text, Event::FrameEnd], &mut session);
        assert!(result.is_ok());
        assert!(out.ends_with(b"\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"), "{}", String::from_utf8_lossy(&out));
        let mut tail = Vec::new();
        stream.abort(&error, &mut session, &mut tail).unwrap();
        assert_eq!(tail, b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}\n\n");
        let mut again = Vec::new();
        stream.abort(&error, &mut session, &mut again).unwrap();
        assert!(again.is_empty(), "one error event");

        let mut session = new_session(Kind::Response);
        let mut body = ResponseEncoder::new(&session);
        let mut tail = Vec::new();
        body.abort(&error, &mut session, &mut tail).unwrap();
        assert_eq!(tail, b"{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}");
    }

    /// A pseudo-random event of the kinds the encoders take.
    fn event(seed: &mut u64) -> Event<'static> {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (*seed >> 33) as usize;
        let sections = [Section::AssistantText, Section::AssistantReasoning, Section::ToolCall, Section::ServerToolResult,
                        Section::Citations, Section::AssistantRefusal, Section::UserImage];
        let payloads: [&[u8]; 5] = [b"", b"x", b"{\\\"a\\\":1}", b"[1]", b"not json"];
        let attrs: [Option<Vec<(Cow<'static, str>, Cow<'static, [u8]>)>>; 4] = [
            None,
            Some(vec![("dialect".into(), Cow::Borrowed(&b"\"anthropic\""[..]))]),
            Some(vec![("signature".into(), Cow::Borrowed(&b"\"s\""[..])), ("redacted".into(), Cow::Borrowed(&b"true"[..]))]),
            Some(vec![("id".into(), Cow::Borrowed(&b"7"[..])), ("name".into(), Cow::Borrowed(&b"\"n\""[..]))]),
        ];
        match r % 9 {
            0..=3 => Event::Block(Block { section: sections[r / 9 % sections.len()], message: (r / 7 % 3) as i64 - 1,
                                          payload: Cow::Borrowed(payloads[r / 11 % payloads.len()]), init: (r / 13).is_multiple_of(2),
                                          fin: (r / 17).is_multiple_of(2), attrs: attrs[r / 19 % attrs.len()].clone() }),
            4 => Event::Finish { reason: Some("end_turn".into()), stop_sequence: None, choice: (r / 9 % 2) as i64 },
            5 => Event::Usage(Usage { input: Some(3), output: None, ..Usage::default() }),
            6 => Event::FrameEnd,
            7 => Event::Error { kind: "x".into(), message: b"m"[..].into(), status: None },
            _ => Event::End,
        }
    }

    #[test]
    fn any_event_sequence_is_output_or_an_error_never_a_panic() {
        let mut seed = 7u64;
        for _ in 0..2000 {
            let events: Vec<Event<'static>> = (0..12).map(|_| event(&mut seed)).collect();
            for kind in [Kind::Response, Kind::Stream] {
                let mut session = new_session(kind);
                let mut encoder: Box<dyn Encode> = match kind {
                    Kind::Stream => Box::new(StreamEncoder::new(&session)),
                    _ => Box::new(ResponseEncoder::new(&session)),
                };
                let _ = encode(encoder.as_mut(), events.clone(), &mut session);
            }
        }
    }
}
