//! The push JSON tokenizer: `src/interlingua/json.py` in Rust.
//!
//! `feed(chunk, sink)` scans what it can and hands each token to the sink (a
//! trait, monomorphised: a direct call per token, no queue); whatever is
//! unfinished at the chunk end is carried, bounded: a string value is handed
//! on as fragments (`StringOpen` / `StringPart` / `StringClose`) that borrow
//! the chunk, so no string is held whole; a key is held up to
//! `max_key_bytes`, a number up to `max_number_bytes`.
//!
//! String payloads stay JSON-escaped. A fragment never ends inside an escape,
//! inside a UTF-8 character, or between the halves of a `\uD83D\uDE00`
//! surrogate pair. Keys are delivered decoded (WTF-8: a lone `\uD800` is kept,
//! as Python's `json` keeps it).
//!
//! Parity with the Python tokenizer (tested differentially through the
//! binding): the same tokens with the same offsets, the same errors (class,
//! message, offset, path) at the same feed. String fragments: after every
//! `feed` the string content delivered so far is the same bytes; where a chunk
//! boundary split an escape, a UTF-8 character or a surrogate pair, the few
//! carried bytes are delivered completed as a fragment of their own, before
//! the fragment that borrows the new chunk (Python joins them with it). Joined
//! fragments (open + parts + close = one string token) are equal.
//!
//! After an error the tokenizer is spent: further calls return that error
//! again until `reset`.
#![forbid(unsafe_code)]

use crate::error::{Error, ErrorClass, Result};

/// A token; `offset` (given beside it) is the absolute byte offset of its first
/// byte (a string's first fragment: its opening quote).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token<'a> {
    ObjectStart,
    ObjectEnd,
    ArrayStart,
    ArrayEnd,
    /// The decoded key (WTF-8).
    Key(&'a [u8]),
    /// A whole string: its escaped bytes between the quotes.
    String(&'a [u8]),
    /// The first fragment of a string whose end is in a later chunk.
    StringOpen(&'a [u8]),
    StringPart(&'a [u8]),
    /// The last fragment of a string that had a `StringOpen`.
    StringClose(&'a [u8]),
    Number(&'a [u8]),
    True,
    False,
    Null,
}

impl Token<'_> {
    /// The Python token kind (`interlingua.json.OBJECT_START` ... `NULL`).
    pub fn kind(&self) -> u8 {
        match self {
            Token::ObjectStart => 1,
            Token::ObjectEnd => 2,
            Token::ArrayStart => 3,
            Token::ArrayEnd => 4,
            Token::Key(_) => 5,
            Token::String(_) => 6,
            Token::StringOpen(_) => 7,
            Token::StringPart(_) => 8,
            Token::StringClose(_) => 9,
            Token::Number(_) => 10,
            Token::True => 11,
            Token::False => 12,
            Token::Null => 13,
        }
    }

    pub fn bytes(&self) -> Option<&[u8]> {
        match *self {
            Token::Key(b)
            | Token::String(b)
            | Token::StringOpen(b)
            | Token::StringPart(b)
            | Token::StringClose(b)
            | Token::Number(b) => Some(b),
            _ => None,
        }
    }
}

/// Where the tokenizer is: the JSON path of the token being delivered.
pub trait Sink {
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()>;

    /// A member's key (at `key_offset`) and its value's first token, both whole in the
    /// chunk (the usual member): one call for the two `token` calls it stands for, with the
    /// same path (nothing changes it between them). A sink that reads members (the
    /// decoding machine) takes the key where it is instead of keeping a copy for the value.
    #[inline]
    fn member(&mut self, key: &[u8], key_offset: u64, value: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
        self.token(Token::Key(key), key_offset, path)?;
        self.token(value, offset, path)
    }

    /// Asked after a container's opening bracket: when the sink reads it only as compact
    /// text (a value read whole, skipped or streamed raw), the buffer that text goes to and
    /// how many bytes more it may take. The tokenizer may then append the rest of the
    /// container's text but its closing bracket there itself (`skim`: where its tokens are
    /// plain and whole in the chunk) and deliver that bracket next, standing for the
    /// tokens between, which would have written just that text.
    #[inline]
    fn whole_text(&mut self) -> Option<(&mut Vec<u8>, usize)> {
        None
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_depth: usize,
    pub max_key_bytes: usize,
    pub max_number_bytes: usize,
    /// the keys of all open objects together, in characters (duplicates are
    /// refused, so each open object's keys are kept)
    pub max_seen_key_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 128, max_key_bytes: 65536, max_number_bytes: 1024, max_seen_key_bytes: 1 << 20 }
    }
}

/// A cheap summary of a key (`Frames::add_key`): equal keys have equal fingerprints, and
/// whether it is ASCII (its length in characters is then its length in bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyPrint {
    print: u64,
    ascii: bool,
}

/// The high bit of every byte of a word (the word-at-a-time tests here, `value::is_plain`,
/// `compact`'s plain runs).
pub(crate) const HIGHS: u64 = 0x8080_8080_8080_8080;

impl KeyPrint {
    /// The summary of `key`, whose first bytes `window` begins with: when the buffer has
    /// 8 bytes from the key's start, they are read as one word (the usual key is shorter:
    /// its fingerprint is then the key itself and its length, its ASCII test one mask).
    #[inline]
    pub(crate) fn of(key: &[u8], window: &[u8]) -> KeyPrint {
        let len = key.len();
        let word = match window.get(..8) {
            Some(head) => u64::from_le_bytes(head.try_into().unwrap_or_default()),
            None => key.iter().take(8).enumerate().fold(0, |word, (i, &b)| word | (b as u64) << (8 * i)),
        };
        if len < 8 {
            let head = word & ((1u64 << (8 * len)) - 1);
            return KeyPrint { print: head | (len as u64) << 56, ascii: head & HIGHS == 0 };
        }
        // (a long key: its first and last 8 bytes as words -- all of it up to 16 bytes, so
        // one mask tells whether it is ASCII)
        let tail = u64::from_le_bytes(key[len - 8..].try_into().unwrap_or_default());
        let ascii = if len <= 16 { (word | tail) & HIGHS == 0 } else { key.is_ascii() };
        KeyPrint { print: word ^ tail.rotate_left(32) ^ (len as u64) << 56, ascii }
    }

    /// The key's length as Python's `len` of the decoded str (WTF-8: one per lead byte).
    fn chars(self, key: &[u8]) -> usize {
        if self.ascii {
            return key.len(); // (the usual key: no counting loop)
        }
        key.iter().filter(|&&b| b & 0xC0 != 0x80).count()
    }
}

/// Python's `repr(str)` of a key (WTF-8): `unicode::py_repr` (Python 3.11's
/// Unicode database); see `Error::key` for the binding's own `repr`.
pub fn py_str_repr(key: &[u8]) -> String {
    crate::unicode::py_repr(key)
}

// -- the path ---------------------------------------------------------------

/// Keys an object compares one by one before it hashes them.
const LINEAR_MAX: usize = 16;

/// A key shorter than this is its fingerprint (`KeyPrint::of`: its bytes, the length in
/// the top byte): kept there, never copied, and two such keys are equal when their
/// fingerprints are.
const SHORT_KEY: usize = 8;

#[derive(Clone, Debug)]
struct Frame {
    array: bool,
    /// array: the current index (-1 before the first value)
    index: i64,
    /// object: it has a current key, `key_len` bytes: a short one (`SHORT_KEY`) in `short`,
    /// a longer one in `Frames::keys` from `key_start`
    has_key: bool,
    short: [u8; 8],
    key_start: usize,
    key_len: usize,
    /// object: where its keys begin in `Frames::keys` and `Frames::seen`
    keys_from: usize,
    seen_from: usize,
    /// object: characters of its keys (counted in `Frames::size`)
    chars: usize,
    /// object: past `LINEAR_MAX` keys, all of them, hashed (SipHash: a body's keys are the
    /// sender's choice); `keys` then holds only its current key
    hashed: Option<Box<std::collections::HashSet<Box<[u8]>>>>,
}

/// One frame per open container: its current key or index (Python's `_frames`), and per
/// open object the keys it has had, since a duplicate is refused (json.py's `_seen`).
///
/// A key under `SHORT_KEY` bytes (most are) is held in its fingerprint: in `seen` for the
/// duplicate test, in its frame while it is the current key, which the path names -- no
/// copy. Longer keys of the open objects lie back to back in one buffer (innermost
/// object's last: objects nest, so closing one truncates it); an object's current key, if
/// long, is the last of its keys there, so a key is copied once, for both. An object's few
/// keys are compared one by one (fingerprint first): no allocation and no hashing per key
/// (most objects have a handful). An object that reaches `LINEAR_MAX` keys moves them into
/// a hash set, where its later keys go.
#[derive(Clone, Debug, Default)]
pub struct Frames {
    frames: Vec<Frame>,
    /// the long keys of the open objects (a hashed object's: its current key only), innermost last
    keys: Vec<u8>,
    /// per key of an object in linear mode: its fingerprint, its length and (a long key)
    /// where it begins in `keys`
    seen: Vec<SeenKey>,
    /// characters of the open objects' keys
    size: usize,
}

std::thread_local! {
    /// A dropped tokenizer's frame buffers, for the next one (`crate::spare`).
    static SPARE_FRAMES: std::cell::Cell<Option<(Vec<Frame>, Vec<u8>, Vec<SeenKey>)>> = const { std::cell::Cell::new(None) };
}

impl Drop for Frames {
    fn drop(&mut self) {
        use crate::spare::small;
        if small(&self.frames) && small(&self.keys) && small(&self.seen) && self.keys.capacity() > 0 {
            self.clear();
            let buffers = (std::mem::take(&mut self.frames), std::mem::take(&mut self.keys), std::mem::take(&mut self.seen));
            crate::spare::give(&SPARE_FRAMES, buffers);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct SeenKey {
    print: u64,
    /// a long key: where it begins in `Frames::keys`
    start: usize,
    len: usize,
}

/// Why a key was refused (`Frames::add_key`).
enum KeyFault {
    Duplicate,
    /// the open objects' keys would exceed `max_seen_key_bytes`
    Budget,
}

impl Frames {
    pub fn depth(&self) -> usize {
        self.frames.len()
    }

    /// A tokenizer's frames: room for the usual nesting and keys from the start (a
    /// request or response is one tokenizer's life: growing them costs more reallocations),
    /// in the buffers a dropped tokenizer left on this thread if there are (`crate::spare`).
    fn with_capacity() -> Frames {
        let (frames, keys, seen) = crate::spare::take(&SPARE_FRAMES).unwrap_or_else(|| {
            // (a response's open objects -- its usage and details -- have ~200 bytes of long keys, ~20 keys)
            (Vec::with_capacity(8), Vec::with_capacity(512), Vec::with_capacity(32))
        });
        Frames { frames, keys, seen, size: 0 }
    }

    fn clear(&mut self) {
        self.frames.clear();
        self.keys.clear();
        self.seen.clear();
        self.size = 0;
    }

    fn in_array(&self) -> bool {
        self.frames.last().is_some_and(|f| f.array)
    }

    fn push(&mut self, array: bool) {
        let (keys_from, seen_from) = (self.keys.len(), self.seen.len());
        let frame = Frame {
            array, index: -1, has_key: false, short: [0; 8], key_start: keys_from, key_len: 0, keys_from, seen_from, chars: 0,
            hashed: None,
        };
        self.frames.push(frame);
    }

    fn pop(&mut self) {
        if let Some(frame) = self.frames.pop() {
            self.keys.truncate(frame.keys_from);
            self.seen.truncate(frame.seen_from);
            self.size -= frame.chars;
        }
    }

    fn count_value(&mut self) {
        if let Some(frame) = self.frames.last_mut() {
            if frame.array {
                frame.index += 1;
            }
        }
    }

    /// `key` is the innermost object's next key: the path's current key, unless it is a
    /// duplicate or over the budget (then the path names it all the same, as json.py's
    /// error path does).
    fn add_key(&mut self, key: &[u8], summary: KeyPrint, max_seen: usize) -> std::result::Result<(), KeyFault> {
        let Some(frame) = self.frames.last_mut() else {
            return Ok(()); // (a key is always inside an object)
        };
        frame.has_key = true;
        if frame.hashed.is_some() {
            return self.add_hashed_key(key, summary, max_seen);
        }
        let chars = summary.chars(key);
        let (print, len) = (summary.print, key.len());
        hold_current(frame, &mut self.keys, key, print);
        let start = frame.key_start;
        for seen in &self.seen[frame.seen_from..] {
            // (equal fingerprints and lengths: equal short keys; long ones are compared)
            if seen.print == print && seen.len == len && (len < SHORT_KEY || self.keys[seen.start..seen.start + len] == *key) {
                return Err(KeyFault::Duplicate);
            }
        }
        if self.size + chars > max_seen {
            return Err(KeyFault::Budget);
        }
        self.seen.push(SeenKey { print, start, len });
        frame.chars += chars;
        self.size += chars;
        if self.seen.len() - frame.seen_from >= LINEAR_MAX {
            Self::hash_keys(frame, &mut self.keys, &mut self.seen);
        }
        Ok(())
    }

    /// `add_key` of an object whose keys are hashed (kept out of the usual path).
    #[inline(never)]
    fn add_hashed_key(&mut self, key: &[u8], summary: KeyPrint, max_seen: usize) -> std::result::Result<(), KeyFault> {
        let Some(frame) = self.frames.last_mut() else { return Ok(()) };
        let chars = summary.chars(key);
        self.keys.truncate(frame.keys_from);
        hold_current(frame, &mut self.keys, key, summary.print);
        let Some(hashed) = &mut frame.hashed else { return Ok(()) };
        if hashed.contains(key) {
            return Err(KeyFault::Duplicate);
        }
        if self.size + chars > max_seen {
            return Err(KeyFault::Budget);
        }
        hashed.insert(key.into());
        frame.chars += chars;
        self.size += chars;
        Ok(())
    }

    /// An object's keys move into a hash set (the linear search would be quadratic); its
    /// current key stays in `keys`, for the path.
    #[inline(never)]
    fn hash_keys(frame: &mut Frame, keys: &mut Vec<u8>, seen: &mut Vec<SeenKey>) {
        let bytes = |s: &SeenKey| -> Box<[u8]> {
            match s.len < SHORT_KEY {
                true => s.print.to_le_bytes()[..s.len].into(),
                false => keys[s.start..s.start + s.len].into(),
            }
        };
        let hashed = seen[frame.seen_from..].iter().map(bytes).collect();
        frame.hashed = Some(Box::new(hashed));
        seen.truncate(frame.seen_from);
        if frame.key_len < SHORT_KEY {
            keys.truncate(frame.keys_from);
        } else {
            keys.drain(frame.keys_from..frame.key_start); // (the current key, the last one, stays)
        }
        frame.key_start = frame.keys_from;
    }

    fn clear_key(&mut self) {
        if let Some(frame) = self.frames.last_mut() {
            frame.has_key = false;
        }
    }

    /// The innermost object's current key (WTF-8), if it has one.
    pub fn key(&self) -> Option<&[u8]> {
        let frame = self.frames.last()?;
        (!frame.array && frame.has_key).then(|| current_key(frame, &self.keys))
    }

    /// `$.messages[3].content` (`json.render_path`), WTF-8.
    pub fn render(&self) -> Vec<u8> {
        self.render_uncounting(false)
    }

    /// The path; `uncount`: as if the innermost array's last value had not begun.
    fn render_uncounting(&self, uncount: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        out.push(b'$');
        let last = self.frames.len().wrapping_sub(1);
        for (n, frame) in self.frames.iter().enumerate() {
            if frame.array {
                let index = if uncount && n == last { frame.index - 1 } else { frame.index };
                if index >= 0 {
                    out.push(b'[');
                    out.extend_from_slice(index.to_string().as_bytes());
                    out.push(b']');
                }
            } else if frame.has_key {
                render_key(&mut out, current_key(frame, &self.keys));
            }
        }
        out
    }
}

/// `key` becomes `frame`'s current key: a short one is held in the frame (its
/// fingerprint's bytes), a longer one is copied to the end of `keys`.
#[inline]
fn hold_current(frame: &mut Frame, keys: &mut Vec<u8>, key: &[u8], print: u64) {
    frame.key_len = key.len();
    if key.len() < SHORT_KEY {
        frame.short = print.to_le_bytes();
    } else {
        frame.key_start = keys.len();
        keys.extend_from_slice(key);
    }
}

/// An object frame's current key (`hold_current`).
#[inline]
fn current_key<'k>(frame: &'k Frame, keys: &'k [u8]) -> &'k [u8] {
    if frame.key_len < SHORT_KEY {
        return &frame.short[..frame.key_len];
    }
    &keys[frame.key_start..frame.key_start + frame.key_len]
}

fn is_identifier(key: &[u8]) -> bool {
    match key.split_first() {
        Some((&first, rest)) => {
            (first.is_ascii_alphabetic() || first == b'_')
                && rest.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        }
        None => false,
    }
}

/// The inside of a JSON string as `json.dumps(text, ensure_ascii=False)` writes it
/// (without its quotes): the escapes it uses for `"`, `\\` and control characters.
pub fn escape_str_bytes(text: &[u8], out: &mut Vec<u8>) {
    out.reserve(text.len());
    let mut i = 0;
    // runs of bytes written as they are go in one copy; only `"`, `\` and controls are escaped
    while let Some(j) = find_special(text, i) {
        out.extend_from_slice(&text[i..j]);
        escape_byte(text[j], out);
        i = j + 1;
    }
    out.extend_from_slice(&text[i..]);
}

/// `"`, `\` or a control character as `json.dumps` escapes it.
fn escape_byte(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        0..=0x1f => out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        _ => out.push(b),
    }
}

/// `.key`, or `["key"]` as `json.dumps(key, ensure_ascii=False)` writes it.
fn render_key(out: &mut Vec<u8>, key: &[u8]) {
    if is_identifier(key) {
        out.push(b'.');
        out.extend_from_slice(key);
        return;
    }
    out.extend_from_slice(b"[\"");
    escape_str_bytes(key, out);
    out.extend_from_slice(b"\"]");
}

/// Python's `repr(bytes([b]))`, for the "unexpected ..." messages.
pub fn byte_repr(b: u8) -> String {
    match b {
        b'\'' => "b\"'\"".to_string(),
        b'\\' => "b'\\\\'".to_string(),
        b'\t' => "b'\\t'".to_string(),
        b'\n' => "b'\\n'".to_string(),
        b'\r' => "b'\\r'".to_string(),
        0x20..=0x7e => format!("b'{}'", b as char),
        _ => format!("b'\\x{b:02x}'"),
    }
}

// -- states -----------------------------------------------------------------

/// What the next significant byte may be (Python's `_STATE_NAMES` order), or
/// which token is being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Value,
    FirstKeyOrEnd,
    Key,
    Colon,
    FirstValueOrEnd,
    CommaOrEnd,
    InString,
    Done,
    InKey,
    /// a number is being read (its bytes in `number`)
    InNumber,
    /// a literal (`true`, `false`, `null`) is being read
    InLiteral,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Value => "value",
            State::FirstKeyOrEnd => "first key or '}'",
            State::Key => "key",
            State::Colon => "':'",
            State::FirstValueOrEnd => "first value or ']'",
            State::CommaOrEnd => "',' or a closing bracket",
            State::InString => "string",
            State::Done => "end of input",
            State::InKey => "end of key",
            State::InNumber | State::InLiteral => "value",
        }
    }
}

// -- strings ----------------------------------------------------------------

/// How a scan of string content ended.
enum StringScan {
    /// the closing quote is at this index; `escaped`: the content has an escape
    Closed { quote: usize, escaped: bool },
    /// the buffer ended: content is well-formed up to `end` (the start of an
    /// escape cut by the buffer's end, or the buffer's end); `high` is the
    /// span of the last complete `\uD800`-`\uDBFF` escape
    Cut { end: usize, high: Option<(usize, usize)> },
    /// a raw control character at this index
    Control(usize),
    /// an escape that is not one, its backslash at this index
    BadEscape(usize),
}

fn hex_value(b: u8) -> Option<u16> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u16),
        b'a'..=b'f' => Some((b - b'a' + 10) as u16),
        b'A'..=b'F' => Some((b - b'A' + 10) as u16),
        _ => None,
    }
}

/// Scan string content from `start`: the rule of json.py's `_STRING_BODY`
/// (plain bytes >= 0x20 but `"` and `\`, and whole escapes).
fn scan_string(buf: &[u8], start: usize) -> StringScan {
    let n = buf.len();
    let mut i;
    let mut high = None;
    let mut escaped = false;
    let mut next = find_special_near(buf, start);
    loop {
        let Some(j) = next else {
            return StringScan::Cut { end: n, high };
        };
        match buf[j] {
            b'"' => return StringScan::Closed { quote: j, escaped },
            b'\\' => escaped = true,
            _ => return StringScan::Control(j),
        }
        // an escape at j
        if j + 1 >= n {
            return StringScan::Cut { end: j, high };
        }
        match buf[j + 1] {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = j + 2,
            b'u' => {
                let mut value: u16 = 0;
                for k in 0..4 {
                    let Some(&h) = buf.get(j + 2 + k) else {
                        return StringScan::Cut { end: j, high };
                    };
                    match hex_value(h) {
                        Some(v) => value = value << 4 | v,
                        None => return StringScan::BadEscape(j),
                    }
                }
                i = j + 6;
                if (0xD800..0xDC00).contains(&value) {
                    high = Some((j, i));
                }
            }
            _ => return StringScan::BadEscape(j),
        }
        next = find_special_near(buf, i);
    }
}

/// Words of a string `short_plain_string` tests.
const SHORT_WORDS: usize = 4;

/// The usual key or small string value -- no escape, under 32 bytes, its closing quote in
/// this chunk -- found with a few word tests, not `scan_string`: the index of its closing
/// quote (None: anything else, or longer than `max`; `key_part` / `string_part` read it then).
#[inline(always)]
fn short_plain_string(buf: &[u8], start: usize, max: usize) -> Option<usize> {
    let mut at = start;
    for _ in 0..SHORT_WORDS {
        let word = buf.get(at..at + 8)?;
        let mask = special_mask(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        if mask != 0 {
            let quote = at + (mask.trailing_zeros() / 8) as usize;
            return (buf[quote] == b'"' && quote - start <= max).then_some(quote);
        }
        at += 8;
    }
    None
}

/// `find_special`, the first 8 bytes tested as one word first: a key, a small delta or
/// the run to a string's next escape mostly ends in them, and that costs less than the
/// blocks' setup.
#[inline]
fn find_special_near(buf: &[u8], from: usize) -> Option<usize> {
    match buf.get(from..from + 8) {
        Some(word) => match special_mask(u64::from_le_bytes(word.try_into().unwrap_or_default())) {
            0 => find_special(buf, from + 8),
            mask => Some(from + (mask.trailing_zeros() / 8) as usize),
        },
        None => buf[from..].iter().position(|&b| is_special(b)).map(|k| from + k),
    }
}

/// A byte that ends a run of plain string content: `"`, `\` or a raw control character.
#[inline(always)]
fn is_special(b: u8) -> bool {
    // bitwise, not `||`: no branch, so a loop over a block vectorises
    (b == b'"') | (b == b'\\') | (b < 0x20)
}

/// The index of the first special byte (`is_special`) at or after `from`: one pass
/// (the quote, the escape and the control-character check at once). 16-byte blocks
/// are tested with no branch per byte (the test vectorises); from the block that has
/// one, 8-byte words give its exact place (`special_mask`), the last few bytes one by one.
pub(crate) fn find_special(buf: &[u8], from: usize) -> Option<usize> {
    const BLOCK: usize = 16;
    let rest = &buf[from..];
    let mut at = 0;
    for block in rest.chunks_exact(BLOCK) {
        if block.iter().fold(0u8, |hits, &b| hits | is_special(b) as u8) != 0 {
            break;
        }
        at += BLOCK;
    }
    for word in rest[at..].chunks_exact(8) {
        let mask = special_mask(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        if mask != 0 {
            return Some(from + at + (mask.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    rest[at..].iter().position(|&b| is_special(b)).map(|k| from + at + k)
}

/// The high bit of each byte of `word` (little-endian: the first byte lowest) that
/// may be special. The lowest set bit is exact: a borrow marks a byte falsely only
/// above one that is truly marked.
pub(crate) fn special_mask(word: u64) -> u64 {
    let quote = zero_bytes(word ^ (ONES * b'"' as u64));
    let backslash = zero_bytes(word ^ (ONES * b'\\' as u64));
    let control = word.wrapping_sub(ONES * 0x20) & !word; // a byte below 0x20
    (quote | backslash | control) & HIGHS
}

/// Whether `bytes` are all ASCII: 8-byte words ORed together, tested once per 64-byte
/// block (std's `is_ascii` costs about three times as many instructions on a frame's
/// ~100 bytes; the chunk's UTF-8 check starts with this test).
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
    let mut blocks = bytes.chunks_exact(64);
    for block in &mut blocks {
        if block.chunks_exact(8).fold(0, |high, w| high | word(w)) & HIGHS != 0 {
            return false;
        }
    }
    let mut words = blocks.remainder().chunks_exact(8);
    let high = (&mut words).fold(0, |high, w| high | word(w));
    high & HIGHS == 0 && words.remainder().iter().all(|&b| b < 0x80)
}

pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;

/// A high bit in each zero byte of `v` (and perhaps above one: see `special_mask`).
pub(crate) fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v
}

/// Whether a string token's escaped text has an escape: a short text (a type, a name)
/// by 8-byte word tests -- a memchr call costs more than such a text -- a longer one by memchr.
pub fn has_escape(text: &[u8]) -> bool {
    if text.len() > 32 {
        return memchr::memchr(b'\\', text).is_some();
    }
    let Some(last) = text.len().checked_sub(8) else {
        return text.contains(&b'\\');
    };
    let backslash = |at: usize| {
        let word = u64::from_le_bytes(text[at..at + 8].try_into().unwrap_or_default());
        zero_bytes(word ^ (ONES * b'\\' as u64)) & HIGHS != 0
    };
    // words from the start, the last one ending at the text's end (it may overlap the one before)
    (0..last).step_by(8).any(backslash) || backslash(last)
}

/// Where to cut `buf[start..end]` so no UTF-8 character is split (json.py's `_utf8_tail_cut`).
/// `_HIGH_SURROGATE_TAIL`: `\\u` and a high surrogate's four hex digits (`d800`-`dbff`).
fn is_high_surrogate_escape(six: &[u8]) -> bool {
    six.len() == 6 && six[1] == b'u' && matches!(six[2], b'd' | b'D') && matches!(six[3], b'8'..=b'9' | b'a'..=b'b' | b'A'..=b'B')
        && six[4].is_ascii_hexdigit() && six[5].is_ascii_hexdigit()
}

/// `_odd_backslashes_before`: the backslash at `at` is a real escape (an even run before it).
fn odd_backslashes_before(buf: &[u8], at: usize, floor: usize) -> bool {
    let run = buf[floor..at].iter().rev().take_while(|&&b| b == b'\\').count();
    run % 2 == 0
}

fn utf8_tail_cut(buf: &[u8], start: usize, end: usize) -> usize {
    let lowest = start.max(end.saturating_sub(3));
    let mut i = end;
    while i > lowest {
        i -= 1;
        let byte = buf[i];
        if byte < 0x80 {
            return end;
        }
        if byte >= 0xC0 {
            let need = if byte < 0xE0 { 2 } else if byte < 0xF0 { 3 } else { 4 };
            return if end - i >= need { end } else { i };
        }
    }
    end
}

/// Decode a key's escaped bytes into `out` (WTF-8; surrogate pairs joined as
/// Python's json joins them, a lone surrogate kept). The bytes are well-formed.
fn decode_key(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        let simple = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            _ => 0,
        };
        if e != b'u' {
            out.push(simple);
            continue;
        }
        let unit = |at: usize| raw[at..at + 4].iter().fold(0u32, |v, &h| v << 4 | hex_value(h).unwrap_or(0) as u32);
        let mut code = unit(i);
        i += 4;
        if (0xD800..0xDC00).contains(&code) && raw.len() >= i + 6 && raw[i] == b'\\' && raw[i + 1] == b'u' {
            let low = unit(i + 2);
            if (0xDC00..0xE000).contains(&low) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                i += 6;
            }
        }
        push_wtf8(out, code);
    }
}

fn push_wtf8(out: &mut Vec<u8>, code: u32) {
    if code < 0x80 {
        out.push(code as u8);
    } else if code < 0x800 {
        out.extend_from_slice(&[0xC0 | (code >> 6) as u8, 0x80 | (code & 0x3F) as u8]);
    } else if code < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3F) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    }
}

// -- numbers ----------------------------------------------------------------

/// A number is read as long as its bytes are a prefix of json.py's
/// `_NUMBER_PREFIX` (`-?[0-9]*(\.[0-9]*)?([eE][+-]?[0-9]*)?`); then the longest
/// match of `_NUMBER` is the token. Two small automata, one byte at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prefix {
    Sign,
    Int,
    Dot,
    Exp,
    ExpSign,
    ExpDigits,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grammar {
    Start,
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
    Dead,
}

impl Prefix {
    fn step(self, b: u8) -> Option<Prefix> {
        use Prefix::*;
        match (self, b) {
            (Sign | Int, b'0'..=b'9') => Some(Int),
            (Sign | Int, b'.') => Some(Dot),
            (Sign | Int | Dot, b'e' | b'E') => Some(Exp),
            (Dot, b'0'..=b'9') => Some(Dot),
            (Exp, b'+' | b'-') => Some(ExpSign),
            (Exp | ExpSign | ExpDigits, b'0'..=b'9') => Some(ExpDigits),
            _ => None,
        }
    }
}

impl Grammar {
    fn step(self, b: u8) -> Grammar {
        use Grammar::*;
        match (self, b) {
            (Start, b'-') => Minus,
            (Start | Minus, b'0') => Zero,
            (Start | Minus, b'1'..=b'9') => Int,
            (Int, b'0'..=b'9') => Int,
            (Zero | Int, b'.') => Dot,
            (Zero | Int | Frac, b'e' | b'E') => Exp,
            (Dot | Frac, b'0'..=b'9') => Frac,
            (Exp, b'+' | b'-') => ExpSign,
            (Exp | ExpSign | ExpDigits, b'0'..=b'9') => ExpDigits,
            _ => Dead,
        }
    }

    fn accepting(self) -> bool {
        matches!(self, Grammar::Zero | Grammar::Int | Grammar::Frac | Grammar::ExpDigits)
    }
}

#[derive(Clone, Debug)]
struct Number {
    /// the number's bytes so far, kept up to `max_number_bytes + 1`
    bytes: Vec<u8>,
    run: usize,
    prefix: Prefix,
    grammar: Grammar,
    /// length of the longest `_NUMBER` match so far
    matched: usize,
    start: u64,
    /// the state the number began in (for "while expecting ...")
    began_in: State,
}

// -- skimming a container read whole --------------------------------------------------

/// Keys of the open objects a skim compares for duplicates, and containers it opens inside
/// the one it reads: past either it leaves the container to the tokens.
const SKIM_KEYS: usize = 64;
const SKIM_DEPTH: usize = 32;

/// What a skim holds to, so that no limit of the tokenizer or the reader could be met.
struct SkimBounds {
    /// containers it may open inside (`max_depth` less the open ones)
    open_room: usize,
    max_key: usize,
    max_number: usize,
    /// key characters the open objects may still take (`max_seen_key_bytes`)
    keys_room: usize,
    /// text the reader may still take (`max_value_bytes`)
    text_room: usize,
}

/// The rest of a container whose opening bracket is `data[from - 1]`, when its tokens
/// would all be plain and it ends in `data`: keys with no escape and no control character
/// (`dumps_str` writes such a key as it came), unique in their object; strings whose
/// escapes are valid, a surrogate only in a pair; numbers in JSON's grammar; no limit near. Its
/// compact text -- what `RawValue` writes of its tokens: its bytes but the whitespace
/// between them -- but the closing bracket is appended to `out`; returns the bracket's
/// index. None for anything else, errors among it: the tokens then say what is wrong, one
/// by one (`out` may have grown: the caller truncates it).
fn skim(data: &[u8], from: usize, array: bool, bounds: &SkimBounds, out: &mut Vec<u8>) -> Option<usize> {
    let start_len = out.len();
    let mut skim = Skim { data, out, run: from, bounds, keys: [(0, 0, 0); SKIM_KEYS], key_count: 0, key_chars: 0 };
    let close = skim.container(from, 0, array)?;
    skim.out.extend_from_slice(&data[skim.run..close]);
    (skim.out.len() - start_len < bounds.text_room).then_some(close) // (room for the bracket)
}

/// A skim under way: a descent over the container, `container` and `value` calling each
/// other (the nesting is bounded by `SKIM_DEPTH`).
struct Skim<'a> {
    data: &'a [u8],
    out: &'a mut Vec<u8>,
    /// the bytes from here are not in `out` yet
    run: usize,
    bounds: &'a SkimBounds,
    /// the open objects' keys, for the duplicate test: fingerprint, start, length
    keys: [(u64, u32, u32); SKIM_KEYS],
    key_count: usize,
    key_chars: usize,
}

impl Skim<'_> {
    /// Past any whitespace at `data[i]` (the text before it into `out`): the index of the
    /// next byte, which is in `data`.
    #[inline(always)]
    fn space(&mut self, mut i: usize) -> Option<usize> {
        let is_space = |b: u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t');
        if !is_space(*self.data.get(i)?) {
            return Some(i);
        }
        self.out.extend_from_slice(&self.data[self.run..i]);
        i += 1;
        while is_space(*self.data.get(i)?) {
            i += 1;
        }
        self.run = i;
        Some(i)
    }

    /// A container's members or elements from `data[i]` (past its opening bracket);
    /// `level`: containers open inside the skimmed one. The index of its closing bracket.
    fn container(&mut self, i: usize, level: usize, array: bool) -> Option<usize> {
        let close = if array { b']' } else { b'}' };
        let keys_from = self.key_count;
        let mut i = self.space(i)?;
        if self.data[i] == close {
            return Some(i);
        }
        loop {
            if !array {
                i = self.key(i, keys_from)?;
                i = self.space(i)?;
                if self.data[i] != b':' {
                    return None;
                }
                i = self.space(i + 1)?;
            }
            i = self.value(i, level)?;
            i = self.space(i)?;
            match self.data[i] {
                b',' => i = self.space(i + 1)?,
                c if c == close => {
                    self.key_count = keys_from; // (an object's keys are compared within it only)
                    return Some(i);
                }
                _ => return None,
            }
        }
    }

    /// A key at `data[i]`, new in its object (whose keys begin at `keys_from`): the index past its quote.
    fn key(&mut self, i: usize, keys_from: usize) -> Option<usize> {
        let data = self.data;
        if data[i] != b'"' {
            return None;
        }
        let end = short_plain_string(data, i + 1, usize::MAX)
            .or_else(|| find_special(data, i + 1).filter(|&end| data[end] == b'"'))?;
        let key = &data[i + 1..end];
        self.key_chars += key.len(); // (bytes: at least its characters)
        if key.len() > self.bounds.max_key || self.key_chars > self.bounds.keys_room || self.key_count == SKIM_KEYS {
            return None;
        }
        let print = KeyPrint::of(key, &data[i + 1..]).print;
        let same = |&(p, at, len): &(u64, u32, u32)| p == print && data[at as usize..(at + len) as usize] == *key;
        if self.keys[keys_from..self.key_count].iter().any(same) {
            return None;
        }
        self.keys[self.key_count] = (print, (i + 1) as u32, key.len() as u32);
        self.key_count += 1;
        Some(end + 1)
    }

    /// A value at `data[i]`: the index past it.
    fn value(&mut self, i: usize, level: usize) -> Option<usize> {
        let data = self.data;
        match data[i] {
            b'"' => skim_string(data, i + 1),
            b'{' | b'[' => {
                if level + 1 >= SKIM_DEPTH || level >= self.bounds.open_room {
                    return None;
                }
                Some(self.container(i + 1, level + 1, data[i] == b'[')? + 1)
            }
            b'-' | b'0'..=b'9' => skim_number(data, i).filter(|&end| end - i <= self.bounds.max_number),
            b't' if data[i..].starts_with(b"true") => Some(i + 4),
            b'f' if data[i..].starts_with(b"false") => Some(i + 5),
            b'n' if data[i..].starts_with(b"null") => Some(i + 4),
            _ => None,
        }
    }
}

/// The code unit of the `\uXXXX` escape at `data[j]` (None: not one, or cut).
pub fn u_escape(data: &[u8], j: usize) -> Option<u16> {
    let escape = data.get(j..j + 6)?;
    if escape[..2] != *b"\\u" {
        return None;
    }
    escape[2..].iter().try_fold(0u16, |code, &h| Some(code << 4 | hex_value(h)?))
}

/// The index after the closing quote of a string whose content begins at `data[i]`, if
/// its escapes are valid and every surrogate is in a pair (a lone one has rules of its own).
fn skim_string(data: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let j = find_special_near(data, i)?;
        match data[j] {
            b'"' => return Some(j + 1),
            b'\\' => match *data.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i = j + 2,
                b'u' => {
                    let code = u_escape(data, j)?;
                    i = j + 6;
                    if (0xDC00..=0xDFFF).contains(&code) {
                        return None; // (a lone low surrogate)
                    }
                    if (0xD800..=0xDBFF).contains(&code) {
                        // a high surrogate is read only with its low one (a lone one has rules of its own)
                        if !(0xDC00..=0xDFFF).contains(&u_escape(data, i)?) {
                            return None;
                        }
                        i += 6;
                    }
                }
                _ => return None,
            },
            _ => return None, // a control character
        }
    }
}

/// The end of a number in JSON's grammar beginning at `data[i]` (what follows it is the
/// skim's to check: a number the chunk's end cuts is not skimmed).
fn skim_number(data: &[u8], mut i: usize) -> Option<usize> {
    fn digits(data: &[u8], mut i: usize) -> usize {
        while i < data.len() && data[i].is_ascii_digit() {
            i += 1;
        }
        i
    }
    i += usize::from(data[i] == b'-');
    match *data.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(data, i + 1),
        _ => return None,
    }
    if data.get(i) == Some(&b'.') {
        let end = digits(data, i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(data.get(i), Some(b'e' | b'E')) {
        i += 1;
        i += usize::from(matches!(data.get(i), Some(b'+' | b'-')));
        let end = digits(data, i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

// -- the tokenizer ----------------------------------------------------------

const LITERALS: [(&[u8], &str); 3] = [(b"true", "true"), (b"false", "false"), (b"null", "null")];

/// Bytes a string or key may carry to the next chunk: a cut escape (5) after a
/// high surrogate (6). `HEAD` chunk bytes complete them whatever they were.
const HEAD: usize = 12;

/// json.py's `_SLICE`: the most one scan takes of a chunk (a bigger chunk is scanned in
/// slices; where a slice ends, a string's fragment ends, in both backends).
pub const SLICE: usize = 1 << 18;

pub struct Tokenizer {
    pub limits: Limits,
    state: State,
    frames: Frames,
    /// bytes scanned so far (absolute; the carry counts, a held UTF-8 tail does not)
    base: u64,
    /// bytes of an unfinished escape / UTF-8 character / surrogate pair of the
    /// string or key being read (at most 11)
    carry: Vec<u8>,
    string_open: bool,
    string_start: u64,
    key: Vec<u8>,
    key_start: u64,
    decoded: Vec<u8>,
    number: Number,
    literal: usize,
    literal_matched: usize,
    literal_start: u64,
    /// the start of a UTF-8 character the last chunk ended inside: not scanned
    /// yet (it is scanned with the next chunk), so a fault found inside it is
    /// the same for any cut
    utf8_held: Vec<u8>,
    /// scanning the head (carry + the chunk's first bytes), whose end is not the chunk's
    in_head: bool,
    /// string content the head checked, delivered with the rest of the chunk's
    deferred: Vec<u8>,
    deferred_at: u64,
    closed: bool,
    failed: Option<Error>,
    /// no skim for a container opened before this offset: one failed here, and the ones
    /// around it would scan the same bytes to fail again (the end of the data it had)
    skim_blocked_until: u64,
}

impl Default for Tokenizer {
    fn default() -> Self {
        Tokenizer::new(Limits::default())
    }
}

impl Tokenizer {
    pub fn new(limits: Limits) -> Self {
        Tokenizer {
            limits,
            state: State::Value,
            frames: Frames::with_capacity(),
            base: 0,
            carry: Vec::new(),
            string_open: false,
            string_start: 0,
            key: Vec::new(),
            key_start: 0,
            decoded: Vec::new(),
            number: Number {
                bytes: Vec::new(),
                run: 0,
                prefix: Prefix::Sign,
                grammar: Grammar::Start,
                matched: 0,
                start: 0,
                began_in: State::Value,
            },
            literal: 0,
            literal_matched: 0,
            literal_start: 0,
            utf8_held: Vec::new(),
            in_head: false,
            deferred: Vec::new(),
            deferred_at: 0,
            closed: false,
            failed: None,
            skim_blocked_until: 0,
        }
    }

    /// Ready for a new document, offsets from 0 again (keeps the buffers' capacity).
    pub fn reset(&mut self) {
        self.state = State::Value;
        self.frames.clear();
        self.base = 0;
        self.carry.clear();
        self.string_open = false;
        self.key.clear();
        self.number.bytes.clear();
        self.utf8_held.clear();
        self.in_head = false;
        self.deferred.clear();
        self.closed = false;
        self.failed = None;
        self.skim_blocked_until = 0;
    }

    /// Bytes consumed so far (absolute).
    pub fn offset(&self) -> u64 {
        self.base
    }

    pub fn depth(&self) -> usize {
        self.frames.depth()
    }

    pub fn frames(&self) -> &Frames {
        &self.frames
    }

    pub fn path(&self) -> Vec<u8> {
        self.frames.render()
    }

    fn error(&self, class: ErrorClass, message: impl Into<String>, at: u64) -> Error {
        Error::new(class, message).at(at).with_path(self.frames.render())
    }

    /// An error between chunks (bad UTF-8 after the scan stopped, end of input
    /// inside a held character): a number or literal being read does not count
    /// yet in its array's index (json.py carries it unscanned).
    fn error_between_chunks(&self, class: ErrorClass, message: &str, at: u64) -> Error {
        let uncount = matches!(self.state, State::InNumber | State::InLiteral);
        Error::new(class, message).at(at).with_path(self.frames.render_uncounting(uncount))
    }

    fn unexpected(&self, byte: u8, state: State, at: u64) -> Error {
        self.error(ErrorClass::JsonSyntax, format!("unexpected {} while expecting {}", byte_repr(byte), state.name()), at)
    }

    fn spent(&mut self, err: Error) -> Error {
        self.failed = Some(err.clone());
        err
    }

    pub fn feed<S: Sink>(&mut self, data: &[u8], sink: &mut S) -> Result<()> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.closed {
            return Err(Error::new(ErrorClass::JsonSyntax, "data fed after close()").at(self.base));
        }
        // a chunk over `SLICE` is scanned in slices, as json.py's `feed` scans it: a string
        // longer than a slice arrives in fragments at the same places in both backends
        for slice in data.chunks(SLICE) {
            if let Err(e) = self.feed_checked(slice, sink) {
                return Err(self.spent(e));
            }
        }
        Ok(())
    }

    fn feed_checked<S: Sink>(&mut self, data: &[u8], sink: &mut S) -> Result<()> {
        let held = std::mem::take(&mut self.utf8_held);
        let check = self.check_utf8(&held, data);
        let prefix: &[u8] = if check.held_completes { &held } else { &[] };
        self.scan(prefix, &data[..check.scan_end], sink)?;
        if check.bad {
            // everything before the bad sequence is delivered; it starts where the scan stopped
            self.closed = true;
            return Err(self.error_between_chunks(ErrorClass::InvalidUtf8, "invalid UTF-8", self.base));
        }
        Ok(())
    }

    /// UTF-8 check of `held + data` (json.py's incremental decoder step, and its
    /// early refusal of an encoded surrogate). Only whole characters are scanned:
    /// a character the chunk end cuts is held (`self.utf8_held`).
    fn check_utf8(&mut self, held: &[u8], data: &[u8]) -> Utf8Check {
        let mut from = 0;
        let mut held_completes = held.is_empty();
        if !held.is_empty() {
            let take = (4 - held.len()).min(data.len());
            let mut head = [0u8; 4];
            head[..held.len()].copy_from_slice(held);
            head[held.len()..held.len() + take].copy_from_slice(&data[..take]);
            let head = &head[..held.len() + take];
            match simdutf8::compat::from_utf8(head) {
                Ok(_) => from = take,
                Err(e) if e.valid_up_to() >= held.len() => from = e.valid_up_to() - held.len(),
                Err(e) if e.error_len().is_some() => {
                    return Utf8Check { held_completes: false, scan_end: 0, bad: true };
                }
                Err(_) => {
                    // still inside the held character: the whole (short) chunk is held with it
                    self.utf8_held.extend_from_slice(held);
                    self.utf8_held.extend_from_slice(data);
                    return Utf8Check { held_completes: false, scan_end: 0, bad: false };
                }
            }
            held_completes = true;
        }
        let rest = &data[from..];
        if is_ascii(rest) {
            return Utf8Check { held_completes, scan_end: data.len(), bad: false };
        }
        match simdutf8::compat::from_utf8(rest) {
            Ok(_) => Utf8Check { held_completes, scan_end: data.len(), bad: false },
            Err(e) => {
                let end = from + e.valid_up_to();
                if e.error_len().is_some() {
                    Utf8Check { held_completes, scan_end: end, bad: true }
                } else {
                    self.utf8_held.extend_from_slice(&data[end..]);
                    Utf8Check { held_completes, scan_end: end, bad: false }
                }
            }
        }
    }

    /// End of input: flush a trailing number; fail if the value is unfinished.
    pub fn close<S: Sink>(&mut self, sink: &mut S) -> Result<()> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let result = self.finish(sink);
        result.map_err(|e| self.spent(e))
    }

    fn finish<S: Sink>(&mut self, sink: &mut S) -> Result<()> {
        let total = self.base;
        if !self.utf8_held.is_empty() {
            return Err(self.error_between_chunks(ErrorClass::InvalidUtf8, "input ends inside a UTF-8 character", total));
        }
        match self.state {
            State::InNumber => self.end_number(sink)?,
            State::InLiteral => {
                let word = LITERALS[self.literal].1;
                return Err(self.error(ErrorClass::TruncatedInput, format!("input ends inside {word}"), total));
            }
            _ => {}
        }
        if self.state == State::Done {
            return Ok(());
        }
        let what = if total == 0 {
            "empty input".to_string()
        } else {
            format!("input ends while expecting {}", self.state.name())
        };
        Err(self.error(ErrorClass::TruncatedInput, what, total))
    }

    /// A string value's content from `start` in `buf` (`at`: offset of `buf[0]`);
    /// what is well-formed up to the buffer's end is delivered, but for a cut unit.
    fn string_part<S: Sink>(&mut self, buf: &[u8], start: usize, at: u64, sink: &mut S) -> Result<Resume> {
        match scan_string(buf, start) {
            StringScan::Closed { quote: q, .. } => {
                self.emit_deferred(sink)?;
                let content = &buf[start..q];
                if self.string_open {
                    sink.token(Token::StringClose(content), at + start as u64, &self.frames)?;
                } else {
                    sink.token(Token::String(content), self.string_start, &self.frames)?;
                }
                self.string_open = false;
                self.after_value();
                Ok(Resume::At(q + 1))
            }
            StringScan::Cut { end, high } => {
                let mut cut = end;
                if cut > start && buf[cut - 1] >= 0x80 {
                    cut = utf8_tail_cut(buf, start, cut);
                }
                if let Some((h, e)) = high {
                    if e == cut && h >= start {
                        cut = h; // keep a surrogate pair together
                    }
                }
                if self.in_head {
                    // Not the chunk's end: json.py delivers a string's content of a
                    // chunk only once all of it is checked, so this waits for the rest.
                    self.deferred.extend_from_slice(&buf[start..cut]);
                    self.deferred_at = at + start as u64;
                    return Ok(Resume::Carry(cut));
                }
                self.emit_deferred(sink)?;
                if cut > start {
                    self.emit_fragment(&buf[start..cut], at + start as u64, sink)?;
                }
                Ok(Resume::Carry(cut))
            }
            StringScan::Control(j) => {
                self.before_fault(buf, start, j, at, sink)?;
                Err(self.control(buf[j], at + j as u64))
            }
            StringScan::BadEscape(j) => {
                self.before_fault(buf, start, j, at, sink)?;
                Err(self.bad_escape(at + j as u64))
            }
        }
    }

    /// A fault inside a string value at `j`: first what a chunk ending just before it
    /// delivers (json.py `_string_body`) -- a decoder refuses a wrong-typed string at its
    /// first fragment, and which error comes must not depend on the cut.
    fn before_fault<S: Sink>(&mut self, buf: &[u8], start: usize, j: usize, at: u64, sink: &mut S) -> Result<()> {
        let mut cut = j;
        if cut >= start + 6 && buf[cut - 6] == b'\\' && is_high_surrogate_escape(&buf[cut - 6..cut])
            && odd_backslashes_before(buf, cut - 6, start)
        {
            cut -= 6; // keep a surrogate pair together
        }
        self.emit_deferred(sink)?;
        if cut > start {
            self.emit_fragment(&buf[start..cut], at + start as u64, sink)?;
        }
        Ok(())
    }

    /// A fragment that does not end the string: the first (at the quote) or a later one.
    fn emit_fragment<S: Sink>(&mut self, content: &[u8], at: u64, sink: &mut S) -> Result<()> {
        if self.string_open {
            sink.token(Token::StringPart(content), at, &self.frames)
        } else {
            self.string_open = true;
            sink.token(Token::StringOpen(content), self.string_start, &self.frames)
        }
    }

    /// String content the head checked (`deferred`), delivered first; mostly there is none.
    #[inline]
    fn emit_deferred<S: Sink>(&mut self, sink: &mut S) -> Result<()> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        self.emit_deferred_now(sink)
    }

    #[inline(never)]
    fn emit_deferred_now<S: Sink>(&mut self, sink: &mut S) -> Result<()> {
        let deferred = std::mem::take(&mut self.deferred);
        let result = self.emit_fragment(&deferred, self.deferred_at, sink);
        self.deferred = deferred;
        self.deferred.clear();
        result
    }

    fn control(&self, byte: u8, at: u64) -> Error {
        self.error(ErrorClass::ControlCharacter, format!("raw control character 0x{byte:02x} in string"), at)
    }

    fn bad_escape(&self, at: u64) -> Error {
        self.error(ErrorClass::JsonSyntax, "invalid escape sequence in string", at)
    }

    /// A key `Frames::add_key` refused (the path names it).
    fn key_fault(&self, fault: KeyFault, key: &[u8], at: u64) -> Error {
        match fault {
            KeyFault::Duplicate => {
                let mut err = self.error(ErrorClass::DuplicateKey, format!("duplicate key {}", py_str_repr(key)), at);
                err.key = Some(key.to_vec());
                err
            }
            KeyFault::Budget => {
                let limit = self.limits.max_seen_key_bytes;
                self.error(ErrorClass::BudgetExceeded, format!("the open objects' keys exceed max_seen_key_bytes ({limit})"), at)
            }
        }
    }

    fn key_too_long(&self) -> Error {
        self.error(
            ErrorClass::BudgetExceeded,
            format!("object key longer than max_key_bytes ({})", self.limits.max_key_bytes),
            self.key_start,
        )
    }

    /// A key's content from `start` in `buf`: held (`self.key`) until it ends;
    /// the limit is on the whole key's bytes between its quotes, in byte order
    /// with its faults.
    fn key_part<S: Sink>(&mut self, buf: &[u8], start: usize, at: u64, sink: &mut S) -> Result<Resume> {
        let max = self.limits.max_key_bytes;
        let held = self.key.len();
        match scan_string(buf, start) {
            StringScan::Closed { quote: q, escaped } => {
                if held + (q - start) > max {
                    return Err(self.key_too_long());
                }
                if held == 0 && !escaped {
                    self.key_done(&buf[start..q], &buf[start..], sink)?;
                    return Ok(Resume::At(q + 1));
                }
                // a key in pieces (held from the last chunk) or with escapes: decoded in its own buffer
                let mut raw = std::mem::take(&mut self.key);
                raw.extend_from_slice(&buf[start..q]);
                let result = if escaped || memchr::memchr(b'\\', &raw).is_some() {
                    let mut decoded = std::mem::take(&mut self.decoded);
                    decode_key(&raw, &mut decoded);
                    let result = self.key_done(&decoded, &decoded, sink);
                    self.decoded = decoded;
                    result
                } else {
                    self.key_done(&raw, &raw, sink)
                };
                raw.clear();
                self.key = raw;
                result.map(|()| Resume::At(q + 1))
            }
            StringScan::Cut { end, .. } => {
                self.key.extend_from_slice(&buf[start..end]);
                if self.key.len() > max {
                    return Err(self.key_too_long());
                }
                self.state = State::InKey;
                Ok(Resume::Carry(end))
            }
            StringScan::Control(j) | StringScan::BadEscape(j) if held + (j - start) > max => Err(self.key_too_long()),
            StringScan::Control(j) => Err(self.control(buf[j], at + j as u64)),
            StringScan::BadEscape(j) => Err(self.bad_escape(at + j as u64)),
        }
    }

    /// A whole key (decoded; `window` begins with it): into the path (refused when a
    /// duplicate or over the budget: the path names it all the same), then to the sink.
    #[inline(always)]
    fn key_done<S: Sink>(&mut self, key: &[u8], window: &[u8], sink: &mut S) -> Result<()> {
        self.add_key(key, window)?;
        sink.token(Token::Key(key), self.key_start, &self.frames)?;
        self.state = State::Colon;
        Ok(())
    }

    /// The key into the path (`key_done`'s first step).
    #[inline(always)]
    fn add_key(&mut self, key: &[u8], window: &[u8]) -> Result<()> {
        match self.frames.add_key(key, KeyPrint::of(key, window), self.limits.max_seen_key_bytes) {
            Ok(()) => Ok(()),
            Err(fault) => Err(self.key_fault(fault, key, self.key_start)),
        }
    }

    /// The usual key -- `data[start..q]`, plain, its closing quote at `q` -- and, when `: `
    /// and its value's first token follow whole in the chunk, that token with it in one
    /// call (`Sink::member`); a scalar or string value followed by `, "` and the next such
    /// key goes on with it here, not through the loop's states (what they would do with
    /// those bytes). Returns where the scan goes on, in the state this left.
    #[inline(always)]
    fn short_members<S: Sink>(&mut self, data: &[u8], mut start: usize, mut q: usize, sink: &mut S) -> Result<usize> {
        loop {
            let key = &data[start..q];
            self.add_key(key, &data[start..])?;
            self.state = State::Colon;
            let next = self.after_key(data, q + 1);
            let value = if self.state == State::Value { self.whole_value(data, next) } else { None };
            let Some((token, end)) = value else {
                sink.token(Token::Key(key), self.key_start, &self.frames)?;
                return Ok(next);
            };
            sink.member(key, self.key_start, token, self.base + next as u64, &self.frames)?;
            self.after_whole_value(&token);
            let end = self.skim_whole(data, end, &token, sink)?;
            if self.state != State::CommaOrEnd || data.get(end) != Some(&b',') {
                return Ok(end);
            }
            let quote = if data.get(end + 1) == Some(&b' ') { end + 2 } else { end + 1 };
            if data.get(quote) != Some(&b'"') {
                return Ok(end);
            }
            // (the comma of an object: the loop's `CommaOrEnd` and `Key` arms)
            self.state = State::Key;
            self.frames.clear_key();
            self.key_start = self.base + quote as u64;
            match short_plain_string(data, quote + 1, self.limits.max_key_bytes) {
                Some(close) => (start, q) = (quote + 1, close),
                None => return Ok(quote), // (the loop's `Key` arm reads it)
            }
        }
    }

    /// The first token of a value at `data[i]` when it is whole in the chunk in the common
    /// forms -- a short plain string, a scalar (`whole_scalar`), or `{` / `[` within the
    /// depth limit -- and where it ends (None: the byte-by-byte readers take it, and they
    /// would deliver the same token at the same offset here).
    #[inline(always)]
    fn whole_value<'d>(&self, data: &'d [u8], i: usize) -> Option<(Token<'d>, usize)> {
        let within = || self.frames.depth() < self.limits.max_depth;
        match *data.get(i)? {
            b'"' => short_plain_string(data, i + 1, usize::MAX).map(|q| (Token::String(&data[i + 1..q]), q + 1)),
            b'{' if within() => Some((Token::ObjectStart, i + 1)),
            b'[' if within() => Some((Token::ArrayStart, i + 1)),
            _ => self.whole_scalar(data, i),
        }
    }

    /// The state after a value's first token `whole_value` found (what `value_start` and
    /// the readers leave).
    #[inline(always)]
    fn after_whole_value(&mut self, token: &Token<'_>) {
        match token {
            Token::ObjectStart => {
                self.frames.push(false);
                self.state = State::FirstKeyOrEnd;
            }
            Token::ArrayStart => {
                self.frames.push(true);
                self.state = State::FirstValueOrEnd;
            }
            _ => self.after_value(),
        }
    }

    /// After a value's first token (the scan goes on at `data[end]`): a container the sink
    /// reads whole as text (`Sink::whole_text`) is skimmed into its buffer when it can be
    /// (`skim`), and only its closing bracket delivered. Where the scan goes on.
    #[inline(always)]
    fn skim_whole<S: Sink>(&mut self, data: &[u8], end: usize, token: &Token<'_>, sink: &mut S) -> Result<usize> {
        let array = match token {
            Token::ObjectStart => false,
            Token::ArrayStart => true,
            _ => return Ok(end),
        };
        // (not in the head, a copy whose end is not the chunk's; not a document's own object,
        // which no reader takes whole: a stream frame asks one question less)
        if self.in_head || self.frames.depth() == 1 || self.base + (end as u64) <= self.skim_blocked_until {
            return Ok(end);
        }
        let Some((out, text_room)) = sink.whole_text() else { return Ok(end) };
        let limits = &self.limits;
        let bounds = SkimBounds {
            open_room: limits.max_depth.saturating_sub(self.frames.depth()),
            max_key: limits.max_key_bytes,
            max_number: limits.max_number_bytes,
            keys_room: limits.max_seen_key_bytes.saturating_sub(self.frames.size),
            text_room,
        };
        let mark = out.len();
        let Some(close) = skim(data, end, array, &bounds, out) else {
            out.truncate(mark);
            // (the containers around this one would fail the same way, or end before: none is
            // skimmed in the rest of the data, so no byte is scanned twice by failing skims)
            self.skim_blocked_until = self.base + data.len() as u64;
            return Ok(end);
        };
        self.frames.pop();
        let closing = if array { Token::ArrayEnd } else { Token::ObjectEnd };
        sink.token(closing, self.base + close as u64, &self.frames)?;
        self.after_value();
        Ok(close + 1)
    }

    fn after_value(&mut self) {
        self.state = if self.frames.depth() == 0 { State::Done } else { State::CommaOrEnd };
    }

    fn start_number(&mut self, b: u8, at: u64, began_in: State) {
        let number = &mut self.number;
        number.bytes.clear();
        number.run = 0;
        number.prefix = Prefix::Sign;
        number.grammar = Grammar::Start;
        number.matched = 0;
        number.start = at;
        number.began_in = began_in;
        // the first byte ('-' or a digit) is always a prefix
        number.grammar = number.grammar.step(b);
        number.prefix = if b == b'-' { Prefix::Sign } else { Prefix::Int };
        number.bytes.push(b);
        number.run = 1;
        if number.grammar.accepting() {
            number.matched = 1;
        }
        self.state = State::InNumber;
    }

    /// Read number bytes from `data[i..]`; returns where the number's run ended
    /// in `data` (None: it runs to the chunk end and may go on).
    fn number_bytes(&mut self, data: &[u8], mut i: usize) -> Result<Option<usize>> {
        let keep = self.limits.max_number_bytes + 1;
        while i < data.len() {
            let b = data[i];
            let Some(prefix) = self.number.prefix.step(b) else {
                return Ok(Some(i));
            };
            let number = &mut self.number;
            number.prefix = prefix;
            number.grammar = number.grammar.step(b);
            number.run += 1;
            if number.bytes.len() < keep {
                number.bytes.push(b);
            }
            if number.grammar.accepting() {
                number.matched = number.run;
                if number.matched > self.limits.max_number_bytes {
                    return Err(self.number_too_long());
                }
            }
            i += 1;
        }
        Ok(None)
    }

    fn number_too_long(&self) -> Error {
        self.error(
            ErrorClass::BudgetExceeded,
            format!("number longer than max_number_bytes ({})", self.limits.max_number_bytes),
            self.number.start,
        )
    }

    /// The number's run ended: its longest match is the token; a byte of the
    /// run after the match is then the next (unexpected) byte.
    fn end_number<S: Sink>(&mut self, sink: &mut S) -> Result<()> {
        let number = &self.number;
        if number.matched == 0 {
            return Err(self.unexpected(number.bytes[0], number.began_in, number.start));
        }
        sink.token(Token::Number(&number.bytes[..number.matched]), number.start, &self.frames)?;
        let (matched, run, start) = (number.matched, number.run, number.start);
        self.after_value();
        if matched < run {
            let byte = self.number.bytes[matched];
            return Err(self.after_value_byte(byte, start + matched as u64));
        }
        Ok(())
    }

    /// A byte that cannot follow a value (a number byte after a number's match).
    fn after_value_byte(&self, byte: u8, at: u64) -> Error {
        if self.state == State::Done {
            self.error(ErrorClass::JsonSyntax, "trailing data after the JSON value", at)
        } else {
            self.unexpected(byte, self.state, at)
        }
    }

    fn literal_bytes<S: Sink>(&mut self, data: &[u8], mut i: usize, base: u64, sink: &mut S) -> Result<usize> {
        let (word, name) = LITERALS[self.literal];
        while i < data.len() && self.literal_matched < word.len() {
            let b = data[i];
            if b != word[self.literal_matched] {
                let at = base + i as u64;
                return Err(self.error(ErrorClass::JsonSyntax, format!("unexpected {} inside {name}", byte_repr(b)), at));
            }
            self.literal_matched += 1;
            i += 1;
        }
        if self.literal_matched == word.len() {
            let token = match self.literal {
                0 => Token::True,
                1 => Token::False,
                _ => Token::Null,
            };
            sink.token(token, self.literal_start, &self.frames)?;
            self.after_value();
        }
        Ok(i)
    }

    /// Scan `prefix` (a held UTF-8 character the chunk completes) and `data`,
    /// after the carry. The carry and the prefix are scanned with the chunk's
    /// first `HEAD` bytes (a copy of at most 26 bytes: the only bytes the
    /// tokenizer copies to scan); the rest of the chunk is scanned in place.
    fn scan<S: Sink>(&mut self, prefix: &[u8], data: &[u8], sink: &mut S) -> Result<()> {
        let mut i = 0;
        if !self.carry.is_empty() || !prefix.is_empty() {
            let carried = self.carry.len();
            let take = data.len().min(HEAD);
            let mut head = std::mem::take(&mut self.carry);
            head.extend_from_slice(prefix);
            head.extend_from_slice(&data[..take]);
            let head_at = self.base - carried as u64;
            self.base = head_at;
            self.in_head = take < data.len();
            let scanned = self.scan_from(&head, 0, sink);
            self.in_head = false;
            scanned?;
            if take == data.len() {
                self.base = head_at + head.len() as u64;
                return Ok(());
            }
            // The head was not the chunk's end: what it left unfinished is in the
            // chunk (HEAD is more than can be carried); scan it again from there.
            let unfinished = self.carry.len();
            debug_assert!(unfinished <= take);
            self.carry.clear();
            i = take - unfinished;
            self.base = head_at + (carried + prefix.len()) as u64;
        }
        self.scan_from(data, i, sink)?;
        self.base += data.len() as u64;
        Ok(())
    }

    /// The lexer loop over `data[i..]` (`data[0]` at offset `self.base`); the
    /// carry has been dealt with; a string or key unfinished at the end leaves
    /// its unfinished bytes in the carry.
    fn scan_from<S: Sink>(&mut self, data: &[u8], mut i: usize, sink: &mut S) -> Result<()> {
        let n = data.len();
        let base = self.base;
        while i < n {
            match self.state {
                State::InString => {
                    match self.string_part(data, i, base, sink)? {
                        Resume::At(next) => i = next,
                        Resume::Carry(cut) => {
                            self.carry.extend_from_slice(&data[cut..]);
                            return Ok(());
                        }
                    }
                    continue;
                }
                State::InKey => {
                    match self.key_part(data, i, base, sink)? {
                        Resume::At(next) => i = self.after_key(data, next),
                        Resume::Carry(cut) => {
                            self.carry.extend_from_slice(&data[cut..]);
                            return Ok(());
                        }
                    }
                    continue;
                }
                State::InNumber => {
                    match self.number_bytes(data, i)? {
                        Some(end) => {
                            self.end_number(sink)?;
                            i = end;
                        }
                        None => return Ok(()),
                    }
                    continue;
                }
                State::InLiteral => {
                    i = self.literal_bytes(data, i, base, sink)?;
                    continue;
                }
                _ => {}
            }
            let c = data[i];
            if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                i += 1;
                continue;
            }
            let state = self.state;
            let at = base + i as u64;
            // (one arm per state; the order of the checks in each is json.py's)
            match state {
                // (a value, or the first one of an array where `]` would end it instead)
                State::Value | State::FirstValueOrEnd if state == State::Value || c != b']' => {
                    if let Some((token, end)) = self.whole_value(data, i) {
                        self.frames.count_value();
                        sink.token(token, at, &self.frames)?;
                        self.after_whole_value(&token);
                        i = self.skim_whole(data, end, &token, sink)?;
                        continue;
                    }
                    self.value_start(c, state, at, sink)?
                }
                State::FirstValueOrEnd => self.container_end(c, state, at, sink)?,
                State::CommaOrEnd | State::FirstKeyOrEnd if c == b'}' || c == b']' => {
                    self.container_end(c, state, at, sink)?
                }
                State::Key | State::FirstKeyOrEnd => {
                    if c != b'"' {
                        return Err(self.unexpected(c, state, at));
                    }
                    self.key_start = at;
                    if let Some(q) = short_plain_string(data, i + 1, self.limits.max_key_bytes) {
                        i = self.short_members(data, i + 1, q, sink)?;
                        continue;
                    }
                    self.key.clear();
                    match self.key_part(data, i + 1, base, sink)? {
                        Resume::At(next) => i = self.after_key(data, next),
                        Resume::Carry(cut) => {
                            self.carry.extend_from_slice(&data[cut..]);
                            return Ok(());
                        }
                    }
                    continue;
                }
                State::CommaOrEnd => {
                    if c != b',' {
                        return Err(self.unexpected(c, state, at));
                    }
                    if self.frames.in_array() {
                        self.state = State::Value;
                    } else {
                        self.state = State::Key;
                        self.frames.clear_key(); // a key is due: the path names the object
                    }
                    if data.get(i + 1) == Some(&b' ') {
                        i += 1; // (the usual space after a comma: one round of the loop less)
                    }
                }
                State::Colon => {
                    if c != b':' {
                        return Err(self.unexpected(c, state, at));
                    }
                    self.state = State::Value;
                }
                _ => return Err(self.error(ErrorClass::JsonSyntax, "trailing data after the JSON value", at)),
            }
            i += 1;
        }
        Ok(())
    }

    /// After a key (state `Colon`) at `data[next..]`: the usual `:` and one space
    /// are taken here, sparing the loop two rounds (what the loop would do with them).
    #[inline]
    fn after_key(&mut self, data: &[u8], mut next: usize) -> usize {
        if data.get(next) == Some(&b':') {
            self.state = State::Value;
            next += 1;
            if data.get(next) == Some(&b' ') {
                next += 1;
            }
        }
        next
    }

    /// A scalar that begins at `data[i]` and ends in `data` in the common forms -- an
    /// integer (`-?(0|[1-9][0-9]*)`, within `max_number_bytes`) followed by a byte that
    /// cannot go on a number, or `true` / `false` / `null` -- and where it ends (None:
    /// anything else).
    #[inline(always)]
    fn whole_scalar<'d>(&self, data: &'d [u8], i: usize) -> Option<(Token<'d>, usize)> {
        Some(match data[i] {
            b'-' | b'0'..=b'9' => {
                let digits = i + usize::from(data[i] == b'-');
                let run = data[digits..].iter().take_while(|b| b.is_ascii_digit()).count();
                let end = digits + run;
                let next = data.get(end).copied();
                let ends = next.is_some_and(|b| !matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
                if !ends || run == 0 || (run > 1 && data[digits] == b'0') || end - i > self.limits.max_number_bytes {
                    return None;
                }
                (Token::Number(&data[i..end]), end)
            }
            b't' if data[i..].starts_with(b"true") => (Token::True, i + 4),
            b'f' if data[i..].starts_with(b"false") => (Token::False, i + 5),
            b'n' if data[i..].starts_with(b"null") => (Token::Null, i + 4),
            _ => return None,
        })
    }

    /// The first byte `c` of a value (state `Value`, or `FirstValueOrEnd` but `]`).
    #[inline]
    fn value_start<S: Sink>(&mut self, c: u8, state: State, at: u64, sink: &mut S) -> Result<()> {
        self.frames.count_value();
        match c {
            b'"' => {
                self.string_open = false;
                self.string_start = at;
                self.state = State::InString;
            }
            b'{' | b'[' => {
                if self.frames.depth() >= self.limits.max_depth {
                    return Err(self.error(
                        ErrorClass::NestingTooDeep,
                        format!("nesting deeper than {}", self.limits.max_depth),
                        at,
                    ));
                }
                let array = c == b'[';
                sink.token(if array { Token::ArrayStart } else { Token::ObjectStart }, at, &self.frames)?;
                self.frames.push(array);
                self.state = if array { State::FirstValueOrEnd } else { State::FirstKeyOrEnd };
            }
            b'-' | b'0'..=b'9' => {
                self.start_number(c, at, state);
                if self.number.matched > self.limits.max_number_bytes {
                    return Err(self.number_too_long());
                }
            }
            b't' | b'f' | b'n' => {
                self.literal = match c {
                    b't' => 0,
                    b'f' => 1,
                    _ => 2,
                };
                self.literal_matched = 1;
                self.literal_start = at;
                self.state = State::InLiteral;
            }
            _ => return Err(self.unexpected(c, state, at)),
        }
        Ok(())
    }

    /// `}` or `]` where a container may end.
    #[inline(always)]
    fn container_end<S: Sink>(&mut self, c: u8, state: State, at: u64, sink: &mut S) -> Result<()> {
        let array = self.frames.in_array();
        if (c == b']') != array {
            return Err(self.unexpected(c, state, at));
        }
        self.frames.pop();
        sink.token(if array { Token::ArrayEnd } else { Token::ObjectEnd }, at, &self.frames)?;
        self.after_value();
        Ok(())
    }
}

struct Utf8Check {
    /// the held character is complete: scan it before the chunk
    held_completes: bool,
    /// the chunk's bytes to scan (whole characters, before any bad sequence)
    scan_end: usize,
    /// a bad sequence starts at `scan_end` (or in the held bytes)
    bad: bool,
}

/// Where a string or key scan left the buffer.
enum Resume {
    /// the token ended: go on at this index
    At(usize),
    /// the buffer ended inside the token: the bytes from this index are carried
    Carry(usize),
}

#[cfg(test)]
mod tests {
    use super::find_special;

    #[test]
    fn has_escape_finds_a_backslash_at_any_place() {
        for len in 0..48 {
            let plain: Vec<u8> = (0..len).map(|i| [b'a', b'[', b']', 0x5d, 0xdc, b'"'][i % 6]).collect();
            assert!(!super::has_escape(&plain), "len {len}");
            for at in 0..len {
                let mut text = plain.clone();
                text[at] = b'\\';
                assert!(super::has_escape(&text), "len {len} at {at}");
            }
        }
    }

    #[test]
    fn is_ascii_finds_a_high_byte_at_any_place() {
        for len in 0..200 {
            let plain: Vec<u8> = (0..len).map(|i| (i * 31 % 128) as u8).collect();
            assert!(super::is_ascii(&plain), "len {len}");
            for at in 0..len {
                for high in [0x80, 0xc3, 0xff] {
                    let mut bytes = plain.clone();
                    bytes[at] = high;
                    assert!(!super::is_ascii(&bytes), "len {len} at {at} byte {high:#x}");
                }
            }
        }
    }

    #[test]
    fn find_special_finds_the_first_quote_backslash_or_control_at_any_place() {
        for len in 0..40 {
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    // plain bytes around it, some just above the special ones (0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80..)
                    let mut buf: Vec<u8> = (0..len).map(|i| [b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x80, 0xff, 0xe4][i % 9]).collect();
                    buf[at] = special;
                    if at + 1 < len {
                        buf[at + 1] = b'"'; // a later one does not count
                    }
                    for from in 0..=at {
                        assert_eq!(find_special(&buf, from), Some(at), "len {len} at {at} from {from} byte {special:#x}");
                    }
                    assert_eq!(find_special(&buf, at + 1), if at + 1 < len { Some(at + 1) } else { None });
                }
            }
            let plain: Vec<u8> = (0..len).map(|i| 0x20 + ((i * 7) % 0x60) as u8).filter(|&b| b != b'"' && b != b'\\').collect();
            assert_eq!(find_special(&plain, 0), None);
        }
    }

    use super::*;

    #[derive(Default)]
    struct Collect(Vec<(u8, Vec<u8>, u64)>);

    impl Sink for Collect {
        fn token(&mut self, token: Token<'_>, offset: u64, _path: &Frames) -> Result<()> {
            self.0.push((token.kind(), token.bytes().unwrap_or_default().to_vec(), offset));
            Ok(())
        }
    }

    /// Tokens with string fragments joined (the parity rule).
    fn joined(tokens: &[(u8, Vec<u8>, u64)]) -> Vec<(u8, Vec<u8>, u64)> {
        let mut out: Vec<(u8, Vec<u8>, u64)> = Vec::new();
        for (kind, bytes, offset) in tokens {
            match kind {
                7 => out.push((6, bytes.clone(), *offset)),
                8 | 9 => out.last_mut().unwrap().1.extend_from_slice(bytes),
                _ => out.push((*kind, bytes.clone(), *offset)),
            }
        }
        out
    }

    fn run(chunks: &[&[u8]]) -> (Vec<(u8, Vec<u8>, u64)>, Option<Error>) {
        let mut tokenizer = Tokenizer::default();
        let mut sink = Collect::default();
        for chunk in chunks {
            if let Err(e) = tokenizer.feed(chunk, &mut sink) {
                return (sink.0, Some(e));
            }
        }
        let err = tokenizer.close(&mut sink).err();
        (sink.0, err)
    }

    fn every_cut(doc: &[u8]) {
        let (whole, whole_err) = run(&[doc]);
        // (before an error, a cut may deliver the start of a string the whole document never does)
        for cut in 0..=doc.len() {
            let (tokens, err) = run(&[&doc[..cut], &doc[cut..]]);
            assert_eq!(err, whole_err, "cut at {cut} of {:?}", String::from_utf8_lossy(doc));
            if err.is_none() {
                assert_eq!(joined(&tokens), joined(&whole), "cut at {cut} of {:?}", String::from_utf8_lossy(doc));
            }
        }
        let bytes: Vec<&[u8]> = doc.chunks(1).collect();
        let (tokens, err) = run(&bytes);
        assert_eq!(err, whole_err);
        if err.is_none() {
            assert_eq!(joined(&tokens), joined(&whole));
        }
    }

    /// A `]` after a comma is refused as json.py refuses it, whether the value before the
    /// comma was read at once (`whole_scalar`) or byte by byte (cut inside it).
    #[test]
    fn a_closing_bracket_where_a_value_is_due() {
        for (doc, at, path) in [
            (&b"[1,]"[..], 3, &b"$[1]"[..]),
            (b"[null, ]", 7, b"$[1]"),
            (b"[[], 25,]", 8, b"$[2]"),
            (b"{\"a\": [false,]}", 13, b"$.a[1]"),
        ] {
            let (_, err) = run(&[doc]);
            let err = err.expect("refused");
            assert_eq!(err.message, "unexpected b']' while expecting value", "{doc:?}");
            assert_eq!((err.offset, err.path.as_deref()), (Some(at), Some(path)), "{doc:?}");
            every_cut(doc);
        }
        let (_, err) = run(&[b"[]"]);
        assert!(err.is_none());
    }

    #[test]
    fn tokens_and_offsets() {
        let (tokens, err) = run(&[br#"{"a": [1, "x\n", true, null, false, -2.5e3], "b\u00e9": {}}"#]);
        assert!(err.is_none());
        let kinds: Vec<u8> = tokens.iter().map(|t| t.0).collect();
        assert_eq!(kinds, vec![1, 5, 3, 10, 6, 11, 13, 12, 10, 4, 5, 1, 2, 2]);
        assert_eq!(tokens[4], (6, b"x\\n".to_vec(), 10));
        assert_eq!(tokens[10].1, "bé".as_bytes());
    }

    #[test]
    fn same_tokens_and_errors_for_every_cut() {
        for doc in [
            &br#"{"model": "m", "messages": [{"role": "user", "content": "h\u00e9llo \ud83d\ude00 w\"rld"}], "n": 12.5e-3}"#[..],
            "{\"k\u{e9}y\": \"\u{4e16}\u{754c}\", \"a\": [true, false, null, 0, -1]}".as_bytes(),
            br#"[1, 2, tru"#,
            br#"[1, 2, trux]"#,
            br#"{"a" 1}"#,
            br#"{"a":1,}"#,
            br#"[01]"#,
            br#"[-]"#,
            br#"[1.]"#,
            br#"{"a\q": 1}"#,
            b"[\"a\x01\"]",
            br#"["\uD83D"]"#,
            br#"{"a": "b"} x"#,
            br#"{"a": "unterminated"#,
            br#"{"a": 1, "b": {"a": 2}, "\u0061": 3}"#,
        ] {
            every_cut(doc);
        }
    }

    #[test]
    fn fragments_never_split_a_unit() {
        let doc = "[\"\u{e9}\\n\\ud83d\\ude00\u{4e16}\"]".as_bytes();
        for cut in 1..doc.len() {
            let (tokens, _) = run(&[&doc[..cut], &doc[cut..]]);
            for (kind, bytes, _) in &tokens {
                if (6..=9).contains(kind) {
                    assert!(std::str::from_utf8(bytes).is_ok(), "cut {cut}: {bytes:?}");
                    assert!(!bytes.ends_with(b"\\"), "cut {cut}");
                    let text = String::from_utf8_lossy(bytes);
                    assert!(!text.ends_with("\\ud83d"), "cut {cut}: pair split");
                }
            }
        }
    }

    #[test]
    fn errors_name_class_offset_and_path() {
        let (_, err) = run(&[br#"{"a": [1, 2, x]}"#]);
        let err = err.unwrap();
        assert_eq!(err.class, ErrorClass::JsonSyntax);
        assert_eq!(err.message, "unexpected b'x' while expecting value");
        assert_eq!(err.offset, Some(13));
        assert_eq!(err.path.as_deref(), Some(&b"$.a[2]"[..]));
        let (_, err) = run(&[b"[\"\xff\"]"]);
        assert_eq!(err.unwrap().class, ErrorClass::InvalidUtf8);
        let (_, err) = run(&[b""]);
        assert_eq!(err.unwrap().message, "empty input");
    }

    #[test]
    fn limits() {
        let small = Limits { max_depth: 2, max_key_bytes: 3, max_number_bytes: 4, max_seen_key_bytes: 100 };
        let mut tokenizer = Tokenizer::new(small);
        let mut sink = Collect::default();
        let err = tokenizer.feed(b"[[[", &mut sink).unwrap_err();
        assert_eq!(err.class, ErrorClass::NestingTooDeep);
        assert_eq!(err.offset, Some(2));
        for (doc, cut) in [(&b"{\"abcd\": 1}"[..], 3), (b"{\"abcd\": 1}", 9), (b"[12345]", 3), (b"[12345]", 7)] {
            let mut tokenizer = Tokenizer::new(small);
            let mut sink = Collect::default();
            let err = tokenizer
                .feed(&doc[..cut], &mut sink)
                .and_then(|_| tokenizer.feed(&doc[cut..], &mut sink))
                .and_then(|_| tokenizer.close(&mut sink))
                .unwrap_err();
            assert_eq!(err.class, ErrorClass::BudgetExceeded, "{doc:?}");
        }
    }

    /// Duplicates are found and distinct keys kept whatever the keys' lengths (a key of
    /// fewer than 8 bytes is its own fingerprint), escapes, non-ASCII bytes and cuts; the
    /// seen-keys budget counts characters.
    #[test]
    fn duplicate_keys_of_any_length() {
        let keys = ["", "a", "ab", "type", "text", "index", "delta", "content", "logprobs", "finish_reason",
                    "system_fingerprint", "\u{e9}t\u{e9}", "\u{4e16}\u{754c}\u{4e16}", "abcdefgh", "abcdefgi"];
        for (i, a) in keys.iter().enumerate() {
            for (j, b) in keys.iter().enumerate() {
                let doc = format!("{{\"{a}\": 1, \"x\": {{\"{b}\": 2}}, \"{b}\": 3}}");
                let (_, err) = run(&[doc.as_bytes()]);
                let expected = (i == j || *b == "x").then_some(ErrorClass::DuplicateKey);
                assert_eq!(err.as_ref().map(|e| e.class), expected, "{doc}");
                every_cut(doc.as_bytes());
            }
        }
        // the same key written with an escape is a duplicate
        let (_, err) = run(&[br#"{"type": 1, "t\u0079pe": 2}"#]);
        assert_eq!(err.map(|e| (e.class, e.offset)), Some((ErrorClass::DuplicateKey, Some(12))));
        let budget = Limits { max_seen_key_bytes: 4, ..Limits::default() };
        for (doc, refused) in [("{\"\u{e9}\u{e9}\u{e9}\u{e9}\": 1}", false), ("{\"\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\": 1}", true)] {
            let mut tokenizer = Tokenizer::new(budget);
            let result = tokenizer.feed(doc.as_bytes(), &mut Collect::default());
            assert_eq!(result.err().map(|e| e.class), refused.then_some(ErrorClass::BudgetExceeded), "{doc}");
        }
    }

    /// The path names each open object's current key, short (held in its frame) or long
    /// (in the keys buffer), before and after an object's keys are hashed (`LINEAR_MAX`),
    /// and a hashed object still refuses a duplicate of a short or a long key.
    #[test]
    fn paths_and_duplicates_with_short_and_long_keys() {
        let names: Vec<String> = (0..20).map(|i| if i % 2 == 0 { format!("k{i}") } else { format!("long_key_{i}") }).collect();
        let members: Vec<String> = names.iter().map(|k| format!("\"{k}\": 0")).collect();
        let body = members.join(", ");
        for (last, path) in [("\"k4\": 1", None), ("\"long_key_7\": 1", None), ("\"k20\": [tru", Some("$.k20[0]")),
                             ("\"long_key_21\": {\"ab\": {\"abcdefghij\": nul", Some("$.long_key_21.ab.abcdefghij"))] {
            let doc = format!("{{{body}, {last}}}");
            let (_, err) = run(&[doc.as_bytes()]);
            let err = err.expect("an error");
            match path {
                None => assert_eq!(err.class, ErrorClass::DuplicateKey, "{doc}"),
                Some(path) => assert_eq!(err.path.as_deref(), Some(path.as_bytes()), "{doc}"),
            }
            every_cut(doc.as_bytes());
        }
        for doc in [&br#"{"abcdefghij": {"ab": [1, {"xyz": tru}]}}"#[..], br#"{"ab": {"abcdefghij": [1, {"x": nul}]}}"#] {
            let (_, err) = run(&[doc]);
            let path = err.and_then(|e| e.path.clone()).unwrap_or_default();
            let expected: &[u8] = if doc[2] == b'a' && doc[4] == b'c' { b"$.abcdefghij.ab[1].xyz" } else { b"$.ab.abcdefghij[1].x" };
            assert_eq!(path, expected);
        }
    }

    #[test]
    fn keys_decode_like_python() {
        let mut out = Vec::new();
        decode_key(br#"a\u00e9\ud83d\ude00\ud800x\n"#, &mut out);
        let mut expected = "a\u{e9}\u{1f600}".as_bytes().to_vec();
        expected.extend_from_slice(&[0xED, 0xA0, 0x80]);
        expected.extend_from_slice(b"x\n");
        assert_eq!(out, expected);
        let mut path = Vec::new();
        render_key(&mut path, b"a b\"\x01");
        assert_eq!(path, b"[\"a b\\\"\\u0001\"]");
    }

    /// The compact text a `RawValue` writes of a document's tokens.
    fn compact_by_tokens(doc: &[u8]) -> Vec<u8> {
        struct Copy(crate::jsonwriter::RawValue, Vec<u8>);
        impl Sink for Copy {
            fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
                self.0.feed(&token, &mut self.1);
                Ok(())
            }
        }
        let mut copy = Copy(crate::jsonwriter::RawValue::new(), Vec::new());
        let mut tokenizer = Tokenizer::default();
        tokenizer.feed(doc, &mut copy).and_then(|()| tokenizer.close(&mut copy)).expect("a valid document");
        copy.1
    }

    fn skimmed(doc: &[u8], bounds: &SkimBounds) -> Option<Vec<u8>> {
        let mut out = b"~".to_vec(); // (a skim appends)
        let close = skim(doc, 1, doc[0] == b'[', bounds, &mut out)?;
        assert_eq!(close, doc.len() - 1, "{}", String::from_utf8_lossy(doc));
        out.remove(0);
        out.insert(0, doc[0]);
        out.push(doc[close]);
        Some(out)
    }

    const ROOMY: SkimBounds = SkimBounds { open_room: 8, max_key: 16, max_number: 12, keys_room: 100, text_room: 1000 };

    #[test]
    fn a_skim_writes_the_text_the_tokens_would() {
        let docs: &[&str] = &[
            "{}",
            "[]",
            " [ ] ".trim(),
            r#"{"a": 1, "b": [true, false, null, -0.5e+3, 0, 10E2, "x\"y\\\/\b\f\n\r\t\u00e9\uFFFF"], "c": {}}"#,
            "{\n  \"usage\": {\n    \"input_tokens\": 3,\t\"output_tokens\": 5\r\n  },\n  \"t\": \"caf\u{e9} \u{1f600}\"\n}",
            r#"[{"a": 1}, {"a": 2}, [[[]]], {"b": {"a": {"b": 1}}, "a": 0}]"#,
            r#"{"a": {"x": 1}, "b": {"x": 2}, "x": 3}"#,
            r#"["\ud83d\ude00 \uD83D\uDE00", "\u00e9"]"#,
            r#"{"k\u00e9y": 1}"#.split('\\').next().unwrap_or_default(), // (cut: not a document)
        ];
        for doc in docs.iter().filter(|doc| doc.ends_with(['}', ']'])) {
            let expected = compact_by_tokens(doc.as_bytes());
            assert_eq!(skimmed(doc.as_bytes(), &ROOMY).as_deref(), Some(&expected[..]), "{doc}");
        }
    }

    #[test]
    fn a_skim_leaves_to_the_tokens_what_is_not_plain_or_whole() {
        let refused: &[(&str, &str)] = &[
            (r#"{"a": 1, "a": 2}"#, "a duplicate key"),
            (r#"{"a": {"b": 1, "b": 2}}"#, "a duplicate key inside"),
            (r#"{"k\u0041": 1}"#, "an escaped key"),
            ("{\"a\u{1}\": 1}", "a control character in a key"),
            ("[\"a\tb\"]", "a control character in a string"),
            (r#"["\ud83d"]"#, "a lone high surrogate"),
            (r#"["\ud83d\u0041"]"#, "a high surrogate before another escape"),
            (r#"["\ud83dx"]"#, "a high surrogate before a character"),
            (r#"["\ude00"]"#, "a lone low surrogate"),
            (r#"["\x"]"#, "an unknown escape"),
            (r#"["\u12G4"]"#, "a bad \\u escape"),
            ("[01]", "a leading zero"),
            ("[1.]", "no fraction digits"),
            ("[1e]", "no exponent digits"),
            ("[-]", "a sign alone"),
            ("[NaN]", "not JSON"),
            ("[tru]", "a cut literal"),
            ("[truex]", "a literal run on"),
            ("[1,]", "a trailing comma"),
            (r#"{"a" 1}"#, "no colon"),
            (r#"{"a": 1,}"#, "a trailing comma in an object"),
            ("[1 2]", "no comma"),
            ("[1}", "the wrong bracket"),
            ("[\u{c}1]", "not JSON whitespace"),
            (r#"{"abcdefghijklmnopq": 1}"#, "a key over max_key"),
            ("[1234567890123]", "a number over max_number"),
            ("[[[[[[[[[[]]]]]]]]]]", "nesting over open_room"),
        ];
        for (doc, why) in refused {
            assert_eq!(skimmed(doc.as_bytes(), &ROOMY), None, "{why}: {doc}");
        }
        // the end not in the data: every cut of a document is left to the tokens
        let doc = br#"{"a": [1, "two", {"b": null}], "c": 3.5}"#;
        for cut in 1..doc.len() {
            let mut out = Vec::new();
            assert_eq!(skim(&doc[..cut], 1, false, &ROOMY, &mut out), None, "cut at {cut}");
        }
        // the budgets: exactly at each is skimmed, one less is not
        let doc = br#"{"ab": {"cd": 1}, "ef": [12345]}"#; // keys: 6 bytes; text: `{"ab":{"cd":1},"ef":[12345]}`
        let text = compact_by_tokens(doc).len() - 1; // (the opening bracket is the reader's already)
        for (bounds, fits) in [
            (SkimBounds { keys_room: 6, ..ROOMY }, true),
            (SkimBounds { keys_room: 5, ..ROOMY }, false),
            (SkimBounds { text_room: text, ..ROOMY }, true),
            (SkimBounds { text_room: text - 1, ..ROOMY }, false),
            (SkimBounds { max_number: 5, ..ROOMY }, true),
            (SkimBounds { max_number: 4, ..ROOMY }, false),
            (SkimBounds { max_key: 2, ..ROOMY }, true),
            (SkimBounds { max_key: 1, ..ROOMY }, false),
            (SkimBounds { open_room: 1, ..ROOMY }, true),
            (SkimBounds { open_room: 0, ..ROOMY }, false),
        ] {
            assert_eq!(skimmed(doc, &bounds).is_some(), fits, "keys {} text {} number {} key {} open {}",
                       bounds.keys_room, bounds.text_room, bounds.max_number, bounds.max_key, bounds.open_room);
        }
    }

    /// A sink that reads every value of a document whole as text, as the machine's `Read::Raw`
    /// does: its tokens into a `RawValue`, and its buffer offered to the skim.
    #[derive(Default)]
    struct WholeText {
        copier: crate::jsonwriter::RawValue,
        text: Vec<u8>,
        asked: usize,
    }

    impl Sink for WholeText {
        fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
            self.copier.feed(&token, &mut self.text);
            Ok(())
        }

        fn whole_text(&mut self) -> Option<(&mut Vec<u8>, usize)> {
            self.asked += 1;
            Some((&mut self.text, usize::MAX))
        }
    }

    #[test]
    fn a_document_read_whole_gives_the_tokens_text_however_cut() {
        // (skimmed containers beside ones that are not: an escaped key, a lone surrogate, a
        // value the cut ends, each making the skims around it fail)
        let docs: &[&[u8]] = &[
            br#"{"a": [1, {"b": "x"}, [true, null]], "c": {"d": {"e": -1.5e3}}}"#,
            br#"{"a": [{"k\u0041": 1}, {"b": 2}], "c": [[1], [2]], "d": {"e": 3}}"#,
            br#"{"t": ["\ud800", {"x": "\ud83d\ude00"}], "u": {"v": [1, 2, {"w": {}}]}}"#,
            br#"[{"a": 1}, [{"b": [{"c": [{"d": 2}]}]}], {"e": "f\"g"}]"#,
        ];
        for doc in docs {
            let expected = compact_by_tokens(doc);
            for cut in 0..=doc.len() {
                let mut tokenizer = Tokenizer::default();
                let mut sink = WholeText::default();
                tokenizer.feed(&doc[..cut], &mut sink).and_then(|()| tokenizer.feed(&doc[cut..], &mut sink))
                    .and_then(|()| tokenizer.close(&mut sink)).expect("a valid document");
                assert_eq!(sink.text, expected, "{} cut at {cut}", String::from_utf8_lossy(doc));
                assert!(sink.asked > 0);
            }
        }
    }
}
