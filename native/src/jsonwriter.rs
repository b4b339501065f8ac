//! Writing JSON incrementally, for encoders; re-serialising tokens, for decoders
//! (`src/interlingua/jsonwriter.py`: `JsonWriter`, `RawValue`, `dumps`, `key_bytes`).
//!
//! `JsonWriter` keeps only the separators' state (one flag per open
//! container), so an encoder can write a string it is still receiving
//! fragment by fragment. `RawValue` turns tokenizer tokens back into compact
//! JSON text: strings and numbers are copied as they arrived (escapes kept),
//! so the result is JSON-equal to the input and a string's bytes are never
//! re-encoded.
//!
//! Both append to the `out` they are given: each Python call's one `write`
//! (the separator with its item, so a hold counts it as one) is one append
//! here; an encoder writing into a hold passes a scratch vector and moves it
//! into the hold whole. Python's `key_bytes` cache of short names is a Python
//! speed-up with no behaviour: here a name is escaped as it is written.
//! Owner: helper S.
#![forbid(unsafe_code)]

use crate::json::Token;
pub use crate::value::{dumps, dumps_str};

/// `key_bytes(key)`: a member name (or a role) as a JSON string (`dumps` of it:
/// a lone surrogate in it makes it ASCII-escaped whole).
pub fn key_bytes(key: impl AsRef<[u8]>, out: &mut Vec<u8>) {
    dumps_str(key.as_ref(), out);
}

/// `LITERAL_TEXT[kind]`: the text of `true`, `false`, `null` (other tokens: `None`).
pub fn literal_text(token: &Token<'_>) -> Option<&'static [u8]> {
    match token {
        Token::True => Some(b"true"),
        Token::False => Some(b"false"),
        Token::Null => Some(b"null"),
        _ => None,
    }
}

/// Writes one JSON document, element by element (`JsonWriter`).
#[derive(Clone, Debug, Default)]
pub struct JsonWriter {
    /// per open container: nothing written in it yet
    first: Firsts,
}

/// `JsonWriter._first`, a stack of flags: the innermost `INLINE_DEPTH` in the bits of a
/// word (an encoder's documents nest a few levels: no allocation per writer), deeper
/// ones in a list.
#[derive(Clone, Debug, Default)]
struct Firsts {
    /// bit `i`: the flag of the open container at depth `i` (below `INLINE_DEPTH`)
    bits: u64,
    depth: usize,
    /// the flags below depth `INLINE_DEPTH`.. (rarely any)
    deeper: Vec<bool>,
}

const INLINE_DEPTH: usize = 64;

impl Firsts {
    fn push(&mut self, first: bool) {
        if self.depth < INLINE_DEPTH {
            self.bits = (self.bits & !(1 << self.depth)) | ((first as u64) << self.depth);
        } else {
            self.deeper.push(first);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        if self.depth > INLINE_DEPTH {
            self.deeper.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// The innermost flag, now false: whether it was true (`None`: no open container).
    #[inline]
    fn take_last(&mut self) -> Option<bool> {
        let at = self.depth.checked_sub(1)?;
        if at < INLINE_DEPTH {
            let first = self.bits & (1 << at) != 0;
            self.bits &= !(1 << at);
            Some(first)
        } else {
            self.deeper.last_mut().map(std::mem::take)
        }
    }
}

impl JsonWriter {
    pub fn new() -> Self {
        JsonWriter::default()
    }

    /// Open containers.
    pub fn depth(&self) -> usize {
        self.first.depth
    }

    /// What goes before the next item of the open container: `,` or nothing.
    fn sep(&mut self, out: &mut Vec<u8>) {
        if self.first.take_last() == Some(false) {
            out.push(b',');
        }
    }

    /// `_first.append(True)`: a container its owner opened by raw text (an encoder's
    /// message opened with its first member, a hold whose elements sit inside a list).
    pub fn open_raw(&mut self) {
        self.first.push(true);
    }

    /// `_first.pop()`: such a container closed by raw text.
    pub fn close_raw(&mut self) {
        self.first.pop();
    }

    /// `_separate`: the separator alone.
    pub fn separate(&mut self, out: &mut Vec<u8>) {
        self.sep(out);
    }

    /// `{`, and `head`: the object's first members as JSON text (`"k":v`), if any.
    pub fn begin_object(&mut self, head: &[u8], out: &mut Vec<u8>) {
        self.sep(out);
        out.push(b'{');
        out.extend_from_slice(head);
        self.first.push(head.is_empty());
    }

    pub fn end_object(&mut self, out: &mut Vec<u8>) {
        self.first.pop();
        out.push(b'}');
    }

    pub fn end_array(&mut self, out: &mut Vec<u8>) {
        self.first.pop();
        out.push(b']');
    }

    /// `"name":raw`.
    pub fn raw_member(&mut self, name: impl AsRef<[u8]>, raw: &[u8], out: &mut Vec<u8>) {
        self.sep(out);
        key_bytes(name, out);
        out.push(b':');
        out.extend_from_slice(raw);
    }

    /// `"name":{` / `"name":[` -- a container member written piecewise.
    pub fn open_member(&mut self, name: impl AsRef<[u8]>, opener: &[u8], out: &mut Vec<u8>) {
        self.sep(out);
        key_bytes(name, out);
        out.push(b':');
        out.extend_from_slice(opener);
        self.first.push(true);
    }

    /// A whole JSON value as an array element.
    pub fn raw_element(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        self.sep(out);
        out.extend_from_slice(raw);
    }

    /// `"name":"` -- a string member whose escaped fragments the caller writes.
    pub fn string_member_open(&mut self, name: impl AsRef<[u8]>, out: &mut Vec<u8>) {
        self.sep(out);
        key_bytes(name, out);
        out.extend_from_slice(b":\"");
    }
}

/// Where `RawValue` writes: the text itself (a `Vec<u8>`), or only its length (`RawLen`).
pub trait RawOut {
    fn byte(&mut self, b: u8);
    fn bytes(&mut self, bytes: &[u8]);
    /// a member name (`key_bytes`)
    fn key(&mut self, key: &[u8]);
}

impl RawOut for Vec<u8> {
    fn byte(&mut self, b: u8) {
        self.push(b);
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn key(&mut self, key: &[u8]) {
        key_bytes(key, self);
    }
}

/// The length of the text `RawValue` would write (a value read as data is held to
/// `max_value_bytes` by it, and needs no text): only a key is written, to a scratch
/// buffer (its escaping decides its length).
#[derive(Clone, Debug, Default)]
pub struct RawLen {
    pub len: usize,
    scratch: Vec<u8>,
}

impl RawOut for RawLen {
    fn byte(&mut self, _b: u8) {
        self.len += 1;
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.len += bytes.len();
    }

    fn key(&mut self, key: &[u8]) {
        if crate::value::is_plain(key) {
            self.len += key.len() + 2; // (the usual key: nothing to escape, so it is itself in quotes)
            return;
        }
        self.scratch.clear();
        key_bytes(key, &mut self.scratch);
        self.len += self.scratch.len();
    }
}

/// Feeds on the tokens of one JSON value; appends its compact text to `out`
/// (`RawValue`). `feed` returns true once the value is complete.
#[derive(Clone, Debug)]
pub struct RawValue {
    depth: usize,
    /// nothing written at this level yet (no comma needed)
    first: bool,
}

impl Default for RawValue {
    fn default() -> Self {
        RawValue { depth: 0, first: true }
    }
}

impl RawValue {
    pub fn new() -> Self {
        RawValue::default()
    }

    pub fn feed(&mut self, token: &Token<'_>, out: &mut impl RawOut) -> bool {
        match *token {
            Token::Key(key) => {
                if !self.first {
                    out.byte(b',');
                }
                out.key(key);
                out.byte(b':');
                self.first = true; // the member's value follows without a comma
                false
            }
            Token::ObjectEnd | Token::ArrayEnd => {
                out.byte(if matches!(token, Token::ObjectEnd) { b'}' } else { b']' });
                self.depth = self.depth.saturating_sub(1);
                self.first = false;
                self.depth == 0
            }
            Token::StringPart(part) => {
                out.bytes(part);
                false
            }
            Token::StringClose(part) => {
                out.bytes(part);
                out.byte(b'"');
                self.first = false;
                self.depth == 0
            }
            Token::ObjectStart | Token::ArrayStart => {
                self.separate(out);
                out.byte(if matches!(token, Token::ObjectStart) { b'{' } else { b'[' });
                self.depth += 1;
                self.first = true;
                false
            }
            Token::StringOpen(part) => {
                self.separate(out);
                out.byte(b'"');
                out.bytes(part);
                false
            }
            Token::String(text) => {
                self.separate(out);
                out.byte(b'"');
                out.bytes(text);
                out.byte(b'"');
                self.scalar_done()
            }
            Token::Number(text) => {
                self.separate(out);
                out.bytes(text);
                self.scalar_done()
            }
            Token::True | Token::False | Token::Null => {
                self.separate(out);
                out.bytes(literal_text(token).unwrap_or_default());
                self.scalar_done()
            }
        }
    }

    fn separate(&self, out: &mut impl RawOut) {
        if !self.first {
            out.byte(b',');
        }
    }

    fn scalar_done(&mut self) -> bool {
        self.first = false;
        self.depth == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Result;
    use crate::json::{Frames, Sink, Tokenizer};

    /// Tokens into a `RawValue`, remembering where it said it was complete.
    struct Raw {
        value: RawValue,
        out: Vec<u8>,
        complete_at: Vec<usize>,
    }

    impl Sink for Raw {
        fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
            if self.value.feed(&token, &mut self.out) {
                self.complete_at.push(self.out.len());
            }
            Ok(())
        }
    }

    #[test]
    fn separators_at_any_depth() {
        // `{"a":[1,{"a":[1,...,2]},2]}`, nested past the flags a word holds
        for depth in [1, 2, 63, 64, 65, 70] {
            let (mut w, mut out) = (JsonWriter::new(), Vec::new());
            for _ in 0..depth {
                w.begin_object(b"", &mut out);
                w.open_member("a", b"[", &mut out);
                w.raw_element(b"1", &mut out);
            }
            for _ in 0..depth {
                w.raw_element(b"2", &mut out);
                w.end_array(&mut out);
                w.end_object(&mut out);
            }
            let expected = [r#"{"a":[1"#.to_string(), r#",{"a":[1"#.repeat(depth - 1), ",2]}".repeat(depth)].concat();
            assert_eq!((w.depth(), String::from_utf8(out).unwrap()), (0, expected), "depth {depth}");
        }
    }

    fn raw_text(doc: &[u8], cut: usize) -> (Vec<u8>, Vec<usize>) {
        let mut sink = Raw { value: RawValue::new(), out: Vec::new(), complete_at: Vec::new() };
        let mut tokenizer = Tokenizer::default();
        tokenizer.feed(&doc[..cut], &mut sink).unwrap();
        tokenizer.feed(&doc[cut..], &mut sink).unwrap();
        tokenizer.close(&mut sink).unwrap();
        (sink.out, sink.complete_at)
    }

    #[test]
    fn raw_value_is_the_compact_text_at_every_cut() {
        let table: &[(&[u8], &[u8])] = &[
            (br#" { "a" : [ 1 , 2.50 , -0 , true , false , null ] , "b\u00e9" : { } , "c" : "x\"\u00e9y" } "#,
             r#"{"a":[1,2.50,-0,true,false,null],"bé":{},"c":"x\"\u00e9y"}"#.as_bytes()),
            (br#"[ [ ] , { "\ud800" : "\ud800" } ]"#, br#"[[],{"\ud800":"\ud800"}]"#),
            (br#""plain""#, br#""plain""#),
            (b"12", b"12"),
        ];
        for (doc, compact) in table {
            for cut in 0..=doc.len() {
                let (out, complete_at) = raw_text(doc, cut);
                assert_eq!(out, *compact, "cut {cut} of {:?}", String::from_utf8_lossy(doc));
                assert_eq!(complete_at, vec![compact.len()]);
            }
        }
    }

    #[test]
    fn writer_separators() {
        let mut w = JsonWriter::new();
        let mut out = Vec::new();
        w.begin_object(b"", &mut out);
        w.raw_member("model", b"\"m\"", &mut out);
        w.open_member("messages", b"[", &mut out);
        w.begin_object(br#""role":"user""#, &mut out);
        w.string_member_open("content", &mut out);
        out.extend_from_slice(b"hi\"");
        w.end_object(&mut out);
        w.raw_element(b"1", &mut out);
        w.separate(&mut out);
        w.end_array(&mut out);
        w.raw_member(b"k\xed\xa0\x80".as_slice(), b"null", &mut out);
        w.end_object(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"model":"m","messages":[{"role":"user","content":"hi"},1,],"k\ud800":null}"#
        );
        assert_eq!(w.depth(), 0);
        let mut key = Vec::new();
        key_bytes("é\n", &mut key);
        assert_eq!(key, "\"é\\n\"".as_bytes());
    }
}
