//! anthropic requests (`src/interlingua/dialects/anthropic/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper AD) -----------------------------------------------------------------
//
// Python's reader objects (MessageReader, BlockReader, ResultReader, SourceReader) are
// the decoder's fields: at most one message (or the top-level system) is open, at most
// two content blocks (a block of the message, and one element of its tool_result's
// content), one tool_result, one source. Their handlers are the states `S` of the
// decoding machine (decoding.rs); a key a reader needs when its value is complete is
// kept in `key` (one value is read at a time).
//
// The rules (request.py's docstring): the message index is the position in
// `messages[]`; top-level `system` blocks use `TOP_LEVEL_SYSTEM`, `SystemEnd` follows
// the `system` value or comes at the body's end; content before role is held
// (`anthropic:content-before-role`); a block's members before its `type` are read whole
// and replayed when it comes, small ones first (`anthropic:members-before-type`); a
// source's `data` before what says its kind waits (`anthropic:data-before-media-type`),
// a tool_result's content before its `tool_use_id` too
// (`anthropic:content-before-tool-use-id`). A replayed value's error names the held
// value's first byte and path in the body (`held_at`), and where inside it.

use std::borrow::Cow;

use crate::canonical::{escape_raw_json, Block, Event, Section, REQUEST_LEVEL, TOP_LEVEL_SYSTEM};
use crate::decoding::{
    dumps, get_attr, BlockBuilder, Cx, Decode, Dialect, EventSink, Expect, Frame, Machine, MessageBase, Read,
    RequestBody, OPT_STRING, STRING,
};
use crate::dialects::fields::{field, ANTHROPIC, ANTHROPIC_REQUIRED};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{py_str_repr, Frames, Limits, Sink, Token, Tokenizer};
use crate::reorder::{ByteHold, Hold};
use crate::session::Session;
use crate::value::Value;

use super::controls;

const DIALECT: &str = "anthropic";
const EXTRA_ATTR: &str = "anthropic_extra";
const ROLES: &[&str] = &["user", "assistant", "system"];

/// `SERVER_RESULT_TYPES`: raw blocks that are server-tool-result (others are unknown)
const SERVER_RESULT_TYPES: [&[u8]; 7] = [
    b"server_tool_use",
    b"web_search_tool_result",
    b"web_fetch_tool_result",
    b"code_execution_tool_result",
    b"bash_code_execution_tool_result",
    b"text_editor_code_execution_tool_result",
    b"tool_search_tool_result",
];
/// `_PAYLOAD_KEYS`: members replayed last when `type` comes late (the big ones)
const PAYLOAD_KEYS: [&[u8]; 6] = [b"text", b"thinking", b"data", b"source", b"input", b"content"];
/// `_TOOL_USE_REQUIRED`: a tool_use block of a request cannot go without these (the API answers 400)
const TOOL_USE_REQUIRED: [&str; 3] = ["id", "name", "input"];

/// Where a held value began in the body: its first byte and path (`held_at`).
type HeldAt = (u64, Vec<u8>);
/// A block member held until the block's type comes: (key, compact text, where it began).
type HeldMember = (Vec<u8>, Vec<u8>, HeldAt);

/// The block types the decoder maps (`_BLOCK_ATTRS`' keys); any other is carried raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Image,
    Document,
    Thinking,
    RedactedThinking,
    ToolUse,
    ToolResult,
    /// unknown and server blocks
    Other,
}

impl Kind {
    fn of(block_type: &[u8]) -> Kind {
        match block_type {
            b"text" => Kind::Text,
            b"image" => Kind::Image,
            b"document" => Kind::Document,
            b"thinking" => Kind::Thinking,
            b"redacted_thinking" => Kind::RedactedThinking,
            b"tool_use" => Kind::ToolUse,
            b"tool_result" => Kind::ToolResult,
            _ => Kind::Other,
        }
    }

    /// `key in _BLOCK_ATTRS[t]`: the member is an attribute of the block.
    fn attr(self, key: &[u8]) -> Option<&'static str> {
        let attrs: &[&'static str] = match self {
            Kind::Text => &["cache_control", "citations"],
            Kind::Image => &["cache_control"],
            Kind::Document => &["cache_control", "citations", "title", "context"],
            Kind::Thinking => &["signature"],
            Kind::ToolUse => &["id", "name", "cache_control"],
            Kind::ToolResult => &["cache_control", "is_error"],
            Kind::RedactedThinking | Kind::Other => &[],
        };
        attrs.iter().copied().find(|a| a.as_bytes() == key)
    }
}

/// `_TYPE_OF_PAYLOAD`: block payload keys that tell the block type on their own.
fn type_of_payload(key: &[u8]) -> Option<&'static [u8]> {
    match key {
        b"text" => Some(b"text"),
        b"thinking" => Some(b"thinking"),
        b"data" => Some(b"redacted_thinking"),
        _ => None,
    }
}

/// `_ATTR_TYPES`: the types of block attributes (others -- cache_control, citations ... -- any).
fn attr_type(key: &str) -> Option<Expect> {
    match key {
        "name" | "id" | "media_type" | "signature" => Some(STRING),
        "title" | "context" => Some(OPT_STRING),
        _ => None,
    }
}

/// `_ROLE_TEXT_SECTION`
fn text_section(role: &str) -> Section {
    match role {
        "assistant" => Section::AssistantText,
        "system" => Section::SystemInstruction,
        _ => Section::UserText,
    }
}

/// The handlers (Python's reader methods and `done` callbacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    /// the body's first token
    Start,
    /// the body's members (`_top_member`)
    Body,
    /// a top-level member without structure: a control or an extension (`_top_field`)
    TopField,
    Tools,
    Tool,
    Messages,
    /// a message's keys (`MessageReader.on_key`)
    Message,
    Role,
    /// a message's content: a string or a list (`_content`)
    Content,
    /// a message member without canonical meaning (a message-bound extension)
    MessageField,
    /// the string content of a message / of the top-level system
    Text,
    SystemText,
    /// the content list of a message / of the top-level system
    Blocks,
    SystemBlocks,
    /// the innermost content block's keys (`BlockReader.on_key`)
    Block,
    BlockType,
    /// a block member before the type: where it begins, then its text (held)
    Deferred,
    DeferredRaw,
    /// a tool_result's content (`ResultReader.on_content`), its list, its string
    ResultContent,
    ResultBlocks,
    ResultText,
    /// a tool_result's content before its tool_use_id: where it begins, then its text (held)
    ResultContentHeld,
    ResultContentRaw,
    /// block members (`BlockReader.member`)
    RawMember,
    Payload(&'static str),
    BlockText,
    Source,
    Input,
    ResultToolUseId,
    ToolUseId,
    ResultAttr(&'static str),
    ResultExtra,
    Attr(&'static str),
    Extra,
    /// an image/document source's keys (`SourceReader.on_key`) and members
    SourceKeys,
    SourceDataHeld,
    SourceDataRaw,
    SourceType,
    SourceAttr(&'static str),
    SourceContent,
    SourceExtra,
}

/// The anthropic request decoder (`RequestDecoder`): the machine and the readers' data.
pub struct RequestDecoder {
    m: Machine<S>,
    d: Readers,
}

struct Readers {
    body: RequestBody,
    /// the message being read, or the top-level system
    msg: MessageBase,
    /// a string content's block
    text: Option<BlockBuilder>,
    /// blocks in the content list being read (`[]` gets an empty block)
    content_count: u32,
    /// the open block of the message, and one element of its tool_result's content
    outer: Option<BlockReader>,
    inner: Option<BlockReader>,
    result: Option<ResultReader>,
    /// the key of the member whose value is being read
    key: Vec<u8>,
    /// where the value being held began
    held_at: HeldAt,
    /// tool-call ids are made canonical for another dialect (`own_id`)
    foreign: bool,
    /// replays under way (the outermost relocates an error)
    replaying: u32,
    max_depth: usize,
}

impl RequestDecoder {
    pub fn new(session: &Session) -> Self {
        RequestDecoder {
            m: Machine::starting(Read::State(S::Start)),
            d: Readers {
                body: RequestBody::new(ANTHROPIC_REQUIRED, false),
                msg: message(-1),
                text: None,
                content_count: 0,
                outer: None,
                inner: None,
                result: None,
                key: Vec::new(),
                held_at: (0, Vec::new()),
                foreign: session.target != DIALECT,
                replaying: 0,
                max_depth: session.options.max_depth,
            },
        }
    }
}

impl Decode for RequestDecoder {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()> {
        self.m.feed(&mut self.d, token, offset, &mut Cx::new(path, session, out))
    }

    fn flush(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        self.m.flush(&mut self.d, &mut Cx::outside(session, out))
    }

    fn at(&self) -> u64 {
        self.m.at
    }
}

fn message(index: i64) -> MessageBase {
    MessageBase::new(index, "anthropic:content-before-role", Some(ROLES))
}

/// An invariant of the decoder broke (a bug, never the input's fault): an error, not a panic.
fn internal(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the anthropic request decoder: {what}"))
}

/// A key as text (what errors call a member; a lone surrogate shows as U+FFFD).
fn key_text(key: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(key)
}

/// An extension's path ending in `key`. A key holding a lone surrogate (`"x\ud83d"`, WTF-8)
/// cannot be in `Extension.path` (canonical.rs holds it as a Rust str, UTF-8): not ported.
fn extension_path(prefix: std::fmt::Arguments<'_>, key: &[u8]) -> Result<String> {
    match std::str::from_utf8(key) {
        Ok(key) => Ok(format!("{prefix}{key}")),
        Err(_) => Err(Error::new(ErrorClass::Transcode,
                                 "an extension at a key holding a lone surrogate is not ported yet (Extension.path is UTF-8)")),
    }
}

fn json_of(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    dumps(value, &mut out);
    out
}

fn json_str(text: &[u8]) -> Vec<u8> {
    json_of(&Value::Str(text.to_vec()))
}

fn json_true() -> Vec<u8> {
    b"true".to_vec()
}

/// A string attribute's text (`late.get(key) or attrs.get(key)`: the `*_extra` members).
fn text_attr(builder: &BlockBuilder, key: &str) -> Vec<u8> {
    let text = |attrs: &[crate::decoding::Attr]| match get_attr(attrs, key).map(Value::loads) {
        Some(Ok(Value::Str(text))) if !text.is_empty() => Some(text),
        _ => None,
    };
    text(&builder.late).or_else(|| text(&builder.attrs)).unwrap_or_default()
}

/// `members + "," + text if members else text` into the string attribute `key`.
fn append_member(builder: &mut BlockBuilder, attr: &'static str, key: &[u8], raw: &[u8]) {
    let mut members = text_attr(builder, attr);
    if !members.is_empty() {
        members.push(b',');
    }
    members.extend_from_slice(&json_str(key));
    members.push(b':');
    members.extend_from_slice(raw);
    builder.set(attr, json_str(&members));
}

/// `MessageReader._resolve`: the block as its role makes it (text is built as
/// provisional user-text).
fn resolve<'b>(role: &str, index: i64, mut block: Block<'b>) -> Block<'b> {
    if block.section == Section::UserText {
        block.section = text_section(role);
        if block.init && block.section == Section::SystemInstruction && index != TOP_LEVEL_SYSTEM {
            block.attrs.get_or_insert_with(Vec::new).push(("in_messages".into(), Cow::Borrowed(b"true")));
        }
    } else if block.init && matches!(block.section, Section::Unknown | Section::ServerToolResult) {
        block.attrs.get_or_insert_with(Vec::new).push(("role".into(), Cow::Owned(json_str(role.as_bytes()))));
    }
    block
}

/// A block of the message (through its gate and `_resolve`).
fn emit(msg: &mut MessageBase, block: Block<'_>, cx: &mut Cx<'_>) -> Result<()> {
    let index = msg.index;
    msg.emit(block, cx, |role, block| resolve(role, index, block))
}

/// `builder.fragment(data, init, fin)`, emitted as the message's.
fn fragment(builder: &mut BlockBuilder, data: &[u8], fin: bool, msg: &mut MessageBase, cx: &mut Cx<'_>) -> Result<()> {
    match builder.fragment(data, fin) {
        Some(block) => emit(msg, block, cx),
        None => Ok(()),
    }
}

/// `builder.close()`, emitted as the message's.
fn close(builder: &mut BlockBuilder, msg: &mut MessageBase, cx: &mut Cx<'_>) -> Result<()> {
    let (last, late) = builder.close();
    emit(msg, last, cx)?;
    match late {
        Some(block) => emit(msg, block, cx),
        None => Ok(()),
    }
}

impl Dialect for Readers {
    type State = S;

    fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Start => self.body.start(m, S::Body, &token, offset, cx),
            S::Message => self.message_key(m, token, offset, cx),
            S::Content => self.content(m, token),
            S::Block => self.block_key(m, token, offset, cx),
            S::Deferred | S::ResultContentHeld | S::SourceDataHeld => {
                self.held_at = (offset, cx.path());
                m.read(Read::Raw(
                    match s {
                        S::Deferred => S::DeferredRaw,
                        S::ResultContentHeld => S::ResultContentRaw,
                        _ => S::SourceDataRaw,
                    },
                    None,
                    "",
                ));
                Ok(())
            }
            S::ResultContent => self.result_content(m, token, cx),
            S::Payload(key) => {
                if token == Token::Null {
                    return Ok(()); // an explicit null means the same as absent: no payload
                }
                self.make_builder(cx)?; // (Python takes `self._builder().fragment` first)
                m.read(Read::String(S::BlockText, key));
                Ok(())
            }
            S::Source => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for source", offset));
                }
                self.make_builder(cx)?;
                self.block()?.source = Some(SourceReader::default());
                m.push(Frame::State(S::SourceKeys));
                Ok(())
            }
            S::SourceKeys => self.source_key(m, token, offset, cx),
            other => Err(internal(&format!("{other:?} takes no token"))),
        }
    }

    fn member(&mut self, m: &mut Machine<S>, _s: S, key: &[u8], token: Token<'_>, offset: u64,
              cx: &mut Cx<'_>) -> Result<()> {
        self.body.seen(key);
        cx.expect(&token, offset, field(ANTHROPIC, key), &key_text(key))?;
        match key {
            b"messages" => m.read(Read::Objects(S::Messages, "messages")),
            b"system" => {
                self.msg = message(TOP_LEVEL_SYSTEM);
                self.msg.role = Some("system".into());
                if token == Token::ArrayStart {
                    self.content_count = 0;
                    m.read(Read::Objects(S::SystemBlocks, "content"));
                } else {
                    self.text = Some(BlockBuilder::new(Section::UserText, TOP_LEVEL_SYSTEM, Vec::new()));
                    m.read(Read::String(S::SystemText, "content"));
                }
            }
            b"tools" => m.read(Read::Elements(S::Tools, "tools")),
            _ => {
                self.key = key.to_vec();
                m.read(Read::Raw(S::TopField, None, ""));
            }
        }
        Ok(())
    }

    fn element(&mut self, m: &mut Machine<S>, _s: S, _token: Token<'_>, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
        m.read(Read::Raw(S::Tool, None, "")); // (S::Tools: a tool definition, read whole)
        Ok(())
    }

    fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Messages => {
                self.msg = message(self.body.next_message());
                m.push(Frame::State(S::Message));
            }
            S::Blocks | S::SystemBlocks => {
                self.content_count += 1;
                self.outer = Some(BlockReader::new(false));
                m.push(Frame::State(S::Block));
            }
            S::ResultBlocks => {
                self.inner = Some(BlockReader::new(true));
                m.push(Frame::State(S::Block));
            }
            other => return Err(internal(&format!("{other:?} takes no object"))),
        }
        Ok(())
    }

    fn end(&mut self, _m: &mut Machine<S>, s: S, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Body => {
                self.body.end(offset, cx)?;
                self.body.finish(cx)
            }
            S::Messages => self.body.messages_end(cx),
            S::Blocks | S::SystemBlocks => {
                if self.content_count == 0 {
                    // `[]`: an empty block keeps the message (and its form)
                    let attrs = vec![("in_parts".into(), Cow::Borrowed(&b"true"[..])), ("empty".into(), Cow::Borrowed(&b"true"[..]))];
                    let block = Block { section: Section::UserText, message: self.msg.index, payload: Cow::Borrowed(b""),
                                        init: true, fin: true, attrs: Some(attrs) };
                    emit(&mut self.msg, block, cx)?;
                }
                if s == S::SystemBlocks {
                    self.body.system_end(cx)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::TopField => self.top_field(raw, cx),
            S::Tool => self.tool(raw, offset, cx),
            S::MessageField => {
                let index = self.msg.index;
                let path = extension_path(format_args!("$.messages[{index}]."), &self.key)?;
                cx.extension(DIALECT, path, raw, Some(index), raw == b"null")
            }
            S::DeferredRaw => {
                let item = (std::mem::take(&mut self.key), raw.to_vec(), std::mem::take(&mut self.held_at));
                let block = self.block()?;
                let hold = block.deferred.get_or_insert_with(|| cx.session.reorder.hold("anthropic:members-before-type"));
                hold.append(&mut cx.session.reorder, item, raw.len() as u64)
            }
            S::ResultContentRaw => {
                let mut hold = cx.session.reorder.byte_hold("anthropic:content-before-tool-use-id");
                hold.write(&mut cx.session.reorder, raw)?;
                let at = std::mem::take(&mut self.held_at);
                let result = self.result_mut()?;
                result.deferred = Some((hold, at));
                Ok(())
            }
            S::SourceDataRaw => {
                let mut hold = cx.session.reorder.byte_hold("anthropic:data-before-media-type");
                hold.write(&mut cx.session.reorder, raw)?;
                let at = std::mem::take(&mut self.held_at);
                self.source()?.deferred = Some((hold, at));
                Ok(())
            }
            S::RawMember => {
                let key = std::mem::take(&mut self.key);
                let block = self.block()?;
                block.raw_members.push(b',');
                block.raw_members.extend_from_slice(&json_str(&key));
                block.raw_members.push(b':');
                block.raw_members.extend_from_slice(raw);
                Ok(())
            }
            S::ResultExtra => {
                let key = std::mem::take(&mut self.key);
                append_member(self.result_mut()?.current_mut(), EXTRA_ATTR, &key, raw);
                Ok(())
            }
            S::Extra => {
                let key = std::mem::take(&mut self.key);
                self.make_builder(cx)?;
                append_member(self.builder()?, EXTRA_ATTR, &key, raw);
                Ok(())
            }
            S::SourceExtra => {
                let key = std::mem::take(&mut self.key);
                append_member(self.builder()?, "source_extra", &key, raw);
                Ok(())
            }
            other => Err(internal(&format!("{other:?} takes no raw value"))),
        }
    }

    fn value(&mut self, m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Role => {
                let index = self.msg.index;
                self.msg.set_role(value, offset, cx, |role, block| resolve(role, index, block))
            }
            S::BlockType => self.set_type(m, value, offset, cx),
            S::ResultToolUseId => {
                let id = json_of(&self.own_id(value));
                let result = self.result_mut()?;
                result.has_id = true;
                result.current_mut().set("tool_call_id", id);
                Ok(())
            }
            S::ToolUseId => {
                let id = json_of(&self.own_id(value));
                self.make_builder(cx)?;
                self.builder()?.set("id", id);
                Ok(())
            }
            S::ResultAttr(key) => {
                self.result_mut()?.current_mut().set(key, json_of(&value));
                Ok(())
            }
            S::Attr(key) => {
                self.make_builder(cx)?;
                self.builder()?.set(key, json_of(&value));
                Ok(())
            }
            S::SourceType => {
                self.builder()?.set("source", json_of(&value));
                Ok(())
            }
            S::SourceAttr(key) => {
                self.builder()?.set(key, json_of(&value));
                Ok(())
            }
            S::SourceContent => {
                self.builder()?.set("content", json_of(&value));
                Ok(())
            }
            other => Err(internal(&format!("{other:?} takes no value"))),
        }
    }

    fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool,
                cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Text | S::SystemText => {
                let builder = self.text.as_mut().ok_or_else(|| internal("no text block"))?;
                fragment(builder, data, fin, &mut self.msg, cx)?;
                if fin {
                    // the string's block closes at its end (and the system ends with it)
                    let mut builder = self.text.take().ok_or_else(|| internal("no text block"))?;
                    close(&mut builder, &mut self.msg, cx)?;
                    if s == S::SystemText {
                        self.body.system_end(cx)?;
                    }
                }
                Ok(())
            }
            S::BlockText => {
                let (builder, msg) = self.builder_and_message()?;
                fragment(builder, data, fin, msg, cx)
            }
            S::ResultText => {
                let Readers { msg, result, .. } = self;
                let result = result.as_mut().ok_or_else(|| internal("no tool_result"))?;
                fragment(&mut result.head, data, fin, msg, cx)
            }
            S::Input => {
                // `_input`: the input's compact text is the tool call's payload, string-escaped
                let mut escaped = Vec::with_capacity(data.len() + 8);
                escape_raw_json(data, &mut escaped);
                self.make_builder(cx)?;
                let (builder, msg) = self.builder_and_message()?;
                fragment(builder, &escaped, fin, msg, cx)
            }
            other => Err(internal(&format!("{other:?} takes no fragment"))),
        }
    }
}

impl Readers {
    // -- top level ---------------------------------------------------------------------

    /// `_top_field`: a control, or an extension (an explicit null: a lossless one).
    fn top_field(&mut self, raw: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        let path = extension_path(format_args!("$."), &self.key)?;
        if raw == b"null" {
            return cx.extension(DIALECT, path, raw, None, true);
        }
        match controls::decode(&self.key, raw)? {
            None => cx.extension(DIALECT, path, raw, None, false),
            Some(found) => {
                for control in found {
                    cx.emit(Event::Control(control))?;
                }
                Ok(())
            }
        }
    }

    /// `_tool`: a custom tool is a tool definition; any other (a server tool) is carried raw.
    fn tool(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let tool = cx.data(raw, offset)?;
        if !matches!(tool, Value::Object(_)) {
            return Err(cx.error("expected an object for a tool", offset));
        }
        let block = match controls::tool_to_canonical(&tool) {
            None => Block {
                section: Section::Unknown,
                message: REQUEST_LEVEL,
                payload: Cow::Borrowed(raw),
                init: true,
                fin: true,
                attrs: Some(vec![("dialect".into(), Cow::Borrowed(&b"\"anthropic\""[..])),
                                 ("where".into(), Cow::Borrowed(&b"\"tool\""[..]))]),
            },
            Some((attrs, schema)) => Block {
                section: Section::ToolDefinition,
                message: REQUEST_LEVEL,
                payload: Cow::Owned(json_of(schema)),
                init: true,
                fin: true,
                attrs: Some(attrs),
            },
        };
        cx.emit(Event::Block(block))
    }

    /// `own_id`: a tool-call id for another dialect is what the anthropic id stands for
    /// (`naming.canonical_id`); anthropic -> anthropic keeps it as it is.
    fn own_id(&self, call_id: Value) -> Value {
        match call_id {
            Value::Str(id) if self.foreign => match String::from_utf8(id) {
                Ok(text) => Value::Str(crate::naming::canonical_id(&text).into_bytes()),
                Err(e) => Value::Str(e.into_bytes()),
            },
            other => other,
        }
    }

    // -- messages ----------------------------------------------------------------------

    /// `MessageReader.on_key`
    fn message_key(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::ObjectEnd => {
                m.pop();
                if self.msg.role.is_none() {
                    return Err(cx.error("message without role", offset));
                }
            }
            Token::Key(b"role") => m.then(Read::Value(S::Role, None, "")),
            Token::Key(b"content") => m.then(Read::State(S::Content)),
            Token::Key(key) => {
                self.key = key.to_vec();
                m.then(Read::Raw(S::MessageField, None, ""));
            }
            _ => return Err(internal("a message member")),
        }
        Ok(())
    }

    /// `_content`: a list of blocks, or a string (one text block).
    fn content(&mut self, m: &mut Machine<S>, token: Token<'_>) -> Result<()> {
        if token == Token::ArrayStart {
            self.content_count = 0;
            m.read(Read::Objects(S::Blocks, "content"));
        } else {
            self.text = Some(BlockBuilder::new(Section::UserText, self.msg.index, Vec::new()));
            m.read(Read::String(S::Text, "content"));
        }
        Ok(())
    }

    // -- content blocks ------------------------------------------------------------------

    /// The innermost open block (whose members are being read).
    fn block(&mut self) -> Result<&mut BlockReader> {
        match (&mut self.inner, &mut self.outer) {
            (Some(block), _) | (None, Some(block)) => Ok(block),
            _ => Err(internal("no open block")),
        }
    }

    fn result_mut(&mut self) -> Result<&mut ResultReader> {
        self.result.as_mut().ok_or_else(|| internal("no tool_result"))
    }

    fn source(&mut self) -> Result<&mut SourceReader> {
        self.block()?.source.as_mut().ok_or_else(|| internal("no source"))
    }

    /// `BlockReader.on_key`
    fn block_key(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let key = match token {
            Token::ObjectEnd => {
                m.pop();
                return self.block_end(m, offset, cx);
            }
            Token::Key(key) => key,
            _ => return Err(internal("a block member")),
        };
        if key == b"type" {
            m.then(Read::Value(S::BlockType, Some(STRING), "a content block's type"));
            return Ok(());
        }
        let is_result = self.inner.is_none() && self.result.is_some();
        let block = self.block()?;
        if block.type_.is_none() && block.deferred.as_ref().map_or(true, Hold::is_empty) {
            if let Some(t) = type_of_payload(key) {
                block.type_ = Some(t.to_vec());
                block.kind = Kind::of(t);
            }
        }
        if block.type_.is_none() {
            self.key = key.to_vec();
            m.then(Read::State(S::Deferred));
        } else if is_result && key == b"content" {
            let has_id = self.result.as_ref().is_some_and(|r| r.has_id);
            // the id must be on the result's first block: content waits for it (bounded)
            m.then(Read::State(if has_id { S::ResultContent } else { S::ResultContentHeld }));
        } else {
            let read = self.member(key)?;
            m.then(read);
        }
        Ok(())
    }

    /// `_set_type`: the type is known; the members held before it are replayed, small ones first.
    fn set_type(&mut self, m: &mut Machine<S>, block_type: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let Value::Str(block_type) = block_type else {
            return Err(cx.error("expected a string for a content block type", offset));
        };
        let in_result = self.inner.is_some();
        let block = self.block()?;
        if let Some(known) = &block.type_ {
            if *known != block_type {
                return Err(cx.error(format!("content block of type {} carries a {} payload",
                                            py_str_repr(&block_type), py_str_repr(known)), offset));
            }
        }
        block.kind = Kind::of(&block_type);
        block.type_ = Some(block_type);
        if block.kind == Kind::ToolUse {
            block.tool_keys = [false; 3];
        }
        let kind = block.kind;
        let mut held: Vec<HeldMember> = match block.deferred.as_mut() {
            Some(deferred) => deferred.drain(&mut cx.session.reorder).collect(),
            None => Vec::new(),
        };
        if kind == Kind::ToolResult && !in_result {
            self.result = Some(ResultReader::new(self.msg.index));
        }
        // small members first: attributes must ride on the first fragment where possible
        held.sort_by_key(|(key, _, _)| PAYLOAD_KEYS.contains(&key.as_slice()));
        for (key, raw, at) in held {
            let read = if key == b"content" && kind == Kind::ToolResult && !in_result {
                Read::State(S::ResultContent)
            } else {
                self.member(&key)?
            };
            self.replay(m, read, &raw, at, cx)?;
        }
        Ok(())
    }

    /// `BlockReader.member(key)`: the reader of a member of the innermost block, its type known.
    fn member(&mut self, key: &[u8]) -> Result<Read<S>> {
        let block = self.block()?;
        let kind = block.kind;
        if kind == Kind::ToolUse {
            if let Some(i) = TOOL_USE_REQUIRED.iter().position(|r| r.as_bytes() == key) {
                block.tool_keys[i] = true;
            }
        }
        let keep = |this: &mut Self, state: S| {
            this.key = key.to_vec();
            Read::Raw(state, None, "")
        };
        if block.is_raw() {
            return Ok(keep(self, S::RawMember));
        }
        Ok(match (kind, key) {
            (Kind::Text | Kind::Thinking | Kind::RedactedThinking, b"text") => Read::State(S::Payload("text")),
            (Kind::Text | Kind::Thinking | Kind::RedactedThinking, b"thinking") => Read::State(S::Payload("thinking")),
            (Kind::Text | Kind::Thinking | Kind::RedactedThinking, b"data") => Read::State(S::Payload("data")),
            (Kind::Image | Kind::Document, b"source") => Read::State(S::Source),
            (Kind::ToolUse, b"input") => Read::StreamRaw(S::Input),
            (Kind::ToolResult, b"tool_use_id") => Read::Value(S::ResultToolUseId, Some(STRING), "tool_use_id"),
            (Kind::ToolUse, b"id") => Read::Value(S::ToolUseId, Some(STRING), "id"),
            (Kind::ToolResult, b"is_error") => Read::Value(S::ResultAttr("is_error"), None, ""),
            (Kind::ToolResult, b"cache_control") => Read::Value(S::ResultAttr("cache_control"), None, ""),
            (Kind::ToolResult, _) => keep(self, S::ResultExtra),
            _ => match kind.attr(key) {
                Some(attr) => Read::Value(S::Attr(attr), attr_type(attr), attr),
                None => keep(self, S::Extra),
            },
        })
    }

    /// `_builder()`: the innermost block's builder, made from its type when first needed.
    fn make_builder(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let in_result = self.inner.is_some();
        let Readers { msg, outer, inner, result, .. } = self;
        let block = match (inner.as_mut(), outer.as_mut()) {
            (Some(block), _) | (None, Some(block)) => block,
            _ => return Err(internal("no open block")),
        };
        if !matches!(block.slot, Slot::Unmade) {
            return Ok(());
        }
        let (section, attrs) = block.section()?;
        if in_result {
            result.as_mut().ok_or_else(|| internal("no tool_result"))?.make(section, attrs, msg, cx)?;
            block.slot = Slot::InResult;
        } else {
            block.slot = Slot::Own(BlockBuilder::new(section, msg.index, attrs));
        }
        Ok(())
    }

    /// The innermost block's builder (made), with the message it emits to.
    fn builder_and_message(&mut self) -> Result<(&mut BlockBuilder, &mut MessageBase)> {
        let Readers { msg, outer, inner, result, .. } = self;
        let block = match (inner.as_mut(), outer.as_mut()) {
            (Some(block), _) | (None, Some(block)) => block,
            _ => return Err(internal("no open block")),
        };
        let builder = match &mut block.slot {
            Slot::Own(builder) => builder,
            Slot::InResult => result.as_mut().ok_or_else(|| internal("no tool_result"))?.current_mut(),
            Slot::Unmade => return Err(internal("the block's builder is not made")),
        };
        Ok((builder, msg))
    }

    fn builder(&mut self) -> Result<&mut BlockBuilder> {
        Ok(self.builder_and_message()?.0)
    }

    /// `BlockReader._end`: the innermost block's closing brace.
    fn block_end(&mut self, m: &mut Machine<S>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let in_result = self.inner.is_some();
        let block = self.block()?;
        let Some(block_type) = block.type_.take() else {
            return Err(cx.error("content block without type", offset));
        };
        if block.is_raw() {
            let mut raw = b"{\"type\":".to_vec();
            raw.extend_from_slice(&json_str(&block_type));
            raw.extend_from_slice(&block.raw_members);
            raw.push(b'}');
            let section = if SERVER_RESULT_TYPES.contains(&block_type.as_slice()) {
                Section::ServerToolResult
            } else {
                Section::Unknown
            };
            let mut attrs = vec![("dialect".into(), b"\"anthropic\"".to_vec())];
            if in_result {
                attrs.push(("in_result".into(), json_true()));
                let Readers { msg, result, .. } = self;
                let result = result.as_mut().ok_or_else(|| internal("no tool_result"))?;
                result.make(section, attrs, msg, cx)?;
                fragment(result.current_mut(), &raw, true, msg, cx)?; // (closed when the next one starts)
                self.inner = None;
            } else {
                let mut builder = BlockBuilder::new(section, self.msg.index, attrs);
                fragment(&mut builder, &raw, true, &mut self.msg, cx)?;
                close(&mut builder, &mut self.msg, cx)?;
                self.outer = None;
            }
            return Ok(());
        }
        if block.kind == Kind::ToolResult && !in_result {
            let result = self.result_mut()?;
            if !result.has_id {
                // (a result that answers no call: required, as a tool_use's id)
                return Err(cx.missing("tool_use_id", "a tool_result block", offset));
            }
            if let Some((mut held, at)) = result.deferred.take() {
                let mut raw = Vec::new();
                held.take_into(&mut cx.session.reorder, &mut raw);
                self.replay(m, Read::State(S::ResultContent), &raw, at, cx)?;
            }
            let Readers { msg, result, .. } = self;
            result.as_mut().ok_or_else(|| internal("no tool_result"))?.end(msg, cx)?;
            self.result = None;
            self.outer = None;
            return Ok(());
        }
        if block.kind == Kind::ToolUse {
            for (member, seen) in TOOL_USE_REQUIRED.iter().zip(block.tool_keys) {
                if !seen {
                    // (no made-up id: results must answer it)
                    return Err(cx.missing(member, "a tool_use block", offset));
                }
            }
        }
        self.make_builder(cx)?;
        let (builder, msg) = self.builder_and_message()?;
        if !builder.started && !builder.has_last() {
            fragment(builder, b"", true, msg, cx)?; // a block without payload (a file source)
        }
        if in_result {
            self.inner = None; // (a result's element closes when the next one starts)
        } else {
            close(builder, msg, cx)?; // (MessageSlot.done)
            self.outer = None;
        }
        Ok(())
    }

    // -- tool results ----------------------------------------------------------------------

    /// `ResultReader.on_content`
    fn result_content(&mut self, m: &mut Machine<S>, token: Token<'_>, _cx: &mut Cx<'_>) -> Result<()> {
        if token == Token::ArrayStart {
            self.result_mut()?.head.set("in_parts", json_true());
            m.read(Read::Objects(S::ResultBlocks, "tool_result content"));
        } else {
            m.read(Read::String(S::ResultText, "content"));
        }
        Ok(())
    }

    // -- sources ------------------------------------------------------------------------------

    /// `SourceReader.on_key`
    fn source_key(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let key = match token {
            Token::ObjectEnd => return self.source_end(m, offset, cx),
            Token::Key(key) => key,
            _ => return Err(internal("a source member")),
        };
        let builder = self.builder()?;
        let read = match key {
            b"data" if !source_known(builder) => Read::State(S::SourceDataHeld),
            b"data" | b"url" => {
                if key == b"url" && get_attr(&builder.attrs, "source").is_none()
                    && get_attr(&builder.late, "source").is_none()
                {
                    builder.set("source", json_str(b"url")); // tells the encoder the payload key early
                }
                Read::String(S::BlockText, if key == b"url" { "url" } else { "data" })
            }
            b"type" => {
                self.source()?.has_type = true;
                Read::Value(S::SourceType, Some(STRING), "a source's type")
            }
            b"media_type" => Read::Value(S::SourceAttr("media_type"), Some(STRING), "media_type"),
            b"file_id" => Read::Value(S::SourceAttr("file_id"), Some(STRING), "file_id"),
            b"content" => Read::Value(S::SourceContent, None, ""),
            _ => {
                self.key = key.to_vec();
                Read::Raw(S::SourceExtra, None, "")
            }
        };
        m.then(read);
        Ok(())
    }

    fn source_end(&mut self, m: &mut Machine<S>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let source = self.block()?.source.take().ok_or_else(|| internal("no source"))?;
        if !source.has_type {
            // (required for every source kind: it says what the payload is)
            return Err(cx.missing("type", "a source", offset));
        }
        m.pop();
        if let Some((mut held, at)) = source.deferred {
            // sorted keys put data before type and media_type; every target needs those
            // first (a data URL prefix), so the data waits (in the reorder buffer)
            let mut raw = Vec::new();
            held.take_into(&mut cx.session.reorder, &mut raw);
            self.replay(m, Read::String(S::BlockText, "data"), &raw, at, cx)?;
        }
        Ok(())
    }

    // -- replay -----------------------------------------------------------------------------------

    /// `replay`: feed a value read earlier (`raw`, held from `at`) to `read` now.
    ///
    /// The held text is compact JSON, not the body's bytes: its offsets mean nothing to
    /// the sender. An error is at the held value's first byte and path in the body, and
    /// says where inside the value. A replay inside a replay leaves that to the outer one
    /// (Python rewrites the error at each level; the outermost rewrite is what remains).
    fn replay(&mut self, m: &mut Machine<S>, read: Read<S>, raw: &[u8], at: HeldAt, cx: &mut Cx<'_>) -> Result<()> {
        let depth = m.depth();
        m.then(read);
        let mut inner = Tokenizer::new(Limits { max_depth: self.max_depth, ..Limits::default() });
        self.replaying += 1;
        let fed = {
            let mut sink = Replay { m: &mut *m, d: &mut *self, session: &mut *cx.session, out: &mut *cx.out };
            inner.feed(raw, &mut sink).and_then(|()| inner.close(&mut sink))
        };
        self.replaying -= 1;
        if let Err(mut err) = fed {
            if self.replaying == 0 {
                err.message = format!("{} (inside the value, at {} of it)", err.message,
                                      String::from_utf8_lossy(&inner.path()));
                err.offset = Some(at.0);
                err.path = Some(at.1);
            }
            return Err(err);
        }
        m.flush(self, cx)?;
        if m.depth() != depth {
            return Err(internal("a replayed value left handlers behind"));
        }
        Ok(())
    }
}

/// The tokenizer of a replay feeds the machine itself.
struct Replay<'r> {
    m: &'r mut Machine<S>,
    d: &'r mut Readers,
    session: &'r mut Session,
    out: &'r mut dyn EventSink,
}

impl Sink for Replay<'_> {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
        let mut cx = Cx::new(path, self.session, self.out);
        self.m.feed(self.d, token, offset, &mut cx)
    }
}

/// `SourceReader._known`: the source says what its data is (its type, and a media type
/// unless it is a url or file source) -- read from the attributes set before the payload.
fn source_known(builder: &BlockBuilder) -> bool {
    match get_attr(&builder.attrs, "source") {
        Some(kind) => get_attr(&builder.attrs, "media_type").is_some() || kind == b"\"url\"" || kind == b"\"file\"",
        None => false,
    }
}

// -- the readers' data ---------------------------------------------------------------------

/// Where a block's builder is (`BlockReader.block` and its slot).
#[derive(Debug)]
enum Slot {
    Unmade,
    Own(BlockBuilder),
    /// an element of a tool_result's content: the result's current builder
    InResult,
}

/// One content block object (`BlockReader`).
struct BlockReader {
    /// an element of a tool_result's content (`slot.in_result`)
    in_result: bool,
    type_: Option<Vec<u8>>,
    kind: Kind,
    slot: Slot,
    /// members seen before the type (sorted keys), held until it comes: (key, raw, held_at)
    deferred: Option<Hold<HeldMember>>,
    /// `,"key":raw` of each member of a block carried raw
    raw_members: Vec<u8>,
    /// a tool_use's id, name and input were seen (`tool_keys`)
    tool_keys: [bool; 3],
    source: Option<SourceReader>,
}

impl BlockReader {
    fn new(in_result: bool) -> Self {
        BlockReader {
            in_result,
            type_: None,
            kind: Kind::Other,
            slot: Slot::Unmade,
            deferred: None,
            raw_members: Vec::new(),
            tool_keys: [false; 3],
            source: None,
        }
    }

    /// `is_raw`: carried as its JSON (unknown and server blocks, a tool_result in a tool_result).
    fn is_raw(&self) -> bool {
        self.kind == Kind::Other || (self.kind == Kind::ToolResult && self.in_result)
    }

    /// `_section`
    fn section(&self) -> Result<(Section, Vec<crate::decoding::Attr>)> {
        let mut attrs = vec![("in_parts".into(), json_true())];
        if self.in_result {
            attrs.push(("in_result".into(), json_true()));
        }
        let section = match self.kind {
            Kind::Text if self.in_result => Section::ToolResult,
            Kind::Text => Section::UserText,
            Kind::Image => Section::UserImage,
            Kind::Document => Section::UserDocument,
            Kind::Thinking => Section::AssistantReasoning,
            Kind::RedactedThinking => {
                attrs.push(("redacted".into(), json_true()));
                Section::AssistantReasoning
            }
            Kind::ToolUse => Section::ToolCall,
            Kind::ToolResult | Kind::Other => return Err(internal("no section for a raw block")),
        };
        Ok((section, attrs))
    }
}

/// An image/document `source` (`SourceReader`); its attributes go on the block's builder.
#[derive(Default)]
struct SourceReader {
    /// the source's `type` member was read
    has_type: bool,
    /// `data` seen before the source's type / media type, and where it began
    deferred: Option<(ByteHold, HeldAt)>,
}

/// A `tool_result` (`ResultReader`): always a leading tool-result block (the head)
/// carrying tool_call_id, is_error, cache_control; further content elements are
/// blocks of their own; attributes that come late go to the current (last) one.
struct ResultReader {
    has_id: bool,
    /// the content read before tool_use_id, and where it began
    deferred: Option<(ByteHold, HeldAt)>,
    head: BlockBuilder,
    /// the block late attributes go to; None: the head
    current: Option<BlockBuilder>,
}

impl ResultReader {
    fn new(index: i64) -> Self {
        ResultReader { has_id: false, deferred: None, head: BlockBuilder::new(Section::ToolResult, index, Vec::new()),
                       current: None }
    }

    fn current_mut(&mut self) -> &mut BlockBuilder {
        match &mut self.current {
            Some(builder) => builder,
            None => &mut self.head,
        }
    }

    /// The head has no payload yet (`not head.started and head.last is None`).
    fn head_bare(&self) -> bool {
        !self.head.started && !self.head.has_last()
    }

    /// `make` (the slot protocol): the builder of the next content element.
    fn make(&mut self, section: Section, attrs: Vec<crate::decoding::Attr>, msg: &mut MessageBase,
            cx: &mut Cx<'_>) -> Result<()> {
        if section == Section::ToolResult && self.head_bare() {
            return Ok(()); // the leading text element is the head's payload
        }
        self.close_head_if_empty(msg, cx)?;
        if self.current.is_some() || self.head.started || self.head.has_last() {
            close(self.current_mut(), msg, cx)?;
        }
        self.current = Some(BlockBuilder::new(section, self.head.message, attrs));
        Ok(())
    }

    fn close_head_if_empty(&mut self, msg: &mut MessageBase, cx: &mut Cx<'_>) -> Result<()> {
        if self.head_bare() {
            self.head.set("empty", json_true());
            fragment(&mut self.head, b"", true, msg, cx)?;
        }
        Ok(())
    }

    fn end(&mut self, msg: &mut MessageBase, cx: &mut Cx<'_>) -> Result<()> {
        if self.current.is_none() {
            self.close_head_if_empty(msg, cx)?;
        }
        close(self.current_mut(), msg, cx)
    }
}

#[cfg(test)]
mod decoder_tests {
    //! The decoder without Python: the holds and replays of sorted keys, the relocation
    //! of a replayed value's error, events the same however the body is cut. Parity with
    //! Python: tests/native/test_anthropic_request_decoder_parity.py.
    use super::*;
    use crate::session::{Kind as RunKind, Options};

    /// Events as text; a block's fragments joined into one line (whatever the cuts, the
    /// same lines: the parity rule across the whole run).
    struct Events(Vec<String>);

    impl EventSink for Events {
        fn event(&mut self, event: Event<'_>, _session: &mut Session) -> Result<()> {
            let attrs = |a: Option<Vec<(Cow<'_, str>, Cow<'_, [u8]>)>>| {
                a.map_or(String::new(), |a| {
                    a.iter().map(|(k, v)| format!("{k}={}", String::from_utf8_lossy(v))).collect::<Vec<_>>().join(",")
                })
            };
            let line = match event {
                Event::Block(b) if !b.init => {
                    let last = self.0.last_mut().ok_or_else(|| internal("a fragment without its block"))?;
                    let (head, open) = last.split_once('\u{0}').ok_or_else(|| internal("a fragment after fin"))?;
                    let text = format!("{open}{}", String::from_utf8_lossy(&b.payload));
                    *last = match (b.fin, b.attrs) {
                        (false, _) => format!("{head}\u{0}{text}"),
                        (true, None) => format!("{head} {text:?}"),
                        (true, late) => format!("{head} {text:?} late:{}", attrs(late)),
                    };
                    return Ok(());
                }
                Event::Block(b) => {
                    let head = format!("{} {} [{}]", b.section.name(), b.message, attrs(b.attrs));
                    let text = String::from_utf8_lossy(&b.payload).into_owned();
                    if b.fin { format!("{head} {text:?}") } else { format!("{head}\u{0}{text}") }
                }
                Event::Control(c) => format!("control {} {}", c.name, String::from_utf8_lossy(&c.value)),
                Event::Extension(e) => format!("extension {} {}", e.path, String::from_utf8_lossy(&e.raw)),
                other => other.tag().to_string(),
            };
            self.0.push(line);
            Ok(())
        }
    }

    struct Run<'a> {
        d: &'a mut RequestDecoder,
        session: &'a mut Session,
        out: &'a mut Events,
    }

    impl Sink for Run<'_> {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
            self.d.token(token, offset, path, self.session, self.out)
        }
    }

    /// The events (fragments of a block joined) of `body` fed in pieces of `size`.
    fn decode(body: &[u8], size: usize) -> (Vec<String>, Option<Error>) {
        let options = Options {
            strict: false,
            reorder_budget: 1 << 20,
            refuse_reorder: false,
            openai_reasoning_field: None,
            default_max_tokens: 4096,
            max_depth: 128,
            max_value_bytes: 1 << 20,
            tool_names: None,
            anthropic_thinking: "auto".into(),
            anthropic_thinking_budgets: None,
            ollama_sampling_defaults: false,
        };
        let mut session = Session::new(options, "anthropic", "openai", RunKind::Request);
        let mut d = RequestDecoder::new(&session);
        let mut tokenizer = Tokenizer::default();
        let mut out = Events(Vec::new());
        let mut result = Ok(());
        for piece in body.chunks(size.max(1)) {
            result = tokenizer.feed(piece, &mut Run { d: &mut d, session: &mut session, out: &mut out })
                .and_then(|()| d.flush(&mut session, &mut out));
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = tokenizer.close(&mut Run { d: &mut d, session: &mut session, out: &mut out });
        }
        (out.0, result.err())
    }

    const SORTED: &[u8] = br#"{"max_tokens":5,"messages":[{"content":[{"cache_control":{"type":"ephemeral"},"text":"hi","type":"text"},{"source":{"data":"QQ","media_type":"image/png","type":"base64"},"type":"image"},{"content":"ok","tool_use_id":"t1","type":"tool_result"}],"role":"user"}],"model":"m","system":"be brief"}"#;

    #[test]
    fn sorted_keys_are_held_and_replayed() {
        let (events, error) = decode(SORTED, 1 << 20);
        assert_eq!(error, None);
        // cache_control (held) rides on the text; the data waits for its media type; the
        // result's content for its id (all replayed when the type comes)
        assert_eq!(events, [
            "control max_output_tokens 5",
            "user-text 0 [in_parts=true,cache_control={\"type\":\"ephemeral\"}] \"hi\"",
            "user-image 0 [in_parts=true,media_type=\"image/png\",source=\"base64\"] \"QQ\"",
            "tool-result 0 [tool_call_id=\"t1\"] \"ok\"",
            "messages-end",
            "control model \"m\"",
            "system-instruction -2 [] \"be brief\"",
            "system-end",
            "end",
        ]);
    }

    #[test]
    fn the_same_events_however_the_body_is_cut() {
        let (whole, _) = decode(SORTED, 1 << 20);
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(decode(SORTED, size), (whole.clone(), None), "pieces of {size}");
        }
    }

    #[test]
    fn a_replayed_value_s_error_is_at_the_held_value() {
        // "data" is held (no type yet), replayed when the type comes: not a string
        let body = br#"{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"signature":5,"type":"thinking"}]}]}"#;
        let (_, error) = decode(body, 1 << 20);
        let error = error.expect("an error");
        assert_eq!(error.class, ErrorClass::Schema);
        assert_eq!(error.message, "expected a string for signature, got number (inside the value, at $ of it)");
        assert_eq!(error.path.as_deref(), Some(&b"$.messages[0].content[0].signature"[..]));
        assert_eq!(error.offset, Some(body.windows(2).position(|w| w == b"5,").unwrap() as u64));
    }

    #[test]
    fn required_members() {
        let (_, error) = decode(br#"{"model":"m","messages":[]}"#, 4);
        assert_eq!(error.unwrap().message, "the request body has no 'max_tokens' (required)");
        let body = br#"{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","input":{}}]}]}"#;
        assert_eq!(decode(body, 5).1.unwrap().message, "a tool_use block has no 'name' (required)");
    }
}

// -- encoder (helper AE) -----------------------------------------------------------------
