//! The shared machinery of dialect encoders (`src/interlingua/encoding.py`):
//! canonical events in, the target's JSON out, written as it becomes possible.
//! The trait is the contract between the stages; the rest of this file is
//! helper E's (NATIVE.md).
//!
//! How a dialect encoder is built on it (the openai one, `dialects/openai/request.rs`,
//! is the worked example):
//!
//! * **Writers.** Python's `JsonWriter(write)` writes to the output or into a hold. Here
//!   every writer lives in one `Writers` arena owned by the encoder and is named by a
//!   `WriterId`: `WriterId::OUT` is the run's output, `Writers::held` makes one whose
//!   bytes go into a reorder-buffer hold (`ByteHold`, counted write by write as
//!   Python's `Hold.write`). Each call of `Io` is one Python `write` call, so holds
//!   are charged -- and budgets fail -- at the same writes.
//! * **Io.** Per event the encoder builds `Io { out, session, writers }` from the
//!   `Encode::event` arguments and its own `Writers`; every helper takes `&mut Io`.
//! * **Blocks.** A dialect implements `PlaceBlocks` (Python's `_place` returning
//!   `(write, close)`): `place` opens what the block needs and returns the block's
//!   named state (`Placed`), `write` gets every fragment, `close` the late attributes.
//!   `on_block` is `Encoder._on_block` (the fragment protocol, `REQUEST_LEVEL` blocks
//!   to `tool_definition`).
//! * **Losses.** `lose`, `lose_block`, `lose_unplaced`, `lose_field`,
//!   `lose_raw_arguments`, `lose_signature`, `foreign_extension`: the `_lose*`
//!   helpers, the same paths and reasons. A block is named by a `BlockRef`
//!   (section, message, first fragment's attributes and payload).
//! * **Messages.** `MessageAssembler` is one target message (first member streams,
//!   the others are held and appended at `close`); `MessageListBody` is a top level
//!   with the system prompt inside the message list (openai, ollama). The body calls
//!   back into the encoder to close the message being written: the encoder's message
//!   state implements `MessageCloser`, and every body method that may close one takes it.
//!
//! ```ignore
//! struct MyMessages { msg: Option<MessageAssembler>, /* ... */ }
//! impl MessageCloser for MyMessages {
//!     fn close_message(&mut self, _body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()> {
//!         if let Some(msg) = self.msg.take() { msg.close(io)?; }
//!         Ok(())
//!     }
//! }
//! // in `Encode::event`:
//! let mut io = Io { out, session, writers: &mut self.writers };
//! match event {
//!     Event::Block(block) => on_block(&mut self.inner, &block, &mut io),
//!     Event::SystemEnd => self.inner.body.system_end(&mut self.inner.msgs, &mut io),
//!     // ...
//! }
//! ```
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{control_place, unescape_json_text_into, Block, Control, Extension, PayloadForm, RawJson, Section, REQUEST_LEVEL};
use crate::compact::{Data, Raw};
use crate::error::{Error, ErrorClass, Result};
use crate::json::{Frames, Limits, Sink, Token, Tokenizer};
use crate::jsonwriter::{dumps_str, key_bytes, JsonWriter};
use crate::losses::{
    article, block_path, block_subject, field_path, field_subject, lacks, no_place, path_subject, raw_tool_member, unknown_role,
    MESSAGE_CACHE_CONTROL, RESULT_CACHE_CONTROL,
};
use crate::reorder::{ByteHold, Hold, ReorderBuffer};
use crate::session::Session;
use crate::value::Value;

pub use crate::losses::{json_truthy as truthy, py_str};

/// A dialect encoder (`encoding.Encoder`): `out` is the run's output of this
/// feed; what must wait (a hold) goes to `session.reorder` and is written later.
pub trait Encode {
    fn event(&mut self, event: crate::canonical::Event<'_>, session: &mut Session, out: &mut Vec<u8>) -> Result<()>;
    /// The source ended (`finish`): write the rest.
    fn finish(&mut self, session: &mut Session, out: &mut Vec<u8>) -> Result<()>;
    /// What the encoder writes when it is made, before any event (Python's constructor:
    /// a request body's `{`, which `Transcoder.feed` returns with the first chunk even
    /// when that chunk makes no event). The `Transcoder` calls it once, first; an encoder
    /// fed events directly (`encode_events`) writes it with its first event instead, as
    /// Python's appears in the first event's output there. Default: nothing.
    fn start(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
    /// End the output with the target's error event (`Encoder.abort(error)`, response
    /// and stream encoders; `Transcoder.abort`): `error` is a canonical
    /// `Event::Error`. Default: nothing (Python's request encoders have no `abort`).
    fn abort(&mut self, _error: &crate::canonical::Event<'_>, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
}

// -- block attributes -----------------------------------------------------------------
//
// Python's encoders read `block.attrs` as a dict of JSON data; here the values are
// their compact JSON text (canonical.rs), read where a rule needs them.

/// One attribute: (name, compact JSON value).
pub type Attr<'a> = (Cow<'a, str>, RawJson<'a>);
/// Attributes held past their event (a block's first fragment's, for its close).
pub type OwnedAttrs = Vec<Attr<'static>>;

/// `attrs.get(key)`: the value's JSON text.
pub fn attr<'x>(attrs: &'x [Attr<'_>], key: &str) -> Option<&'x [u8]> {
    attrs.iter().find(|(k, _)| k.as_ref() == key).map(|(_, v)| v.as_ref())
}

/// `key in attrs`.
pub fn has_attr(attrs: &[Attr<'_>], key: &str) -> bool {
    attrs.iter().any(|(k, _)| k.as_ref() == key)
}

/// `bool(attrs.get(key))`.
pub fn attr_truthy(attrs: &[Attr<'_>], key: &str) -> bool {
    attr(attrs, key).is_some_and(truthy)
}

/// `attrs.get(key)` when it is a string (else None; a lone surrogate: None).
pub fn attr_str(attrs: &[Attr<'_>], key: &str) -> Option<String> {
    attr(attrs, key).and_then(json_str)
}

/// A JSON string's text (None: not a string, or one holding a lone surrogate).
pub fn json_str(raw: &[u8]) -> Option<String> {
    if let Some(text) = plain_json_str(raw) {
        return Some(text.to_string());
    }
    match Value::loads(raw) {
        Ok(Value::Str(text)) => String::from_utf8(text).ok(),
        _ => None,
    }
}

/// The text of a JSON string without escapes (most attribute values: roles, types, ids),
/// read without a parse; None for anything else (parse it).
fn plain_json_str(raw: &[u8]) -> Option<&str> {
    let inner = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20) {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

/// Whether `attrs.get(key) == text` (a JSON string equal to `text`).
pub fn attr_is(attrs: &[Attr<'_>], key: &str, text: &str) -> bool {
    match attr(attrs, key) {
        Some(raw) if raw.len() == text.len() + 2 && !raw.contains(&b'\\') => &raw[1..raw.len() - 1] == text.as_bytes(),
        Some(raw) => json_str(raw).as_deref() == Some(text),
        None => false,
    }
}

/// `attrs.get(key)` as data (None: absent).
pub fn attr_value(attrs: &[Attr<'_>], key: &str) -> Result<Option<Value>> {
    attr(attrs, key).map(Value::loads).transpose()
}

/// `session.tool_name_out(attrs.get("name"), path)` of a name attribute's JSON text.
pub fn tool_name_out(session: &mut Session, name: Option<&[u8]>, path: &str) -> Result<String> {
    session.tool_name_out_json(name, path)
}

/// The attribute names the codecs give blocks (sorted: `owned_attr` looks them up).
const ATTR_NAMES: &[&str] = &[
    "anthropic_extra", "cache_control", "citations", "data_url", "data_url_type", "description", "dialect", "empty", "id", "in_messages",
    "in_parts", "in_result", "index", "is_error", "key", "legacy", "media_type", "name", "ollama_extra",
    "ollama_no_arguments", "ollama_no_tool_call_id", "ollama_no_tool_name", "ollama_tool_extra", "openai_extra",
    "openai_function_extra", "openai_tool_extra", "path", "redacted", "role", "signature", "source", "source_extra",
    "strict", "tool_call_id", "type", "where",
];

/// One attribute kept past its event: a known name and a literal value are the
/// constants' (no allocation per attribute); anything else is copied.
pub fn owned_attr((k, v): &Attr<'_>) -> Attr<'static> {
    let name = match ATTR_NAMES.binary_search(&k.as_ref()) {
        Ok(i) => Cow::Borrowed(ATTR_NAMES[i]),
        Err(_) => Cow::Owned(k.to_string()),
    };
    (name, owned_json(v))
}

fn owned_json(value: &[u8]) -> RawJson<'static> {
    match value {
        b"true" => Cow::Borrowed(b"true"),
        b"false" => Cow::Borrowed(b"false"),
        b"null" => Cow::Borrowed(b"null"),
        _ => Cow::Owned(value.to_vec()),
    }
}

/// The attributes as owned data (to keep them past the event).
pub fn owned(attrs: &[Attr<'_>]) -> OwnedAttrs {
    attrs.iter().map(owned_attr).collect()
}

/// `{**first, **late}`: `first`'s order, values replaced by `late`'s, `late`'s new keys after.
/// A block whole in one event has no late attributes: `first` itself, not a copy.
pub fn merged<'x>(first: &'x [Attr<'x>], late: &[Attr<'_>]) -> Cow<'x, [Attr<'x>]> {
    if late.is_empty() {
        return Cow::Borrowed(first);
    }
    let mut out: OwnedAttrs = Vec::with_capacity(first.len() + late.len());
    out.extend(first.iter().map(owned_attr));
    for attr in late {
        match out.iter_mut().find(|(key, _)| key.as_ref() == attr.0.as_ref()) {
            Some(slot) => slot.1 = owned_json(&attr.1),
            None => out.push(owned_attr(attr)),
        }
    }
    Cow::Owned(out)
}

/// `late_only(attrs, late)`: the late attributes that were not among the first fragment's
/// (an encoder records the early ones' losses when the block opens, these at its close).
pub fn late_only(first: &[Attr<'_>], late: &[Attr<'_>]) -> OwnedAttrs {
    let recorded_early = |key: &str, value: &[u8]| match attr(first, key) {
        None => false,
        // (kept members whose early ones said nothing are recorded at the close)
        Some(early) => early == value || crate::losses::extras_said(key, first).is_some(),
    };
    late.iter().filter(|(k, v)| !recorded_early(k, v)).map(owned_attr).collect()
}

/// Python's `len(str)` of UTF-8 / WTF-8 text (a hold's size for a key).
pub fn char_len(text: &[u8]) -> u64 {
    text.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64
}

// -- roles ------------------------------------------------------------------------------

/// The roles encoders write most, as JSON text.
pub mod roles {
    pub const SYSTEM: &[u8] = b"\"system\"";
    pub const USER: &[u8] = b"\"user\"";
    pub const ASSISTANT: &[u8] = b"\"assistant\"";
    pub const TOOL: &[u8] = b"\"tool\"";
}

/// `role` (JSON text) when it is one of `roles`: kept without a copy per message.
pub fn known_role(role: &[u8]) -> Option<&'static [u8]> {
    [roles::SYSTEM, roles::USER, roles::ASSISTANT, roles::TOOL].into_iter().find(|known| *known == role)
}

/// `dumps(role)` of a role name: a constant for the names `roles` has.
pub fn role_json(role: &str) -> Cow<'static, [u8]> {
    match role {
        "system" => Cow::Borrowed(roles::SYSTEM),
        "user" => Cow::Borrowed(roles::USER),
        "assistant" => Cow::Borrowed(roles::ASSISTANT),
        "tool" => Cow::Borrowed(roles::TOOL),
        _ => {
            let mut json = Vec::with_capacity(role.len() + 2);
            dumps_str(role.as_bytes(), &mut json);
            Cow::Owned(json)
        }
    }
}

/// `b'"role":' + role` (role as JSON text): a constant for the usual roles.
pub fn role_head(role: &[u8]) -> Cow<'static, [u8]> {
    match role {
        roles::SYSTEM => Cow::Borrowed(b"\"role\":\"system\""),
        roles::USER => Cow::Borrowed(b"\"role\":\"user\""),
        roles::ASSISTANT => Cow::Borrowed(b"\"role\":\"assistant\""),
        roles::TOOL => Cow::Borrowed(b"\"role\":\"tool\""),
        _ => Cow::Owned([&b"\"role\":"[..], role].concat()),
    }
}

// -- writers ----------------------------------------------------------------------------

/// A writer of the `Writers` arena: the output (`OUT`) or a hold. A writer whose hold
/// was taken is gone: its id is stale (the generation tells it from the slot's next writer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterId {
    index: u32,
    generation: u32,
}

impl WriterId {
    /// The run's output (the encoder's `self.out` in Python).
    pub const OUT: WriterId = WriterId { index: 0, generation: 0 };
}

/// A held writer.
struct Slot {
    json: JsonWriter,
    hold: Option<ByteHold>,
}

/// Every `JsonWriter` of one encoder: separator state, and where its bytes go.
/// A new one allocates nothing (an encoder takes its `Writers` out for every event,
/// leaving a default in its place).
#[derive(Default)]
pub struct Writers {
    /// the output's writer (`WriterId::OUT`)
    out: JsonWriter,
    /// the held writers: (generation, the writer while it lives), at their index - 1
    slots: Vec<(u32, Option<Slot>)>,
    free: Vec<u32>,
    /// a held writer's bytes of one write, before they go into its hold
    scratch: Vec<u8>,
    /// bytes held back from the output, written before its next write that is not empty:
    /// the end of anthropic's last assistant text (Python's `RequestEncoder._emit`). Boxed: a
    /// response encoder's `Writers` stays within the allocator's thread cache (lib.rs `box_sizes`)
    pub held_back: Option<Box<HeldBack>>,
}

/// The end of the last assistant text an anthropic request encoder wrote, held back until what
/// follows it is known (`_trailing_text`): its trailing blank run and, once the text ended, the
/// bytes that close it. Written before anything else is; or the encoder drops the run.
#[derive(Default)]
pub struct HeldBack {
    pub run: Vec<u8>,
    pub close: Option<Vec<u8>>,
}

impl HeldBack {
    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.close.is_none()
    }

    /// Whether a writer set holds bytes back (`None`: it never did).
    fn holds(held_back: &Option<Box<HeldBack>>) -> bool {
        held_back.as_deref().is_some_and(|held| !held.is_empty())
    }

    /// Into `out` (`_emit`'s `self.write(held)`), and gone.
    fn release(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.run);
        self.run.clear();
        if let Some(close) = self.close.take() {
            out.extend_from_slice(&close);
        }
    }
}

/// Where writer `id` writes: its `JsonWriter` and its hold (`None`: the output).
fn slot_in<'w>(out: &'w mut JsonWriter, slots: &'w mut [(u32, Option<Slot>)], id: WriterId)
               -> Option<(&'w mut JsonWriter, Option<&'w mut ByteHold>)> {
    if id == WriterId::OUT {
        return Some((out, None));
    }
    match slots.get_mut((id.index as usize).wrapping_sub(1)) {
        Some((generation, Some(slot))) if *generation == id.generation => Some((&mut slot.json, slot.hold.as_mut())),
        _ => None,
    }
}

/// A write to a writer whose hold was taken (its message closed): no decoder's events
/// lead there (a block's fragments are not split by a message's end); an error, not a panic.
fn stale() -> Error {
    Error::new(ErrorClass::Transcode, "internal error in the native core: a write to a writer already taken")
}

impl Writers {
    /// `JsonWriter(session.reorder.hold(reason).write)`: a writer into a new hold.
    pub fn held(&mut self, reorder: &mut ReorderBuffer, reason: &str) -> WriterId {
        let slot = Slot { json: JsonWriter::default(), hold: Some(reorder.byte_hold(reason)) };
        match self.free.pop() {
            Some(index) => {
                let entry = &mut self.slots[index as usize - 1];
                entry.0 = entry.0.wrapping_add(1);
                entry.1 = Some(slot);
                WriterId { index, generation: entry.0 }
            }
            None => {
                self.slots.push((0, Some(slot)));
                WriterId { index: self.slots.len() as u32, generation: 0 }
            }
        }
    }

    fn slot(&mut self, id: WriterId) -> Option<(&mut JsonWriter, Option<&mut ByteHold>)> {
        slot_in(&mut self.out, &mut self.slots, id)
    }

    /// `bool(hold)`: whether anything was written into a held writer.
    pub fn holds_bytes(&mut self, id: WriterId) -> bool {
        matches!(self.slot(id), Some((_, Some(hold))) if !hold.is_empty())
    }

    /// `hold.take_bytes()` appended to `into`; the writer is gone.
    pub fn take(&mut self, id: WriterId, reorder: &mut ReorderBuffer, into: &mut Vec<u8>) {
        if id == WriterId::OUT || self.slot(id).is_none() {
            return;
        }
        if let Some(Slot { hold: Some(mut hold), .. }) = self.slots[id.index as usize - 1].1.take() {
            hold.take_into(reorder, into);
            self.free.push(id.index);
        }
    }

    /// The writer is not used again (its hold, if any, was taken or is dropped unwritten).
    pub fn drop_writer(&mut self, id: WriterId, reorder: &mut ReorderBuffer) {
        let mut sink = Vec::new();
        self.take(id, reorder, &mut sink);
    }
}

/// What every encoder helper works on during one event.
pub struct Io<'x> {
    pub out: &'x mut Vec<u8>,
    pub session: &'x mut Session,
    pub writers: &'x mut Writers,
}

impl Io<'_> {
    /// One JSON-writer call on writer `w` (one Python `write`): `f` writes into the
    /// output, or into a buffer that then goes into `w`'s hold.
    pub fn json<R>(&mut self, w: WriterId, f: impl FnOnce(&mut JsonWriter, &mut Vec<u8>) -> R) -> Result<R> {
        let Writers { out, slots, scratch, held_back, .. } = &mut *self.writers;
        let (json, hold) = slot_in(out, slots, w).ok_or_else(stale)?;
        match hold {
            None => match held_back.as_deref_mut().filter(|held| !held.is_empty()) {
                None => Ok(f(json, self.out)),
                Some(held) => {
                    scratch.clear();
                    let r = f(json, scratch);
                    if !scratch.is_empty() {
                        held.release(self.out);
                        self.out.extend_from_slice(scratch);
                    }
                    Ok(r)
                }
            },
            Some(hold) => {
                scratch.clear();
                let r = f(json, scratch);
                hold.write(&mut self.session.reorder, scratch)?;
                Ok(r)
            }
        }
    }

    /// `writer.write(data)`.
    pub fn write(&mut self, w: WriterId, data: &[u8]) -> Result<()> {
        let (_, hold) = self.writers.slot(w).ok_or_else(stale)?;
        match hold {
            None => {
                if !data.is_empty() && HeldBack::holds(&self.writers.held_back) {
                    if let Some(held) = self.writers.held_back.as_deref_mut() {
                        held.release(self.out);
                    }
                }
                self.out.extend_from_slice(data);
                Ok(())
            }
            Some(hold) => hold.write(&mut self.session.reorder, data),
        }
    }

    /// `writer._sep()`: `,` or nothing before the next item of the open container.
    pub fn sep(&mut self, w: WriterId) -> &'static [u8] {
        let Writers { out, slots, scratch, .. } = &mut *self.writers;
        scratch.clear();
        if let Some((json, _)) = slot_in(out, slots, w) {
            json.separate(scratch);
        }
        if scratch.is_empty() { b"" } else { b"," }
    }

    /// `writer._separate()`.
    pub fn separate(&mut self, w: WriterId) -> Result<()> {
        let sep = self.sep(w);
        if sep.is_empty() {
            return Ok(());
        }
        self.write(w, sep)
    }

    /// `writer._first.append(True)`: a container opened by raw text.
    pub fn push_first(&mut self, w: WriterId) {
        if let Some((json, _)) = self.writers.slot(w) {
            json.open_raw();
        }
    }

    /// `writer._first.pop()`.
    pub fn pop_first(&mut self, w: WriterId) {
        if let Some((json, _)) = self.writers.slot(w) {
            json.close_raw();
        }
    }

    /// A new hold of `reason` (`session.reorder.hold(reason)`).
    pub fn hold<T>(&mut self, reason: &str) -> Hold<T> {
        self.session.reorder.hold(reason)
    }

    /// `session.lose(path, reason, dialect=...)`.
    pub fn lose(&mut self, path: &str, reason: &str, dialect: Option<&str>) -> Result<()> {
        self.session.lose(path, reason, dialect)
    }
}

// -- the batch of calls the results answer ----------------------------------------------------

/// A call id as Python's `_batch` / `_answered` compare it: the value (None: absent or
/// null). A string is compared as its text: its JSON written the one way `dumps` writes it.
pub type CallKey = Option<Vec<u8>>;

/// `CallKey` of an attribute's JSON text.
pub fn call_key(raw: Option<&[u8]>) -> CallKey {
    let raw = raw.filter(|raw| *raw != b"null")?;
    if plain_json_str(raw).is_some() {
        return Some(raw.to_vec());
    }
    Some(Value::loads(raw).map_or_else(|_| raw.to_vec(), |value| value.to_json()))
}

/// One of Python's id lists (`_batch`, `_held_ids`): a call's close appends to the list it
/// was placed with, by identity (`serial`), wherever that list went since.
#[derive(Default)]
struct IdList {
    serial: u64,
    ids: Vec<CallKey>,
}

/// The request encoders' (openai, anthropic) state for calls moved out of a run's tool
/// messages (ollama `tool_calls` on a tool message): `_batch` (the ids of the calls of the
/// last message of calls, which the results that follow answer), `_batch_msg` (that
/// message), `_answered` (the ids the results since answered) and `_held_ids` (the ids of
/// the calls held in the assistant message written after the run). The held message itself
/// is the encoder's.
pub struct CallBatch {
    batch: IdList,
    /// the serial of the message (the encoder's count of opened messages) of the batch
    batch_msg: Option<u64>,
    answered: std::collections::HashSet<CallKey>,
    held: IdList,
    /// the last serial given to an id list
    lists: u64,
}

impl Default for CallBatch {
    fn default() -> Self {
        CallBatch {
            batch: IdList { serial: 0, ids: Vec::new() },
            batch_msg: None,
            answered: Default::default(),
            held: IdList { serial: 1, ids: Vec::new() },
            lists: 1,
        }
    }
}

impl CallBatch {
    /// `_batch_open`: a call of the batch is not answered yet (the run goes on).
    pub fn open(&self) -> bool {
        self.batch.ids.iter().any(|id| !self.answered.contains(id))
    }

    /// `self._answered.add(call_id)`.
    pub fn answer(&mut self, call_id: CallKey) {
        self.answered.insert(call_id);
    }

    /// A call written into message `msg` (its serial): the list its id goes to, `_batch`,
    /// a new one when `msg` is not the batch's message
    /// (`self._batch, self._batch_msg, self._answered = [], msg, set()`).
    pub fn batch_of(&mut self, msg: u64) -> u64 {
        if self.batch_msg != Some(msg) {
            self.lists += 1;
            self.batch = IdList { serial: self.lists, ids: Vec::new() };
            self.batch_msg = Some(msg);
            self.answered.clear();
        }
        self.batch.serial
    }

    /// `len(self._batch)`: the calls of the batch (written, their ids recorded).
    pub fn batch_len(&self) -> usize {
        self.batch.ids.len()
    }

    /// A call held for the assistant message after the run: the list its id goes to (`_held_ids`).
    pub fn held_list(&self) -> u64 {
        self.held.serial
    }

    /// `ids.append(id)` at a call's close, into the list it was placed with (a list no longer
    /// the batch nor the held one is read by nothing again).
    pub fn record(&mut self, list: u64, id: CallKey) {
        if self.batch.serial == list {
            self.batch.ids.push(id);
        } else if self.held.serial == list {
            self.held.ids.push(id);
        }
    }

    /// The held calls were written: they are the batch the next results answer
    /// (`self._batch, self._batch_msg, self._answered, self._held_ids = self._held_ids, None, set(), []`).
    pub fn held_written(&mut self) {
        self.lists += 1;
        let fresh = IdList { serial: self.lists, ids: Vec::new() };
        self.batch = std::mem::replace(&mut self.held, fresh);
        self.batch_msg = None;
        self.answered.clear();
    }
}

// -- blocks ---------------------------------------------------------------------------------

/// A block as the loss helpers name it: its first fragment's section, message,
/// attributes and payload (the payload names a block carried raw).
#[derive(Clone, Copy)]
pub struct BlockRef<'x> {
    pub section: Section,
    pub message: i64,
    pub attrs: &'x [Attr<'x>],
    pub payload: &'x [u8],
}

impl<'x> BlockRef<'x> {
    pub fn of(block: &'x Block<'_>) -> BlockRef<'x> {
        BlockRef { section: block.section, message: block.message, attrs: block.attrs.as_deref().unwrap_or(&[]), payload: &block.payload }
    }
}

/// A block's first fragment kept for its close (the Python closures' `block`): its
/// attributes, and the payload only where it names the block (raw sections). Borrowed from
/// the event while the block is whole in it (the usual request block: no copy per block),
/// owned (`into_owned`, `BlockHead`) once its fragments go on past the event.
#[derive(Clone, Debug)]
pub struct Head<'a> {
    pub section: Section,
    pub message: i64,
    pub attrs: HeadAttrs<'a>,
    pub payload: Cow<'a, [u8]>,
}

/// A `Head` held past its event.
pub type BlockHead = Head<'static>;

/// A head's attributes: the event's, or a copy (read as `&[Attr]`).
#[derive(Clone, Debug)]
pub enum HeadAttrs<'a> {
    Borrowed(&'a [Attr<'a>]),
    Owned(OwnedAttrs),
}

impl<'a> std::ops::Deref for HeadAttrs<'a> {
    type Target = [Attr<'a>];

    fn deref(&self) -> &[Attr<'a>] {
        match self {
            HeadAttrs::Borrowed(attrs) => attrs,
            HeadAttrs::Owned(attrs) => attrs,
        }
    }
}

impl Head<'static> {
    /// The head of `block`, owned.
    pub fn of(block: &Block<'_>) -> BlockHead {
        Head::borrowed(block).into_owned()
    }
}

impl<'a> Head<'a> {
    /// The head of `block`, borrowing it.
    pub fn borrowed(block: &'a Block<'_>) -> Head<'a> {
        let payload: &[u8] = if block.section.form() == PayloadForm::Raw { &block.payload } else { b"" };
        let attrs = HeadAttrs::Borrowed(block.attrs.as_deref().unwrap_or(&[]));
        Head { section: block.section, message: block.message, attrs, payload: Cow::Borrowed(payload) }
    }

    /// The same head owning what it borrowed (to keep it past the event).
    pub fn into_owned(self) -> BlockHead {
        let attrs = match self.attrs {
            HeadAttrs::Borrowed(attrs) => owned(attrs),
            HeadAttrs::Owned(attrs) => attrs,
        };
        Head { section: self.section, message: self.message, attrs: HeadAttrs::Owned(attrs), payload: Cow::Owned(self.payload.into_owned()) }
    }

    pub fn as_ref(&self) -> BlockRef<'_> {
        BlockRef { section: self.section, message: self.message, attrs: &self.attrs, payload: &self.payload }
    }
}

/// The state of the block whose fragments are arriving (`Encoder._block`).
#[derive(Default)]
pub enum InBlock<P> {
    #[default]
    None,
    /// not carried (its loss recorded at the last fragment): the rest is ignored, but for the
    /// members of its tool_result that ride on its last fragment (`riding_lost`)
    Ignored(BlockHead),
    Placed(P),
    /// an empty first fragment whose placing waits for the next fragment (`defers`)
    Deferred(Block<'static>),
}


/// `Encoder._lose_joined`: a response's second block into the one field `K` of its choice
/// (openai's and ollama's content, reasoning): joined to the first, a recorded loss -- in a
/// stream too, whose client concatenates the deltas. Only anthropic's content is a list of
/// blocks: another source's text is one field there too (its stream's pieces split by a tool
/// call are not two blocks). The stream encoders keep one; a response encoder asks its
/// message (`has`). (The first field is kept in place: one text allocates nothing for it.)
#[derive(Debug)]
pub struct JoinedFields<K> {
    first: Option<(i64, K)>,
    more: Vec<(i64, K)>,
}

impl<K> Default for JoinedFields<K> {
    fn default() -> Self {
        JoinedFields { first: None, more: Vec::new() }
    }
}

impl<K: PartialEq + Copy> JoinedFields<K> {
    pub fn lose_joined(&mut self, block: &Block<'_>, key: K, session: &mut Session, dialect: &str) -> Result<()> {
        let field = (block.message, key);
        let written = self.first == Some(field) || self.more.contains(&field);
        if !written {
            match self.first {
                None => self.first = Some(field),
                Some(_) => self.more.push(field),
            }
        }
        lose_joined(written, block, session, dialect)
    }
}

/// `_lose_joined`'s rule, for a field a block of the choice went into already (`written`; a
/// response encoder asks its message).
pub fn lose_joined(written: bool, block: &Block<'_>, session: &mut Session, dialect: &str) -> Result<()> {
    if written && session.source == "anthropic" {
        return lose_block(session, dialect, BlockRef::of(block), "second field for it", Some("joined to the first"), None);
    }
    Ok(())
}

/// `TextCallOrder`: a target whose message has its text and its tool calls in two members
/// (openai's and ollama's `content` and `tool_calls`) keeps their order by the members' order,
/// so a third run of them in one message (anthropic `[text, tool_use, text]`) goes with the
/// first run of its kind, before the other: `moved` says so once per message (the section of
/// the run it was after), and `on_block` records it (it was lost unrecorded).
#[derive(Default)]
pub struct TextCallOrder {
    message: Option<i64>,
    last: Option<Section>,
    runs: u32,
}

impl TextCallOrder {
    pub fn moved(&mut self, block: &Block<'_>) -> Option<Section> {
        if !matches!(block.section, Section::AssistantText | Section::ToolCall) {
            return None;
        }
        if self.message != Some(block.message) {
            *self = TextCallOrder { message: Some(block.message), last: Some(block.section), runs: 1 };
            return None;
        }
        if self.last == Some(block.section) {
            return None;
        }
        let before = self.last.replace(block.section);
        self.runs += 1;
        before.filter(|_| self.runs == 3)
    }
}

/// A dialect's placing of blocks (`Encoder._place` and the `(write, close)` it returns).
pub trait PlaceBlocks {
    /// The named state of a placed block (what Python's `write`/`close` closures held),
    /// borrowing its first event (`keep` owns it when the block goes on past that event).
    type Placed<'a>;
    fn in_block(&mut self) -> &mut InBlock<Self::Placed<'static>>;
    /// A block's first fragment: open what it needs; None: not carried (loss recorded).
    fn place<'a>(&mut self, block: &'a Block<'_>, io: &mut Io<'_>) -> Result<Option<Self::Placed<'a>>>;
    /// Every fragment's payload, the first included.
    fn write(&mut self, placed: &mut Self::Placed<'_>, payload: &[u8], io: &mut Io<'_>) -> Result<()>;
    /// After the last fragment, with its (late) attributes.
    fn close(&mut self, placed: Self::Placed<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()>;
    /// A placed block whose fragments go on in later events: what it borrowed, owned.
    fn keep(placed: Self::Placed<'_>) -> Self::Placed<'static>;
    /// A `REQUEST_LEVEL` block (`_tool_definition`; see `tool_definition`).
    fn tool_definition(&mut self, block: &Block<'_>, io: &mut Io<'_>) -> Result<()>;
    /// A block of the source's message list came (`Encoder._listed`: `require_a_message`).
    fn message_listed(&mut self) {}
    /// `_defers`: whether an empty first fragment's placing waits for the next fragment.
    fn defers(&self, _block: &Block<'_>, _session: &Session) -> bool {
        false
    }
    /// `_text_call_order`: a target whose text and tool calls are two members of a message.
    fn text_call_order(&mut self) -> Option<&mut TextCallOrder> {
        None
    }
}

/// `_NO_MESSAGE_MEANS`: what the target makes of a request without a message.
fn no_message_means(target: &str) -> &'static str {
    if target == "ollama" {
        "reads a request without a message as loading the model, not as a question"
    } else {
        "takes no request without a message"
    }
}

/// `Encoder.require_a_message`: at a request's end, `NoMessageError` when the source listed
/// messages and none was `carried` into the target's list (openai and anthropic take no
/// request without a message; ollama reads one as "load the model").
pub fn require_a_message(listed: bool, carried: bool, target: &str, session: &Session) -> Result<()> {
    if listed && !carried {
        return Err(Error::new(ErrorClass::NoMessage, format!(
            "{target} {}, and none of the source's messages is left for its list (see the losses)", no_message_means(target)))
            .with_path(b"$.messages".to_vec())
            .in_dialect(session.source));
    }
    Ok(())
}

/// `BLANK_HELD`: the most bytes of blank text a deferred first fragment gathers (`on_block`);
/// a longer blank text is placed as it came (a bound on what waits, the same at every cut).
pub const BLANK_HELD: usize = 4096;

/// `blank(payload)`: escaped JSON string text that is empty or whitespace only -- spaces and the
/// escapes `\n`, `\t`, `\r` (a fragment never ends inside an escape). Other spaces (`\u0020`,
/// U+00A0) count as text: which of them an API refuses is not said.
pub fn blank(payload: &[u8]) -> bool {
    let mut at = 0;
    while at < payload.len() {
        match payload[at] {
            b' ' => at += 1,
            b'\\' if matches!(payload.get(at + 1), Some(b'n' | b't' | b'r')) => at += 2,
            _ => return false,
        }
    }
    true
}

/// `held_blank(payload)`: `blank`, and short enough to be held whole (`BLANK_HELD`): what waits,
/// and what a dialect may then leave out, is decided by this one test.
pub fn held_blank(payload: &[u8]) -> bool {
    payload.len() <= BLANK_HELD && blank(payload)
}

/// `blank_text(text)`: `blank` of decoded text (a control's string): empty or spaces, `\n`,
/// `\t`, `\r` only.
pub fn blank_text(text: &[u8]) -> bool {
    text.iter().all(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\r'))
}

/// `blank_tail(payload)`: where the blank run that ends escaped JSON string text begins
/// (`blank`'s characters; `payload.len()`: it ends in none), or `None` when the run is longer
/// than `BLANK_HELD`. Read from the end: a `\n` there is an escape when the backslashes before
/// it are even in number (`\\n` is a backslash and an `n`).
pub fn blank_tail(payload: &[u8]) -> Option<usize> {
    let mut at = payload.len();
    while at > 0 {
        if payload[at - 1] == b' ' {
            at -= 1;
        } else if at >= 2 && payload[at - 2] == b'\\' && matches!(payload[at - 1], b'n' | b't' | b'r') {
            let backslashes = payload[..at - 2].iter().rev().take_while(|&&b| b == b'\\').count();
            if backslashes % 2 == 1 {
                break; // (the backslash is escaped: a text character follows it)
            }
            at -= 2;
        } else {
            break;
        }
        if payload.len() - at > BLANK_HELD {
            return None;
        }
    }
    Some(at)
}

/// `Encoder._on_block`: the fragment protocol. A first fragment that is blank (`blank`) and not
/// the last waits when `defers` says so: blank fragments join it (at most `BLANK_HELD` bytes);
/// the first other fragment places it as it came, with what joined it; if the last is blank too,
/// the block is placed whole, every attribute with it.
pub fn on_block<E: PlaceBlocks + ?Sized>(enc: &mut E, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
    let deferred = match std::mem::take(enc.in_block()) {
        InBlock::Deferred(first) => Some(first),
        other => {
            *enc.in_block() = other;
            None
        }
    };
    let rest; // the fragment after a deferred one, its payload joined to it
    let mut block = block;
    if let Some(first) = deferred {
        if block.init {
            // (another block: none came for it, placed as it came)
            on_block(enc, &first, io)?;
        } else {
            let mut payload = first.payload.into_owned();
            payload.extend_from_slice(&block.payload);
            if held_blank(&payload) { // (the first was blank: the joined text is, when this is)
                if block.fin {
                    // it stayed blank: one whole block
                    let late = block.attrs.as_deref().unwrap_or(&[]);
                    let attrs = merged(first.attrs.as_deref().unwrap_or(&[]), late).into_owned();
                    let whole = Block { section: first.section, message: first.message, payload: Cow::Owned(payload),
                                        init: true, fin: true, attrs: (!attrs.is_empty()).then_some(attrs) };
                    return on_block(enc, &whole, io);
                }
                *enc.in_block() = InBlock::Deferred(Block { payload: Cow::Owned(payload), ..first });
                return Ok(());
            }
            on_block(enc, &Block { payload: Cow::Owned(payload), init: true, fin: false, ..first }, io)?;
            rest = Block { section: block.section, message: block.message, payload: Cow::Borrowed(&b""[..]),
                           init: false, fin: block.fin, attrs: block.attrs.clone() };
            block = &rest;
        }
    }
    if !block.init {
        match std::mem::take(enc.in_block()) {
            InBlock::Placed(mut placed) => {
                enc.write(&mut placed, &block.payload, io)?;
                if block.fin {
                    io.session.release_losses()?;
                    enc.close(placed, block.attrs.as_deref().unwrap_or(&[]), io)?;
                } else {
                    *enc.in_block() = InBlock::Placed(placed);
                }
            }
            InBlock::Ignored(head) if !block.fin => *enc.in_block() = InBlock::Ignored(head),
            InBlock::Ignored(head) => {
                io.session.release_losses()?;
                riding_lost(head.as_ref(), block.attrs.as_deref().unwrap_or(&[]), io)?;
            }
            _ => {}
        }
        return Ok(());
    }
    if !block.fin && enc.defers(block, io.session) && held_blank(&block.payload) {
        *enc.in_block() = InBlock::Deferred(block.clone().into_owned());
        return Ok(());
    }
    if block.message == REQUEST_LEVEL {
        return enc.tool_definition(block, io);
    }
    if block.message >= 0 {
        enc.message_listed();
    }
    if let Some(before) = enc.text_call_order().and_then(|order| order.moved(block)) {
        let other = block_subject(io.session.source, before, None, b"");
        let subject = format!("{} after {} {other}", subject(io.session, BlockRef::of(block), None), article(&other));
        let target = io.session.target;
        lose(io.session, target, BlockRef::of(block), &subject, "order of text and tool calls", Some("moved before it"),
             None)?;
    }
    // a block in fragments: its losses are recorded at its last one (`Session::hold_losses`)
    let placed = if block.fin {
        enc.place(block, io)?
    } else {
        io.session.hold_losses(true);
        let placed = enc.place(block, io);
        io.session.hold_losses(false);
        placed?
    };
    match placed {
        None => {
            *enc.in_block() = if block.fin { InBlock::None } else { InBlock::Ignored(Head::of(block)) };
        }
        Some(mut placed) => {
            enc.write(&mut placed, &block.payload, io)?;
            if block.fin {
                enc.close(placed, &[], io)?;
            } else {
                *enc.in_block() = InBlock::Placed(E::keep(placed));
            }
        }
    }
    Ok(())
}

/// What a dialect says about its tools (`_tools_key`, `_tool_json`, `_tool_element`).
pub trait ToolDefinitions {
    fn dialect(&self) -> &'static str;
    /// `_tools_key(attrs)`: the top-level array of a definition ("tools").
    fn tools_key(&self, _attrs: &[Attr<'_>]) -> &'static str {
        "tools"
    }
    /// `_tool_json(attrs, schema)`: the dialect's tool object for a canonical definition.
    fn tool_json(&mut self, attrs: &[Attr<'_>], schema: &[u8], io: &mut Io<'_>) -> Result<Vec<u8>>;
    /// `_tool_element(key, raw)`: `raw` as an element of the top-level array `key`.
    fn tool_element(&mut self, key: &'static str, raw: &[u8], io: &mut Io<'_>) -> Result<()>;
    /// `tools_sent.add(name)`: a tool went out (its name, the source's; a tool choice names
    /// one of them). An encoder without a tool choice to check keeps none.
    fn tool_sent(&mut self, _name: Option<Vec<u8>>) {}
}

/// The names (the source's, WTF-8) of the tools a request encoder sent (`Encoder.tools_sent`).
pub type ToolsSent = Vec<Option<Vec<u8>>>;

/// `choice_fate(choice, tools_sent)`: whether a tool choice (canonical; None for
/// `parallel_tool_calls`) goes to a target, and the loss to record when it does not. It has no
/// tool to choose when none is sent (the source's tools were all lost) or not the one it names,
/// and the APIs refuse it then ("tool_choice is only allowed when tools are specified"): a forced
/// or named choice is a loss; `auto`, `none` and `parallel_tool_calls` with no tool say nothing.
pub fn choice_fate(choice: Option<&Value>, tools_sent: &ToolsSent) -> (bool, Option<&'static str>) {
    let kind = match choice.and_then(|c| c.get("type")) {
        Some(Value::Str(kind)) => kind.as_slice(),
        _ => b"",
    };
    if tools_sent.is_empty() {
        let forced = kind == b"required" || kind == b"tool";
        return (false, forced.then_some("tool to choose (no tool is sent)"));
    }
    let name = match choice.and_then(|c| c.get("name")) {
        Some(Value::Str(name)) => Some(name.as_slice()),
        _ => None, // (not a str: in no set of names)
    };
    let sent = name.is_some_and(|name| tools_sent.iter().any(|s| s.as_deref() == Some(name)));
    if kind == b"tool" && !sent {
        return (false, Some("tool to choose (the one it names is not sent)"));
    }
    (true, None)
}

/// `Encoder._tool_definition`: a tool definition (or a tool of this dialect carried raw)
/// -> an element of the tools array.
pub fn tool_definition<E: ToolDefinitions + ?Sized>(enc: &mut E, block: &Block<'_>, io: &mut Io<'_>) -> Result<()> {
    let dialect = enc.dialect();
    let attrs = block.attrs.as_deref().unwrap_or(&[]);
    if block.section == Section::Unknown && attr_is(attrs, "dialect", dialect) {
        enc.tool_element("tools", &block.payload, io)?;
        enc.tool_sent(raw_tool_member(&block.payload, "name"));
        Ok(())
    } else if block.section == Section::Unknown {
        let subject = match raw_tool_member(&block.payload, "type").filter(|kind| !kind.is_empty()) {
            Some(kind) => format!("{} tool", String::from_utf8_lossy(&kind)),
            None => "tools entry".to_string(),
        };
        io.lose("$.tools", &lacks(&subject, dialect, "such tool", None), None)
    } else if block.section != Section::ToolDefinition {
        lose_block(io.session, dialect, BlockRef::of(block), "place for it among the tools", None, None)
    } else if !block.fin {
        // decoders read a definition whole (bounded); never in fragments
        Err(Error::new(ErrorClass::Transcode, "tool definition in fragments").in_dialect(dialect))
    } else {
        let key = enc.tools_key(attrs);
        let raw = enc.tool_json(attrs, &block.payload, io)?;
        enc.tool_element(key, &raw, io)?;
        let name = match attr(attrs, "name").map(Value::loads) {
            Some(Ok(Value::Str(name))) => Some(name),
            _ => None,
        };
        enc.tool_sent(name);
        Ok(())
    }
}

// -- loss records (wording: losses.rs) --------------------------------------------------------

/// `_where(block)`: the source path of the message a block came from.
pub fn where_(session: &Session, message: i64) -> String {
    block_path(session.source, session.kind.name(), message)
}

/// `_path(block)`: the block's `path` attribute, else `_where`.
pub fn block_source_path(session: &Session, block: BlockRef<'_>) -> String {
    match attr(block.attrs, "path").and_then(json_str) {
        Some(path) if has_attr(block.attrs, "path") => path,
        _ => where_(session, block.message),
    }
}

/// `_tool_name(block)`: a response's tool-call name (compact JSON): the source's; a
/// missing or empty one as the request side writes it (`Session::tool_name_out`: `_` +
/// a hash into openai and anthropic, whose names need a character; recorded at the
/// source's tool call: the name member may not exist).
pub fn response_tool_name(session: &mut Session, block: BlockRef<'_>) -> Result<Vec<u8>> {
    let raw = attr(block.attrs, "name");
    if let Some(name) = raw.filter(|raw| !matches!(*raw, b"\"\"" | b"null")) {
        return Ok(name.to_vec());
    }
    let path = block_source_path(session, block);
    let wire = session.tool_name_out_json(raw, &path)?;
    let mut json = Vec::with_capacity(wire.len() + 2);
    crate::value::dumps_str(wire.as_bytes(), &mut json);
    Ok(json)
}

/// `_subject(block, attrs)`: what the source dialect calls the block.
pub fn subject(session: &Session, block: BlockRef<'_>, attrs: Option<&[Attr<'_>]>) -> String {
    block_subject(session.source, block.section, Some(attrs.unwrap_or(block.attrs)), block.payload)
}

/// `_lose(block, subject, what, done, path)`.
pub fn lose(session: &mut Session, dialect: &str, block: BlockRef<'_>, subject: &str, what: &str, done: Option<&str>,
            path: Option<&str>) -> Result<()> {
    let path = match path {
        Some(p) if !p.is_empty() => p.to_string(),
        _ => block_source_path(session, block),
    };
    session.lose(&path, lacks(subject, dialect, what, done), None)
}

/// `_lose_block`: the block (or something about it) is not carried.
pub fn lose_block(session: &mut Session, dialect: &str, block: BlockRef<'_>, what: &str, done: Option<&str>,
                  attrs: Option<&[Attr<'_>]>) -> Result<()> {
    let subject = subject(session, block, attrs);
    lose(session, dialect, block, &subject, what, done, None)
}

/// `Encoder._other_choice`: a block of another choice than the first (openai `n > 1`) into a
/// target with one answer: recorded at its first fragment, not carried (`true`). Checked
/// before anything of the open block is touched: a stream interleaves the choices' deltas, and
/// the first choice's block goes on after it.
pub fn other_choice(session: &mut Session, dialect: &str, block: &Block<'_>) -> Result<bool> {
    if block.message == 0 {
        return Ok(false);
    }
    if block.init {
        lose_block(session, dialect, BlockRef::of(block), "choices (n > 1)", Some("only the first choice is sent"), None)?;
    }
    Ok(true)
}

/// `_lose_moved`: a block sent in a `role` message whose source message had another role
/// (attr `role`: ollama takes `images` and `tool_calls` on any message): its place is lost.
pub fn lose_moved(session: &mut Session, dialect: &str, block: BlockRef<'_>, attrs: &[Attr<'_>], role: &str) -> Result<()> {
    let Some(source_role) = attr_str(attrs, "role").filter(|source_role| source_role != role) else { return Ok(()) };
    let sent = if role == "user" { "sent in a user message" } else { "sent in an assistant message" };
    lose_block(session, dialect, block, &format!("place for it in its {source_role} message"), Some(sent), Some(attrs))
}

/// `_lose_unplaced`: a block the target has no place for at all. A message of a role the
/// source knows and the target does not is one loss, however many parts it has.
pub fn lose_unplaced(session: &mut Session, dialect: &str, block: BlockRef<'_>) -> Result<()> {
    let what = no_place(block.section).unwrap_or("such content");
    if block.section == Section::Unknown && unknown_role(session.source, Some(block.attrs)) {
        if session.lost_message == Some(block.message) {
            return Ok(());
        }
        session.lost_message = Some(block.message);
        return lose_block(session, dialect, block, what, Some("the message is not sent"), None);
    }
    lose_block(session, dialect, block, what, None, None)
}

/// `_drops_typed_call`: whether `block` is an openai tool call of a type other than
/// function (a custom tool's free-form call), or a result answering one, going to a
/// target that has no such tools (their definitions are lost as `custom tool`): not
/// sent, one loss per call and per result. Carried, the call would name a tool the
/// target was never given, and a result without its call is one the API rejects.
pub fn drops_typed_call(session: &mut Session, dialect: &str, block: BlockRef<'_>, attrs: &[Attr<'_>]) -> Result<bool> {
    if block.section == Section::ToolCall && session.source != dialect {
        if let Some(kind) = attr_str(attrs, "type") {
            lose(session, dialect, block, &format!("{kind} tool call"), "such tool", Some("not sent, nor its result"), None)?;
            return Ok(true);
        }
    }
    if block.section == Section::ToolResult {
        if let Some(kind) = attr(attrs, "call_type") {
            if !attr_truthy(attrs, "in_result") {
                let what = format!("{} answering a {} tool call", subject(session, block, Some(attrs)), py_str(kind));
                lose(session, dialect, block, &what, "such tool", Some("not sent"), None)?;
            }
            return Ok(true);
        }
    }
    Ok(false)
}

/// `_riding_lost`: the close of a block not placed: the members of its tool_result that came
/// after the block began ride on it (anthropic `is_error`, `cache_control`), and are the
/// result's losses, not the block's (they were dropped unrecorded).
fn riding_lost(block: BlockRef<'_>, late: &[Attr<'_>], io: &mut Io<'_>) -> Result<()> {
    let target = io.session.target;
    lose_is_error(io.session, target, block, late)?;
    for key in [RESULT_CACHE_CONTROL, MESSAGE_CACHE_CONTROL] {
        if attr(late, key).is_some_and(|raw| raw != b"null") {
            lose_field(io.session, target, block, key, Some(late), None)?;
        }
    }
    Ok(())
}

/// `_lose_is_error`: a result's error flag (anthropic `is_error`; after the content it
/// rides on the result's last block, an image too) the target has no field for, named as
/// the tool_result's whichever block brought it.
pub fn lose_is_error(session: &mut Session, dialect: &str, block: BlockRef<'_>, attrs: &[Attr<'_>]) -> Result<()> {
    if attr_truthy(attrs, "is_error") {
        let subject = field_subject(session.source, "is_error", Section::ToolResult, None);
        lose(session, dialect, block, &subject, "field for it", None, None)?;
    }
    Ok(())
}

/// `_lose_field`: a block attribute the target has no member for, at the field's own
/// path where the block has one. `attrs`: None for the block's own.
pub fn lose_field(session: &mut Session, dialect: &str, block: BlockRef<'_>, key: &str, attrs: Option<&[Attr<'_>]>,
                  done: Option<&str>) -> Result<()> {
    lose_field_as(session, dialect, block, key, attrs, "field for it", done)
}

/// `lose_field` with what the target lacks (`_lose_field(..., what=)`: no more of it, say).
pub fn lose_field_as(session: &mut Session, dialect: &str, block: BlockRef<'_>, key: &str, attrs: Option<&[Attr<'_>]>,
                     what: &str, done: Option<&str>) -> Result<()> {
    let attrs = attrs.unwrap_or(block.attrs);
    if attr(attrs, key).is_some_and(|raw| raw == b"null" || crate::losses::attr_says_nothing(key, raw)) {
        return Ok(()); // a null one is nothing lost, nor one at its default (`citations: []`)
    }
    // (extras members that say nothing: none is lost)
    let Some(attrs) = crate::losses::extras_said(key, attrs) else { return Ok(()) };
    let attrs: &[Attr<'_>] = &attrs;
    let path = [attrs, block.attrs]
        .into_iter()
        .find_map(|a| attr(a, "path").filter(|raw| truthy(raw)).and_then(json_str));
    let subject = if key == MESSAGE_CACHE_CONTROL {
        // (named by its message's role: the block's first attributes)
        let mut merged: Vec<Attr<'_>> = block.attrs.to_vec();
        for (name, raw) in attrs {
            match merged.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = raw.clone(),
                None => merged.push((name.clone(), raw.clone())),
            }
        }
        field_subject(session.source, key, block.section, Some(&merged))
    } else {
        field_subject(session.source, key, block.section, Some(attrs))
    };
    let field = path.map(|p| field_path(&p, key));
    lose(session, dialect, block, &subject, what, done, field.as_deref())
}

/// `Encoder._ARGS_LACK`.
pub const ARGS_LACK: &str = "tool arguments other than a JSON object";

/// `_lose_raw_arguments`: tool-call arguments that are not a JSON object.
pub fn lose_raw_arguments(session: &mut Session, dialect: &str, block: BlockRef<'_>) -> Result<()> {
    let what = format!("arguments of a {} that are not a JSON object", subject(session, block, None));
    lose(session, dialect, block, &what, ARGS_LACK, Some("carried as {\"_raw_arguments\": \"<the text>\"}"), None)
}

/// `_arguments_object`: the JSON object a call's held arguments become, the loss recorded.
pub fn arguments_object(session: &mut Session, dialect: &str, args: HeldArguments, block: BlockRef<'_>) -> Result<Vec<u8>> {
    let (data, faithful) = args.result(session);
    if !faithful {
        lose_raw_arguments(session, dialect, block)?;
    }
    Ok(data)
}

/// `_lose_signature`: a reasoning block's signature, for a target with no field for it
/// (checked on the first fragment's attributes and on the late ones).
pub fn lose_signature(session: &mut Session, dialect: &str, block: BlockRef<'_>, attrs: &[Attr<'_>]) -> Result<()> {
    if block.section == Section::AssistantReasoning && attr_truthy(attrs, "signature") {
        lose_field(session, dialect, block, "signature", Some(attrs), Some("the thinking cannot be replayed"))?;
    }
    Ok(())
}

/// `text[n:]` of WTF-8 text (Python slices code points): `ext.path[2:]`, a top-level
/// extension's key.
pub fn skip_chars(text: &[u8], n: usize) -> &[u8] {
    let mut starts = text.iter().enumerate().filter(|(_, &b)| b & 0xC0 != 0x80).map(|(i, _)| i);
    starts.nth(n).map_or(&text[text.len()..], |at| &text[at..])
}

/// `path.rsplit(".", 1)[1]`: the member an extension of a message names (WTF-8).
pub fn last_segment(path: &[u8]) -> &[u8] {
    path.iter().rposition(|&b| b == b'.').map_or(path, |dot| &path[dot + 1..])
}

/// `message_member(ext)`: the member of a message an extension names, its path after
/// `$.messages[<i>].` whole -- a key may hold `.` (`{"a.b": 1}` is member `a.b`): the path
/// is never split. Another path (an event producer's own): `last_segment`.
pub fn message_member(path: &[u8], message: Option<i64>) -> &[u8] {
    if let Some(message) = message {
        if let Some(key) = path.strip_prefix(format!("$.messages[{message}].").as_bytes()) {
            return key;
        }
    }
    last_segment(path)
}

/// `foreign_extension`: an extension of another dialect: lossless ones vanish, others are losses.
pub fn foreign_extension(session: &mut Session, dialect: &str, ext: &Extension<'_>) -> Result<()> {
    if ext.lossless {
        return Ok(());
    }
    let own = match ext.path.strip_prefix(b"$.") {
        Some(name) if ext.message.is_none() && session.kind == crate::session::Kind::Request => {
            crate::dialects::fields::request_fields(dialect).and_then(|fields| crate::dialects::fields::field(fields, name)).map(|_| name)
        }
        _ => None,
    };
    match own {
        // `foreign_field`: a request's top-level field the target has under that name is not its field
        Some(name) => {
            let what = format!("such field of {}'s (its own {} is not read from another dialect's body)", ext.dialect,
                               String::from_utf8_lossy(name));
            session.lose_lacking(&[&ext.path], dialect, &what, None, Some(&ext.dialect))
        }
        None => session.lose_lacking(&[&ext.path], dialect, "such field", None, Some(&ext.dialect)),
    }
}

// -- tool arguments ---------------------------------------------------------------------------

/// Records the kind of the first token of the held arguments.
struct FirstToken(Option<u8>);

impl Sink for FirstToken {
    fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
        if self.0.is_none() {
            self.0 = Some(token.kind());
        }
        Ok(())
    }
}

/// `HeldArguments`: tool-call arguments of another dialect (canonical escaped text), held
/// until they are known to be a JSON object, for a target that carries arguments as an
/// object (anthropic `input`, ollama `arguments`).
///
/// Outcome: a JSON object is written as it is; empty text becomes `{}`; anything else
/// becomes `{"_raw_arguments": "<the text>"}`, and the encoder records the loss
/// (`arguments_object`). One call is held at a time (rule `reason`).
pub struct HeldArguments {
    hold: ByteHold,
    first: FirstToken,
    bad: bool,
    tokenizer: Tokenizer,
    /// one fragment's text, unescaped (the buffer is reused: a streamed call's arguments
    /// come in hundreds of fragments, each with escapes)
    text: Vec<u8>,
}

impl HeldArguments {
    pub fn new(session: &mut Session, reason: &str) -> Self {
        let limits = Limits { max_depth: session.options.max_depth, ..Limits::default() };
        HeldArguments {
            hold: session.reorder.byte_hold(reason),
            first: FirstToken(None),
            bad: false,
            tokenizer: Tokenizer::new(limits),
            text: Vec::new(),
        }
    }

    pub fn feed(&mut self, escaped: &[u8], session: &mut Session) -> Result<()> {
        self.text.clear();
        unescape_json_text_into(escaped, &mut self.text)?;
        self.hold.write(&mut session.reorder, &self.text)?;
        if !self.bad && self.tokenizer.feed(&self.text, &mut self.first).is_err() {
            // not JSON, a duplicate key, too deep: not one object
            self.bad = true;
        }
        Ok(())
    }

    /// (the object's JSON, whether it is faithful).
    pub fn result(mut self, session: &mut Session) -> (Vec<u8>, bool) {
        let mut text = Vec::new();
        self.hold.take_into(&mut session.reorder, &mut text);
        if text.iter().all(|b| b" \t\n\r\x0b\x0c".contains(b)) {
            return (b"{}".to_vec(), true);
        }
        if !self.bad && self.tokenizer.close(&mut self.first).is_err() {
            self.bad = true;
        }
        if !self.bad && self.first.0 == Some(Token::ObjectStart.kind()) {
            return (text, true);
        }
        let mut out = b"{\"_raw_arguments\":".to_vec();
        dumps_str(&text, &mut out);
        out.push(b'}');
        (out, false)
    }
}

// -- controls and schemas ----------------------------------------------------------------------

/// `merged_reasoning`: one `reasoning` control from several (anthropic `thinking` and
/// `output_config.effort`): their values merge (`dict.update`: a key keeps its first place,
/// takes its last value); each target's mapping then decides.
pub fn merged_reasoning(items: &[Control<'_>], target: &str, session: &mut Session) -> Result<Control<'static>> {
    // (a control's value is JSON text its decoder wrote: it parses)
    let values: Vec<Value> = items.iter().map(|c| Value::loads(&c.value).unwrap_or(Value::Null)).collect();
    let fields: Vec<ReasoningField<'_>> = items.iter().zip(&values)
        .map(|(c, value)| ReasoningField { key: c.key.as_deref(), dialect: c.dialect.as_deref(), name: &c.name, value })
        .collect();
    let merged = merged_fields(&fields, target, session)?;
    let last = items.last();
    Ok(Control {
        name: Cow::Borrowed("reasoning"),
        value: Cow::Owned(merged.to_json()),
        dialect: last.and_then(|c| c.dialect.as_ref()).map(|d| Cow::Owned(d.to_string())),
        key: last.and_then(|c| c.key.as_ref()).map(|k| Cow::Owned(k.to_string())),
        raw: None,
    })
}

/// `merged_reasoning`'s value, of fields given by their parts (the anthropic encoder's own
/// copies of its controls): the members merged, `at` the key of the field each came from
/// (`reasoning_place`); the members a later field sets again recorded (`lose_overridden_of`).
pub fn merged_fields(fields: &[ReasoningField<'_>], target: &str, session: &mut Session) -> Result<Value> {
    lose_overridden_of(fields, target, session)?;
    let mut members: Vec<(Vec<u8>, Value)> = Vec::new();
    let mut at: Vec<(Vec<u8>, Value)> = Vec::new();
    for field in fields {
        if let Value::Object(more) = field.value {
            let key = field.key.map_or(Value::Null, |key| Value::Str(key.as_bytes().to_vec()));
            for (member, value) in more {
                merge_member(&mut at, member.clone(), key.clone());
                merge_member(&mut members, member.clone(), value.clone());
            }
        }
    }
    merge_member(&mut members, b"at".to_vec(), Value::Object(at));
    Ok(Value::Object(members))
}

/// A reasoning field as `merged_fields` reads it (a control, or an encoder's copy of one).
pub struct ReasoningField<'a> {
    pub key: Option<&'a str>,
    pub dialect: Option<&'a str>,
    pub name: &'a str,
    pub value: &'a Value,
}

/// `lose_overridden`: each member of a reasoning field that a later field sets too, to another
/// value (openai `reasoning_effort` and OpenRouter's `reasoning.effort`): the later one is sent,
/// this one recorded at its own field; an earlier field's uncarried members are recorded as its
/// own (the merged value keeps the later field's).
fn lose_overridden_of(fields: &[ReasoningField<'_>], target: &str, session: &mut Session) -> Result<()> {
    for (i, field) in fields.iter().enumerate() {
        let Value::Object(members) = field.value else { continue };
        for (member, given) in members {
            let name = String::from_utf8_lossy(member);
            let Some(later) = fields[i + 1..].iter().rev().find_map(|f| f.value.get(&name)) else { continue };
            if member == b"uncarried" {
                lose_uncarried_of(field.key, field.dialect, field.value, target, session)?;
            } else if later.to_json() != given.to_json() {
                let place = control_place(field.key, field.name);
                let where_ = reasoning_place(field.value, &name, &place);
                let what = format!("second {name} for the reasoning ({})", crate::unicode::py_value_repr(given));
                let reason = lacks(path_subject(&where_), target, &what, Some("the later field's is sent"));
                session.lose(where_.as_bytes(), reason.as_bytes(), field.dialect)?;
            }
        }
    }
    Ok(())
}

/// `_REASONING_MEMBERS`: the member of its source field a canonical reasoning member is, where
/// the field is an object (anthropic's thinking and output_config, OpenRouter's reasoning).
const REASONING_MEMBERS: [(&str, &str, &str); 5] = [
    ("$.thinking", "budget_tokens", "budget_tokens"), ("$.output_config", "effort", "effort"),
    ("$.reasoning", "budget_tokens", "max_tokens"), ("$.reasoning", "effort", "effort"), ("$.reasoning", "enabled", "enabled"),
];

/// `reasoning_place(value, member, where)`: where `member` of a reasoning value was in the
/// source. `where_`: the control's place (its field; a merged one's is its last field's, and
/// its `at` names the field each member came from). A member of an object field is its own
/// path there: `$.thinking.budget_tokens`, `$.output_config.effort`, `$.reasoning.max_tokens`.
pub fn reasoning_place(value: &Value, member: &str, where_: &str) -> String {
    let place = match value.get("at").and_then(|at| at.get(member)) {
        Some(Value::Str(key)) => format!("$.{}", String::from_utf8_lossy(key)),
        _ => where_.to_string(),
    };
    match REASONING_MEMBERS.iter().find(|(field, canonical, _)| *field == place && *canonical == member) {
        Some((_, _, own)) => format!("{place}.{own}"),
        None => place,
    }
}

/// `merged[key] = value` (dict order: a key met again keeps its place).
fn merge_member(members: &mut Vec<(Vec<u8>, Value)>, key: Vec<u8>, value: Value) {
    match members.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => members.push((key, value)),
    }
}

const EMPTY_OBJECT_SCHEMA: &[u8] = b"{\"type\":\"object\",\"properties\":{}}";

/// Schema keywords whose value is a schema, a list of schemas or a map of them
/// (`_SUBSCHEMA`, `_SUBSCHEMA_LISTS`, `_SUBSCHEMA_MAPS`).
const SUBSCHEMA: &[&[u8]] = &[b"items", b"additionalItems", b"additionalProperties", b"not", b"if", b"then", b"else",
                              b"contains", b"propertyNames", b"unevaluatedItems", b"unevaluatedProperties"];
const SUBSCHEMA_LISTS: &[&[u8]] = &[b"items", b"anyOf", b"oneOf", b"allOf", b"prefixItems"];
const SUBSCHEMA_MAPS: &[&[u8]] = &[b"properties", b"patternProperties", b"dependentSchemas", b"$defs", b"definitions", b"defs"];
/// `_NULL_IS_A_VALUE`: keywords whose null is a value.
const NULL_IS_A_VALUE: &[&[u8]] = &[b"const", b"default"];

/// `without_null_keywords`, in place: a schema's keywords whose value is null go, in it and in
/// every schema it holds (`const` and `default` keep theirs; data is not looked into).
/// Whether any went.
pub fn without_null_keywords(schema: &mut Value) -> bool {
    let Value::Object(members) = schema else { return false };
    let before = members.len();
    members.retain(|(key, value)| *value != Value::Null || NULL_IS_A_VALUE.contains(&key.as_slice()));
    let mut changed = members.len() != before;
    for (key, value) in members.iter_mut() {
        changed |= without_null_subschemas(key, value);
    }
    changed
}

/// `_subschemas`: null keywords gone from the schemas a keyword's value holds.
fn without_null_subschemas(key: &[u8], value: &mut Value) -> bool {
    match value {
        Value::Object(map) if SUBSCHEMA_MAPS.contains(&key) => {
            map.iter_mut().fold(false, |changed, (_, schema)| without_null_keywords(schema) | changed)
        }
        Value::Array(list) if SUBSCHEMA_LISTS.contains(&key) => {
            list.iter_mut().fold(false, |changed, schema| without_null_keywords(schema) | changed)
        }
        _ if SUBSCHEMA.contains(&key) => without_null_keywords(value),
        _ => false,
    }
}

/// A schema's text without its null keywords (`None`: it has none; no `null` in the text,
/// none is looked for).
fn schema_without_nulls(schema_raw: &[u8]) -> Result<Option<Vec<u8>>> {
    // (one searcher for every schema: building memmem's costs more than the search)
    static NULL: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"null"));
    if NULL.find(schema_raw).is_none() {
        return Ok(None);
    }
    let mut schema = Value::loads(schema_raw)?;
    if !without_null_keywords(&mut schema) {
        return Ok(None);
    }
    let mut text = Vec::with_capacity(schema_raw.len());
    crate::value::dumps(&schema, &mut text);
    Ok(Some(text))
}

/// `object_schema`: a tool's parameter schema as openai and anthropic take it (a JSON Schema
/// of type object), without null keywords (`without_null_keywords`: no loss). Another
/// dialect's schema without `type` gets `"type":"object"` with no loss; one of another type,
/// or not an object, is replaced by an empty object schema (recorded). `name`: the tool's
/// `name` attribute (JSON text), for the loss. The schema is appended to `out` (the tool
/// being written). Whether the schema written has `allOf`, `anyOf` or `oneOf` at its top (anthropic
/// refuses it: `flat_schema`), read as the check passes its members.
pub fn object_schema(schema_raw: &[u8], session: &mut Session, name: Option<&[u8]>, out: &mut Vec<u8>) -> Result<bool> {
    let cleaned = schema_without_nulls(schema_raw)?;
    let schema_raw = cleaned.as_deref().unwrap_or(schema_raw);
    // a decoder's schema is dumps output: read in place (compact.rs), its `type` found as the
    // check passes it (one pass over a schema that may be most of a request); other text is parsed
    let (mut members, mut kind_value, mut combined) = (0usize, None, false);
    let canonical = Raw::canonical_members(schema_raw, |key, value| {
        members += 1;
        if key == b"type" {
            kind_value = Some(value); // (the last of a repeated key, as `get` reads it)
        }
        combined |= COMBINATORS.contains(&key);
    });
    let kind = match canonical {
        Some(schema) if schema.is_object() => SchemaKind::of_object(kind_value, members == 0),
        Some(_) => SchemaKind::Other,
        None => {
            let schema = Value::loads(schema_raw)?;
            combined = schema.as_object().is_some_and(|m| m.iter().any(|(k, _)| COMBINATORS.contains(&k.as_slice())));
            SchemaKind::of(&schema)
        }
    };
    match kind {
        SchemaKind::Object => {
            out.extend_from_slice(schema_raw);
            return Ok(combined);
        }
        SchemaKind::Untyped { empty } => {
            out.extend_from_slice(b"{\"type\":\"object\"");
            if empty {
                out.push(b'}');
            } else {
                out.push(b',');
                out.extend_from_slice(&schema_raw[1..]);
            }
            return Ok(combined);
        }
        SchemaKind::Other => {}
    }
    let subject = format!("parameters of tool {}, not an object schema", tool_name_repr(name)?);
    let reason = lacks(&subject, session.target, "tool parameters other than an object schema", Some("an empty object schema is written"));
    session.lose("$.tools", &reason, None)?;
    out.extend_from_slice(EMPTY_OBJECT_SCHEMA);
    Ok(false)
}

/// `COMBINATORS`: the combining keywords anthropic refuses at the top of a tool schema.
pub const COMBINATORS: [&[u8]; 3] = [b"allOf", b"anyOf", b"oneOf"];

/// A capacity for a tool's JSON made of `attrs` and `schema`: one allocation, not a growth series.
pub fn tool_capacity(attrs: &[Attr<'_>], schema: &[u8]) -> usize {
    64 + schema.len() + attrs.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>()
}

/// What `object_schema` makes of a schema: `type` "object", an object without `type`, else.
enum SchemaKind {
    Object,
    Untyped { empty: bool },
    Other,
}

impl SchemaKind {
    fn of<'a, D: Data<'a>>(schema: D) -> SchemaKind {
        if !schema.is_object() {
            return SchemaKind::Other;
        }
        SchemaKind::of_object(schema.get("type"), schema.members().next().is_none())
    }

    /// An object schema's kind by its `type` member (None: absent) and whether it has none.
    fn of_object<'a, D: Data<'a>>(kind: Option<D>, empty: bool) -> SchemaKind {
        match kind {
            Some(kind) if kind.str_is("object") => SchemaKind::Object,
            Some(_) => SchemaKind::Other,
            None => SchemaKind::Untyped { empty },
        }
    }
}

/// `repr(name)` of a tool's name attribute (its JSON text; absent: None).
pub fn tool_name_repr(name: Option<&[u8]>) -> Result<String> {
    Ok(match name.map(Value::loads).transpose()? {
        None | Some(Value::Null) => "None".to_string(),
        Some(Value::Str(text)) => crate::json::py_str_repr(&text),
        Some(Value::Bool(b)) => (if b { "True" } else { "False" }).to_string(),
        Some(_) => String::from_utf8_lossy(name.unwrap_or_default()).into_owned(),
    })
}


// -- one target message ---------------------------------------------------------------------

/// How a member's value opens: `[`, `{`, `"` or raw (written by the caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opener {
    Array,
    Object,
    String,
    Raw,
}

impl Opener {
    pub fn open(self) -> &'static [u8] {
        match self {
            Opener::Array => b"[",
            Opener::Object => b"{",
            Opener::String => b"\"",
            Opener::Raw => b"",
        }
    }

    pub fn close(self) -> &'static [u8] {
        match self {
            Opener::Array => b"]",
            Opener::Object => b"}",
            Opener::String => b"\"",
            Opener::Raw => b"",
        }
    }

    pub fn container(self) -> bool {
        matches!(self, Opener::Array | Opener::Object)
    }
}

/// `first_member(key, opener)`: the member a `MessageAssembler` opens with the brace,
/// with its JSON text (`"content":"`). A dialect makes its own as a constant:
/// `First { key: "thinking", opener: Opener::String, opening: b"\"thinking\":\"" }`.
#[derive(Clone, Copy, Debug)]
pub struct First {
    pub key: &'static str,
    pub opener: Opener,
    /// `"key":` and the opener
    pub opening: &'static [u8],
}

/// The usual first members: a string content, a content-part list.
pub const STRING_CONTENT: First = First { key: "content", opener: Opener::String, opening: b"\"content\":\"" };
pub const PARTS_CONTENT: First = First { key: "content", opener: Opener::Array, opening: b"\"content\":[" };

#[derive(Clone, Copy)]
struct Member {
    key: &'static str,
    /// None: the member streams (or streamed) on the message's writer
    hold: Option<WriterId>,
    opener: Opener,
}

const NO_MEMBER: Member = Member { key: "", hold: None, opener: Opener::Raw };

/// A message's members: the first few inline (a message has few; no allocation per
/// message), any more after them.
struct MemberList {
    inline: [Member; 6],
    len: usize,
    more: Vec<Member>,
}

impl MemberList {
    fn new() -> Self {
        MemberList { inline: [NO_MEMBER; 6], len: 0, more: Vec::new() }
    }

    fn push(&mut self, member: Member) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = member,
            None => self.more.push(member),
        }
        self.len += 1;
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, i: usize) -> Option<&Member> {
        self.iter().nth(i)
    }

    fn iter(&self) -> impl Iterator<Item = &Member> {
        self.inline[..self.len.min(self.inline.len())].iter().chain(self.more.iter())
    }
}

/// One target message object being written (`MessageAssembler`): the first member
/// streams straight to the message's writer; a block for another member is written into
/// that member's hold, and the held members are appended when the message closes.
pub struct MessageAssembler {
    /// the message's writer (the output, or a hold of messages)
    pub out: WriterId,
    reason: &'static str,
    members: MemberList,
    streaming: Option<usize>,
    ended: Vec<&'static str>,
    /// (key as WTF-8: an extension's member may hold a lone surrogate, value)
    late_scalars: Option<Hold<(Vec<u8>, Vec<u8>)>>,
    held: bool,
}

impl MessageAssembler {
    /// `head`: the first members as JSON text (`"role":"user"`), written with the brace.
    /// `first`: the member that streams first, opened in the same write.
    pub fn new(out: WriterId, io: &mut Io<'_>, reason: &'static str, head: &[u8], first: Option<First>) -> Result<Self> {
        let mut msg = MessageAssembler { out, reason, members: MemberList::new(), streaming: None, ended: Vec::new(), late_scalars: None, held: false };
        match first {
            None => io.json(out, |w, b| w.begin_object(head, b))?,
            Some(first) => {
                msg.members.push(Member { key: first.key, hold: None, opener: first.opener });
                msg.streaming = Some(0);
                // `{head,"key":<opener>` in one write
                io.json(out, |w, b| {
                    if head.is_empty() {
                        w.begin_object(first.opening, b);
                    } else {
                        w.begin_object(head, b);
                        b.push(b',');
                        b.extend_from_slice(first.opening);
                    }
                })?;
                if first.opener.container() {
                    io.push_first(out);
                }
            }
        }
        Ok(msg)
    }

    fn late(&mut self, io: &mut Io<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        let reason = self.reason;
        let hold = self.late_scalars.get_or_insert_with(|| io.session.reorder.hold(reason));
        hold.append(&mut io.session.reorder, (key.to_vec(), value.to_vec()), char_len(key) + value.len() as u64)
    }

    /// A small member written whole (role, an id): now, or at close if a member is mid-stream.
    pub fn scalar(&mut self, io: &mut Io<'_>, key: &str, value: &[u8]) -> Result<()> {
        if self.streaming.is_none() {
            return io.json(self.out, |w, b| w.raw_member(key, value, b));
        }
        self.late(io, key.as_bytes(), value)
    }

    /// A small member written when the message closes, whatever else is streaming.
    /// `key`: WTF-8 (`&str`, or an extension's last segment).
    pub fn trailing(&mut self, io: &mut Io<'_>, key: impl AsRef<[u8]>, value: &[u8]) -> Result<()> {
        self.late(io, key.as_ref(), value)
    }

    /// The writer for member `key`, opened on first use. Arrays and objects: write
    /// elements/members with the writer; strings: escaped fragments with `Io::write`.
    pub fn member(&mut self, io: &mut Io<'_>, key: &'static str, opener: Opener) -> Result<WriterId> {
        if self.ended.contains(&key) {
            return Err(Error::new(
                ErrorClass::Transcode,
                format!("member {key:?} was ended; the encoder must not write to it again"),
            ));
        }
        if let Some(member) = self.members.iter().find(|m| m.key == key) {
            return Ok(member.hold.unwrap_or(self.out));
        }
        if self.streaming.is_none() {
            match opener {
                Opener::Array | Opener::Object => io.json(self.out, |w, b| w.open_member(key, opener.open(), b))?,
                Opener::String => io.json(self.out, |w, b| w.string_member_open(key, b))?,
                Opener::Raw => io.json(self.out, |w, b| w.raw_member(key, b"", b))?,
            }
            self.members.push(Member { key, hold: None, opener });
            self.streaming = Some(self.members.len() - 1);
            return Ok(self.out);
        }
        let writer = io.writers.held(&mut io.session.reorder, self.reason);
        if opener.container() {
            io.push_first(writer);
        }
        self.members.push(Member { key, hold: Some(writer), opener });
        self.held = true;
        Ok(writer)
    }

    pub fn has(&self, key: &str) -> bool {
        self.members.iter().any(|m| m.key == key)
    }

    pub fn ended(&self, key: &str) -> bool {
        self.ended.contains(&key)
    }

    /// No more data goes to `key`: if it is the streaming member, close it now, so that
    /// the next member streams instead of being held.
    pub fn end_member(&mut self, io: &mut Io<'_>, key: &'static str) -> Result<()> {
        let Some(i) = self.members.iter().position(|m| m.key == key) else { return Ok(()) };
        if self.streaming != Some(i) {
            return Ok(());
        }
        let Some(&Member { opener, .. }) = self.members.get(i) else { return Ok(()) };
        if opener.container() {
            io.pop_first(self.out);
        }
        io.write(self.out, opener.close())?;
        self.streaming = None;
        self.ended.push(key);
        Ok(())
    }

    /// The rest of the object -- the streaming member's closer, the held members, the
    /// brace -- written in one piece.
    pub fn close(mut self, io: &mut Io<'_>) -> Result<()> {
        let out = self.out;
        let closer = match self.streaming.and_then(|i| self.members.get(i)) {
            Some(&Member { opener, .. }) => {
                if opener.container() {
                    io.pop_first(out);
                }
                opener.close()
            }
            None => b"",
        };
        if !self.held && self.late_scalars.is_none() {
            // the usual end, `"}` / `]}` / `}`: no buffer
            io.pop_first(out);
            return match closer.first() {
                Some(&c) => io.write(out, &[c, b'}']),
                None => io.write(out, b"}"),
            };
        }
        let mut tail: Vec<u8> = Vec::with_capacity(256);
        tail.extend_from_slice(closer);
        for member in self.members.iter() {
            if let Some(hold) = member.hold {
                tail.extend_from_slice(io.sep(out));
                // (a member key is the codec's own name, a plain ASCII word: its JSON is
                // itself quoted, no escaping to look for)
                debug_assert!(!member.key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20));
                tail.push(b'"');
                tail.extend_from_slice(member.key.as_bytes());
                tail.push(b'"');
                tail.push(b':');
                tail.extend_from_slice(member.opener.open());
                io.writers.take(hold, &mut io.session.reorder, &mut tail);
                tail.extend_from_slice(member.opener.close());
            }
        }
        if let Some(mut late) = self.late_scalars.take() {
            let items: Vec<(Vec<u8>, Vec<u8>)> = late.drain(&mut io.session.reorder).collect();
            for (key, value) in items {
                tail.extend_from_slice(io.sep(out));
                key_bytes(&key, &mut tail);
                tail.push(b':');
                tail.extend_from_slice(&value);
            }
        }
        io.pop_first(out);
        tail.push(b'}');
        io.write(out, &tail)
    }
}

// -- a body whose system prompt is a message of the list ----------------------------------------

/// The encoder's message state, called back by `MessageListBody` to close the message
/// being written (`close_message` of `MessageListBody.__init__`).
pub trait MessageCloser {
    fn close_message(&mut self, body: &mut MessageListBody, io: &mut Io<'_>) -> Result<()>;
}

enum Later {
    /// (key, WTF-8; its raw JSON)
    Member(Vec<u8>, Vec<u8>),
    Element(&'static str, Vec<u8>),
}

/// `MessageListBody`: the top level of a request body whose system prompt is a message of
/// the list (openai, ollama), written as events come.
///
/// * One top-level array is open at a time (`messages`, `tools`); writing any other
///   member closes it.
/// * System first: until `SystemEnd`, conversation messages go into a hold
///   (`<dialect>:messages-before-system`); top-level system messages open the list and
///   the held ones follow.
/// * A top-level system that opened the list before other fields came: those fields wait
///   (`<dialect>:fields-inside-messages`) until the list is complete.
pub struct MessageListBody {
    pub out: WriterId,
    pub dialect: &'static str,
    /// the top-level array open on `out`
    pub top: Option<&'static str>,
    pub messages_opened: bool,
    pub system_final: bool,
    pub messages_ended: bool,
    /// messages written before SystemEnd
    pending: Option<WriterId>,
    later: Hold<Later>,
}

/// Room for `extra` more bytes in `out` (and some for what follows them): when it must grow,
/// a new buffer with what it holds (a held message list is most of a body; growing `out` in
/// place would have realloc copy its whole old capacity, the chunk's worth a feed reserved).
fn room_for(out: &mut Vec<u8>, extra: usize) {
    if out.capacity() - out.len() < extra {
        let mut grown = Vec::with_capacity(out.len() + extra + extra / 4 + 256);
        grown.extend_from_slice(out);
        *out = grown;
    }
}

/// `<dialect>:<rule>`, a hold reason of `MessageListBody` (the two dialects' own are
/// constants: no string made per request).
fn list_reason(dialect: &str, rule: &str) -> Cow<'static, str> {
    match (dialect, rule) {
        ("openai", "fields-inside-messages") => Cow::Borrowed("openai:fields-inside-messages"),
        ("openai", "messages-before-system") => Cow::Borrowed("openai:messages-before-system"),
        ("ollama", "fields-inside-messages") => Cow::Borrowed("ollama:fields-inside-messages"),
        ("ollama", "messages-before-system") => Cow::Borrowed("ollama:messages-before-system"),
        _ => Cow::Owned(format!("{dialect}:{rule}")),
    }
}

impl MessageListBody {
    pub fn new(io: &mut Io<'_>, dialect: &'static str) -> Result<Self> {
        let later = io.session.reorder.hold(&list_reason(dialect, "fields-inside-messages"));
        let body = MessageListBody {
            out: WriterId::OUT,
            dialect,
            top: None,
            messages_opened: false,
            system_final: false,
            messages_ended: false,
            pending: None,
            later,
        };
        io.json(body.out, |w, b| w.begin_object(b"", b))?;
        Ok(body)
    }

    pub fn open_array<C: MessageCloser + ?Sized>(&mut self, name: &'static str, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        if self.top == Some(name) {
            return Ok(());
        }
        self.close_array(c, io)?;
        io.json(self.out, |w, b| w.open_member(name, b"[", b))?;
        self.top = Some(name);
        self.messages_opened |= name == "messages";
        Ok(())
    }

    pub fn close_array<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        if let Some(top) = self.top {
            if top == "messages" {
                c.close_message(self, io)?;
            }
            io.json(self.out, |w, b| w.end_array(b))?;
            self.top = None;
        }
        Ok(())
    }

    fn list_unfinished(&self) -> bool {
        self.top == Some("messages") && !self.messages_ended
    }

    /// A top-level member written whole.
    /// `key`: WTF-8 (`&str`, or an extension's path after `$.`).
    pub fn member<C: MessageCloser + ?Sized>(&mut self, key: impl AsRef<[u8]>, raw: &[u8], c: &mut C, io: &mut Io<'_>) -> Result<()> {
        let key = key.as_ref();
        if self.list_unfinished() {
            let size = char_len(key) + raw.len() as u64;
            return self.later.append(&mut io.session.reorder, Later::Member(key.to_vec(), raw.to_vec()), size);
        }
        self.close_array(c, io)?;
        io.json(self.out, |w, b| w.raw_member(key, raw, b))
    }

    /// An element of the top-level array `name` (tools, functions).
    pub fn element<C: MessageCloser + ?Sized>(&mut self, name: &'static str, raw: &[u8], c: &mut C, io: &mut Io<'_>) -> Result<()> {
        if self.list_unfinished() {
            let size = name.len() as u64 + raw.len() as u64;
            return self.later.append(&mut io.session.reorder, Later::Element(name, raw.to_vec()), size);
        }
        self.open_array(name, c, io)?;
        io.json(self.out, |w, b| w.raw_element(raw, b))
    }

    /// Where the next message goes: the list on the output, or the hold of messages that
    /// wait for the system prompt.
    pub fn messages_writer<C: MessageCloser + ?Sized>(&mut self, system: bool, c: &mut C, io: &mut Io<'_>) -> Result<WriterId> {
        if system || self.system_final {
            self.open_array("messages", c, io)?;
            return Ok(self.out);
        }
        if let Some(pending) = self.pending {
            return Ok(pending);
        }
        let reason = list_reason(self.dialect, "messages-before-system");
        let pending = io.writers.held(&mut io.session.reorder, &reason);
        io.push_first(pending); // its elements sit inside the list
        self.pending = Some(pending);
        Ok(pending)
    }

    fn flush_pending<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        let Some(pending) = self.pending else { return Ok(()) };
        if !self.system_final {
            return Ok(());
        }
        c.close_message(self, io)?; // a held message, or the last top-level system one
        if io.writers.holds_bytes(pending) {
            self.open_array("messages", c, io)?;
            let mut held = Vec::new();
            io.writers.take(pending, &mut io.session.reorder, &mut held);
            if self.out == WriterId::OUT {
                room_for(io.out, held.len() + 1);
            }
            io.json(self.out, |w, b| w.raw_element(&held, b))?;
        } else {
            io.writers.drop_writer(pending, &mut io.session.reorder);
        }
        self.pending = None;
        Ok(())
    }

    fn flush_later<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        if self.later.is_empty() {
            return Ok(());
        }
        let items: Vec<Later> = self.later.drain(&mut io.session.reorder).collect();
        for item in items {
            match item {
                Later::Member(key, raw) => self.member(&key, &raw, c, io)?,
                Later::Element(name, raw) => self.element(name, &raw, c, io)?,
            }
        }
        Ok(())
    }

    pub fn system_end<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        self.system_final = true;
        self.flush_pending(c, io)?;
        if self.messages_ended {
            self.list_exists(c, io)?;
        }
        Ok(())
    }

    pub fn messages_end<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        self.messages_ended = true;
        c.close_message(self, io)?;
        if self.system_final {
            self.flush_pending(c, io)?;
            self.list_exists(c, io)?;
        }
        self.flush_later(c, io)
    }

    /// The source had a message list: the output has one, even if nothing was carried into it.
    fn list_exists<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        if !self.messages_opened {
            self.open_array("messages", c, io)?;
        }
        Ok(())
    }

    /// The source ended: everything held is written; trailing members may follow.
    pub fn end<C: MessageCloser + ?Sized>(&mut self, c: &mut C, io: &mut Io<'_>) -> Result<()> {
        self.system_final = true;
        self.messages_ended = true;
        c.close_message(self, io)?;
        self.flush_pending(c, io)?;
        self.flush_later(c, io)?;
        self.close_array(c, io)
    }

    pub fn finish(&mut self, io: &mut Io<'_>) -> Result<()> {
        io.json(self.out, |w, b| w.end_object(b))
    }
}

/// `lose_unknown_members(control, target, session)`: a loss for each member of another
/// dialect's control field that no target carries (`fields::unknown_members`), at its own path;
/// read off the field's raw JSON, which the field's first control carries (a derived one has none).
pub fn lose_unknown_members(control: &Control<'_>, target: &str, session: &mut Session) -> Result<()> {
    let (Some(raw), Some(key), Some(dialect)) = (control.raw.as_deref(), control.key.as_deref(), control.dialect.as_deref())
    else {
        return Ok(());
    };
    let tail = lacks("", target, "such field", None);
    for member in crate::dialects::fields::unknown_members(dialect, key, raw)? {
        let subject = [key.as_bytes(), b".", member.as_slice()].concat();
        let place = [b"$.".as_slice(), &subject].concat();
        session.lose(place, [subject.as_slice(), tail.as_bytes()].concat(), Some(dialect))?;
    }
    Ok(())
}

/// `sets_no_reasoning`: whether a canonical reasoning value holds only members no target
/// carries (`uncarried`, and their places, `at`): OpenRouter's `{"exclude": true}` alone. A
/// target records those members, and no "such reasoning setting" for a setting that asks for no
/// reasoning. (One that sets nothing at all is no control: `fields::sets_nothing`.)
pub fn sets_no_reasoning(value: &Value) -> bool {
    value.get("uncarried").is_some()
        && matches!(value, Value::Object(members) if members.iter().all(|(key, _)| key == b"uncarried" || key == b"at"))
}

/// `lose_uncarried`: a loss for each source member of a reasoning setting its canonical value
/// did not carry (anthropic `thinking.display`), at its own path (member names as they came).
/// Into anthropic (LiteLLM's `thinking` of an openai body) a member anthropic's thinking has is
/// not its field either, and the reason says so, as `foreign_field`'s does.
pub fn lose_uncarried(control: &Control<'_>, value: &Value, target: &str, session: &mut Session) -> Result<()> {
    lose_uncarried_of(control.key.as_deref(), control.dialect.as_deref(), value, target, session)
}

/// `lose_uncarried` of a control given by its key and dialect (an encoder's own copy of it).
pub fn lose_uncarried_of(key: Option<&str>, dialect: Option<&str>, value: &Value, target: &str,
                         session: &mut Session) -> Result<()> {
    let Some(Value::Array(members)) = value.get("uncarried") else {
        return Ok(());
    };
    // (a merged control's: the key of the field that did not carry them, `merged_reasoning`)
    let at = match value.get("at").and_then(|at| at.get("uncarried")) {
        Some(Value::Str(at)) => Some(String::from_utf8_lossy(at).into_owned()),
        _ => key.map(str::to_string),
    };
    let key = at.as_deref().unwrap_or("None");
    let tail = lacks("", target, "field for it", None);
    for member in members {
        if let Value::Str(name) = member {
            let subject = [key.as_bytes(), b".", name].concat();
            let place = [b"$.".as_slice(), &subject].concat();
            let reason = if target == "anthropic" && ANTHROPIC_THINKING_MEMBERS.iter().any(|m| m.as_bytes() == name.as_slice()) {
                let what = format!("such field of {}'s (its own {} is not read from another dialect's body)",
                                   dialect.unwrap_or("None"), String::from_utf8_lossy(name));
                [subject.as_slice(), lacks("", target, &what, None).as_bytes()].concat()
            } else {
                [subject.as_slice(), tail.as_bytes()].concat()
            };
            session.lose(place, reason, dialect)?;
        }
    }
    Ok(())
}

/// `_ANTHROPIC_THINKING_MEMBERS`: the members of anthropic's `thinking` (`fields::member_fields`).
const ANTHROPIC_THINKING_MEMBERS: [&str; 3] = ["type", "budget_tokens", "display"];

/// `TOOL_EXTRAS`: a tool definition's attributes that keep its source members as JSON text.
const TOOL_EXTRAS: [&str; 5] = ["anthropic_extra", "openai_extra", "ollama_extra", "openai_tool_extra", "ollama_tool_extra"];
/// `TOOL_OWN`: a tool definition's attributes of members beside its function (an anthropic tool's are all).
const TOOL_OWN: [&str; 4] = ["anthropic_extra", "openai_tool_extra", "ollama_tool_extra", "cache_control"];

/// `lose_tool_attr`: a tool-definition attribute `target` has no field for -- one loss per
/// source member at its own path (`$.tools[0].defer_loading`, `$.tools[1].function.strict`),
/// named as the source names it (an extras attribute holds several, its own name none).
pub fn lose_tool_attr(key: &str, value: &[u8], attrs: &[Attr<'_>], target: &str, session: &mut Session) -> Result<()> {
    if value == b"null" {
        return Ok(()); // a null one is nothing lost
    }
    let flat = attr_truthy(attrs, "legacy") || TOOL_OWN.contains(&key) || session.source == "anthropic";
    let inner: &[u8] = if flat { b"" } else { b"function." };
    let place = match attr(attrs, "path").map(Value::loads) {
        Some(Ok(Value::Str(path))) if !path.is_empty() => Some(path),
        _ => None,
    };
    let tail = lacks(" of a tool", target, "field for it", None);
    for name in tool_attr_members(key, value) {
        let field = [inner, &name].concat();
        let path = match &place {
            Some(at) => [at.as_slice(), b".", &field].concat(),
            None => b"$.tools".to_vec(),
        };
        session.lose(path, [field.as_slice(), tail.as_bytes()].concat(), None)?;
    }
    Ok(())
}

/// The source member names a tool attribute stands for: an extras attribute's members
/// (`losses.member_names`), or the attribute's own name.
fn tool_attr_members(key: &str, value: &[u8]) -> Vec<Vec<u8>> {
    if !TOOL_EXTRAS.contains(&key) {
        return vec![key.as_bytes().to_vec()];
    }
    let Ok(Value::Str(text)) = Value::loads(value) else { return Vec::new() };
    match Value::loads(&[b"{".as_slice(), &text, b"}"].concat()) {
        Ok(Value::Object(members)) => members.into_iter().map(|(name, _)| name).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Kind, Options};

    pub(crate) fn options() -> Options {
        Options::default()
    }

    #[test]
    fn a_call_batch_is_open_until_every_call_is_answered_and_held_calls_become_the_next() {
        let mut calls = CallBatch::default();
        assert!(!calls.open());
        let batch = calls.batch_of(1);
        calls.record(batch, call_key(Some(b"\"a\"")));
        calls.record(batch, call_key(Some(b"\"\\u0062\""))); // "b", escaped
        assert_eq!(calls.batch_of(1), batch, "the same message: the same batch");
        calls.answer(call_key(Some(b"\"a\"")));
        assert!(calls.open());
        let held = calls.held_list();
        calls.record(held, call_key(Some(b"\"c\"")));
        calls.answer(call_key(Some(b"\"b\"")));
        assert!(!calls.open(), "a string id is compared as its text");
        calls.held_written();
        assert!(calls.open(), "the held calls are the batch");
        calls.record(batch, call_key(Some(b"\"old\""))); // the old batch's list: read by nothing
        calls.answer(call_key(Some(b"\"c\"")));
        assert!(!calls.open());
        calls.record(calls.held_list(), None);
        calls.held_written();
        assert!(calls.open(), "a call without id is never answered");
        assert_ne!(calls.batch_of(2), held);
        assert!(!calls.open(), "a new message of calls: a new batch");
    }

    struct NoMessages;
    impl MessageCloser for NoMessages {
        fn close_message(&mut self, _body: &mut MessageListBody, _io: &mut Io<'_>) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn attribute_names_are_sorted_and_kept_whatever_they_are() {
        assert!(ATTR_NAMES.windows(2).all(|w| w[0] < w[1]));
        let attrs: Vec<Attr<'_>> = vec![("role".into(), Cow::Borrowed(&b"\"user\""[..])), ("zz_new".into(), Cow::Borrowed(&b"true"[..]))];
        let kept = owned(&attrs);
        assert_eq!(kept, attrs);
        assert!(matches!(kept[0].0, Cow::Borrowed(_)) && matches!(kept[1].1, Cow::Borrowed(_)));
        let late: Vec<Attr<'_>> = vec![("zz_new".into(), Cow::Borrowed(&b"1"[..])), ("id".into(), Cow::Borrowed(&b"\"x\""[..]))];
        assert_eq!(merged(&attrs, &late).as_ref(), [attrs[0].clone(), late[0].clone(), late[1].clone()]);
        assert!(matches!(merged(&attrs, &[]), Cow::Borrowed(_)));
        assert_eq!(late_only(&attrs, &late), vec![late[1].clone()]);
    }

    #[test]
    fn truthiness_is_pythons() {
        for raw in ["null", "false", "0", "-0", "0.0", "-0.0", "0e5", "1e-400", "\"\"", "[]", "{}"] {
            assert!(!truthy(raw.as_bytes()), "{raw}");
        }
        for raw in ["true", "1", "0.5", "-2", "\"x\"", "[0]", "{\"a\":1}"] {
            assert!(truthy(raw.as_bytes()), "{raw}");
        }
    }

    #[test]
    fn an_assembler_streams_the_first_member_and_appends_the_held_ones() {
        let mut session = Session::new(options(), "anthropic", "openai", Kind::Request);
        let mut writers = Writers::default();
        let mut out = Vec::new();
        let mut io = Io { out: &mut out, session: &mut session, writers: &mut writers };
        let mut msg = MessageAssembler::new(WriterId::OUT, &mut io, "t:member-order", b"\"role\":\"user\"", Some(STRING_CONTENT)).unwrap();
        io.write(msg.out, b"hi").unwrap();
        let calls = msg.member(&mut io, "tool_calls", Opener::Array).unwrap();
        assert_ne!(calls, WriterId::OUT);
        io.json(calls, |w, b| w.raw_element(b"1", b)).unwrap();
        io.json(calls, |w, b| w.raw_element(b"2", b)).unwrap();
        msg.scalar(&mut io, "name", b"\"n\"").unwrap();
        assert_eq!(io.session.reorder.held(), 3 + 7);
        msg.close(&mut io).unwrap();
        assert_eq!(out, b"{\"role\":\"user\",\"content\":\"hi\",\"tool_calls\":[1,2],\"name\":\"n\"}");
        assert_eq!(session.reorder.held(), 0);
    }

    #[test]
    fn a_body_holds_messages_until_the_system_prompt() {
        let mut session = Session::new(options(), "anthropic", "openai", Kind::Request);
        let mut writers = Writers::default();
        let mut out = Vec::new();
        let mut io = Io { out: &mut out, session: &mut session, writers: &mut writers };
        let mut body = MessageListBody::new(&mut io, "openai").unwrap();
        let w = body.messages_writer(false, &mut NoMessages, &mut io).unwrap();
        let msg = MessageAssembler::new(w, &mut io, "openai:member-order", b"\"role\":\"user\"", Some(STRING_CONTENT)).unwrap();
        io.write(msg.out, b"hi").unwrap();
        msg.close(&mut io).unwrap();
        body.member("model", b"\"m\"", &mut NoMessages, &mut io).unwrap();
        let w = body.messages_writer(true, &mut NoMessages, &mut io).unwrap();
        let msg = MessageAssembler::new(w, &mut io, "openai:member-order", b"\"role\":\"system\"", Some(STRING_CONTENT)).unwrap();
        io.write(msg.out, b"sys").unwrap();
        msg.close(&mut io).unwrap();
        body.member("max_tokens", b"5", &mut NoMessages, &mut io).unwrap();
        body.system_end(&mut NoMessages, &mut io).unwrap();
        body.messages_end(&mut NoMessages, &mut io).unwrap();
        body.end(&mut NoMessages, &mut io).unwrap();
        body.finish(&mut io).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":5}"
        );
        let (high, by_reason) = session.reorder.report();
        assert!(high > 0);
        assert_eq!(by_reason.iter().map(|r| r.0).collect::<Vec<_>>(), ["openai:messages-before-system", "openai:fields-inside-messages"]);
    }

    #[test]
    fn a_taken_writer_is_stale_not_a_panic() {
        let mut session = Session::new(options(), "anthropic", "openai", Kind::Request);
        let mut writers = Writers::default();
        let mut out = Vec::new();
        let mut io = Io { out: &mut out, session: &mut session, writers: &mut writers };
        let old = io.writers.held(&mut io.session.reorder, "t:x");
        io.write(old, b"ab").unwrap();
        let mut taken = Vec::new();
        io.writers.take(old, &mut io.session.reorder, &mut taken);
        let new = io.writers.held(&mut io.session.reorder, "t:x"); // the same slot, again
        assert_ne!(old, new);
        io.write(new, b"c").unwrap();
        assert_eq!(io.write(old, b"d").unwrap_err().class, ErrorClass::Transcode);
        assert_eq!(io.sep(old), b"");
        io.push_first(old);
        assert!(io.writers.holds_bytes(new) && !io.writers.holds_bytes(old));
        assert_eq!((taken.as_slice(), io.session.reorder.held()), (&b"ab"[..], 1));
    }

    #[test]
    fn held_arguments_are_an_object_or_raw() {
        let mut session = Session::new(options(), "openai", "anthropic", Kind::Request);
        for (parts, want, faithful) in [
            (&["{\\\"a\\\":", "1}"][..], "{\"a\":1}", true),
            (&[" "][..], "{}", true),
            (&["[1]"][..], "{\"_raw_arguments\":\"[1]\"}", false),
            (&["{\\\"a\\\""][..], "{\"_raw_arguments\":\"{\\\"a\\\"\"}", false),
        ] {
            let mut args = HeldArguments::new(&mut session, "t:args");
            for part in parts {
                args.feed(part.as_bytes(), &mut session).unwrap();
            }
            let (data, ok) = args.result(&mut session);
            assert_eq!((String::from_utf8(data).unwrap().as_str(), ok), (want, faithful));
        }
    }

    #[test]
    fn blank_is_spaces_and_whitespace_escapes_only() {
        for (payload, want) in [
            (&b""[..], true), (b" ", true), (br"\n\t \r", true), (br"\\nt", false), (br"\\n", false),
            (b" a", false), (br"\u0020", false), (b"\xc2\xa0", false), (br"\", false),
        ] {
            assert_eq!(blank(payload), want, "{:?}", String::from_utf8_lossy(payload));
        }
    }

    #[test]
    fn blank_tail_is_where_the_closing_run_of_whitespace_begins() {
        for (payload, want) in [
            (&b""[..], Some(0)), (b"a", Some(1)), (b"a ", Some(1)), (br"a\n \t\r", Some(1)), (br"\n", Some(0)),
            (br"a\\n", Some(4)), (br"a\\\n", Some(3)), (br"a\\\\n ", Some(6)), (br"\u0020 ", Some(6)),
            (b"a\xc2\xa0", Some(3)),
        ] {
            assert_eq!(blank_tail(payload), want, "{:?}", String::from_utf8_lossy(payload));
        }
        let long = [b' '; BLANK_HELD + 1];
        assert_eq!(blank_tail(&long), None);
        assert_eq!(blank_tail(&long[1..]), Some(0));
        assert_eq!(blank_tail(&[b"x".as_slice(), &long].concat()), None);
    }

    #[test]
    fn reasoning_controls_merge() {
        let c = |v: &'static str| Control { name: "reasoning".into(), value: Cow::Borrowed(v.as_bytes()), dialect: Some("anthropic".into()), key: Some("thinking".into()), raw: None };
        let mut session = Session::new(crate::session::Options::default(), "anthropic", "openai", crate::session::Kind::Request);
        let merged = merged_reasoning(&[c("{\"enabled\":true,\"budget_tokens\":10}"), c("{\"effort\":\"low\",\"enabled\":false}")],
                                      "openai", &mut session).unwrap();
        // (the first field's enabled, set again to another value, is recorded at it)
        assert_eq!(session.losses.iter().map(|l| l.path().to_vec()).collect::<Vec<_>>(), [b"$.thinking".to_vec()]);
        assert_eq!(merged.value.as_ref(), &br#"{"enabled":false,"budget_tokens":10,"effort":"low","at":{"enabled":"thinking","budget_tokens":"thinking","effort":"thinking"}}"#[..]);
    }

    /// The members one of them did not carry are recorded under its key, not the merged one's (the last).
    #[test]
    fn uncarried_members_keep_their_controls_key() {
        let c = |v: &'static str, key: &'static str| Control { name: "reasoning".into(), value: Cow::Borrowed(v.as_bytes()),
                                                             dialect: Some("anthropic".into()), key: Some(key.into()), raw: None };
        let mut session = Session::new(crate::session::Options::default(), "anthropic", "ollama", crate::session::Kind::Request);
        let merged = merged_reasoning(&[c("{\"enabled\":true,\"adaptive\":true,\"uncarried\":[\"display\"]}", "thinking"),
                                        c("{\"effort\":\"low\"}", "output_config")], "ollama", &mut session).unwrap();
        assert_eq!(merged.key.as_deref(), Some("output_config"));
        let value = Value::loads(&merged.value).unwrap();
        lose_uncarried(&merged, &value, "ollama", &mut session).unwrap();
        let losses: Vec<_> = session.losses.iter().map(|l| (l.path().to_vec(), l.reason().to_vec())).collect();
        assert_eq!(losses, [(b"$.thinking.display".to_vec(), b"thinking.display: ollama has no field for it".to_vec())]);
    }
}
