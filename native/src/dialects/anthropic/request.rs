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
use crate::compact::{Data, Raw};
use crate::decoding::{
    carries_nothing, dumps, get_attr, member_path, BlockBuilder, Cx, Dialect, EventSink, Expect, MachineDecoder, Frame, Machine, MessageBase, Read,
    RequestBody, BOOLEAN, NULL, OBJECT, OPT_OBJECT, OPT_STRING, STRING,
};
use crate::dialects::fields::{self, field, ANTHROPIC, ANTHROPIC_REQUIRED};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{py_str_repr, Frames, Limits, Sink, Token, Tokenizer};
use crate::reorder::{ByteHold, Hold};
use crate::losses::{part_attr, RESULT_CACHE_CONTROL};
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
        "cache_control" => Some(OPT_OBJECT),
        "is_error" => Some(BOOLEAN.or(NULL)),
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
pub(crate) enum S {
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
    /// `"system": ""`: what no system says (`empty_system`)
    EmptySystem,
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
    /// a tool_use's input: its first token (an object, the client's Dict), then its text
    InputStart,
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
pub(crate) type RequestDecoder = MachineDecoder<Readers>;

pub(crate) struct Readers {
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

/// The block of a tool (`raw`): a definition (attributes, schema), else carried raw.
fn tool_block<'r>(raw: &'r [u8], canonical: Option<(controls::Attrs, Cow<'r, [u8]>)>, path: &str) -> Block<'r> {
    match canonical {
        None => Block {
            section: Section::Unknown,
            message: REQUEST_LEVEL,
            payload: Cow::Borrowed(raw),
            init: true,
            fin: true,
            attrs: Some(vec![("dialect".into(), Cow::Borrowed(&b"\"anthropic\""[..])),
                             ("where".into(), Cow::Borrowed(&b"\"tool\""[..]))]),
        },
        Some((mut attrs, schema)) => {
            attrs.push((Cow::Borrowed("path"), Cow::Owned(crate::value::str_json(path))));
            Block { section: Section::ToolDefinition, message: REQUEST_LEVEL, payload: schema, init: true, fin: true,
                    attrs: Some(attrs) }
        }
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

fn json_true() -> Cow<'static, [u8]> {
    Cow::Borrowed(b"true")
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
    } else if block.init && (matches!(block.section, Section::Unknown | Section::ServerToolResult)
        || (matches!(block.section, Section::UserImage | Section::UserDocument) && role != "user"))
    {
        // (media of an assistant message: a target without a place for it there records its move)
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
    let recount = builder.recounts(fin);
    let block = builder.fragment(data, fin);
    if recount {
        msg.recount(builder, cx.session)?;
    }
    match block {
        Some(block) => emit(msg, block, cx),
        None => Ok(()),
    }
}

/// `builder.close()`, emitted as the message's.
fn close(builder: &mut BlockBuilder, msg: &mut MessageBase, cx: &mut Cx<'_>) -> Result<()> {
    builder.uncount(|counted| msg.uncount(counted, cx.session));  // the blocks emitted now count it, if they wait
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
            S::InputStart => {
                cx.expect(&token, offset, Some(OBJECT), "input")?;
                m.read(Read::StreamRaw(S::Input));
                Ok(())
            }
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
                } else if token == Token::String(b"") {
                    // (an empty string is never cut: one token)
                    m.read(Read::Raw(S::EmptySystem, None, ""));
                } else {
                    self.text = Some(BlockBuilder::new(Section::UserText, TOP_LEVEL_SYSTEM, Vec::new()));
                    m.read(Read::String(S::SystemText, "content"));
                }
            }
            b"tools" => m.read(Read::Elements(S::Tools, "tools")),
            _ => {
                self.set_key(key);
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
            S::SystemBlocks if self.content_count == 0 => self.empty_system(b"[]", cx),
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
            S::TopField => self.top_field(raw, offset, cx),
            S::EmptySystem => self.empty_system(raw, cx),
            S::Tool => self.tool(raw, offset, cx),
            S::MessageField => {
                let index = self.msg.index;
                let path = member_path(format_args!("$.messages[{index}]."), &self.key);
                cx.extension(DIALECT, path, raw, Some(index), carries_nothing(raw))
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
                let result = self.result_mut()?;
                // (riding on a content block, apart from that block's own)
                let key = if key == "cache_control" && result.current.is_some() { RESULT_CACHE_CONTROL } else { key };
                result.current_mut().set(key, json_of(&value));
                Ok(())
            }
            S::Attr(key) => {
                self.make_builder(cx)?;
                // the leading text of a tool_result: the result's own block
                let leading = self.inner.is_some() && self.result.as_ref().is_some_and(|r| r.current.is_none());
                self.builder()?.set(if leading { part_attr(key) } else { key }, json_of(&value));
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
        if s == S::Input {
            // `_input`: the input's compact text is the tool call's payload, string-escaped
            let mut escaped = Vec::with_capacity(data.len() + 8);
            escape_raw_json(data, &mut escaped);
            self.make_builder(cx)?;
            let (builder, msg) = self.builder_and_message()?;
            return fragment(builder, &escaped, fin, msg, cx);
        }
        self.string_fragment(s, data, fin, cx)
    }
}

impl Readers {
    /// The key of the member read next (its buffer reused: no allocation per key).
    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
    }

    /// A string payload's fragment to its builder (Python's `read_string` sinks).
    fn string_fragment(&mut self, s: S, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
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
            other => Err(internal(&format!("{other:?} takes no fragment"))),
        }
    }

    // -- top level ---------------------------------------------------------------------

    /// `_top_field`: a control, or an extension (one that says nothing: a lossless one).
    /// `empty_system`: `"system": ""` or `[]` says what no system says: no system block
    /// (another dialect writes no empty system message), a lossless extension anthropic writes back.
    fn empty_system(&mut self, raw: &[u8], cx: &mut Cx<'_>) -> Result<()> {
        cx.extension(DIALECT, &b"$.system"[..], raw, None, true)?;
        self.body.system_end(cx)
    }

    fn top_field(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        if fields::sets_nothing(DIALECT, &self.key, raw)? {
            return cx.extension(DIALECT, member_path(format_args!("$."), &self.key), raw, None, true);
        }
        match controls::decode(&self.key, raw)? {
            None => cx.extension(DIALECT, member_path(format_args!("$."), &self.key), raw, None, false),
            Some(found) => {
                let checked = found.into_iter().map(|control| cx.checked(control, raw, offset)).collect::<Result<Vec<_>>>()?;
                for control in checked {
                    cx.emit(Event::Control(control))?;
                }
                Ok(())
            }
        }
    }

    /// `_tool`: a custom tool is a tool definition; any other (a server tool) is carried raw.
    /// A tool whose text is canonical (compact.rs) is read in place, without a value tree.
    fn tool(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let path = self.body.next_element_path("tools");
        if let Some((tool, members)) = Raw::canonical_with_members(raw).filter(|(tool, _)| tool.is_object()) {
            let mut canonical = controls::tool_to_canonical(tool, Some(members)).map(|(attrs, schema)| (attrs, Cow::Borrowed(schema.text())));
            if let Some((attrs, _)) = canonical.as_mut() {
                cx.refuse_overflow(tool.text(), offset)?;
                cx.check_tool_attrs(attrs, &path, offset)?;
            }
            return cx.emit(Event::Block(tool_block(raw, canonical, &path)));
        }
        let tool = cx.data(raw, offset)?;
        if !matches!(tool, Value::Object(_)) {
            return Err(cx.error("expected an object for a tool", offset));
        }
        let mut canonical = controls::tool_to_canonical(&tool, None).map(|(attrs, schema)| (attrs, Cow::Owned(json_of(schema))));
        // (a server tool is carried as its raw text: only a tool written from its value is refused)
        if let Some((attrs, _)) = canonical.as_mut() {
            cx.refuse_overflow(&json_of(&tool), offset)?;
            cx.check_tool_attrs(attrs, &path, offset)?;
        }
        cx.emit(Event::Block(tool_block(raw, canonical, &path)))
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
                self.set_key(key);
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
        if block.type_.is_none() && block.deferred.as_ref().is_none_or(Hold::is_empty) {
            if let Some(t) = type_of_payload(key) {
                block.type_ = Some(t.to_vec());
                block.kind = Kind::of(t);
            }
        }
        if block.type_.is_none() {
            self.set_key(key);
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
            this.set_key(key);
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
            (Kind::ToolUse, b"input") => Read::State(S::InputStart),
            (Kind::ToolResult, b"tool_use_id") => Read::Value(S::ResultToolUseId, Some(STRING), "tool_use_id"),
            (Kind::ToolUse, b"id") => Read::Value(S::ToolUseId, Some(STRING), "id"),
            (Kind::ToolResult, b"is_error") => Read::Value(S::ResultAttr("is_error"), attr_type("is_error"), "is_error"),
            (Kind::ToolResult, b"cache_control") => {
                Read::Value(S::ResultAttr("cache_control"), attr_type("cache_control"), "cache_control")
            }
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
            let mut attrs: Vec<crate::decoding::Attr> = vec![("dialect".into(), Cow::Borrowed(b"\"anthropic\""))];
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
                self.set_key(key);
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
        let outer_at = m.at; // the held copy's tokens set `at` to their offsets in it
        m.then(read);
        let mut inner = Tokenizer::new(Limits { max_depth: self.max_depth, ..Limits::default() });
        self.replaying += 1;
        let fed = {
            let mut sink = Replay { m: &mut *m, d: &mut *self, session: &mut *cx.session, out: &mut *cx.out };
            inner.feed(raw, &mut sink).and_then(|()| inner.close(&mut sink))
        };
        self.replaying -= 1;
        // an error raised after the replay (a budget, at the chunk's end) is at the body's
        // token being read, not at an offset inside the held copy
        m.at = outer_at;
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
    use crate::decoding::Decode;
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
                Event::Extension(e) => format!("extension {} {}", String::from_utf8_lossy(&e.path), String::from_utf8_lossy(&e.raw)),
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
            openai_stream_usage: true,
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
//
// `RequestEncoder`: canonical events -> an Anthropic Messages request body, on the
// encoding framework (`crate::encoding`: `Writers`/`Io`, `PlaceBlocks`, `MessageAssembler`,
// `HeldArguments`, the loss helpers). Python's `_place` returns `(write, close)` closures;
// here it returns the block's named state (`Placed`), written and closed by `on_block`.
// The decisions are Python's (request.py `RequestEncoder`'s docstring): top-level system
// in place, other dialects' system texts gathered into the top-level `system`
// (`anthropic:system-to-top-level`), a new message per source message except tool
// results and the user text after them, empty foreign texts dropped, foreign reasoning
// without a signature lost, foreign tool arguments held until they are known to be an
// object (`anthropic:tool-arguments`), foreign controls held and mapped at the end
// (`anthropic:foreign-controls`, `controls::encode`).
//
// Where Python fails with something other than a TranscodeError on events no decoder
// makes (a block's `role` attribute that is not a string, a message extension whose path
// has no `.`, an `anthropic_extra` that is not a string), this port returns a
// TranscodeError saying so. A message member whose key holds a `.` is written back under
// the part after the last dot, as Python's `ext.path.rsplit(".", 1)[1]` does (a Python
// bug, ported as it is: parity first).

pub use self::encoder::RequestEncoder;

mod encoder {
    use std::borrow::Cow;
    use std::collections::VecDeque;

    use crate::images::{keep_head, sniff_media_type, IMAGE_TYPES, SNIFF_BYTES}; // (IMAGE_TYPES: the four anthropic takes)
    use crate::canonical::{unescape_json_text, Block, Control, Event, Extension, Section, TOP_LEVEL_SYSTEM};
    use crate::encoding::{
        require_a_message,
        attr, attr_is, blank_tail, held_blank, role_head, role_json, skip_chars, attr_truthy, has_attr, json_str, lose, lose_block, lose_field, lose_field_as, lose_moved, lose_unplaced, merged, on_block,
        subject, tool_definition, where_, Attr, Head, BlockRef, Encode, HeldArguments, InBlock, Io,
        MessageAssembler, PlaceBlocks, ToolDefinitions, WriterId, BLANK_HELD, PARTS_CONTENT, STRING_CONTENT, call_key, CallBatch,
    };
    use crate::error::{Error, ErrorClass, Result};
    use crate::jsonwriter::{dumps_str, key_bytes};
    use crate::losses::{
        block_path, block_subject, field_subject, is_internal_attr, lacks, MESSAGE_CACHE_CONTROL, PART_ATTRS, PART_PREFIX,
        RESULT_CACHE_CONTROL,
    };
    use crate::naming::{anthropic_id, is_anthropic_id_json};
    use crate::reorder::Hold;
    use crate::session::Session;
    use crate::value::Value;

    use super::super::controls::{self, Foreign};
    use super::{DIALECT, EXTRA_ATTR};
    const OUT: WriterId = WriterId::OUT;
    /// `MAX_BREAKPOINTS`: the most cache breakpoints (`cache_control`) anthropic takes in one request
    const MAX_BREAKPOINTS: usize = 4;
    /// `BREAKPOINT_LACK` / `BREAKPOINT_DONE`: what a fifth breakpoint's loss says
    const BREAKPOINT_LACK: &str = "cache breakpoint beyond the 4th";
    const BREAKPOINT_DONE: &str = "not sent (it takes at most 4)";
    const TEXT_HEAD: &[u8] = b"{\"type\":\"text\",\"text\":\"";
    const SEP_TEXT_HEAD: &[u8] = b",{\"type\":\"text\",\"text\":\"";
    const TEXT_TAIL: &[u8] = b"\"}";

    /// `_OUT_ATTRS`: block attributes written as members of each anthropic block type.
    fn out_attrs(kind: &str) -> &'static [&'static str] {
        match kind {
            "text" => &["cache_control", "citations"],
            "image" => &["cache_control"],
            "document" => &["cache_control", "citations", "title", "context"],
            "thinking" => &["signature"],
            "tool_use" => &["cache_control"],
            "tool_result" => &["cache_control", "is_error"],
            _ => &[], // redacted_thinking
        }
    }


    /// `_STRUCTURE_ATTRS`: attributes that shape the output rather than being members.
    fn is_structure_attr(key: &str) -> bool {
        is_internal_attr(key)
            || matches!(key, "source" | "media_type" | "tool_call_id" | "id" | "name" | "redacted" | "file_id"
                | "content" | "is_error" | "source_extra")
    }

    /// Whether a value's JSON text is the string `text` (`value == "text"`).
    fn is_str(raw: Option<&[u8]>, text: &str) -> bool {
        raw.and_then(json_str).as_deref() == Some(text)
    }

    /// The top-level array open on the output (`_top`).
    type Top = &'static str;

    /// An open `tool_result` (`_Result`); its writer is the output.
    struct OpenResult {
        /// which result this is (a block's close names it: Python's closures held the object)
        serial: u64,
        index: i64,
        /// `tool_call_id` (JSON text; None: absent or null)
        id: Option<Vec<u8>>,
        id_written: bool,
        is_error: Option<Vec<u8>>,
        cache_control: Option<Vec<u8>>,
        extra: Option<Vec<u8>>,
        array: bool,
        /// elements in the content array so far
        parts: u32,
        /// the content array is written (an ollama tool message's result opens it with its
        /// first element: without one, it has no `content`)
        opened: bool,
    }

    impl OpenResult {
        /// `separator()`: `,` when the content array has an element already (`,"content":[`
        /// before the first one of a result that has none yet); counts the next one.
        fn separator(&mut self) -> &'static [u8] {
            self.parts += 1;
            if !self.opened {
                self.opened = true;
                return b",\"content\":[";
            }
            if self.parts > 1 { b"," } else { b"" }
        }
    }

    /// What a tool_result's head holds (`_tool_result`'s three ways): nothing (`empty`: its content
    /// list opens with another element), its string `content`, or its content list's leading text
    /// element, closed with that element's own members.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum HeadContent {
        Empty,
        String,
        LeadingText,
    }

    /// `_RIDING`: the result's members a block of its content may carry (they came after it began).
    fn riding(key: &str) -> bool {
        matches!(key, "is_error" | "tool_call_id" | RESULT_CACHE_CONTROL)
    }

    /// `_RESULT_MEMBERS | PART_ATTRS`: the attributes of a result's head it writes (as the
    /// `tool_result`'s members, and as its leading text's).
    const RESULT_WRITTEN: &[&str] = &["is_error", "cache_control", EXTRA_ATTR, "part_cache_control", "part_citations"];
    /// `RESULT_WRITTEN` and the result's riding cache_control (`_result_late` writes it: not lost).
    const RESULT_WRITTEN_LATE: &[&str] =
        &["is_error", "cache_control", EXTRA_ATTR, "part_cache_control", "part_citations", RESULT_CACHE_CONTROL];

    /// `_lose_attrs`: a loss for each attribute that is neither structure nor `written` as a
    /// member: an empty text not written (all of them), the first part of a tool result
    /// (`RESULT_WRITTEN` go on the `tool_result`).
    fn lose_attrs(block: BlockRef<'_>, attrs: &[Attr<'_>], written: &[&str], io: &mut Io<'_>) -> Result<()> {
        for (key, _) in attrs {
            if !written.contains(&key.as_ref()) && !is_structure_attr(key) {
                lose_field(io.session, DIALECT, block, key, Some(attrs), None)?;
            }
        }
        Ok(())
    }

    /// A part of a tool_result with no result open (its callers open or check one first).
    fn no_open_result() -> Error {
        Error::new(ErrorClass::Transcode, "internal error in the native core: anthropic request encoder: no tool_result is open")
    }

    /// The state of a placed block (what Python's `write` / `close` closures held).
    enum Placed<'a> {
        /// fragments written to the writer as they are; nothing at the close (a string
        /// content or system, a block carried raw)
        Copy(WriterId),
        /// a message's string content (`_text` on the message's string): copied; a late
        /// `message_cache_control` is a recorded loss at the close (`_lose_string_cache`)
        StringText(Head<'a>),
        /// fragments and close dropped (an empty text)
        Drop,
        /// a block carried raw in the open tool_result (`result`): its late attributes are the
        /// result's members that came after it
        ResultCopy(u64),
        /// a text / thinking / redacted_thinking object: close `"` + members + `}`
        Object { to: WriterId, kind: &'static str, head: Head<'a> },
        /// another dialect's assistant text (`_trailing_text`): an `Object` into the output whose
        /// trailing blank run, and then its close, are held back (`Writers::held_back`)
        TrailingText(Head<'a>),
        /// a tool_use into `w`: `input` copied (same dialect) or held (`HeldArguments`);
        /// `ids`: the id list (`CallBatch`) its id goes to at the close
        ToolUse { w: WriterId, head: Head<'a>, args: Option<Box<HeldArguments>>, ids: u64 },
        /// the first block of a tool_result: `closer` at its close, then the late attributes
        ResultHead { content: HeadContent, result: u64, head: Head<'a> },
        /// a further text part of the open tool_result
        /// (`_part_text`: from another dialect, written from its first byte -- `started`)
        ResultText { head: Head<'a>, result: u64, started: bool },
        /// the first text of another dialect's tool result, an ollama tool message's also after
        /// its images (`_lazy_text`): its text block is opened by its first byte (`started`),
        /// none when it has none
        LazyText { result: u64, started: bool, head: Head<'a> },
        /// an image or document
        Media(Media<'a>),
    }

    impl Placed<'_> {
        /// `PlaceBlocks::keep`: the heads owned.
        fn into_owned(self) -> Placed<'static> {
            match self {
                Placed::Copy(w) => Placed::Copy(w),
                Placed::StringText(head) => Placed::StringText(head.into_owned()),
                Placed::ResultCopy(result) => Placed::ResultCopy(result),
                Placed::Drop => Placed::Drop,
                Placed::Object { to, kind, head } => Placed::Object { to, kind, head: head.into_owned() },
                Placed::TrailingText(head) => Placed::TrailingText(head.into_owned()),
                Placed::ToolUse { w, head, args, ids } => Placed::ToolUse { w, head: head.into_owned(), args, ids },
                Placed::ResultHead { content, result, head } => {
                    Placed::ResultHead { content, result, head: head.into_owned() }
                }
                Placed::ResultText { head, result, started } => {
                    Placed::ResultText { head: head.into_owned(), result, started }
                }
                Placed::LazyText { result, started, head } => Placed::LazyText { result, started, head: head.into_owned() },
                Placed::Media(Media { head, to, kind, source, has_payload, result, sniffed }) => {
                    Placed::Media(Media { head: head.into_owned(), to, kind, source, has_payload, result, sniffed })
                }
            }
        }
    }

    /// An image or document being written (`_media`'s closure).
    struct Media<'a> {
        head: Head<'a>,
        /// where it is written (the output, or the user hold)
        to: WriterId,
        /// "image" or "document"
        kind: &'static str,
        /// the source type as `_media` decided it (JSON text)
        source: Vec<u8>,
        has_payload: bool,
        /// the tool_result it is part of
        result: Option<u64>,
        /// another dialect's base64 image: its first characters, which show what it is
        /// where its label is not a type anthropic takes (openai takes "image/jpg")
        sniffed: Option<Vec<u8>>,
    }

    /// Canonical events -> an Anthropic Messages request body (`RequestEncoder`).
    pub struct RequestEncoder {
        writers: crate::encoding::Writers,
        state: State,
    }

    struct State {
        foreign: bool,
        /// the cache breakpoints of another dialect written (`_breakpoints`; counted where a
        /// block's members are written, which borrows the state shared: an atomic, as the
        /// encoder is `Sync`)
        breakpoints: std::sync::atomic::AtomicUsize,
        /// the body's `{` is written (Python's constructor writes it)
        opened: bool,
        top: Option<Top>,
        /// "messages" is required: an empty list is written when none came
        messages_written: bool,
        /// a block of the source's message list came / a message was opened in the
        /// output (`require_a_message`)
        listed: bool,
        carried: bool,
        msg: Option<MessageAssembler>,
        msg_index: Option<i64>,
        msg_role: String,
        msg_string: bool,
        msg_has_result: bool,
        /// the serial of the open message (`_batch_msg is not self._msg`: which message that is)
        msg_serial: u64,
        /// the batch of calls the results answer, and the ids of the held calls
        calls: CallBatch,
        /// the assistant message of calls moved out of a run's tool messages, written into its
        /// hold (`anthropic:calls-after-run`) until the run answering the batch ends
        held_calls: Option<MessageAssembler>,
        result: Option<OpenResult>,
        results: u64,
        system_string: bool,
        /// the writer of other dialects' system texts (`_system_hold`)
        system: Option<WriterId>,
        system_count: usize,
        system_plain: bool,
        controls: Option<Hold<Control<'static>>>,
        /// the last assistant message written (`_turn`, `_turn_thinks_first`, `_turn_calls`):
        /// its source index, whether it began with thinking, whether it calls tools
        turn: Option<i64>,
        turn_thinks_first: bool,
        turn_calls: bool,
        /// `tools_sent`: the names of the tools sent (a tool choice names one of them)
        tools_sent: crate::encoding::ToolsSent,
        pending_ext: Vec<Extension<'static>>,
        /// ids made up for calls without one, not yet answered
        unanswered: VecDeque<Vec<u8>>,
        /// source messages of late system texts (recorded once)
        late_system: Vec<i64>,
        /// the source message the last block or member came from (`_src_index`)
        src_index: Option<i64>,
        /// the role of its empty texts, while it has nothing else (`_src_empty_role`)
        src_empty_role: Option<&'static str>,
        /// a block of it that is not an empty text came (`_src_has_more`)
        src_has_more: bool,
        /// `place_block` met an empty text of another dialect (Python's `_EMPTY_TEXT`): its role
        empty_text: Option<&'static str>,
        /// another dialect's tool calls of the last assistant message that no tool_result
        /// answered yet: user blocks meanwhile wait in the user hold (`_awaiting`)
        awaiting: u32,
        /// the user hold (`_held`): user blocks that wait for the tool_results
        held: Option<WriterId>,
        /// the source message of the first of them (the message it opens)
        held_message: i64,
        ended: bool,
        /// the last assistant text whose end is held back (`_run_block`): its head, for the loss
        /// when the run is dropped; `run_long`: its run so far is over `BLANK_HELD` (written)
        run_head: Option<Head<'static>>,
        run_long: bool,
        block: InBlock<Placed<'static>>,
        /// the bytes of one write being put together (a block's head or tail): one buffer
        /// for them all, not a Vec per block (`take_scratch`)
        scratch: Vec<u8>,
    }

    impl RequestEncoder {
        pub fn new(session: &Session) -> Self {
            let state = State {
                foreign: session.source != DIALECT,
                breakpoints: std::sync::atomic::AtomicUsize::new(0),
                opened: false,
                top: None,
                messages_written: false,
                listed: false,
                carried: false,
                msg: None,
                msg_index: None,
                msg_role: String::new(),
                msg_string: false,
                msg_has_result: false,
                msg_serial: 0,
                calls: CallBatch::default(),
                held_calls: None,
                result: None,
                results: 0,
                system_string: false,
                system: None,
                system_count: 0,
                system_plain: true,
                controls: None,
                turn: None,
                turn_thinks_first: false,
                turn_calls: false,
                tools_sent: Vec::new(),
                pending_ext: Vec::new(),
                unanswered: VecDeque::new(),
                late_system: Vec::new(),
                src_index: None,
                src_empty_role: None,
                src_has_more: false,
                empty_text: None,
                awaiting: 0,
                held: None,
                held_message: 0,
                ended: false,
                run_head: None,
                run_long: false,
                block: InBlock::None,
                scratch: Vec::new(),
            };
            RequestEncoder { writers: Default::default(), state }
        }

        /// Whether `End` came.
        pub fn ended(&self) -> bool {
            self.state.ended
        }
    }

    impl Encode for RequestEncoder {
        fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            let mut io = Io { out, session, writers: &mut self.writers };
            let st = &mut self.state;
            st.open(&mut io)?;
            match event {
                Event::Block(block) => on_block(st, &block, &mut io),
                Event::Control(control) => st.on_control(control, &mut io),
                Event::Extension(ext) => st.on_extension(ext, &mut io),
                Event::MessagesEnd => st.messages_end(&mut io),
                Event::End => st.end(&mut io),
                _ => Ok(()),
            }
        }

        fn finish(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            let mut io = Io { out, session, writers: &mut self.writers };
            self.state.open(&mut io)
        }

        /// The body's `{`, written when the encoder is made (Python's constructor); fed
        /// events directly, the encoder writes it with the first one.
        fn start(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            self.finish(session, out)
        }
    }

    impl State {
        /// `_breakpoint(value)`: whether a cache breakpoint goes -- anthropic refuses a request with
        /// more than `MAX_BREAKPOINTS`, so another dialect's are counted as they are written and the
        /// fifth and later are not. A null one is none; an anthropic client's own go as they came.
        fn breakpoint(&self, value: &[u8]) -> bool {
            if value == b"null" || !self.foreign {
                return true;
            }
            self.breakpoints.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < MAX_BREAKPOINTS
        }

        fn open(&mut self, io: &mut Io<'_>) -> Result<()> {
            if !self.opened {
                self.opened = true;
                io.json(OUT, |w, b| w.begin_object(b"", b))?;
            }
            Ok(())
        }

        // -- top level ------------------------------------------------------------------

        fn open_top(&mut self, name: Top, io: &mut Io<'_>) -> Result<()> {
            if self.top == Some(name) {
                return Ok(());
            }
            self.close_top(io)?;
            io.json(OUT, |w, b| w.open_member(name, b"[", b))?;
            self.top = Some(name);
            if name == "messages" {
                self.messages_written = true;
            }
            Ok(())
        }

        fn close_top(&mut self, io: &mut Io<'_>) -> Result<()> {
            let Some(top) = self.top else { return Ok(()) };
            if top == "messages" {
                self.flush_held(io)?;
                if self.held_calls.is_none() {
                    // the last thing written is the last message's
                    self.drop_trailing_run(io)?;
                }
                self.close_message(io)?;
                if self.held_calls.is_some() {
                    // calls pending at the end: after the last message
                    self.flush_held_calls(io)?;
                }
            }
            if top == "system" && self.system_string {
                io.write(OUT, b"\"")?;
                io.pop_first(OUT);
            } else {
                io.json(OUT, |w, b| w.end_array(b))?;
            }
            self.top = None;
            Ok(())
        }

        fn top_member(&mut self, key: impl AsRef<[u8]>, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
            self.close_top(io)?;
            io.json(OUT, |w, b| w.raw_member(key, raw, b))
        }

        // -- a message of another dialect with nothing in it ---------------------------
        //
        // Its empty texts are not written (anthropic rejects them), so a message whose every
        // block is one is not sent: one loss, recorded when the message is known to have
        // nothing else -- at the next message's first event or the list's end, which come
        // at the same place however the body is cut.

        /// `_note_message`: an event of source message `index` came.
        fn note_message(&mut self, index: Option<i64>, io: &mut Io<'_>) -> Result<()> {
            if let Some(index) = index.filter(|i| Some(*i) != self.src_index) {
                self.end_source_message(io)?;
                self.src_index = Some(index);
            }
            Ok(())
        }

        /// `_end_source_message`: the source message ended; empty, it was not sent.
        fn end_source_message(&mut self, io: &mut Io<'_>) -> Result<()> {
            if let (Some(role), false, Some(index)) = (self.src_empty_role, self.src_has_more, self.src_index) {
                let path = block_path(io.session.source, io.session.kind.name(), index);
                let reason = lacks(&format!("empty {role} message"), DIALECT, "message without content",
                                   Some("the message is not sent"));
                io.session.lose(path, reason, None)?;
            }
            self.src_empty_role = None;
            self.src_has_more = false;
            Ok(())
        }

        fn messages_end(&mut self, io: &mut Io<'_>) -> Result<()> {
            self.end_source_message(io)?;
            if self.top == Some("messages") {
                self.close_top(io)?;
            } else {
                self.close_message(io)?;
                if !self.messages_written {
                    // an empty list stays a list (the field is required)
                    self.open_top("messages", io)?;
                    self.close_top(io)?;
                }
            }
            self.flush_system(io)
        }

        fn end(&mut self, io: &mut Io<'_>) -> Result<()> {
            require_a_message(self.listed, self.carried, DIALECT, io.session)?;
            self.close_top(io)?;
            self.flush_system(io)?;
            self.write_controls(io)?;
            io.json(OUT, |w, b| w.end_object(b))?;
            self.ended = true;
            Ok(())
        }

        // -- controls and extensions ----------------------------------------------------------

        fn on_control(&mut self, control: Control<'_>, io: &mut Io<'_>) -> Result<()> {
            if control.dialect.as_deref() == Some(DIALECT) {
                if let (Some(raw), Some(key)) = (&control.raw, &control.key) {
                    self.top_member(key.as_bytes(), raw, io)?;
                }
                return Ok(()); // a derived control: its field is written with the first one
            }
            crate::encoding::lose_unknown_members(&control, DIALECT, io.session)?;
            let size = control.value.len() as u64 + control.name.chars().count() as u64;
            let hold = self.controls.get_or_insert_with(|| io.session.reorder.hold("anthropic:foreign-controls"));
            hold.append(&mut io.session.reorder, control.into_owned(), size)
        }

        /// `_note_turn`: an assistant block written.
        fn note_turn(&mut self, block: &Block<'_>) {
            if self.turn != Some(block.message) {
                self.turn = Some(block.message);
                self.turn_thinks_first = block.section == Section::AssistantReasoning;
                self.turn_calls = false;
            }
            if block.section == Section::ToolCall {
                self.turn_calls = true;
            }
        }

        fn write_controls(&mut self, io: &mut Io<'_>) -> Result<()> {
            let mut gathered: Vec<(String, Vec<Foreign>)> = Vec::new();
            if let Some(hold) = self.controls.as_mut() {
                let held: Vec<Control<'static>> = hold.drain(&mut io.session.reorder).collect();
                for control in held {
                    let value = Value::loads(&control.value)?;
                    let listed = match control.raw.as_deref() {
                        Some(raw) => raw.first() == Some(&b'['),
                        None => matches!(value, Value::Array(_)),
                    };
                    let foreign = Foreign {
                        name: control.name.to_string(),
                        value,
                        dialect: control.dialect.map(Cow::into_owned),
                        key: control.key.map(Cow::into_owned),
                        listed,
                    };
                    match gathered.iter_mut().find(|(name, _)| *name == foreign.name) {
                        Some((_, items)) => items.push(foreign),
                        None => gathered.push((foreign.name.clone(), vec![foreign])),
                    }
                }
            }
            if !self.foreign && gathered.is_empty() {
                return Ok(());
            }
            let unthought = self.turn_calls && !self.turn_thinks_first;
            for (key, raw) in controls::encode(&gathered, io.session, unthought, Some(&self.tools_sent))? {
                io.json(OUT, |w, b| w.raw_member(key, &raw, b))?;
            }
            Ok(())
        }

        fn on_extension(&mut self, ext: Extension<'_>, io: &mut Io<'_>) -> Result<()> {
            self.note_message(ext.message, io)?;
            if ext.dialect != DIALECT {
                return crate::encoding::foreign_extension(io.session, DIALECT, &ext);
            }
            match ext.message {
                None => {
                    self.top_member(skip_chars(&ext.path, 2), &ext.raw, io) // `ext.path[2:]`
                }
                Some(message) if self.msg.is_some() && Some(message) == self.msg_index => {
                    let key = last_key(&ext.path, ext.message)?;
                    let msg = self.msg.as_mut().expect("a message is open");
                    msg.trailing(io, key, &ext.raw) // chunking-invariant place
                }
                Some(_) => {
                    self.pending_ext.push(ext.into_owned());
                    Ok(())
                }
            }
        }

        // -- system ------------------------------------------------------------------------

        /// `_system_target`: the writer a system block's text object goes to (None: it is
        /// written as the string). `in_parts`, `plain`: of the block's attributes.
        fn system_target(&mut self, block: &Block<'_>, in_parts: bool, plain: bool, io: &mut Io<'_>)
                         -> Result<Option<WriterId>> {
            if block.message == TOP_LEVEL_SYSTEM {
                if self.top != Some("system") && !in_parts {
                    self.close_top(io)?;
                    io.json(OUT, |w, b| w.string_member_open("system", b))?;
                    io.push_first(OUT); // so close_top pops symmetrically
                    self.top = Some("system");
                    self.system_string = true;
                    return Ok(None);
                }
                self.open_top("system", io)?;
                return Ok(Some(OUT));
            }
            if self.msg_index.is_some_and(|i| block.message > i) && !self.late_system.contains(&block.message) {
                // anthropic has one system prompt, before the conversation (no system role in
                // messages): a system message that came after a conversation message moves there
                self.late_system.push(block.message);
                lose_block(io.session, DIALECT, BlockRef::of(block), "system message after the conversation began",
                           Some("moved into the top-level system (its place is lost)"), None)?;
            }
            let w = match self.system {
                Some(w) => w,
                None => {
                    let w = io.writers.held(&mut io.session.reorder, "anthropic:system-to-top-level");
                    io.push_first(w);
                    self.system = Some(w);
                    w
                }
            };
            self.system_count += 1;
            if in_parts || !plain {
                self.system_plain = false;
            }
            Ok(Some(w))
        }

        fn flush_system(&mut self, io: &mut Io<'_>) -> Result<()> {
            let Some(w) = self.system.take() else { return Ok(()) };
            let mut held = Vec::new();
            io.writers.take(w, &mut io.session.reorder, &mut held);
            let mut raw = Vec::with_capacity(held.len() + 2);
            if self.system_count == 1 && self.system_plain && held.starts_with(TEXT_HEAD) && held.ends_with(TEXT_TAIL) {
                raw.push(b'"');
                raw.extend_from_slice(held.get(TEXT_HEAD.len()..held.len() - TEXT_TAIL.len()).unwrap_or_default());
                raw.push(b'"');
            } else {
                raw.push(b'[');
                raw.extend_from_slice(&held);
                raw.push(b']');
            }
            self.top_member("system", &raw, io)
        }

        // -- messages ------------------------------------------------------------------------

        fn open_message(&mut self, message: i64, role: &str, string: bool, io: &mut Io<'_>) -> Result<()> {
            self.close_message(io)?;
            self.open_top("messages", io)?;
            self.carried = true;
            let mut head = role_head(&role_json(role));
            if !self.pending_ext.is_empty() {
                // fields of this message that came before its first block
                let mut kept = Vec::with_capacity(self.pending_ext.len());
                for ext in std::mem::take(&mut self.pending_ext) {
                    if ext.message == Some(message) {
                        let head = head.to_mut();
                        head.push(b',');
                        key_bytes(last_key(&ext.path, ext.message)?, head);
                        head.push(b':');
                        head.extend_from_slice(&ext.raw);
                    } else {
                        kept.push(ext);
                    }
                }
                self.pending_ext = kept;
            }
            let first = if string { STRING_CONTENT } else { PARTS_CONTENT };
            self.msg = Some(MessageAssembler::new(OUT, io, "anthropic:member-order", &head, Some(first))?);
            self.msg_serial += 1;
            self.msg_index = Some(message);
            self.msg_role.clear();
            self.msg_role.push_str(role); // (the buffer is kept: no allocation per message)
            self.msg_string = string;
            self.msg_has_result = false;
            if role == "assistant" {
                self.awaiting = 0; // (calls of an earlier message left unanswered: not these)
            }
            Ok(())
        }

        fn close_message(&mut self, io: &mut Io<'_>) -> Result<()> {
            self.close_result(io)?;
            if let Some(msg) = self.msg.take() {
                msg.close(io)?;
            }
            Ok(())
        }

        /// `_message_for`: opens a message for a block of `role` when needed; the content
        /// writer is the output.
        fn message_for(&mut self, block: &Block<'_>, role: &str, in_parts: bool, text: bool, io: &mut Io<'_>)
                       -> Result<WriterId> {
            if role == "user" && self.foreign && self.awaiting > 0 {
                return Ok(self.user_hold(block, io)); // (a result's message is `result_message`)
            }
            self.result_message(block, role, in_parts, text, io)
        }

        /// `_message_for(..., result=True)`: never the user hold.
        fn result_message(&mut self, block: &Block<'_>, role: &str, in_parts: bool, text: bool, io: &mut Io<'_>)
                          -> Result<WriterId> {
            if self.msg.is_some() && self.msg_role == role && !self.msg_string {
                if Some(block.message) == self.msg_index {
                    return Ok(OUT);
                }
                if role == "user" && self.foreign && self.msg_has_result {
                    self.msg_index = Some(block.message); // tool results and what follows merge
                    return Ok(OUT);
                }
            }
            let string = text && !in_parts && (!self.foreign || role != "assistant");
            self.open_message(block.message, role, string, io)?;
            Ok(OUT)
        }

        // -- user blocks before tool results (see the Python encoder) ------------------------

        /// `_user_hold`: the writer of user blocks that wait for the tool_results.
        fn user_hold(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> WriterId {
            if let Some(w) = self.held {
                return w;
            }
            let w = io.writers.held(&mut io.session.reorder, "anthropic:user-before-tool-result");
            io.push_first(w);
            self.held = Some(w);
            self.held_message = block.message;
            w
        }

        /// `_keeps_held`: whether the held user blocks go on waiting at `block`: a result (or
        /// part of one), a system text (it goes to the top-level system), or a user block while
        /// calls await.
        fn keeps_held(&self, block: &Block<'_>, attrs: &[Attr<'_>], tool_image: bool) -> bool {
            let s = block.section;
            if self.msg.is_some() && self.msg_role == "assistant" && Some(block.message) == self.msg_index {
                return true; // the rest of the message whose calls await (ollama: its image, then its text)
            }
            s == Section::ToolResult || tool_image || attr_truthy(attrs, "in_result")
                || (s == Section::SystemInstruction && !attr_truthy(attrs, "in_messages"))
                || (matches!(s, Section::UserText | Section::UserImage | Section::UserDocument) && self.awaiting > 0)
                || self.holds_call(block, attrs) // a moved call held in calls-after-run
        }

        /// `_flush_held`: the held user blocks, after the results: in their user message, or
        /// one of their own.
        fn flush_held(&mut self, io: &mut Io<'_>) -> Result<()> {
            let Some(w) = self.held.take() else { return Ok(()) };
            let mut held = Vec::new();
            io.writers.take(w, &mut io.session.reorder, &mut held);
            if held.is_empty() {
                return Ok(());
            }
            self.close_result(io)?;
            if !(self.msg.is_some() && self.msg_role == "user" && !self.msg_string) {
                self.open_message(self.held_message, "user", false, io)?;
            }
            io.separate(OUT)?;
            io.write(OUT, &held)
        }

        // -- blocks -------------------------------------------------------------------------

        /// `_members`: `,"k":v` for the attributes the anthropic block `kind` has; others are losses.
        fn members(&self, head: BlockRef<'_>, kind: &str, attrs: &[Attr<'_>], io: &mut Io<'_>, out: &mut Vec<u8>)
                   -> Result<()> {
            let allowed = out_attrs(kind);
            for (key, value) in attrs {
                if key == MESSAGE_CACHE_CONTROL && allowed.contains(&"cache_control") {
                    // an openai message's breakpoint, on its last block: the block's own wins
                    // (the same one adds nothing; another is a recorded loss)
                    match attr(attrs, "cache_control") {
                        None | Some(b"null") if !self.breakpoint(value) => {
                            lose_field_as(io.session, DIALECT, head, key, Some(attrs), BREAKPOINT_LACK, Some(BREAKPOINT_DONE))?;
                        }
                        None | Some(b"null") => {
                            out.extend_from_slice(b",\"cache_control\":");
                            out.extend_from_slice(value);
                        }
                        // (as Python's dicts compare: a member order apart is the same breakpoint)
                        Some(own) if own != &value[..] && !crate::value::py_eq(
                            &crate::value::Value::loads(own)?, &crate::value::Value::loads(value)?) => {
                            lose_field(io.session, DIALECT, head, key, Some(attrs), Some("the block's own cache_control is kept"))?;
                        }
                        Some(_) => {}
                    }
                } else if key == "cache_control" && allowed.contains(&"cache_control") && !self.breakpoint(value) {
                    lose_field_as(io.session, DIALECT, head, key, Some(attrs), BREAKPOINT_LACK, Some(BREAKPOINT_DONE))?;
                } else if allowed.contains(&key.as_ref()) {
                    out.push(b',');
                    key_bytes(key.as_bytes(), out);
                    out.push(b':');
                    out.extend_from_slice(value);
                } else if key == EXTRA_ATTR {
                    out.push(b',');
                    out.extend_from_slice(&controls::string_text(value)?);
                } else if !is_structure_attr(key) {
                    lose_field(io.session, DIALECT, head, key, Some(attrs), None)?;
                }
            }
            Ok(())
        }

        /// The scratch buffer, empty (give it back with `self.scratch = buffer` after the write).
        fn take_scratch(&mut self) -> Vec<u8> {
            let mut buffer = std::mem::take(&mut self.scratch);
            buffer.clear();
            buffer
        }

        fn place_block<'b>(&mut self, block: &'b Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            let s = block.section;
            let attrs: &[Attr<'_>] = block.attrs.as_deref().unwrap_or(&[]);
            let tool_image = self.in_tool_message(block, attrs, io.session);
            if self.held.is_some() && !self.keeps_held(block, attrs, tool_image) {
                self.flush_held(io)?;
            }
            if s != Section::ToolResult && !attr_truthy(attrs, "in_result") && !tool_image {
                self.close_result(io)?;
            }
            if crate::encoding::drops_typed_call(io.session, DIALECT, BlockRef::of(block), attrs)? {
                return Ok(None);
            }
            match s {
                Section::SystemInstruction => {
                    if self.drops_blank(block, attrs, io)? {
                        return Ok(None);
                    }
                    if attr_truthy(attrs, "in_messages") {
                        let w = self.message_for(block, "system", attr_truthy(attrs, "in_parts"), true, io)?;
                        return self.text(block, attrs, w, io);
                    }
                    let plain = attrs.iter().all(|(k, _)| k == "role");
                    match self.system_target(block, attr_truthy(attrs, "in_parts"), plain, io)? {
                        None => Ok(Some(Placed::Copy(OUT))),
                        Some(w) => self.text(block, attrs, w, io),
                    }
                }
                // in its message's result; before its text, it opens the result
                _ if tool_image => {
                    if self.result.as_ref().is_some_and(|r| r.index == block.message) {
                        return self.in_result(block, attrs, io);
                    }
                    self.media(block, attrs, false, true, io)
                }
                _ if attr_truthy(attrs, "in_result") && self.result.is_some() && s != Section::ToolResult => {
                    self.in_result(block, attrs, io)
                }
                Section::ToolResult => self.tool_result(block, attrs, io),
                Section::UserText | Section::AssistantText | Section::AssistantRefusal => {
                    let role = if s == Section::UserText { "user" } else { "assistant" };
                    if s == Section::AssistantRefusal {
                        lose_block(io.session, DIALECT, BlockRef::of(block), "refusal block",
                                   Some("written as assistant text"), None)?;
                    }
                    if self.drops_blank(block, attrs, io)? {
                        self.empty_text = Some(role);
                        return Ok(None);
                    }
                    let w = self.message_for(block, role, attr_truthy(attrs, "in_parts"), true, io)?;
                    self.text(block, attrs, w, io)
                }
                Section::UserImage | Section::UserDocument => self.media(block, attrs, false, false, io),
                Section::AssistantReasoning => self.reasoning(block, attrs, io),
                Section::ToolCall => self.tool_call(block, attrs, io),
                Section::Unknown | Section::ServerToolResult if attr_is(attrs, "dialect", DIALECT) => {
                    let w = if block.message == TOP_LEVEL_SYSTEM {
                        // an unknown block of the top-level system stays there
                        self.system_target(block, true, false, io)?.unwrap_or(OUT)
                    } else {
                        let role = attr(attrs, "role").map(json_str);
                        let role = match role {
                            None => "user".to_string(),
                            Some(Some(role)) => role,
                            Some(None) => return Err(not_a_role()),
                        };
                        self.message_for(block, &role, attr_truthy(attrs, "in_parts"), false, io)?
                    };
                    io.separate(w)?;
                    Ok(Some(Placed::Copy(w)))
                }
                _ => {
                    lose_unplaced(io.session, DIALECT, BlockRef::of(block))?;
                    Ok(None)
                }
            }
        }

        /// `_drops_blank`: another dialect's text that is empty or whitespace only (`held_blank`),
        /// whole (its fragments joined: `encoding::on_block`), is not written -- anthropic refuses
        /// an empty text block and one of whitespace only (it takes one beside other text, but
        /// whether other text follows is not known when the block is placed). An empty one means
        /// what absent means; a blank one is recorded. Its attributes are lost.
        fn drops_blank(&self, block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<bool> {
            if !(self.foreign && block.fin && held_blank(&block.payload)) {
                return Ok(false);
            }
            if !block.payload.is_empty() {
                lose_block(io.session, DIALECT, BlockRef::of(block),
                           "text of whitespace only (it refuses a text block without other characters)",
                           Some("not sent"), Some(attrs))?;
            }
            lose_attrs(BlockRef::of(block), attrs, &[], io)?;
            Ok(true)
        }

        /// `_text`: a text block into `w` (the message's string content: its fragments alone).
        fn text<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], w: WriterId, io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            if w == OUT && self.msg.is_some() && self.msg_string {
                return Ok(Some(Placed::StringText(Head::borrowed(block))));
            }
            if attr_truthy(attrs, "empty") {
                return Ok(Some(Placed::Drop));
            }
            // one write, as Python's `w.write(w._sep() + _TEXT_HEAD)`: a hold over its budget
            // refuses it whole (two writes held the comma first: a high-water mark one byte more)
            let head = if io.sep(w).is_empty() { TEXT_HEAD } else { SEP_TEXT_HEAD };
            io.write(w, head)?;
            if self.foreign && w == OUT && self.msg_role == "assistant" {
                self.run_long = false;
                return Ok(Some(Placed::TrailingText(Head::borrowed(block))));
            }
            Ok(Some(Placed::Object { to: w, kind: "text", head: Head::borrowed(block) }))
        }

        // -- the final assistant content ----------------------------------------------------
        //
        // Whether an assistant text is the request's final content is known only when the
        // message list ends after it. So another dialect's assistant text holds its trailing
        // blank run (`blank_tail`: spaces, newlines, tabs; at most `BLANK_HELD` bytes, the same at
        // every cut) back from the output, and at its end the bytes that close it too: the next
        // write to the output puts them first (`Io::write`); the list's end (`close_top`) drops
        // the run.

        /// `_trailing_text`'s `write`.
        fn trailing_write(&mut self, data: &[u8], io: &mut Io<'_>) -> Result<()> {
            match blank_tail(data) {
                None => {
                    // a run too long to hold: the text keeps it
                    io.write(OUT, data)?;
                    self.run_long = true;
                }
                Some(0) => {
                    let held = io.writers.held_back.get_or_insert_with(Default::default);
                    if self.run_long || held.run.len() + data.len() > BLANK_HELD {
                        io.write(OUT, data)?; // (after what was held)
                        self.run_long = true;
                    } else {
                        held.run.extend_from_slice(data);
                    }
                }
                Some(cut) => {
                    io.write(OUT, &data[..cut])?;
                    if cut < data.len() {
                        io.writers.held_back.get_or_insert_with(Default::default).run.extend_from_slice(&data[cut..]);
                    }
                    self.run_long = false;
                }
            }
            Ok(())
        }

        /// `_trailing_text`'s `close`.
        fn trailing_close(&mut self, head: Head<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            let mut closing = Vec::new();
            self.closing(&head, "text", late, io, &mut closing)?;
            let Some(held) = io.writers.held_back.as_deref_mut().filter(|held| !held.run.is_empty()) else {
                return io.write(OUT, &closing);
            };
            held.close = Some(closing);
            self.run_head = Some(head.into_owned());
            Ok(())
        }

        /// A text / thinking object's closing bytes (`"` + members + `}`) into `out`.
        fn closing(&self, head: &Head<'_>, kind: &str, late: &[Attr<'_>], io: &mut Io<'_>, out: &mut Vec<u8>) -> Result<()> {
            let every = merged(&head.attrs, late);
            out.push(b'"');
            self.members(head.as_ref(), kind, &every, io, out)?;
            out.push(b'}');
            Ok(())
        }

        /// `_drop_trailing_run`: the message list ends: an assistant text whose end was held back
        /// is the final content, and its trailing whitespace is not sent (recorded).
        fn drop_trailing_run(&mut self, io: &mut Io<'_>) -> Result<()> {
            let head = self.run_head.take();
            let Some(held) = io.writers.held_back.as_deref_mut() else { return Ok(()) };
            let Some(closing) = held.close.take() else { return Ok(()) };
            held.run.clear();
            if let Some(head) = head {
                lose_block(io.session, DIALECT, head.as_ref(), "final assistant text that ends in whitespace (it refuses one)",
                           Some("its trailing whitespace is not sent"), None)?;
            }
            io.write(OUT, &closing)
        }

        fn reasoning<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            let redacted = attr_truthy(attrs, "redacted");
            if !redacted && self.foreign && !has_attr(attrs, "signature") {
                lose_block(io.session, DIALECT, BlockRef::of(block), "thinking without a signature",
                           Some("it cannot be replayed, so it is not sent"), None)?;
                return Ok(None);
            }
            let w = self.message_for(block, "assistant", attr_truthy(attrs, "in_parts"), false, io)?;
            io.separate(w)?;
            let (opening, kind): (&[u8], _) = if redacted {
                (b"{\"type\":\"redacted_thinking\",\"data\":\"", "redacted_thinking")
            } else {
                (b"{\"type\":\"thinking\",\"thinking\":\"", "thinking")
            };
            io.write(w, opening)?;
            Ok(Some(Placed::Object { to: w, kind, head: Head::borrowed(block) }))
        }

        /// `_batch_open` is `self.calls.open()`; `_moved_call`: a tool call of a tool message
        /// (ollama), to send in an assistant message after the run.
        fn moved_call(block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
            block.section == Section::ToolCall && attr_is(attrs, "role", "tool")
        }

        /// `_ends_run`: whether the held calls go before `block` (`RequestEncoder`'s docstring
        /// in Python: before a result that comes once the batch is answered, before a block of
        /// another message that is not a result).
        fn ends_run(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
            if Self::moved_call(block, attrs)
                || (self.msg.is_some() && Some(block.message) == self.msg_index && self.msg_has_result)
            {
                return false;
            }
            if self.calls.open() && self.waits_with_results(block, attrs) {
                return false; // a user or system message between the run's tool messages
            }
            !(block.section == Section::ToolResult && self.calls.open())
        }

        /// `_waits_with_results`: a block of a user or system message (not one moved out of an
        /// assistant or tool message) between tool messages while calls await their results: it
        /// goes to the user hold (or the top-level system), and the run goes on.
        fn waits_with_results(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
            let s = block.section;
            self.foreign && !attr_is(attrs, "role", "assistant") && !attr_is(attrs, "role", "tool")
                && ((s == Section::SystemInstruction && !attr_truthy(attrs, "in_messages"))
                    || (matches!(s, Section::UserText | Section::UserImage | Section::UserDocument) && self.awaiting > 0))
        }

        /// `_holds_call`: whether `block` is a moved call that waits in `anthropic:calls-after-run`.
        fn holds_call(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
            Self::moved_call(block, attrs) && (self.held_calls.is_some() || self.calls.open())
        }

        /// `_flush_held_calls`: the run answering the batch ended: first the held user blocks
        /// (`flush_held`: after the batch's results, in their user message), then the held
        /// assistant message of moved calls; its calls are the batch the next results answer,
        /// and the calls awaiting results (`awaiting`).
        fn flush_held_calls(&mut self, io: &mut Io<'_>) -> Result<()> {
            self.flush_held(io)?;
            self.close_message(io)?;
            let Some(held) = self.held_calls.take() else { return Ok(()) };
            let hold = held.out;
            held.close(io)?;
            self.open_top("messages", io)?;
            self.carried = true;
            let mut bytes = Vec::new();
            io.writers.take(hold, &mut io.session.reorder, &mut bytes);
            io.json(OUT, |w, b| w.raw_element(&bytes, b))?;
            self.calls.held_written();
            // user blocks that come now wait for these calls' results
            self.awaiting = u32::try_from(self.calls.batch_len()).unwrap_or(u32::MAX);
            Ok(())
        }

        fn tool_call<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            lose_moved(io.session, DIALECT, BlockRef::of(block), attrs, "assistant")?;
            let held = self.holds_call(block, attrs);
            let (w, ids) = if held {
                // sent when the run answering the batch ends
                let msg = match self.held_calls.take() {
                    Some(msg) => msg,
                    None => {
                        self.close_result(io)?;
                        let w = io.writers.held(&mut io.session.reorder, "anthropic:calls-after-run");
                        io.push_first(w);
                        MessageAssembler::new(w, io, "anthropic:member-order", b"\"role\":\"assistant\"",
                                              Some(PARTS_CONTENT))?
                    }
                };
                let w = msg.out;
                self.held_calls = Some(msg);
                (w, self.calls.held_list())
            } else {
                let w = self.message_for(block, "assistant", attr_truthy(attrs, "in_parts"), false, io)?;
                if self.foreign {
                    self.awaiting += 1;
                }
                // a new message of calls: the batch results answer
                (w, self.calls.batch_of(self.msg_serial))
            };
            io.separate(w)?;
            io.write(w, b"{\"type\":\"tool_use\",\"input\":")?;
            let args = if self.foreign { Some(Box::new(HeldArguments::new(io.session, "anthropic:tool-arguments"))) } else { None };
            Ok(Some(Placed::ToolUse { w, head: Head::borrowed(block), args, ids }))
        }

        fn close_tool_use(&mut self, w: WriterId, head: Head<'_>, args: Option<Box<HeldArguments>>, ids: u64,
                          late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            let every = merged(&head.attrs, late);
            let block = head.as_ref();
            if let Some(args) = args {
                let data = crate::encoding::arguments_object(io.session, DIALECT, *args, block)?;
                io.write(w, &data)?;
            }
            let mut tail = self.take_scratch();
            tail.extend_from_slice(b",\"id\":");
            match attr(&every, "id") {
                Some(id) => self.write_id(id, &mut tail),
                None => {
                    let what = format!("{} without an id", subject(io.session, block, None));
                    lose(io.session, DIALECT, block, &what, "tool_use without an id", Some("an id is made up"), None)?;
                    let mut made_up = Vec::new();
                    dumps_str(format!("toolu_missing_{}", head.message).as_bytes(), &mut made_up);
                    tail.extend_from_slice(&made_up);
                    self.unanswered.push_back(made_up);
                }
            }
            self.calls.record(ids, call_key(attr(&every, "id")));
            tail.extend_from_slice(b",\"name\":");
            let name = attr(&every, "name");
            if self.foreign {
                let name = name.map(Value::loads).transpose()?;
                let path = where_(io.session, head.message);
                let wire = io.session.tool_name_out(name.as_ref(), &path)?;
                dumps_str(wire.as_bytes(), &mut tail);
            } else {
                match name {
                    Some(raw) if crate::encoding::truthy(raw) => tail.extend_from_slice(raw),
                    _ => tail.extend_from_slice(b"\"\""), // `name or ""`
                }
            }
            self.members(block, "tool_use", &every, io, &mut tail)?;
            tail.push(b'}');
            io.write(w, &tail)?;
            self.scratch = tail;
            Ok(())
        }

        /// `dumps(_id(call_id))`: another dialect's tool-call id as anthropic accepts it
        /// (`naming.anthropic_id`); `call_id` is JSON text.
        fn write_id(&self, call_id: &[u8], out: &mut Vec<u8>) {
            if self.foreign && !is_anthropic_id_json(call_id) {
                if let Some(text) = json_str(call_id) {
                    dumps_str(anthropic_id(&text).as_bytes(), out);
                    return;
                }
            }
            out.extend_from_slice(call_id)
        }

        // -- tool results ------------------------------------------------------------------

        fn close_result(&mut self, io: &mut Io<'_>) -> Result<()> {
            let Some(mut result) = self.result.take() else { return Ok(()) };
            let mut tail = self.take_scratch();
            if result.array && result.opened {
                tail.push(b']');
            }
            if result.id.is_none() {
                if let Some(made_up) = self.unanswered.pop_front() {
                    // a result without id (openai legacy function message) answers the
                    // oldest call without id (legacy function_call): anthropic links by id
                    result.id = Some(made_up);
                } else {
                    // anthropic requires tool_use_id: write a placeholder, and say so
                    let mut placeholder = Vec::new();
                    dumps_str(format!("toolu_unlinked_{}", result.index).as_bytes(), &mut placeholder);
                    result.id = Some(placeholder);
                    let source = block_subject(io.session.source, Section::ToolResult, None, b"");
                    let reason = lacks(&format!("{source} linked to no call"), DIALECT,
                                       "tool_result without a tool_use_id", Some("a placeholder id is written"));
                    io.session.lose(format!("$.messages[{}]", result.index), &reason, None)?;
                }
            }
            if !result.id_written {
                tail.extend_from_slice(b",\"tool_use_id\":");
                self.write_id(result.id.as_deref().unwrap_or(b"null"), &mut tail);
            }
            // `_members_result`
            for (key, value) in [("is_error", &result.is_error), ("cache_control", &result.cache_control)] {
                let Some(value) = value else { continue };
                if key == "cache_control" && !self.breakpoint(value) {
                    let path = format!("$.messages[{}].cache_control", result.index);
                    let reason = lacks(crate::losses::path_subject(&path), DIALECT, BREAKPOINT_LACK, Some(BREAKPOINT_DONE));
                    io.session.lose(&path, &reason, None)?;
                    continue;
                }
                tail.push(b',');
                key_bytes(key.as_bytes(), &mut tail);
                tail.push(b':');
                tail.extend_from_slice(value);
            }
            if let Some(extra) = &result.extra {
                tail.push(b',');
                tail.extend_from_slice(&controls::string_text(extra)?);
            }
            tail.push(b'}');
            io.write(OUT, &tail)?;
            self.scratch = tail;
            Ok(())
        }

        fn tool_result<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            let call_id = attr(attrs, "tool_call_id").filter(|raw| *raw != b"null");
            if let Some(result) = &self.result {
                if result.index == block.message && call_id.is_none_or(|id| Some(id) == result.id.as_deref()) {
                    return self.in_result(block, attrs, io); // another part of the same result
                }
            }
            lose_attrs(BlockRef::of(block), attrs, RESULT_WRITTEN, io)?;
            let foreign_parts = self.foreign && attr_truthy(attrs, "in_parts") && !attr_truthy(attrs, "empty");
            if self.tool_message(block, io.session) || foreign_parts {
                // its content array opens with its first element: the text, unless it is empty
                // (anthropic rejects an empty text block), or the next part (an ollama result's
                // first image)
                let (serial, head) = self.open_result(block, attrs, call_id, true, true, true, io)?;
                io.write(OUT, &head)?;
                return Ok(Some(Placed::LazyText { result: serial, started: false, head: Head::borrowed(block) }));
            }
            let empty = attr_truthy(attrs, "empty");
            let array = attr_truthy(attrs, "in_parts");
            let (serial, mut head) = self.open_result(block, attrs, call_id, array, empty, false, io)?;
            let w = OUT;
            if empty {
                io.write(w, &head)?;
                return Ok(Some(Placed::ResultHead { content: HeadContent::Empty, result: serial, head: Head::borrowed(block) }));
            }
            if !array {
                head.extend_from_slice(b",\"content\":\"");
                io.write(w, &head)?;
                return Ok(Some(Placed::ResultHead { content: HeadContent::String, result: serial, head: Head::borrowed(block) }));
            }
            head.extend_from_slice(TEXT_HEAD);
            io.write(w, &head)?;
            Ok(Some(Placed::ResultHead { content: HeadContent::LeadingText, result: serial, head: Head::borrowed(block) }))
        }

        /// `_tool_message`: whether `block` is the text of an ollama tool message: its `images`
        /// come after it (the text streams before they are known), and anthropic takes them
        /// inside the `tool_result` (content blocks), so its result is always a list of them.
        fn tool_message(&self, block: &Block<'_>, session: &Session) -> bool {
            self.foreign && session.source == "ollama" && block.section == Section::ToolResult
        }

        /// `_in_tool_message`: whether `block` is an image of an ollama tool message (attr
        /// `role`: `tool`): it goes inside that message's `tool_result`, as an anthropic
        /// `[text, image]` result's image does, not in a user message of its own.
        fn in_tool_message(&self, block: &Block<'_>, attrs: &[Attr<'_>], session: &Session) -> bool {
            self.foreign && block.section == Section::UserImage && attr_is(attrs, "role", "tool")
                && session.source == "ollama"
        }

        /// `_open_result`: a new `tool_result` in the user message (merged after results): its
        /// serial and head. `empty`: it has no element yet; `lazy`: its content array is
        /// written with its first element.
        #[allow(clippy::too_many_arguments)]
        fn open_result(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], call_id: Option<&[u8]>, array: bool,
                       empty: bool, lazy: bool, io: &mut Io<'_>) -> Result<(u64, Vec<u8>)> {
            self.close_result(io)?;
            let w = self.result_message(block, "user", true, false, io)?;
            self.msg_has_result = true;
            self.awaiting = self.awaiting.saturating_sub(1);
            io.separate(w)?;
            let mut head = b"{\"type\":\"tool_result\"".to_vec();
            if let Some(id) = call_id {
                self.calls.answer(call_key(Some(id)));
                head.extend_from_slice(b",\"tool_use_id\":");
                self.write_id(id, &mut head);
            }
            if array && !lazy {
                head.extend_from_slice(b",\"content\":[");
            }
            self.results += 1;
            let serial = self.results;
            self.result = Some(OpenResult {
                serial,
                index: block.message,
                id: call_id.map(<[u8]>::to_vec),
                id_written: call_id.is_some(),
                is_error: attr(attrs, "is_error").map(<[u8]>::to_vec),
                cache_control: attr(attrs, "cache_control").map(<[u8]>::to_vec),
                extra: attr(attrs, EXTRA_ATTR).map(<[u8]>::to_vec),
                array,
                parts: if empty { 0 } else { 1 },
                opened: !lazy,
            });
            Ok((serial, head))
        }

        /// `_ResultText.write`: a text block in a tool_result's content opens with its first byte
        /// -- an empty text of another dialect is not written -- or at once (`eager`: a copy from
        /// anthropic writes what came).
        fn result_text(&mut self, result: u64, started: &mut bool, eager: bool, payload: &[u8], io: &mut Io<'_>)
                       -> Result<()> {
            if !*started && (!payload.is_empty() || eager) {
                *started = true;
                if let Some(open) = self.result.as_mut().filter(|r| r.serial == result) {
                    let mut opening = open.separator().to_vec();
                    opening.extend_from_slice(TEXT_HEAD);
                    io.write(OUT, &opening)?;
                }
            }
            io.write(OUT, payload)
        }

        /// `_result_late`: attributes that came with a result's last fragment.
        fn result_late(&mut self, serial: u64, late: &[Attr<'_>], only_id_and_error: bool) {
            let Some(result) = self.result.as_mut().filter(|r| r.serial == serial) else {
                return; // (the result was written already: Python updates a dead object)
            };
            for (key, value) in late {
                let value = value.to_vec();
                match key.as_ref() {
                    // (`if result.id is None: result.id = value; self._answered.add(value)`; a
                    // null leaves it None)
                    "tool_call_id" if result.id.is_none() => {
                        self.calls.answer(call_key(Some(&value)));
                        if value != b"null" {
                            result.id = Some(value);
                        }
                    }
                    "is_error" => result.is_error = Some(value),
                    "cache_control" if !only_id_and_error => result.cache_control = Some(value),
                    RESULT_CACHE_CONTROL => result.cache_control = Some(value),
                    EXTRA_ATTR if !only_id_and_error => result.extra = Some(value),
                    _ => {}
                }
            }
        }

        /// `_in_result`: a further part of the open tool result.
        fn in_result<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            let result = self.result.as_mut().ok_or_else(no_open_result)?;
            if !result.array {
                // cannot happen from our decoders; keep the text
                lose_block(io.session, DIALECT, BlockRef::of(block), "second part of a string tool_result content",
                           None, None)?;
                return Ok(None);
            }
            match block.section {
                Section::ToolResult if self.foreign && io.session.source == "ollama" => {
                    // an ollama tool message's text after its images
                    Ok(Some(Placed::LazyText { result: result.serial, started: false, head: Head::borrowed(block) }))
                }
                Section::ToolResult => {
                    Ok(Some(Placed::ResultText { head: Head::borrowed(block), result: result.serial, started: false }))
                }
                Section::UserImage | Section::UserDocument => self.media(block, attrs, true, false, io),
                Section::Unknown | Section::ServerToolResult if attr_is(attrs, "dialect", DIALECT) => {
                    let sep = result.separator();
                    io.write(OUT, sep)?;
                    Ok(Some(Placed::ResultCopy(result.serial))) // (carried whole: late members ride)
                }
                _ => {
                    lose_block(io.session, DIALECT, BlockRef::of(block), "such content in a tool_result", None, None)?;
                    Ok(None)
                }
            }
        }

        // -- media --------------------------------------------------------------------------

        /// `_media`; `result_of`: an image of an ollama tool message before its text (or of one
        /// without text): it opens the message's `tool_result` (its link comes with the text).
        fn media<'b>(&mut self, block: &'b Block<'_>, attrs: &[Attr<'_>], in_result: bool, result_of: bool,
                     io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
            let mut kind = if block.section == Section::UserImage { "image" } else { "document" };
            let empty_fin = block.fin && block.payload.is_empty();
            let mut source = attr(attrs, "source").filter(|raw| *raw != b"null").map(<[u8]>::to_vec);
            if source.is_none() && !empty_fin && !self.foreign {
                source = Some(b"\"data\"".to_vec()); // sorted keys: the source type follows its data (a late attr)
            }
            let Some(source) = source else {
                let what = if attr(attrs, "file_id").is_some_and(|raw| raw != b"null") {
                    "access to another provider's file ids"
                } else {
                    "source it can take"
                };
                lose_block(io.session, DIALECT, BlockRef::of(block), what, None, Some(attrs))?;
                return Ok(None);
            };
            let is = |text: &str| is_str(Some(&source), text);
            if self.foreign && is("file") {
                lose_block(io.session, DIALECT, BlockRef::of(block), "access to another provider's file ids", None,
                           Some(attrs))?;
                return Ok(None);
            }
            if self.foreign && kind == "image" && is("base64") && attr(attrs, "media_type").is_none_or(|raw| raw == b"null") {
                // anthropic requires a base64 image's media_type (png, jpeg, gif or webp); another
                // dialect's image without one (ollama's bytes that show none of them) is not one it takes
                lose_block(io.session, DIALECT, BlockRef::of(block),
                           "base64 image without a media type (png, jpeg, gif or webp)", Some("not sent"), Some(attrs))?;
                return Ok(None);
            }
            if self.foreign && kind == "document" && is("base64") {
                match base64_document(block, attrs, io)? {
                    Some(as_kind) => kind = as_kind,
                    None => return Ok(None),
                }
            }
            if result_of {
                let (_, head) = self.open_result(block, &[], None, true, true, true, io)?;
                io.write(OUT, &head)?;
            }
            let (to, result) = if in_result || result_of {
                let result = self.result.as_mut().ok_or_else(no_open_result)?;
                let sep = result.separator();
                io.write(OUT, sep)?;
                (OUT, Some(result.serial))
            } else {
                // (an anthropic body's own assistant media stays where it came)
                let role = if !self.foreign && attr_is(attrs, "role", "assistant") { "assistant" } else { "user" };
                if role == "user" {
                    lose_moved(io.session, DIALECT, BlockRef::of(block), attrs, "user")?;
                }
                let w = self.message_for(block, role, attr_truthy(attrs, "in_parts"), false, io)?;
                io.separate(w)?;
                (w, None)
            };
            let mut has_payload = !empty_fin || ["base64", "url", "text", "data"].iter().any(|t| is(t));
            if is("file") || is("content") {
                has_payload = false;
            }
            let mut opening = b"{\"type\":".to_vec();
            dumps_str(kind.as_bytes(), &mut opening);
            opening.extend_from_slice(b",\"source\":{");
            if has_payload {
                opening.extend_from_slice(if is("url") { b"\"url\":\"" } else { b"\"data\":\"" });
            }
            io.write(to, &opening)?;
            let sniffed = (self.foreign && kind == "image" && is("base64")).then(|| Vec::with_capacity(SNIFF_BYTES));
            Ok(Some(Placed::Media(Media { head: Head::borrowed(block), to, kind, source, has_payload, result, sniffed })))
        }

        /// The leading text element of a result's content: `"`, its own members (the head's
        /// `part_` ones), `}`.
        fn close_leading_text(&mut self, head: BlockRef<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            let every = merged(head.attrs, late);
            let own: Vec<Attr<'_>> = every
                .iter()
                .filter(|(key, _)| PART_ATTRS.contains(&key.as_ref()))
                .map(|(key, value)| (Cow::Borrowed(&key[PART_PREFIX.len()..]), value.clone()))
                .collect();
            let mut tail = self.take_scratch();
            tail.push(b'"');
            self.members(head, "text", &own, io, &mut tail)?;
            tail.push(b'}');
            io.write(OUT, &tail)?;
            self.scratch = tail;
            Ok(())
        }

        fn close_media(&mut self, media: Media<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            let Media { head, to, kind, source, has_payload, result, sniffed } = media;
            let mut every = merged(&head.attrs, late);
            let untitled = attr(&every, "title").is_none_or(|raw| raw == b"null");
            if self.foreign && kind == "document" && untitled {
                // openai's file name is the document's title (and a title the file name, back)
                if let Some(at) = every.iter().position(|(key, _)| key == "filename") {
                    let every = every.to_mut();
                    let (_, name) = every.remove(at);
                    every.retain(|(key, _)| key != "title");
                    every.push((Cow::Borrowed("title"), name));
                }
            }
            let mut tail: Vec<u8> = if has_payload { b"\",".to_vec() } else { Vec::new() };
            tail.extend_from_slice(b"\"type\":");
            tail.extend_from_slice(attr(&every, "source").unwrap_or(b"null"));
            let mut media_type = attr(&every, "media_type").filter(|raw| *raw != b"null").map(Cow::Borrowed);
            let declared = media_type.as_deref().and_then(json_str);
            let shown = sniffed.as_deref().and_then(sniff_media_type);
            if let Some(shown) = shown.filter(|shown| declared.as_deref() != Some(*shown)) {
                if let Some(declared) = declared.filter(|t| IMAGE_TYPES.contains(&t.as_str())) {
                    // (a type anthropic does not take is relabelled silently)
                    let subject = subject(io.session, head.as_ref(), Some(&every));
                    let what = format!("media type {} of {} {subject}", crate::json::py_str_repr(declared.as_bytes()),
                                       crate::losses::article(&subject));
                    let done = format!("sent as {}, the type its bytes show", crate::json::py_str_repr(shown.as_bytes()));
                    lose(io.session, DIALECT, head.as_ref(), &what, "image whose bytes are not its media type",
                         Some(&done), None)?;
                }
                // anthropic refuses an image whose bytes are not its media_type
                media_type = Some(Cow::Owned(crate::value::str_json(shown)));
            }
            if let Some(media_type) = media_type.filter(|_| !is_str(Some(&source), "url")) {
                tail.extend_from_slice(b",\"media_type\":");
                tail.extend_from_slice(&media_type);
            }
            for key in ["file_id", "content"] {
                if let Some(value) = attr(&every, key) {
                    if key == "file_id" && self.foreign {
                        // (beside data: another provider's id, no source of it)
                        lose_field(io.session, DIALECT, head.as_ref(), key, Some(&every), None)?;
                        continue;
                    }
                    tail.push(b',');
                    key_bytes(key.as_bytes(), &mut tail);
                    tail.push(b':');
                    tail.extend_from_slice(value);
                }
            }
            if let Some(extra) = attr(&every, "source_extra").filter(|raw| crate::encoding::truthy(raw)) {
                tail.push(b',');
                tail.extend_from_slice(&controls::string_text(extra)?);
            }
            tail.push(b'}');
            let members: Vec<Attr<'_>> =
                every.iter().filter(|(k, _)| k != "is_error" && k != RESULT_CACHE_CONTROL).cloned().collect();
            self.members(head.as_ref(), kind, &members, io, &mut tail)?;
            tail.push(b'}');
            io.write(to, &tail)?;
            if let Some(serial) = result {
                self.result_late(serial, &every, true);
            }
            Ok(())
        }
    }

    /// `_base64_document`: another dialect's base64 file (openai `file_data`) as anthropic takes
    /// one: a PDF a `document`, an image (png, jpeg, gif, webp) an `image` block (recorded: its
    /// file name goes); any other type, or none, is not sent (recorded): anthropic's base64
    /// document is a PDF only.
    fn base64_document(block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<&'static str>> {
        let media_type = attr(attrs, "media_type").filter(|raw| *raw != b"null").and_then(json_str);
        let what = match media_type.as_deref() {
            Some("application/pdf") => return Ok(Some("document")),
            Some(t) if IMAGE_TYPES.contains(&t) => {
                let what = format!("file of type {} as a document", crate::json::py_str_repr(t.as_bytes()));
                lose_block(io.session, DIALECT, BlockRef::of(block), &what, Some("sent as an image block"), Some(attrs))?;
                return Ok(Some("image"));
            }
            Some(t) => format!("base64 file of type {} (a document is a PDF)", crate::json::py_str_repr(t.as_bytes())),
            None => "base64 file without a media type (a document is a PDF)".to_string(),
        };
        lose_block(io.session, DIALECT, BlockRef::of(block), &what, Some("not sent"), Some(attrs))?;
        Ok(None)
    }

    impl PlaceBlocks for State {
        type Placed<'a> = Placed<'a>;

        fn in_block(&mut self) -> &mut InBlock<Placed<'static>> {
            &mut self.block
        }

        /// `_defers`: an empty first fragment of another dialect's text waits: it may stay empty
        /// (its member after the text came on a last fragment of its own), and an empty text is
        /// not written (`place_block`).
        fn defers(&self, block: &Block<'_>, _session: &Session) -> bool {
            self.foreign && matches!(block.section, Section::SystemInstruction | Section::UserText
                                                    | Section::AssistantText | Section::AssistantRefusal)
        }

        fn message_listed(&mut self) {
            self.listed = true;
        }

        fn place<'a>(&mut self, block: &'a Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed<'a>>> {
            self.note_message(Some(block.message), io)?;
            if self.held_calls.is_some() && self.ends_run(block, block.attrs.as_deref().unwrap_or(&[])) {
                self.flush_held_calls(io)?;
            }
            let had_more = std::mem::replace(&mut self.src_has_more, true);
            self.empty_text = None;
            let placed = self.place_block(block, io)?;
            if let Some(role) = self.empty_text.take() {
                self.src_has_more = had_more;
                self.src_empty_role.get_or_insert(role);
                return Ok(None);
            }
            if placed.is_some() && matches!(block.section, Section::AssistantText | Section::AssistantReasoning
                                                              | Section::AssistantRefusal | Section::ToolCall) {
                self.note_turn(block);
            }
            Ok(placed)
        }

        fn keep(placed: Placed<'_>) -> Placed<'static> {
            placed.into_owned()
        }

        fn write(&mut self, placed: &mut Placed<'_>, payload: &[u8], io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Copy(w) | Placed::Object { to: w, .. } => io.write(*w, payload),
                Placed::TrailingText(_) => self.trailing_write(payload, io),
                Placed::ResultCopy(_) | Placed::StringText(_) => io.write(OUT, payload),
                Placed::Drop | Placed::ResultHead { content: HeadContent::Empty, .. } => Ok(()),
                Placed::ResultHead { .. } => io.write(OUT, payload),
                Placed::ResultText { result, started, .. } => {
                    let eager = !self.foreign;
                    self.result_text(*result, started, eager, payload, io)
                }
                Placed::LazyText { result, started, .. } => self.result_text(*result, started, false, payload, io),
                Placed::Media(media) => {
                    if let Some(sniffed) = media.sniffed.as_mut() {
                        keep_head(sniffed, payload);
                    }
                    io.write(media.to, payload)
                }
                Placed::ToolUse { args: Some(args), .. } => args.feed(payload, io.session),
                Placed::ToolUse { w, args: None, .. } => {
                    if payload.is_empty() {
                        return Ok(());
                    }
                    let data = unescape_json_text(payload)?;
                    io.write(*w, &data)
                }
            }
        }

        fn close(&mut self, placed: Placed<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Copy(_) | Placed::Drop => Ok(()),
                Placed::StringText(head) => {
                    // `_lose_string_cache`: an openai message's breakpoint that came after its
                    // string content (written as anthropic's string content as it streamed): a
                    // string content has no cache_control; recorded
                    if attr(late, MESSAGE_CACHE_CONTROL).is_some_and(|raw| raw != b"null") {
                        let subject = field_subject(io.session.source, MESSAGE_CACHE_CONTROL, head.section, Some(late));
                        lose(io.session, DIALECT, head.as_ref(), &subject, "cache_control on a string content",
                             Some("the text was sent as one before it came"), None)?;
                    }
                    Ok(())
                }
                Placed::ResultCopy(result) => {
                    self.result_late(result, late, false);
                    Ok(())
                }
                Placed::Object { to, kind, head } => {
                    let mut tail = self.take_scratch();
                    self.closing(&head, kind, late, io, &mut tail)?;
                    io.write(to, &tail)?;
                    self.scratch = tail;
                    Ok(())
                }
                Placed::TrailingText(head) => self.trailing_close(head, late, io),
                Placed::ToolUse { w, head, args, ids } => self.close_tool_use(w, head, args, ids, late, io),
                Placed::ResultHead { content, result, head } => {
                    match content {
                        HeadContent::Empty => {}
                        HeadContent::String => io.write(OUT, b"\"")?,
                        HeadContent::LeadingText => self.close_leading_text(head.as_ref(), late, io)?,
                    }
                    self.result_late(result, late, false);
                    lose_attrs(head.as_ref(), late, RESULT_WRITTEN_LATE, io)
                }
                Placed::LazyText { result, started, head } => {
                    if started {
                        io.write(OUT, TEXT_TAIL)?;
                    }
                    self.result_late(result, late, false);
                    lose_attrs(head.as_ref(), late, RESULT_WRITTEN_LATE, io)
                }
                Placed::ResultText { head, result, started } => {
                    let every = merged(&head.attrs, late);
                    let (linking, text): (Vec<Attr<'_>>, Vec<Attr<'_>>) = every.iter().cloned().partition(|(k, _)| riding(k));
                    if started {
                        let mut tail = self.take_scratch();
                        tail.push(b'"');
                        self.members(head.as_ref(), "text", &text, io, &mut tail)?;
                        tail.push(b'}');
                        io.write(OUT, &tail)?;
                        self.scratch = tail;
                    } else {
                        lose_attrs(head.as_ref(), &text, &[], io)?;
                    }
                    self.result_late(result, &linking, true);
                    Ok(())
                }
                Placed::Media(media) => self.close_media(media, late, io),
            }
        }

        fn tool_definition(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
            tool_definition(self, block, io)
        }
    }

    impl ToolDefinitions for State {
        fn dialect(&self) -> &'static str {
            DIALECT
        }

        fn tool_json(&mut self, attrs: &[Attr<'_>], schema: &[u8], io: &mut Io<'_>) -> Result<Vec<u8>> {
            match attr(attrs, "cache_control") {
                Some(value) if !self.breakpoint(value) => {
                    let path = attr(attrs, "path").filter(|raw| crate::encoding::truthy(raw)).and_then(json_str)
                        .map_or_else(|| "$.tools".to_string(), |path| format!("{path}.cache_control"));
                    let reason = lacks("cache_control of a tool", DIALECT, BREAKPOINT_LACK, Some(BREAKPOINT_DONE));
                    io.session.lose(&path, &reason, None)?;
                    let kept: Vec<Attr<'_>> = attrs.iter().filter(|(key, _)| key != "cache_control").cloned().collect();
                    controls::tool_from_canonical(&kept, schema, io.session)
                }
                _ => controls::tool_from_canonical(attrs, schema, io.session),
            }
        }

        fn tool_element(&mut self, key: &'static str, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
            self.open_top(key, io)?;
            io.json(OUT, |w, b| w.raw_element(raw, b))
        }

        fn tool_sent(&mut self, name: Option<Vec<u8>>) {
            self.tools_sent.push(name);
        }
    }

    /// `message_member(ext)`: the member an extension of a message names.
    fn last_key(path: &[u8], message: Option<i64>) -> Result<&[u8]> {
        if let Some(message) = message {
            if let Some(key) = path.strip_prefix(format!("$.messages[{message}].").as_bytes()) {
                return Ok(key);
            }
        }
        if !path.contains(&b'.') {
            let path = String::from_utf8_lossy(path);
            return Err(Error::new(ErrorClass::Transcode, format!("an extension of a message without a member path ({path})")));
        }
        Ok(crate::encoding::last_segment(path))
    }

    fn not_a_role() -> Error {
        Error::new(ErrorClass::Transcode, "a block's role attribute that is not a string")
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::session::{Kind, Options};

        /// A canonical event of `request_encoder_cases.json` (Python's events as JSON data).
        fn event(value: &Value) -> Event<'static> {
            let text = |key: &str| value.get(key).and_then(Value::as_str).map(|s| s.to_string());
            let json = |key: &str| value.get(key).map(Value::to_json).unwrap_or_default();
            let owned = |key: &str| text(key).map(|s| Cow::Owned(s.into_bytes()));
            match text("event").as_deref() {
                Some("block") => Event::Block(Block {
                    section: Section::from_name(&text("section").unwrap()).unwrap(),
                    message: value.get("message").and_then(Value::as_i64).unwrap(),
                    payload: owned("payload").unwrap(),
                    init: value.get("init") == Some(&Value::Bool(true)),
                    fin: value.get("fin") == Some(&Value::Bool(true)),
                    attrs: value.get("attrs").and_then(Value::as_object).map(|members| {
                        members.iter().map(|(k, v)| (Cow::Owned(String::from_utf8(k.clone()).unwrap()), Cow::Owned(v.to_json())))
                            .collect()
                    }),
                }),
                Some("control") => Event::Control(Control {
                    name: Cow::Owned(text("name").unwrap()),
                    value: Cow::Owned(json("value")),
                    dialect: text("dialect").map(Cow::Owned),
                    key: text("key").map(Cow::Owned),
                    raw: owned("raw"),
                }),
                Some("extension") => Event::Extension(Extension {
                    dialect: Cow::Owned(text("dialect").unwrap()),
                    path: Cow::Owned(text("path").unwrap().into_bytes()),
                    raw: owned("raw").unwrap(),
                    message: value.get("message").and_then(Value::as_i64),
                    lossless: value.get("lossless") == Some(&Value::Bool(true)),
                }),
                Some("system-end") => Event::SystemEnd,
                Some("messages-end") => Event::MessagesEnd,
                Some("end") => Event::End,
                other => panic!("event {other:?}"),
            }
        }

        fn block(section: Section, message: i64, payload: &'static str, attrs: &[(&'static str, &'static str)]) -> Event<'static> {
            Event::Block(Block {
                section,
                message,
                payload: Cow::Borrowed(payload.as_bytes()),
                init: true,
                fin: true,
                attrs: (!attrs.is_empty()).then(|| attrs.iter().map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(v.as_bytes()))).collect()),
            })
        }

        /// An ollama tool message with calls of its own in the middle of a run of results
        /// (rpt/ollama-tool-message-with-calls-mid-run): its calls wait in a hold until the
        /// run answering the batch before it ends, then go in an assistant message before the
        /// result that answers them (Python's events and bytes).
        #[test]
        fn calls_of_a_tool_message_mid_run_go_after_the_run() {
            let mut session = Session::new(Options::default(), "ollama", DIALECT, Kind::Request);
            let mut encoder = RequestEncoder::new(&session);
            let events = vec![
                Event::SystemEnd,
                block(Section::UserText, 0, "go", &[]),
                block(Section::ToolCall, 1, "{}", &[("id", "\"c0\""), ("name", "\"f\"")]),
                block(Section::ToolCall, 1, "{}", &[("id", "\"c1\""), ("name", "\"f\"")]),
                block(Section::ToolResult, 2, "r0", &[("tool_call_id", "\"c0\"")]),
                block(Section::ToolCall, 2, "{}", &[("id", "\"c2\""), ("name", "\"g\""), ("role", "\"tool\"")]),
                block(Section::ToolResult, 3, "r1", &[("tool_call_id", "\"c1\"")]),
                block(Section::ToolResult, 4, "rg", &[("tool_call_id", "\"c2\"")]),
                Event::MessagesEnd,
                Event::End,
            ];
            let mut outs = Vec::new();
            for event in events {
                let mut out = Vec::new();
                encoder.event(event, &mut session, &mut out).unwrap();
                outs.push(String::from_utf8(out).unwrap());
            }
            assert_eq!(
                outs.concat(),
                concat!(
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"},",
                    "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"input\":{},\"id\":\"c0\",\"name\":\"f\"},",
                    "{\"type\":\"tool_use\",\"input\":{},\"id\":\"c1\",\"name\":\"f\"}]},",
                    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c0\",\"content\":[{\"type\":\"text\",\"text\":\"r0\"}]},",
                    "{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"r1\"}]}]},",
                    "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"input\":{},\"id\":\"c2\",\"name\":\"g\"}]},",
                    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"c2\",\"content\":[{\"type\":\"text\",\"text\":\"rg\"}]}]}],",
                    "\"max_tokens\":4096}"
                )
            );
            assert_eq!(outs[5], "]}", "the moved call is held (the result before it closes)");
            assert_eq!(outs[6], ",{\"type\":\"tool_result\",\"tool_use_id\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"r1\"}",
                       "the run goes on (an ollama result: a content list)");
            assert_eq!(session.losses.len(), 1);
            assert_eq!(session.losses[0].path(), b"$.messages[2]");
            let (high, by_reason) = session.reorder.report();
            assert_eq!(high, 84);
            assert!(by_reason.iter().any(|r| r.0 == "anthropic:calls-after-run" && r.1 == 84), "{by_reason:?}");
            assert_eq!(session.reorder.held(), 0, "every hold is released");
        }

        /// Python's decoders' events of an openai, an anthropic and an ollama request, and
        /// what Python's anthropic encoder writes after each (the table is made, and checked
        /// current, by tests/native/test_anthropic_request_encoder_parity.py; the binding's
        /// differential test there covers every scenario: this one runs without Python).
        #[test]
        fn the_bytes_after_every_event_are_pythons() {
            let cases = Value::loads(include_bytes!("request_encoder_cases.json")).unwrap();
            for case in cases.as_array().unwrap() {
                let source = match case.get("source").and_then(Value::as_str).unwrap() {
                    "openai" => "openai",
                    "ollama" => "ollama",
                    _ => "anthropic",
                };
                let mut session = Session::new(Options::default(), source, DIALECT, Kind::Request);
                let mut encoder = RequestEncoder::new(&session);
                let want = case.get("out").and_then(Value::as_array).unwrap();
                for (n, e) in case.get("events").and_then(Value::as_array).unwrap().iter().enumerate() {
                    let mut out = Vec::new();
                    encoder.event(event(e), &mut session, &mut out).unwrap();
                    assert_eq!(String::from_utf8(out).unwrap(), want[n].as_str().unwrap(), "{source}: event {n}");
                }
                let mut tail = Vec::new();
                encoder.finish(&mut session, &mut tail).unwrap();
                assert_eq!(tail, case.get("tail").and_then(Value::as_str).unwrap().as_bytes());
                assert!(encoder.ended());
                let losses: Vec<Value> = session.losses.iter()
                    .map(|l| Value::Array(vec![Value::str(&l.dialect), Value::Str(l.path().to_vec()), Value::Str(l.reason().to_vec())]))
                    .collect();
                assert_eq!(&Value::Array(losses), case.get("losses").unwrap(), "{source}");
                assert_eq!(session.reorder.held(), 0, "{source}: every hold is released");
            }
        }
    }
}
