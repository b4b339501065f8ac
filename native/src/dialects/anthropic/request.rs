//! anthropic requests (`src/interlingua/dialects/anthropic/request.py`): `RequestDecoder`
//! (tokens -> canonical) and `RequestEncoder` (canonical -> bytes), in that order.
#![forbid(unsafe_code)]

// -- decoder (helper AD) -----------------------------------------------------------------

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

    use crate::canonical::{unescape_json_text, Block, Control, Event, Extension, Section, TOP_LEVEL_SYSTEM};
    use crate::encoding::{
        attr, attr_is, attr_truthy, has_attr, json_str, lose, lose_block, lose_field, lose_unplaced, merged, on_block,
        subject, tool_definition, where_, Attr, BlockHead, BlockRef, Encode, HeldArguments, InBlock, Io,
        MessageAssembler, PlaceBlocks, ToolDefinitions, WriterId, PARTS_CONTENT, STRING_CONTENT,
    };
    use crate::error::{Error, ErrorClass, Result};
    use crate::jsonwriter::{dumps_str, key_bytes};
    use crate::losses::{block_subject, is_internal_attr, lacks};
    use crate::naming::anthropic_id;
    use crate::reorder::Hold;
    use crate::session::Session;
    use crate::value::Value;

    use super::super::controls::{self, Foreign};

    const DIALECT: &str = "anthropic";
    const EXTRA_ATTR: &str = "anthropic_extra";
    const OUT: WriterId = WriterId::OUT;
    const TEXT_HEAD: &[u8] = b"{\"type\":\"text\",\"text\":\"";
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
                | "content" | "is_error")
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
    }

    impl OpenResult {
        /// `separator()`: `,` when the content array has an element already; counts the next one.
        fn separator(&mut self) -> &'static [u8] {
            self.parts += 1;
            if self.parts > 1 { b"," } else { b"" }
        }
    }

    /// The state of a placed block (what Python's `write` / `close` closures held).
    enum Placed {
        /// fragments written to the writer as they are; nothing at the close (a string
        /// content or system, a block carried raw)
        Copy(WriterId),
        /// fragments and close dropped (an empty text)
        Drop,
        /// a text / thinking / redacted_thinking object: close `"` + members + `}`
        Object { to: WriterId, kind: &'static str, head: BlockHead },
        /// a tool_use: `input` copied (same dialect) or held (`HeldArguments`)
        ToolUse { head: BlockHead, args: Option<Box<HeldArguments>> },
        /// the first block of a tool_result: `closer` at its close, then the late attributes
        ResultHead { fragments: bool, closer: &'static [u8], result: u64 },
        /// a further text part of the open tool_result
        ResultText { head: BlockHead, result: u64 },
        /// an image or document
        Media(Media),
    }

    /// An image or document being written (`_media`'s closure).
    struct Media {
        head: BlockHead,
        /// "image" or "document"
        kind: &'static str,
        /// the source type as `_media` decided it (JSON text)
        source: Vec<u8>,
        has_payload: bool,
        /// the tool_result it is part of
        result: Option<u64>,
    }

    /// Canonical events -> an Anthropic Messages request body (`RequestEncoder`).
    pub struct RequestEncoder {
        writers: crate::encoding::Writers,
        state: State,
    }

    struct State {
        foreign: bool,
        /// the body's `{` is written (Python's constructor writes it)
        opened: bool,
        top: Option<Top>,
        /// "messages" is required: an empty list is written when none came
        messages_written: bool,
        msg: Option<MessageAssembler>,
        msg_index: Option<i64>,
        msg_role: String,
        msg_string: bool,
        msg_has_result: bool,
        result: Option<OpenResult>,
        results: u64,
        system_string: bool,
        /// the writer of other dialects' system texts (`_system_hold`)
        system: Option<WriterId>,
        system_count: usize,
        system_plain: bool,
        controls: Option<Hold<Control<'static>>>,
        pending_ext: Vec<Extension<'static>>,
        /// ids made up for calls without one, not yet answered
        unanswered: VecDeque<Vec<u8>>,
        /// source messages of late system texts (recorded once)
        late_system: Vec<i64>,
        ended: bool,
        block: InBlock<Placed>,
    }

    impl RequestEncoder {
        pub fn new(session: &Session) -> Self {
            let state = State {
                foreign: session.source != DIALECT,
                opened: false,
                top: None,
                messages_written: false,
                msg: None,
                msg_index: None,
                msg_role: String::new(),
                msg_string: false,
                msg_has_result: false,
                result: None,
                results: 0,
                system_string: false,
                system: None,
                system_count: 0,
                system_plain: true,
                controls: None,
                pending_ext: Vec::new(),
                unanswered: VecDeque::new(),
                late_system: Vec::new(),
                ended: false,
                block: InBlock::None,
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
    }

    impl State {
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
                self.close_message(io)?;
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

        fn top_member(&mut self, key: &str, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
            self.close_top(io)?;
            io.json(OUT, |w, b| w.raw_member(key, raw, b))
        }

        fn messages_end(&mut self, io: &mut Io<'_>) -> Result<()> {
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
                    self.top_member(key, raw, io)?;
                }
                return Ok(()); // a derived control: its field is written with the first one
            }
            let size = control.value.len() as u64 + control.name.chars().count() as u64;
            let hold = self.controls.get_or_insert_with(|| io.session.reorder.hold("anthropic:foreign-controls"));
            hold.append(&mut io.session.reorder, owned_control(control), size)
        }

        fn write_controls(&mut self, io: &mut Io<'_>) -> Result<()> {
            let mut gathered: Vec<(String, Vec<Foreign>)> = Vec::new();
            if let Some(hold) = self.controls.as_mut() {
                let held: Vec<Control<'static>> = hold.drain(&mut io.session.reorder).collect();
                for control in held {
                    let foreign = Foreign {
                        name: control.name.to_string(),
                        value: Value::loads(&control.value)?,
                        dialect: control.dialect.map(Cow::into_owned),
                        key: control.key.map(Cow::into_owned),
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
            for (key, raw) in controls::encode(&gathered, io.session)? {
                io.json(OUT, |w, b| w.raw_member(key, &raw, b))?;
            }
            Ok(())
        }

        fn on_extension(&mut self, ext: Extension<'_>, io: &mut Io<'_>) -> Result<()> {
            if ext.dialect != DIALECT {
                return crate::encoding::foreign_extension(io.session, DIALECT, &ext);
            }
            match ext.message {
                None => {
                    let key: String = ext.path.chars().skip(2).collect(); // `ext.path[2:]`
                    self.top_member(&key, &ext.raw, io)
                }
                Some(message) if self.msg.is_some() && Some(message) == self.msg_index => {
                    let key = last_key(&ext.path)?;
                    let msg = self.msg.as_mut().expect("a message is open");
                    msg.trailing(io, key, &ext.raw) // chunking-invariant place
                }
                Some(_) => {
                    self.pending_ext.push(owned_extension(ext));
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
            let mut head = b"\"role\":".to_vec();
            key_bytes(role.as_bytes(), &mut head);
            if !self.pending_ext.is_empty() {
                // fields of this message that came before its first block
                let mut kept = Vec::with_capacity(self.pending_ext.len());
                for ext in std::mem::take(&mut self.pending_ext) {
                    if ext.message == Some(message) {
                        head.push(b',');
                        key_bytes(last_key(&ext.path)?.as_bytes(), &mut head);
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
            self.msg_index = Some(message);
            self.msg_role = role.to_string();
            self.msg_string = string;
            self.msg_has_result = false;
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

        // -- blocks -------------------------------------------------------------------------

        /// `_members`: `,"k":v` for the attributes the anthropic block `kind` has; others are losses.
        fn members(&self, head: BlockRef<'_>, kind: &str, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Vec<u8>> {
            let allowed = out_attrs(kind);
            let mut out = Vec::new();
            for (key, value) in attrs {
                if allowed.contains(&key.as_ref()) {
                    out.push(b',');
                    key_bytes(key.as_bytes(), &mut out);
                    out.push(b':');
                    out.extend_from_slice(value);
                } else if key == EXTRA_ATTR {
                    out.push(b',');
                    out.extend_from_slice(&controls::string_text(value)?);
                } else if !is_structure_attr(key) {
                    lose_field(io.session, DIALECT, head, key, Some(attrs), None)?;
                }
            }
            Ok(out)
        }

        fn place_block(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed>> {
            let s = block.section;
            let attrs: &[Attr<'_>] = block.attrs.as_deref().unwrap_or(&[]);
            let empty_fin = block.fin && block.payload.is_empty();
            if s != Section::ToolResult && !attr_truthy(attrs, "in_result") {
                self.close_result(io)?;
            }
            match s {
                Section::SystemInstruction => {
                    if self.foreign && empty_fin {
                        return Ok(None); // an empty system text: absent means the same, and anthropic rejects it
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
                    if self.foreign && empty_fin && !attr_truthy(attrs, "empty") {
                        return Ok(None); // empty text: absent means the same, and anthropic rejects it
                    }
                    let w = self.message_for(block, role, attr_truthy(attrs, "in_parts"), true, io)?;
                    self.text(block, attrs, w, io)
                }
                Section::UserImage | Section::UserDocument => self.media(block, attrs, false, io),
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

        /// `_text`: a text block into `w` (the message's string content: its fragments alone).
        fn text(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], w: WriterId, io: &mut Io<'_>) -> Result<Option<Placed>> {
            if w == OUT && self.msg.is_some() && self.msg_string {
                return Ok(Some(Placed::Copy(OUT)));
            }
            if attr_truthy(attrs, "empty") {
                return Ok(Some(Placed::Drop));
            }
            let mut opening = io.sep(w).to_vec();
            opening.extend_from_slice(TEXT_HEAD);
            io.write(w, &opening)?;
            Ok(Some(Placed::Object { to: w, kind: "text", head: BlockHead::of(block) }))
        }

        fn reasoning(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed>> {
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
            Ok(Some(Placed::Object { to: w, kind, head: BlockHead::of(block) }))
        }

        fn tool_call(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed>> {
            let w = self.message_for(block, "assistant", attr_truthy(attrs, "in_parts"), false, io)?;
            io.separate(w)?;
            io.write(w, b"{\"type\":\"tool_use\",\"input\":")?;
            let args = if self.foreign { Some(Box::new(HeldArguments::new(io.session, "anthropic:tool-arguments"))) } else { None };
            Ok(Some(Placed::ToolUse { head: BlockHead::of(block), args }))
        }

        fn close_tool_use(&mut self, head: BlockHead, args: Option<Box<HeldArguments>>, late: &[Attr<'_>],
                          io: &mut Io<'_>) -> Result<()> {
            let every = merged(&head.attrs, late);
            let block = head.as_ref();
            if let Some(args) = args {
                let data = crate::encoding::arguments_object(io.session, DIALECT, *args, block)?;
                io.write(OUT, &data)?;
            }
            let mut tail = b",\"id\":".to_vec();
            match attr(&every, "id") {
                Some(id) => tail.extend_from_slice(&self.id(id)),
                None => {
                    let what = format!("{} without an id", subject(io.session, block, None));
                    lose(io.session, DIALECT, block, &what, "tool_use without an id", Some("an id is made up"), None)?;
                    let mut made_up = Vec::new();
                    dumps_str(format!("toolu_missing_{}", head.message).as_bytes(), &mut made_up);
                    tail.extend_from_slice(&made_up);
                    self.unanswered.push_back(made_up);
                }
            }
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
            tail.extend_from_slice(&self.members(block, "tool_use", &every, io)?);
            tail.push(b'}');
            io.write(OUT, &tail)
        }

        /// `dumps(_id(call_id))`: another dialect's tool-call id as anthropic accepts it
        /// (`naming.anthropic_id`); `call_id` is JSON text.
        fn id(&self, call_id: &[u8]) -> Vec<u8> {
            if self.foreign {
                if let Some(text) = json_str(call_id) {
                    let mut out = Vec::new();
                    dumps_str(anthropic_id(&text).as_bytes(), &mut out);
                    return out;
                }
            }
            call_id.to_vec()
        }

        // -- tool results ------------------------------------------------------------------

        fn close_result(&mut self, io: &mut Io<'_>) -> Result<()> {
            let Some(mut result) = self.result.take() else { return Ok(()) };
            let mut tail: Vec<u8> = if result.array { b"]".to_vec() } else { Vec::new() };
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
                    io.session.lose(&format!("$.messages[{}]", result.index), &reason, None)?;
                }
            }
            if !result.id_written {
                tail.extend_from_slice(b",\"tool_use_id\":");
                tail.extend_from_slice(&self.id(result.id.as_deref().unwrap_or(b"null")));
            }
            // `_members_result`
            for (key, value) in [("is_error", &result.is_error), ("cache_control", &result.cache_control)] {
                if let Some(value) = value {
                    tail.push(b',');
                    key_bytes(key.as_bytes(), &mut tail);
                    tail.push(b':');
                    tail.extend_from_slice(value);
                }
            }
            if let Some(extra) = &result.extra {
                tail.push(b',');
                tail.extend_from_slice(&controls::string_text(extra)?);
            }
            tail.push(b'}');
            io.write(OUT, &tail)
        }

        fn tool_result(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed>> {
            let call_id = attr(attrs, "tool_call_id").filter(|raw| *raw != b"null");
            if let Some(result) = &self.result {
                if result.index == block.message && call_id.map_or(true, |id| Some(id) == result.id.as_deref()) {
                    return self.in_result(block, attrs, io); // another part of the same result
                }
            }
            self.close_result(io)?;
            let w = self.message_for(block, "user", true, false, io)?;
            self.msg_has_result = true;
            io.separate(w)?;
            let mut head = b"{\"type\":\"tool_result\"".to_vec();
            if let Some(id) = call_id {
                head.extend_from_slice(b",\"tool_use_id\":");
                head.extend_from_slice(&self.id(id));
            }
            let array = attr_truthy(attrs, "in_parts");
            if array {
                head.extend_from_slice(b",\"content\":[");
            }
            let empty = attr_truthy(attrs, "empty");
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
            });
            if empty {
                io.write(w, &head)?;
                return Ok(Some(Placed::ResultHead { fragments: false, closer: b"", result: serial }));
            }
            if !array {
                head.extend_from_slice(b",\"content\":\"");
                io.write(w, &head)?;
                return Ok(Some(Placed::ResultHead { fragments: true, closer: b"\"", result: serial }));
            }
            head.extend_from_slice(TEXT_HEAD);
            io.write(w, &head)?;
            Ok(Some(Placed::ResultHead { fragments: true, closer: b"\"}", result: serial }))
        }

        /// `_result_late`: attributes that came with a result's last fragment.
        fn result_late(&mut self, serial: u64, late: &[Attr<'_>], only_id_and_error: bool) {
            let Some(result) = self.result.as_mut().filter(|r| r.serial == serial) else {
                return; // (the result was written already: Python updates a dead object)
            };
            for (key, value) in late {
                let value = value.to_vec();
                match key.as_ref() {
                    // (`if result.id is None: result.id = value`; a null leaves it None)
                    "tool_call_id" if result.id.is_none() && value != b"null" => result.id = Some(value),
                    "is_error" => result.is_error = Some(value),
                    "cache_control" if !only_id_and_error => result.cache_control = Some(value),
                    EXTRA_ATTR if !only_id_and_error => result.extra = Some(value),
                    _ => {}
                }
            }
        }

        /// `_in_result`: a further part of the open tool result.
        fn in_result(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], io: &mut Io<'_>) -> Result<Option<Placed>> {
            let result = self.result.as_mut().expect("a result is open");
            if !result.array {
                // cannot happen from our decoders; keep the text
                lose_block(io.session, DIALECT, BlockRef::of(block), "second part of a string tool_result content",
                           None, None)?;
                return Ok(None);
            }
            match block.section {
                Section::ToolResult => {
                    let mut opening = result.separator().to_vec();
                    opening.extend_from_slice(TEXT_HEAD);
                    let serial = result.serial;
                    io.write(OUT, &opening)?;
                    Ok(Some(Placed::ResultText { head: BlockHead::of(block), result: serial }))
                }
                Section::UserImage | Section::UserDocument => self.media(block, attrs, true, io),
                Section::Unknown | Section::ServerToolResult if attr_is(attrs, "dialect", DIALECT) => {
                    let sep = result.separator();
                    io.write(OUT, sep)?;
                    Ok(Some(Placed::Copy(OUT)))
                }
                _ => {
                    lose_block(io.session, DIALECT, BlockRef::of(block), "such content in a tool_result", None, None)?;
                    Ok(None)
                }
            }
        }

        // -- media --------------------------------------------------------------------------

        fn media(&mut self, block: &Block<'_>, attrs: &[Attr<'_>], in_result: bool, io: &mut Io<'_>)
                 -> Result<Option<Placed>> {
            let kind = if block.section == Section::UserImage { "image" } else { "document" };
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
            let result = if in_result {
                let result = self.result.as_mut().expect("a result is open");
                let sep = result.separator();
                io.write(OUT, sep)?;
                Some(result.serial)
            } else {
                let w = self.message_for(block, "user", attr_truthy(attrs, "in_parts"), false, io)?;
                io.separate(w)?;
                None
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
            io.write(OUT, &opening)?;
            Ok(Some(Placed::Media(Media { head: BlockHead::of(block), kind, source, has_payload, result })))
        }

        fn close_media(&mut self, media: Media, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            let Media { head, kind, source, has_payload, result } = media;
            let every = merged(&head.attrs, late);
            let mut tail: Vec<u8> = if has_payload { b"\",".to_vec() } else { Vec::new() };
            tail.extend_from_slice(b"\"type\":");
            tail.extend_from_slice(attr(&every, "source").unwrap_or(b"null"));
            let media_type = attr(&every, "media_type").filter(|raw| *raw != b"null");
            if let Some(media_type) = media_type.filter(|_| !is_str(Some(&source), "url")) {
                tail.extend_from_slice(b",\"media_type\":");
                tail.extend_from_slice(media_type);
            }
            for key in ["file_id", "content"] {
                if let Some(value) = attr(&every, key) {
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
            let members: Vec<Attr<'_>> = every.iter().filter(|(k, _)| k != "is_error").cloned().collect();
            tail.extend_from_slice(&self.members(head.as_ref(), kind, &members, io)?);
            tail.push(b'}');
            io.write(OUT, &tail)?;
            if let Some(serial) = result {
                self.result_late(serial, &every, true);
            }
            Ok(())
        }
    }

    impl PlaceBlocks for State {
        type Placed = Placed;

        fn in_block(&mut self) -> &mut InBlock<Placed> {
            &mut self.block
        }

        fn place(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<Option<Placed>> {
            self.place_block(block, io)
        }

        fn write(&mut self, placed: &mut Placed, payload: &[u8], io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Copy(w) | Placed::Object { to: w, .. } => io.write(*w, payload),
                Placed::Drop | Placed::ResultHead { fragments: false, .. } => Ok(()),
                Placed::ResultHead { .. } | Placed::ResultText { .. } | Placed::Media(_) => io.write(OUT, payload),
                Placed::ToolUse { args: Some(args), .. } => args.feed(payload, io.session),
                Placed::ToolUse { args: None, .. } => {
                    if payload.is_empty() {
                        return Ok(());
                    }
                    let data = unescape_json_text(payload)?;
                    io.write(OUT, &data)
                }
            }
        }

        fn close(&mut self, placed: Placed, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Copy(_) | Placed::Drop => Ok(()),
                Placed::Object { to, kind, head } => {
                    let every = merged(&head.attrs, late);
                    let mut tail = b"\"".to_vec();
                    tail.extend_from_slice(&self.members(head.as_ref(), kind, &every, io)?);
                    tail.push(b'}');
                    io.write(to, &tail)
                }
                Placed::ToolUse { head, args } => self.close_tool_use(head, args, late, io),
                Placed::ResultHead { closer, result, .. } => {
                    io.write(OUT, closer)?;
                    self.result_late(result, late, false);
                    Ok(())
                }
                Placed::ResultText { head, result } => {
                    let every = merged(&head.attrs, late);
                    let (linking, text): (Vec<Attr<'_>>, Vec<Attr<'_>>) =
                        every.into_iter().partition(|(k, _)| k == "is_error" || k == "tool_call_id");
                    let mut tail = b"\"".to_vec();
                    tail.extend_from_slice(&self.members(head.as_ref(), "text", &text, io)?);
                    tail.push(b'}');
                    io.write(OUT, &tail)?;
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
            controls::tool_from_canonical(attrs, schema, io.session)
        }

        fn tool_element(&mut self, key: &'static str, raw: &[u8], io: &mut Io<'_>) -> Result<()> {
            self.open_top(key, io)?;
            io.json(OUT, |w, b| w.raw_element(raw, b))
        }
    }

    /// `ext.path.rsplit(".", 1)[1]`: the member an extension of a message names.
    fn last_key(path: &str) -> Result<&str> {
        path.rsplit_once('.').map(|(_, key)| key).ok_or_else(|| {
            Error::new(ErrorClass::Transcode, format!("an extension of a message without a member path ({path})"))
        })
    }

    fn not_a_role() -> Error {
        Error::new(ErrorClass::Transcode, "a block's role attribute that is not a string")
    }

    fn owned_control(control: Control<'_>) -> Control<'static> {
        Control {
            name: Cow::Owned(control.name.into_owned()),
            value: Cow::Owned(control.value.into_owned()),
            dialect: control.dialect.map(|d| Cow::Owned(d.into_owned())),
            key: control.key.map(|k| Cow::Owned(k.into_owned())),
            raw: control.raw.map(|r| Cow::Owned(r.into_owned())),
        }
    }

    fn owned_extension(ext: Extension<'_>) -> Extension<'static> {
        Extension {
            dialect: Cow::Owned(ext.dialect.into_owned()),
            path: Cow::Owned(ext.path.into_owned()),
            raw: Cow::Owned(ext.raw.into_owned()),
            message: ext.message,
            lossless: ext.lossless,
        }
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
                    path: Cow::Owned(text("path").unwrap()),
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
                    .map(|l| Value::Array(vec![Value::str(&l.dialect), Value::str(&l.path), Value::str(&l.reason)]))
                    .collect();
                assert_eq!(&Value::Array(losses), case.get("losses").unwrap(), "{source}");
                assert_eq!(session.reorder.held(), 0, "{source}: every hold is released");
            }
        }
    }
}
