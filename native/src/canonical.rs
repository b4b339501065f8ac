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

use crate::error::{Error, ErrorClass, Result};

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

impl Block<'_> {
    /// `Block.text()`: the payload decoded (WTF-8) for escaped payloads, else the JSON text.
    pub fn text(&self) -> Result<Cow<'_, [u8]>> {
        match self.form() {
            PayloadForm::Escaped => decode_escaped(&self.payload),
            PayloadForm::Raw => Ok(Cow::Borrowed(&self.payload)),
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

/// `Control.place`: where a control was in the source, as a loss names it -- `$.<key>`, or its
/// canonical name when it came from no field of its own (`key`, `name`: a control's, or an
/// encoder's copy of one).
pub fn control_place(key: Option<&str>, name: &str) -> String {
    match key {
        Some(key) if !key.is_empty() => format!("$.{key}"),
        _ => name.to_string(),
    }
}

impl Control<'_> {
    /// `Control.place` (`control_place`).
    pub fn place(&self) -> String {
        control_place(self.key.as_deref(), &self.name)
    }

    /// The same control owning its bytes (an encoder holds it past the event).
    pub fn into_owned(self) -> Control<'static> {
        Control {
            name: Cow::Owned(self.name.into_owned()),
            value: Cow::Owned(self.value.into_owned()),
            dialect: self.dialect.map(|d| Cow::Owned(d.into_owned())),
            key: self.key.map(|k| Cow::Owned(k.into_owned())),
            raw: self.raw.map(|r| Cow::Owned(r.into_owned())),
        }
    }
}

/// A dialect field without canonical meaning, kept with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Extension<'a> {
    pub dialect: Cow<'a, str>,
    /// `$.messages[0].x` -- WTF-8, not `str`: it ends in an input key, and a key may hold
    /// an escaped lone surrogate (`"x\ud83d"`) as the Python path's `str` does (the
    /// binding converts with `surrogatepass`). Block attribute names stay `str`: they
    /// are the codecs' own names, never an input key.
    pub path: Cow<'a, [u8]>,
    pub raw: RawJson<'a>,
    pub message: Option<i64>,
    pub lossless: bool,
}

impl Extension<'_> {
    /// The same extension owning its bytes (an encoder holds it past the event).
    pub fn into_owned(self) -> Extension<'static> {
        Extension {
            dialect: Cow::Owned(self.dialect.into_owned()),
            path: Cow::Owned(self.path.into_owned()),
            raw: Cow::Owned(self.raw.into_owned()),
            message: self.message,
            lossless: self.lossless,
        }
    }

    /// `Extension.value()`: `json.loads(raw)`.
    pub fn value(&self) -> Result<crate::value::Value> {
        crate::value::Value::loads(&self.raw)
    }
}

/// Token counts; `None`: the source did not say (absent is not zero).
/// `service_tier`: the tier that served them, canonical names (`lifecycle::tier_from`;
/// a known tier is a static name: no allocation per usage report or copy of one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: Option<i64>,
    pub output: Option<i64>,
    pub cache_read: Option<i64>,
    pub cache_write: Option<i64>,
    pub reasoning: Option<i64>,
    pub total: Option<i64>,
    pub service_tier: Option<Cow<'static, str>>,
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
    /// one generated token's log probabilities (`canonical.Logprobs`): `raw`, the
    /// entry's compact JSON (openai's `ChatCompletionTokenLogprob` shape)
    Logprobs { raw: RawJson<'a>, choice: i64 },
    /// `message`: WTF-8 (an exception's text may hold a lone surrogate: `surrogateescape`)
    Error { kind: Cow<'a, str>, message: Cow<'a, [u8]>, status: Option<i64> },
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
            Event::Logprobs { .. } => "logprobs",
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

/// The inside of a JSON string (escapes kept) decoded (`decode_escaped`, i.e.
/// `json.loads('"' + payload + '"')`), as WTF-8: surrogate pairs joined as
/// Python's json joins them, a lone `\ud800` kept as its code point (a Python
/// `str` can hold one; `std::str` cannot, hence bytes). Borrowed when there is
/// no escape. A payload that is not a JSON string's inside (a bad escape, a
/// raw control character or quote) is an error; decoders never make one.
pub fn decode_escaped(payload: &[u8]) -> Result<Cow<'_, [u8]>> {
    if memchr::memchr(b'\\', payload).is_none() {
        return match payload.iter().position(|&b| b < 0x20 || b == b'"') {
            None => Ok(Cow::Borrowed(payload)),
            Some(at) => Err(not_a_string(at)),
        };
    }
    let mut out = Vec::with_capacity(payload.len());
    unescape_into(payload, &mut out)?;
    Ok(Cow::Owned(out))
}

fn not_a_string(at: usize) -> Error {
    Error::new(ErrorClass::JsonSyntax, format!("not the inside of a JSON string (byte {at})"))
}

/// Append the decoded `payload` (a JSON string's inside) to `out` as WTF-8.
pub fn unescape_into(payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let mut i = 0;
    // the first `\\`, `"` or control character: one pass (json::find_special)
    while let Some(j) = crate::json::find_special(payload, i) {
        out.extend_from_slice(&payload[i..j]);
        if payload[j] != b'\\' {
            return Err(not_a_string(j));
        }
        let simple = match payload.get(j + 1) {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                i = unescape_unit(payload, j, out)?;
                continue;
            }
            _ => return Err(not_a_string(j)),
        };
        out.push(simple);
        i = j + 2;
    }
    out.extend_from_slice(&payload[i..]);
    Ok(())
}

/// The `\uXXXX` escape at `at` (and its low half, when it is a high surrogate
/// followed by one: Python joins exactly those); returns where the text goes on.
fn unescape_unit(payload: &[u8], at: usize, out: &mut Vec<u8>) -> Result<usize> {
    let unit = |at: usize| crate::json::u_escape(payload, at).map(u32::from);
    let mut code = unit(at).ok_or_else(|| not_a_string(at))?;
    let mut next = at + 6;
    if (0xD800..0xDC00).contains(&code) {
        if let Some(low) = unit(next).filter(|low| (0xDC00..0xE000).contains(low)) {
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            next += 6;
        }
    }
    push_wtf8(out, code);
    Ok(next)
}

/// One code point as WTF-8 (UTF-8, with surrogates encoded like any other code point).
pub fn push_wtf8(out: &mut Vec<u8>, code: u32) {
    if code < 0x80 {
        out.push(code as u8);
    } else if code < 0x800 {
        out.extend_from_slice(&[0xC0 | (code >> 6) as u8, 0x80 | (code & 0x3F) as u8]);
    } else if code < 0x10000 {
        out.extend_from_slice(&[0xE0 | (code >> 12) as u8, 0x80 | ((code >> 6) & 0x3F) as u8, 0x80 | (code & 0x3F) as u8]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3F) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    }
}

/// The lone surrogates of WTF-8 text: each `(at, code point)`. A surrogate is
/// encoded `ED A0..BF xx` (valid UTF-8 has no such sequence).
pub fn lone_surrogates(text: &[u8]) -> impl Iterator<Item = (usize, u32)> + '_ {
    memchr::memchr_iter(0xED, text).filter_map(move |at| match text.get(at + 1..at + 3) {
        Some(&[b1, b2]) if (0xA0..0xC0).contains(&b1) => {
            Some((at, 0xD000 | ((b1 as u32 & 0x3F) << 6) | (b2 as u32 & 0x3F)))
        }
        _ => None,
    })
}

/// Whether WTF-8 text holds a lone surrogate (Python's `_LONE_SURROGATE.search`).
pub fn has_lone_surrogate(text: &[u8]) -> bool {
    // ASCII (most keys, names, ids) has none: checked a word at a time, cheaper than the search
    !text.is_ascii() && lone_surrogates(text).next().is_some()
}

/// The text an escaped payload holds, as UTF-8 (`unescape_json_text`): a tool
/// call's arguments (JSON inside a JSON string) on their way to a dialect that
/// carries them as an object. A lone surrogate cannot be UTF-8: it is written
/// back as its `\uxxxx` escape (lowercase hex, Python's `"\\u%04x"`).
pub fn unescape_json_text(payload: &[u8]) -> Result<Cow<'_, [u8]>> {
    let text = decode_escaped(payload)?;
    if !has_lone_surrogate(&text) {
        return Ok(text);
    }
    let mut out = Vec::with_capacity(text.len() + 8);
    escape_lone_surrogates(&text, &mut out);
    Ok(Cow::Owned(out))
}

/// `unescape_json_text(payload)` appended to `out`: for a caller that reuses one buffer
/// (a streamed tool call's arguments come in many fragments, each with escapes).
pub fn unescape_json_text_into(payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let start = out.len();
    unescape_into(payload, out)?;
    if has_lone_surrogate(&out[start..]) {
        let text = out.split_off(start);
        escape_lone_surrogates(&text, out);
    }
    Ok(())
}

/// `without_lone_surrogates`: JSON text with each escaped lone surrogate written `\ufffd`
/// (U+FFFD), for a client whose parser refuses one (anthropic's stream clients parse
/// `input_json_delta`); `None` when it has none. A pair, and an escaped backslash before a
/// `u`, stay.
pub fn without_lone_surrogates(json_text: &[u8]) -> Option<Vec<u8>> {
    let unit = |at: usize| -> Option<u16> {
        let six = json_text.get(at..at + 6).filter(|six| six.starts_with(b"\\u") && six[2..].iter().all(u8::is_ascii_hexdigit))?;
        Some(six[2..].iter().fold(0u16, |unit, &h| unit << 4 | (h as char).to_digit(16).unwrap_or(0) as u16))
    };
    let (high, low) = (|u: u16| (0xD800..0xDC00).contains(&u), |u: u16| (0xDC00..0xE000).contains(&u));
    let mut out: Option<Vec<u8>> = None;
    let (mut at, mut copied) = (0, 0);
    while let Some(k) = memchr::memchr(b'\\', &json_text[at..]) {
        at += k;
        let lone = match unit(at) {
            Some(u) if high(u) && unit(at + 6).is_some_and(low) => {
                at += 12; // a pair
                continue;
            }
            Some(u) => high(u) || low(u),
            None => false,
        };
        if lone {
            let out = out.get_or_insert_with(|| Vec::with_capacity(json_text.len()));
            out.extend_from_slice(&json_text[copied..at]);
            out.extend_from_slice(b"\\ufffd");
            copied = at + 6;
        }
        at += if unit(at).is_some() { 6 } else { 2 }; // (any other escape, `\\` too, is two bytes)
    }
    out.map(|mut out| {
        out.extend_from_slice(&json_text[copied..]);
        out
    })
}

/// WTF-8 `text` appended to `out` with each lone surrogate as its `\uxxxx` escape.
fn escape_lone_surrogates(text: &[u8], out: &mut Vec<u8>) {
    let mut start = 0;
    for (at, code) in lone_surrogates(text) {
        out.extend_from_slice(&text[start..at]);
        out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
        start = at + 3;
    }
    out.extend_from_slice(&text[start..]);
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

    #[test]
    fn decode_escaped_as_json_loads() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"plain \xc3\xa9", b"plain \xc3\xa9"),
            (br#"a\"b\\c\/d\b\f\n\r\t"#, b"a\"b\\c/d\x08\x0c\n\r\t"),
            (br"\u00e9\u20AC", "é€".as_bytes()),
            (br"\ud83d\ude00", "😀".as_bytes()),
            (br"\ud800", b"\xed\xa0\x80"),
            (br"\udc00\ud800x", b"\xed\xb0\x80\xed\xa0\x80x"),
            (br"\ud800\ud800\udc00", b"\xed\xa0\x80\xf0\x90\x80\x80"),
            (br"\ud800\n", b"\xed\xa0\x80\n"),
        ];
        for (payload, text) in cases {
            assert_eq!(decode_escaped(payload).unwrap().as_ref(), *text, "{payload:?}");
        }
        assert!(matches!(decode_escaped(b"abc").unwrap(), Cow::Borrowed(_)));
        for bad in [&b"\\"[..], b"\\x", b"\\u12", b"\\u12g4", b"a\"", b"a\nb", b"\\n\x01"] {
            assert_eq!(decode_escaped(bad).unwrap_err().class, ErrorClass::JsonSyntax, "{bad:?}");
        }
    }

    #[test]
    fn block_text_and_extension_value() {
        let block = |section, payload: &'static [u8]| Block { section, message: 0, payload: Cow::Borrowed(payload), init: true, fin: true, attrs: None };
        assert_eq!(block(Section::UserText, br"a\nb").text().unwrap().as_ref(), b"a\nb");
        assert_eq!(block(Section::ToolDefinition, br#"{"a":"\n"}"#).text().unwrap().as_ref(), br#"{"a":"\n"}"#);
        let ext = Extension { dialect: "ollama".into(), path: Cow::Borrowed(b"$.x"), raw: Cow::Borrowed(b"\"t\""), message: None, lossless: false };
        assert_eq!(ext.value().unwrap(), crate::value::Value::str("t"));
    }

    #[test]
    fn without_lone_surrogates_writes_each_lone_one_as_u_fffd() {
        let cases: [(&[u8], Option<&[u8]>); 7] = [
            (br#"{"a":"x\udc00y"}"#, Some(br#"{"a":"x\ufffdy"}"#)),
            (br#"{"a":"\ud83d\ude00"}"#, None),
            (br#"{"a":"\\udc00"}"#, None),
            (br#"{"a":"\\\udc00"}"#, Some(br#"{"a":"\\\ufffd"}"#)),
            (br#"{"a":"\uD800"}"#, Some(br#"{"a":"\ufffd"}"#)),
            (br#"{"a":"\ud800\ud800\udc00"}"#, Some(br#"{"a":"\ufffd\ud800\udc00"}"#)),
            (br#"{"a":"\u0041\n"}"#, None),
        ];
        for (text, expected) in cases {
            assert_eq!(without_lone_surrogates(text).as_deref(), expected, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn unescape_json_text_writes_lone_surrogates_back_escaped() {
        assert_eq!(unescape_json_text(br#"{\"a\":1}"#).unwrap().as_ref(), br#"{"a":1}"#);
        assert_eq!(unescape_json_text(br#"\"\uD800x\udfff\""#).unwrap().as_ref(), br#""\ud800x\udfff""#);
        assert_eq!(unescape_json_text("é".as_bytes()).unwrap().as_ref(), "é".as_bytes());
    }

    #[test]
    fn unescape_json_text_into_appends_the_same() {
        let cases: &[&[u8]] = &[br#"{\"a\":1}"#, br#"\"\uD800x\udfff\""#, "é".as_bytes(), b"", br"\ud83d\ude00 \udc00",
                                b"plain", b"a\"b", b"\\x", b"a\nb"];
        for payload in cases {
            let mut out = b"kept ".to_vec();
            let into = unescape_json_text_into(payload, &mut out).map(|()| out[5..].to_vec());
            let whole = unescape_json_text(payload).map(Cow::into_owned);
            match (into, whole) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{payload:?}"),
                (Err(a), Err(b)) => assert_eq!((a.class, &a.message), (b.class, &b.message), "{payload:?}"),
                (a, b) => panic!("{payload:?}: {a:?} vs {b:?}"),
            }
        }
    }
}
