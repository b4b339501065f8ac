//! The openai response and stream codecs (`src/interlingua/dialects/openai/response.py`):
//! `ResponseDecoder`, `StreamDecoder`, `ResponseEncoder`, `StreamEncoder`. Owner: helper RO (issue 12).
//!
//! The decisions are response.py's (its module docstring). The decoders are one
//! state machine (`Openai`, over `decoding::Machine`) for both kinds: a body
//! (`chat.completion`) is one document, a stream (`chat.completion.chunk`) one
//! document per SSE frame; the per-choice state (`Choice`) lives across frames.
#![forbid(unsafe_code)]

pub(crate) use decoder::ResponseDecoder;
pub use decoder::StreamDecoder;

/// Python's `str(value)` of a small JSON value (an error's odd `type`/`message`, a citation's `type`).
fn py_str(value: &crate::value::Value, out: &mut String) {
    match value {
        crate::value::Value::Str(s) => out.push_str(&String::from_utf8_lossy(s)),
        other => py_repr(other, out),
    }
}

/// Python's `repr(value)` of JSON data (`unicode::py_value_repr`).
fn py_repr(value: &crate::value::Value, out: &mut String) {
    out.push_str(&crate::unicode::py_value_repr(value));
}

/// `error_kind(err)`: the canonical kind (anthropic's names) of an openai error object, and
/// whether its code named it (then the kind carries the code: no loss). The code first, being
/// the finer (`ERROR_CODE_KINDS`), else the type (`ERROR_TYPE_KINDS`; a type not listed is its
/// own kind).
fn error_kind(err: &crate::value::Value) -> (String, bool) {
    use crate::value::Value;
    let by_code = match err.get("code") {
        Some(Value::Str(code)) => match code.as_slice() {
            b"rate_limit_exceeded" | b"slow_down" => Some("rate_limit_error"),
            b"insufficient_quota" => Some("billing_error"),
            b"invalid_api_key" => Some("authentication_error"),
            b"model_not_found" => Some("not_found_error"),
            b"unsupported_country_region_territory" => Some("permission_error"),
            b"server_is_overloaded" => Some("overloaded_error"),
            _ => None,
        },
        _ => None,
    };
    if let Some(kind) = by_code {
        return (kind.to_string(), true);
    }
    let kind = crate::lifecycle::source_error_type(err.get("type"));
    let mapped = match kind.as_str() {
        "requests" | "tokens" => "rate_limit_error",
        "insufficient_quota" => "billing_error",
        "server_error" => "api_error",
        "service_unavailable_error" => "overloaded_error",
        "request_forbidden" => "permission_error",
        _ => return (kind, false),
    };
    (mapped.to_string(), false)
}

mod decoder {
    use std::borrow::Cow;
    use std::collections::BTreeMap;

    use crate::canonical::{Event, Extension, Section, Usage};
    use crate::decoding::{
        dumps_key, member_path, Attr, Cx, Decode, Dialect, EventSink, Framing, Frame, Machine, Read, ResponseBase,
        INTEGER, OPT_INTEGER, OPT_OBJECT, OPT_STRING,
    };
    use crate::error::{Error, ErrorClass, Result};
    use crate::json::{Frames, Token};
    use crate::lifecycle::{finish_from, tier_from, usage_from_openai, BlockStream, Pieces, UsageObject};
    use crate::reorder::Hold;
    use crate::session::Session;
    use crate::value::{str_json, Value};

    const DIALECT: &str = "openai";
    const CONTENT_BEFORE_ID: &str = "openai:content-before-id";
    const CONTENT_BEFORE_INDEX: &str = "openai:content-before-index";
    const CONTENT_BEFORE_REASONING: &str = "openai:content-before-reasoning";
    const ARGUMENTS_BEFORE_INDEX: &str = "openai:arguments-before-index";
    const INTERLEAVED: &str = "openai:interleaved-tool-calls";
    /// `sse_event(None, b"[DONE]")`
    const DONE_FRAME: &[u8] = b"data: [DONE]\n\n";

    fn internal(what: &str) -> Error {
        Error::new(ErrorClass::Transcode, format!("internal error in the native core: openai response decoder: {what}"))
    }

    /// The handlers (Python's bound methods and lambdas), by what they read.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum S {
        /// a stream frame's first token (`StreamDecoder._document`)
        Doc,
        /// the members of a body or a chunk (`top_value`)
        Top,
        TopId,
        TopModel,
        Usage,
        Tier,
        ErrorValue,
        /// a top-level member without canonical meaning (`_keep`)
        Keep,
        /// a value consumed and dropped (`skip_value`, `read_raw(..., lambda raw: None)`)
        Ignore,
        Choices,
        /// a choice's first token (`_ChoiceReader._first`)
        ChoiceFirst,
        /// the value after a leading `index` key (`_index`)
        ChoiceIndex,
        ChoiceIndexValue,
        /// the members of a choice once its index is known (`_ChoiceReader.member`)
        Choice,
        FinishReason,
        ChoiceLogprobs,
        ChoiceOther,
        /// the members of a `message` / `delta` (`_MessageReader.member`)
        Message,
        Content,
        Refusal,
        Reasoning,
        MessageOther,
        ToolCalls,
        /// the members of one `tool_calls` element (`_ToolCallReader.member`)
        ToolCall,
        CallIndex,
        CallId,
        CallOther,
        /// the members of its `function`
        Function,
        /// a function's member other than name and arguments (a legacy call's too)
        FunctionOther,
        /// a legacy `function_call`: the members of a `function`, the end of a call
        LegacyCall,
        CallName,
        Arguments,
    }

    // -- blocks ---------------------------------------------------------------------------

    /// `lifecycle.ReasoningFirst`: content a message writes before its reasoning
    /// waits (from its first byte) until the object's next member shows whether
    /// reasoning follows. The same rule as `lifecycle::ReasoningFirst`, kept here
    /// because its release hands the pieces to a sink that routes each through the
    /// decoder's block and gate, which need the `Cx` that owns the `Session` the pieces
    /// are counted in: the pieces are `lifecycle::Pieces` (as the ollama decoder's),
    /// released in two steps (`release`, then `each_then_clear`), their buffers living
    /// across frames (no allocation per frame).
    #[derive(Debug, Default)]
    struct ReasoningFirst {
        /// the held text's pieces (none held: Python's `hold is None`)
        text: Pieces,
        /// a reasoning member is being read: the held text waits for its end
        waiting: bool,
    }

    /// The three string members of a message and their block sinks (`block_sink`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Text {
        Content,
        Refusal,
        Reasoning,
    }

    impl Text {
        fn section(self) -> Section {
            match self {
                Text::Content => Section::AssistantText,
                Text::Refusal => Section::AssistantRefusal,
                Text::Reasoning => Section::AssistantReasoning,
            }
        }
    }

    /// What one `tool_calls` element's argument fragments go to (`_route`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Route {
        /// the choice's open block
        Current,
        /// the held call of this index
        Held(i64),
    }

    /// `_Choice`: what one choice has open across chunks.
    #[derive(Debug)]
    struct Choice {
        index: i64,
        block: Option<BlockStream>,
        /// tool index -> (attrs, held fragments): calls interleaved with the one streaming
        held: BTreeMap<i64, (Vec<Attr>, Hold<Vec<u8>>)>,
        closed_tools: Vec<i64>,
        /// the `path` attribute of each text sink, fixed by the member that made it
        sinks: [Option<Vec<u8>>; 3],
        finished: bool,
        /// the message reader's state (a stream's: one per choice, across frames)
        reader: MessageReader,
    }

    impl Choice {
        fn new(index: i64) -> Self {
            Choice { index, block: None, held: BTreeMap::new(), closed_tools: Vec::new(), sinks: [None, None, None],
                     finished: false, reader: MessageReader::default() }
        }

        fn block_is_tool(&self) -> bool {
            self.block.as_ref().is_some_and(|b| b.section == Section::ToolCall)
        }

        fn is_current_tool(&self, index: Option<i64>) -> bool {
            self.block.as_ref().is_some_and(|b| b.section == Section::ToolCall && b.key == index)
        }
    }

    /// `_MessageReader`'s state.
    #[derive(Debug, Default)]
    struct MessageReader {
        tool_position: i64,
        text_first: ReasoningFirst,
        /// the key of the first reasoning member (its sink's path)
        reasoning_made: bool,
    }

    /// `_ChoiceReader`'s state for the element being read.
    #[derive(Debug, Default)]
    struct ChoiceReader {
        /// position of the choice in `choices` (the decoder's list)
        c: usize,
        finish: Option<String>,
        has_finish: bool,
    }

    /// `LEGACY_CALL`: the block key of a choice's legacy `function_call` (`tool_calls`
    /// indexes are >= 0).
    const LEGACY_CALL: i64 = -1;

    /// `_ToolCallReader`'s state: one `tool_calls` element.
    #[derive(Debug, Default)]
    struct ToolCallReader {
        index: Option<i64>,
        /// `path`, then `id` / `name` as they come (a dict's order)
        attrs: Vec<Attr>,
        pending: Option<Hold<Vec<u8>>>,
        route: Option<Route>,
        custom: bool,
    }

    /// The decoder's data (`_Base` and its subclasses').
    pub(crate) struct Openai {
        streaming: bool,
        /// the gate until the message starts, id, model (`ResponseDecoderBase`)
        base: ResponseBase,
        /// top-level fields without canonical meaning: (key, raw JSON), once each
        kept: Vec<(Cow<'static, [u8]>, Vec<u8>)>,
        tier_seen: bool,
        choices: Vec<Choice>,
        /// the body's `choices` came (`choices_seen`)
        choices_seen: bool,
        choice: ChoiceReader,
        call: ToolCallReader,
        /// the key of the member whose raw value is being read
        key: Vec<u8>,
        /// the body's usage (a response: emitted at its end)
        usage: Option<Usage>,
        /// a stream: `[DONE]` or the end came
        ended: bool,
        terminated: bool,
        frames: u64,
        /// `Options.max_value_bytes` (a kept field skipped must be one its raw read accepts)
        max_value_bytes: usize,
    }

    /// `str_json(f"$.choices[{choice}].{member}.tool_calls[{n}]")` into `json` (cleared
    /// first), written by pieces: a stream makes one per tool-call delta (a plain path: no escapes).
    fn write_call_path(json: &mut Vec<u8>, choice: i64, member: &str, n: i64) {
        json.clear();
        json.extend_from_slice(b"\"$.choices[");
        crate::lifecycle::push_int(json, choice);
        json.extend_from_slice(b"].");
        json.extend_from_slice(member.as_bytes());
        json.extend_from_slice(b".tool_calls[");
        crate::lifecycle::push_int(json, n);
        json.extend_from_slice(b"]\"");
    }

    /// The kept top-level fields every openai body has, with their paths: static names
    /// (no copy per response) for `_keep` and its extension.
    const COMMON_KEPT: [(&[u8], &[u8]); 2] = [(b"created", b"$.created"), (b"system_fingerprint", b"$.system_fingerprint")];

    /// `value` as Python's truthiness sees a token's value (`and value`): bytes of a
    /// string or number; `None` for the rest.
    fn token_truthy(token: &Token<'_>) -> bool {
        match token {
            Token::String(v) | Token::StringOpen(v) | Token::Number(v) => !v.is_empty(),
            _ => false,
        }
    }

    /// A number token that is a small non-negative integer (what an index is, every
    /// chunk): read without making a `Value`; anything else -- a number longer than
    /// `max_value_bytes` too, refused there -- goes the checked way.
    fn small_int(token: &Token<'_>, cx: &Cx<'_>) -> Option<i64> {
        match token {
            Token::Number(d) if !d.is_empty() && d.len() <= 18 && d.iter().all(u8::is_ascii_digit)
                && cx.within_bound(token) => {
                Some(d.iter().fold(0i64, |n, &b| n * 10 + i64::from(b - b'0')))
            }
            _ => None,
        }
    }

    /// A whole string token without escapes, within `max_value_bytes` (its value is its
    /// text: nothing to refuse).
    fn plain_string(token: &Token<'_>, cx: &Cx<'_>) -> bool {
        matches!(token, Token::String(text) if !crate::json::has_escape(text)) && cx.within_bound(token)
    }

    /// `_index_in_64_bits`: a choice's or a tool call's index within a signed 64-bit integer,
    /// beyond it a SchemaError at the index (located by the decoder).
    fn index_of(value: &Value) -> Result<i64> {
        value.as_i64().ok_or_else(|| Error::new(ErrorClass::Schema, crate::lifecycle::beyond_64_bits("index", "an index")))
    }

    /// `_lose_kept`: a top-level member beside an error (openai's `request_id`): no message
    /// carries it.
    fn lose_kept(key: &[u8], raw: &[u8], session: &mut Session) -> Result<()> {
        if key != b"created" && raw != b"null" {
            session.lose_member_pieces(&[b"$.", key], "such field", None)?;
        }
        Ok(())
    }

    impl Openai {
        fn new(streaming: bool, session: &Session) -> Self {
            Openai {
                streaming,
                max_value_bytes: session.options.max_value_bytes,
                base: ResponseBase::new(CONTENT_BEFORE_ID),
                kept: Vec::new(),
                tier_seen: false,
                choices: Vec::new(),
                choices_seen: false,
                choice: ChoiceReader::default(),
                call: ToolCallReader::default(),
                key: Vec::with_capacity(32), // (sized once: the keys remembered grow it otherwise)
                usage: None,
                ended: false,
                terminated: false,
                frames: 0,
            }
        }

        fn remember_key(&mut self, key: &[u8]) {
            self.key.clear();
            self.key.extend_from_slice(key);
        }

        fn member_name(&self) -> &'static str {
            if self.streaming { "delta" } else { "message" }
        }

        // -- the message start (ResponseDecoderBase) --------------------------------------

        /// `out(event)`: an event that must follow the message start.
        fn out(&mut self, event: Event<'_>, cx: &mut Cx<'_>) -> Result<()> {
            self.base.out(event, cx)
        }

        fn kept_extension<'k>(key: &[u8], raw: &'k [u8]) -> Event<'k> {
            let path = match COMMON_KEPT.iter().find(|(k, _)| *k == key) {
                Some((_, path)) => Cow::Borrowed(*path),
                None => Cow::Owned(member_path(format_args!("$."), key)),
            };
            Event::Extension(Extension {
                dialect: Cow::Borrowed(DIALECT),
                path,
                raw: Cow::Borrowed(raw),
                message: None,
                lossless: key == b"created" || raw == b"null",
            })
        }

        fn start_message(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            let kept = &self.kept;
            self.base.start_message(cx, |cx| {
                for (key, raw) in kept {
                    // created, system_fingerprint ... (`_starting`)
                    cx.emit(Self::kept_extension(key, raw))?;
                }
                Ok(())
            })
        }

        fn maybe_start(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            if self.base.id.is_some() && self.base.model.is_some() && !self.preamble() {
                self.start_message(cx)?;
            }
            Ok(())
        }

        /// `_preamble`: a stream's chunk before its message -- no choice yet, and id and model
        /// empty or absent (Azure's first chunk: its prompt's content-filter results). It does
        /// not start the message: the id and model of a chunk that follows do.
        fn preamble(&self) -> bool {
            self.streaming
                && self.choices.is_empty()
                && self.base.id.as_deref().is_none_or(str::is_empty)
                && self.base.model.as_deref().is_none_or(str::is_empty)
        }

        // -- top-level members ---------------------------------------------------------

        /// `top_value`: a member of a body or a chunk.
        fn top_value(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, cx: &Cx<'_>) {
            match key {
                b"choices" => {
                    self.choices_seen = true;
                    m.read(Read::Objects(S::Choices, "choices"))
                }
                // (null, in every chunk but the last: no usage)
                b"usage" if token == Token::Null && cx.within_bound(&token) => {}
                // (raw: `lifecycle::UsageObject` reads its counts off the text)
                b"usage" => m.read(Read::Raw(S::Usage, Some(OPT_OBJECT), "usage")),
                b"id" | b"model" => {
                    if self.base.started && matches!(token, Token::String(_) | Token::StringOpen(_)) {
                        // every chunk repeats them: once the message started they change nothing
                        m.read(Read::Skip);
                        return;
                    }
                    let (state, what) = if key == b"id" { (S::TopId, "id") } else { (S::TopModel, "model") };
                    m.read(Read::Value(state, Some(OPT_STRING), what));
                }
                // (every chunk repeats it: null, or a plain string once one was seen, changes
                // nothing, and reading it as data could not fail)
                b"service_tier" if token == Token::Null && cx.within_bound(&token) || self.tier_seen && plain_string(&token, cx) => {}
                b"service_tier" => m.read(Read::Value(S::Tier, Some(OPT_STRING), "service_tier")),
                b"object" => m.read(Read::Skip),
                b"error" => m.read(Read::Value(S::ErrorValue, None, "")),
                _ => {
                    // every chunk repeats its kept fields (created, system_fingerprint): one
                    // kept already changes nothing, and is skipped where its raw read could
                    // not fail (a scalar within the value budget, of its type). The response's
                    // time is carried: an integer, checked in every chunk.
                    let (expect, what) = if key == b"created" { (Some(OPT_INTEGER), "created") } else { (None, "") };
                    let within = crate::lifecycle::raw_len(&token).is_some_and(|n| n <= self.max_value_bytes);
                    let typed = expect.is_none_or(|expect| !expect.refuses(&token));
                    if within && typed && self.kept.iter().any(|(k, _)| k.as_ref() == key) {
                        m.read(Read::Skip);
                        return;
                    }
                    self.remember_key(key);
                    m.read(Read::Raw(S::Keep, expect, what));
                }
            }
        }

        /// `_keep`: a top-level field without canonical meaning, once.
        fn keep(&mut self, raw: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            if self.kept.iter().any(|(k, _)| k.as_ref() == self.key.as_slice()) {
                return Ok(()); // every chunk repeats it
            }
            let key: Cow<'static, [u8]> = match COMMON_KEPT.iter().find(|(k, _)| *k == self.key.as_slice()) {
                Some((k, _)) => Cow::Borrowed(*k),
                None => Cow::Owned(self.key.clone()),
            };
            if self.base.errored && !self.base.started {
                lose_kept(&key, raw, cx.session)?;
            }
            if self.base.started {
                self.out(Self::kept_extension(&key, raw), cx)?;
            }
            self.kept.push((key, raw.to_vec()));
            Ok(())
        }

        fn tier(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
            if value.is_null() || self.tier_seen {
                return Ok(());
            }
            self.tier_seen = true;
            let usage = Usage { service_tier: tier_from(DIALECT, Some(&value)), ..Usage::default() };
            self.out(Event::Usage(usage), cx)
        }

        fn error_value(&mut self, value: Value, cx: &mut Cx<'_>) -> Result<()> {
            if value.is_null() {
                return Ok(());
            }
            self.base.release(cx)?; // an error needs no id (`start_message_for_error`)
            for c in 0..self.choices.len() {
                // every block gets its last fragment; the error follows it
                self.close_block(c, cx)?;
            }
            use crate::lifecycle::{lose_error_members, source_error_message};
            let (kind, code_named_it) = super::error_kind(&value);
            lose_error_members(&value, cx.session, if code_named_it { &["code"] } else { &[] })?;
            for (key, raw) in &self.kept {
                // (top-level members: no message starts to carry them)
                lose_kept(key, raw, cx.session)?;
            }
            let (kind, message, status) = match &value {
                Value::Object(_) => {
                    let status = match value.get("code") {
                        Some(Value::Bool(_)) => None, // (true is no status)
                        // (a code beyond 64 bits is no status, as in Python)
                        Some(code) if code.is_py_int() => code.as_i64(),
                        _ => None,
                    };
                    (kind, source_error_message(value.get("message")), status)
                }
                other => ("api_error".to_string(), source_error_message(Some(other)), None),
            };
            cx.emit(Event::Error { kind: Cow::Owned(kind), message: Cow::Owned(message), status })?;
            self.base.errored = true;
            Ok(())
        }

        fn usage(&mut self, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            let Some(obj) = UsageObject::read(raw).map_err(|e| cx.located(e, offset))? else { return Ok(()) };
            let usage = usage_from_openai(&obj, cx.session, "$.usage")?;
            if self.streaming {
                self.out(Event::Usage(usage), cx)
            } else {
                self.usage = Some(usage);
                Ok(())
            }
        }

        // -- choices ---------------------------------------------------------------------

        /// `choice(index)`: the choice's position, made on first sight.
        fn choice_at(&mut self, index: i64) -> usize {
            match self.choices.iter().position(|c| c.index == index) {
                Some(at) => at,
                None => {
                    if self.choices.is_empty() {
                        // room for one: a first push makes room for four (1216 bytes, past what
                        // glibc's thread cache serves); most responses have one choice
                        self.choices.reserve_exact(1);
                    }
                    self.choices.push(Choice::new(index));
                    self.choices.len() - 1
                }
            }
        }

        /// `_choose(index)`.
        fn choose(&mut self, index: Option<&Value>) -> Result<()> {
            let index = match index {
                Some(v) if v.is_py_int() => index_of(v)?,
                _ => 0,
            };
            self.choice.c = self.choice_at(index);
            Ok(())
        }

        fn open_block(&mut self, c: usize, section: Section, attrs: Vec<Attr>, key: Option<i64>,
                      cx: &mut Cx<'_>) -> Result<()> {
            let choice = &self.choices[c];
            if choice.block.as_ref().is_some_and(|b| b.section == section && b.key == key) {
                return Ok(());
            }
            self.close_block(c, cx)?;
            let choice = &mut self.choices[c];
            choice.block = Some(BlockStream::new(section, choice.index, attrs, key));
            Ok(())
        }

        /// A fragment into the choice's open block.
        fn block_fragment(&mut self, c: usize, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            let block = match &mut self.choices[c].block {
                Some(block) => block.fragment(data),
                None => return Err(internal("a fragment without a block")),
            };
            match block {
                Some(block) => self.out(Event::Block(block), cx),
                None => Ok(()),
            }
        }

        /// `close_block`: held tool calls follow when the tool calls end.
        fn close_block(&mut self, c: usize, cx: &mut Cx<'_>) -> Result<()> {
            let choice = &mut self.choices[c];
            let Some(mut block) = choice.block.take() else { return Ok(()) };
            let was_tool = block.section == Section::ToolCall;
            if was_tool {
                if let Some(key) = block.key {
                    choice.closed_tools.push(key);
                }
            }
            let last = block.close(&[]);
            self.out(Event::Block(last), cx)?;
            if was_tool {
                self.flush_held_tools(c, cx)?;
            }
            Ok(())
        }

        fn flush_held_tools(&mut self, c: usize, cx: &mut Cx<'_>) -> Result<()> {
            while let Some((index, (attrs, mut hold))) = self.choices[c].held.pop_first() {
                let mut block = BlockStream::new(Section::ToolCall, self.choices[c].index, attrs, Some(index));
                let pieces: Vec<Vec<u8>> = hold.drain(&mut cx.session.reorder).collect();
                for data in &pieces {
                    if let Some(b) = block.fragment(data) {
                        self.out(Event::Block(b), cx)?;
                    }
                }
                let last = block.close(&[]);
                self.out(Event::Block(last), cx)?;
                self.choices[c].closed_tools.push(index);
            }
            Ok(())
        }

        /// `block_sink(c, section, what)(data)`: a non-empty fragment into the choice's block of `section`.
        fn text_fragment(&mut self, c: usize, text: Text, what: &str, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            let slot = text as usize;
            if self.choices[c].sinks[slot].is_none() {
                // `str_json("$.choices[<index>].<message|delta>.<what>")`, in pieces (`format!` costs
                // more than the rest of a delta; the names are plain: nothing to escape)
                let mut json = Vec::with_capacity(48);
                json.extend_from_slice(b"\"$.choices[");
                crate::lifecycle::push_int(&mut json, self.choices[c].index);
                for piece in ["].", self.member_name(), ".", what, "\""] {
                    json.extend_from_slice(piece.as_bytes());
                }
                self.choices[c].sinks[slot] = Some(json);
            }
            if data.is_empty() {
                return Ok(());
            }
            let section = text.section();
            let open = self.choices[c].block.as_ref().is_some_and(|b| b.section == section && b.key.is_none());
            if !open {
                // (the attributes are made only for a new block: a stream's deltas continue one)
                let path = self.choices[c].sinks[slot].clone().unwrap_or_default();
                self.open_block(c, section, vec![(Cow::Borrowed("path"), path.into())], None, cx)?;
            }
            self.block_fragment(c, data, cx)
        }

        fn finish_choice(&mut self, c: usize, reason: Option<&str>, cx: &mut Cx<'_>) -> Result<()> {
            if self.choices[c].block_is_tool() {
                self.close_block(c, cx)?;
            }
            self.close_block(c, cx)?;
            self.flush_held_tools(c, cx)?;
            self.choices[c].finished = true;
            let reason = finish_from(DIALECT, reason);
            let choice = self.choices[c].index;
            self.out(Event::Finish { reason, stop_sequence: None, choice }, cx)
        }

        // -- the choice reader -------------------------------------------------------------

        fn begin_choice(&mut self, m: &mut Machine<S>) {
            self.choice.finish = None;
            self.choice.has_finish = false;
            m.push(Frame::State(S::ChoiceFirst));
        }

        fn choice_first(&mut self, m: &mut Machine<S>, token: Token<'_>) -> Result<()> {
            if token == Token::Key(b"index") {
                m.replace(Frame::Members(S::Choice));
                m.then(Read::State(S::ChoiceIndex));
                return Ok(());
            }
            // the index comes later (sorted keys): the choice's tokens are held until it does
            m.pop();
            m.key_first(S::Choice, "index", Some(INTEGER), CONTENT_BEFORE_INDEX);
            m.read(Read::Top);
            Ok(())
        }

        fn choice_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, offset: u64,
                         cx: &mut Cx<'_>) -> Result<()> {
            match key {
                b"delta" | b"message" => {
                    if token != Token::ObjectStart {
                        let what = if key == b"delta" { "an object for delta" } else { "an object for message" };
                        return Err(cx.wrong_type(&token, what, offset));
                    }
                    if !self.streaming {
                        // a new _MessageReader per message
                        self.choices[self.choice.c].reader = MessageReader::default();
                    }
                    m.push(Frame::Members(S::Message));
                }
                b"finish_reason" => {
                    if token == Token::Null {
                        self.choice.has_finish = true;
                        self.choice.finish = None;
                    } else {
                        m.read(Read::Value(S::FinishReason, Some(OPT_STRING), "finish_reason"));
                    }
                }
                // null (every chunk has it) is nothing to carry: not even read when its raw
                // read could not fail
                b"logprobs" if token == Token::Null && 4 <= self.max_value_bytes => {}
                b"logprobs" => m.read(Read::Raw(S::ChoiceLogprobs, None, "")),
                _ => {
                    self.remember_key(key);
                    m.read(Read::Raw(S::ChoiceOther, None, ""));
                }
            }
            Ok(())
        }

        fn choice_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            if self.choice.has_finish {
                if let Some(reason) = self.choice.finish.take() {
                    return self.finish_choice(self.choice.c, Some(&reason), cx);
                }
            }
            Ok(())
        }

        // -- the message reader -------------------------------------------------------------

        fn message_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, offset: u64,
                          cx: &mut Cx<'_>) -> Result<()> {
            let c = self.choice.c;
            let choice = &self.choices[c];
            if choice.finished && key != b"role" && token != Token::Null && !matches!(token, Token::String(b"")) {
                let key = String::from_utf8_lossy(key);
                return Err(cx.error(format!("{key} after choice {} finished (its finish_reason came)", choice.index),
                                    offset));
            }
            let reasoning_key = key == b"reasoning_content" || key == b"reasoning";
            if key != b"content" && token != Token::Null {
                // (a null member shows nothing: the text waits on)
                self.text_first_member(c, reasoning_key, cx)?;
            }
            match key {
                b"content" => {
                    if self.choices[c].block_is_tool() && token != Token::Null && token_truthy(&token) {
                        self.close_block(c, cx)?; // text after tool calls: the calls are complete
                    }
                    if token != Token::Null {
                        m.read(Read::String(S::Content, "content"));
                    }
                }
                b"refusal" => {
                    if token != Token::Null {
                        m.read(Read::String(S::Refusal, "refusal"));
                    }
                }
                b"reasoning_content" | b"reasoning" => {
                    if !self.choices[c].reader.reasoning_made {
                        self.choices[c].reader.reasoning_made = true;
                        if self.choices[c].sinks[Text::Reasoning as usize].is_none() {
                            let what = if key == b"reasoning" { "reasoning" } else { "reasoning_content" };
                            self.text_fragment(c, Text::Reasoning, what, b"", cx)?;
                        }
                    }
                    if token != Token::Null {
                        let what = if key == b"reasoning" { "reasoning" } else { "reasoning_content" };
                        m.read(Read::String(S::Reasoning, what));
                    }
                }
                b"tool_calls" => {
                    if token != Token::Null {
                        m.read(Read::Objects(S::ToolCalls, "tool_calls"));
                    }
                }
                b"function_call" => {
                    // legacy: the choice's one call
                    if token != Token::Null {
                        self.begin_legacy_call();
                        m.read(Read::Members(S::LegacyCall, "function_call"));
                    }
                }
                b"role" => m.read(Read::Skip),
                _ => {
                    self.remember_key(key);
                    m.read(Read::Raw(S::MessageOther, None, ""));
                }
            }
            Ok(())
        }

        fn message_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            self.text_release(self.choice.c, cx)
        }

        /// `ReasoningFirst.text`.
        fn text_first_text(&mut self, c: usize, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            if cx.session.options.refuse_reorder {
                return self.text_fragment(c, Text::Content, "content", data, cx);
            }
            if data.is_empty() {
                return Ok(());
            }
            self.choices[c].reader.text_first.text.push(CONTENT_BEFORE_REASONING, data, cx.session)
        }

        /// `ReasoningFirst.member`.
        fn text_first_member(&mut self, c: usize, reasoning: bool, cx: &mut Cx<'_>) -> Result<()> {
            if reasoning {
                let tf = &mut self.choices[c].reader.text_first;
                tf.waiting = !tf.text.is_empty();
                return Ok(());
            }
            self.text_release(c, cx)
        }

        /// `ReasoningFirst.release`.
        fn text_release(&mut self, c: usize, cx: &mut Cx<'_>) -> Result<()> {
            let tf = &mut self.choices[c].reader.text_first;
            tf.waiting = false;
            if tf.text.is_empty() {
                return Ok(());
            }
            let mut text = tf.text.release(&mut cx.session.reorder); // (the sink needs the decoder)
            let result = text.each_then_clear(|piece| self.text_fragment(c, Text::Content, "content", piece, cx));
            self.choices[c].reader.text_first.text.restore(text); // (their capacity kept for the next frame)
            result
        }

        // -- tool calls -----------------------------------------------------------------------

        fn begin_tool_call(&mut self, m: &mut Machine<S>) {
            let member = self.member_name();
            let c = &mut self.choices[self.choice.c];
            let position = c.reader.tool_position;
            c.reader.tool_position += 1;
            // (the last call's attributes and path text are reused: a stream has a call per delta)
            let mut attrs = std::mem::take(&mut self.call.attrs);
            let mut path = attrs.drain(..).find(|(name, _)| name == "path").map(|(_, json)| json).unwrap_or_default();
            write_call_path(path.to_mut(), c.index, member, position);
            attrs.push((Cow::Borrowed("path"), path));
            self.call = ToolCallReader {
                index: if self.streaming { None } else { Some(position) },
                attrs,
                pending: None,
                route: None,
                custom: false,
            };
            m.push(Frame::Members(S::ToolCall));
        }

        /// `_ToolCallReader(..., legacy=True)`: a `function_call`, keyed `LEGACY_CALL`.
        fn begin_legacy_call(&mut self) {
            let member = self.member_name();
            let choice = self.choices[self.choice.c].index;
            let mut path = Vec::with_capacity(40);
            path.extend_from_slice(b"\"$.choices[");
            crate::lifecycle::push_int(&mut path, choice);
            path.extend_from_slice(b"].");
            path.extend_from_slice(member.as_bytes());
            path.extend_from_slice(b".function_call\"");
            self.call = ToolCallReader {
                index: Some(LEGACY_CALL),
                attrs: vec![(Cow::Borrowed("path"), path.into())],
                pending: None,
                route: None,
                custom: false,
            };
        }

        fn call_path(&self) -> String {
            // the path attribute's text (a JSON string of a plain path: no escapes)
            let json = &self.call.attrs[0].1;
            String::from_utf8_lossy(&json[1..json.len().saturating_sub(1)]).into_owned()
        }

        fn set_call_attr(&mut self, name: &'static str, json: Vec<u8>) {
            crate::decoding::set_attr(&mut self.call.attrs, Cow::Borrowed(name), json);
        }

        fn call_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>, cx: &Cx<'_>) {
            match key {
                b"index" => match small_int(&token, cx) {
                    Some(index) => self.call_index_is(index),
                    None => m.read(Read::Value(S::CallIndex, Some(INTEGER), "a tool call's index")),
                },
                b"id" => m.read(Read::Value(S::CallId, Some(OPT_STRING), "a tool call's id")),
                b"type" => m.read(Read::Skip),
                b"function" => {
                    if token != Token::Null {
                        m.read(Read::Members(S::Function, "function"));
                    }
                }
                b"custom" => {
                    // a custom tool's call (free-form input): no canonical tool call
                    self.call.custom = true;
                    m.read(Read::Raw(S::Ignore, None, ""));
                }
                _ => {
                    self.remember_key(key);
                    m.read(Read::Raw(S::CallOther, None, ""));
                }
            }
        }

        fn function_member(&mut self, m: &mut Machine<S>, key: &[u8], token: Token<'_>) {
            match key {
                b"name" => m.read(Read::Value(S::CallName, Some(OPT_STRING), "a tool call's name")),
                b"arguments" => {
                    if token != Token::Null {
                        m.read(Read::String(S::Arguments, "arguments"));
                    }
                }
                _ => {
                    // (was dropped with nothing recorded)
                    self.remember_key(key);
                    m.read(Read::Raw(S::FunctionOther, None, ""));
                }
            }
        }

        fn call_index(&mut self, value: Value) -> Result<()> {
            self.call_index_is(index_of(&value)?);
            Ok(())
        }

        fn call_index_is(&mut self, index: i64) {
            self.call.index = Some(index);
            if self.streaming {
                // a delta names its call by index (the path attribute, first, rewritten in place)
                let choice = self.choices[self.choice.c].index;
                match self.call.attrs.iter_mut().find(|(name, _)| name == "path") {
                    Some((_, path)) => write_call_path(path.to_mut(), choice, "delta", index),
                    None => {
                        let mut path = Vec::new();
                        write_call_path(&mut path, choice, "delta", index);
                        self.set_call_attr("path", path);
                    }
                }
            }
        }

        /// `_arguments`.
        fn arguments(&mut self, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            if data.is_empty() {
                return Ok(());
            }
            let c = self.choice.c;
            if self.call.route.is_none() {
                if let Some(index) = self.call.index {
                    // (a call opens once its name is known: the target writes it first, and a
                    // body in the openai client's field order gives it after the arguments)
                    let named = self.call.attrs.iter().any(|(n, _)| n == "name");
                    let choice = &self.choices[c];
                    if named || choice.held.contains_key(&index) || choice.is_current_tool(Some(index)) {
                        self.call.route = Some(self.route(cx)?);
                    }
                }
            }
            match self.call.route {
                Some(route) => self.to_route(route, data, cx),
                None => {
                    // arguments before index/name: held till the element ends
                    let hold = self.call.pending.get_or_insert_with(|| cx.session.reorder.hold(ARGUMENTS_BEFORE_INDEX));
                    hold.append(&mut cx.session.reorder, data.to_vec(), data.len() as u64)
                }
            }
        }

        fn to_route(&mut self, route: Route, data: &[u8], cx: &mut Cx<'_>) -> Result<()> {
            let c = self.choice.c;
            match route {
                Route::Current => self.block_fragment(c, data, cx),
                Route::Held(index) => match self.choices[c].held.get_mut(&index) {
                    Some((_, hold)) => hold.append(&mut cx.session.reorder, data.to_vec(), data.len() as u64),
                    None => Err(internal("a held tool call that is gone")),
                },
            }
        }

        /// `_route`: where this call's fragments go: the open block, a held call, or a new block.
        fn route(&mut self, cx: &mut Cx<'_>) -> Result<Route> {
            let c = self.choice.c;
            let Some(index) = self.call.index else { return Err(internal("a route without an index")) };
            let choice = &self.choices[c];
            if choice.is_current_tool(Some(index)) {
                return Ok(Route::Current);
            }
            if choice.closed_tools.contains(&index) {
                return Err(Error::new(ErrorClass::Schema, format!("tool call index {index} continued after it ended"))
                    .in_dialect(DIALECT));
            }
            if choice.held.contains_key(&index) {
                return Ok(Route::Held(index));
            }
            if choice.block_is_tool() {
                let hold = cx.session.reorder.hold(INTERLEAVED);
                self.choices[c].held.insert(index, (self.call.attrs.clone(), hold));
                return Ok(Route::Held(index));
            }
            self.open_block(c, Section::ToolCall, self.call.attrs.clone(), Some(index), cx)?;
            Ok(Route::Current)
        }

        /// `_late_identity`: an id or name a call's later delta brings (a provider that splits
        /// them): a call not yet written takes it; one whose head went out with an earlier
        /// delta cannot, a loss.
        fn late_identity(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            const EMPTY: &[u8] = b"\"\"";
            let index = self.call.index;
            let choice = &mut self.choices[self.choice.c];
            let (block_attrs, written) = if choice.is_current_tool(index) {
                match choice.block.as_mut() {
                    Some(block) => (&mut block.attrs, block.started),
                    None => return Ok(()),
                }
            } else {
                match index.and_then(|index| choice.held.get_mut(&index)) {
                    Some((attrs, _)) => (attrs, false),
                    None => return Ok(()),
                }
            };
            let mut lost = Vec::new();
            for (key, member) in [("id", "id"), ("name", "function.name")] {
                // (DashScope's later deltas: "id":"", "name":"")
                let Some(value) = crate::decoding::get_attr(&self.call.attrs, key).filter(|value| *value != EMPTY) else { continue };
                let had = crate::decoding::get_attr(block_attrs, key);
                if had == Some(value) {
                    continue;
                }
                if !written && had.is_none_or(|had| had == EMPTY) {
                    let value = value.to_vec();
                    crate::decoding::set_attr(block_attrs, Cow::Borrowed(key), value);
                } else {
                    lost.push((key, member));
                }
            }
            for (key, member) in lost {
                let path = format!("{}.{member}", self.call_path());
                let what = format!("place for a tool call's {key} after its first delta");
                cx.session.lose_member(&path, &what, Some("not sent"))?;
            }
            Ok(())
        }

        /// `_ToolCallReader.end`.
        fn call_end(&mut self, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            if self.call.custom {
                let path = self.call_path();
                return cx.session.lose_member(&path, "custom tool calls", Some("only function calls are carried"));
            }
            if self.call.index.is_none() {
                return Err(cx.error("tool call delta without index", offset));
            }
            let route = match self.call.route {
                Some(route) => route,
                None => {
                    let route = self.route(cx)?;
                    self.call.route = Some(route);
                    route
                }
            };
            if let Some(mut pending) = self.call.pending.take() {
                let pieces: Vec<Vec<u8>> = pending.drain(&mut cx.session.reorder).collect();
                for data in &pieces {
                    self.to_route(route, data, cx)?;
                }
            }
            let c = self.choice.c;
            if !self.streaming {
                return self.close_block(c, cx);
            }
            self.late_identity(cx)?;
            if self.choices[c].is_current_tool(self.call.index) {
                // id and name go out with the frame that brought them
                let announced = self.choices[c].block.as_mut().and_then(BlockStream::announce);
                if let Some(block) = announced {
                    self.out(Event::Block(block), cx)?;
                }
            }
            Ok(())
        }

        // -- the ends --------------------------------------------------------------------------

        /// `ResponseDecoder._body_end`.
        fn body_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            if !self.base.errored && !self.choices_seen {
                // (`{}`, another dialect's body: not an empty answer)
                return Err(Error::new(ErrorClass::Schema, "a chat.completion without choices (and no error)")
                    .in_dialect(DIALECT).with_path(b"$.choices".to_vec()));
            }
            if !self.base.errored {
                self.start_message(cx)?;
            }
            for c in 0..self.choices.len() {
                // a choice without finish_reason (null): its blocks end here
                if !self.choices[c].finished {
                    self.close_block(c, cx)?;
                    self.flush_held_tools(c, cx)?;
                }
            }
            self.base.release(cx)?;
            if let Some(usage) = self.usage.take() {
                cx.emit(Event::Usage(usage))?;
            }
            cx.emit(Event::End)
        }

        /// `StreamDecoder._end`.
        fn stream_end(&mut self, cx: &mut Cx<'_>) -> Result<()> {
            if self.ended {
                return Ok(());
            }
            self.ended = true;
            if !self.base.started && !self.base.errored {
                self.start_message(cx)?; // (only preamble chunks came)
            }
            self.base.release(cx)?;
            for c in 0..self.choices.len() {
                if !self.choices[c].finished {
                    if self.base.errored {
                        // (an answer after the error opened a block: it gets its last fragment)
                        self.close_block(c, cx)?;
                        continue;
                    }
                    if self.terminated {
                        self.finish_choice(c, None, cx)?; // [DONE] ended it without a finish_reason: no reason given
                        continue;
                    }
                    return Err(Error::new(ErrorClass::TruncatedInput,
                                          format!("stream ended before choice {} finished", self.choices[c].index))
                        .in_dialect(DIALECT));
                }
            }
            cx.emit(Event::End)
        }
    }

    impl Dialect for Openai {
        type State = S;

        fn token(&mut self, m: &mut Machine<S>, s: S, token: Token<'_>, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Doc => {
                    if token != Token::ObjectStart {
                        return Err(cx.wrong_type(&token, "an object for a chunk", offset));
                    }
                    m.push(Frame::Members(S::Top));
                    if self.ended {
                        return Err(cx.error("chunk after [DONE]", offset));
                    }
                    Ok(())
                }
                S::ChoiceFirst => self.choice_first(m, token),
                S::ChoiceIndex => match small_int(&token, cx) {
                    Some(index) => {
                        self.choice.c = self.choice_at(index); // (every chunk: no Value made)
                        Ok(())
                    }
                    None => {
                        m.read(Read::Scalar(S::ChoiceIndexValue, Some(INTEGER), "index"));
                        Ok(())
                    }
                },
                _ => Err(internal(&format!("state {s:?} takes no token"))),
            }
        }

        fn member(&mut self, m: &mut Machine<S>, s: S, key: &[u8], token: Token<'_>, offset: u64,
                  cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Top => {
                    self.top_value(m, key, token, cx);
                    Ok(())
                }
                S::Choice => self.choice_member(m, key, token, offset, cx),
                S::Message => self.message_member(m, key, token, offset, cx),
                S::ToolCall => {
                    self.call_member(m, key, token, cx);
                    Ok(())
                }
                S::Function | S::LegacyCall => {
                    self.function_member(m, key, token);
                    Ok(())
                }
                _ => Err(internal(&format!("state {s:?} takes no member"))),
            }
        }

        fn object(&mut self, m: &mut Machine<S>, s: S, _offset: u64, _cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Choices => self.begin_choice(m),
                S::ToolCalls => self.begin_tool_call(m),
                _ => return Err(internal(&format!("state {s:?} takes no object"))),
            }
            Ok(())
        }

        fn end(&mut self, _m: &mut Machine<S>, s: S, offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Top if !self.streaming => self.body_end(cx),
                S::Choice => self.choice_end(cx),
                S::Message => self.message_end(cx),
                S::ToolCall | S::LegacyCall => self.call_end(offset, cx),
                _ => Ok(()),
            }
        }

        fn raw(&mut self, _m: &mut Machine<S>, s: S, raw: &[u8], offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::Ignore => Ok(()),
                S::Usage => self.usage(raw, offset, cx),
                S::Keep => self.keep(raw, cx),
                S::ChoiceLogprobs => {
                    if raw == b"null" {
                        return Ok(());
                    }
                    let path = format!("$.choices[{}].logprobs", self.choices[self.choice.c].index);
                    cx.session.lose_member(&path, "log probabilities", None)
                }
                S::ChoiceOther => {
                    let path = member_path(format_args!("$.choices[{}].", self.choices[self.choice.c].index), &self.key);
                    cx.session.lose_member_wtf8(&path, "such field", None)
                }
                S::MessageOther => {
                    if raw == b"null" || raw == b"[]" {
                        return Ok(());
                    }
                    let path = member_path(format_args!("$.choices[{}].{}.", self.choices[self.choice.c].index,
                                                        self.member_name()), &self.key);
                    cx.session.lose_member_wtf8(&path, "such field", None)
                }
                S::CallOther => {
                    let path = member_path(format_args!("{}.", self.call_path()), &self.key);
                    cx.session.lose_member_wtf8(&path, "such field", None)
                }
                S::FunctionOther => {
                    if raw == b"null" {
                        return Ok(());
                    }
                    // (a legacy function_call's members are the function's)
                    let function = if self.call.index == Some(LEGACY_CALL) { "" } else { ".function" };
                    let path = member_path(format_args!("{}{function}.", self.call_path()), &self.key);
                    cx.session.lose_member_wtf8(&path, "such field", None)
                }
                _ => Err(internal(&format!("state {s:?} takes no raw value"))),
            }
        }

        fn value(&mut self, _m: &mut Machine<S>, s: S, value: Value, _offset: u64, cx: &mut Cx<'_>) -> Result<()> {
            match s {
                S::TopId | S::TopModel => {
                    let text = crate::unicode::text_of(value);
                    if s == S::TopId {
                        self.base.id = text;
                    } else {
                        self.base.model = text;
                    }
                    self.maybe_start(cx)
                }
                S::Tier => self.tier(value, cx),
                S::ErrorValue => self.error_value(value, cx),
                S::ChoiceIndexValue => self.choose(Some(&value)),
                S::FinishReason => {
                    self.choice.has_finish = true;
                    self.choice.finish = crate::unicode::text_of(value);
                    Ok(())
                }
                S::CallIndex => self.call_index(value),
                S::CallId => {
                    if let Value::Str(id) = &value {
                        let mut json = Vec::with_capacity(id.len() + 2);
                        dumps_key(id, &mut json);
                        self.set_call_attr("id", json);
                    }
                    Ok(())
                }
                S::CallName => {
                    if let Value::Str(name) = &value {
                        let name = String::from_utf8_lossy(name).into_owned();
                        let name = cx.session.tool_name_in(&name).into_owned();
                        self.set_call_attr("name", str_json(&name));
                    }
                    Ok(())
                }
                _ => Err(internal(&format!("state {s:?} takes no value"))),
            }
        }

        /// `_ChoiceReader._start(index)`: the choice's members, the held tokens replayed into them.
        fn key_first(&mut self, m: &mut Machine<S>, s: S, value: Option<Value>, _offset: u64,
                     _cx: &mut Cx<'_>) -> Result<()> {
            if s != S::Choice {
                return Err(internal(&format!("state {s:?} takes no key_first")));
            }
            self.choose(value.as_ref())?;
            m.push(Frame::Members(S::Choice));
            Ok(())
        }

        fn fragment(&mut self, _m: &mut Machine<S>, s: S, data: &[u8], _init: bool, fin: bool,
                    cx: &mut Cx<'_>) -> Result<()> {
            let c = self.choice.c;
            match s {
                S::Content => self.text_first_text(c, data, cx),
                S::Refusal => self.text_fragment(c, Text::Refusal, "refusal", data, cx),
                S::Reasoning => {
                    self.text_fragment(c, Text::Reasoning, "reasoning", data, cx)?;
                    if fin && self.choices[c].reader.text_first.waiting {
                        self.text_release(c, cx)?;
                    }
                    Ok(())
                }
                S::Arguments => self.arguments(data, cx),
                _ => Err(internal(&format!("state {s:?} takes no fragment"))),
            }
        }
    }

    // -- the two decoders ------------------------------------------------------------------

    /// `ResponseDecoder`: a `chat.completion` body -> canonical events (the machine and the readers).
    pub(crate) type ResponseDecoder = crate::decoding::MachineDecoder<Openai>;

    impl ResponseDecoder {
        pub fn new(session: &Session) -> Self {
            crate::decoding::MachineDecoder { m: Machine::starting(Read::Members(S::Top, "the response body")), d: Openai::new(false, session) }
        }
    }

    /// `StreamDecoder`: a `chat.completion.chunk` SSE stream -> canonical events (one chunk per frame).
    pub struct StreamDecoder {
        m: Machine<S>,
        d: Openai,
    }

    impl StreamDecoder {
        pub fn new(session: &Session) -> Self {
            StreamDecoder { m: Machine::new(), d: Openai::new(true, session) }
        }
    }

    impl Decode for StreamDecoder {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
                 out: &mut dyn EventSink) -> Result<()> {
            let mut cx = Cx::new(path, session, out);
            self.m.feed(&mut self.d, token, offset, &mut cx)
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

        fn finish(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            let d = &mut self.d;
            if d.ended {
                return Ok(());
            }
            if !d.base.errored && (d.choices.is_empty() || !d.choices.iter().all(|c| c.finished)) {
                return Err(Error::new(ErrorClass::TruncatedInput, "stream ended before its finish_reason")
                    .in_dialect(DIALECT));
            }
            d.stream_end(&mut Cx::outside(session, out)) // a finish without [DONE] ends normally
        }

        fn at(&self) -> u64 {
            self.m.at
        }

        fn framing(&self) -> Framing {
            Framing::Sse
        }

        fn begin_frame(&mut self, _session: &mut Session, _out: &mut dyn EventSink) -> Result<()> {
            self.m.restart(Read::State(S::Doc));
            Ok(())
        }

        fn end_frame(&mut self, _event: Option<&str>, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
            let d = &mut self.d;
            d.frames += 1;
            if d.base.started || d.base.errored {
                return Ok(());
            }
            if d.preamble() {
                // (its empty ones, and its created 0, are not the message's)
                (d.base.id, d.base.model) = (None, None);
                d.kept.retain(|(key, _)| key.as_ref() != b"created");
                Ok(())
            } else {
                d.start_message(&mut Cx::outside(session, out)) // the first chunk ended without id or model
            }
        }

        fn frame_text(&mut self, _event: Option<&str>, data: &[u8], session: &mut Session,
                      out: &mut dyn EventSink) -> Result<()> {
            if data != b"[DONE]" {
                let head = &data[..data.len().min(40)];
                return Err(Error::new(ErrorClass::Schema,
                                      format!("SSE data is neither a JSON object nor [DONE]: {}", crate::unicode::py_bytes_repr(head)))
                    .in_dialect(DIALECT));
            }
            self.d.terminated = true;
            self.d.stream_end(&mut Cx::outside(session, out))
        }

        fn missing_terminator(&self) -> &'static [u8] {
            if self.d.terminated { b"" } else { DONE_FRAME }
        }

        fn source_done(&self) -> bool {
            self.d.ended || self.d.base.errored
        }
    }
}

// -- encoders ---------------------------------------------------------------------------

pub use encoder::{ResponseEncoder, StreamEncoder};

mod encoder {
    use super::super::controls;
    use crate::canonical::{Block, Event, Extension, Section, Usage};
    use std::borrow::Cow;
    use crate::encoding::{
        attr, foreign_extension, lose_block, lose_signature, lose_unplaced, response_tool_name, skip_chars, BlockRef, Encode, Io,
        lose_joined, JoinedFields, MessageAssembler, Opener, WriterId, Writers,
    };
    use crate::losses::lacks;
    use crate::reorder::Hold;
    use crate::error::Result;
    use crate::framing::SSE_END;
    use crate::lifecycle::{finish_to, generated_tool_id, logprob_to_openai, merge_usage, push_int, push_openai_created,
                           has_openai_usage, lose_unasked_usage, push_usage_openai, tier_to, Stamp};
    use crate::session::Session;
    use crate::value::{dumps, dumps_str, Value};

    const DIALECT: &str = "openai";
    /// the top-level fields an openai source keeps (`_KEPT`)
    const KEPT: [&str; 3] = ["created", "system_fingerprint", "service_tier"];
    /// closes a chunk of a text delta
    const TEXT_TAIL: &[u8] = b"\"},\"finish_reason\":null}]}\n\n";
    /// closes a chunk of a tool-call delta
    const TOOL_TAIL: &[u8] = b"\"}}]},\"finish_reason\":null}]}\n\n";


    /// `error_type(kind)`: openai's error `type` for a canonical kind (`server_error` for a
    /// server's fault, `insufficient_quota` for an account out of credit; any other kind as it is).
    fn error_type(kind: &str) -> &str {
        match kind {
            "api_error" | "overloaded_error" | "timeout_error" => "server_error",
            "billing_error" => "insufficient_quota",
            other => other,
        }
    }

    /// `_error_body`: `dumps({"error": {"message": .., "type": ..}})`; no `code` (openai's is a
    /// string naming the error, never the HTTP status).
    fn error_body(event: &Event<'_>) -> Vec<u8> {
        let Event::Error { kind, message, .. } = event else { return b"{}".to_vec() };
        let body = vec![
            (b"message".to_vec(), Value::Str(message.to_vec())),
            (b"type".to_vec(), Value::Str(error_type(kind).as_bytes().to_vec())),
        ];
        let mut out = Vec::new();
        dumps(&Value::Object(vec![(b"error".to_vec(), Value::Object(body))]), &mut out);
        out
    }

    /// `_EncoderBase`: what both openai encoders keep of the response.
    struct Head {
        object: &'static str,
        reasoning_key: Option<String>,
        id: Option<String>,
        model: Option<String>,
        /// created, system_fingerprint, service_tier (`KEPT`'s order) as the source gave them (raw JSON)
        kept: [Option<Vec<u8>>; 3],
        usage: Option<Usage>,
        tool_count: u64,
        stamp: Stamp,
        /// `_head_members()` until id, model or a kept field changes
        head: Option<Vec<u8>>,
    }

    impl Head {
        fn new(object: &'static str, session: &Session) -> Self {
            Head {
                object,
                reasoning_key: session.options.openai_reasoning_field.clone(),
                id: None,
                model: None,
                kept: [None, None, None],
                usage: None,
                tool_count: 0,
                stamp: Stamp::new(session.start()),
                head: None,
            }
        }

        fn kept(&self, key: &str) -> Option<&[u8]> {
            KEPT.iter().position(|k| *k == key).and_then(|i| self.kept[i].as_deref())
        }

        fn keep(&mut self, key: &'static str, raw: &[u8]) {
            self.keep_owned(key, raw.to_vec());
        }

        fn keep_owned(&mut self, key: &'static str, raw: Vec<u8>) {
            if let Some(i) = KEPT.iter().position(|k| *k == key) {
                self.kept[i] = Some(raw);
            }
            self.head = None;
        }

        /// The message's id and model, kept (taken as they come: a decoder hands its own over).
        fn message_start(&mut self, id: Option<Cow<'_, str>>, model: Option<Cow<'_, str>>, choice: i64) {
            if choice == 0 {
                self.id = id.map(Cow::into_owned);
                self.model = model.map(Cow::into_owned);
                self.head = None;
            }
        }

        /// `_usage_event`: counts merge into the usage object; the service tier goes to the body's top.
        fn usage_event(&mut self, usage: &Usage, session: &mut Session) -> Result<()> {
            if usage.service_tier.is_some() {
                let tier = tier_to(DIALECT, usage, session)?;
                if let Some(tier) = tier {
                    if self.kept("service_tier").is_none() {
                        let mut json = Vec::with_capacity(tier.len() + 2);
                        dumps_str(tier.as_bytes(), &mut json);
                        self.keep_owned("service_tier", json);
                    }
                }
                let counts = [usage.input, usage.output, usage.cache_read, usage.cache_write, usage.reasoning, usage.total];
                if counts.iter().all(Option::is_none) {
                    return Ok(()); // no counts: no usage object
                }
            }
            self.usage = Some(merge_usage(self.usage.as_ref(), usage.clone()));
            Ok(())
        }

        fn extension(&mut self, ext: &Extension<'_>, session: &mut Session) -> Result<()> {
            if self.stamp.source(ext) {
                self.head = None; // a time field (lifecycle: response ids and times)
            }
            let own = ext.dialect == DIALECT;
            match KEPT.iter().find(|k| skip_chars(&ext.path, 2) == k.as_bytes()) {
                Some(key) if own => self.keep(key, &ext.raw),
                _ if ext.dialect == "ollama" && ext.path.as_ref() == b"$.created_at" => {}
                _ => foreign_extension(session, DIALECT, ext)?,
            }
            Ok(())
        }

        fn response_id(&mut self) -> Cow<'_, str> {
            self.stamp.response_id_ref("chatcmpl-", self.id.as_deref(), self.model.as_deref())
        }

        /// `_head_members()` from the cache, made when id, model or a kept field changed
        /// (every chunk of a stream starts with them).
        fn write_head(&mut self, out: &mut Vec<u8>) {
            if self.head.is_none() {
                let mut head = Vec::with_capacity(128);
                self.head_members(&mut head);
                self.head = Some(head);
            }
            if let Some(head) = &self.head {
                out.extend_from_slice(head);
            }
        }

        /// `_head_members()`: `"id":...,"object":...,"created":...,"model":...`, written into
        /// `out` (a response writes them once: no cache).
        fn head_members(&mut self, head: &mut Vec<u8>) {
            head.extend_from_slice(b"\"id\":");
            let id = self.response_id();
            dumps_str(id.as_bytes(), head);
            head.extend_from_slice(b",\"object\":");
            dumps_str(self.object.as_bytes(), head);
            head.extend_from_slice(b",\"created\":");
            match self.kept("created") {
                Some(created) => head.extend_from_slice(created),
                None => {
                    let time_us = self.stamp.time_us();
                    push_openai_created(time_us, head);
                }
            }
            head.extend_from_slice(b",\"model\":");
            dumps_str(self.model.as_deref().unwrap_or("").as_bytes(), head);
            for key in ["service_tier", "system_fingerprint"] {
                if let Some(raw) = self.kept(key) {
                    head.push(b',');
                    dumps_str(key.as_bytes(), head);
                    head.push(b':');
                    head.extend_from_slice(raw);
                }
            }
        }

        /// `_tool_attrs`: the call's id (raw JSON; generated when the source gave none) and name.
        fn tool_attrs(&mut self, block: BlockRef<'_>, session: &mut Session) -> Result<(Vec<u8>, Vec<u8>)> {
            let attrs = block.attrs;
            let call_id = match attr(attrs, "id") {
                Some(id) if id != b"null" => id.to_vec(),
                _ => {
                    let count = self.tool_count;
                    let id = self.response_id();
                    let mut json = Vec::new();
                    dumps_str(generated_tool_id(id.as_bytes(), count).as_bytes(), &mut json);
                    json
                }
            };
            self.tool_count += 1;
            let name = response_tool_name(session, block)?;
            Ok((call_id, name))
        }

        /// `_section_key`: the delta/message member for a block's section, or None (lost).
        fn section_key(&self, block: &Block<'_>, session: &mut Session) -> Result<Option<Key>> {
            let attrs = block.attrs.as_deref().unwrap_or(&[]);
            Ok(match block.section {
                Section::AssistantText => Some(Key::Content),
                Section::AssistantRefusal => Some(Key::Refusal),
                Section::AssistantReasoning => {
                    let why = controls::reasoning_loss(attrs, self.reasoning_key.as_deref());
                    lose_signature(session, DIALECT, BlockRef::of(block), attrs)?;
                    if let Some((what, done)) = why {
                        lose_block(session, DIALECT, BlockRef::of(block), what, done, None)?;
                        return Ok(None);
                    }
                    Some(Key::Reasoning)
                }
                Section::ToolCall => Some(Key::ToolCalls),
                _ => {
                    lose_unplaced(session, DIALECT, BlockRef::of(block))?;
                    None
                }
            })
        }

        fn key_json(&self, key: Key) -> Vec<u8> {
            let name = match key {
                Key::Content => "content",
                Key::Refusal => "refusal",
                Key::Reasoning => self.reasoning_key.as_deref().unwrap_or(""),
                Key::ToolCalls => "tool_calls",
            };
            let mut json = Vec::new();
            dumps_str(name.as_bytes(), &mut json);
            json
        }
    }

    /// The member a block goes to.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Key {
        Content,
        Refusal,
        /// `Options.openai_reasoning_field`
        Reasoning,
        ToolCalls,
    }

    /// The block whose fragments are arriving (`StreamEncoder.block`).
    enum StreamBlock {
        None,
        /// not carried (its loss recorded)
        Lost,
        Open {
            seq: u64,
            tool: bool,
            choice: i64,
            /// what follows the delta head in a frame that continues the block
            member: Vec<u8>,
            tail: &'static [u8],
        },
    }

    /// `lifecycle.OpenFrame` as response.py uses it: at most one output frame open for
    /// streaming fragments; `key` names what it carries ((block seq, 0) for a tool call's
    /// own head, (seq, 1) else). Not `lifecycle::OpenFrame`: a tool call's head opens its
    /// frame even with an empty payload (Python sets `frame.key` / `frame._tail` itself),
    /// which that one's `fragment` (nothing for an empty payload) cannot do, and the
    /// head is written from the encoder's cached `Head` (a `&mut self` the closure of
    /// `fragment` cannot borrow beside the frame).
    #[derive(Default)]
    struct OpenFrame {
        key: Option<(u64, u8)>,
        tail: &'static [u8],
    }

    impl OpenFrame {
        fn close(&mut self, out: &mut Vec<u8>) {
            if self.key.take().is_some() {
                out.extend_from_slice(self.tail);
                self.tail = b"";
            }
        }
    }

    /// `StreamEncoder`: canonical events -> `chat.completion.chunk` SSE.
    pub struct StreamEncoder {
        head: Head,
        /// choice -> the token entries of the current source frame (openai-shaped)
        logprobs: Vec<(i64, Vec<Value>)>,
        frame: OpenFrame,
        done: bool,
        errored: bool,
        block: StreamBlock,
        seq: u64,
        /// choices whose role chunk is written
        roles: Vec<i64>,
        /// tool calls so far, per choice (their delta index)
        tool_counts: Vec<(i64, i64)>,
        /// the fields a block went into, per choice (`_lose_joined`)
        joined: JoinedFields<Key>,
        /// choice -> the finish_reason written (`_finished`)
        finished: Vec<(i64, Option<String>)>,
    }

    impl StreamEncoder {
        pub fn new(session: &Session) -> Self {
            StreamEncoder {
                head: Head::new("chat.completion.chunk", session),
                logprobs: Vec::new(),
                frame: OpenFrame::default(),
                done: false,
                errored: false,
                block: StreamBlock::None,
                seq: 0,
                roles: Vec::new(),
                tool_counts: Vec::new(),
                joined: JoinedFields::default(),
                finished: Vec::new(),
            }
        }

        /// `_chunk(choice_json, extra)`.
        fn chunk(&mut self, out: &mut Vec<u8>, choice_json: &[u8], extra: &[u8]) {
            out.extend_from_slice(b"data: {");
            self.head.write_head(out);
            out.extend_from_slice(b",\"choices\":[");
            out.extend_from_slice(choice_json);
            out.push(b']');
            out.extend_from_slice(extra);
            out.push(b'}');
            out.extend_from_slice(SSE_END);
        }

        /// `_delta_head(choice)`.
        fn delta_head(&mut self, choice: i64, out: &mut Vec<u8>) {
            out.extend_from_slice(b"data: {");
            self.head.write_head(out);
            out.extend_from_slice(b",\"choices\":[{\"index\":");
            push_int(out, choice);
            out.extend_from_slice(b",\"delta\":{");
        }

        fn ensure_role(&mut self, choice: i64, out: &mut Vec<u8>) {
            if self.roles.contains(&choice) {
                return;
            }
            self.roles.push(choice);
            self.frame.close(out);
            let mut json = b"{\"index\":".to_vec();
            push_int(&mut json, choice);
            json.extend_from_slice(b",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}");
            self.chunk(out, &json, b"");
        }

        /// `_logprobs_chunk`: the token entries of one source frame, one chunk with an
        /// empty delta after that frame's content.
        fn logprobs_chunk(&mut self, out: &mut Vec<u8>) {
            if self.logprobs.is_empty() {
                return;
            }
            self.frame.close(out);
            let mut pending = std::mem::take(&mut self.logprobs);
            pending.sort_by_key(|(choice, _)| *choice);
            for (choice, entries) in pending {
                self.ensure_role(choice, out);
                let mut json = b"{\"index\":".to_vec();
                push_int(&mut json, choice);
                json.extend_from_slice(b",\"delta\":{},\"logprobs\":");
                let body = Value::Object(vec![
                    (b"content".to_vec(), Value::Array(entries)),
                    (b"refusal".to_vec(), Value::Null),
                ]);
                dumps(&body, &mut json);
                json.extend_from_slice(b",\"finish_reason\":null}");
                self.chunk(out, &json, b"");
            }
        }

        fn tool_index(&mut self, choice: i64) -> i64 {
            match self.tool_counts.iter_mut().find(|(c, _)| *c == choice) {
                Some((_, n)) => {
                    *n += 1;
                    *n - 1
                }
                None => {
                    self.tool_counts.push((choice, 1));
                    0
                }
            }
        }

        fn on_block(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            if block.init {
                self.frame.close(out);
                self.seq += 1;
                let Some(key) = self.head.section_key(block, session)? else {
                    self.block = StreamBlock::Lost;
                    return Ok(());
                };
                self.ensure_role(block.message, out);
                if key == Key::ToolCalls {
                    return self.tool_head(block, session, out);
                }
                self.joined.lose_joined(block, key, session, DIALECT)?;
                let mut member = self.head.key_json(key);
                member.extend_from_slice(b":\"");
                self.block = StreamBlock::Open { seq: self.seq, tool: false, choice: block.message, member, tail: TEXT_TAIL };
            }
            let StreamBlock::Open { seq, tool, choice, .. } = self.block else {
                if block.fin && !block.init {
                    // a lost block's late signature is lost too
                    lose_signature(session, DIALECT, BlockRef::of(block), block.attrs.as_deref().unwrap_or(&[]))?;
                }
                return Ok(());
            };
            // a tool call continues the frame its head opened (key (seq, 0)), else it opens (seq, 1)
            let frame_key = if tool && self.frame.key == Some((seq, 0)) { (seq, 0) } else { (seq, 1) };
            if !block.payload.is_empty() {
                if self.frame.key != Some(frame_key) {
                    self.frame.close(out);
                    self.delta_head(choice, out);
                    if let StreamBlock::Open { member, tail, .. } = &self.block {
                        out.extend_from_slice(member);
                        self.frame.tail = tail;
                    }
                    self.frame.key = Some(frame_key);
                }
                out.extend_from_slice(&block.payload);
            }
            if block.fin {
                self.block = StreamBlock::None;
                if !block.init {
                    lose_signature(session, DIALECT, BlockRef::of(block), block.attrs.as_deref().unwrap_or(&[]))?;
                }
            }
            Ok(())
        }

        /// A tool call's first fragment: its head (index, id, type, name) opens the frame.
        fn tool_head(&mut self, block: &Block<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            let (call_id, name) = self.head.tool_attrs(BlockRef::of(block), session)?;
            let index = self.tool_index(block.message);
            let mut member = b"\"tool_calls\":[{\"index\":".to_vec();
            push_int(&mut member, index);
            member.extend_from_slice(b",\"function\":{\"arguments\":\"");
            self.block = StreamBlock::Open { seq: self.seq, tool: true, choice: block.message, member, tail: TOOL_TAIL };
            self.frame.close(out);
            self.delta_head(block.message, out);
            out.extend_from_slice(b"\"tool_calls\":[{\"index\":");
            push_int(out, index);
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(&call_id);
            out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
            out.extend_from_slice(&name);
            out.extend_from_slice(b",\"arguments\":\"");
            self.frame.key = Some((self.seq, 0));
            self.frame.tail = TOOL_TAIL;
            out.extend_from_slice(&block.payload);
            Ok(())
        }

        fn finish_event(&mut self, reason: Option<&str>, stop_sequence: Option<&str>, choice: i64,
                        session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            self.frame.close(out);
            self.ensure_role(choice, out);
            let reason = finish_to(DIALECT, reason, session, stop_sequence)?;
            // a repeated stop (anthropic's message_delta that brings later counts) is one finish chunk
            let written = reason.as_deref().map(str::to_string);
            match self.finished.iter_mut().find(|(c, _)| *c == choice) {
                Some((_, last)) if *last == written => return Ok(()),
                Some((_, last)) => *last = written,
                None => self.finished.push((choice, written)),
            }
            let mut json = b"{\"index\":".to_vec();
            push_int(&mut json, choice);
            json.extend_from_slice(b",\"delta\":{},\"finish_reason\":");
            match reason {
                Some(reason) => dumps_str(reason.as_bytes(), &mut json),
                None => json.extend_from_slice(b"null"),
            }
            json.push(b'}');
            self.chunk(out, &json, b"");
            Ok(())
        }

        fn error(&mut self, error: &Event<'_>, out: &mut Vec<u8>) {
            self.frame.close(out);
            crate::framing::sse_event(out, None, &error_body(error));
            self.errored = true;
        }

        fn end(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            if self.done {
                return Ok(());
            }
            self.frame.close(out);
            if let Some(usage) = &self.head.usage {
                if !session.options.openai_stream_usage {
                    lose_unasked_usage(usage, session)?;
                } else if self.errored {
                    crate::lifecycle::lose_usage_after_error(Some(usage), session, DIALECT)?;
                } else if has_openai_usage(usage) {
                    let mut extra = b",\"usage\":".to_vec();
                    push_usage_openai(usage, session, &mut extra)?;
                    self.chunk(out, b"", &extra);
                }
            }
            crate::framing::sse_event(out, None, b"[DONE]");
            self.done = true;
            Ok(())
        }
    }

    impl Encode for StreamEncoder {
        fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            if self.errored && matches!(event, Event::Block(_)) {
                // the error event ended the target's stream
                return Err(crate::lifecycle::answer_after_error());
            }
            if !self.logprobs.is_empty() && !matches!(event, Event::Logprobs { .. } | Event::Block(_)) {
                self.logprobs_chunk(out);
            }
            if let Event::MessageStart { id, model, choice } = event {
                // (by value: the id and model a decoder handed over are kept, not copied)
                self.head.message_start(id, model, choice);
                return Ok(());
            }
            match &event {
                Event::Block(block) => self.on_block(block, session, out)?,
                // (its error chunk ended the stream)
                Event::Logprobs { .. } if self.errored => crate::lifecycle::lose_logprobs_after_error(session, DIALECT)?,
                Event::Logprobs { raw, choice } => {
                    let entry = logprob_to_openai(raw)?;
                    match self.logprobs.iter_mut().find(|(c, _)| c == choice) {
                        Some((_, entries)) => entries.push(entry),
                        None => self.logprobs.push((*choice, vec![entry])),
                    }
                }
                Event::FrameEnd => self.frame.close(out),
                Event::MessageStart { .. } => {} // (taken above)
                Event::Extension(ext) => self.head.extension(ext, session)?,
                Event::Finish { reason, stop_sequence, choice } if self.errored => {
                    // (its error chunk ended the stream)
                    crate::lifecycle::lose_finish_after_error(reason.as_deref(), stop_sequence.as_deref(), *choice, session, DIALECT)?
                }
                Event::Finish { reason, stop_sequence, choice } => {
                    self.finish_event(reason.as_deref(), stop_sequence.as_deref(), *choice, session, out)?
                }
                Event::Usage(usage) => self.head.usage_event(usage, session)?,
                Event::Error { .. } => self.error(&event, out),
                Event::End => self.end(session, out)?,
                _ => {}
            }
            Ok(())
        }

        fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
            Ok(())
        }

        fn abort(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            if self.done {
                return Ok(());
            }
            if !self.errored {
                self.error(error, out); // (after the source's own error event: only the stream's end)
            }
            self.end(session, out)
        }
    }

    // -- the response encoder ------------------------------------------------------------

    /// `_chars`: the characters (code points) of an escaped JSON text fragment
    /// (openai's annotation indexes): an escape is one (a surrogate pair's two escapes
    /// one too), UTF-8 continuation bytes none.
    fn chars(escaped: &[u8]) -> i64 {
        let starts = |run: &[u8]| char_starts(run) as i64;
        let is_hex = |b: u8| b.is_ascii_hexdigit();
        let unit = |at: usize| escaped.len() >= at + 6 && escaped[at + 1] == b'u' && escaped[at + 2..at + 6].iter().all(|&b| is_hex(b));
        let (mut i, mut n) = (0, 0);
        while let Some(run) = memchr::memchr(b'\\', &escaped[i..]) {
            n += starts(&escaped[i..i + run]) + 1;
            i += run;
            let high = unit(i) && escaped[i + 2].eq_ignore_ascii_case(&b'd') && matches!(escaped[i + 3], b'8'..=b'9' | b'a'..=b'b' | b'A'..=b'B');
            let low_follows = high && escaped.get(i + 6) == Some(&b'\\') && unit(i + 6)
                && escaped[i + 8].eq_ignore_ascii_case(&b'd') && matches!(escaped[i + 9], b'c'..=b'f' | b'C'..=b'F');
            i = (i + if low_follows { 12 } else if unit(i) { 6 } else { 2 }).min(escaped.len());
        }
        n + starts(&escaped[i..])
    }

    /// The bytes of `run` that start a UTF-8 character (not `10xxxxxx`), eight at a time
    /// (a 100 kB text costs about a tenth of a byte-by-byte count).
    fn char_starts(run: &[u8]) -> usize {
        const HIGH: u64 = 0x8080_8080_8080_8080;
        const EVEN_LANES: u64 = 0x00FF_00FF_00FF_00FF;
        // the continuation bytes, counted in eight byte-wide lanes, summed before a lane can overflow
        let sum = |lanes: u64| {
            let pairs = (lanes & EVEN_LANES) + ((lanes >> 8) & EVEN_LANES);
            (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize
        };
        let mut continuations = 0;
        for block in run.chunks(8 * 255) {
            let mut lanes = 0u64;
            let mut words = block.chunks_exact(8);
            for word in &mut words {
                let w = <[u8; 8]>::try_from(word).map_or(0, u64::from_le_bytes);
                lanes += (w & !(w << 1) & HIGH) >> 7; // bit 7 set, bit 6 clear
            }
            continuations += sum(lanes) + words.remainder().iter().filter(|&&b| b & 0xC0 == 0x80).count();
        }
        run.len() - continuations
    }

    #[cfg(test)]
    #[test]
    fn chars_counts_code_points_of_escaped_text() {
        // the byte-by-byte count this one replaced, as the reference
        fn reference(escaped: &[u8]) -> i64 {
            let is_hex = |b: u8| b.is_ascii_hexdigit();
            let unit = |at: usize| escaped.len() >= at + 6 && escaped[at + 1] == b'u' && escaped[at + 2..at + 6].iter().all(|&b| is_hex(b));
            let (mut i, mut n) = (0, 0);
            while i < escaped.len() {
                if escaped[i] == b'\\' {
                    let high = unit(i) && escaped[i + 2].eq_ignore_ascii_case(&b'd') && matches!(escaped[i + 3], b'8'..=b'9' | b'a'..=b'b' | b'A'..=b'B');
                    let low_follows = high && escaped.get(i + 6) == Some(&b'\\') && unit(i + 6)
                        && escaped[i + 8].eq_ignore_ascii_case(&b'd') && matches!(escaped[i + 9], b'c'..=b'f' | b'C'..=b'F');
                    i += if low_follows { 12 } else if unit(i) { 6 } else { 2 };
                    n += 1;
                } else {
                    n += i64::from(escaped[i] & 0xC0 != 0x80);
                    i += 1;
                }
            }
            n
        }
        let cases: [&[u8]; 8] = [b"", b"abc", br#"na\u00efve \u2192 \ud83d\ude00 \\ \"q\""#, "é😀→".as_bytes(),
                                 b"\\ud83d", b"x\\", b"\\ud83dx", b"\\uD83D\\uDE00\\n"];
        for case in cases {
            assert_eq!(chars(case), reference(case), "{case:?}");
        }
        let pieces: [&[u8]; 7] = [b"a", b"\\n", b"\\u00e9", b"\\ud83d", b"\\ude00", "\u{e9}".as_bytes(), "\u{1f600}".as_bytes()];
        let mut seed = 7u64;
        for _ in 0..500 {
            let mut text = Vec::new();
            for _ in 0..seed % 40 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.extend_from_slice(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            assert_eq!(chars(&text), reference(&text), "{text:?}");
        }
        let long = "é😀→ab".repeat(700); // past the lanes' flush (255 words)
        assert_eq!(chars(long.as_bytes()), reference(long.as_bytes()));
        assert_eq!(chars(&long.as_bytes()[1..4001]), reference(&long.as_bytes()[1..4001]));
    }

    /// Where a placed block's fragments go (`placed`: the `(write, close)` of `_block`).
    #[derive(Clone, Copy, Debug)]
    enum Placed {
        /// a tool call's arguments, closed by `"}}`
        Tool(WriterId),
        /// a string member; `counted`: the content (its span in characters is kept)
        Text { writer: WriterId, counted: bool },
    }

    /// `ResponseEncoder`: canonical events -> one `chat.completion` body.
    pub struct ResponseEncoder {
        head: Head,
        writers: Writers,
        begun: bool,
        tier_written: bool,
        choice: Option<i64>,
        msg: Option<MessageAssembler>,
        block: Option<Placed>,
        /// choice -> its token entries (written when it closes)
        logprobs: Vec<(i64, Hold<Vec<u8>>)>,
        /// characters of the open choice's content so far (citation spans)
        content_chars: i64,
        /// the span of its last text block: what a citations block that follows cites
        text_span: (i64, i64),
        /// the open choice's url_citation annotations (written when it closes)
        annotations: Vec<Value>,
        /// the choices written whole (their finish came: `closed`)
        closed: ChoiceSet,
        done: bool,
        /// the body written is the source's error: no answer may follow it
        errored: bool,
        /// the text of one write (kept for its capacity: a response makes a few)
        scratch: Vec<u8>,
    }

    /// A set of choice indexes: a bit for each below 64, a list for the others (a
    /// response has one choice or a few: no allocation).
    #[derive(Default)]
    struct ChoiceSet {
        low: u64,
        others: Vec<i64>,
    }

    impl ChoiceSet {
        fn bit(index: i64) -> Option<u64> {
            u32::try_from(index).ok().filter(|&i| i < 64).map(|i| 1 << i)
        }

        fn contains(&self, index: i64) -> bool {
            match Self::bit(index) {
                Some(bit) => self.low & bit != 0,
                None => self.others.contains(&index),
            }
        }

        fn insert(&mut self, index: i64) {
            match Self::bit(index) {
                Some(bit) => self.low |= bit,
                None if !self.others.contains(&index) => self.others.push(index),
                None => {}
            }
        }
    }

    impl ResponseEncoder {
        pub fn new(session: &Session) -> Self {
            ResponseEncoder {
                head: Head::new("chat.completion", session),
                writers: Writers::default(),
                begun: false,
                tier_written: false,
                choice: None,
                msg: None,
                block: None,
                logprobs: Vec::new(),
                content_chars: 0,
                text_span: (0, 0),
                annotations: Vec::new(),
                closed: ChoiceSet::default(),
                done: false,
                errored: false,
                scratch: Vec::new(),
            }
        }

        /// One write of the text `build` makes, into the output, in the scratch buffer.
        fn write_out(&mut self, io: &mut Io<'_>, build: impl FnOnce(&mut Self, &mut Vec<u8>) -> Result<()>) -> Result<()> {
            let mut text = std::mem::take(&mut self.scratch);
            text.clear();
            let result = build(self, &mut text).and_then(|()| io.write(WriterId::OUT, &text));
            self.scratch = text;
            result
        }

        fn begin(&mut self, io: &mut Io<'_>) -> Result<()> {
            if self.begun {
                return Ok(());
            }
            if self.errored {
                return Err(crate::lifecycle::answer_and_error());
            }
            self.begun = true;
            self.tier_written = self.head.kept("service_tier").is_some();
            self.write_out(io, |this, text| {
                text.reserve(256); // (the scratch buffer's first use: the head's usual size, and a close's)
                text.push(b'{');
                this.head.head_members(text);
                text.extend_from_slice(b",\"choices\":[");
                Ok(())
            })
        }

        /// `_open_choice(index)`: the choice's message, opened (the one before closed) when it changes.
        fn open_choice(&mut self, index: i64, io: &mut Io<'_>) -> Result<()> {
            if self.closed.contains(index) {
                // its finish_reason is written: a block (or annotations) for it has no place left
                return Err(crate::error::Error::new(crate::error::ErrorClass::Transcode,
                    format!("an event of choice {index} after its finish (the choice is written)")));
            }
            if self.choice != Some(index) {
                self.close_choice(None, io)?;
                self.begin(io)?;
                if self.choice.is_some() {
                    io.write(WriterId::OUT, b",")?;
                }
                self.write_out(io, |_, text| {
                    text.extend_from_slice(b"{\"index\":");
                    push_int(text, index);
                    text.extend_from_slice(b",\"message\":");
                    Ok(())
                })?;
                let mut msg = MessageAssembler::new(WriterId::OUT, io, "openai:member-order", b"", None)?;
                msg.scalar(io, "role", b"\"assistant\"")?;
                self.msg = Some(msg);
                self.choice = Some(index);
            }
            Ok(())
        }

        /// `_close_choice(reason)`.
        fn close_choice(&mut self, reason: Option<&str>, io: &mut Io<'_>) -> Result<()> {
            let Some(mut msg) = self.msg.take() else { return Ok(()) };
            if let Some(choice) = self.choice {
                self.closed.insert(choice);
            }
            if !msg.has("content") {
                msg.scalar(io, "content", b"null")?;
            }
            if !self.annotations.is_empty() {
                let mut json = Vec::new();
                dumps(&Value::Array(std::mem::take(&mut self.annotations)), &mut json);
                msg.trailing(io, "annotations", &json)?;
            }
            msg.close(io)?;
            self.content_chars = 0;
            self.text_span = (0, 0);
            let at = self.logprobs.iter().position(|(c, _)| Some(*c) == self.choice);
            let raws: Option<Vec<Vec<u8>>> = match at.map(|at| self.logprobs.remove(at).1) {
                Some(mut hold) if !hold.is_empty() => Some(hold.drain(&mut io.session.reorder).collect()),
                _ => None,
            };
            self.write_out(io, |_, text| {
                if let Some(raws) = raws {
                    // choices[].logprobs after the message (its content may have streamed)
                    let entries = raws.iter().map(|raw| logprob_to_openai(raw)).collect::<Result<Vec<_>>>()?;
                    text.extend_from_slice(b",\"logprobs\":");
                    let body = Value::Object(vec![
                        (b"content".to_vec(), Value::Array(entries)),
                        (b"refusal".to_vec(), Value::Null),
                    ]);
                    dumps(&body, text);
                }
                text.extend_from_slice(b",\"finish_reason\":");
                match reason {
                    Some(reason) => dumps_str(reason.as_bytes(), text),
                    None => text.extend_from_slice(b"null"),
                }
                text.push(b'}');
                Ok(())
            })
        }

        fn on_block(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
            let attrs = block.attrs.as_deref().unwrap_or(&[]);
            if !block.init {
                if let Some(placed) = self.block {
                    self.write(placed, &block.payload, io)?;
                    if block.fin {
                        self.close_placed(placed, io)?;
                        self.block = None;
                        lose_signature(io.session, DIALECT, BlockRef::of(block), attrs)?;
                    }
                } else if block.fin {
                    // a lost block's late signature is lost too
                    lose_signature(io.session, DIALECT, BlockRef::of(block), attrs)?;
                }
                return Ok(());
            }
            if block.section == Section::Citations && crate::encoding::attr_is(attrs, "dialect", "anthropic") {
                self.open_choice(block.message, io)?;
                return self.annotations(block, io);
            }
            let Some(key) = self.head.section_key(block, io.session)? else {
                self.block = None;
                return Ok(());
            };
            self.open_choice(block.message, io)?;
            let placed = if key == Key::ToolCalls {
                let (call_id, name) = self.head.tool_attrs(BlockRef::of(block), io.session)?;
                let Some(msg) = self.msg.as_mut() else { return Err(finished_choice()) };
                let w = msg.member(io, "tool_calls", Opener::Array)?;
                io.separate(w)?;
                let mut text = b"{\"id\":".to_vec();
                text.extend_from_slice(&call_id);
                text.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
                text.extend_from_slice(&name);
                text.extend_from_slice(b",\"arguments\":\"");
                io.write(w, &text)?;
                Placed::Tool(w)
            } else {
                let name: &'static str = match key {
                    Key::Content => "content",
                    Key::Refusal => "refusal",
                    _ => reasoning_member(self.head.reasoning_key.as_deref()),
                };
                let Some(msg) = self.msg.as_mut() else { return Err(finished_choice()) };
                lose_joined(msg.has(name), block, io.session, DIALECT)?;
                let writer = msg.member(io, name, Opener::String)?;
                let counted = key == Key::Content;
                if counted {
                    self.text_span = (self.content_chars, self.content_chars);
                }
                Placed::Text { writer, counted }
            };
            self.write(placed, &block.payload, io)?;
            if block.fin {
                self.close_placed(placed, io)
            } else {
                self.block = Some(placed);
                Ok(())
            }
        }

        fn write(&mut self, placed: Placed, payload: &[u8], io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Tool(w) => io.write(w, payload),
                Placed::Text { writer, counted } => {
                    if counted {
                        self.content_chars += chars(payload);
                        self.text_span.1 = self.content_chars;
                    }
                    io.write(writer, payload)
                }
            }
        }

        fn close_placed(&mut self, placed: Placed, io: &mut Io<'_>) -> Result<()> {
            match placed {
                Placed::Tool(w) => io.write(w, b"\"}}"),
                Placed::Text { .. } => Ok(()),
            }
        }

        /// `_annotations`: anthropic citations of the text block before: each web search
        /// result an url_citation over that block's span; what openai has no field for is
        /// recorded, per citation.
        fn annotations(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
            let attrs = block.attrs.as_deref().unwrap_or(&[]);
            let at = crate::encoding::attr_str(attrs, "path").filter(|p| !p.is_empty())
                .unwrap_or_else(|| "$.content[].citations".to_string());
            let (start, end) = self.text_span;
            let citations = if block.payload.is_empty() { Value::Array(Vec::new()) } else { Value::loads(&block.payload)? };
            let Value::Array(citations) = citations else {
                return Err(crate::error::Error::new(crate::error::ErrorClass::Transcode,
                    "citations that are not a list are not ported yet"));
            };
            for (n, citation) in citations.iter().enumerate() {
                let here = format!("{at}[{n}]");
                let kind = if citation.is_object() { citation.get("type") } else { None };
                let url = citation.get("url").filter(|u| u.is_str());
                let is_search = matches!(kind, Some(Value::Str(k)) if k == b"web_search_result_location");
                let (true, Some(url)) = (is_search && citation.is_object(), url) else {
                    let mut subject = String::new();
                    match kind.filter(|k| k.truthy()) {
                        Some(k) => super::py_str(k, &mut subject),
                        None => subject.push('a'),
                    }
                    subject.push_str(" citation");
                    io.session.lose(&here, lacks(&subject, DIALECT, "such citation", None), None)?;
                    continue;
                };
                let title = citation.get("title").filter(|t| !t.is_null());
                if title.is_some_and(|t| !t.is_str()) {
                    // (openai's title is a string)
                    io.session.lose(format!("{here}.title"), lacks("title of a web search citation", DIALECT,
                                    "title that is not a string", Some("written as \"\"")), None)?;
                }
                let title = title.filter(|t| t.is_str()).cloned().unwrap_or_else(|| Value::str(""));
                let found = Value::Object(vec![
                    (b"url".to_vec(), url.clone()),
                    (b"title".to_vec(), title),
                    (b"start_index".to_vec(), Value::int(start)),
                    (b"end_index".to_vec(), Value::int(end)),
                ]);
                self.annotations.push(Value::Object(vec![
                    (b"type".to_vec(), Value::str("url_citation")),
                    (b"url_citation".to_vec(), found),
                ]));
                for (key, value) in citation.as_object().unwrap_or(&[]) {
                    if !matches!(key.as_slice(), b"type" | b"url" | b"title") && !value.is_null() {
                        let key = String::from_utf8_lossy(key);
                        io.session.lose(format!("{here}.{key}"),
                                        lacks(&format!("{key} of a web search citation"), DIALECT, "field for it", None),
                                        None)?;
                    }
                }
            }
            Ok(())
        }

        fn end(&mut self, io: &mut Io<'_>) -> Result<()> {
            if self.done {
                return Ok(());
            }
            self.done = true;
            self.begin(io)?;
            self.close_choice(None, io)?;
            // (written before the body's tail: its sum may be beyond 64 bits; room for the usual object)
            let mut usage = Vec::with_capacity(256);
            if let Some(u) = self.head.usage.as_ref().filter(|u| has_openai_usage(u)) {
                usage.extend_from_slice(b",\"usage\":");
                push_usage_openai(u, io.session, &mut usage)?;
            }
            self.write_out(io, |this, text| {
                text.push(b']');
                text.extend_from_slice(&usage);
                if !this.tier_written {
                    if let Some(tier) = this.head.kept("service_tier") {
                        // told after the head went out
                        text.extend_from_slice(b",\"service_tier\":");
                        text.extend_from_slice(tier);
                    }
                }
                text.push(b'}');
                Ok(())
            })
        }

        /// `abort`: nothing written yet: an openai error body; otherwise the body cannot be mended.
        /// `_error`: the source's error -- the error body when nothing was written yet; after
        /// the answer began, refused (`answer_and_error`).
        fn error(&mut self, error: &Event<'_>, io: &mut Io<'_>) -> Result<()> {
            if self.begun {
                return Err(crate::lifecycle::answer_and_error());
            }
            if !self.done {
                self.errored = true;
            }
            self.abort_with(error, io)
        }

        fn abort_with(&mut self, error: &Event<'_>, io: &mut Io<'_>) -> Result<()> {
            if self.done {
                return Ok(());
            }
            self.done = true;
            if !self.begun {
                io.write(WriterId::OUT, &error_body(error))?;
            }
            Ok(())
        }
    }

    /// A block of a choice whose `Finish` closed it: `open_choice` refuses it first.
    fn finished_choice() -> crate::error::Error {
        crate::error::Error::new(crate::error::ErrorClass::Transcode,
            "internal error in the native core: openai response encoder: a block of a closed choice")
    }

    fn reasoning_member(key: Option<&str>) -> &'static str {
        match key {
            Some("reasoning") => "reasoning",
            _ => "reasoning_content",
        }
    }

    impl Encode for ResponseEncoder {
        fn event(&mut self, event: Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            if let Event::MessageStart { id, model, choice } = event {
                // (by value: the id and model a decoder handed over are kept, not copied)
                self.head.message_start(id, model, choice);
                return Ok(());
            }
            let mut writers = std::mem::take(&mut self.writers);
            let result = {
                let mut io = Io { out, session, writers: &mut writers };
                self.on_event(&event, &mut io)
            };
            self.writers = writers;
            result
        }

        fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
            Ok(())
        }

        fn abort(&mut self, error: &Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            let mut writers = std::mem::take(&mut self.writers);
            let result = {
                let mut io = Io { out, session, writers: &mut writers };
                self.abort_with(error, &mut io)
            };
            self.writers = writers;
            result
        }
    }

    impl ResponseEncoder {
        fn on_event(&mut self, event: &Event<'_>, io: &mut Io<'_>) -> Result<()> {
            match event {
                Event::Block(block) => self.on_block(block, io),
                Event::MessageStart { .. } => Ok(()), // (taken in `event`)
                Event::Extension(ext) => self.head.extension(ext, io.session),
                Event::Finish { reason, stop_sequence, choice } => {
                    let reason = finish_to(DIALECT, reason.as_deref(), io.session, stop_sequence.as_deref())?;
                    let reason = reason.as_deref();
                    if self.choice != Some(*choice) {
                        // a finish for a choice not written yet
                        self.open_choice(*choice, io)?;
                    }
                    self.close_choice(reason, io)
                }
                Event::Logprobs { raw, choice } => {
                    let at = match self.logprobs.iter().position(|(c, _)| c == choice) {
                        Some(at) => at,
                        None => {
                            self.logprobs.push((*choice, io.session.reorder.hold("openai:logprobs-after-message")));
                            self.logprobs.len() - 1
                        }
                    };
                    let hold = &mut self.logprobs[at].1;
                    hold.append(&mut io.session.reorder, raw.to_vec(), raw.len() as u64)
                }
                Event::Usage(usage) => self.head.usage_event(usage, io.session),
                Event::Error { .. } => self.error(event, io),
                Event::End => self.end(io),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::canonical::{Block, Event, Section};
    use crate::encoding::Encode;
    use crate::pipeline::Decoder;
    use crate::session::{Kind, Options, ResponseStart, Session};

    fn decode(body: &[u8], cuts: &[usize]) -> Result<Vec<Event<'static>>, crate::error::Error> {
        let session = Session::new(Options::default(), "openai", "", Kind::Response);
        let mut decoder = Decoder::new(session)?;
        let mut events = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
            decoder.feed(&body[at..cut], &mut events)?;
            at = cut;
        }
        decoder.close(&mut events)?;
        Ok(events)
    }

    #[test]
    fn an_error_s_code_or_type_names_its_kind() {
        let kind = |raw: &[u8]| error_kind(&crate::value::Value::loads(raw).expect("JSON"));
        let owned = |kind: &str, named: bool| (kind.to_string(), named);
        assert_eq!(kind(br#"{"type":"requests","code":"rate_limit_exceeded"}"#), owned("rate_limit_error", true));
        assert_eq!(kind(br#"{"type":"invalid_request_error","code":"invalid_api_key"}"#), owned("authentication_error", true));
        assert_eq!(kind(br#"{"type":"insufficient_quota","code":"credit_balance_exhausted"}"#), owned("billing_error", false));
        assert_eq!(kind(br#"{"type":"server_error","code":null}"#), owned("api_error", false));
        assert_eq!(kind(br#"{"type":"BadRequestError","code":400}"#), owned("BadRequestError", false));
        assert_eq!(kind(br#"{"message":"no type"}"#), owned("api_error", false));
    }

    /// Consecutive fragments of one block joined (the parity rule for cut input).
    fn joined(events: Vec<Event<'static>>) -> Vec<Event<'static>> {
        let mut out: Vec<Event<'static>> = Vec::new();
        for event in events {
            if let (Event::Block(b), Some(Event::Block(last))) = (&event, out.last_mut()) {
                if !b.init && !last.fin && b.section == last.section && b.message == last.message {
                    let mut payload = last.payload.to_vec();
                    payload.extend_from_slice(&b.payload);
                    last.payload = Cow::Owned(payload);
                    last.fin = b.fin;
                    continue;
                }
            }
            out.push(event);
        }
        out
    }

    const BODY: &[u8] = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-x","choices":[{"message":{"content":"caf\u00e9 ok","role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1}","name":"f"},"id":"call_1","type":"function"}]},"finish_reason":"tool_calls","index":0}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8},"system_fingerprint":"fp"}"#;

    #[test]
    fn a_sorted_key_body_decodes_alike_cut_anywhere() {
        let whole = joined(decode(BODY, &[]).unwrap());
        let tags: Vec<&str> = whole.iter().map(|e| e.tag()).collect();
        // the text waits for the message's next member; the call's arguments for its name and id
        assert_eq!(tags, ["extension", "message-start", "block", "block", "finish", "extension", "usage", "end"]);
        match &whole[2] {
            Event::Block(b) => assert_eq!((b.section, b.payload.as_ref()), (Section::AssistantText, &br"caf\u00e9 ok"[..])),
            other => panic!("{other:?}"),
        }
        for cut in 1..BODY.len() {
            assert_eq!(joined(decode(BODY, &[cut]).unwrap()), whole, "cut at {cut}");
        }
    }

    #[test]
    fn a_wrong_type_is_a_schema_error_at_its_path() {
        let err = decode(br#"{"id":"x","model":"m","choices":[{"index":0,"message":{"content":5}}]}"#, &[]).unwrap_err();
        assert_eq!(err.message, "expected a string for content, got number");
        assert_eq!(err.path.as_deref(), Some(&b"$.choices[0].message.content"[..]));
    }

    fn text(payload: &'static [u8], init: bool, fin: bool) -> Event<'static> {
        Event::Block(Block { section: Section::AssistantText, message: 0, payload: Cow::Borrowed(payload), init, fin, attrs: None })
    }

    fn encode(encoder: &mut dyn Encode, session: &mut Session, events: Vec<Event<'static>>) -> Vec<String> {
        events
            .into_iter()
            .map(|event| {
                let mut out = Vec::new();
                encoder.event(event, session, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            })
            .collect()
    }

    fn session(kind: Kind) -> Session {
        let mut session = Session::new(Options::default(), "anthropic", "openai", kind);
        session.response_start = Some(ResponseStart { time_us: 1_700_000_000_250_000, nonce: [7; 12] });
        session
    }

    #[test]
    fn a_stream_is_written_frame_by_frame() {
        let mut session = session(Kind::Stream);
        let mut encoder = StreamEncoder::new(&session);
        let start = Event::MessageStart { id: Some(Cow::Borrowed("msg_1")), model: Some(Cow::Borrowed("m")), choice: 0 };
        let outs = encode(&mut encoder, &mut session, vec![
            start,
            text(b"Hi", true, false),
            Event::FrameEnd,
            text(b" there", false, false),
            text(b"", false, true),
            Event::Finish { reason: Some(Cow::Borrowed("end_turn")), stop_sequence: None, choice: 0 },
            Event::End,
        ]);
        let head = r#"data: {"id":"msg_1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":["#;
        assert_eq!(outs[1], format!(r#"{head}{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}

{head}{{"index":0,"delta":{{"content":"Hi"#));
        assert_eq!(outs[2], "\"},\"finish_reason\":null}]}\n\n");
        assert_eq!(outs[3], format!(r#"{head}{{"index":0,"delta":{{"content":" there"#));
        assert_eq!(outs[4], "");
        assert_eq!(outs[5], format!("\"}},\"finish_reason\":null}}]}}\n\n{head}{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n"));
        assert_eq!(outs[6], "data: [DONE]\n\n");
    }

    #[test]
    fn a_response_is_one_body() {
        let mut session = session(Kind::Response);
        let mut encoder = ResponseEncoder::new(&session);
        let outs = encode(&mut encoder, &mut session, vec![
            Event::MessageStart { id: None, model: Some(Cow::Borrowed("m")), choice: 0 },
            text(br"caf\u00e9", true, true),
            Event::Finish { reason: Some(Cow::Borrowed("max_tokens")), stop_sequence: None, choice: 0 },
            Event::End,
        ]);
        let body = outs.concat();
        assert!(body.starts_with(r#"{"id":"chatcmpl-"#), "{body}");
        assert!(body.ends_with(r#""choices":[{"index":0,"message":{"role":"assistant","content":"caf\u00e9"},"finish_reason":"length"}]}"#), "{body}");
    }
}

#[cfg(test)]
mod timing {
    use crate::decoding::EventSink;
    use crate::encoding::Encode;
    use crate::pipeline::Front;
    use crate::session::{Kind, Options, ResponseStart, Session};

    struct Into<'a>(&'a mut super::StreamEncoder, &'a mut Vec<u8>);
    impl EventSink for Into<'_> {
        fn event(&mut self, event: crate::canonical::Event<'_>, session: &mut Session) -> crate::error::Result<()> {
            self.0.event(event, session, self.1)
        }
    }

    /// openai stream -> openai stream through the codecs (not the copy): ns per frame.
    #[test]
    #[ignore]
    fn per_frame_cost() {
        let head = br#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"tok "},"logprobs":null,"finish_reason":null}]}"#;
        let mut frames = Vec::new();
        for _ in 0..1000 {
            let mut f = head.to_vec();
            f.extend_from_slice(b"\n\n");
            frames.push(f);
        }
        let mut best = u128::MAX;
        for _ in 0..50 {
            let mut session = Session::new(Options::default(), "openai", "openai", Kind::Stream);
            session.response_start = Some(ResponseStart { time_us: 1, nonce: [0; 12] });
            let mut front = Front::new("openai", Kind::Stream, &session).unwrap();
            let mut encoder = super::StreamEncoder::new(&session);
            let mut out = Vec::with_capacity(1 << 20);
            let t = std::time::Instant::now();
            for f in &frames {
                out.clear();
                front.feed(f, &mut session, &mut Into(&mut encoder, &mut out)).unwrap();
            }
            best = best.min(t.elapsed().as_nanos());
        }
        eprintln!("{} ns per frame", best / 1000);
        struct Drop;
        impl EventSink for Drop {
            fn event(&mut self, _e: crate::canonical::Event<'_>, _s: &mut Session) -> crate::error::Result<()> {
                Ok(())
            }
        }
        let mut best = u128::MAX;
        for _ in 0..50 {
            let mut session = Session::new(Options::default(), "openai", "openai", Kind::Stream);
            let mut front = Front::new("openai", Kind::Stream, &session).unwrap();
            let t = std::time::Instant::now();
            for f in &frames {
                front.feed(f, &mut session, &mut Drop).unwrap();
            }
            best = best.min(t.elapsed().as_nanos());
        }
        eprintln!("{} ns per frame, decoding alone", best / 1000);
        let mut best = u128::MAX;
        for _ in 0..50 {
            let mut tokenizer = crate::json::Tokenizer::default();
            struct Count(u64);
            impl crate::json::Sink for Count {
                fn token(&mut self, _t: crate::json::Token<'_>, _o: u64, _p: &crate::json::Frames) -> crate::error::Result<()> {
                    self.0 += 1;
                    Ok(())
                }
            }
            let mut c = Count(0);
            let t = std::time::Instant::now();
            for f in &frames {
                tokenizer.reset();
                tokenizer.feed(&f[6..f.len() - 2], &mut c).unwrap();
                tokenizer.close(&mut c).unwrap();
            }
            best = best.min(t.elapsed().as_nanos());
        }
        eprintln!("{} ns per frame, tokenizer alone", best / 1000);
    }
}
