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
// `data_url: true`; a raw base64 `file_data` has `data_url: false` and the media type its
// first bytes show (`images::sniff_file_type`); so has a data URL labelled with no type
// (`images::UNNAMED_TYPES`), its label kept as `data_url_type` for openai.
//
// The Python readers (MessageReader, ToolCallReader, PartReader, MediaReader) are
// fields of `Openai`: one of each is open at a time (the schema fixes the nesting),
// and the states `S` say which handler a token goes to.

pub(crate) use decoder::RequestDecoder;

mod decoder {
    use std::borrow::Cow;

    use super::super::controls;
    use crate::canonical::{Block, Event, Section, REQUEST_LEVEL};
    use crate::compact::{Data, Key, Raw};
    use crate::decoding::{
        carries_nothing, dumps, dumps_key, get_attr, index_at, keep_members, member_path, loads, set_attr, Attr, BlockBuilder, Cx, Dialect, Frame, Machine, MachineDecoder,
        Expect, MessageBase, Read, RequestBody, OPT_STRING, STRING,
    };
    use crate::dialects::fields::{self, OPENAI_REASONING_EFFORTS as EFFORTS};
    use crate::error::{Error, ErrorClass, Result};
    use crate::json::{py_str_repr, Token};
    use crate::losses::{MESSAGE_CACHE_CONTROL, RESULT_CACHE_CONTROL};
    use crate::session::Session;
    use crate::losses::{CALL_INDEX, DATA_URL_TYPE, THINKING_BLOCK};
    use crate::value::{str_json, Value};

    const DIALECT: &str = "openai";
    const CONTENT_BEFORE_ROLE: &str = "openai:content-before-role";
    /// a tool message waits for its call id in a request with custom tool calls (`_awaits`)
    const RESULT_BEFORE_CALL_ID: &str = "openai:result-before-call-id";
    /// an assistant message waits for its `thinking_blocks` (`_awaits`)
    const THINKING_BEFORE_CONTENT: &str = "openai:thinking-before-content";
    /// `_REASONING_TEXT_KEYS`: a message's reasoning as text, read as a member of its own
    const REASONING_TEXT_KEYS: &[&[u8]] = &[b"reasoning_content", b"reasoning"];
    /// the most of a media URL held to find a data URL's header (up to its comma)
    const DATA_URL_PREFIX_LIMIT: usize = 256;
    /// `EXTRA_ATTR`: an openai-only member of a part or tool call, as JSON text (`"k":v,...`)
    const EXTRA_ATTR: &str = "openai_extra";
    /// `FUNCTION_EXTRA_ATTR`: the same for a member of a tool call's `function`
    const FUNCTION_EXTRA_ATTR: &str = "openai_function_extra";

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
    pub(crate) enum Part {
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
    pub(crate) enum Member {
        Refusal,
        /// `Options.openai_reasoning_field`'s key
        Reasoning,
    }

    /// The handlers (Python's bound methods and lambdas), by what they read.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum S {
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
        ExtensionRaw,
        /// a message's `cache_control` (`_cache_control`)
        MessageCache,
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
        /// an openai-only member of a tool call (`_extra`); of its `function` (not the legacy
        /// `function_call`): kept apart, in `openai_function_extra`
        Extra { function: bool },
        /// a tool call's `index` (`_index`): at the call's position it says nothing
        CallIndex,
        /// a message's `thinking_blocks` (`_thinking_blocks`): its first token; its elements;
        /// one element, read whole
        ThinkingBlocks,
        ThinkingList,
        ThinkingBlock,
        Parts,
        /// the keys of a content part (`PartReader.on_key`)
        Part,
        PartType,
        Payload(Part),
        /// an unknown member of a part (`_raw_member`)
        RawMember,
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
        /// tool-result text blocks of this message so far (`_results`)
        results: u32,
        /// (id, type) as JSON of the request's calls of a type other than function
        /// (`RequestDecoder.typed_calls`: carried from message to message)
        typed_calls: Vec<(Vec<u8>, Vec<u8>)>,
        /// the message's end was read (`_ended`)
        ended: bool,
        /// the payload being read (Python's builder held by a reader)
        building: Option<BlockBuilder>,
        /// finished payload, not yet closed (`_open`)
        open: Option<BlockBuilder>,
        /// the position of the next call in `tool_calls` (`_call_position`)
        call_position: usize,
        /// the message's `cache_control` as JSON (`_cache_raw`), placed at its end
        cache_raw: Option<Vec<u8>>,
        /// its `thinking_blocks` went out (`_thinking_read`); how many blocks they had
        thinking_read: bool,
        thinking_blocks_read: usize,
        /// an assistant's `reasoning_content` (path, raw JSON), until its end (`_reasoning_text`)
        reasoning_text: Option<(Vec<u8>, Vec<u8>)>,
    }

    impl MessageReader {
        fn new(index: i64) -> Self {
            MessageReader {
                base: MessageBase::new(index, CONTENT_BEFORE_ROLE, None),
                tool_call_id: None,
                id_given: false,
                empty_parts: false,
                unknown_parts: false,
                results: 0,
                typed_calls: Vec::new(),
                ended: false,
                building: None,
                open: None,
                call_position: 0,
                cache_raw: None,
                thinking_read: false,
                thinking_blocks_read: 0,
                reasoning_text: None,
            }
        }

        fn index(&self) -> i64 {
            self.base.index
        }

        fn emit(&mut self, block: Block<'_>, cx: &mut Cx<'_>) -> Result<()> {
            let mut r = Resolving::of(&mut self.unknown_parts, &mut self.results, &self.typed_calls, &self.tool_call_id);
            self.base.emit(block, cx, |role, block| resolve(&mut r, role, block))
        }

        fn set_role(&mut self, role: Value, offset: u64, thinking_first: bool, cx: &mut Cx<'_>) -> Result<()> {
            if let Value::Str(name) = &role {
                if self.thinking_blocks_read > 0 && name != b"assistant" {
                    return Err(cx.error(format!("thinking_blocks in a message of role {} (an assistant's only)",
                                                py_str_repr(name)), offset));
                }
            }
            self.sync_awaits(&role, thinking_first);
            let mut r = Resolving::of(&mut self.unknown_parts, &mut self.results, &self.typed_calls, &self.tool_call_id);
            self.base.set_role(role, offset, cx, |role, block| resolve(&mut r, role, block))?;
            self.recount_open(cx) // what it keeps back now waits where the message's blocks do
        }

        /// `_awaits`: what the message's blocks wait for, as the gate's rule: in a tool message
        /// of a request with custom tool calls, its `tool_call_id` (whether it answers one
        /// decides whether a target without custom tools sends it); in an assistant message, its
        /// `thinking_blocks` (a turn's thinking comes first, as anthropic takes it; LiteLLM
        /// writes it after the content and the calls).
        fn sync_awaits(&mut self, role: &Value, thinking_first: bool) {
            let is = |name: &[u8]| matches!(role, Value::Str(r) if r == name);
            self.base.awaits = if self.ended {
                None
            } else if is(b"tool") && self.tool_call_id.is_none() && !self.typed_calls.is_empty() {
                Some(RESULT_BEFORE_CALL_ID)
            } else if is(b"assistant") && !self.thinking_read && thinking_first {
                Some(THINKING_BEFORE_CONTENT)
            } else {
                None
            };
        }

        /// `_release_awaited`: what the message awaited came (or its end): the blocks held for
        /// it go out.
        fn release_awaited(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            let mut r = Resolving::of(&mut self.unknown_parts, &mut self.results, &self.typed_calls, &self.tool_call_id);
            self.base.release_awaited(cx, |role, block| resolve(&mut r, role, block))?;
            self.recount_open(cx)
        }

        fn recount_open(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            match self.open.as_mut() {
                Some(open) => self.base.recount(open, cx.session),
                None => Ok(()),
            }
        }

        /// A tool call has ended: one of another type than function is remembered, so
        /// that its result says so (`ToolCallReader._end`).
        fn note_typed_call(&mut self) {
            let Some(call) = self.building.as_ref() else { return };
            let find = |name: &str| call.attrs.iter().chain(call.late.iter()).rev()
                .find(|(n, _)| n == name).map(|(_, v)| v.to_vec()).filter(|v| v.first() == Some(&b'"'));
            if let (Some(id), Some(kind)) = (find("id"), find("type")) {
                match self.typed_calls.iter_mut().find(|(known, _)| *known == id) {
                    Some(slot) => slot.1 = kind,
                    None => self.typed_calls.push((id, kind)),
                }
            }
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
                open.uncount(|counted| self.base.uncount(counted, cx.session));  // the blocks emitted now count it, if they wait
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
            let Some(builder) = self.building.as_mut() else {
                return Err(internal("a fragment without a block"));
            };
            let recount = builder.recounts(fin);
            let block = builder.fragment(data, fin);
            if recount {
                self.base.recount(builder, cx.session)?;
            }
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

        /// `_thinking_end`: the thinking went out; what waited for it follows.
        fn thinking_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            self.thinking_read = true;
            self.release_awaited(cx)
        }

        /// `_reasoning_text_end`: the message's `reasoning_content` (or `reasoning`) read as a
        /// member of its own: beside `thinking_blocks` it is their thinking as text (LiteLLM
        /// writes both), carried by them -- no loss; else the message's extension.
        fn reasoning_text_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            let Some((path, raw)) = self.reasoning_text.take() else { return Ok(()) };
            let said = carries_nothing(&raw) || self.thinking_blocks_read > 0;
            cx.extension(DIALECT, path, &raw, Some(self.index()), said)
        }
    }

    /// `_THINKING_PAYLOAD`: the payload member of each thinking block type.
    fn thinking_payload(kind: &[u8]) -> Option<&'static str> {
        match kind {
            b"thinking" => Some("thinking"),
            b"redacted_thinking" => Some("data"),
            _ => None,
        }
    }

    /// `_thinking_block`: one element of `thinking_blocks` (anthropic's thinking or
    /// redacted_thinking block, read whole) as a reasoning block, past every gate.
    fn thinking_block(msg: &mut MessageReader, data: &Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
        let Value::Object(_) = data else {
            return Err(cx.error("expected an object for a thinking block", offset));
        };
        let kind = data.get("type");
        let Some(payload_key) = (match kind {
            Some(Value::Str(kind)) => thinking_payload(kind),
            _ => None,
        }) else {
            let shown = kind.map_or_else(|| "None".to_string(), crate::unicode::py_value_repr);
            return Err(cx.error(format!("unknown thinking block type {shown} (thinking or redacted_thinking)"), offset));
        };
        let Some(Value::Str(text)) = data.get(payload_key) else {
            return Err(cx.error(format!("expected a string for {payload_key}"), offset));
        };
        let redacted = payload_key == "data";
        let mut attrs: Vec<Attr> = vec![(Cow::Borrowed(THINKING_BLOCK), Cow::Borrowed(&b"true"[..]))];
        if redacted {
            attrs.push((Cow::Borrowed("redacted"), Cow::Borrowed(&b"true"[..])));
        } else {
            match data.get("signature") {
                None | Some(Value::Null) => {}
                Some(Value::Str(signature)) => attrs.push((Cow::Borrowed("signature"), Cow::Owned(str_json(signature)))),
                Some(_) => return Err(cx.error("expected a string for signature", offset)),
            }
        }
        let own: &[&str] = if redacted { &["type", payload_key] } else { &["type", payload_key, "signature"] };
        // (LiteLLM's cache_control, any other: the block's, back into openai only)
        let members: Vec<_> = data.members().collect();
        keep_members(&members, &mut attrs, EXTRA_ATTR, &[], own);
        msg.base.emitted = true;
        msg.thinking_blocks_read += 1;
        let json = str_json(text);
        let payload = json.get(1..json.len() - 1).unwrap_or_default().to_vec();
        let block = Block { section: Section::AssistantReasoning, message: msg.index(), payload: Cow::Owned(payload),
                            init: true, fin: true, attrs: Some(attrs) };
        // past every gate, the role's too: the thinking goes ahead of the blocks held (a role
        // that comes later must be assistant: `set_role`)
        cx.emit(Event::Block(block))
    }

    /// `_place_cache_control`: a message's `cache_control` (LiteLLM's openai-format spelling) is
    /// the breakpoint of its last block, known at the message's end whatever the key order: a
    /// late attribute of the block kept open until then -- `result_cache_control` in a tool
    /// message, `message_cache_control` elsewhere. One that is not an object with members, in a
    /// message of a role openai does not know, or of a message with no block, stays the
    /// message's extension.
    fn place_cache_control(msg: &mut MessageReader, cx: &mut Cx<'_>) -> Result<()> {
        let Some(raw) = msg.cache_raw.take() else { return Ok(()) };
        let role = msg.base.role.as_deref().unwrap_or("");
        let known = matches!(role, "system" | "developer" | "user" | "assistant" | "tool" | "function");
        if raw.first() == Some(&b'{') && raw != b"{}" && known {
            let key = if matches!(role, "tool" | "function") { RESULT_CACHE_CONTROL } else { MESSAGE_CACHE_CONTROL };
            if let Some(open) = msg.open.as_mut() {
                let mut json = Vec::new();
                dumps(&loads(&raw)?, &mut json);
                open.set(key, json);
                return Ok(());
            }
        }
        let index = msg.index();
        cx.extension(DIALECT, format!("$.messages[{index}].cache_control"), &raw, Some(index), carries_nothing(&raw))
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

    /// `MessageReader._resolve`: text (built as provisional `user-text`) gets the
    /// section its role says. An unrecognised role makes its text `unknown` blocks
    /// whose payload is the raw JSON the text came in (a string, or a text part).
    /// What `_resolve` reads and keeps of its message.
    struct Resolving<'m> {
        unknown_parts: &'m mut bool,
        results: &'m mut u32,
        typed_calls: &'m [(Vec<u8>, Vec<u8>)],
        tool_call_id: &'m Option<Vec<u8>>,
    }

    impl<'m> Resolving<'m> {
        fn of(unknown_parts: &'m mut bool, results: &'m mut u32, typed_calls: &'m [(Vec<u8>, Vec<u8>)],
              tool_call_id: &'m Option<Vec<u8>>) -> Self {
            Resolving { unknown_parts, results, typed_calls, tool_call_id }
        }

        /// The type of the call the message's `tool_call_id` names, if not a function.
        fn call_type(&self) -> Option<&[u8]> {
            let id = self.tool_call_id.as_deref()?;
            self.typed_calls.iter().find(|(known, _)| known == id).map(|(_, kind)| kind.as_slice())
        }
    }

    fn resolve<'e>(r: &mut Resolving<'_>, role: &str, block: Block<'e>) -> Block<'e> {
        let call_type = r.call_type().map(<[u8]>::to_vec);
        let unknown_parts = &mut *r.unknown_parts;
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
            if section == Section::ToolResult {
                // a further text part is more of the same result
                if *r.results > 0 {
                    set_block_attr(&mut fresh, "in_result", b"true".to_vec());
                }
                *r.results += 1;
                if let Some(kind) = call_type {
                    set_block_attr(&mut fresh, "call_type", kind); // it answers a custom tool's call
                }
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
                let empty = attrs.as_ref().and_then(|a| a.iter().find(|(n, _)| n == "empty"))
                    .is_some_and(|(_, v)| truthy_json(v));
                if empty {
                    // no content, null or []: nothing to carry raw
                    return Block { section, message: block.message, payload: Cow::Borrowed(b""), init: true, fin: block.fin, attrs };
                }
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
        /// among the message's tool_calls (`losses::CALL_INDEX`)
        position: usize,
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
        /// where each member of `raw_parts` starts
        member_starts: Vec<usize>,
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
    pub(crate) struct Openai {
        body: RequestBody,
        /// `Options.openai_reasoning_field`
        reasoning_key: Option<String>,
        /// an assistant message's blocks wait for its thinking_blocks (a turn's thinking comes
        /// first, whatever the target), unless reordering is refused
        thinking_first: bool,
        /// the key of the member whose value is being read (a member reader's `key`)
        key: Vec<u8>,
        msg: MessageReader,
        call: ToolCallReader,
        part: PartReader,
        media: MediaReader,
    }

    /// The openai Chat Completions request decoder (`RequestDecoder`).
    pub(crate) type RequestDecoder = MachineDecoder<Openai>;

    impl RequestDecoder {
        pub fn new(session: &Session) -> Self {
            RequestDecoder {
                m: Machine::starting(Read::State(S::Start)),
                d: Openai {
                    body: RequestBody::new(fields::OPENAI_REQUIRED, true),
                    reasoning_key: session.options.openai_reasoning_field.clone(),
                    thinking_first: !session.options.refuse_reorder,
                    key: Vec::new(),
                    msg: MessageReader::new(-1),
                    call: ToolCallReader::default(),
                    part: PartReader::default(),
                    media: MediaReader { part: Part::ImageUrl, prefix: Vec::new(), prefix_done: true },
                },
            }
        }
    }

    fn lossy(key: &[u8]) -> String {
        String::from_utf8_lossy(key).into_owned()
    }

    /// A known key (one a state was chosen for: ASCII) as the attribute name it becomes.
    fn key_text(key: &[u8]) -> Result<String> {
        String::from_utf8(key.to_vec()).map_err(|_| internal("an attribute name that is not UTF-8"))
    }

    /// `_MESSAGE_MEMBER_TYPES`: the type of a message member carried as an extension.
    fn message_member_type(key: &[u8]) -> (Option<Expect>, &'static str) {
        match key {
            b"name" => (Some(OPT_STRING), "name"),
            _ => (None, ""),
        }
    }

    /// `_MEDIA_MEMBER_TYPES`: the type of a media part's member besides its payload.
    fn media_member_type(key: &[u8]) -> (Option<Expect>, &'static str) {
        match key {
            b"detail" => (Some(STRING), "detail"),
            b"format" => (Some(STRING), "format"),
            b"file_id" => (Some(STRING), "file_id"),
            b"filename" => (Some(STRING), "filename"),
            _ => (None, ""),
        }
    }

    impl Openai {
        fn remember_key(&mut self, key: &[u8]) {
            self.key.clear();
            self.key.extend_from_slice(key);
        }

        // -- top level -----------------------------------------------------------

        /// `_top_field`: a body member that is neither messages nor tools.
        fn top_field(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            let key = self.key.as_slice();
            if key == b"reasoning_effort" && raw != b"null" {
                let known = matches!(cx.data(raw, offset)?, Value::Str(s) if EFFORTS.iter().any(|e| e.as_bytes() == s));
                if !known {
                    let raw = String::from_utf8_lossy(raw);
                    return Err(cx.error(format!("unknown reasoning_effort {raw} (one of {})", EFFORTS.join(", ")), offset));
                }
            }
            if fields::sets_nothing(DIALECT, key, raw)? {
                // the same as absent ("tool_choice": null, "metadata": {})
                return cx.extension(DIALECT, member_path(format_args!("$."), key), raw, None, true);
            }
            // (a key that is not UTF-8 holds a lone surrogate: no control has such a name)
            let control = match std::str::from_utf8(key) {
                Ok(name) => controls::decode(name, raw)?,
                Err(_) => None,
            };
            if key == b"stream_options" {
                if let Some(control) = &control {
                    cx.session.asks_stream_usage = crate::dialects::openai::request::includes_usage(&control.value)?;
                }
            }
            match control {
                Some(control) => {
                    let control = cx.checked(control, raw, offset)?;
                    cx.emit(Event::Control(control))
                }
                None => cx.extension(DIALECT, member_path(format_args!("$."), key), raw, None, false),
            }
        }

        /// `_tool` of a tool object's text: read in place when canonical (compact.rs), else parsed.
        fn tool_text(&mut self, raw: &[u8], legacy: bool, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match Raw::canonical_with_members(raw) {
                Some((tool, members)) => self.tool(tool, Some(members), legacy, offset, cx),
                None => {
                    let tool = cx.data(raw, offset)?;
                    self.tool(&tool, None, legacy, offset, cx)
                }
            }
        }

        /// `_tool`: one element of `tools` / `functions`.
        fn tool<'a, D: Data<'a>>(&mut self, tool: D, members: Option<Vec<(Key<'a>, D)>>, legacy: bool, offset: u64,
                                 cx: &mut Cx<'_>) -> Result<()> {
            let path = self.body.next_element_path(if legacy { "functions" } else { "tools" });
            if !tool.is_object() {
                return Err(cx.error("expected an object for a tool", offset));
            }
            cx.refuse_overflow(&tool.json(), offset)?;
            let block = match controls::tool_to_canonical(tool, members, legacy) {
                None => {
                    let attrs = vec![
                        (Cow::Borrowed("dialect"), Cow::Owned(str_json(DIALECT))),
                        (Cow::Borrowed("where"), Cow::Owned(str_json("tool"))),
                    ];
                    Block { section: Section::Unknown, message: REQUEST_LEVEL, payload: tool.json(), init: true,
                            fin: true, attrs: Some(attrs) }
                }
                Some((mut attrs, schema)) => {
                    cx.check_tool_attrs(&mut attrs, &if legacy { path.clone() } else { format!("{path}.function") }, offset)?;
                    attrs.push((Cow::Borrowed("path"), Cow::Owned(str_json(&path))));
                    let payload = schema.map_or(Cow::Borrowed(&b""[..]), Data::json);
                    Block { section: Section::ToolDefinition, message: REQUEST_LEVEL, payload,
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
                b"cache_control" => Read::Raw(S::MessageCache, None, ""),
                b"thinking_blocks" if matches!(self.msg.base.role.as_deref(), None | Some("assistant")) => {
                    Read::State(S::ThinkingBlocks)
                }
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
            if msg.base.role.is_none() {
                msg.close_open(cx)?;
                return Err(cx.error("message without role", offset));
            }
            place_cache_control(msg, cx)?;
            msg.close_open(cx)?;
            msg.ended = true;
            msg.release_awaited(cx)?;
            msg.reasoning_text_end(cx)?;
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
            let attrs = if legacy { vec![(Cow::Borrowed("legacy"), Cow::Borrowed(&b"true"[..]))] } else { Vec::new() };
            self.msg.builder(Section::ToolCall, attrs, cx)
        }

        /// `ToolCallReader.on_key`.
        fn tool_call_key(&mut self, m: &mut Machine<S>, token: Token<'_>, cx: &mut Cx<'_>) -> Result<()> {
            match token {
                Token::ObjectEnd => {
                    m.pop();
                    self.msg.note_typed_call();
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
                Token::Key(b"index") => {
                    m.then(Read::Raw(S::CallIndex, None, ""));
                    Ok(())
                }
                Token::Key(key) => {
                    self.remember_key(key);
                    m.then(Read::Raw(S::Extra { function: false }, None, ""));
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
                    // a member of `function` (of `function_call` itself, for the legacy form)
                    self.remember_key(key);
                    m.then(Read::Raw(S::Extra { function: !self.call.legacy }, None, ""));
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
            let in_parts = || vec![(Cow::Borrowed("in_parts"), Cow::Borrowed(&b"true"[..]))];
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
                let mut attrs: Vec<Attr> = vec![(Cow::Borrowed("dialect"), str_json(DIALECT).into()), (Cow::Borrowed("in_parts"), Cow::Borrowed(b"true"))];
                if let Some(role) = &self.msg.base.role {
                    attrs.push((Cow::Borrowed("role"), str_json(role).into()));
                }
                self.msg.builder(Section::Unknown, attrs, cx)?;
                self.msg.fragment(&raw, true, cx)?;
                return self.msg.finished(cx);
            }
            if !self.part.raw_parts.is_empty() {
                // extra keys on a known part; its cache_control (an object or null), before or
                // after its payload, is the block's attribute (an anthropic block's)
                let members = std::mem::take(&mut self.part.raw_parts);
                let starts = std::mem::take(&mut self.part.member_starts);
                let mut extras: Vec<u8> = Vec::new();
                let mut caches: Vec<Vec<u8>> = Vec::new();
                let mut cache_first = false;
                for (i, &start) in starts.iter().enumerate() {
                    let end = starts.get(i + 1).map_or(members.len(), |next| next - 1);
                    let member = &members[start..end];
                    let value = member.strip_prefix(&b"\"cache_control\":"[..]);
                    match value.filter(|raw| *raw == b"null" || raw.first() == Some(&b'{')) {
                        Some(raw) => {
                            if extras.is_empty() && caches.is_empty() {
                                cache_first = true;
                            }
                            let mut json = Vec::new();
                            dumps(&loads(raw)?, &mut json);
                            caches.push(json);
                        }
                        None => {
                            if !extras.is_empty() {
                                extras.push(b',');
                            }
                            extras.extend_from_slice(member);
                        }
                    }
                }
                let block = self.msg.current()?;
                if !cache_first && !extras.is_empty() {
                    add_extra(block, &extras, EXTRA_ATTR)?;
                }
                for json in caches {
                    block.set("cache_control", json);
                }
                if cache_first && !extras.is_empty() {
                    add_extra(block, &extras, EXTRA_ATTR)?;
                }
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
                    let (expect, what) = media_member_type(key);
                    m.then(Read::Value(S::MediaAttr, expect, what));
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
            if fin || self.prefix_complete()? {
                self.flush_prefix(fin, cx)?;
            }
            Ok(())
        }

        /// `MediaReader._prefix_complete`: whether the held start of the payload says what it
        /// is -- a data URL's header ends at its comma (past the limit there is none); a file's
        /// data URL labelled with no type is held on until its first `SNIFF_BYTES` characters.
        fn prefix_complete(&self) -> Result<bool> {
            let prefix = &self.media.prefix;
            let Some(comma) = prefix.iter().position(|&b| b == b',') else {
                return Ok(prefix.len() > DATA_URL_PREFIX_LIMIT);
            };
            if !self.unnamed(data_url_label(&prefix[..comma])?.as_deref()) {
                return Ok(true);
            }
            let mut sniffed = Vec::new();
            crate::images::keep_head(&mut sniffed, &prefix[comma + 1..]); // (a comma is never inside an escape)
            Ok(sniffed.len() >= crate::images::SNIFF_BYTES)
        }

        /// `MediaReader._unnamed`: whether a data URL's `label` (None: not a data URL) is a
        /// file's that names no type.
        fn unnamed(&self, label: Option<&[u8]>) -> bool {
            self.media.part == Part::File && label.is_some_and(crate::images::names_no_type)
        }

        /// `MediaReader._flush_prefix`.
        fn flush_prefix(&mut self, last: bool, cx: &mut Cx<'_>) -> Result<()> {
            let data = std::mem::take(&mut self.media.prefix);
            self.media.prefix_done = true;
            let comma = data.iter().position(|&b| b == b',');
            let label = comma.map(|comma| data_url_label(&data[..comma])).transpose()?.flatten();
            if let (Some(comma), Some(label)) = (comma, label) {
                let rest = &data[comma + 1..];
                let mut shown = None;
                if self.unnamed(Some(&label)) {
                    // its type is the one its first bytes show, if any
                    let mut sniffed = Vec::new();
                    crate::images::keep_head(&mut sniffed, rest);
                    shown = crate::images::sniff_file_type(&sniffed);
                }
                let builder = self.msg.current()?;
                builder.set("source", str_json("base64"));
                let mut label_json = Vec::new();
                dumps_key(&label, &mut label_json);
                builder.set("media_type", shown.map_or_else(|| label_json.clone(), str_json));
                builder.set("data_url", b"true".to_vec());
                if shown.is_some() {
                    builder.set(DATA_URL_TYPE, label_json); // (written back as it came)
                }
                return self.msg.fragment(rest, last, cx);
            }
            let builder = self.msg.current()?;
            if self.media.part == Part::ImageUrl {
                builder.set("source", str_json("url"));
            } else {
                // file_data that is not a data URL: base64 as given, written back without a prefix
                builder.set("source", str_json("base64"));
                builder.set("data_url", b"false".to_vec());
                // its type is the one its first bytes show (a PDF, an image), as a data URL's header
                // says it; read before any comma, which the hold ends at (the same at every cut)
                let before_comma = data.split(|&b| b == b',').next().unwrap_or_default();
                let mut sniffed = Vec::new();
                crate::images::keep_head(&mut sniffed, before_comma);
                if let Some(media_type) = crate::images::sniff_file_type(&sniffed) {
                    builder.set("media_type", str_json(media_type));
                }
            }
            self.msg.fragment(&data, last, cx)
        }
    }

    /// `_data_url_label`: the label of a data URL's header -- `head`, the text before its comma,
    /// is `data:<label>;base64` -- or None: not one. (A comma past the limit is one a cut body
    /// never waits for: not a data URL either way.)
    fn data_url_label(head: &[u8]) -> Result<Option<Cow<'_, [u8]>>> {
        if head.len() > DATA_URL_PREFIX_LIMIT {
            return Ok(None);
        }
        let meta = crate::canonical::decode_escaped(head)?;
        if !(meta.starts_with(b"data:") && meta.ends_with(b";base64")) {
            return Ok(None);
        }
        let label = 5..meta.len() - 7;
        Ok(Some(match meta {
            Cow::Borrowed(meta) => Cow::Borrowed(&meta[label]),
            Cow::Owned(meta) => Cow::Owned(meta[label].to_vec()),
        }))
    }

    /// `add_extra(block, key, raw)` for members already written as `"k":v,...`:
    /// `openai_extra` holds the members' JSON text, spliced back by the openai encoder.
    fn add_extra(block: &mut BlockBuilder, members: &[u8], attr: &'static str) -> Result<()> {
        let existing = get_attr(&block.late, attr).or_else(|| get_attr(&block.attrs, attr));
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
        block.set(attr, json);
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
                    let (expect, what) = message_member_type(&self.key);
                    m.read(Read::Raw(S::ExtensionRaw, expect, what));
                    Ok(())
                }
                S::ThinkingBlocks => {
                    if token == Token::Null {
                        self.msg.null("thinking_blocks", cx)?;
                        return self.msg.thinking_end(cx);
                    }
                    self.msg.close_open(cx)?; // (a block before them ends here: the thinking goes on its own)
                    m.read(Read::Elements(S::ThinkingList, "thinking_blocks"));
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

        fn element(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Tools { legacy } => {
                    // an object is read as text, in place when canonical (`tool_text`); else as data
                    let tool = S::Tool { legacy };
                    m.read(if token == Token::ObjectStart { Read::Raw(tool, None, "") } else { Read::Value(tool, None, "") });
                    Ok(())
                }
                S::ThinkingList => {
                    m.read(Read::Value(S::ThinkingBlock, None, ""));
                    Ok(())
                }
                _ => Err(internal("an element outside tools")),
            }
        }

        fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Messages => {
                    // `_message`: a new MessageReader
                    let typed_calls = std::mem::take(&mut self.msg.typed_calls);
                    self.msg = MessageReader::new(self.body.next_message());
                    self.msg.typed_calls = typed_calls;
                    m.push(Frame::State(S::Message));
                }
                S::ToolCallList => {
                    self.call.position = self.msg.call_position;
                    self.msg.call_position += 1;
                    self.tool_call(false, cx)?;
                    m.push(Frame::State(S::ToolCall));
                }
                S::Parts => {
                    self.part.kind = None;
                    self.part.has_block = false;
                    self.part.raw_parts.clear();
                    self.part.member_starts.clear();
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
                S::ThinkingList => {
                    if self.msg.thinking_blocks_read == 0 {
                        // `[]`: nothing, kept for openai
                        let index = self.msg.index();
                        cx.extension(DIALECT, format!("$.messages[{index}].thinking_blocks"), b"[]", Some(index), true)?;
                    }
                    self.msg.thinking_end(cx)
                }
                _ => Ok(()),
            }
        }

        fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::TopField => self.top_field(raw, offset, cx),
                S::Tool { legacy } => self.tool_text(raw, legacy, offset, cx),
                S::MessageCache => {
                    self.msg.cache_raw = Some(raw.to_vec());
                    Ok(())
                }
                S::ExtensionRaw => {
                    let index = self.msg.index();
                    let path = member_path(format_args!("$.messages[{index}]."), &self.key);
                    if REASONING_TEXT_KEYS.contains(&self.key.as_slice())
                        && matches!(self.msg.base.role.as_deref(), None | Some("assistant"))
                    {
                        // (said by the thinking_blocks? known at the end)
                        self.msg.reasoning_text = Some((path, raw.to_vec()));
                        return Ok(());
                    }
                    cx.extension(DIALECT, path, raw, Some(index), carries_nothing(raw))
                }
                S::CallIndex => {
                    // (a client that accumulated streamed deltas left it): at the call's position
                    // it says nothing (`losses::CALL_INDEX`), else an openai-only member
                    let position = self.call.position;
                    if loads(raw).is_ok_and(|value| index_at(&value, position)) {
                        self.msg.current()?.set(CALL_INDEX, position.to_string().into_bytes());
                        return Ok(());
                    }
                    let mut member = Vec::with_capacity(raw.len() + 8);
                    push_member(&mut member, b"index", raw);
                    add_extra(self.msg.current()?, &member, EXTRA_ATTR)
                }
                S::Extra { function } => {
                    let mut member = Vec::with_capacity(self.key.len() + raw.len() + 3);
                    push_member(&mut member, &self.key, raw);
                    add_extra(self.msg.current()?, &member, if function { FUNCTION_EXTRA_ATTR } else { EXTRA_ATTR })
                }
                S::RawMember => {
                    let start = if self.part.raw_parts.is_empty() { 0 } else { self.part.raw_parts.len() + 1 };
                    self.part.member_starts.push(start);
                    push_member(&mut self.part.raw_parts, &self.key, raw);
                    Ok(())
                }
                _ => Err(internal(&format!("state {s:?} takes no raw value"))),
            }
        }

        fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Tool { legacy } => self.tool(&value, None, legacy, offset, cx),
                S::Role => self.msg.set_role(value, offset, self.thinking_first, cx),
                S::ThinkingBlock => thinking_block(&mut self.msg, &value, offset, cx),
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
                    msg.release_awaited(cx)
                }
                S::CallId | S::CallName | S::MediaAttr => {
                    let mut json = Vec::new();
                    dumps(&value, &mut json);
                    let name: Cow<'static, str> = match s {
                        S::CallId => Cow::Borrowed("id"),
                        S::CallName => Cow::Borrowed("name"),
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
}

// -- encoder (helper E) -----------------------------------------------------------------

use std::borrow::Cow;

use crate::canonical::{Block, Control, Event, Extension, Section, TOP_LEVEL_SYSTEM};
use crate::encoding::{
    attr, attr_is, call_key, message_member, skip_chars, attr_truthy, foreign_extension, has_attr, json_str, lose, lose_block, lose_field,
    lose_moved, late_only, lose_signature, lose_unplaced, merged, merged_reasoning, on_block, tool_definition, where_, Attr,
    Head, BlockRef, Encode, First, InBlock, Io, MessageAssembler, MessageCloser, MessageListBody, Opener,
    OwnedAttrs, PlaceBlocks, ToolDefinitions, WriterId, Writers, CallBatch, PARTS_CONTENT, STRING_CONTENT,
};
use crate::error::{Error, ErrorClass, Result};
use crate::jsonwriter::dumps_str;
use crate::losses::{is_internal_attr, CALL_INDEX, DATA_URL_TYPE, MESSAGE_CACHE_CONTROL, RESULT_CACHE_CONTROL, THINKING_BLOCK};
use crate::naming::openai_id;
use crate::reorder::Hold;
use crate::session::Session;

use super::controls;

const DIALECT: &str = "openai";

/// `_SAYING_SECTIONS`: the sections whose text openai writes into a message's content: where a
/// message "says json"
const SAYING_SECTIONS: [Section; 4] = [Section::SystemInstruction, Section::UserText, Section::AssistantText, Section::ToolResult];
/// `len(b"json") - 1`: the bytes of a text block's fragments kept for the word cut after them
const WORD_TAIL: usize = 3;

/// The last bytes of a text block's fragments (at most `WORD_TAIL`).
#[derive(Clone, Copy, Default)]
struct WordTail {
    bytes: [u8; WORD_TAIL],
    len: usize,
}

impl WordTail {
    /// The tail's bytes, then `more`'s first `WORD_TAIL` (`tail + more[:3]`), and their length.
    fn joined(self, more: &[u8]) -> ([u8; 2 * WORD_TAIL], usize) {
        let more = &more[..more.len().min(WORD_TAIL)];
        let mut joined = [0u8; 2 * WORD_TAIL];
        joined[..self.len].copy_from_slice(&self.bytes[..self.len]);
        joined[self.len..self.len + more.len()].copy_from_slice(more);
        (joined, self.len + more.len())
    }

    /// The tail after `more` came (`(tail + more[-3:])[-3:]`).
    fn after(self, more: &[u8]) -> WordTail {
        let (joined, len) = self.joined(&more[more.len().saturating_sub(WORD_TAIL)..]);
        let start = len.saturating_sub(WORD_TAIL);
        let mut tail = WordTail { bytes: [0; WORD_TAIL], len: len - start };
        tail.bytes[..tail.len].copy_from_slice(&joined[start..len]);
        tail
    }
}

/// Whether `text` holds "json", in any case of its ASCII letters.
fn has_json_word(text: &[u8]) -> bool {
    memchr::memchr2_iter(b'j', b'J', text)
        .any(|at| text.get(at + 1..at + 4).is_some_and(|rest| rest.eq_ignore_ascii_case(b"son")))
}

/// `says_json(tail, payload)`: whether a text fragment says "json" (any case), with the last
/// bytes of the block's fragments before it (`tail`); and the tail for the next fragment. Read in
/// the escaped text: no escape holds these letters (nor a hex digit), so the word found is in the
/// text; one written with `\u` escapes is not seen -- the JSON mode is then sent in the form that
/// needs no word, a valid request either way.
fn says_json(tail: WordTail, payload: &[u8]) -> (bool, WordTail) {
    let (window, len) = tail.joined(payload);
    let said = has_json_word(payload) || (tail.len > 0 && has_json_word(&window[..len]));
    (said, tail.after(payload))
}

/// A hold's controls, given back and released (`hold.drain()`; none: no allocation).
fn drained(hold: &mut Hold<Control<'static>>, io: &mut Io<'_>) -> Vec<Control<'static>> {
    if hold.is_empty() {
        return Vec::new();
    }
    hold.drain(&mut io.session.reorder).collect()
}

/// `_lose_control`: a control of another dialect not sent, recorded at its key (or its name).
fn lose_control(control: &Control<'_>, what: &str, io: &mut Io<'_>) -> Result<()> {
    use crate::losses::{lacks, path_subject};
    let path = match control.key.as_deref() {
        Some(key) => format!("$.{key}"),
        None => control.name.to_string(),
    };
    let reason = lacks(path_subject(&path), DIALECT, what, Some("not sent"));
    io.session.lose(&path, reason, control.dialect.as_deref())
}

/// `_filename`: a file part's name where the source gave none (anthropic's document): its title
/// (carried so: not a loss; true), else `document.pdf` (a PDF) or `document`, as JSON.
fn file_name(early: &[Attr<'_>], late: &[Attr<'_>], out: &mut Vec<u8>) -> bool {
    let text = |key: &str| match attr(late, key).or_else(|| attr(early, key)).map(crate::value::Value::loads) {
        Some(Ok(crate::value::Value::Str(text))) => Some(text),
        _ => None,
    };
    match text("title") {
        Some(title) if !title.is_empty() => {
            dumps_str(&title, out);
            return true;
        }
        _ if text("media_type").as_deref() == Some(&b"application/pdf"[..]) => dumps_str(b"document.pdf", out),
        _ => dumps_str(b"document", out),
    }
    false
}
const MEMBER_ORDER: &str = "openai:member-order";

/// A role as JSON text (`key_bytes(role)`: roles of other dialects' unknown blocks are any value).
type Role = Cow<'static, [u8]>;
use crate::encoding::roles::{ASSISTANT, SYSTEM, TOOL, USER};
use crate::encoding::{known_role, require_a_message, role_head, TextCallOrder};

/// `EXTRA_ATTR`: an openai-only member of a part or tool call (`"k":v,...` text).
const EXTRA_ATTR: &str = "openai_extra";
/// `FUNCTION_EXTRA_ATTR`: the members of a tool call's `function`.
const FUNCTION_EXTRA_ATTR: &str = "openai_function_extra";
/// `_STRUCTURE_ATTRS`: attributes that shape the output rather than being output fields.
fn structure_attr(key: &str) -> bool {
    is_internal_attr(key) || matches!(key, "source" | "media_type" | "tool_call_id" | "id" | "name" | "is_error")
}

/// `attrs.get(key, default)` as JSON text.
fn attr_or<'x>(attrs: &'x [Attr<'_>], key: &str, default: &'x [u8]) -> &'x [u8] {
    attr(attrs, key).unwrap_or(default)
}

/// The part attributes a media part writes inside its object (`inner`).
const IMAGE_INNER: &[&str] = &["detail"];
const FILE_INNER: &[&str] = &["filename", "file_id"];
const AUDIO_INNER: &[&str] = &["format"];

/// The named state of a placed block (what Python's `(write, close)` closures hold).
enum Placed<'a> {
    /// fragments to a writer; nothing at close (text, refusal, unknown content)
    Stream(WriterId),
    /// fragments dropped, nothing at close
    Nothing,
    /// a tool message's string (or empty: no writer) content; close: `_result_close`
    ToolText { w: Option<WriterId>, head: Head<'a> },
    /// `{"type":"text","text":"...`; close: `"`, the late attributes, `}` (a tool message's id)
    Part { w: WriterId, head: Head<'a>, tool: bool },
    /// reasoning into `Options.openai_reasoning_field`; close: a late signature is a loss
    Reasoning { w: WriterId, head: Head<'a> },
    /// a block of openai's own `thinking_blocks`; close: its signature and other members, `}`
    Thinking { w: WriterId, head: Head<'a>, redacted: bool },
    Media { w: WriterId, head: Head<'a>, outer: OwnedAttrs, has_payload: bool, inner: &'static [&'static str] },
    /// a function call; `ids`: the id list (`CallBatch`) its id goes to at the close
    Call { w: WriterId, head: Head<'a>, ids: u64 },
    LegacyCall { w: WriterId, head: Head<'a> },
    /// a tool result (`_tool_result`): a late `is_error` is a loss, then the text's close
    Result(Box<Placed<'a>>, Head<'a>),
}

impl Placed<'_> {
    /// `PlaceBlocks::keep`: the heads owned.
    fn into_owned(self) -> Placed<'static> {
        match self {
            Placed::Stream(w) => Placed::Stream(w),
            Placed::Nothing => Placed::Nothing,
            Placed::ToolText { w, head } => Placed::ToolText { w, head: head.into_owned() },
            Placed::Part { w, head, tool } => Placed::Part { w, head: head.into_owned(), tool },
            Placed::Reasoning { w, head } => Placed::Reasoning { w, head: head.into_owned() },
            Placed::Thinking { w, head, redacted } => Placed::Thinking { w, head: head.into_owned(), redacted },
            Placed::Media { w, head, outer, has_payload, inner } => Placed::Media { w, head: head.into_owned(), outer, has_payload, inner },
            Placed::Call { w, head, ids } => Placed::Call { w, head: head.into_owned(), ids },
            Placed::LegacyCall { w, head } => Placed::LegacyCall { w, head: head.into_owned() },
            Placed::Result(inner, head) => Placed::Result(Box::new(inner.into_owned()), head.into_owned()),
        }
    }
}

/// Which message a block writes into: the open one, the user message that takes a
/// tool result's media (`_moved`), or the held assistant message of calls moved out of a
/// run's tool messages (`_held_calls`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Open,
    Moved,
    Held,
}

/// Everything of the encoder but the body and the block in progress (`MessageCloser`).
struct Messages {
    foreign: bool,
    reasoning_key: Option<&'static str>,
    msg: Option<MessageAssembler>,
    msg_index: Option<i64>,
    msg_role: Option<Role>,
    msg_has_result_id: bool,
    msg_had_tool_calls: bool,
    /// an empty tool result: content "" unless parts follow
    msg_needs_content: bool,
    /// the next source message may hold tool results
    after_tool_calls: bool,
    /// source index of the last message with tool calls
    tool_calls_index: Option<i64>,
    /// a user message waiting for tool messages (its writer's hold)
    user_hold: Option<WriterId>,
    user_index: Option<i64>,
    /// the user hold holds only blocks moved out of tool messages (`_run_hold`)
    run_hold: bool,
    /// the user message that takes a tool result's images/documents while the tool
    /// message (its texts) stays open: written into the user hold
    moved: Option<MessageAssembler>,
    /// the serial of the open message (`_batch_msg is not msg`: which message that is)
    msg_serial: u64,
    /// the batch of calls the results answer, and the ids of the held calls
    calls: CallBatch,
    /// the assistant message of calls moved out of a run's tool messages, written into its
    /// hold (`openai:calls-after-run`) until the run answering the batch ends
    held_calls: Option<MessageAssembler>,
    pending_ext: Vec<Extension<'static>>,
    /// reasoning controls of other dialects, merged into one key at the end
    reasoning: Hold<Control<'static>>,
    /// another dialect's tool choice and `parallel_tool_calls`, written at the end, once the
    /// tools sent are known (`_tool_controls`)
    tool_controls: Hold<Control<'static>>,
    /// another dialect's json_object response format, held until the messages end (`_json_mode`)
    json_mode: Hold<Control<'static>>,
    /// a message's text said "json" (`_said_json`), and the open text block's last bytes
    said_json: bool,
    text_tail: WordTail,
    /// another dialect's `top_logprobs`, held until `logprobs: true` comes (`_top_logprobs`), and
    /// whether it came (`_asks_logprobs`)
    top_logprobs: Hold<Control<'static>>,
    asks_logprobs: bool,
    /// the names of the tools sent (`tools_sent`)
    tools_sent: crate::encoding::ToolsSent,
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

/// Canonical events -> an OpenAI Chat Completions request body (`RequestEncoder`).
///
/// Order rules it enforces (the holds are the reorder buffer's): system first
/// (`openai:messages-before-system`), tool messages directly after the assistant's
/// tool calls (`openai:user-before-tool-result`), members of a message in any order
/// (`openai:member-order`), fields that come while a top-level system opened the list
/// (`openai:fields-inside-messages`), reasoning controls merged (`openai:merge-reasoning`).
pub struct RequestEncoder {
    writers: Writers,
    reasoning_key: Option<&'static str>,
    /// made at the first event: Python's constructor writes the body's `{`
    state: Option<Encoding>,
}

impl RequestEncoder {
    pub fn new(session: &Session) -> Self {
        let reasoning_key = match session.options.openai_reasoning_field.as_deref() {
            Some("reasoning_content") => Some("reasoning_content"),
            Some("reasoning") => Some("reasoning"),
            _ => None,
        };
        RequestEncoder { writers: Writers::default(), reasoning_key, state: None }
    }

    fn started<'s>(state: &'s mut Option<Encoding>, reasoning_key: Option<&'static str>, io: &mut Io<'_>) -> Result<&'s mut Encoding> {
        if state.is_none() {
            let body = MessageListBody::new(io, DIALECT)?;
            let reasoning = io.hold("openai:merge-reasoning");
            let tool_controls = io.hold("openai:tool-choice-after-tools");
            let json_mode = io.hold("openai:json-mode-after-messages");
            let top_logprobs = io.hold("openai:top-logprobs-after-logprobs");
            let m = Messages {
                foreign: io.session.source != DIALECT,
                reasoning_key,
                msg: None,
                msg_index: None,
                msg_role: None,
                msg_has_result_id: false,
                msg_had_tool_calls: false,
                msg_needs_content: false,
                after_tool_calls: false,
                tool_calls_index: None,
                user_hold: None,
                run_hold: false,
                user_index: None,
                moved: None,
                msg_serial: 0,
                calls: CallBatch::default(),
                held_calls: None,
                pending_ext: Vec::new(),
                reasoning,
                tool_controls,
                json_mode,
                said_json: false,
                text_tail: WordTail::default(),
                top_logprobs,
                asks_logprobs: false,
                tools_sent: Vec::new(),
                listed: false,
                carried: false,
            };
            *state = Some(Encoding { body, m, block: InBlock::None, order: TextCallOrder::default() });
        }
        Ok(state.as_mut().expect("started"))
    }
}

impl Encode for RequestEncoder {
    fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let mut io = Io { out, session, writers: &mut self.writers };
        let e = Self::started(&mut self.state, self.reasoning_key, &mut io)?;
        match event {
            Event::Block(block) => {
                if !e.m.said_json && SAYING_SECTIONS.contains(&block.section) {
                    let tail = if block.init { WordTail::default() } else { e.m.text_tail };
                    (e.m.said_json, e.m.text_tail) = says_json(tail, &block.payload);
                }
                // `_on_block`: an openai message's `cache_control` rides on its last block
                // (`message_cache_control`, `result_cache_control` in a tool message): written
                // back as the message's member
                let attrs = block.attrs.as_deref().unwrap_or(&[]);
                if e.m.foreign || !block.fin
                    || !(has_attr(attrs, MESSAGE_CACHE_CONTROL) || has_attr(attrs, RESULT_CACHE_CONTROL)) {
                    return on_block(e, &block, &mut io);
                }
                let message_cache = attr(attrs, MESSAGE_CACHE_CONTROL).map(<[u8]>::to_vec);
                let cache = attr(attrs, RESULT_CACHE_CONTROL).map(<[u8]>::to_vec).or(message_cache).unwrap_or_default();
                let rest: Vec<Attr<'_>> = attrs.iter()
                    .filter(|(key, _)| key != MESSAGE_CACHE_CONTROL && key != RESULT_CACHE_CONTROL).cloned().collect();
                let stripped = Block { section: block.section, message: block.message, payload: Cow::Borrowed(&block.payload[..]),
                                       init: block.init, fin: block.fin, attrs: (!rest.is_empty()).then_some(rest) };
                on_block(e, &stripped, &mut io)?;
                if e.m.msg_index == Some(block.message) {
                    if let Some(msg) = e.m.msg.as_mut() {
                        msg.trailing(&mut io, "cache_control", &cache)?;
                    }
                }
                Ok(())
            }
            Event::Control(control) => e.m.on_control(&mut e.body, control, &mut io),
            Event::Extension(ext) => e.m.on_extension(&mut e.body, ext, &mut io),
            Event::SystemEnd => e.body.system_end(&mut e.m, &mut io),
            Event::MessagesEnd => {
                e.body.messages_end(&mut e.m, &mut io)?;
                e.m.write_json_mode(&mut e.body, &mut io)
            }
            Event::End => {
                e.body.end(&mut e.m, &mut io)?;
                require_a_message(e.m.listed, e.m.carried, DIALECT, io.session)?;
                e.m.write_json_mode(&mut e.body, &mut io)?;
                e.m.write_top_logprobs(&mut e.body, &mut io)?;
                e.m.write_tool_controls(&mut e.body, &mut io)?;
                e.m.write_reasoning(&mut e.body, &mut io)?;
                e.body.finish(&mut io)
            }
            _ => Ok(()),
        }
    }

    fn finish(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        let mut io = Io { out, session, writers: &mut self.writers };
        Self::started(&mut self.state, self.reasoning_key, &mut io)?;
        Ok(())
    }

    /// The body's `{`, written when the encoder is made (Python's constructor).
    fn start(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
        self.finish(session, out)
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
            Placed::Stream(w)
            | Placed::ToolText { w: Some(w), .. }
            | Placed::Part { w, .. }
            | Placed::Reasoning { w, .. }
            | Placed::Thinking { w, .. }
            | Placed::Media { w, .. }
            | Placed::Call { w, .. }
            | Placed::LegacyCall { w, .. } => io.write(*w, payload),
            Placed::Nothing | Placed::ToolText { w: None, .. } => Ok(()),
            Placed::Result(inner, _) => self.write(inner, payload, io),
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

    fn tools_key(&self, attrs: &[Attr<'_>]) -> &'static str {
        if attr_truthy(attrs, "legacy") { "functions" } else { "tools" }
    }

    fn tool_json(&mut self, attrs: &[Attr<'_>], schema: &[u8], io: &mut Io<'_>) -> Result<Vec<u8>> {
        controls::tool_from_canonical(attrs, schema, io.session)
    }

    fn tool_sent(&mut self, name: Option<Vec<u8>>) {
        self.m.tools_sent.push(name);
    }

    fn tool_element(&mut self, key: &'static str, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
        self.body.element(key, raw, &mut self.m, io)
    }
}

impl MessageCloser for Messages {
    fn close_message(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        self.close_open_message(body, io)?;
        if self.held_calls.is_some() && body.messages_ended {
            self.flush_held_calls(body, io)?;
        }
        Ok(())
    }
}

impl Messages {
    /// `_close_message` but for its last step (the held calls at the list's end).
    fn close_open_message(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        let Some(mut msg) = self.msg.take() else { return Ok(()) };
        let role = self.msg_role.as_deref().unwrap_or(b"");
        let assistant = role == ASSISTANT;
        let answered = self.msg_had_tool_calls || msg.has("function_call") || msg.has("refusal");
        if self.msg_needs_content && !msg.has("content") && !(assistant && answered) {
            msg.scalar(io, "content", b"\"\"")?;
        } else if assistant
            && io.session.source != DIALECT
            && !["content", "tool_calls", "function_call", "refusal"].iter().any(|k| msg.has(k))
        {
            // another dialect's empty assistant turn (ollama {"role": "assistant"}): openai
            // rejects an assistant message with nothing in it; its empty text is ""
            msg.scalar(io, "content", b"\"\"")?;
        }
        self.msg_needs_content = false;
        msg.close(io)?;
        if self.msg_had_tool_calls {
            self.after_tool_calls = true;
            self.tool_calls_index = self.msg_index;
        }
        if self.user_hold.is_some() && body.messages_ended {
            self.flush_user_hold(body, io)?;
        }
        Ok(())
    }

    // -- controls and extensions ----------------------------------------------------

    fn on_control(&mut self, body: &mut MessageListBody, control: Control<'_>, io: &mut Io<'_>) -> Result<()> {
        if control.dialect.as_deref() == Some(DIALECT) {
            if let Some(key) = control.key.as_deref() {
                let raw = control.raw.as_deref().unwrap_or(&control.value);
                return body.member(key, raw, self, io);
            }
        }
        crate::encoding::lose_unknown_members(&control, DIALECT, io.session)?;
        let json_mode = control.name == "response_format" && controls::json_mode(&control.value);
        if json_mode && body.messages_ended {
            return self.write_json_object(body, control, io);
        }
        let hold = match control.name.as_ref() {
            "reasoning" => &mut self.reasoning,
            "tool_choice" | "parallel_tool_calls" => &mut self.tool_controls,
            _ if json_mode => &mut self.json_mode,
            "top_logprobs" if !self.asks_logprobs => &mut self.top_logprobs,
            _ => {
                self.write_control(body, &control, io)?;
                if control.name == "logprobs" && control.value.as_ref() == b"true" && !self.asks_logprobs {
                    self.asks_logprobs = true;
                    self.write_top_logprobs(body, io)?;
                }
                return Ok(());
            }
        };
        let size = (control.value.len() + if control.name == "reasoning" { 0 } else { control.name.len() }) as u64;
        hold.append(&mut io.session.reorder, control.into_owned(), size)
    }

    /// `_write_control`: another dialect's control as openai's member (or a recorded loss).
    fn write_control(&mut self, body: &mut MessageListBody, control: &Control<'_>, io: &mut Io<'_>) -> Result<()> {
        if let Some((key, value)) = controls::encode_control(control, io.session)? {
            body.member(key, &value, self, io)?;
            if key == "stream" && value == b"true" && control.name == "stream" {
                // another dialect's client gets usage at a stream's end (anthropic message_delta,
                // ollama's done line); an openai backend sends it only when asked
                body.member("stream_options", b"{\"include_usage\":true}", self, io)?;
            }
        }
        Ok(())
    }

    fn on_extension(&mut self, body: &mut MessageListBody, ext: Extension<'_>, io: &mut Io<'_>) -> Result<()> {
        if ext.dialect != DIALECT {
            return foreign_extension(io.session, DIALECT, &ext);
        }
        match ext.message {
            None => body.member(skip_chars(&ext.path, 2), &ext.raw, self, io), // `ext.path[2:]`
            Some(index) if self.msg.is_some() && Some(index) == self.msg_index => {
                let msg = self.msg.as_mut().expect("open");
                msg.trailing(io, message_member(&ext.path, ext.message), &ext.raw)
            }
            // a field of a message whose first block has not come yet
            Some(_) => {
                self.pending_ext.push(ext.into_owned());
                Ok(())
            }
        }
    }

    /// `_write_top_logprobs`: the held `top_logprobs`: written once `logprobs: true` came; at the
    /// end without it, not sent, recorded.
    fn write_top_logprobs(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        for control in drained(&mut self.top_logprobs, io) {
            if self.asks_logprobs {
                self.write_control(body, &control, io)?;
            } else {
                lose_control(&control, "top_logprobs without logprobs: true", io)?;
            }
        }
        Ok(())
    }

    /// `_write_json_mode`: the JSON mode held for the end of the messages.
    fn write_json_mode(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        for control in drained(&mut self.json_mode, io) {
            self.write_json_object(body, control, io)?;
        }
        Ok(())
    }

    /// `_write_json_object`: another dialect's JSON mode, the messages known: `json_object` when a
    /// message says "json", else a `json_schema` of any object (openai refuses the first).
    fn write_json_object(&mut self, body: &mut MessageListBody, mut control: Control<'_>, io: &mut Io<'_>) -> Result<()> {
        if !self.said_json {
            control.value = Cow::Borrowed(controls::JSON_OBJECT_SCHEMA);
        }
        self.write_control(body, &control, io)
    }

    /// `_write_tool_controls`: the tool choice and `parallel_tool_calls`, now that the tools sent
    /// are known: with no tool sent they are not written (openai refuses them without tools; a
    /// forced choice is a recorded loss), nor a choice naming a tool that is not sent (recorded).
    fn write_tool_controls(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        use crate::value::Value;
        for control in drained(&mut self.tool_controls, io) {
            let choice = (control.name == "tool_choice").then(|| Value::loads(&control.value).ok()).flatten();
            match crate::encoding::choice_fate(choice.as_ref(), &self.tools_sent) {
                (_, Some(loss)) => lose_control(&control, loss, io)?,
                (false, None) => {} // (no tool sent: auto, none and parallel_tool_calls say nothing)
                (true, None) => self.write_control(body, &control, io)?,
            }
        }
        Ok(())
    }

    /// One `reasoning_effort` from every reasoning control: an effort wins over a budget.
    fn write_reasoning(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        if self.reasoning.is_empty() {
            return Ok(());
        }
        let items: Vec<Control<'static>> = self.reasoning.drain(&mut io.session.reorder).collect();
        let merged = merged_reasoning(&items, DIALECT, io.session)?;
        if let Some((key, value)) = controls::encode_control(&merged, io.session)? {
            body.member(key, &value, self, io)?;
        }
        Ok(())
    }

    // -- messages -----------------------------------------------------------------------

    /// Where the next message element goes (the output, or a hold). `from_tool`: a user
    /// message for blocks moved out of a tool message.
    fn messages_writer(&mut self, body: &mut MessageListBody, index: i64, role: &[u8], from_tool: bool,
                       io: &mut Io<'_>) -> Result<WriterId> {
        if index == TOP_LEVEL_SYSTEM {
            return body.messages_writer(true, self, io);
        }
        if self.after_tool_calls
            && ((role == USER && self.user_index.is_none_or(|i| i == index))
                || (from_tool && (self.run_hold || self.user_hold.is_none())))
        {
            return Ok(self.user_hold_writer(index, from_tool, io));
        }
        body.messages_writer(false, self, io)
    }

    /// `_user_hold_writer`: the user hold's writer, the hold opened for message `index` if none
    /// is open (`run_hold`: it waits for the whole run of tool messages).
    fn user_hold_writer(&mut self, index: i64, run_hold: bool, io: &mut Io<'_>) -> WriterId {
        if let Some(w) = self.user_hold {
            return w;
        }
        let w = io.writers.held(&mut io.session.reorder, "openai:user-before-tool-result");
        io.push_first(w);
        (self.user_hold, self.user_index, self.run_hold) = (Some(w), Some(index), run_hold);
        w
    }

    fn close_moved(&mut self, io: &mut Io<'_>) -> Result<()> {
        match self.moved.take() {
            Some(moved) => moved.close(io),
            None => Ok(()),
        }
    }

    /// The user message for a tool result's media, beside the result's open tool message.
    fn moved_media_message(&mut self, body: &mut MessageListBody, index: i64, io: &mut Io<'_>) -> Result<()> {
        if self.moved.is_none() {
            let w = self.messages_writer(body, index, USER, false, io)?;
            self.carried = true;
            self.moved = Some(MessageAssembler::new(w, io, MEMBER_ORDER, b"\"role\":\"user\"", None)?);
        }
        Ok(())
    }

    /// `_after_own_calls`: media moved out of the open assistant message after its tool calls
    /// (an ollama image).
    fn after_own_calls(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
        attr_is(attrs, "role", "assistant")
            && self.msg.is_some()
            && self.msg_role.as_deref() == Some(ASSISTANT)
            && self.msg_index == Some(block.message)
            && self.msg_had_tool_calls
    }

    /// `_held_media_message`: the user message for the media of the open assistant message after
    /// its tool calls: it waits, as the message's tool messages will, for the run of results to
    /// end (in the run hold), while the assistant message stays open for the rest of its members.
    fn held_media_message(&mut self, index: i64, io: &mut Io<'_>) -> Result<()> {
        if self.moved.is_none() {
            let w = self.user_hold_writer(index, true, io);
            self.carried = true;
            self.moved = Some(MessageAssembler::new(w, io, MEMBER_ORDER, b"\"role\":\"user\"", None)?);
        }
        Ok(())
    }

    fn flush_user_hold(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        self.close_moved(io)?;
        let Some(hold) = self.user_hold else { return Ok(()) };
        if io.writers.holds_bytes(hold) {
            let w = body.messages_writer(false, self, io)?;
            let mut held = Vec::new();
            io.writers.take(hold, &mut io.session.reorder, &mut held);
            io.json(w, |jw, b| jw.raw_element(&held, b))?;
        } else {
            io.writers.drop_writer(hold, &mut io.session.reorder);
        }
        self.user_hold = None;
        self.user_index = None;
        self.run_hold = false;
        self.after_tool_calls = false;
        Ok(())
    }

    /// `first`: the member that streams first, opened with the message.
    /// `moved`: the block's `role` attribute (JSON), if any.
    fn open_message(&mut self, body: &mut MessageListBody, index: i64, role: &[u8], first: Option<First>,
                    moved: Option<&[u8]>, io: &mut Io<'_>) -> Result<()> {
        self.close_message(body, io)?;
        self.close_moved(io)?;
        // blocks moved out of a tool message, or out of the tool_calls message after its calls
        // (an ollama assistant image): they wait for the run of tool messages to end
        let from_tool = role == USER && match moved {
            Some(r) if r == TOOL => true,
            Some(r) => r.first() == Some(&b'"') && r != USER && self.after_tool_calls
                && self.tool_calls_index == Some(index),
            None => false,
        };
        // a user or system message of another dialect while calls await their results waits too
        let from_tool = from_tool || self.waits_for_results(index, role, moved);
        if self.user_hold.is_some() && (Some(index) != self.user_index || self.run_hold)
            && !self.continues_run(role, from_tool)
        {
            self.flush_user_hold(body, io)?;
        }
        if Some(index) != self.msg_index && role != TOOL && self.user_hold.is_none() && !from_tool
            && self.msg_index != self.tool_calls_index
        {
            // a message that does not directly follow the tool calls: nothing to hold.
            // (The one that does may start with user text and hold tool results after
            // it -- anthropic [text, tool_result] -- so its user blocks are held.)
            self.after_tool_calls = false;
        }
        let writer = self.messages_writer(body, index, role, from_tool, io)?;
        self.carried = true;
        let head = role_head(role);
        let mut msg = MessageAssembler::new(writer, io, MEMBER_ORDER, &head, first)?;
        self.msg_serial += 1;
        self.msg_index = Some(index);
        self.msg_role = Some(known_role(role).map_or_else(|| Cow::Owned(role.to_vec()), Cow::Borrowed));
        self.msg_has_result_id = false;
        self.msg_had_tool_calls = false;
        if !self.pending_ext.is_empty() {
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_ext).into_iter().partition(|e| e.message == Some(index));
            for ext in mine {
                msg.trailing(io, message_member(&ext.path, ext.message), &ext.raw)?;
            }
            self.pending_ext = rest;
        }
        self.msg = Some(msg);
        Ok(())
    }

    /// Whether `block` goes into a new message rather than the open one.
    fn starts_message(&self, block: &Block<'_>, role: &[u8]) -> bool {
        let starts_result = role == TOOL
            && block.init
            && block.attrs.as_deref().is_some_and(|a| has_attr(a, "tool_call_id"))
            && self.msg_has_result_id;
        self.msg.is_none() || Some(block.message) != self.msg_index || self.msg_role.as_deref() != Some(role) || starts_result
    }

    fn message_for(&mut self, body: &mut MessageListBody, block: &Block<'_>, role: &[u8], io: &mut Io<'_>) -> Result<()> {
        if self.starts_message(block, role) {
            let moved = attr(block.attrs.as_deref().unwrap_or(&[]), "role");
            self.open_message(body, block.message, role, None, moved, io)?;
        }
        Ok(())
    }

    /// `_waits_for_results`: a user or system message of another dialect (not blocks moved out
    /// of an assistant or tool message) that comes while calls of the batch await their results:
    /// it waits in the run hold and follows the run of tool messages (nothing recorded).
    fn waits_for_results(&self, index: i64, role: &[u8], moved: Option<&[u8]>) -> bool {
        self.foreign
            && self.after_tool_calls
            && self.tool_calls_index != Some(index)
            && (self.user_hold.is_none() || self.run_hold)
            && matches!(json_str(role).as_deref(), Some("user" | "system" | "developer"))
            && !matches!(moved.and_then(json_str).as_deref(), Some("assistant" | "tool"))
            && self.calls.open()
    }

    /// `_continues_run`: whether a message keeps the run hold waiting: the next tool message
    /// of the run, or more blocks moved out of one (a message of any other role ends the run).
    fn continues_run(&self, role: &[u8], from_tool: bool) -> bool {
        self.run_hold && (role == TOOL || from_tool)
    }

    /// `_moved_call`: a tool call of a tool message (ollama), to send in an assistant
    /// message after the run.
    fn moved_call(block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
        block.section == Section::ToolCall && attr_is(attrs, "role", "tool") && !attr_truthy(attrs, "legacy")
    }

    /// `_ends_run`: whether the held calls go before `block`: it is not a block of the open
    /// tool message, nor another moved call, nor a result of the run (one that comes while a
    /// call of the batch is unanswered).
    fn ends_run(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
        if Self::moved_call(block, attrs)
            || (self.msg.is_some() && Some(block.message) == self.msg_index && self.msg_role.as_deref() == Some(TOOL))
        {
            return false;
        }
        if self.calls.open()
            && matches!(block.section, Section::UserText | Section::UserImage | Section::UserDocument
                        | Section::UserAudio | Section::SystemInstruction)
            && !attr_is(attrs, "role", "assistant") && !attr_is(attrs, "role", "tool")
        {
            return false; // a user or system message between the run's tool messages: the run goes on
        }
        let result_of_run = block.section == Section::ToolResult
            && attr(attrs, "role").is_none_or(|_| attr_is(attrs, "role", "tool"));
        !(result_of_run && self.calls.open())
    }

    /// `_held_calls_message`: the held assistant message, made at the first moved call.
    fn held_calls_message(&mut self, io: &mut Io<'_>) -> Result<()> {
        if self.held_calls.is_none() {
            let w = io.writers.held(&mut io.session.reorder, "openai:calls-after-run");
            io.push_first(w);
            self.held_calls = Some(MessageAssembler::new(w, io, MEMBER_ORDER, b"\"role\":\"assistant\"", None)?);
        }
        Ok(())
    }

    /// `_flush_held_calls`: the run of results answering the batch ended: its held user
    /// message (images), then the moved calls' assistant message, whose calls are the batch
    /// the next results answer.
    fn flush_held_calls(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
        let Some(held) = self.held_calls.take() else { return Ok(()) };
        self.close_message(body, io)?;
        if self.run_hold {
            self.flush_user_hold(body, io)?;
        }
        self.close_moved(io)?;
        let hold = held.out;
        held.close(io)?;
        self.carried = true;
        let w = body.messages_writer(false, self, io)?;
        let mut bytes = Vec::new();
        io.writers.take(hold, &mut io.session.reorder, &mut bytes);
        io.json(w, |jw, b| jw.raw_element(&bytes, b))?;
        self.calls.held_written();
        self.after_tool_calls = true;
        self.tool_calls_index = self.msg_index;
        Ok(())
    }

    /// The message a block writes into (open: the caller opened it; a block's close finds
    /// it open, as no decoder's events end a message between a block's fragments).
    fn assembler(&mut self, which: Which) -> Result<&mut MessageAssembler> {
        match which {
            Which::Open => self.msg.as_mut(),
            Which::Moved => self.moved.as_mut(),
            Which::Held => self.held_calls.as_mut(),
        }
        .ok_or_else(|| Error::new(ErrorClass::Transcode, "internal error in the native core: a block of a closed message"))
    }

    // -- blocks -------------------------------------------------------------------------

    /// Open the block in the right message and member; None: not carried (lost).
    fn place<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
        let attrs = block.attrs.as_deref().unwrap_or(&[]);
        if self.held_calls.is_some() && self.ends_run(block, attrs) {
            self.flush_held_calls(body, io)?;
        }
        match block.section {
            Section::SystemInstruction => {
                let role = attr_or(attrs, "role", SYSTEM).to_vec();
                self.text(body, block, &role, "text", io).map(Some)
            }
            Section::UserText => self.text(body, block, USER, "text", io).map(Some),
            Section::UserImage | Section::UserDocument | Section::UserAudio => self.media(body, block, attrs, io),
            Section::AssistantText => self.text(body, block, ASSISTANT, "text", io).map(Some),
            Section::AssistantRefusal => {
                if attr_truthy(attrs, "in_parts") {
                    return self.text(body, block, ASSISTANT, "refusal", io).map(Some);
                }
                self.string_member(body, block, ASSISTANT, "refusal", io).map(|w| Some(Placed::Stream(w)))
            }
            Section::AssistantReasoning => {
                if attr_truthy(attrs, THINKING_BLOCK) {
                    return self.thinking_block(body, block, attrs, io).map(Some);
                }
                let reasoning_key = match controls::reasoning_loss(attrs, self.reasoning_key) {
                    Some((what, done)) => {
                        lose_block(io.session, DIALECT, BlockRef::of(block), what, done, None)?;
                        return Ok(None);
                    }
                    None => self.reasoning_key.expect("reasoning_loss: a key"),
                };
                lose_signature(io.session, DIALECT, BlockRef::of(block), attrs)?;
                let w = self.string_member(body, block, ASSISTANT, reasoning_key, io)?;
                Ok(Some(Placed::Reasoning { w, head: Head::borrowed(block) }))
            }
            Section::ToolCall => self.tool_call(body, block, attrs, io).map(Some),
            Section::ToolResult => self.tool_result(body, block, attrs, io).map(Some),
            Section::Unknown if attr_is(attrs, "dialect", DIALECT) => self.unknown(body, block, attrs, io).map(Some),
            _ => {
                lose_unplaced(io.session, DIALECT, BlockRef::of(block))?;
                Ok(None)
            }
        }
    }

    /// `_part_own`: a part's cache_control is written back into openai from openai
    /// (openai-compatible upstreams -- OpenRouter, LiteLLM -- take it); another dialect's is a
    /// recorded loss: the official API refuses members it does not declare.
    fn part_own(&self) -> &'static [&'static str] {
        if self.foreign { &[] } else { &["cache_control"] }
    }

    /// Members for the part attributes openai knows (`allowed`); the rest are recorded losses.
    fn extra_attrs(&self, io: &mut Io<'_>, block: BlockRef<'_>, attrs: &[Attr<'_>], allowed: &[&str]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (key, value) in attrs {
            if allowed.contains(&key.as_ref()) {
                out.push(b',');
                dumps_str(key.as_bytes(), &mut out);
                out.push(b':');
                out.extend_from_slice(value);
            } else if key == EXTRA_ATTR {
                out.push(b',');
                out.extend_from_slice(json_str(value).unwrap_or_default().as_bytes());
            } else if !structure_attr(key) {
                lose_field(io.session, DIALECT, block, key, Some(attrs), None)?;
            }
        }
        Ok(out)
    }

    fn text<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, role: &[u8], part_type: &str, io: &mut Io<'_>) -> Result<Placed<'b>> {
        let attrs = block.attrs.as_deref().unwrap_or(&[]);
        let in_parts = attr_truthy(attrs, "in_parts");
        let empty = attr_truthy(attrs, "empty");
        let tool = role == TOOL;
        if !tool && !empty && self.starts_message(block, role) {
            // the common case, a text that starts its message: "content" opens with the message
            let first = if in_parts { PARTS_CONTENT } else { STRING_CONTENT };
            self.open_message(body, block.message, role, Some(first), None, io)?;
            if !in_parts {
                return Ok(Placed::Stream(self.assembler(Which::Open)?.out));
            }
        } else {
            self.message_for(body, block, role, io)?;
        }
        if tool {
            self.result_id(attrs, io)?;
        }
        if empty {
            if io.session.source != DIALECT {
                // openai rejects a user, system or tool message whose content is [] or missing
                // (ollama {"role": "user"}), and an assistant message with nothing in it: the
                // empty content is "" -- written when the message
                // closes, since further parts make it a list, and tool calls make it unneeded
                self.msg_needs_content = true;
            } else if in_parts {
                self.assembler(Which::Open)?.member(io, "content", Opener::Array)?;
            }
            return Ok(if tool { Placed::ToolText { w: None, head: Head::borrowed(block) } } else { Placed::Nothing });
        }
        let msg = self.assembler(Which::Open)?;
        if !in_parts && !msg.has("content") {
            let w = msg.member(io, "content", Opener::String)?;
            if !tool {
                return Ok(Placed::Stream(w));
            }
            return Ok(Placed::ToolText { w: Some(w), head: Head::borrowed(block) });
        }
        let w = msg.member(io, "content", Opener::Array)?;
        let extra = self.extra_attrs(io, BlockRef::of(block), attrs, self.part_own())?;
        // `{"type":<type><extra>,<type>:"` in one buffer
        let mut open = Vec::with_capacity(2 * part_type.len() + extra.len() + 16);
        open.extend_from_slice(io.sep(w));
        open.extend_from_slice(b"{\"type\":");
        let start = open.len();
        dumps_str(part_type.as_bytes(), &mut open);
        let name = start..open.len();
        open.extend_from_slice(&extra);
        open.push(b',');
        open.extend_from_within(name);
        open.extend_from_slice(b":\"");
        io.write(w, &open)?;
        Ok(Placed::Part { w, head: Head::borrowed(block), tool })
    }

    /// `_thinking_block`: a block of openai's own `thinking_blocks` (LiteLLM's), back into them
    /// as it came.
    fn thinking_block<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>],
                          io: &mut Io<'_>) -> Result<Placed<'b>> {
        self.message_for(body, block, ASSISTANT, io)?;
        let w = self.assembler(Which::Open)?.member(io, "thinking_blocks", Opener::Array)?;
        io.separate(w)?;
        let redacted = attr_truthy(attrs, "redacted");
        io.write(w, if redacted { b"{\"type\":\"redacted_thinking\",\"data\":\"" } else { b"{\"type\":\"thinking\",\"thinking\":\"" })?;
        Ok(Placed::Thinking { w, head: Head::borrowed(block), redacted })
    }

    fn string_member(&mut self, body: &mut MessageListBody, block: &Block<'_>, role: &[u8], key: &'static str, io: &mut Io<'_>) -> Result<WriterId> {
        self.message_for(body, block, role, io)?;
        self.assembler(Which::Open)?.member(io, key, Opener::String)
    }

    /// Another dialect's tool-call id as openai accepts it (`naming.openai_id`): the JSON text.
    fn call_id(&self, call_id: &[u8]) -> Result<Vec<u8>> {
        if !self.foreign {
            return Ok(call_id.to_vec());
        }
        match json_str(call_id) {
            Some(text) => {
                let mut out = Vec::new();
                dumps_str(openai_id(&text).as_bytes(), &mut out);
                Ok(out)
            }
            None => Ok(call_id.to_vec()),
        }
    }

    fn result_id(&mut self, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        let Some(call_id) = attr(attrs, "tool_call_id").filter(|raw| *raw != b"null") else { return Ok(()) };
        if self.msg_has_result_id {
            return Ok(());
        }
        self.calls.answer(call_key(Some(call_id)));
        let id = self.call_id(call_id)?;
        self.assembler(Which::Open)?.scalar(io, "tool_call_id", &id)?;
        self.msg_has_result_id = true;
        Ok(())
    }

    /// A result's call id may come late; its tool name is carried by that id, lost without one.
    fn result_close(&mut self, head: &Head<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        self.result_id(late, io)?;
        let all = merged(&head.attrs, late);
        // a string (or empty) result has no part to carry attributes: each one is a loss
        let without_extra: Vec<Attr<'_>> = all.iter().filter(|(k, _)| k != EXTRA_ATTR).cloned().collect();
        self.extra_attrs(io, head.as_ref(), &without_extra, &[])?;
        let named = attr(&all, "name").is_some_and(|raw| raw != b"null");
        let answered = attr(&all, "tool_call_id").is_some_and(|raw| raw != b"null");
        if named && !answered {
            let what = format!("tool_name of a {} that answers no call", crate::encoding::subject(io.session, head.as_ref(), Some(&all)));
            lose(io.session, DIALECT, head.as_ref(), &what, "field for a result's tool name", Some("a tool message needs the call's tool_call_id"), None)?;
        }
        Ok(())
    }

    fn tool_result<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Placed<'b>> {
        let role = attr_or(attrs, "role", TOOL).to_vec();
        lose_is_error(io, BlockRef::of(block), attrs)?;
        let placed = self.text(body, block, &role, "text", io)?;
        Ok(Placed::Result(Box::new(placed), Head::borrowed(block)))
    }

    fn media<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed<'b>>> {
        let s = block.section;
        let source = attr(attrs, "source").filter(|raw| *raw != b"null");
        if self.foreign && s != Section::UserAudio && source.is_none() && block.fin && block.payload.is_empty() {
            // (another dialect's image or document with no source at all: nothing to send)
            lose_block(io.session, DIALECT, BlockRef::of(block), "source it can take", None, Some(attrs))?;
            return Ok(None);
        }
        let source_text = source.and_then(json_str);
        if s == Section::UserImage && source_text.as_deref() == Some("base64")
            && attr(attrs, "media_type").is_none_or(|raw| raw == b"null")
        {
            // openai takes png, jpeg, gif and webp images only ("You uploaded an unsupported
            // image"); an image with no media type (ollama's bytes that show none of them) is not one
            lose_block(io.session, DIALECT, BlockRef::of(block), "base64 image without a media type (png, jpeg, gif or webp)",
                       Some("not sent"), Some(attrs))?;
            return Ok(None);
        }
        let mut data_prefix = Vec::new();
        if source_text.as_deref() == Some("base64") && attr(attrs, "data_url").is_none_or(crate::encoding::truthy) && s != Section::UserAudio {
            // openai takes inline images and files only as data URLs
            data_prefix.extend_from_slice(b"data:");
            // (a label that named no type, where the bytes named one: the URL as it came)
            let label = attr(attrs, DATA_URL_TYPE).or_else(|| attr(attrs, "media_type"));
            data_prefix.extend_from_slice(in_string(label.unwrap_or(b"\"application/octet-stream\"")));
            data_prefix.extend_from_slice(b";base64,");
        } else if (source.is_some() && !matches!(source_text.as_deref(), Some("url" | "base64")))
            || (s == Section::UserDocument && source_text.as_deref() == Some("url"))
        {
            // a file has no URL form
            let what = format!("{} source for it", crate::encoding::py_str(source.unwrap_or(b"null")));
            lose_block(io.session, DIALECT, BlockRef::of(block), &what, None, Some(attrs))?;
            return Ok(None);
        }
        let in_result = attr_truthy(attrs, "in_result");
        if in_result {
            lose_block(io.session, DIALECT, BlockRef::of(block), "media in tool messages", Some("moved to a user message after the tool messages"), Some(attrs))?;
        }
        let which = if in_result
            && self.msg.is_some()
            && self.msg_role.as_deref() == Some(TOOL)
            && self.msg_index == Some(block.message)
            && self.after_tool_calls
        {
            // the result's texts go on in its tool message
            self.moved_media_message(body, block.message, io)?;
            Which::Moved
        } else if self.after_own_calls(block, attrs) {
            lose_moved(io.session, DIALECT, BlockRef::of(block), attrs, "user")?;
            self.held_media_message(block.message, io)?; // the message's text may follow: it stays open
            Which::Moved
        } else {
            lose_moved(io.session, DIALECT, BlockRef::of(block), attrs, "user")?;
            self.message_for(body, block, USER, io)?;
            Which::Open
        };
        let w = self.assembler(which)?.member(io, "content", Opener::Array)?;
        io.separate(w)?;
        let (head, key, inner): (&[u8], &str, &'static [&'static str]) = match s {
            Section::UserImage => (b"{\"type\":\"image_url\",\"image_url\":{", "url", IMAGE_INNER),
            Section::UserDocument => (b"{\"type\":\"file\",\"file\":{", "file_data", FILE_INNER),
            _ => (b"{\"type\":\"input_audio\",\"input_audio\":{", "data", AUDIO_INNER),
        };
        let inside: OwnedAttrs = attrs.iter().filter(|(k, _)| inner.contains(&k.as_ref())).map(own_attr).collect();
        let early = self.extra_attrs(io, BlockRef::of(block), &inside, inner)?;
        let has_payload = s == Section::UserAudio || source.is_some();
        let mut body_text = early.get(1..).unwrap_or_default().to_vec();
        if has_payload {
            if !body_text.is_empty() {
                body_text.push(b',');
            }
            dumps_str(key.as_bytes(), &mut body_text);
            body_text.extend_from_slice(b":\"");
            body_text.extend_from_slice(&data_prefix);
        }
        io.write(w, &[head, &body_text].concat())?;
        let outer: OwnedAttrs = attrs.iter().filter(|(k, _)| !inner.contains(&k.as_ref())).map(own_attr).collect();
        Ok(Some(Placed::Media { w, head: Head::borrowed(block), outer, has_payload, inner }))
    }

    fn tool_call<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Placed<'b>> {
        if self.typed_call(block, attrs) {
            return self.write_typed_call(body, block, attrs, io);
        }
        // the late attributes at the close: each recorded once
        self.foreign_call_attrs(io, BlockRef::of(block), attrs)?;
        lose_moved(io.session, DIALECT, BlockRef::of(block), attrs, "assistant")?;
        let (which, ids) = if Self::moved_call(block, attrs)
            && (self.held_calls.is_some() || (self.after_tool_calls && self.calls.open()))
        {
            self.held_calls_message(io)?; // sent when the run answering the batch ends
            (Which::Held, self.calls.held_list())
        } else {
            self.message_for(body, block, ASSISTANT, io)?;
            // a new tool_calls message: the batch results answer
            (Which::Open, self.calls.batch_of(self.msg_serial))
        };
        if attr_truthy(attrs, "legacy") {
            // function_call: {"name", "arguments"}, no id
            let w = self.assembler(which)?.member(io, "function_call", Opener::Object)?;
            let mut head = Vec::new();
            if let Some(name) = attr(attrs, "name") {
                head.extend_from_slice(b"\"name\":");
                head.extend_from_slice(&self.name(io, block.message, Some(name))?);
                head.push(b',');
            }
            head.extend_from_slice(b"\"arguments\":\"");
            io.write(w, &head)?;
            return Ok(Placed::LegacyCall { w, head: Head::borrowed(block) });
        }
        if which == Which::Open {
            self.msg_had_tool_calls = true;
        }
        let w = self.assembler(which)?.member(io, "tool_calls", Opener::Array)?;
        io.separate(w)?;
        let mut head = b"{".to_vec();
        if let Some(id) = attr(attrs, "id") {
            head.extend_from_slice(b"\"id\":");
            head.extend_from_slice(&self.call_id(id)?);
            head.push(b',');
        }
        head.extend_from_slice(b"\"type\":\"function\",\"function\":{");
        if let Some(name) = attr(attrs, "name") {
            head.extend_from_slice(b"\"name\":");
            head.extend_from_slice(&self.name(io, block.message, Some(name))?);
            head.push(b',');
        }
        head.extend_from_slice(b"\"arguments\":\"");
        io.write(w, &head)?;
        Ok(Placed::Call { w, head: Head::borrowed(block), ids })
    }

    /// `_typed_call`: an openai call of another type than function (a custom tool's
    /// `{"id", "type": "custom", "custom": {"name", "input"}}`): it has no function, so it
    /// is written as it came, its members from `openai_extra`.
    fn typed_call(&self, block: &Block<'_>, attrs: &[Attr<'_>]) -> bool {
        !self.foreign && attr(attrs, "type").and_then(json_str).is_some() && block.fin && block.payload.is_empty() && !has_attr(attrs, "name")
    }

    /// `_call_index`: `,"index":N` for an openai call's index at its position, back to openai
    /// only (`losses::CALL_INDEX`: another dialect's says nothing openai keeps).
    fn call_index(&self, attrs: &[Attr<'_>], out: &mut Vec<u8>) {
        if let Some(index) = attr(attrs, CALL_INDEX).filter(|_| !self.foreign) {
            out.extend_from_slice(b",\"index\":");
            out.extend_from_slice(index);
        }
    }

    fn write_typed_call<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>],
                            io: &mut Io<'_>) -> Result<Placed<'b>> {
        self.message_for(body, block, ASSISTANT, io)?;
        self.msg_had_tool_calls = true;
        let w = self.assembler(Which::Open)?.member(io, "tool_calls", Opener::Array)?;
        io.separate(w)?;
        let mut out = b"{".to_vec();
        if let Some(id) = attr(attrs, "id") {
            out.extend_from_slice(b"\"id\":");
            out.extend_from_slice(id);
            out.push(b',');
        }
        out.extend_from_slice(b"\"type\":");
        out.extend_from_slice(attr(attrs, "type").unwrap_or(b"null"));
        self.call_index(attrs, &mut out);
        push_members(attrs, EXTRA_ATTR, &mut out);
        out.push(b'}');
        io.write(w, &out)?;
        Ok(Placed::Nothing)
    }

    /// A tool call's name as openai accepts it (`naming`: another dialect's may not fit).
    fn name(&self, io: &mut Io<'_>, message: i64, name: Option<&[u8]>) -> Result<Vec<u8>> {
        if !self.foreign {
            return Ok(name.unwrap_or(b"null").to_vec());
        }
        let path = where_(io.session, message);
        let wire = crate::encoding::tool_name_out(io.session, name.filter(|raw| *raw != b"null"), &path)?;
        let mut out = Vec::new();
        dumps_str(wire.as_bytes(), &mut out);
        Ok(out)
    }

    /// `,"name":...` for a name that came late, or for none at all (openai requires one).
    fn late_name(&self, io: &mut Io<'_>, head: &Head<'_>, late: &[Attr<'_>]) -> Result<Vec<u8>> {
        if let Some(name) = attr(late, "name") {
            return Ok([&b",\"name\":"[..], &self.name(io, head.message, Some(name))?].concat());
        }
        if !has_attr(&head.attrs, "name") && self.foreign {
            return Ok([&b",\"name\":"[..], &self.name(io, head.message, None)?].concat());
        }
        Ok(Vec::new())
    }

    fn unknown<'b>(&mut self, body: &mut MessageListBody, block: &'b Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Placed<'b>> {
        let role = attr_or(attrs, "role", USER).to_vec();
        self.message_for(body, block, &role, io)?;
        if attr_truthy(attrs, "empty") {
            // a message of an unknown role with no content, null or []
            if attr_truthy(attrs, "in_parts") {
                self.assembler(Which::Open)?.member(io, "content", Opener::Array)?;
            }
            return Ok(Placed::Nothing);
        }
        if attr_truthy(attrs, "in_parts") {
            let w = self.assembler(Which::Open)?.member(io, "content", Opener::Array)?;
            io.separate(w)?;
            return Ok(Placed::Stream(w));
        }
        let w = self.assembler(Which::Open)?.member(io, "content", Opener::Raw)?;
        Ok(Placed::Stream(w))
    }

    // -- closes ---------------------------------------------------------------------------

    fn close(&mut self, placed: Placed, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
        match placed {
            Placed::Stream(_) | Placed::Nothing => Ok(()),
            Placed::ToolText { head, .. } => self.result_close(&head, late, io),
            Placed::Part { w, head, tool } => {
                let extra = self.extra_attrs(io, head.as_ref(), late, self.part_own())?;
                io.write(w, &[&b"\""[..], &extra, b"}"].concat())?;
                if tool {
                    self.result_id(late, io)?;
                }
                Ok(())
            }
            Placed::Reasoning { head, .. } => lose_signature(io.session, DIALECT, head.as_ref(), late),
            Placed::Thinking { w, head, redacted } => {
                let all = merged(&head.attrs, late);
                let mut tail = b"\"".to_vec();
                if let Some(signature) = attr(&all, "signature").filter(|_| !redacted) {
                    tail.extend_from_slice(b",\"signature\":");
                    tail.extend_from_slice(signature);
                }
                push_members(&all, EXTRA_ATTR, &mut tail);
                tail.push(b'}');
                io.write(w, &tail)
            }
            Placed::Media { w, head, outer, has_payload, inner } => {
                lose_is_error(io, head.as_ref(), late)?;
                let mut tail: Vec<u8> = if has_payload { b"\"".to_vec() } else { Vec::new() };
                let late_inner: OwnedAttrs = late.iter().filter(|(k, _)| inner.contains(&k.as_ref())).map(own_attr).collect();
                tail.extend_from_slice(&self.extra_attrs(io, head.as_ref(), &late_inner, inner)?);
                let late_outer: OwnedAttrs = late.iter().filter(|(k, _)| !inner.contains(&k.as_ref())).map(own_attr).collect();
                let mut rest = merged(&outer, &late_outer);
                if head.section == Section::UserDocument && has_payload && self.foreign
                    && !has_attr(&head.attrs, "filename") && !has_attr(late, "filename")
                {
                    // openai refuses file_data without a filename ("Missing required parameter: file_id");
                    // an openai body's own part stays as it came (a same-dialect request round-trips)
                    tail.extend_from_slice(b",\"filename\":");
                    if file_name(&head.attrs, late, &mut tail) {
                        rest.to_mut().retain(|(key, _)| key != "title"); // (carried: it names the file)
                    }
                }
                tail.push(b'}');
                tail.extend_from_slice(&self.extra_attrs(io, head.as_ref(), &rest, self.part_own())?);
                tail.push(b'}');
                io.write(w, &tail)
            }
            Placed::Call { w, head, ids } => {
                self.foreign_call_attrs(io, head.as_ref(), &late_only(&head.attrs, late))?;
                let all = merged(&head.attrs, late);
                self.calls.record(ids, call_key(attr(&all, "id")));
                let mut tail = b"\"".to_vec();
                tail.extend_from_slice(&self.late_name(io, &head, late)?);
                push_members(&all, FUNCTION_EXTRA_ATTR, &mut tail);
                tail.push(b'}');
                if let Some(id) = attr(late, "id") {
                    tail.extend_from_slice(b",\"id\":");
                    tail.extend_from_slice(&self.call_id(id)?);
                }
                self.call_index(&all, &mut tail);
                push_members(&all, EXTRA_ATTR, &mut tail);
                tail.push(b'}');
                io.write(w, &tail)
            }
            Placed::LegacyCall { w, head } => {
                self.foreign_call_attrs(io, head.as_ref(), &late_only(&head.attrs, late))?;
                let mut tail = [&b"\""[..], &self.late_name(io, &head, late)?].concat();
                push_members(&merged(&head.attrs, late), EXTRA_ATTR, &mut tail);
                io.write(w, &tail)
            }
            Placed::Result(inner, head) => {
                // is_error may come after the content
                lose_is_error(io, head.as_ref(), late)?;
                self.close(*inner, late, io)
            }
        }
    }

    /// A tool call's fields openai does not write (another dialect's: ollama `index`, ...; a
    /// `type` other than function) are recorded losses: the early attributes when the call
    /// opens, the late ones when it closes.
    fn foreign_call_attrs(&self, io: &mut Io<'_>, block: BlockRef<'_>, attrs: &[Attr<'_>]) -> Result<()> {
        for (key, _) in attrs {
            if !structure_attr(key) && key != EXTRA_ATTR && key != FUNCTION_EXTRA_ATTR {
                lose_field(io.session, DIALECT, block, key, Some(attrs), None)?;
            }
        }
        Ok(())
    }
}

/// Python `_members`: `,<members>`, the openai members a tool call kept as JSON text
/// (`add_extra`), if any.
fn push_members(attrs: &[Attr<'_>], key: &str, out: &mut Vec<u8>) {
    if let Some(members) = attr(attrs, key).and_then(json_str) {
        if !members.is_empty() {
            out.push(b',');
            out.extend_from_slice(members.as_bytes());
        }
    }
}

/// Python `_in_string`: a decoded text spliced into a JSON string being written (a data URL's
/// media type), escaped as `dumps` writes it: the attr's JSON (which is `dumps` of the value)
/// without its quotes. Not a string: nothing.
fn in_string(raw: &[u8]) -> &[u8] {
    match raw {
        [b'"', inner @ .., b'"'] => inner,
        _ => b"",
    }
}

fn lose_is_error(io: &mut Io<'_>, block: BlockRef<'_>, attrs: &[Attr<'_>]) -> Result<()> {
    crate::encoding::lose_is_error(io.session, DIALECT, block, attrs)
}

fn own_attr(attr: &Attr<'_>) -> Attr<'static> {
    crate::encoding::owned_attr(attr)
}


#[cfg(test)]
mod encoder_tests {
    use super::*;
    use crate::canonical::REQUEST_LEVEL;
    use crate::session::{Kind, Options};

    /// `says_json` read across fragments: the word whole, cut at each place, or not there.
    #[test]
    fn says_json_reads_the_word_across_fragments() {
        let said = |pieces: &[&[u8]]| {
            let (mut any, mut tail) = (false, WordTail::default());
            for piece in pieces {
                let (now, next) = says_json(tail, piece);
                (any, tail) = (any || now, next);
            }
            any
        };
        for text in [&b"json"[..], b"JSON", b"a Json b", b"jsonl", b"xjSoNx"] {
            assert!(said(&[text]), "{text:?}");
            for cut in 0..=text.len() {
                assert!(said(&[&text[..cut], &text[cut..]]), "{text:?} cut at {cut}");
            }
            let bytes: Vec<&[u8]> = text.chunks(1).collect();
            assert!(said(&bytes), "{text:?} a byte at a time");
        }
        for text in [&b""[..], b"js on", b"jso\\nn", b"\\u006ason", b"jso", b"son"] {
            assert!(!said(&[text]), "{text:?}");
            let bytes: Vec<&[u8]> = text.chunks(1).collect();
            assert!(!said(&bytes), "{text:?} a byte at a time");
        }
        assert!(said(&[b"x", b"", b"js", b"o", b"", b"n"]));
        assert!(!said(&[b"js", b"xon"]));
    }

    fn options() -> Options {
        Options::default()
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

    fn control(name: &'static str, value: &'static str, dialect: &'static str, key: &'static str) -> Event<'static> {
        Event::Control(Control {
            name: Cow::Borrowed(name),
            value: Cow::Borrowed(value.as_bytes()),
            dialect: Some(Cow::Borrowed(dialect)),
            key: Some(Cow::Borrowed(key)),
            raw: Some(Cow::Borrowed(value.as_bytes())),
        })
    }

    fn run(source: &'static str, events: Vec<Event<'static>>) -> (Vec<String>, Session) {
        let mut session = Session::new(options(), source, "openai", Kind::Request);
        let mut encoder = RequestEncoder::new(&session);
        let mut outs = Vec::new();
        for event in events {
            let mut out = Vec::new();
            encoder.event(event, &mut session, &mut out).unwrap();
            outs.push(String::from_utf8(out).unwrap());
        }
        (outs, session)
    }

    #[test]
    fn an_openai_body_streams_through() {
        let (outs, _) = run("openai", vec![
            control("model", "\"m\"", "openai", "model"),
            Event::SystemEnd,
            block(Section::UserText, 0, "hi", &[]),
            Event::MessagesEnd,
            Event::End,
        ]);
        assert_eq!(outs.concat(), "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assert_eq!(outs[2], ",\"messages\":[{\"role\":\"user\",\"content\":\"hi");
    }

    #[test]
    fn an_anthropic_body_gets_its_system_first_and_tool_messages_after_calls() {
        let (outs, session) = run("anthropic", vec![
            control("model", "\"m\"", "anthropic", "model"),
            block(Section::UserText, 0, "q", &[]),
            block(Section::ToolCall, 1, "{\\\"a\\\":1}", &[("id", "\"c1\""), ("name", "\"f\"")]),
            block(Section::UserText, 2, "then", &[]),
            block(Section::ToolResult, 2, "r", &[("tool_call_id", "\"c1\"")]),
            Event::MessagesEnd,
            block(Section::SystemInstruction, TOP_LEVEL_SYSTEM, "sys", &[]),
            Event::SystemEnd,
            block(Section::ToolDefinition, REQUEST_LEVEL, "{\"type\":\"object\"}", &[("name", "\"f\"")]),
            control("max_output_tokens", "5", "anthropic", "max_tokens"),
            Event::End,
        ]);
        assert_eq!(
            outs.concat(),
            concat!(
                "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},",
                "{\"role\":\"user\",\"content\":\"q\"},",
                "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},",
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"},",
                "{\"role\":\"user\",\"content\":\"then\"}],",
                "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}],",
                "\"max_completion_tokens\":5}"
            )
        );
        assert!(session.losses.is_empty(), "{:?}", session.losses);
        let (_, by_reason) = session.reorder.report();
        assert_eq!(by_reason.iter().map(|r| r.0).collect::<Vec<_>>(), ["openai:messages-before-system", "openai:user-before-tool-result"]);
    }

    /// The opening the mid-run tests share: a user message, an assistant message with two
    /// calls (c0, c1 of `f`), c0's result; then `rest`.
    fn two_calls_one_answered(rest: Vec<Event<'static>>) -> Vec<Event<'static>> {
        let mut events = vec![
            Event::SystemEnd,
            block(Section::UserText, 0, "go", &[]),
            block(Section::ToolCall, 1, "{}", &[("id", "\"c0\""), ("name", "\"f\"")]),
            block(Section::ToolCall, 1, "{}", &[("id", "\"c1\""), ("name", "\"f\"")]),
            block(Section::ToolResult, 2, "r0", &[("tool_call_id", "\"c0\"")]),
        ];
        events.extend(rest);
        events
    }

    /// Its bytes (the output's opening, up to c0's tool message).
    macro_rules! two_calls_one_answered_out {
        () => {
            concat!(
                "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"},",
                "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c0\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},",
                "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},",
                "{\"role\":\"tool\",\"tool_call_id\":\"c0\",\"content\":\"r0\"},",
            )
        };
    }

    /// An ollama tool message with calls of its own in the middle of a run of results
    /// (rpt/ollama-tool-message-with-calls-mid-run): its calls wait in a hold until the
    /// run answering the batch before it ends, then go in an assistant message before the
    /// result that answers them (Python's events and bytes).
    #[test]
    fn calls_of_a_tool_message_mid_run_go_after_the_run() {
        let (outs, session) = run("ollama", two_calls_one_answered(vec![
            block(Section::ToolCall, 2, "{}", &[("id", "\"c2\""), ("name", "\"g\""), ("role", "\"tool\"")]),
            block(Section::ToolResult, 3, "r1", &[("tool_call_id", "\"c1\"")]),
            block(Section::ToolResult, 4, "rg", &[("tool_call_id", "\"c2\"")]),
            Event::MessagesEnd,
            Event::End,
        ]));
        assert_eq!(
            outs.concat(),
            concat!(
                two_calls_one_answered_out!(),
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"},",
                "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},",
                "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"rg\"}]}"
            )
        );
        assert_eq!(outs[5], "", "the moved call is held");
        assert_eq!(outs[6], "\"},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1", "the run goes on");
        assert_eq!(session.losses.len(), 1);
        assert_eq!(session.losses[0].path(), b"$.messages[2]");
        let (high, by_reason) = session.reorder.report();
        assert_eq!((high, by_reason.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>()), (106, vec![("openai:calls-after-run", 106)]));
        assert_eq!(session.reorder.held(), 0, "every hold is released");
    }

    /// A user message and a system message of ollama between two tool messages of one run
    /// (rpt/ollama-user-between-tool-results-openai): they wait in the run hold and follow the
    /// run, in their order; nothing recorded (Python's `_waits_for_results`).
    #[test]
    fn a_user_or_system_message_between_tool_messages_follows_the_run() {
        let (outs, session) = run("ollama", two_calls_one_answered(vec![
            block(Section::UserText, 3, "wait", &[]),
            block(Section::SystemInstruction, 4, "s", &[]),
            block(Section::ToolResult, 5, "r1", &[("tool_call_id", "\"c1\"")]),
            block(Section::AssistantText, 6, "done", &[]),
            Event::MessagesEnd,
            Event::End,
        ]));
        assert_eq!(
            outs.concat(),
            concat!(
                two_calls_one_answered_out!(),
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"},",
                "{\"role\":\"user\",\"content\":\"wait\"},",
                "{\"role\":\"system\",\"content\":\"s\"},",
                "{\"role\":\"assistant\",\"content\":\"done\"}]}"
            )
        );
        assert_eq!((outs[5].as_str(), outs[6].as_str()), ("\"}", ""), "both wait in the run hold (r0's message closes)");
        assert!(session.losses.is_empty(), "{:?}", session.losses);
        let (_, by_reason) = session.reorder.report();
        assert_eq!(by_reason.iter().map(|r| r.0).collect::<Vec<_>>(), ["openai:user-before-tool-result"]);
        assert_eq!(session.reorder.held(), 0, "every hold is released");
    }

    #[test]
    fn reasoning_without_a_field_is_a_loss() {
        let (outs, session) = run("anthropic", vec![
            Event::SystemEnd,
            block(Section::AssistantReasoning, 0, "think", &[("signature", "\"s\"")]),
            block(Section::AssistantText, 0, "answer", &[]),
            Event::MessagesEnd,
            Event::End,
        ]);
        assert_eq!(outs.concat(), "{\"messages\":[{\"role\":\"assistant\",\"content\":\"answer\"}]}");
        assert_eq!(session.losses.len(), 1);
        assert_eq!(session.losses[0].path(), b"$.messages[0]");
        assert_eq!(
            session.losses[0].reason(),
            b"thinking block: openai has no reasoning field; Options.openai_reasoning_field chooses one a compatible server reads"
        );
    }
}

#[cfg(test)]
mod encoder_robustness {
    use super::*;
    use crate::canonical::REQUEST_LEVEL;
    use crate::session::{Kind, Options};

    /// A small deterministic generator (no dependency).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    const ATTRS: &[(&str, &str)] = &[
        ("in_parts", "true"), ("empty", "true"), ("role", "\"tool\""), ("role", "\"developer\""), ("tool_call_id", "\"c\""),
        ("id", "\"i\""), ("name", "\"f\""), ("name", "null"), ("legacy", "true"), ("source", "\"base64\""),
        ("source", "\"url\""), ("source", "\"file\""), ("in_result", "true"), ("is_error", "true"), ("signature", "\"s\""),
        ("redacted", "true"), ("dialect", "\"openai\""), ("openai_extra", "\"\\\"k\\\":1\""), ("cache_control", "{}"),
        ("media_type", "\"image/png\""), ("data_url", "false"), ("detail", "\"low\""), ("path", "\"$.x.text\""),
    ];

    fn event(rng: &mut Lcg) -> Event<'static> {
        let sections = Section::ALL;
        match rng.next(12) {
            0 => Event::SystemEnd,
            1 => Event::MessagesEnd,
            2 => Event::End,
            3 => Event::Control(Control {
                name: Cow::Borrowed(["model", "reasoning", "tool_choice", "stream", "top_k"][rng.next(5)]),
                value: Cow::Borrowed(["true", "{\"effort\":\"low\"}", "{\"type\":\"tool\",\"name\":\"f\"}", "\"m\""][rng.next(4)].as_bytes()),
                dialect: Some(Cow::Borrowed(["openai", "anthropic"][rng.next(2)])),
                key: Some(Cow::Borrowed("k")),
                raw: Some(Cow::Borrowed(b"1")),
            }),
            4 => Event::Extension(Extension {
                dialect: Cow::Borrowed(["openai", "ollama"][rng.next(2)]),
                path: Cow::Borrowed(b"$.messages[1].name"),
                raw: Cow::Borrowed(b"\"n\""),
                message: [None, Some(0), Some(1)][rng.next(3)],
                lossless: rng.next(2) == 0,
            }),
            _ => {
                let attrs: Vec<_> = (0..rng.next(4)).map(|_| ATTRS[rng.next(ATTRS.len())]).map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v.as_bytes()))).collect();
                Event::Block(Block {
                    section: sections[rng.next(sections.len())],
                    message: [0, 1, 2, REQUEST_LEVEL, TOP_LEVEL_SYSTEM][rng.next(5)],
                    payload: Cow::Borrowed(["x", "{}", "", "{\"type\":\"a\"}"][rng.next(4)].as_bytes()),
                    init: rng.next(3) != 0,
                    fin: rng.next(3) != 0,
                    attrs: (!attrs.is_empty()).then_some(attrs),
                })
            }
        }
    }

    #[test]
    fn any_event_sequence_is_output_or_an_error_never_a_panic() {
        let mut rng = Lcg(7);
        for _ in 0..20_000 {
            let options = Options { openai_reasoning_field: [None, Some("reasoning".to_string())][rng.next(2)].clone(), ..Options::default() };
            let mut session = Session::new(options, ["anthropic", "openai", "ollama"][rng.next(3)], "openai", Kind::Request);
            let mut encoder = RequestEncoder::new(&session);
            for _ in 0..rng.next(30) {
                let mut out = Vec::new();
                if encoder.event(event(&mut rng), &mut session, &mut out).is_err() {
                    break;
                }
            }
            let mut out = Vec::new();
            let _ = encoder.finish(&mut session, &mut out);
        }
    }
}

/// `isinstance(value, dict) and value.get("include_usage") is True` of a `stream_options`
/// value (its last `include_usage`, as `json.loads` keeps).
fn includes_usage(value: &[u8]) -> crate::error::Result<bool> {
    Ok(match crate::value::Value::parse(value)? {
        crate::value::Value::Object(members) => {
            matches!(members.iter().rev().find(|(k, _)| k == b"include_usage"), Some((_, crate::value::Value::Bool(true))))
        }
        _ => false,
    })
}

#[cfg(test)]
mod stream_options_tests {
    /// `includes_usage` is Python's `isinstance(v, dict) and v.get("include_usage") is True`.
    #[test]
    fn includes_usage_only_for_true() {
        let cases: &[(&[u8], bool)] = &[
            (br#"{"include_usage":true}"#, true), (br#"{"include_usage":false}"#, false), (br#"{"include_usage":1}"#, false),
            (br#"{}"#, false), (br#"[true]"#, false), (br#"{"x":0,"include_usage":true}"#, true), (b"true", false),
        ];
        for (value, expected) in cases {
            assert_eq!(super::includes_usage(value).ok(), Some(*expected), "{}", String::from_utf8_lossy(value));
        }
    }
}
