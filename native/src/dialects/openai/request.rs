//! openai requests (`src/interlingua/dialects/openai/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper D) -----------------------------------------------------------------
//
// The decisions are request.py's (its module docstring): the message index is the
// position in `messages[]`; a `content` before its message's `role` is held
// (`openai:content-before-role`) with everything after it in that message; other
// attributes may come late and ride on the block's last fragment; `content: null`
// is a lossless extension; other message keys are extensions bound to the message;
// an unknown role makes `unknown` blocks, an unknown part type an `unknown` block
// holding the raw part; data URLs become base64 payloads with `media_type` and
// `data_url: true`.
//
// The Python readers (MessageReader, ToolCallReader, PartReader, MediaReader) are
// fields of `Openai`: one of each is open at a time (the schema fixes the nesting),
// and the states `S` say which handler a token goes to.

use std::borrow::Cow;

use super::controls;
use crate::canonical::{Block, Event, Section, REQUEST_LEVEL};
use crate::decoding::{
    dumps, dumps_key, get_attr, loads, set_attr, Attr, BlockBuilder, Cx, Decode, Dialect, EventSink, Frame, Machine,
    MessageBase, Read, RequestBody, STRING,
};
use crate::dialects::fields::{self, OPENAI_REASONING_EFFORTS as EFFORTS};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{py_str_repr, Frames, Token};
use crate::session::Session;
use crate::value::Value;

const DIALECT: &str = "openai";
const CONTENT_BEFORE_ROLE: &str = "openai:content-before-role";
const DATA_URL_PREFIX_LIMIT: usize = 256;
/// `EXTRA_ATTR`: an openai-only member of a part or tool call, as JSON text (`"k":v,...`)
const EXTRA_ATTR: &str = "openai_extra";

/// `ROLE_TEXT_SECTION.get(role, UNKNOWN)`.
fn role_text_section(role: &str) -> Section {
    match role {
        "system" | "developer" => Section::SystemInstruction,
        "user" => Section::UserText,
        "assistant" => Section::AssistantText,
        "tool" | "function" => Section::ToolResult,
        _ => Section::Unknown,
    }
}

/// The content part types with a payload reader (`_PART_SECTIONS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Text,
    Refusal,
    ImageUrl,
    File,
    InputAudio,
}

impl Part {
    fn of(key: &[u8]) -> Option<Part> {
        Some(match key {
            b"text" => Part::Text,
            b"refusal" => Part::Refusal,
            b"image_url" => Part::ImageUrl,
            b"file" => Part::File,
            b"input_audio" => Part::InputAudio,
            _ => return None,
        })
    }

    fn key(self) -> &'static str {
        match self {
            Part::Text => "text",
            Part::Refusal => "refusal",
            Part::ImageUrl => "image_url",
            Part::File => "file",
            Part::InputAudio => "input_audio",
        }
    }

    /// `_MEDIA_PAYLOAD_KEY`
    fn payload_key(self) -> &'static str {
        match self {
            Part::ImageUrl => "url",
            Part::File => "file_data",
            _ => "data",
        }
    }

    fn media_section(self) -> Section {
        match self {
            Part::ImageUrl => Section::UserImage,
            Part::File => Section::UserDocument,
            _ => Section::UserAudio,
        }
    }
}

/// A message member read as a string block (`_string_member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Refusal,
    /// `Options.openai_reasoning_field`'s key
    Reasoning,
}

/// The handlers (Python's bound methods and lambdas), by what they read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum S {
    /// the document's first token (`_body`)
    Start,
    /// body members (`_top_member`)
    Body,
    /// a body member's raw JSON (`_top_field`)
    TopField,
    Tools { legacy: bool },
    /// one tool definition as data (`_tool`)
    Tool { legacy: bool },
    Messages,
    /// the keys of a message (`MessageReader.on_key`)
    Message,
    Role,
    Content,
    /// a text block's fragments (`string_block`'s builder, closed when done)
    Text,
    StringMember(Member),
    ToolCallId,
    /// an extension member's value (`_extension`): its first token
    Extension,
    ExtensionRaw { lossless: bool },
    ToolCalls,
    ToolCallList,
    FunctionCall,
    /// the keys of a tool call (`ToolCallReader.on_key`)
    ToolCall,
    CallId,
    CallType,
    CallFunction,
    /// the keys of its function (`on_function_key`)
    FunctionKeys,
    CallName,
    Arguments,
    /// an openai-only member of a tool call (`_extra`)
    Extra,
    Parts,
    /// the keys of a content part (`PartReader.on_key`)
    Part,
    PartType,
    Payload(Part),
    /// an unknown member of a part (`_raw_member`)
    RawMember,
    CacheControl,
    /// the keys of a media object (`MediaReader.on_key`)
    Media,
    MediaPayload,
    MediaAttr,
}

/// `MessageReader`: one message object (index, role, the block being built and
/// the one finished but not yet closed -- a late `tool_call_id` can still ride on it).
#[derive(Debug)]
struct MessageReader {
    base: MessageBase,
    /// the `tool_call_id` read, as JSON
    tool_call_id: Option<Vec<u8>>,
    id_given: bool,
    /// content was an array (it may be empty)
    empty_parts: bool,
    /// an unknown role's text came in parts (`_unknown_parts`)
    unknown_parts: bool,
    /// the payload being read (Python's builder held by a reader)
    building: Option<BlockBuilder>,
    /// finished payload, not yet closed (`_open`)
    open: Option<BlockBuilder>,
}

impl MessageReader {
    fn new(index: i64) -> Self {
        MessageReader {
            base: MessageBase::new(index, CONTENT_BEFORE_ROLE, None),
            tool_call_id: None,
            id_given: false,
            empty_parts: false,
            unknown_parts: false,
            building: None,
            open: None,
        }
    }

    fn index(&self) -> i64 {
        self.base.index
    }

    fn emit(&mut self, block: Block<'_>, cx: &mut Cx<'_>) -> Result<()> {
        let unknown_parts = &mut self.unknown_parts;
        self.base.emit(block, cx, |role, block| resolve(unknown_parts, role, block))
    }

    fn set_role(&mut self, role: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let unknown_parts = &mut self.unknown_parts;
        self.base.set_role(role, offset, cx, |role, block| resolve(unknown_parts, role, block))
    }

    /// `text_attrs`: a `tool_call_id` already read goes on the first text block.
    fn text_attrs(&mut self, mut attrs: Vec<Attr>) -> Vec<Attr> {
        if let Some(id) = &self.tool_call_id {
            if !self.id_given {
                set_attr(&mut attrs, Cow::Borrowed("tool_call_id"), id.clone());
                self.id_given = true;
            }
        }
        attrs
    }

    /// `builder`: a new block of this message; the previous one is closed first.
    fn builder(&mut self, section: Section, attrs: Vec<Attr>, cx: &mut Cx<'_>) -> Result<()> {
        self.close_open(cx)?;
        self.building = Some(BlockBuilder::new(section, self.index(), attrs));
        Ok(())
    }

    /// `finished`: the block's payload is complete; it closes when the next block starts or the message ends.
    fn finished(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.close_open(cx)?;
        self.open = self.building.take();
        Ok(())
    }

    fn close_open(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        if let Some(mut open) = self.open.take() {
            let (last, extra) = open.close();
            self.emit(last, cx)?;
            if let Some(extra) = extra {
                self.emit(extra, cx)?;
            }
        }
        Ok(())
    }

    /// A fragment of the block being built (`builder.fragment`).
    fn fragment(&mut self, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
        let block = match &mut self.building {
            Some(builder) => builder.fragment(data, fin),
            None => return Err(internal("a fragment without a block")),
        };
        match block {
            Some(block) => self.emit(block, cx),
            None => Ok(()),
        }
    }

    /// The block a part or tool call sets attributes on (`self.block`): the one
    /// being built, or the one just finished.
    fn current(&mut self) -> Result<&mut BlockBuilder> {
        match (&mut self.building, &mut self.open) {
            (Some(builder), _) | (None, Some(builder)) => Ok(builder),
            (None, None) => Err(internal("no block to set an attribute on")),
        }
    }

    fn null(&self, key: &str, cx: &mut Cx<'_>) -> Result<()> {
        let path = format!("$.messages[{}].{key}", self.index());
        cx.extension(DIALECT, path, b"null", Some(self.index()), true)
    }
}

fn internal(what: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("internal error in the native core: openai request decoder: {what}"))
}

/// `attrs` as a block carries them, one set (dict `__setitem__`: a name set again keeps its place).
fn set_block_attr<'a>(attrs: &mut Vec<(Cow<'a, str>, Cow<'a, [u8]>)>, name: &'static str, json: Vec<u8>) {
    match attrs.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = Cow::Owned(json),
        None => attrs.push((Cow::Borrowed(name), Cow::Owned(json))),
    }
}

fn str_json(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 2);
    dumps_key(text.as_bytes(), &mut out);
    out
}

/// `MessageReader._resolve`: text (built as provisional `user-text`) gets the
/// section its role says. An unrecognised role makes its text `unknown` blocks
/// whose payload is the raw JSON the text came in (a string, or a text part).
fn resolve<'e>(unknown_parts: &mut bool, role: &str, block: Block<'e>) -> Block<'e> {
    if block.section != Section::UserText {
        let has_role = block.attrs.as_ref().is_some_and(|a| a.iter().any(|(n, _)| n == "role"));
        if block.init && block.section == Section::Unknown && !has_role {
            let mut attrs = block.attrs.unwrap_or_default();
            attrs.push((Cow::Borrowed("role"), Cow::Owned(str_json(role))));
            return Block { attrs: Some(attrs), ..block };
        }
        return block;
    }
    if role == "user" {
        return block;
    }
    let section = role_text_section(role);
    let mut attrs = block.attrs;
    let mut payload = block.payload;
    if block.init {
        let mut fresh = attrs.unwrap_or_default();
        if role == "developer" || role == "function" {
            set_block_attr(&mut fresh, "role", str_json(role));
        }
        attrs = Some(fresh);
    }
    if section == Section::Unknown {
        if block.init {
            let in_parts = attrs.as_ref().and_then(|a| a.iter().find(|(n, _)| n == "in_parts"))
                .is_some_and(|(_, v)| truthy_json(v));
            if let Some(a) = &mut attrs {
                set_block_attr(a, "role", str_json(role));
                set_block_attr(a, "dialect", str_json(DIALECT));
            }
            *unknown_parts = in_parts;
        }
        let (head, tail): (&[u8], &[u8]) =
            if *unknown_parts { (br#"{"type":"text","text":""#, br#""}"#) } else { (b"\"", b"\"") };
        let mut wrapped = Vec::with_capacity(payload.len() + head.len() + tail.len());
        if block.init {
            wrapped.extend_from_slice(head);
        }
        wrapped.extend_from_slice(&payload);
        if block.fin {
            wrapped.extend_from_slice(tail);
        }
        payload = Cow::Owned(wrapped);
    }
    let attrs = attrs.filter(|a| !a.is_empty());
    Block { section, message: block.message, payload, init: block.init, fin: block.fin, attrs }
}

/// Python truthiness of an attribute's JSON (the decoder sets `in_parts` to `true`).
fn truthy_json(json: &[u8]) -> bool {
    !matches!(json, b"false" | b"null" | b"0" | b"\"\"" | b"[]" | b"{}")
}

/// `ToolCallReader`: its block is the message's block being built.
#[derive(Debug, Default)]
struct ToolCallReader {
    legacy: bool,
}

/// `PartReader`: one content part; its kind is known from `type` or from its
/// payload key, whichever comes first (sorted keys put `text` before `type`).
#[derive(Debug, Default)]
struct PartReader {
    /// `self.type`
    kind: Option<Vec<u8>>,
    /// the part made its block (`self.block is not None`): the message's current one
    has_block: bool,
    /// an unknown part's members, re-serialised (`"k":v,...`)
    raw_parts: Vec<u8>,
    /// a raw member's key holds a ':' (request.py's `partition(b":")` cannot split it)
    colon_key: bool,
    /// where the `type` key was (its error is there)
    type_offset: u64,
}

/// `MediaReader`: the object of an `image_url` / `file` / `input_audio` part; a
/// data URL's prefix is parsed from the payload's first bytes (held back until
/// the comma, at most 256 bytes).
#[derive(Debug)]
struct MediaReader {
    part: Part,
    prefix: Vec<u8>,
    prefix_done: bool,
}

/// The decoder's data: the body frame and one reader per level.
struct Openai {
    body: RequestBody,
    /// `Options.openai_reasoning_field`
    reasoning_key: Option<String>,
    /// the key of the member whose value is being read (a member reader's `key`)
    key: Vec<u8>,
    msg: MessageReader,
    call: ToolCallReader,
    part: PartReader,
    media: MediaReader,
}

/// The openai Chat Completions request decoder (`RequestDecoder`).
pub struct RequestDecoder {
    m: Machine<S>,
    d: Openai,
}

impl RequestDecoder {
    pub fn new(session: &Session) -> Self {
        RequestDecoder {
            m: Machine::starting(Read::State(S::Start)),
            d: Openai {
                body: RequestBody::new(fields::OPENAI_REQUIRED, true),
                reasoning_key: session.options.openai_reasoning_field.clone(),
                key: Vec::new(),
                msg: MessageReader::new(-1),
                call: ToolCallReader::default(),
                part: PartReader::default(),
                media: MediaReader { part: Part::ImageUrl, prefix: Vec::new(), prefix_done: true },
            },
        }
    }
}

impl Decode for RequestDecoder {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
             out: &mut dyn EventSink) -> Result<()> {
        let mut cx = Cx::new(path, session, out);
        self.m.feed(&mut self.d, token, offset, &mut cx)
    }

    fn flush(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let mut cx = Cx::outside(session, out);
        self.m.flush(&mut self.d, &mut cx)
    }

    fn at(&self) -> u64 {
        self.m.at
    }
}

fn lossy(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// A key as the `str` an extension's path or an attribute's name holds. A key
/// with an escaped lone surrogate (WTF-8, not UTF-8) cannot be one: canonical
/// paths and attribute names are `str` in the core (not ported; Python carries it).
fn key_text(key: &[u8]) -> Result<String> {
    String::from_utf8(key.to_vec()).map_err(|_| {
        Error::new(ErrorClass::Transcode,
                   "a key holding a lone surrogate in an extension path or attribute name is not ported yet")
    })
}

impl Openai {
    fn remember_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
    }

    // -- top level -----------------------------------------------------------

    /// `_top_field`: a body member that is neither messages nor tools.
    fn top_field(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let key = key_text(&self.key)?;
        if key == "reasoning_effort" && raw != b"null" {
            let known = matches!(cx.data(raw, offset)?, Value::Str(s) if EFFORTS.iter().any(|e| e.as_bytes() == s));
            if !known {
                let raw = String::from_utf8_lossy(raw);
                return Err(cx.error(format!("unknown reasoning_effort {raw} (one of {})", EFFORTS.join(", ")), offset));
            }
        }
        if raw == b"null" {
            // an explicit null means the same as absent ("tool_choice": null)
            return cx.extension(DIALECT, format!("$.{key}"), raw, None, true);
        }
        match controls::decode(&key, raw)? {
            Some(control) => cx.emit(Event::Control(control)),
            None => cx.extension(DIALECT, format!("$.{key}"), raw, None, false),
        }
    }

    /// `_tool`: one element of `tools` / `functions`.
    fn tool(&mut self, tool: Value, legacy: bool, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        if !matches!(tool, Value::Object(_)) {
            return Err(cx.error("expected an object for a tool", offset));
        }
        let block = match controls::tool_to_canonical(&tool, legacy) {
            None => {
                let mut payload = Vec::new();
                dumps(&tool, &mut payload);
                let attrs = vec![
                    (Cow::Borrowed("dialect"), Cow::Owned(str_json(DIALECT))),
                    (Cow::Borrowed("where"), Cow::Owned(str_json("tool"))),
                ];
                Block { section: Section::Unknown, message: REQUEST_LEVEL, payload: Cow::Owned(payload), init: true,
                        fin: true, attrs: Some(attrs) }
            }
            Some((attrs, schema)) => {
                let mut payload = Vec::new();
                if let Some(schema) = schema {
                    dumps(schema, &mut payload);
                }
                Block { section: Section::ToolDefinition, message: REQUEST_LEVEL, payload: Cow::Owned(payload),
                        init: true, fin: true, attrs: crate::decoding::block_attrs(&attrs) }
            }
        };
        cx.emit(Event::Block(block))
    }

    // -- messages --------------------------------------------------------------

    /// `MessageReader.on_key`.
    fn message_key(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let key = match token {
            Token::Key(key) => key,
            Token::ObjectEnd => return self.message_end(m, offset, cx),
            _ => return Err(internal("a value where a message key was due")),
        };
        let read = match key {
            b"role" => Read::Value(S::Role, None, ""),
            b"content" => Read::State(S::Content),
            b"tool_calls" => Read::State(S::ToolCalls),
            b"refusal" => Read::State(S::StringMember(Member::Refusal)),
            b"function_call" => Read::State(S::FunctionCall),
            b"tool_call_id" => Read::Value(S::ToolCallId, None, ""),
            _ if self.reasoning_key.as_deref().is_some_and(|r| r.as_bytes() == key) => {
                Read::State(S::StringMember(Member::Reasoning))
            }
            _ => {
                self.remember_key(key);
                Read::State(S::Extension)
            }
        };
        m.then(read);
        Ok(())
    }

    fn message_end(&mut self, m: &mut Machine<S>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        m.pop();
        let msg = &mut self.msg;
        msg.close_open(cx)?;
        if msg.base.role.is_none() {
            return Err(cx.error("message without role", offset));
        }
        if !msg.base.emitted {
            // e.g. {"role": "assistant", "content": null}: still a message
            let mut attrs = vec![(Cow::Borrowed("empty"), Cow::Borrowed(&b"true"[..]))];
            if msg.empty_parts {
                attrs.push((Cow::Borrowed("in_parts"), Cow::Borrowed(&b"true"[..])));
            }
            if let Some(id) = &msg.tool_call_id {
                if !msg.id_given {
                    // a result without content
                    attrs.push((Cow::Borrowed("tool_call_id"), Cow::Owned(id.clone())));
                }
            }
            let block = Block { section: Section::UserText, message: msg.index(), payload: Cow::Borrowed(&b""[..]),
                                init: true, fin: true, attrs: Some(attrs) };
            msg.emit(block, cx)?;
        }
        Ok(())
    }

    fn member_key(&self, member: Member) -> &str {
        match member {
            Member::Refusal => "refusal",
            Member::Reasoning => self.reasoning_key.as_deref().unwrap_or(""),
        }
    }

    /// `string_block`: a new block whose payload is the string value starting at `token`.
    fn string_block(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, section: Section,
                    attrs: Vec<Attr>, what: &str, cx: &mut Cx<'_>) -> Result<()> {
        self.msg.builder(section, attrs, cx)?;
        if !matches!(token, Token::String(_) | Token::StringOpen(_)) {
            return Err(cx.wrong_type(&token, &format!("a string for {what}"), offset));
        }
        m.read(Read::String(S::Text, ""));
        Ok(())
    }

    /// `_content`.
    fn content(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::Null => self.msg.null("content", cx),
            Token::ArrayStart => {
                self.msg.empty_parts = true;
                m.read(Read::Objects(S::Parts, "content"));
                Ok(())
            }
            _ => {
                let attrs = self.msg.text_attrs(Vec::new());
                self.string_block(m, token, offset, Section::UserText, attrs, "content", cx)
            }
        }
    }

    // -- tool calls ---------------------------------------------------------------

    /// A `ToolCallReader` begins: its block is the message's new one.
    fn tool_call(&mut self, legacy: bool, cx: &mut Cx<'_>) -> Result<()> {
        self.call.legacy = legacy;
        let attrs = if legacy { vec![(Cow::Borrowed("legacy"), b"true".to_vec())] } else { Vec::new() };
        self.msg.builder(Section::ToolCall, attrs, cx)
    }

    /// `ToolCallReader.on_key`.
    fn tool_call_key(&mut self, m: &mut Machine<S>, token: Token<'_>, cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::ObjectEnd => {
                m.pop();
                self.msg.finished(cx)
            }
            Token::Key(b"id") => {
                m.then(Read::Value(S::CallId, Some(STRING), "a tool call's id"));
                Ok(())
            }
            Token::Key(b"function") => {
                m.then(Read::State(S::CallFunction));
                Ok(())
            }
            Token::Key(b"type") => {
                m.then(Read::Value(S::CallType, None, ""));
                Ok(())
            }
            Token::Key(key) => {
                self.remember_key(key);
                m.then(Read::Raw(S::Extra, None, ""));
                Ok(())
            }
            _ => Err(internal("a value where a tool call key was due")),
        }
    }

    /// `ToolCallReader.on_function_key`.
    fn function_key(&mut self, m: &mut Machine<S>, token: Token<'_>, cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::ObjectEnd => {
                m.pop();
                if self.call.legacy {
                    return self.msg.finished(cx);
                }
                Ok(())
            }
            Token::Key(b"name") => {
                m.then(Read::Value(S::CallName, Some(STRING), "a tool call's name"));
                Ok(())
            }
            Token::Key(b"arguments") => {
                m.then(Read::String(S::Arguments, "arguments"));
                Ok(())
            }
            Token::Key(key) => {
                self.remember_key(key);
                m.then(Read::Raw(S::Extra, None, ""));
                Ok(())
            }
            _ => Err(internal("a value where a function key was due")),
        }
    }

    // -- content parts ---------------------------------------------------------------

    /// `PartReader.on_key`.
    fn part_key(&mut self, m: &mut Machine<S>, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let key = match token {
            Token::Key(key) => key,
            Token::ObjectEnd => {
                m.pop();
                return self.part_end(offset, cx);
            }
            _ => return Err(internal("a value where a part key was due")),
        };
        let part = &mut self.part;
        if key == b"type" {
            part.type_offset = offset;
            m.then(Read::Value(S::PartType, Some(STRING), "a content part's type"));
        } else if part.kind.is_none() || part.kind.as_deref() == Some(key) {
            match Part::of(key) {
                Some(payload) => {
                    if part.kind.is_none() {
                        part.kind = Some(key.to_vec());
                    }
                    m.then(Read::State(S::Payload(payload)));
                }
                None => self.raw_member(m, key),
            }
        } else if key == b"cache_control" && part.has_block {
            m.then(Read::Value(S::CacheControl, None, ""));
        } else {
            self.raw_member(m, key);
        }
        Ok(())
    }

    fn raw_member(&mut self, m: &mut Machine<S>, key: &[u8]) {
        self.remember_key(key);
        m.then(Read::Raw(S::RawMember, None, ""));
    }

    /// `_set_type`.
    fn part_type(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
        let Value::Str(part_type) = value else { return Err(internal("a part type that is not a string")) };
        if let Some(kind) = &self.part.kind {
            if *kind != part_type {
                return Err(cx.error(
                    format!("content part of type {} carries a {} payload", py_str_repr(&part_type), py_str_repr(kind)),
                    self.part.type_offset,
                ));
            }
        }
        self.part.kind = Some(part_type);
        Ok(())
    }

    /// `_payload(key)`: the payload member's first token.
    fn payload(&mut self, m: &mut Machine<S>, part: Part, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let in_parts = || vec![(Cow::Borrowed("in_parts"), b"true".to_vec())];
        match part {
            Part::Text => {
                let attrs = self.msg.text_attrs(in_parts());
                self.string_block(m, token, offset, Section::UserText, attrs, "text", cx)?;
            }
            Part::Refusal => self.string_block(m, token, offset, Section::AssistantRefusal, in_parts(), "refusal", cx)?,
            _ => {
                if !matches!(token, Token::ObjectStart) {
                    return Err(cx.wrong_type(&token, &format!("an object for {}", part.key()), offset));
                }
                self.msg.builder(part.media_section(), in_parts(), cx)?;
                self.media = MediaReader { part, prefix: std::mem::take(&mut self.media.prefix), prefix_done: part == Part::InputAudio };
                self.media.prefix.clear();
                m.push(Frame::State(S::Media));
            }
        }
        self.part.has_block = true;
        Ok(())
    }

    /// `PartReader._end`.
    fn part_end(&mut self, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let Some(kind) = self.part.kind.take() else {
            return Err(cx.error("content part without type", offset));
        };
        if Part::of(&kind).is_none() || !self.part.has_block {
            // Unknown part type (or a known type without its payload): carried raw.
            let mut raw = b"{\"type\":".to_vec();
            dumps_key(&kind, &mut raw);
            if !self.part.raw_parts.is_empty() {
                raw.push(b',');
                raw.extend_from_slice(&self.part.raw_parts);
            }
            raw.push(b'}');
            let mut attrs = vec![(Cow::Borrowed("dialect"), str_json(DIALECT)), (Cow::Borrowed("in_parts"), b"true".to_vec())];
            if let Some(role) = &self.msg.base.role {
                attrs.push((Cow::Borrowed("role"), str_json(role)));
            }
            self.msg.builder(Section::Unknown, attrs, cx)?;
            self.msg.fragment(&raw, true, cx)?;
            return self.msg.finished(cx);
        }
        if !self.part.raw_parts.is_empty() {
            // extra keys on a known part
            if self.part.colon_key {
                // request.py splits "key":raw at the first ':' and json.loads the key: a key
                // holding ':' raises JSONDecodeError there (a Python bug, reported)
                return Err(Error::new(ErrorClass::Transcode,
                    "a content part's extra key holding ':' is not ported yet (Python raises JSONDecodeError)"));
            }
            let members = std::mem::take(&mut self.part.raw_parts);
            add_extra(self.msg.current()?, &members)?;
        }
        Ok(())
    }

    // -- media ---------------------------------------------------------------------

    /// `MediaReader.on_key`.
    fn media_key(&mut self, m: &mut Machine<S>, token: Token<'_>, cx: &mut Cx<'_>) -> Result<()> {
        match token {
            Token::ObjectEnd => {
                m.pop();
                if !self.media.prefix_done && !self.media.prefix.is_empty() {
                    self.flush_prefix(true, cx)?;
                }
                self.msg.finished(cx)
            }
            Token::Key(key) if key == self.media.part.payload_key().as_bytes() => {
                m.then(Read::String(S::MediaPayload, self.media.part.payload_key()));
                Ok(())
            }
            Token::Key(key) => {
                self.remember_key(key);
                m.then(Read::Value(S::MediaAttr, None, ""));
                Ok(())
            }
            _ => Err(internal("a value where a media key was due")),
        }
    }

    /// `MediaReader._fragment`.
    fn media_fragment(&mut self, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
        if self.media.prefix_done {
            return self.msg.fragment(data, fin, cx);
        }
        self.media.prefix.extend_from_slice(data);
        let prefix = &self.media.prefix;
        if prefix.contains(&b',') || prefix.len() > DATA_URL_PREFIX_LIMIT || fin {
            self.flush_prefix(fin, cx)?;
        }
        Ok(())
    }

    /// `MediaReader._flush_prefix`.
    fn flush_prefix(&mut self, last: bool, cx: &mut Cx<'_>) -> Result<()> {
        let data = std::mem::take(&mut self.media.prefix);
        self.media.prefix_done = true;
        let builder = self.msg.current()?;
        if let Some(comma) = data.iter().position(|&b| b == b',') {
            let meta = decode_escaped(&data[..comma])?;
            if meta.starts_with(b"data:") && meta.ends_with(b";base64") {
                builder.set("source", str_json("base64"));
                let mut media_type = Vec::new();
                dumps_key(&meta[5..meta.len() - 7], &mut media_type);
                builder.set("media_type", media_type);
                builder.set("data_url", b"true".to_vec());
                return self.msg.fragment(&data[comma + 1..], last, cx);
            }
        }
        if self.media.part == Part::ImageUrl {
            builder.set("source", str_json("url"));
        } else {
            // file_data that is not a data URL: base64 as given, written back without a prefix
            builder.set("source", str_json("base64"));
            builder.set("data_url", b"false".to_vec());
        }
        self.msg.fragment(&data, last, cx)
    }
}

/// `canonical.decode_escaped`: the inside of a JSON string (escapes kept) decoded (WTF-8).
fn decode_escaped(escaped: &[u8]) -> Result<Vec<u8>> {
    if !escaped.contains(&b'\\') {
        return Ok(escaped.to_vec());
    }
    let mut quoted = Vec::with_capacity(escaped.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(escaped);
    quoted.push(b'"');
    match loads(&quoted)? {
        Value::Str(text) => Ok(text),
        _ => Err(internal("decode_escaped of a non-string")),
    }
}

/// `add_extra(block, key, raw)` for members already written as `"k":v,...`:
/// `openai_extra` holds the members' JSON text, spliced back by the openai encoder.
fn add_extra(block: &mut BlockBuilder, members: &[u8]) -> Result<()> {
    let existing = get_attr(&block.late, EXTRA_ATTR).or_else(|| get_attr(&block.attrs, EXTRA_ATTR));
    let mut text = match existing {
        Some(json) => match loads(json)? {
            Value::Str(s) if !s.is_empty() => {
                let mut s = s;
                s.push(b',');
                s
            }
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    text.extend_from_slice(members);
    let mut json = Vec::with_capacity(text.len() + 8);
    dumps_key(&text, &mut json);
    block.set(EXTRA_ATTR, json);
    Ok(())
}

/// `dumps(key) + b":" + raw`, after `,` when `out` holds members already.
fn push_member(out: &mut Vec<u8>, key: &[u8], raw: &[u8]) {
    if !out.is_empty() {
        out.push(b',');
    }
    dumps_key(key, out);
    out.push(b':');
    out.extend_from_slice(raw);
}

impl Dialect for Openai {
    type State = S;

    fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Start => self.body.start(m, S::Body, &token, offset, cx),
            S::Message => self.message_key(m, token, offset, cx),
            S::Content => self.content(m, token, offset, cx),
            S::StringMember(member) => {
                if token == Token::Null {
                    let key = self.member_key(member).to_string();
                    return self.msg.null(&key, cx);
                }
                let section = match member {
                    Member::Refusal => Section::AssistantRefusal,
                    Member::Reasoning => Section::AssistantReasoning,
                };
                let what = self.member_key(member).to_string();
                self.string_block(m, token, offset, section, Vec::new(), &what, cx)
            }
            S::Extension => {
                m.read(Read::Raw(S::ExtensionRaw { lossless: token == Token::Null }, None, ""));
                Ok(())
            }
            S::ToolCalls => {
                if token == Token::Null {
                    return self.msg.null("tool_calls", cx);
                }
                m.read(Read::Objects(S::ToolCallList, "tool_calls"));
                Ok(())
            }
            S::FunctionCall => match token {
                Token::Null => self.msg.null("function_call", cx),
                Token::ObjectStart => {
                    self.tool_call(true, cx)?;
                    m.push(Frame::State(S::FunctionKeys));
                    Ok(())
                }
                _ => Err(cx.wrong_type(&token, "an object for function_call", offset)),
            },
            S::ToolCall => self.tool_call_key(m, token, cx),
            S::CallFunction => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for function", offset));
                }
                m.push(Frame::State(S::FunctionKeys));
                Ok(())
            }
            S::FunctionKeys => self.function_key(m, token, cx),
            S::Part => self.part_key(m, token, offset, cx),
            S::Payload(part) => self.payload(m, part, token, offset, cx),
            S::Media => self.media_key(m, token, cx),
            _ => Err(internal(&format!("state {s:?} takes no token"))),
        }
    }

    fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, offset: u64,
              cx: &mut Cx<'_>) -> Result<()> {
        if s != S::Body {
            return Err(internal("a member outside the body"));
        }
        // `_top_member`
        self.body.seen(key);
        if let Some(expect) = fields::field(fields::OPENAI, key) {
            cx.expect(&token, offset, Some(expect), &lossy(key))?;
        }
        match key {
            b"messages" => m.read(Read::Objects(S::Messages, "messages")),
            b"tools" => m.read(Read::Elements(S::Tools { legacy: false }, "tools")),
            b"functions" => m.read(Read::Elements(S::Tools { legacy: true }, "functions")),
            _ => {
                self.remember_key(key);
                m.read(Read::Raw(S::TopField, None, ""));
            }
        }
        Ok(())
    }

    fn element(&mut self, m: &mut Machine<S>, s: S, _token: Token<'_>, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Tools { legacy } => {
                m.read(Read::Value(S::Tool { legacy }, None, ""));
                Ok(())
            }
            _ => Err(internal("an element outside tools")),
        }
    }

    fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Messages => {
                // `_message`: a new MessageReader
                self.msg = MessageReader::new(self.body.next_message());
                m.push(Frame::State(S::Message));
            }
            S::ToolCallList => {
                self.tool_call(false, cx)?;
                m.push(Frame::State(S::ToolCall));
            }
            S::Parts => {
                self.part.kind = None;
                self.part.has_block = false;
                self.part.raw_parts.clear();
                self.part.colon_key = false;
                m.push(Frame::State(S::Part));
            }
            _ => return Err(internal("an object in an unknown list")),
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
            _ => Ok(()),
        }
    }

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::TopField => self.top_field(raw, offset, cx),
            S::ExtensionRaw { lossless } => {
                let index = self.msg.index();
                let path = format!("$.messages[{index}].{}", key_text(&self.key)?);
                cx.extension(DIALECT, path, raw, Some(index), lossless)
            }
            S::Extra => {
                let mut member = Vec::with_capacity(self.key.len() + raw.len() + 3);
                push_member(&mut member, &self.key, raw);
                add_extra(self.msg.current()?, &member)
            }
            S::RawMember => {
                let mut key_json = Vec::new();
                dumps_key(&self.key, &mut key_json);
                self.part.colon_key |= key_json.contains(&b':');
                push_member(&mut self.part.raw_parts, &self.key, raw);
                Ok(())
            }
            _ => Err(internal(&format!("state {s:?} takes no raw value"))),
        }
    }

    fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Tool { legacy } => self.tool(value, legacy, offset, cx),
            S::Role => self.msg.set_role(value, offset, cx),
            S::ToolCallId => {
                if !matches!(value, Value::Str(_)) {
                    return Err(cx.error("expected a string for tool_call_id", offset));
                }
                let mut json = Vec::new();
                dumps(&value, &mut json);
                let msg = &mut self.msg;
                if let Some(open) = &mut msg.open {
                    if !msg.id_given {
                        // after the content: a late attribute
                        open.set("tool_call_id", json.clone());
                        msg.id_given = true;
                    }
                }
                msg.tool_call_id = Some(json);
                Ok(())
            }
            S::CallId | S::CallName | S::CacheControl | S::MediaAttr => {
                let mut json = Vec::new();
                dumps(&value, &mut json);
                let name: Cow<'static, str> = match s {
                    S::CallId => Cow::Borrowed("id"),
                    S::CallName => Cow::Borrowed("name"),
                    S::CacheControl => Cow::Borrowed("cache_control"),
                    _ => Cow::Owned(key_text(&self.key)?),
                };
                self.msg.current()?.set(name, json);
                Ok(())
            }
            S::CallType => {
                if !matches!(&value, Value::Str(s) if s == b"function") {
                    let mut json = Vec::new();
                    dumps(&value, &mut json);
                    self.msg.current()?.set("type", json);
                }
                Ok(())
            }
            S::PartType => self.part_type(value, cx),
            _ => Err(internal(&format!("state {s:?} takes no value"))),
        }
    }

    fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool,
                cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Text => {
                self.msg.fragment(data, fin, cx)?;
                if fin {
                    self.msg.finished(cx)?;
                }
                Ok(())
            }
            S::Arguments => self.msg.fragment(data, fin, cx),
            S::MediaPayload => self.media_fragment(data, fin, cx),
            _ => Err(internal(&format!("state {s:?} takes no fragment"))),
        }
    }
}

// -- encoder (helper E) -----------------------------------------------------------------
