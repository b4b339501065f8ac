//! ollama requests (`src/interlingua/dialects/ollama/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
//!
//! The decisions (message index, roles, images, tool-call ids and the matching of
//! results to calls, arguments as escaped text ...) are the Python module's
//! docstring; this is the same machine with its states named.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use super::controls;
use crate::canonical::{escape_raw_json, Block, Control, Event, Section, REQUEST_LEVEL};
use crate::compact::{Data, Key, Raw};
use crate::decoding::{
    carries_nothing, get_attr, index_at, member_path, set_attr, Attr, BlockBuilder, Counted, Cx, Dialect, Frame, Gate, Machine, MachineDecoder, MessageBase,
    Read, RequestBody, OPT_STRING,
};
use crate::dialects::fields::{self, field, required};
use crate::encoding::{role_json, TextCallOrder};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{Frames, Token};
use crate::images::{keep_head, sniff_media_type, IMAGE_TYPES, SNIFF_BYTES};
use crate::session::Session;
use crate::losses::CALL_INDEX;
use crate::value::{dumps_str, str_json, Value};

pub const DIALECT: &str = "ollama";
pub const GENERATED_ID_PREFIX: &str = "call_ollama_";
const EXTRA_ATTR: &str = "ollama_extra";
const CALL_EXTRA_ATTR: &str = "ollama_call_extra";
/// a tool call's `type` member (internal: carried to an ollama target, never a loss)
const CALL_TYPE_ATTR: &str = "ollama_call_type";
/// the reorder rule of a tool call's fragments held until its `id` (or its end)
const CALL_BEFORE_ID: &str = "ollama:call-before-id";

/// `ROLE_TEXT_SECTION`: the section of a role's text (`Unknown` for other roles).
fn role_text_section(role: &[u8]) -> Section {
    match role {
        b"system" => Section::SystemInstruction,
        b"user" => Section::UserText,
        b"assistant" => Section::AssistantText,
        b"tool" => Section::ToolResult,
        _ => Section::Unknown,
    }
}

/// `SECTION_ROLE`: the role a section naturally belongs to (the `role` attr marks exceptions).
pub fn section_role(section: Section) -> Option<&'static str> {
    Some(match section {
        Section::SystemInstruction => "system",
        Section::UserText | Section::UserImage => "user",
        Section::UserDocument => "user", // (only an image file has a place: `place`)
        Section::AssistantText | Section::AssistantRefusal | Section::AssistantReasoning | Section::ToolCall => {
            "assistant"
        }
        Section::ToolResult => "tool",
        _ => return None,
    })
}

/// The id of the `position`-th tool call of ollama message `message` (deterministic).
pub fn generated_call_id(message: i64, position: i64) -> String {
    format!("{GENERATED_ID_PREFIX}{message}_{position}")
}

/// `_carried_id`: a tool-call id the ollama output carries (any the source gave),
/// not one the ollama decoder generated.
pub fn carried_id(call_id: &[u8]) -> Option<&[u8]> {
    (!call_id.is_empty() && !call_id.starts_with(GENERATED_ID_PREFIX.as_bytes())).then_some(call_id)
}

// -- decoder (helper L) -----------------------------------------------------------------

/// The decoder's handlers (`decoding::Machine` states): which reader gets a token
/// or a value; the data they work on is in `Ollama`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum S {
    /// the body's first token (`_body`)
    Start,
    /// the body's members (`_top_member`)
    Body,
    /// a top-level field read whole (`_top_field`)
    TopField,
    /// `options` members (`_option`) and one read whole (`_option_field`)
    Options,
    OptionField,
    /// `tools[]` elements, one read as data (`_tool`)
    Tools,
    Tool,
    /// `messages[]` (`_message`), a message's keys (`MessageReader.on_key`)
    Messages,
    Message,
    Role,
    Content,
    Thinking,
    Images,
    Image,
    ToolCalls,
    ToolName,
    ToolCallId,
    /// a message member ollama has no canonical field for (`_extension`)
    MessageField,
    /// a tool call's keys (`ToolCallReader.on_key`), its `function` and its members
    ToolCall,
    CallId,
    CallFunction,
    Function,
    Name,
    Index,
    Arguments,
    /// a call member / a function member kept as JSON text (`_extra`)
    CallExtra,
    /// a tool call's `type`, read raw (internal: carried to an ollama target)
    CallType,
    FunctionExtra,
}

/// A tool call of the last batch: `[id, name, answered]` of `pending_calls`.
struct PendingCall {
    id: Vec<u8>,
    name: Option<Value>,
    answered: bool,
}

/// The message being read (`MessageReader`).
struct MessageReader {
    base: MessageBase,
    /// the block being read, or (finished) the open one: closed when the next one
    /// starts or the message ends, so late attributes ride on its last fragment
    block: Option<BlockBuilder>,
    block_finished: bool,
    /// the block is the message's `content` (`self._open is self._content`)
    block_is_content: bool,
    /// a `content` member began (`self._content is not None`)
    has_content: bool,
    tool_name: Option<Vec<u8>>,
    tool_name_raw: Option<Vec<u8>>,
    tool_call_id: Option<Vec<u8>>,
    tool_call_id_raw: Option<Vec<u8>>,
    call_position: i64,
    image_count: usize,
    /// the image being read: its first fragments, held until `image_head` (what they
    /// hold of its first characters, unescaped: `images::keep_head`) can be sniffed
    image_prefix: Option<Vec<u8>>,
    image_head: Vec<u8>,
    /// the tool call being read: its place in `new_calls`, whether it has arguments
    call: Option<(usize, bool)>,
    /// `ToolCallReader._held`: the call's fragments waiting for its id (or its end), rule
    /// `ollama:call-before-id`; `None` once the id is known (and with reordering refused)
    call_held: Option<Gate>,
    /// `_result`: the content of a message that may be a tool result, kept open after another
    /// block began (Go writes `images` before `tool_name` / `tool_call_id`; sorted keys put
    /// them before `role`): its link to the call rides on its last fragment
    result: Option<BlockBuilder>,
    /// `_after_result`: the blocks that began meanwhile, held
    after_result: Option<Gate>,
}

impl MessageReader {
    fn new(index: i64) -> Self {
        MessageReader {
            base: MessageBase::new(index, "ollama:content-before-role", None),
            block: None,
            block_finished: false,
            block_is_content: false,
            has_content: false,
            tool_name: None,
            tool_name_raw: None,
            tool_call_id: None,
            tool_call_id_raw: None,
            call_position: 0,
            image_count: 0,
            image_prefix: None,
            image_head: Vec::new(),
            call: None,
            call_held: None,
            result: None,
            after_result: None,
        }
    }

    fn emit(&mut self, block: Block<'_>, cx: &mut Cx<'_>) -> Result<()> {
        if let Some(held) = self.call_held.as_mut() {
            // `ToolCallReader._hold` (the builder's emit while the call waits for its id)
            return held.hold(Event::Block(block), cx.session);
        }
        self.emit_settled(block, cx)
    }

    /// Gives back what a builder counted in one of this message's gates (if still shut).
    fn uncount(&mut self, counted: Counted, session: &mut Session) {
        let gates = [self.call_held.as_mut(), self.after_result.as_mut()];
        if !gates.into_iter().flatten().any(|gate| gate.uncount(counted, session)) {
            self.base.uncount(counted, session);
        }
    }

    /// `BlockBuilder.recount` for the block being read: its kept-back bytes count in the
    /// gate its events would wait in now (`waiting`: the call's, the result's, the role's).
    fn recount_block(&mut self, session: &mut Session) -> Result<()> {
        let Some(mut builder) = self.block.take() else { return Ok(()) };
        builder.uncount(|counted| self.uncount(counted, session));
        let waiting = match (self.call_held.as_mut(), self.after_result.as_mut()) {
            (Some(gate), _) | (None, Some(gate)) => Some(gate),
            (None, None) => self.base.waiting(),
        };
        let counted = match waiting {
            Some(gate) => builder.count_in(gate, session),
            None => Ok(()),
        };
        self.block = Some(builder);
        counted
    }

    /// `MessageReader.emit`
    fn emit_settled(&mut self, block: Block<'_>, cx: &mut Cx<'_>) -> Result<()> {
        if let Some(held) = self.after_result.as_mut() {
            self.base.emitted = true;
            return held.hold(Event::Block(block), cx.session);
        }
        self.base.emit(block, cx, resolve)
    }

    /// `_match_result`: link a tool message to the call it answers, by its
    /// `tool_call_id` when given (the current API), else by order and `tool_name`.
    fn match_result(&self, builder: &mut BlockBuilder, pending: &mut [PendingCall], waiting: &mut [PendingCall]) {
        let name = self.tool_name.as_deref();
        let call_id = self.tool_call_id.as_deref();
        // (a given id may name a waiting call: it is answered, not linked again by order)
        let waiting: &mut [PendingCall] = if call_id.is_some() { waiting } else { &mut [] };
        for call in pending.iter_mut().chain(waiting.iter_mut()) {
            let matches = match call_id {
                Some(id) => call.id == id,
                None => name.is_none_or(|n| matches!(&call.name, Some(Value::Str(s)) if s == n)),
            };
            if !call.answered && matches {
                call.answered = true;
                if call_id.is_none() {
                    // linked by order and name
                    builder.set("tool_call_id", str_json(&call.id));
                    if carried_id(&call.id).is_some() {
                        // a given call id an ollama target must not add here
                        builder.set("ollama_no_tool_call_id", TRUE.to_vec());
                    }
                }
                if name.is_none() {
                    // nor is a name taken from the call
                    builder.set("ollama_no_tool_name", TRUE.to_vec());
                }
                break;
            }
        }
        if let Some(id) = call_id {
            builder.set("tool_call_id", str_json(id));
        }
        if let Some(name) = name {
            builder.set("name", str_json(name));
        }
    }
}

const TRUE: &[u8] = b"true";

fn attr(name: &'static str, json: &[u8]) -> Attr {
    (Cow::Borrowed(name), Cow::Owned(json.to_vec()))
}

/// `MessageReader._resolve`: content is built as provisional `user-text`; it gets
/// the role's section, and blocks whose natural role is not the message's are marked.
fn resolve<'a>(role: &str, mut block: Block<'a>) -> Block<'a> {
    let add = |block: &mut Block<'a>, name: &'static str, json: Cow<'static, [u8]>| {
        let attrs = block.attrs.get_or_insert_with(Vec::new);
        match attrs.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = json,
            None => attrs.push((Cow::Borrowed(name), json)),
        }
    };
    if block.section == Section::UserText {
        block.section = role_text_section(role.as_bytes());
        if block.section == Section::Unknown {
            // the raw JSON of the content string
            if block.init || block.fin {
                let mut payload = Vec::with_capacity(block.payload.len() + 2);
                if block.init {
                    payload.push(b'"');
                }
                payload.extend_from_slice(&block.payload);
                if block.fin {
                    payload.push(b'"');
                }
                block.payload = Cow::Owned(payload);
            }
            if block.init {
                add(&mut block, "role", role_json(role));
                add(&mut block, "dialect", Cow::Borrowed(b"\"ollama\""));
                add(&mut block, "key", Cow::Borrowed(b"\"content\""));
            }
        } else if block.init && block.section == Section::UserText {
            add(&mut block, "in_parts", Cow::Borrowed(TRUE));
        }
        if block.attrs.as_ref().is_some_and(Vec::is_empty) {
            block.attrs = None;
        }
        return block;
    }
    if block.init && section_role(block.section).is_some_and(|natural| natural != role) {
        add(&mut block, "role", role_json(role));
    }
    block
}

/// `RequestDecoder`: an ollama `/api/chat` body -> canonical events.
pub(crate) type RequestDecoder = MachineDecoder<Ollama>;

/// The decoder's data (`RequestDecoder`'s attributes and the message being read).
pub(crate) struct Ollama {
    body: RequestBody,
    stream_seen: bool,
    options_empty: bool,
    tools_empty: bool,
    /// the key of the member being read whole (its callback names it)
    key: Vec<u8>,
    /// the last assistant message's tool calls
    pending_calls: Vec<PendingCall>,
    /// `new_calls`: the calls of the message being read, pending from its end, so a tool
    /// message's own result answers the calls before it, not its own
    new_calls: Option<Vec<PendingCall>>,
    /// `waiting_calls`: the calls of a run's tool messages while the batch before them is not
    /// all answered: pending once it is, or once an assistant message (or one with calls of its
    /// own) comes
    waiting_calls: Vec<PendingCall>,
    msg: Option<MessageReader>,
    scratch: Vec<u8>,
}

impl RequestDecoder {
    pub fn new(_session: &Session) -> Self {
        RequestDecoder {
            m: Machine::starting(Read::State(S::Start)),
            d: Ollama {
                body: RequestBody::new(required(DIALECT), true),
                stream_seen: false,
                options_empty: false,
                tools_empty: false,
                key: Vec::new(),
                pending_calls: Vec::new(),
                new_calls: None,
                waiting_calls: Vec::new(),
                msg: None,
                scratch: Vec::new(),
            },
        }
    }
}

impl Dialect for Ollama {
    type State = S;

    fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Start => self.body.start(m, S::Body, &token, offset, cx),
            S::Message => match token {
                Token::Key(key) => {
                    m.then(match key {
                        b"role" => Read::Value(S::Role, None, ""),
                        b"content" => Read::State(S::Content),
                        b"thinking" => Read::State(S::Thinking),
                        b"images" => Read::State(S::Images),
                        b"tool_calls" => Read::State(S::ToolCalls),
                        b"tool_name" => Read::Raw(S::ToolName, Some(OPT_STRING), "tool_name"),
                        b"tool_call_id" => Read::Raw(S::ToolCallId, Some(OPT_STRING), "tool_call_id"),
                        key => {
                            self.set_key(key);
                            Read::Raw(S::MessageField, None, "")
                        }
                    });
                    Ok(())
                }
                _ => {
                    m.pop(); // the message's closing brace
                    self.message_end(offset, cx)
                }
            },
            S::Content | S::Thinking => {
                let (key, section) = if s == S::Content {
                    ("content", Section::UserText)
                } else {
                    ("thinking", Section::AssistantReasoning)
                };
                if token == Token::Null {
                    return self.null_member(key, cx);
                }
                self.builder(section, Vec::new(), s == S::Content, cx)?;
                m.read(Read::String(s, key));
                Ok(())
            }
            S::Images => {
                if token == Token::Null {
                    return self.null_member("images", cx);
                }
                self.msg()?.image_count = 0;
                m.read(Read::Elements(S::Images, "images"));
                Ok(())
            }
            S::ToolCalls => {
                if token == Token::Null {
                    return self.null_member("tool_calls", cx);
                }
                self.new_calls = Some(Vec::new()); // pending from the message's end (`message_end`)
                m.read(Read::Objects(S::ToolCalls, "tool_calls"));
                Ok(())
            }
            S::ToolCall => match token {
                Token::Key(key) => {
                    m.then(match key {
                        b"function" => Read::State(S::CallFunction),
                        b"id" => Read::Value(S::CallId, None, ""),
                        b"type" => {
                            // ("function", where a client writes it: carried to an ollama target,
                            // nothing to another, which writes its own)
                            self.set_key(key);
                            Read::Raw(S::CallType, None, "")
                        }
                        key => {
                            // carried to an ollama target; another records it (not internal)
                            self.set_key(key);
                            Read::Raw(S::CallExtra, None, "")
                        }
                    });
                    Ok(())
                }
                _ => {
                    m.pop();
                    self.call_end(cx)
                }
            },
            S::CallFunction => {
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for function", offset));
                }
                m.push(Frame::State(S::Function));
                Ok(())
            }
            S::Function => match token {
                Token::Key(key) => {
                    m.then(match key {
                        b"name" => Read::Value(S::Name, Some(OPT_STRING), "a tool call's name"),
                        b"arguments" => Read::State(S::Arguments),
                        b"index" => Read::Value(S::Index, None, ""),
                        key => {
                            self.set_key(key);
                            Read::Raw(S::FunctionExtra, None, "")
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
                if token != Token::ObjectStart {
                    return Err(cx.wrong_type(&token, "an object for arguments", offset));
                }
                if let Some((_, has_arguments)) = self.msg()?.call.as_mut() {
                    *has_arguments = true;
                }
                m.read(Read::StreamRaw(S::Arguments));
                Ok(())
            }
            s => Err(internal(s, "token")),
        }
    }

    fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, offset: u64, cx: &mut Cx<'_>)
              -> Result<()> {
        match s {
            S::Body => {
                self.body.seen(key);
                cx.expect(&token, offset, field(fields::OLLAMA, key), &String::from_utf8_lossy(key))?;
                match key {
                    b"messages" => m.read(Read::Objects(S::Messages, "messages")),
                    b"tools" if token == Token::Null => return cx.extension(DIALECT, "$.tools", b"null", None, true),
                    b"tools" => {
                        self.tools_empty = true;
                        m.read(Read::Elements(S::Tools, "tools"));
                    }
                    b"options" if token == Token::Null => {
                        return cx.extension(DIALECT, "$.options", b"null", None, true)
                    }
                    b"options" => {
                        self.options_empty = true;
                        m.read(Read::Members(S::Options, "options"));
                    }
                    key => {
                        self.set_key(key);
                        m.read(Read::Raw(S::TopField, None, ""));
                    }
                }
                Ok(())
            }
            S::Options => {
                let what = format!("options.{}", String::from_utf8_lossy(key));
                cx.expect(&token, offset, field(fields::OLLAMA_OPTIONS, key), &what)?;
                self.options_empty = false;
                self.set_key(key);
                m.read(Read::Raw(S::OptionField, None, ""));
                Ok(())
            }
            s => Err(internal(s, "member")),
        }
    }

    fn element(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Tools => {
                // a tool definition is small: read it whole and map it (an object as text,
                // in place when canonical: `tool_text`)
                self.tools_empty = false;
                m.read(if token == Token::ObjectStart { Read::Raw(S::Tool, None, "") } else { Read::Value(S::Tool, None, "") });
                Ok(())
            }
            S::Images => {
                // `ImageReader`: its first fragments are held until they hold 16 characters
                // (unescaped) to sniff the type
                self.msg()?.image_count += 1;
                self.builder(Section::UserImage, vec![attr("source", b"\"base64\"")], false, cx)?;
                let msg = self.msg()?;
                msg.image_prefix = Some(Vec::new());
                msg.image_head.clear();
                m.read(Read::String(S::Image, "an image (base64)"));
                Ok(())
            }
            s => Err(internal(s, "element")),
        }
    }

    fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Messages => {
                self.msg = Some(MessageReader::new(self.body.next_message()));
                m.push(Frame::State(S::Message));
                Ok(())
            }
            S::ToolCalls => {
                // `ToolCallReader`: the block begins with the call, its generated id
                let msg = self.msg()?;
                let call_id = generated_call_id(msg.base.index, msg.call_position);
                msg.call_position += 1;
                self.builder(Section::ToolCall, vec![attr("id", &str_json(call_id.as_bytes()))], false, cx)?;
                let calls = self.new_calls.get_or_insert_with(Vec::new);
                calls.push(PendingCall { id: call_id.into_bytes(), name: None, answered: false });
                let call = calls.len() - 1;
                let refuse = cx.session.reorder.refuse;
                let msg = self.msg()?;
                msg.call = Some((call, false));
                // the call's fragments wait for its id (`ToolCallReader`): not with reordering refused
                msg.call_held = if refuse { None } else { Some(Gate::new(CALL_BEFORE_ID)) };
                m.push(Frame::State(S::ToolCall));
                Ok(())
            }
            s => Err(internal(s, "object")),
        }
    }

    fn end(&mut self, _m: &mut Machine<S>, s: S, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Body => {
                self.body.end(offset, cx)?;
                if !self.stream_seen {
                    // ollama streams by default: the implied stream control
                    cx.emit(Event::Control(Control {
                        name: Cow::Borrowed("stream"),
                        value: Cow::Borrowed(TRUE),
                        dialect: Some(Cow::Borrowed(DIALECT)),
                        key: None,
                        raw: None,
                    }))?;
                }
                self.body.finish(cx)
            }
            S::Options if self.options_empty => {
                // keep "options": {} for the round trip
                cx.extension(DIALECT, "$.options", b"{}", None, true)
            }
            S::Tools if self.tools_empty => cx.extension(DIALECT, "$.tools", b"[]", None, true),
            S::Messages => self.body.messages_end(cx),
            S::Images => {
                let msg = self.msg()?;
                if msg.image_count == 0 {
                    let index = msg.base.index;
                    return cx.extension(DIALECT, format!("$.messages[{index}].images"), b"[]", Some(index), true);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Tool => self.tool_text(raw, offset, cx),
            S::TopField => {
                let absent = fields::sets_nothing(DIALECT, &self.key, raw)?; // ("stream": null streams: ollama's default)
                let control = if absent { None } else { controls::decode(&self.key, raw)? };
                let Some(control) = control else {
                    return cx.extension(DIALECT, member_path(format_args!("$."), &self.key), raw, None, absent);
                };
                self.stream_seen |= self.key == b"stream";
                let control = cx.checked(control, raw, offset)?;
                cx.emit(Event::Control(control))
            }
            S::OptionField => {
                let absent = fields::sets_nothing(DIALECT, &self.key, raw)?; // (null: absent)
                let control = if absent { None } else { controls::decode_option(&self.key, raw)? };
                let Some(control) = control else {
                    return cx.extension(DIALECT, member_path(format_args!("$.options."), &self.key), raw, None, absent);
                };
                let control = cx.checked(control, raw, offset)?;
                cx.emit(Event::Control(control))
            }
            S::MessageField => {
                let index = self.msg()?.base.index;
                let path = member_path(format_args!("$.messages[{index}]."), &self.key);
                cx.extension(DIALECT, path, raw, Some(index), carries_nothing(raw))
            }
            S::ToolName => {
                let name = cx.data(raw, offset)?; // (a lone surrogate: an error at the value)
                let msg = self.msg()?;
                msg.tool_name_raw = Some(raw.to_vec());
                msg.tool_name = match name {
                    Value::Str(s) => Some(s),
                    _ => None,
                };
                Ok(())
            }
            S::ToolCallId => {
                let call_id = cx.data(raw, offset)?;
                let msg = self.msg()?;
                msg.tool_call_id_raw = Some(raw.to_vec());
                msg.tool_call_id = match call_id {
                    Value::Str(s) if !s.is_empty() => Some(s),
                    _ => None,
                };
                Ok(())
            }
            S::CallExtra => self.call_extra(CALL_EXTRA_ATTR, raw),
            S::CallType => self.call_extra(CALL_TYPE_ATTR, raw),
            S::FunctionExtra => self.call_extra(EXTRA_ATTR, raw),
            s => Err(internal(s, "raw")),
        }
    }

    fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Tool => self.tool(&value, None, offset, cx),
            S::Role => {
                let msg = self.msg()?;
                msg.base.set_role(value, offset, cx, resolve)?;
                if msg.base.role.as_deref() != Some("tool") {
                    self.close_result(cx)?;
                }
                Ok(())
            }
            S::CallId => {
                // the current API's call id: it replaces the generated one on the first
                // fragment (not out yet: the call waits for its id, `ToolCallReader`)
                let id = match value {
                    Value::Str(s) if !s.is_empty() => s,
                    _ => return Err(Error::new(ErrorClass::Schema, "tool call id is not a non-empty string")),
                };
                let json = str_json(&id);
                let refuse = cx.session.reorder.refuse;
                let builder = self.builder_mut()?;
                if builder.begun && refuse {
                    // the call is out (source order) with the generated id
                    return Err(cx.session.reorder.refused(CALL_BEFORE_ID));
                }
                set_attr(&mut builder.attrs, Cow::Borrowed("id"), json);
                let call = self.call_index()?;
                self.new_call(call)?.id = id;
                self.settle_call(cx)
            }
            S::Name => {
                let json = value.to_json();
                let call = self.call_index()?;
                self.new_call(call)?.name = Some(value);
                self.builder_mut()?.set("name", json);
                Ok(())
            }
            S::Index => {
                // at the call's position it says nothing (`losses::CALL_INDEX`)
                let position = usize::try_from(self.msg()?.call_position - 1).map_err(|_| internal(s, "position"))?;
                if index_at(&value, position) {
                    self.builder_mut()?.set(CALL_INDEX, position.to_string().into_bytes());
                } else {
                    let json = value.to_json();
                    self.builder_mut()?.set("index", json);
                }
                Ok(())
            }
            s => Err(internal(s, "value")),
        }
    }

    fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool, cx: &mut Cx<'_>)
                -> Result<()> {
        // (the machine joins a fragment the tokenizer completed from a cut escape with the
        // next one of its feed: decoding.rs `HeldFragment`)
        self.text_fragment(s, data, fin, cx)
    }
}

impl Ollama {
    /// A string fragment of the block being read.
    fn text_fragment(&mut self, s: S, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
        match s {
            S::Content | S::Thinking => {
                self.block_fragment(data, fin, cx)?;
                if fin {
                    self.finished()?;
                }
                Ok(())
            }
            S::Image => self.image_fragment(data, fin, cx),
            S::Arguments => {
                // the arguments (compact JSON) as the canonical escaped text
                let mut escaped = std::mem::take(&mut self.scratch);
                escaped.clear();
                escape_raw_json(data, &mut escaped);
                let result = self.block_fragment(&escaped, fin, cx);
                self.scratch = escaped;
                result
            }
            s => Err(internal(s, "fragment")),
        }
    }

    fn set_key(&mut self, key: &[u8]) {
        self.key.clear();
        self.key.extend_from_slice(key);
    }

    fn msg(&mut self) -> Result<&mut MessageReader> {
        self.msg.as_mut().ok_or_else(|| internal(S::Message, "a message"))
    }

    fn builder_mut(&mut self) -> Result<&mut BlockBuilder> {
        self.msg()?.block.as_mut().ok_or_else(|| internal(S::Message, "a block"))
    }

    fn call_index(&mut self) -> Result<usize> {
        let count = self.new_calls.as_ref().map_or(0, Vec::len);
        match self.msg()?.call {
            Some((call, _)) if call < count => Ok(call),
            _ => Err(internal(S::ToolCall, "a tool call")),
        }
    }

    fn new_call(&mut self, call: usize) -> Result<&mut PendingCall> {
        self.new_calls.as_mut().and_then(|calls| calls.get_mut(call)).ok_or_else(|| internal(S::ToolCall, "a tool call"))
    }

    /// `_tool` of a tool object's text: read in place when canonical (compact.rs), else parsed.
    fn tool_text(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        match Raw::canonical_with_members(raw) {
            Some((tool, members)) => self.tool(tool, Some(members), offset, cx),
            None => {
                let tool = cx.data(raw, offset)?;
                self.tool(&tool, None, offset, cx)
            }
        }
    }

    /// `_tool`: a tool definition read whole (`members`: its members, when read already).
    fn tool<'a, D: Data<'a>>(&mut self, tool: D, members: Option<Vec<(Key<'a>, D)>>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let path = self.body.next_element_path("tools");
        if !tool.is_object() {
            return Err(cx.error("expected an object for a tool", offset));
        }
        cx.refuse_overflow(&tool.json(), offset)?;
        let block = match controls::tool_to_canonical(tool, members) {
            None => Block {
                section: Section::Unknown,
                message: REQUEST_LEVEL,
                payload: tool.json(),
                init: true,
                fin: true,
                attrs: Some(vec![
                    (Cow::Borrowed("dialect"), Cow::Borrowed(b"\"ollama\"")),
                    (Cow::Borrowed("where"), Cow::Borrowed(b"\"tool\"")),
                ]),
            },
            Some((mut attrs, schema)) => {
                cx.check_tool_attrs(&mut attrs, &format!("{path}.function"), offset)?;
                attrs.push((Cow::Borrowed("path"), Cow::Owned(str_json(&path))));
                Block {
                    section: Section::ToolDefinition,
                    message: REQUEST_LEVEL,
                    payload: schema.map_or(Cow::Borrowed(&b""[..]), Data::json),
                    init: true,
                    fin: true,
                    attrs: Some(attrs),
                }
            }
        };
        cx.emit(Event::Block(block))
    }

    /// `MessageReader.builder`: the open block is closed, a new one begins.
    fn builder(&mut self, section: Section, attrs: Vec<Attr>, is_content: bool, cx: &mut Cx<'_>) -> Result<()> {
        let msg = self.msg()?;
        if msg.block_finished && msg.block_is_content && matches!(msg.base.role.as_deref(), None | Some("tool")) {
            // `_keep_result_open`: the content stays open (to the message's end, or its
            // role if that is not `tool`); what follows it waits
            msg.result = msg.block.take();
            msg.block_finished = false;
            msg.after_result = Some(Gate::new("ollama:blocks-before-result-link"));
        } else {
            self.close_open(cx)?;
        }
        let msg = self.msg()?;
        if is_content {
            msg.has_content = true;
        }
        msg.block = Some(BlockBuilder::new(section, msg.base.index, attrs));
        msg.block_finished = false;
        msg.block_is_content = is_content;
        Ok(())
    }

    /// `MessageReader.finished`: the payload is complete; the block stays open for late attributes.
    fn finished(&mut self) -> Result<()> {
        self.msg()?.block_finished = true;
        Ok(())
    }

    /// `MessageReader.close_open`
    fn close_open(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let Some(msg) = self.msg.as_mut() else { return Ok(()) };
        if !msg.block_finished {
            return Ok(());
        }
        let Some(mut builder) = msg.block.take() else { return Ok(()) };
        msg.block_finished = false;
        if msg.block_is_content && msg.base.role.as_deref() == Some("tool") {
            msg.match_result(&mut builder, &mut self.pending_calls, &mut self.waiting_calls);
        }
        builder.uncount(|counted| msg.uncount(counted, cx.session));  // the blocks emitted now count it, if they wait
        let (first, second) = builder.close();
        msg.emit(first, cx)?;
        if let Some(second) = second {
            msg.emit(second, cx)?;
        }
        Ok(())
    }

    /// `MessageReader._close_result`: the kept content closes (linked to its call if the
    /// message is a tool result), then the blocks that waited go out.
    fn close_result(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let Some(msg) = self.msg.as_mut() else { return Ok(()) };
        let Some(mut result) = msg.result.take() else { return Ok(()) };
        let held = msg.after_result.take();
        if msg.base.role.as_deref() == Some("tool") {
            msg.match_result(&mut result, &mut self.pending_calls, &mut self.waiting_calls);
        }
        result.uncount(|counted| msg.uncount(counted, cx.session));
        let (first, second) = result.close();
        msg.emit(first, cx)?;
        if let Some(second) = second {
            msg.emit(second, cx)?;
        }
        if let Some(mut held) = held {
            held.release(cx, |event, cx| match event {
                Event::Block(block) => msg.emit(block, cx),
                other => cx.emit(other),
            })?;
        }
        Ok(())
    }

    /// A fragment of the block being read (`BlockBuilder.fragment`).
    fn block_fragment(&mut self, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
        let msg = self.msg()?;
        let Some(builder) = msg.block.as_mut() else { return Err(internal(S::Message, "a block")) };
        let recount = builder.recounts(fin);
        let block = builder.fragment(data, fin);
        if recount {
            msg.recount_block(cx.session)?;
        }
        match block {
            Some(block) => msg.emit(block, cx),
            None => Ok(()),
        }
    }

    /// `ImageReader.fragment`
    fn image_fragment(&mut self, data: &[u8], fin: bool, cx: &mut Cx<'_>) -> Result<()> {
        let msg = self.msg()?;
        match msg.image_prefix.as_mut() {
            None => self.block_fragment(data, fin, cx)?,
            Some(prefix) => {
                prefix.extend_from_slice(data);
                keep_head(&mut msg.image_head, data);
                if msg.image_head.len() < SNIFF_BYTES && !fin {
                    return Ok(());
                }
                let prefix = msg.image_prefix.take().unwrap_or_default();
                if let (Some(media_type), Some(builder)) = (sniff_media_type(&msg.image_head), msg.block.as_mut()) {
                    builder.set("media_type", str_json(media_type.as_bytes()));
                }
                self.block_fragment(&prefix, fin, cx)?;
            }
        }
        if fin {
            self.finished()?;
        }
        Ok(())
    }

    fn null_member(&mut self, key: &str, cx: &mut Cx<'_>) -> Result<()> {
        let index = self.msg()?.base.index;
        cx.extension(DIALECT, format!("$.messages[{index}].{key}"), b"null", Some(index), true)
    }

    /// `MessageReader._end`: the message's closing brace.
    fn message_end(&mut self, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let msg = self.msg()?;
        let Some(role) = msg.base.role.as_deref() else {
            return Err(cx.error("message without role", offset));
        };
        let is_tool = role == "tool";
        // a user or system message between tool messages does not end the run (Ollama takes one
        // there; into anthropic it goes after the run's results)
        let other_role_ends_run = !matches!(role, "user" | "system");
        if is_tool && !msg.has_content {
            // a result without content: still a block, so it links to its call
            self.builder(Section::UserText, vec![attr("empty", TRUE)], true, cx)?;
            self.block_fragment(b"", true, cx)?;
            self.finished()?;
        }
        self.close_open(cx)?;
        self.close_result(cx)?;
        if is_tool {
            if let Some(calls) = self.new_calls.take() {
                self.waiting_calls.extend(calls); // pending once the batch before them is answered
            }
            if !self.waiting_calls.is_empty() && self.pending_calls.iter().all(|call| call.answered) {
                self.pending_calls = std::mem::take(&mut self.waiting_calls);
            }
        } else {
            if !self.waiting_calls.is_empty() && (other_role_ends_run || self.new_calls.is_some()) {
                // the run ended (an assistant message, or a message with calls of its own):
                // the results that follow answer these
                self.pending_calls = std::mem::take(&mut self.waiting_calls);
            }
            if let Some(calls) = self.new_calls.take() {
                self.pending_calls = calls; // a new batch of calls: the results that follow answer these
            }
        }
        let Some(msg) = self.msg.take() else { return Err(internal(S::Message, "a message")) };
        let index = msg.base.index;
        let role = msg.base.role.as_deref().unwrap_or_default(); // (known: checked above)
        if !is_tool {
            for (key, raw) in [("tool_name", &msg.tool_name_raw), ("tool_call_id", &msg.tool_call_id_raw)] {
                if let Some(raw) = raw {
                    // (null: absent)
                    cx.extension(DIALECT, format!("$.messages[{index}].{key}"), raw, Some(index), raw == b"null")?;
                }
            }
        }
        if !msg.base.emitted {
            // e.g. {"role": "assistant"}: the message must still exist
            let section = role_text_section(role.as_bytes());
            let mut attrs = Vec::with_capacity(3);
            if section == Section::Unknown {
                attrs.push((Cow::Borrowed("role"), Cow::Owned(str_json(role.as_bytes()))));
                attrs.push((Cow::Borrowed("dialect"), Cow::Borrowed(&b"\"ollama\""[..])));
            }
            attrs.push((Cow::Borrowed("empty"), Cow::Borrowed(TRUE)));
            let block = Block { section, message: index, payload: Cow::Borrowed(b""), init: true, fin: true,
                                attrs: Some(attrs) };
            cx.emit(Event::Block(block))?;
        }
        Ok(())
    }

    /// `ToolCallReader._settle`: the id is known; the held fragments go out, the first one
    /// with it (the builder's `attrs`), later ones straight.
    fn settle_call(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        let msg = self.msg()?;
        let Some(mut held) = msg.call_held.take() else { return Ok(()) };
        let id = match msg.block.as_ref().and_then(|b| get_attr(&b.attrs, "id")) {
            Some(id) => id.to_vec(),
            None => return Err(internal(S::ToolCall, "a call id")),
        };
        held.release(cx, |event, cx| match event {
            Event::Block(mut block) => {
                if block.init {
                    if let Some(slot) = block.attrs.as_mut().and_then(|a| a.iter_mut().find(|(n, _)| n == "id")) {
                        slot.1 = Cow::Owned(id.clone());
                    }
                }
                msg.emit_settled(block, cx)
            }
            other => cx.emit(other),
        })?;
        msg.recount_block(cx.session)  // what the builder keeps back now waits where the message's blocks do
    }

    fn call_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
        self.settle_call(cx)?;
        let msg = self.msg()?;
        let has_arguments = msg.call.take().is_some_and(|(_, has)| has);
        if !has_arguments {
            if let Some(builder) = msg.block.as_mut() {
                builder.set("ollama_no_arguments", TRUE.to_vec());
            }
        }
        self.finished()
    }

    /// `ToolCallReader._extra`: a member of the call (or of its function) with no
    /// canonical field, kept as JSON text in an attr for ollama targets.
    fn call_extra(&mut self, attr: &'static str, raw: &[u8]) -> Result<()> {
        let mut text = str_json(&self.key);
        text.push(b':');
        text.extend_from_slice(raw);
        let builder = self.builder_mut()?;
        let earlier = |attrs: &[Attr]| match get_attr(attrs, attr).map(Value::loads) {
            Some(Ok(Value::Str(s))) if !s.is_empty() => Some(s),
            _ => None,
        };
        if let Some(mut members) = earlier(&builder.late).or_else(|| earlier(&builder.attrs)) {
            members.push(b',');
            members.extend_from_slice(&text);
            text = members;
        }
        builder.set(attr, str_json(&text));
        Ok(())
    }
}

#[cold]
fn internal(state: S, what: &str) -> Error {
    Error::new(ErrorClass::Transcode,
               format!("internal error in the native core: the ollama request decoder has no {what} in state {state:?}"))
}

// -- encoder (helper L) -----------------------------------------------------------------

pub use encoder::RequestEncoder;

mod encoder {

use super::*;

use crate::canonical::{Extension, TOP_LEVEL_SYSTEM};
use crate::encoding::{
    known_role, role_head, role_json, Attr, attr, message_member, skip_chars, attr_truthy, foreign_extension, has_attr, json_str, lose, lose_block, lose_field, lose_is_error, lose_raw_arguments, drops_typed_call,
    late_only, lose_signature, lose_unplaced, merged, merged_reasoning, on_block, subject, tool_definition, Head, BlockRef,
    Encode, First, HeldArguments, InBlock, Io, MessageAssembler, MessageCloser, MessageListBody, Opener, PlaceBlocks,
    ToolDefinitions, WriterId, Writers, STRING_CONTENT,
};
use crate::json::{Limits, Sink, Tokenizer};
use crate::losses::{article, is_internal_attr, lacks, path_subject, several_subject};
use crate::reorder::Hold;

const MEMBER_ORDER: &str = "ollama:member-order";
/// between joined text blocks (escaped form)
const SEPARATOR: &[u8] = b"\\n\\n";
/// what openai writes for an image nobody named
const UNNAMED: &[u8] = b"\"application/octet-stream\"";
const THINKING: First = First { key: "thinking", opener: Opener::String, opening: b"\"thinking\":\"" };
const ROLE_USER: &[u8] = b"\"user\"";
const ROLE_TOOL: &[u8] = b"\"tool\"";

/// `_QUIET_ATTRS`: attributes that shape the output (or are handled where they matter).
fn quiet_attr(key: &str) -> bool {
    is_internal_attr(key)
        || matches!(key, "source" | "media_type" | "tool_call_id" | "id" | "name" | "index" | "ollama_extra"
                         | "ollama_call_extra" | "signature" | "redacted" | "is_error")
}

/// The text members a block writes into (`_TEXT_MEMBERS`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextKey {
    Content,
    Thinking,
}

impl TextKey {
    fn name(self) -> &'static str {
        match self {
            TextKey::Content => "content",
            TextKey::Thinking => "thinking",
        }
    }

    fn first(self) -> First {
        match self {
            TextKey::Content => STRING_CONTENT,
            TextKey::Thinking => THINKING,
        }
    }
}

/// One ollama message being written (`_Message`); `role` is its JSON text.
struct Message {
    asm: MessageAssembler,
    index: i64,
    role: Cow<'static, [u8]>,
    /// blocks written into `content`, `thinking`
    texts: [u32; 2],
    has_result: bool,
    has_image: bool,
    /// tool_name written
    named: bool,
}

/// A call's arguments on their way to the `arguments` object.
enum Args {
    /// `ollama_no_arguments`: the source call had none
    None,
    /// an ollama source's: an object already, streamed (`ArgumentsWriter`)
    Stream(ArgumentsWriter),
    /// another dialect's: held until known to be an object (`HeldArguments`)
    Held(HeldArguments),
}

/// The named state of a placed block (what Python's `(write, close)` closures hold).
enum Placed<'a> {
    /// nothing written, nothing at close (an unknown block marked empty)
    Nothing,
    /// an ollama message member carried raw (`_unknown`)
    Raw(WriterId),
    /// a text member (`_text`); `w` None: an empty block. Close: `_text_close`
    Text { w: Option<WriterId>, head: Head<'a> },
    /// a base64 string of `images` (`_image`): its first characters kept for the type check
    Image { w: WriterId, head: Head<'a>, sniffed: Vec<u8> },
    /// a tool call (`_tool_call`): `call_id` the id written first (JSON), if any
    Call { w: WriterId, head: Head<'a>, args: Args, call_id: Option<Vec<u8>> },
}

impl Placed<'_> {
    /// `PlaceBlocks::keep`: the head owned.
    fn into_owned(self) -> Placed<'static> {
        match self {
            Placed::Nothing => Placed::Nothing,
            Placed::Raw(w) => Placed::Raw(w),
            Placed::Text { w, head } => Placed::Text { w, head: head.into_owned() },
            Placed::Image { w, head, sniffed } => Placed::Image { w, head: head.into_owned(), sniffed },
            Placed::Call { w, head, args, call_id } => Placed::Call { w, head: head.into_owned(), args, call_id },
        }
    }
}

/// Everything of the encoder but the body and the block in progress (`MessageCloser`).
struct Messages {
    msg: Option<Message>,
    /// the source message whose developer role was recorded (`_developer_lost`)
    developer_lost: Option<i64>,
    /// `"k":v` members of `options`, until the end (`ollama:options`)
    options: Option<Hold<Vec<u8>>>,
    options_empty: bool,
    stream_seen: bool,
    /// call id (JSON) -> its name (JSON)
    call_names: Vec<(Vec<u8>, Vec<u8>)>,
    /// ollama keys written for other dialects' controls (a few: a list)
    control_keys: Vec<Cow<'static, str>>,
    pending_ext: Vec<Extension<'static>>,
    /// openai `name` of a message whose blocks have not come (a tool message's is its tool_name)
    openai_names: Vec<(i64, Extension<'static>)>,
    /// source index of the last message with tool calls
    calls_at: Option<i64>,
    /// the user message waiting for the tool messages after it
    user_hold: Option<WriterId>,
    user_index: Option<i64>,
    /// the user message of the open tool message's images (`_moved`)
    moved: Option<Message>,
    reasoning: Hold<Control<'static>>,
    /// a block of the source's message list came / a message was opened in the output
    /// (`require_a_message`)
    listed: bool,
    carried: bool,
}

struct Encoding {
    body: MessageListBody,
    m: Messages,
    block: InBlock<Placed<'static>>,
    /// (content and tool_calls are two members)
    order: TextCallOrder,
}

/// Canonical events -> an Ollama `/api/chat` request body (`RequestEncoder`).
///
/// Holds (reorder buffer): messages before `SystemEnd` (`ollama:messages-before-system`),
/// `options` members until the end (`ollama:options`), message members after the first
/// (`ollama:member-order`), the user message after tool calls until the tool messages
/// (`ollama:user-before-tool-result`), another dialect's call arguments
/// (`ollama:tool-arguments`), reasoning controls (`ollama:merge-reasoning`).
pub struct RequestEncoder {
    writers: Writers,
    /// made at the first event: Python's constructor writes the body's `{`
    state: Option<Encoding>,
}

impl RequestEncoder {
    pub fn new(_session: &Session) -> Self {
        RequestEncoder { writers: Writers::default(), state: None }
    }

    fn started<'s>(state: &'s mut Option<Encoding>, io: &mut Io<'_>) -> Result<&'s mut Encoding> {
        if state.is_none() {
            let body = MessageListBody::new(io, DIALECT)?;
            let reasoning = io.hold("ollama:merge-reasoning");
            let m = Messages {
                msg: None,
                developer_lost: None,
                options: None,
                options_empty: false,
                stream_seen: false,
                call_names: Vec::new(),
                control_keys: Vec::new(),
                pending_ext: Vec::new(),
                openai_names: Vec::new(),
                calls_at: None,
                user_hold: None,
                moved: None,
                user_index: None,
                reasoning,
                listed: false,
                carried: false,
            };
            *state = Some(Encoding { body, m, block: InBlock::None, order: TextCallOrder::default() });
        }
        state.as_mut().ok_or_else(|| Error::new(ErrorClass::Transcode, "internal error: no encoder state"))
    }
}

impl Encode for RequestEncoder {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let mut io = Io { out, session, writers: &mut self.writers };
        let e = Self::started(&mut self.state, &mut io)?;
        match event {
            Event::Block(block) => on_block(e, &block, &mut io),
            Event::Control(control) => e.m.on_control(&mut e.body, control, &mut io),
            Event::Extension(ext) => e.m.on_extension(&mut e.body, ext, &mut io),
            Event::SystemEnd => e.body.system_end(&mut e.m, &mut io),
            Event::MessagesEnd => e.body.messages_end(&mut e.m, &mut io),
            Event::End => e.m.end(&mut e.body, &mut io),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        self.start(session, out)
    }

    /// The body's `{` (`MessageListBody.__init__`).
    fn start(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let mut io = Io { out, session, writers: &mut self.writers };
        Self::started(&mut self.state, &mut io)?;
        Ok(())
    }
}

impl PlaceBlocks for Encoding {
    type Placed<'a> = Placed<'a>;

    fn in_block(&mut self) -> &mut InBlock<Placed<'static>> {
        &mut self.block
    }

    fn text_call_order(&mut self) -> Option<&mut TextCallOrder> {
        Some(&mut self.order)
    }

    fn message_listed(&mut self) {
        self.m.listed = true;
    }

    fn place<'a>(&mut self, block: &'a Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed<'a>>> {
        self.m.place(&mut self.body, block, io)
    }

    fn keep(placed: Placed<'_>) -> Placed<'static> {
        placed.into_owned()
    }

    fn write(&mut self, placed: &mut Placed<'_>, payload: &[u8], io: &mut Io<'_>) -> Result<()> {
        match placed {
            Placed::Nothing | Placed::Text { w: None, .. } => Ok(()),
            Placed::Raw(w) | Placed::Text { w: Some(w), .. } => io.write(*w, payload),
            Placed::Image { w, sniffed, .. } => {
                crate::images::keep_head(sniffed, payload);
                io.write(*w, payload)
            }
            Placed::Call { w, args, .. } => match args {
                Args::None => Ok(()),
                Args::Stream(writer) => writer.feed(payload, *w, io),
                Args::Held(held) => held.feed(payload, io.session),
            },
        }
    }

    fn close(&mut self, placed: Placed<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        self.m.close(placed, late, io)
    }

    fn tool_definition(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
        tool_definition(self, block, io)
    }
}

impl ToolDefinitions for Encoding {
    fn dialect(&self) -> &'static str {
        DIALECT
    }

    fn tool_json(&mut self, attrs: &[Attr<'_>], schema: &[u8], io: &mut Io<'_>) -> Result<Vec<u8>> {
        controls::tool_from_canonical(attrs, schema, io.session)
    }

    fn tool_element(&mut self, key: &'static str, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
        self.body.element(key, raw, &mut self.m, io)
    }
}

impl MessageCloser for Messages {
    /// `_close_message`
    fn close_message(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        let Some(msg) = self.msg.take() else { return Ok(()) };
        msg.asm.close(io)?;
        if let Some(moved) = self.moved.take() {
            moved.asm.close(io)?;
        }
        if self.user_hold.is_some() && body.messages_ended {
            self.flush_user_hold(body, io)?;
        }
        Ok(())
    }
}

/// `dumps(value)` of a value given as JSON text (an extension's raw JSON keeps the
/// escapes it came with; written as a value it is canonical).
fn canonical_json(raw: &[u8]) -> Result<Vec<u8>> {
    Ok(Value::loads(raw)?.to_json())
}

/// `_carried_id` of an attribute's JSON: the id (JSON) an ollama output carries.
fn carried_json(raw: Option<&[u8]>) -> Option<Vec<u8>> {
    match Value::loads(raw?) {
        Ok(Value::Str(id)) if carried_id(&id).is_some() => Some(Value::Str(id).to_json()),
        _ => None,
    }
}

/// `attrs.get(key)` that is not None (JSON null).
fn not_none(raw: Option<&[u8]>) -> Option<&[u8]> {
    raw.filter(|raw| *raw != b"null")
}

/// Python `repr` of an attribute's value (loss wording).
fn repr_json(raw: &[u8]) -> String {
    match Value::loads(raw) {
        Ok(value) => controls::py_repr(&value),
        Err(_) => String::from_utf8_lossy(raw).into_owned(),
    }
}

impl Messages {
    // -- top level ------------------------------------------------------------------

    /// `_top_member`: `options.x` members wait in the options hold; the rest go to the body.
    /// `key`: WTF-8 (an extension's path after `$.`).
    fn top_member(&mut self, body: &mut MessageListBody, key: impl AsRef<[u8]>, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
        let key = key.as_ref();
        if let Some(option) = key.strip_prefix(b"options.") {
            let mut item = Vec::with_capacity(option.len() + raw.len() + 3);
            dumps_str(option, &mut item);
            item.push(b':');
            item.extend_from_slice(raw);
            let size = item.len() as u64;
            let hold = self.options.get_or_insert_with(|| io.session.reorder.hold("ollama:options"));
            return hold.append(&mut io.session.reorder, item, size);
        }
        body.member(key, raw, self, io)
    }

    fn on_control(&mut self, body: &mut MessageListBody, control: Control<'_>, io: &mut Io<'_>) -> Result<()> {
        if control.name == "stream" {
            self.stream_seen = true;
        }
        if control.dialect.as_deref() == Some(DIALECT) {
            let Some(key) = control.key.as_deref() else {
                return Ok(()); // the implied stream: true of an ollama body without stream
            };
            let raw = control.raw.as_deref().unwrap_or(&control.value);
            return self.top_member(body, key, raw, io);
        }
        crate::encoding::lose_unknown_members(&control, DIALECT, io.session)?;
        if control.name == "reasoning" {
            // merged with its siblings at the end (one think)
            let size = control.value.len() as u64;
            return self.reasoning.append(&mut io.session.reorder, control.into_owned(), size);
        }
        self.write_control(body, &control, io)
    }

    /// `_write_control`
    fn write_control(&mut self, body: &mut MessageListBody, control: &Control<'_>, io: &mut Io<'_>) -> Result<()> {
        for (key, json) in controls::encode_control(control, io.session)? {
            if self.control_keys.contains(&key) {
                // e.g. openai max_tokens beside max_completion_tokens
                let where_ = match control.key.as_deref() {
                    Some(k) if !k.is_empty() => format!("$.{k}"),
                    _ => control.name.to_string(),
                };
                let reason = lacks(path_subject(&where_), DIALECT, &format!("second value for {key}"),
                                   Some("the first is kept"));
                io.lose(&where_, &reason, control.dialect.as_deref())?;
                continue;
            }
            self.control_keys.push(key.clone());
            self.top_member(body, key.as_bytes(), &json, io)?;
        }
        Ok(())
    }

    fn on_extension(&mut self, body: &mut MessageListBody, ext: Extension<'_>, io: &mut Io<'_>) -> Result<()> {
        if ext.dialect == "openai" && ext.message.is_some() && ext.path.ends_with(b".name") {
            return self.openai_name(ext, io);
        }
        if ext.dialect != DIALECT {
            return foreign_extension(io.session, DIALECT, &ext);
        }
        let Some(index) = ext.message else {
            if ext.path.as_ref() == b"$.options" {
                if ext.raw.as_ref() == b"{}" {
                    self.options_empty = true;
                    return Ok(());
                }
                return self.top_member(body, "options", &ext.raw, io);
            }
            return self.top_member(body, skip_chars(&ext.path, 2), &ext.raw, io); // `ext.path[2:]`
        };
        match self.msg.as_mut() {
            Some(msg) if msg.index == index => {
                // written when the message closes: whether its first block came before or
                // after it depends on the cut, its place must not
                msg.asm.trailing(io, message_member(&ext.path, ext.message), &ext.raw)
            }
            _ => {
                // a field of a message whose first block has not come yet
                self.pending_ext.push(ext.into_owned());
                Ok(())
            }
        }
    }

    /// `_openai_name`: an openai message's `name`: on a tool message (answering by name)
    /// it is ollama's `tool_name`; elsewhere a recorded loss.
    fn openai_name(&mut self, ext: Extension<'_>, io: &mut Io<'_>) -> Result<()> {
        let index = ext.message.unwrap_or_default();
        match self.msg.as_mut() {
            Some(msg) if msg.index == index => {
                let is_str = ext.raw.first() == Some(&b'"');
                if msg.role == ROLE_TOOL && msg.has_result && !msg.named && is_str {
                    msg.named = true;
                    return msg.asm.trailing(io, "tool_name", &ext.raw);
                }
                foreign_extension(io.session, DIALECT, &ext)
            }
            _ => {
                // its message comes later
                let ext = ext.into_owned();
                match self.openai_names.iter_mut().find(|(i, _)| *i == index) {
                    Some(slot) => slot.1 = ext,
                    None => self.openai_names.push((index, ext)),
                }
                Ok(())
            }
        }
    }

    fn take_openai_name(&mut self, index: i64) -> Option<Extension<'static>> {
        let at = self.openai_names.iter().position(|(i, _)| *i == index)?;
        Some(self.openai_names.remove(at).1)
    }

    /// `End`: everything held is written, then the members that go last.
    fn end(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        for (_, ext) in std::mem::take(&mut self.openai_names) {
            foreign_extension(io.session, DIALECT, &ext)?;
        }
        body.end(self, io)?;
        // (an empty list asks Ollama to load the model, not to answer: no such request from a
        // source that listed messages)
        crate::encoding::require_a_message(self.listed, self.carried, DIALECT, io.session)?;
        if !self.reasoning.is_empty() {
            let items: Vec<Control<'static>> = self.reasoning.drain(&mut io.session.reorder).collect();
            let merged = merged_reasoning(&items, DIALECT, io.session)?;
            self.write_control(body, &merged, io)?;
        }
        if io.session.options.ollama_sampling_defaults {
            // what the source left unset samples as its own API would
            for (key, json) in controls::source_sampling_defaults(io.session.source) {
                let key = format!("options.{key}");
                if !self.control_keys.iter().any(|known| *known == key) {
                    self.control_keys.push(Cow::Owned(key.clone()));
                    self.top_member(body, &key, json, io)?;
                }
            }
        }
        if self.options.is_some() || self.options_empty {
            let mut members = b"{".to_vec();
            if let Some(mut hold) = self.options.take() {
                let items: Vec<Vec<u8>> = hold.drain(&mut io.session.reorder).collect();
                members.extend_from_slice(&items.join(&b","[..]));
            }
            members.push(b'}');
            io.json(WriterId::OUT, |w, b| w.raw_member("options", &members, b))?;
        }
        if !self.stream_seen {
            // no stream control: the source meant a non-streaming request; ollama would stream
            io.json(WriterId::OUT, |w, b| w.raw_member("stream", b"false", b))?;
        }
        body.finish(io)
    }

    // -- messages -----------------------------------------------------------------------

    /// `_open_message`: `first` is the member that streams first, opened with the message.
    fn open_message(&mut self, body: &mut MessageListBody, index: i64, role: &[u8], first: Option<First>,
                    io: &mut Io<'_>) -> Result<()> {
        self.close_message(body, io)?;
        if self.user_hold.is_some() && Some(index) != self.user_index {
            self.flush_user_hold(body, io)?;
        }
        self.carried = true;
        let writer = self.messages_writer(body, index, role, io)?;
        let mut asm = MessageAssembler::new(writer, io, MEMBER_ORDER, &role_head(role), first)?;
        if role != ROLE_TOOL {
            if let Some(ext) = self.take_openai_name(index) {
                foreign_extension(io.session, DIALECT, &ext)?;
            }
        }
        if !self.pending_ext.is_empty() {
            let (mine, rest): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.pending_ext).into_iter().partition(|e| e.message == Some(index));
            for ext in mine {
                asm.trailing(io, message_member(&ext.path, ext.message), &ext.raw)?;
            }
            self.pending_ext = rest;
        }
        let role = known_role(role).map_or_else(|| Cow::Owned(role.to_vec()), Cow::Borrowed);
        self.msg = Some(Message { asm, index, role, texts: [0, 0], has_result: false,
                                  has_image: false, named: false });
        Ok(())
    }

    /// `_messages_writer`: the user message right after the tool calls may start with
    /// text and hold the results after it (anthropic `[text, tool_result]`): it is held
    /// (`ollama:user-before-tool-result`) and placed after the tool messages made from
    /// the same source message, as ollama wants the results right after the calls.
    fn messages_writer(&mut self, body: &mut MessageListBody, index: i64, role: &[u8], io: &mut Io<'_>)
                       -> Result<WriterId> {
        if role == ROLE_USER && self.calls_at.is_some_and(|at| index == at + 1) {
            if let Some(w) = self.user_hold {
                return Ok(w);
            }
            let w = io.writers.held(&mut io.session.reorder, "ollama:user-before-tool-result");
            io.push_first(w); // its elements sit inside the list
            self.user_hold = Some(w);
            self.user_index = Some(index);
            return Ok(w);
        }
        body.messages_writer(index == TOP_LEVEL_SYSTEM, self, io)
    }

    /// `_moved_images`: the user message for the images of the open tool message's result,
    /// beside it (held after the tool messages): the result's further texts go on in its tool
    /// message (a new one would be a second tool message linked to no call). False: the tool
    /// message is not open, or its user messages do not wait (`messages_writer`).
    fn moved_images(&mut self, body: &mut MessageListBody, block: &Block<'_>, io: &mut Io<'_>) -> Result<bool> {
        let open = self.msg.as_ref().is_some_and(|msg| msg.role.as_ref() == ROLE_TOOL && msg.index == block.message);
        if !open || self.calls_at.is_none_or(|at| block.message != at + 1) {
            return Ok(false);
        }
        if self.moved.is_none() {
            let writer = self.messages_writer(body, block.message, ROLE_USER, io)?;
            let asm = MessageAssembler::new(writer, io, MEMBER_ORDER, &role_head(ROLE_USER), None)?;
            self.moved = Some(Message { asm, index: block.message, role: Cow::Borrowed(ROLE_USER), texts: [0, 0],
                                        has_result: false, has_image: false, named: false });
        }
        Ok(true)
    }

    fn flush_user_hold(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        let hold = self.user_hold.take();
        self.user_index = None;
        self.calls_at = None;
        let Some(hold) = hold else { return Ok(()) };
        if io.writers.holds_bytes(hold) {
            let mut held = Vec::new();
            io.writers.take(hold, &mut io.session.reorder, &mut held);
            let w = body.messages_writer(false, self, io)?;
            io.json(w, |jw, b| jw.raw_element(&held, b))?;
        } else {
            io.writers.drop_writer(hold, &mut io.session.reorder);
        }
        Ok(())
    }

    /// `_starts_message`: whether `block` goes into a new message rather than the open one.
    fn starts_message(&self, block: &Block<'_>, role: &[u8]) -> bool {
        let Some(msg) = &self.msg else { return true };
        // a tool result's further text blocks (attr in_result) stay in its tool message
        let new_result = block.section == Section::ToolResult
            && msg.has_result
            && !attr_truthy(block.attrs.as_deref().unwrap_or(&[]), "in_result");
        block.message != msg.index || role != msg.role.as_ref() || new_result
    }

    fn message_for(&mut self, body: &mut MessageListBody, block: &Block<'_>, role: &[u8], io: &mut Io<'_>)
                   -> Result<()> {
        if self.starts_message(block, role) {
            self.open_message(body, block.message, role, None, io)?;
        }
        Ok(())
    }

    fn open(&mut self) -> Result<&mut Message> {
        self.msg.as_mut().ok_or_else(|| Error::new(ErrorClass::Transcode, "internal error: no open ollama message"))
    }

    // -- blocks ----------------------------------------------------------------------------

    /// `_check_attrs`: attributes ollama has no member for are recorded losses.
    fn check_attrs(&self, block: BlockRef<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        for (key, _) in attrs {
            if !quiet_attr(key) {
                lose_field(io.session, DIALECT, block, key, Some(attrs), None)?;
            }
        }
        Ok(())
    }

    /// `_role_of`: the block's role (JSON), or None (no place for it).
    fn role_of<'a>(&mut self, block: &Block<'_>, attrs: &'a [Attr<'_>], io: &mut Io<'_>) -> Result<Option<Cow<'a, [u8]>>> {
        let natural = section_role(block.section).map(role_json);
        let Some(role) = not_none(attr(attrs, "role")) else { return Ok(natural) };
        if natural.as_deref() == Some(role) {
            return Ok(natural);
        }
        if role == b"\"developer\"" && block.section == Section::SystemInstruction {
            if self.developer_lost != Some(block.message) {
                // the message's role: one loss, however many parts
                self.developer_lost = Some(block.message);
                lose_block(io.session, DIALECT, BlockRef::of(block), "developer role", Some("sent as a system message"),
                           Some(attrs))?;
            }
            return Ok(Some(Cow::Borrowed(b"\"system\"")));
        }
        if role == b"\"function\"" && block.section == Section::ToolResult {
            lose(io.session, DIALECT, BlockRef::of(block), "function message", "function role",
                 Some("sent as a tool message"), None)?;
            return Ok(Some(Cow::Borrowed(ROLE_TOOL)));
        }
        // ollama takes any role string; an ollama body's own odd roles come back
        Ok(Some(Cow::Borrowed(role)))
    }

    /// `attrs.get("source") == "base64" and attrs.get("media_type") in IMAGE_TYPES`: a file
    /// whose bytes ollama's images take.
    fn is_image_file(attrs: &[Attr<'_>]) -> bool {
        attr(attrs, "source") == Some(b"\"base64\"")
            && attr(attrs, "media_type").and_then(json_str).is_some_and(|t| IMAGE_TYPES.contains(&t.as_str()))
    }

    /// `_place`: open the block in the right message and member; None: not carried (lost).
    fn place<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
        let attrs = block.attrs.as_deref().unwrap_or(&[]);
        if drops_typed_call(io.session, DIALECT, BlockRef::of(block), attrs)? {
            return Ok(None);
        }
        self.check_attrs(BlockRef::of(block), attrs, io)?;
        let section = block.section;
        if section == Section::Unknown {
            if attr(attrs, "dialect") == Some(b"\"ollama\"") && has_attr(attrs, "role") {
                return self.unknown(body, block, attrs, io).map(Some);
            }
            lose_unplaced(io.session, DIALECT, BlockRef::of(block))?;
            return Ok(None);
        }
        if section == Section::ServerToolResult {
            // the server ran it; ollama can neither run nor replay it
            lose_block(io.session, DIALECT, BlockRef::of(block), "server tools", Some("not carried"), None)?;
            return Ok(None);
        }
        let Some(role) = self.role_of(block, attrs, io)? else {
            lose_unplaced(io.session, DIALECT, BlockRef::of(block))?;
            return Ok(None);
        };
        match section {
            Section::SystemInstruction | Section::UserText | Section::AssistantText | Section::ToolResult => {
                self.text(body, block, attrs, &role, TextKey::Content, io).map(Some)
            }
            Section::AssistantRefusal => {
                // the assistant's turn stays: its refusal is what it said
                lose_block(io.session, DIALECT, BlockRef::of(block), "refusal field", Some("carried as assistant text"),
                           Some(attrs))?;
                self.text(body, block, attrs, &role, TextKey::Content, io).map(Some)
            }
            Section::AssistantReasoning => {
                if attr_truthy(attrs, "redacted") {
                    lose_block(io.session, DIALECT, BlockRef::of(block), "field for encrypted thinking", None,
                               Some(attrs))?;
                    return Ok(None);
                }
                lose_signature(io.session, DIALECT, BlockRef::of(block), attrs)?;
                self.text(body, block, attrs, &role, TextKey::Thinking, io).map(Some)
            }
            Section::UserImage => self.image(body, block, attrs, &role, io),
            Section::UserDocument if Self::is_image_file(attrs) => {
                // an image sent as a file (openai file_data): ollama's images take its bytes
                let media_type = attr(attrs, "media_type").and_then(json_str).unwrap_or_default();
                let what = format!("file of type {} as a document", crate::json::py_str_repr(media_type.as_bytes()));
                lose_block(io.session, DIALECT, BlockRef::of(block), &what, Some("sent as an image"), Some(attrs))?;
                self.image(body, block, attrs, &role, io)
            }
            Section::ToolCall => self.tool_call(body, block, attrs, &role, io).map(Some),
            _ => {
                // a section ollama has no member for (document, audio, video, citations) that
                // came with a role of its own: as without one, a recorded loss
                lose_unplaced(io.session, DIALECT, BlockRef::of(block))?;
                Ok(None)
            }
        }
    }

    /// `_text`
    fn text<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], role: &[u8], key: TextKey,
            io: &mut Io<'_>) -> Result<Placed<'b>> {
        let empty = attr_truthy(attrs, "empty");
        if self.starts_message(block, role) && !empty {
            self.open_message(body, block.message, role, Some(key.first()), io)?; // the text opens with it
        } else {
            self.message_for(body, block, role, io)?;
        }
        let source = io.session.source;
        let msg = self.open()?;
        if block.section == Section::ToolResult {
            msg.has_result = true;
            lose_is_error(io.session, DIALECT, BlockRef::of(block), attrs)?;
        }
        if empty {
            return Ok(Placed::Text { w: None, head: Head::borrowed(block) });
        }
        let content = key == TextKey::Content;
        if content && msg.asm.ended("content") {
            // content ended when the images began (so that they stream): more text goes
            // on in a following message of the same role
            let what = format!("{} after an image", subject(io.session, BlockRef::of(block), Some(attrs)));
            lose(io.session, DIALECT, BlockRef::of(block), &what, "text after images in a message",
                 Some("moved to a following message"), None)?;
            self.open_message(body, block.message, role, None, io)?;
        } else if msg.has_image && content && source != DIALECT {
            let what = format!("{} after an image", subject(io.session, BlockRef::of(block), Some(attrs)));
            lose(io.session, DIALECT, BlockRef::of(block), &what, "order of text and images",
                 Some("the images follow the text"), None)?;
        }
        let msg = self.open()?;
        let slot = key as usize;
        let count = msg.texts[slot];
        let w = msg.asm.member(io, key.name(), Opener::String)?;
        if count == 1 {
            // the joining is one loss, however many texts are joined
            let what = several_subject(io.session.source, block.section, Some(attrs));
            lose(io.session, DIALECT, BlockRef::of(block), &what, &format!("second {} in a message", key.name()),
                 Some("joined with a blank line"), None)?;
        }
        if count > 0 {
            io.write(w, SEPARATOR)?;
        }
        msg.texts[slot] = count + 1;
        Ok(Placed::Text { w: Some(w), head: Head::borrowed(block) })
    }

    /// The block's last fragment: what its placing left to do.
    fn close(&mut self, placed: Placed, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        match placed {
            Placed::Nothing | Placed::Raw(_) => Ok(()),
            Placed::Text { head, .. } => self.text_close(&head, late, io),
            Placed::Image { w, head, sniffed } => self.image_close(w, &head, &sniffed, late, io),
            Placed::Call { w, head, args, call_id } => self.call_close(w, &head, args, call_id, late, io),
        }
    }

    /// `_text_close`: tool_name is written at the block's end whether it came early or
    /// late, so the output bytes do not depend on how the input was cut.
    fn text_close(&mut self, head: &Head<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        if !late.is_empty() {
            let late_only = late_only(&head.attrs, late);
            self.check_attrs(head.as_ref(), &late_only, io)?;
            lose_signature(io.session, DIALECT, head.as_ref(), late)?;
            lose_is_error(io.session, DIALECT, head.as_ref(), &late_only)?;
        }
        if head.section == Section::ToolResult {
            self.result_name(head, &merged(&head.attrs, late), io)?;
        }
        Ok(())
    }

    /// `_result_name`: a tool message's `tool_name` (from the call its id names, or an
    /// openai `name`) and `tool_call_id`.
    fn result_name(&mut self, head: &Head<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        let mut name = not_none(attr(attrs, "name")).map(<[u8]>::to_vec);
        let call_id = not_none(attr(attrs, "tool_call_id"));
        let named = self.take_openai_name(head.message);
        match named {
            Some(named) if name.is_none() && named.raw.first() == Some(&b'"') => {
                name = Some(canonical_json(&named.raw)?);
            }
            Some(named) => foreign_extension(io.session, DIALECT, &named)?,
            None => {}
        }
        let msg_named = self.open()?.named;
        if msg_named {
            name = None;
        } else if name.is_none() && !attr_truthy(attrs, "ollama_no_tool_name") {
            if let Some(call_id) = call_id {
                name = self.call_names.iter().find(|(id, _)| id.as_slice() == call_id).map(|(_, n)| n.clone());
                if name.is_none() {
                    let what = format!("{} for the unknown call {}", subject(io.session, head.as_ref(), None),
                                       repr_json(call_id));
                    lose(io.session, DIALECT, head.as_ref(), &what, "tool_name to give it",
                         Some("sent without tool_name"), None)?;
                }
            }
        }
        let msg = self.open()?;
        if let Some(name) = name {
            msg.named = true;
            msg.asm.scalar(io, "tool_name", &name)?;
        }
        let carried = if attr_truthy(attrs, "ollama_no_tool_call_id") { None } else { carried_json(call_id) };
        if let Some(carried) = carried {
            msg.asm.scalar(io, "tool_call_id", &carried)?;
        }
        Ok(())
    }

    /// `_image`
    fn image<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], role: &[u8],
             io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
        if attr(attrs, "source").is_none_or(|raw| raw == b"null") && block.fin && block.payload.is_empty() {
            // (an image with no source at all)
            lose_block(io.session, DIALECT, BlockRef::of(block), "source it can take", None, Some(attrs))?;
            return Ok(None);
        }
        if let Some(source) = attr(attrs, "source").filter(|s| *s != b"\"base64\"") {
            let what = if source == b"\"url\"" {
                "image URLs".to_string()
            } else {
                format!("{} images", crate::losses::py_str(source))
            };
            lose_block(io.session, DIALECT, BlockRef::of(block), &what, Some("not fetched"), Some(attrs))?;
            return Ok(None);
        }
        // (an early detail is recorded by `place`'s attribute check, a late one at the close: once)
        if attr_truthy(attrs, "in_result") {
            lose_block(io.session, DIALECT, BlockRef::of(block), "images in tool messages",
                       Some("carried in a user message after the tool messages"), Some(attrs))?;
            lose_is_error(io.session, DIALECT, BlockRef::of(block), attrs)?;
        }
        let moved = attr_truthy(attrs, "in_result") && self.moved_images(body, block, io)?;
        let msg = match &mut self.moved {
            Some(moved_msg) if moved => moved_msg,
            _ => {
                self.message_for(body, block, role, io)?;
                self.open()?
            }
        };
        if !msg.has_image {
            msg.asm.end_member(io, "content")?; // the text is complete: let the images stream
        }
        msg.has_image = true;
        let w = msg.asm.member(io, "images", Opener::Array)?;
        io.separate(w)?;
        io.write(w, b"\"")?;
        Ok(Some(Placed::Image { w, head: Head::borrowed(block), sniffed: Vec::with_capacity(SNIFF_BYTES) }))
    }

    fn image_close(&mut self, w: WriterId, head: &Head<'_>, sniffed: &[u8], late: &[Attr<'_>], io: &mut Io<'_>)
                   -> Result<()> {
        io.write(w, b"\"")?;
        if !late.is_empty() {
            // e.g. openai's detail after the url
            let late_only = late_only(&head.attrs, late);
            self.check_attrs(head.as_ref(), &late_only, io)?;
            lose_is_error(io.session, DIALECT, head.as_ref(), &late_only)?;
        }
        let all = merged(&head.attrs, late);
        let declared = attr(&all, "media_type").unwrap_or(UNNAMED);
        let shown = sniff_media_type(sniffed).map_or_else(|| UNNAMED.to_vec(), |t| str_json(t.as_bytes()));
        // ("image/jpg" of JPEG bytes: nothing lost)
        let named = json_str(declared).map_or_else(|| declared.to_vec(), |label| str_json(crate::images::type_named(&label).as_bytes()));
        // (nor a label that names no type: application/octet-stream)
        let names_none = json_str(declared).is_some_and(|label| crate::images::names_no_type(label.as_bytes()));
        if named != shown && !names_none {
            let subject = subject(io.session, head.as_ref(), Some(&head.attrs));
            let what = format!("media type {} of {} {subject}", repr_json(declared), article(&subject));
            let done = format!("the bytes show {}", repr_json(&shown));
            lose(io.session, DIALECT, head.as_ref(), &what, "media type field", Some(&done), None)?;
        }
        Ok(())
    }

    /// `_tool_call`: the id first (Go's order) when the source gave it first; name (and
    /// the rest) after the arguments whether they came early or late, so the output bytes
    /// do not depend on how the input was cut.
    fn tool_call<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], role: &[u8],
                 io: &mut Io<'_>) -> Result<Placed<'b>> {
        self.message_for(body, block, role, io)?;
        self.calls_at = Some(block.message);
        let msg = self.open()?;
        let w = msg.asm.member(io, "tool_calls", Opener::Array)?;
        io.separate(w)?;
        let call_id = carried_json(attr(attrs, "id"));
        match &call_id {
            Some(id) => io.write(w, &[&b"{\"id\":"[..], id, b",\"function\":{"].concat())?,
            None => io.write(w, b"{\"function\":{")?,
        }
        let args = if attr_truthy(attrs, "ollama_no_arguments") {
            Args::None
        } else if io.session.source == DIALECT {
            // an ollama source's arguments are an object already: they stream
            Args::Stream(ArgumentsWriter::new())
        } else {
            // another dialect's are a JSON text that may not be one: held until known
            Args::Held(HeldArguments::new(io.session, "ollama:tool-arguments"))
        };
        if !matches!(args, Args::None) {
            io.write(w, b"\"arguments\":")?;
        }
        Ok(Placed::Call { w, head: Head::borrowed(block), args, call_id })
    }

    fn call_close(&mut self, w: WriterId, head: &Head<'_>, args: Args, call_id: Option<Vec<u8>>,
                  late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        let has_args = !matches!(args, Args::None);
        match args {
            Args::Held(held) => {
                let (data, faithful) = held.result(io.session);
                if !faithful {
                    lose_raw_arguments(io.session, DIALECT, head.as_ref())?;
                }
                io.write(w, &data)?;
            }
            Args::Stream(writer) => writer.close(w, io)?,
            Args::None => {}
        }
        let all = merged(&head.attrs, late);
        // the function's members after the arguments, each after a comma but a first one
        // without arguments before it; written into the one tail
        let mut tail = Vec::with_capacity(128);
        let mut members = 0;
        let mut member = |tail: &mut Vec<u8>, parts: &[&[u8]]| {
            if members > 0 || has_args {
                tail.push(b',');
            }
            members += 1;
            parts.iter().for_each(|part| tail.extend_from_slice(part));
        };
        if let Some(name) = attr(&all, "name") {
            member(&mut tail, &[b"\"name\":", name]);
            if let Some(id) = attr(&all, "id").filter(|id| *id != b"null") {
                let (id, name) = (id.to_vec(), name.to_vec());
                match self.call_names.iter_mut().find(|(known, _)| *known == id) {
                    Some(slot) => slot.1 = name,
                    None => self.call_names.push((id, name)),
                }
            }
        }
        if let Some(index) = attr(&all, "index") {
            member(&mut tail, &[b"\"index\":", index]);
        } else if let Some(index) = attr(&all, CALL_INDEX).filter(|_| io.session.source == DIALECT) {
            member(&mut tail, &[b"\"index\":", index]); // (another dialect's says nothing)
        }
        if let Some(extra) = attr(&all, EXTRA_ATTR) {
            member(&mut tail, &[json_str(extra).unwrap_or_default().as_bytes()]);
        }
        tail.push(b'}');
        for key in [CALL_TYPE_ATTR, CALL_EXTRA_ATTR] {
            if let Some(extra) = attr(&all, key) {
                tail.push(b',');
                tail.extend_from_slice(json_str(extra).unwrap_or_default().as_bytes());
            }
        }
        if let Some(late_id) = carried_json(attr(late, "id")).filter(|id| Some(id) != call_id.as_ref()) {
            // an id after the arguments (sorted keys)
            tail.extend_from_slice(b",\"id\":");
            tail.extend_from_slice(&late_id);
        }
        tail.push(b'}');
        io.write(w, &tail)?;
        if !late.is_empty() {
            self.check_attrs(head.as_ref(), &late_only(&head.attrs, late), io)?;
        }
        Ok(())
    }

    /// `_unknown`: an ollama message member carried raw (a message of another role).
    fn unknown<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>)
               -> Result<Placed<'b>> {
        let role = attr(attrs, "role").unwrap_or(b"null").to_vec();
        self.message_for(body, block, &role, io)?;
        if attr_truthy(attrs, "empty") {
            return Ok(Placed::Nothing);
        }
        let key = match attr(attrs, "key") {
            None | Some(b"\"content\"") => "content",
            Some(other) => {
                return Err(Error::new(ErrorClass::Transcode, format!(
                    "the native ollama encoder has no member {} for a raw block: not ported yet",
                    String::from_utf8_lossy(other))));
            }
        };
        let w = self.open()?.asm.member(io, key, Opener::Raw)?;
        Ok(Placed::Raw(w))
    }
}

/// `ArgumentsWriter`: tool-call arguments, canonical escaped JSON-string text -> the
/// JSON object ollama wants. Each fragment is unescaped on its own (fragments never
/// split an escape) and checked by a push tokenizer as it goes, so text that is not a
/// JSON object fails clearly instead of making a broken body. Empty arguments are `{}`.
struct ArgumentsWriter {
    started: bool,
    check: Tokenizer,
    first: FirstIsObject,
    /// a fragment's text unescaped (one buffer for all the call's fragments)
    text: Vec<u8>,
}

/// The check's sink: the first token must open an object.
struct FirstIsObject(bool);

impl Sink for FirstIsObject {
    fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
        if !self.0 {
            self.0 = true;
            if token != Token::ObjectStart {
                return Err(Error::new(ErrorClass::Schema, "tool-call arguments are not a JSON object; ollama needs one")
                    .in_dialect(DIALECT));
            }
        }
        Ok(())
    }
}

impl ArgumentsWriter {
    fn new() -> Self {
        ArgumentsWriter { started: false, check: Tokenizer::new(Limits::default()), first: FirstIsObject(false), text: Vec::new() }
    }

    fn feed(&mut self, escaped: &[u8], w: WriterId, io: &mut Io<'_>) -> Result<()> {
        if escaped.is_empty() {
            return Ok(());
        }
        let mut data: &[u8] = if escaped.contains(&b'\\') {
            self.text.clear();
            crate::canonical::unescape_json_text_into(escaped, &mut self.text)?;
            &self.text
        } else {
            escaped
        };
        if !self.started {
            // (bytes.lstrip(): ASCII whitespace, vertical tab included)
            let skip = data.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)).count();
            data = &data[skip..];
            if data.is_empty() {
                return Ok(());
            }
            self.started = true;
        }
        self.check.feed(data, &mut self.first).map_err(in_ollama)?;
        io.write(w, data)
    }

    fn close(mut self, w: WriterId, io: &mut Io<'_>) -> Result<()> {
        if !self.started {
            return io.write(w, b"{}");
        }
        if let Err(e) = self.check.close(&mut self.first) {
            return Err(Error::new(ErrorClass::Schema, format!("tool-call arguments are not valid JSON: {}", e.message))
                .in_dialect(DIALECT));
        }
        Ok(())
    }
}

/// A tokenizer error of `ArgumentsWriter`'s check (Python's `Tokenizer(dialect=DIALECT)`).
fn in_ollama(e: Error) -> Error {
    if e.dialect.is_none() { e.in_dialect(DIALECT) } else { e }
}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decoding::{Decode, EventSink};
    use crate::json::{Limits, Sink, Tokenizer};
    use crate::session::{Kind, Options};

    struct Collect(Vec<String>);

    impl EventSink for Collect {
        fn event(&mut self, event: Event<'_>, _session: &mut Session) -> Result<()> {
            self.0.push(describe(&event));
            Ok(())
        }
    }

    fn describe(event: &Event<'_>) -> String {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match event {
            Event::Block(b) => {
                let attrs = b.attrs.as_ref().map(|a| {
                    a.iter().map(|(k, v)| format!("{k}={}", text(v))).collect::<Vec<_>>().join(" ")
                });
                format!("block {} {} {}{} [{}] {}", b.section.name(), b.message, u8::from(b.init), u8::from(b.fin),
                        text(&b.payload), attrs.unwrap_or_default())
            }
            Event::Control(c) => format!("control {} {} key={:?} raw={:?}", c.name, text(&c.value), c.key,
                                         c.raw.as_deref().map(text)),
            Event::Extension(e) => format!("extension {} {} {:?} {}", text(&e.path), text(&e.raw), e.message, e.lossless),
            other => other.tag().to_string(),
        }
    }

    struct Drive<'a> {
        decoder: &'a mut RequestDecoder,
        session: &'a mut Session,
        out: &'a mut Collect,
    }

    impl Sink for Drive<'_> {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
            self.decoder.token(token, offset, path, self.session, self.out)
        }
    }

    /// Decode `body` fed in `pieces`: the events, or the error (class, message, offset, path).
    fn decode(body: &[u8], cuts: &[usize]) -> std::result::Result<Vec<String>, String> {
        let mut session = Session::new(Options::default(), "ollama", "openai", Kind::Request);
        let mut decoder = RequestDecoder::new(&session);
        let mut tokenizer = Tokenizer::new(Limits::default());
        let mut out = Collect(Vec::new());
        let mut start = 0;
        let mut run = || -> Result<()> {
            for &end in cuts.iter().chain(std::iter::once(&body.len())) {
                let mut drive = Drive { decoder: &mut decoder, session: &mut session, out: &mut out };
                tokenizer.feed(&body[start..end], &mut drive)?;
                start = end;
                decoder.flush(&mut session, &mut out)?;
            }
            let mut drive = Drive { decoder: &mut decoder, session: &mut session, out: &mut out };
            tokenizer.close(&mut drive)
        };
        match run() {
            Ok(()) => Ok(out.0),
            Err(e) => Err(format!("{} {} {:?} {:?}", e.class.name(), e.message, e.offset,
                                  e.path.clone().map(|p| String::from_utf8_lossy(&p).into_owned()))),
        }
    }

    /// Consecutive fragments of one block joined (the events any cut gives, compared).
    fn joined(events: Vec<String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for event in events {
            if let (Some(last), true) = (out.last_mut(), event.starts_with("block ")) {
                let parts: Vec<&str> = event.splitn(5, ' ').collect();
                if (last.starts_with("block ") && last.contains(" 10 [") || last.contains(" 00 ["))
                    && (parts[3] == "00" || parts[3] == "01") {
                        let (head, rest) = parts[4].split_once("] ").unwrap_or((parts[4], ""));
                        let (lhead, ltail) = last.rsplit_once("] ").unwrap_or((last.as_str(), ""));
                        let merged = format!("{lhead}{}] {ltail}{}", &head[1..], if rest.is_empty() { "" } else { " | " });
                        let merged = format!("{merged}{rest}");
                        let merged = if parts[3] == "01" { merged.replacen(" 10 [", " 11 [", 1).replacen(" 00 [", " 01 [", 1) } else { merged };
                        *last = merged;
                        continue;
                    }
            }
            out.push(event);
        }
        out
    }

    const BODY: &[u8] = br#"{"model":"m","options":{"temperature":0.5,"num_ctx":4096,"stop":["x"]},"messages":[
        {"role":"system","content":"be brief"},
        {"content":"look \u00e9\n","role":"user","images":["iVBORw0KGgoAAAANSUhEUg=="]},
        {"role":"assistant","thinking":"hmm","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":[1,{"b":"c\"d"}]}}},{"id":"call_9","function":{"arguments":{},"name":"g","index":1,"x":true},"y":null}]},
        {"role":"tool","content":"r1","tool_name":"f"},
        {"role":"tool","tool_call_id":"call_9"},
        {"role":"critic","content":"odd","tool_name":"n"}],
        "tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}},{"type":"web"}],
        "format":"json","think":"high","keep_alive":"5m"}"#;

    #[test]
    fn a_body_decodes_the_same_at_every_cut() {
        let whole = decode(BODY, &[]).unwrap();
        for cut in 1..BODY.len() {
            assert_eq!(joined(decode(BODY, &[cut]).unwrap()), joined(whole.clone()), "cut at {cut}");
        }
        // (Python's RequestDecoder gives these events for BODY: a whole payload's first
        // fragment goes out as it comes, the close adds an empty last one)
        let expected = [
            r##"system-end"##,
            r##"control model "m" key=Some("model") raw=Some("\"m\"")"##,
            r##"control temperature 0.5 key=Some("options.temperature") raw=Some("0.5")"##,
            r##"extension $.options.num_ctx 4096 None false"##,
            r##"control stop ["x"] key=Some("options.stop") raw=Some("[\"x\"]")"##,
            r##"block system-instruction 0 10 [be brief] "##,
            r##"block system-instruction 0 01 [] "##,
            r##"block user-text 1 10 [look \u00e9\n] in_parts=true"##,
            r##"block user-text 1 01 [] "##,
            r##"block user-image 1 10 [iVBORw0KGgoAAAANSUhEUg==] source="base64" media_type="image/png""##,
            r##"block user-image 1 01 [] "##,
            r##"block assistant-reasoning 2 10 [hmm] "##,
            r##"block assistant-reasoning 2 01 [] "##,
            r##"block assistant-text 2 11 [] "##,
            r##"block tool-call 2 10 [{\"a\":[1,{\"b\":\"c\\\"d\"}]}] id="call_ollama_2_0" name="f""##,
            r##"block tool-call 2 01 [] "##,
            r##"block tool-call 2 10 [{}] id="call_9""##,
            r##"block tool-call 2 01 [] name="g" call_index=1 ollama_extra="\"x\":true" ollama_call_extra="\"y\":null""##,
            r##"block tool-result 3 10 [r1] "##,
            r##"block tool-result 3 01 [] tool_call_id="call_ollama_2_0" name="f""##,
            r##"block tool-result 4 10 [] empty=true"##,
            r##"block tool-result 4 01 [] ollama_no_tool_name=true tool_call_id="call_9""##,
            r##"block unknown 5 10 ["odd] role="critic" dialect="ollama" key="content""##,
            r##"block unknown 5 01 ["] "##,
            r##"extension $.messages[5].tool_name "n" Some(5) false"##,
            r##"messages-end"##,
            r##"block tool-definition -1 11 [{"type":"object"}] name="f" description="d" path="$.tools[0]""##,
            r##"block unknown -1 11 [{"type":"web"}] dialect="ollama" where="tool""##,
            r##"control response_format {"type":"json_object"} key=Some("format") raw=Some("\"json\"")"##,
            r##"control reasoning {"effort":"high"} key=Some("think") raw=Some("\"high\"")"##,
            r##"extension $.keep_alive "5m" None false"##,
            r##"control stream true key=None raw=None"##,
            r##"end"##,
        ];
        assert_eq!(whole, expected);
    }

    #[test]
    fn errors_name_the_value() {
        let err = |body: &[u8]| decode(body, &[]).unwrap_err();
        assert_eq!(err(br#"{"messages":[]}"#),
                   "SchemaError the request body has no 'model' (required) Some(14) Some(\"$\")");
        assert_eq!(err(br#"{"model":"m","stream":"yes"}"#),
                   "SchemaError expected a boolean or null for stream, got string Some(22) Some(\"$.stream\")");
        assert_eq!(err(br#"{"model":"m","options":{"seed":1.5}}"#),
                   "SchemaError expected an integer or null for options.seed, got a number with a fraction Some(31) Some(\"$.options.seed\")");
        assert_eq!(err(br#"{"model":"m","messages":[{"content":"x"}]}"#),
                   "SchemaError message without role Some(39) Some(\"$.messages[0]\")");
        assert_eq!(err(br#"{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":""}]}]}"#),
                   "SchemaError tool call id is not a non-empty string None None");
        assert_eq!(err(br#"{"model":"m","messages":[{"role":"tool","tool_name":"\ud800"}]}"#),
                   "LoneSurrogateError lone surrogate escape in a value read as text (not Unicode) Some(52) Some(\"$.messages[0].tool_name\")");
    }

    #[test]
    fn content_before_role_waits_for_it() {
        let events = decode(br#"{"model":"m","messages":[{"content":"hi","images":["R0lGODlh"],"role":"assistant"}]}"#, &[30]).unwrap();
        let text = events.join("\n");
        assert!(text.contains("block assistant-text 0 10 [hi] \nblock assistant-text 0 01 [] \nblock user-image 0 10 [R0lGODlh] source=\"base64\" media_type=\"image/gif\" role=\"assistant\"\nblock user-image 0 01 [] "), "{text}");
    }
}
