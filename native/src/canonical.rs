//! The canonical event stream, the pivot between dialects (`src/interlingua/canonical.py`).
//!
//! The unit is the block, not the dialect message (DESIGN §3). A payload is
//! bytes in one of two forms fixed per section: `Escaped` (the inside of a
//! JSON string, escapes kept: text moves between dialects copied, never
//! re-encoded) or `Raw` (compact JSON value text). A payload borrows the chunk
//! being fed where it can (`Cow::Borrowed`) and is owned where it was held.
//! Attribute and control values are compact JSON text (`RawJson`); the
//! binding turns them into Python objects only at the `Decoder` boundary.
#![forbid(unsafe_code)]

use std::borrow::Cow;

/// The section taxonomy (DESIGN §3); anything else is `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Section {
    SystemInstruction,
    UserText,
    UserImage,
    UserDocument,
    UserAudio,
    UserVideo,
    AssistantText,
    AssistantReasoning,
    AssistantRefusal,
    ToolDefinition,
    ToolCall,
    ToolResult,
    ServerToolResult,
    Citations,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadForm {
    /// the inside of a JSON string, escapes kept
    Escaped,
    /// compact JSON value text
    Raw,
}

impl Section {
    pub const ALL: [Section; 15] = [
        Section::SystemInstruction,
        Section::UserText,
        Section::UserImage,
        Section::UserDocument,
        Section::UserAudio,
        Section::UserVideo,
        Section::AssistantText,
        Section::AssistantReasoning,
        Section::AssistantRefusal,
        Section::ToolDefinition,
        Section::ToolCall,
        Section::ToolResult,
        Section::ServerToolResult,
        Section::Citations,
        Section::Unknown,
    ];

    /// The Python enum's value (`Section.USER_TEXT.value == "user-text"`).
    pub fn name(self) -> &'static str {
        match self {
            Section::SystemInstruction => "system-instruction",
            Section::UserText => "user-text",
            Section::UserImage => "user-image",
            Section::UserDocument => "user-document",
            Section::UserAudio => "user-audio",
            Section::UserVideo => "user-video",
            Section::AssistantText => "assistant-text",
            Section::AssistantReasoning => "assistant-reasoning",
            Section::AssistantRefusal => "assistant-refusal",
            Section::ToolDefinition => "tool-definition",
            Section::ToolCall => "tool-call",
            Section::ToolResult => "tool-result",
            Section::ServerToolResult => "server-tool-result",
            Section::Citations => "citations",
            Section::Unknown => "unknown",
        }
    }

    pub fn from_name(name: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name)
    }

    /// `PAYLOAD_FORM[section]`.
    pub fn form(self) -> PayloadForm {
        match self {
            Section::ToolDefinition | Section::ServerToolResult | Section::Citations | Section::Unknown => {
                PayloadForm::Raw
            }
            _ => PayloadForm::Escaped,
        }
    }
}

/// `message` of blocks that belong to the request, not to a message (tool definitions).
pub const REQUEST_LEVEL: i64 = -1;
/// `message` of a system instruction given outside the message list (anthropic's `system`).
pub const TOP_LEVEL_SYSTEM: i64 = -2;

/// Compact JSON text of a value.
pub type RawJson<'a> = Cow<'a, [u8]>;

/// One fragment of one canonical block; `attrs` on the first fragment only.
#[derive(Clone, Debug, PartialEq)]
pub struct Block<'a> {
    pub section: Section,
    pub message: i64,
    pub payload: Cow<'a, [u8]>,
    pub init: bool,
    pub fin: bool,
    /// (name, compact JSON value), in the order the decoder set them
    pub attrs: Option<Vec<(Cow<'a, str>, RawJson<'a>)>>,
}

impl<'a> Block<'a> {
    pub fn form(&self) -> PayloadForm {
        self.section.form()
    }

    /// The same block owning its bytes (to hold it past the chunk).
    pub fn into_owned(self) -> Block<'static> {
        Block {
            section: self.section,
            message: self.message,
            payload: Cow::Owned(self.payload.into_owned()),
            init: self.init,
            fin: self.fin,
            attrs: self.attrs.map(|attrs| {
                attrs.into_iter().map(|(k, v)| (Cow::Owned(k.into_owned()), Cow::Owned(v.into_owned()))).collect()
            }),
        }
    }
}

/// A request-level setting under its canonical name; where it came from, so
/// the encoder of the same dialect writes it back exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct Control<'a> {
    pub name: Cow<'a, str>,
    pub value: RawJson<'a>,
    pub dialect: Option<Cow<'a, str>>,
    pub key: Option<Cow<'a, str>>,
    pub raw: Option<RawJson<'a>>,
}

/// A dialect field without canonical meaning, kept with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Extension<'a> {
    pub dialect: Cow<'a, str>,
    pub path: Cow<'a, str>,
    pub raw: RawJson<'a>,
    pub message: Option<i64>,
    pub lossless: bool,
}

/// Token counts; `None`: the source did not say (absent is not zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: Option<i64>,
    pub output: Option<i64>,
    pub cache_read: Option<i64>,
    pub cache_write: Option<i64>,
    pub reasoning: Option<i64>,
    pub total: Option<i64>,
}

/// The canonical events (`canonical.Event`, and `framing.FrameEnd`).
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
    Block(Block<'a>),
    Control(Control<'a>),
    Extension(Extension<'a>),
    /// no `TOP_LEVEL_SYSTEM` block follows
    SystemEnd,
    /// no block of a conversation message follows
    MessagesEnd,
    // -- the response lifecycle
    MessageStart { id: Option<Cow<'a, str>>, model: Option<Cow<'a, str>>, choice: i64 },
    Finish { reason: Option<Cow<'a, str>>, stop_sequence: Option<Cow<'a, str>>, choice: i64 },
    Usage(Usage),
    Error { kind: Cow<'a, str>, message: Cow<'a, str>, status: Option<i64> },
    /// the source ended
    End,
    /// the source frame (SSE event, NDJSON line) ended
    FrameEnd,
}

impl Event<'_> {
    /// The Python class's tag (`Block.__struct_config__.tag`).
    pub fn tag(&self) -> &'static str {
        match self {
            Event::Block(_) => "block",
            Event::Control(_) => "control",
            Event::Extension(_) => "extension",
            Event::SystemEnd => "system-end",
            Event::MessagesEnd => "messages-end",
            Event::MessageStart { .. } => "message-start",
            Event::Finish { .. } => "finish",
            Event::Usage(_) => "usage",
            Event::Error { .. } => "error",
            Event::End => "end",
            Event::FrameEnd => "frame-end",
        }
    }
}

// -- payload helpers ----------------------------------------------------------------

/// Compact JSON text -> the inside of a JSON string holding it (`escape_raw_json`):
/// compact JSON has no control characters, so only `\` and `"` are escaped; each
/// byte maps on its own, so fragments can be escaped one at a time.
pub fn escape_raw_json(data: &[u8], out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, &b) in data.iter().enumerate() {
        if b == b'\\' || b == b'"' {
            out.extend_from_slice(&data[start..i]);
            out.push(b'\\');
            start = i;
        }
    }
    out.extend_from_slice(&data[start..]);
}

/// Text -> the `escaped` payload form (`escape_text`: `json.dumps(text, ensure_ascii=False)`
/// without its quotes).
pub fn escape_text(text: &str, out: &mut Vec<u8>) {
    crate::json::escape_str_bytes(text.as_bytes(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_forms() {
        assert_eq!(Section::from_name("tool-call"), Some(Section::ToolCall));
        assert_eq!(Section::ToolDefinition.form(), PayloadForm::Raw);
        assert_eq!(Section::UserText.form(), PayloadForm::Escaped);
        assert!(Section::ALL.iter().all(|s| Section::from_name(s.name()) == Some(*s)));
    }

    #[test]
    fn escapes() {
        let mut out = Vec::new();
        escape_raw_json(br#"{"a":"b\"c"}"#, &mut out);
        assert_eq!(out, br#"{\"a\":\"b\\\"c\"}"#);
        out.clear();
        escape_text("a\"\n\u{1}é", &mut out);
        assert_eq!(out, "a\\\"\\n\\u0001é".as_bytes());
    }

    #[test]
    fn a_block_borrows_until_it_is_held() {
        let chunk = b"hello".to_vec();
        let block = Block {
            section: Section::UserText,
            message: 0,
            payload: Cow::Borrowed(&chunk[..]),
            init: true,
            fin: false,
            attrs: Some(vec![(Cow::Borrowed("cache_control"), Cow::Borrowed(&b"{\"type\":\"ephemeral\"}"[..]))]),
        };
        assert!(matches!(block.payload, Cow::Borrowed(_)));
        let held = block.clone().into_owned();
        drop(chunk);
        assert_eq!(held.payload.as_ref(), b"hello");
        assert_eq!(Event::Block(held).tag(), "block");
    }
}
