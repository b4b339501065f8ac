//! JSON text read in place, without a value tree, where the text is already what
//! `jsonwriter.dumps(json.loads(text))` writes (owner: sq).
//!
//! The codecs read small values whole -- a tool definition, its parameter schema -- and
//! Python's rules for them are written over `json.loads` data: `value.get(key)`, its
//! members in order, `dumps` of a member. Most such text needs no tree: a tool read by
//! `RawValue` (compact, the source's escapes) is already `dumps` output when its strings
//! hold only the escapes `dumps` writes and its numbers are plain integers. For such
//! text (`Raw::canonical` says which) every sub-value's slice is its own `dumps`, so a
//! rule can be run over the slices (`Raw`) or over the tree (`&Value`) with the same
//! result: rules are written once, generic over `Data`. Anything else -- a `\u`
//! escape, `\/`, a float, `-0`, whitespace, nesting deeper than `MAX_DEPTH`, text that is
//! not UTF-8 -- is not canonical, and the caller parses it as before (the same value,
//! the same errors). A repeated key is not looked for (the tokenizer refuses them, so
//! no decoder's text has one); `Raw::get` reads the last, as `json.loads` keeps it.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::jsonwriter::dumps_str;
use crate::value::Value;

/// Deepest nesting `Raw::canonical` reads (deeper text goes the tree's way).
pub const MAX_DEPTH: u32 = 128;

/// JSON data as the rules read it: a `&Value`, or canonical text (`Raw`).
pub trait Data<'a>: Copy {
    type Members: Iterator<Item = (Key<'a>, Self)>;
    fn is_object(self) -> bool;
    fn is_null(self) -> bool;
    fn is_str(self) -> bool;
    /// a string equal to `text`
    fn str_is(self, text: &str) -> bool;
    /// `value.get(key)` of an object (None: absent, or not an object)
    fn get(self, key: &str) -> Option<Self>;
    /// an object's members in order (nothing for another value)
    fn members(self) -> Self::Members;
    /// `jsonwriter.dumps(value)` appended to `out`
    fn dump(self, out: &mut Vec<u8>);

    fn to_json(self) -> Vec<u8> {
        let mut out = Vec::new();
        self.dump(&mut out);
        out
    }

    /// An object's members, read once (`lookup` finds a key among them).
    fn member_list(self) -> Vec<(Key<'a>, Self)> {
        self.members().collect()
    }

    /// `dumps(value)`: borrowed where the text is at hand (`Raw`).
    fn json(self) -> Cow<'a, [u8]> {
        Cow::Owned(self.to_json())
    }
}

/// `value.get(key)` among an object's `member_list` (the last of a repeated key).
pub fn lookup<'a, D: Data<'a>>(members: &[(Key<'a>, D)], key: &str) -> Option<D> {
    members.iter().rev().find(|(k, _)| k.is(key)).map(|&(_, v)| v)
}

/// `key:value` appended to `members`, an object's members written without their braces
/// (after a comma unless it is the first): the members a tool keeps as its extras.
pub fn push_member<'a, D: Data<'a>>(members: &mut Vec<u8>, key: Key<'a>, value: D) {
    if !members.is_empty() {
        members.push(b',');
    }
    key.dump(members);
    members.push(b':');
    value.dump(members);
}

/// An object member's key: decoded (a `Value`'s) or as canonical text writes it.
#[derive(Clone, Copy, Debug)]
pub struct Key<'a> {
    text: &'a [u8],
    escaped: bool,
}

impl<'a> Key<'a> {
    /// A key as canonical text writes it (its escapes `dumps`'s own: `Raw::canonical_members`'s keys).
    pub fn written(text: &'a [u8]) -> Self {
        Key { text, escaped: true }
    }

    /// The key is `word` (a word without `"`, `\` or control characters).
    pub fn is(self, word: &str) -> bool {
        self.text == word.as_bytes()
    }

    /// `dumps(key)` appended to `out`.
    pub fn dump(self, out: &mut Vec<u8>) {
        if self.escaped {
            out.push(b'"');
            out.extend_from_slice(self.text);
            out.push(b'"');
        } else {
            dumps_str(self.text, out);
        }
    }
}

impl<'a> Data<'a> for &'a Value {
    type Members = std::iter::Map<std::slice::Iter<'a, (Vec<u8>, Value)>, fn(&'a (Vec<u8>, Value)) -> (Key<'a>, &'a Value)>;

    fn is_object(self) -> bool {
        matches!(self, Value::Object(_))
    }

    fn is_null(self) -> bool {
        matches!(self, Value::Null)
    }

    fn is_str(self) -> bool {
        matches!(self, Value::Str(_))
    }

    fn str_is(self, text: &str) -> bool {
        matches!(self, Value::Str(s) if s == text.as_bytes())
    }

    fn get(self, key: &str) -> Option<Self> {
        Value::get(self, key)
    }

    fn members(self) -> Self::Members {
        let members: &'a [(Vec<u8>, Value)] = match self {
            Value::Object(members) => members,
            _ => &[],
        };
        members.iter().map(|(k, v)| (Key { text: k, escaped: false }, v))
    }

    fn dump(self, out: &mut Vec<u8>) {
        crate::value::dumps(self, out)
    }
}

/// One value's canonical text (made by `Raw::canonical`: every slice it hands out is
/// canonical too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(&'a [u8]);

impl<'a> Raw<'a> {
    /// `text` as `Raw` when it is one value exactly as `dumps` writes it (see the module doc).
    pub fn canonical(text: &'a [u8]) -> Option<Raw<'a>> {
        Raw::canonical_members(text, |_, _| ())
    }

    /// `canonical`, telling `member` each member of a top object in order as the check
    /// passes it: its key as written (canonical: `"type"` is `type`) and its value. A caller
    /// that wants a member or two of a large object (a schema's `type`) reads the text once.
    /// What it was told counts only when this returns `Some`: a fault after a member (a
    /// wrong bracket, trailing bytes) is found once the member was told.
    pub fn canonical_members(text: &'a [u8], member: impl FnMut(&'a [u8], Raw<'a>)) -> Option<Raw<'a>> {
        // (SIMD UTF-8 validation: std's is several times slower on a tool's few hundred bytes)
        (simdutf8::basic::from_utf8(text).is_ok() && check(text, member).is_some()).then_some(Raw(text))
    }

    /// `canonical` with the top object's `member_list`, read in the same pass (a tool: its
    /// members beside a function or schema that is most of its text, not read again to skip it).
    pub fn canonical_with_members(text: &'a [u8]) -> Option<(Raw<'a>, Vec<(Key<'a>, Raw<'a>)>)> {
        let mut members = Vec::new();
        let raw = Raw::canonical_members(text, |key, value| members.push((Key::written(key), value)))?;
        Some((raw, members))
    }

    pub fn text(self) -> &'a [u8] {
        self.0
    }
}

impl<'a> Data<'a> for Raw<'a> {
    type Members = Members<'a>;

    fn is_object(self) -> bool {
        self.0.first() == Some(&b'{')
    }

    fn is_null(self) -> bool {
        self.0 == b"null"
    }

    fn is_str(self) -> bool {
        self.0.first() == Some(&b'"')
    }

    fn str_is(self, text: &str) -> bool {
        // canonical text escapes exactly what dumps escapes: compare dumps(text)
        let inner = self.is_str().then(|| &self.0[1..self.0.len() - 1]);
        match inner {
            Some(inner) if !inner.contains(&b'\\') => inner == text.as_bytes(),
            Some(_) => {
                let mut want = Vec::with_capacity(text.len() + 2);
                dumps_str(text.as_bytes(), &mut want);
                want == self.0
            }
            None => false,
        }
    }

    fn get(self, key: &str) -> Option<Self> {
        // the last of a repeated key, as the dict of json.loads keeps it
        self.members().filter(|(k, _)| k.is(key)).last().map(|(_, v)| v)
    }

    fn members(self) -> Members<'a> {
        Members { text: self.0, at: if self.is_object() { 1 } else { self.0.len() } }
    }

    fn dump(self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0)
    }

    fn json(self) -> Cow<'a, [u8]> {
        Cow::Borrowed(self.0)
    }
}

/// The members of a canonical object's text.
pub struct Members<'a> {
    text: &'a [u8],
    /// the next member's key quote (or the closing brace: done)
    at: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Key<'a>, Raw<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let text = self.text;
        if text.get(self.at) != Some(&b'"') {
            self.at = text.len();
            return None;
        }
        let key_end = string_end(text, self.at);
        let key = Key { text: &text[self.at + 1..key_end - 1], escaped: true };
        let start = key_end + 1; // after the colon
        let end = value_end(text, start);
        self.at = end + 1; // after the comma (or past the brace)
        Some((key, Raw(&text[start..end])))
    }
}

/// Bytes a string holds as they are (not `"`, `\`, or a control character).
const PLAIN: [bool; 256] = {
    let mut plain = [true; 256];
    let mut b = 0;
    while b < 0x20 {
        plain[b] = false;
        b += 1;
    }
    plain[b'"' as usize] = false;
    plain[b'\\' as usize] = false;
    plain
};

/// The first byte at or after `i` that is not `PLAIN` (or the end). Eight bytes at a time
/// while none is special (SWAR): the strings of a tool or schema are most of its text, and
/// too short for a SIMD search's setup to pay.
fn plain_run(text: &[u8], mut i: usize) -> usize {
    while let Some(word) = text.get(i..i + 8) {
        let x = u64::from_le_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]);
        let special = crate::json::special_mask(x); // (exact for the lowest special byte)
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < text.len() && PLAIN[text[i] as usize] {
        i += 1;
    }
    i
}

/// The end of the string whose quote is at `at` in canonical text (after its closing quote).
fn string_end(text: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    loop {
        i = plain_run(text, i);
        match text.get(i) {
            Some(b'"') => return i + 1,
            Some(_) => i += 2, // canonical escapes are two bytes
            None => return text.len(),
        }
    }
}

/// The end of the value that starts at `at` in canonical text.
fn value_end(text: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i = string_end(text, i);
                if depth == 0 {
                    return i;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

// -- the canonical check ------------------------------------------------------------------

/// Some(()) when `text` is one canonical value (UTF-8 is checked by the caller).
fn check<'a>(text: &'a [u8], mut member: impl FnMut(&'a [u8], Raw<'a>)) -> Option<()> {
    let mut i = 0;
    // the key and value starts of the top object's member being read
    let (mut key_at, mut value_at) = (0, 0);
    // bit d: the container at depth d is an object
    let mut objects: u128 = 0;
    let mut depth: u32 = 0;
    'value: loop {
        match *text.get(i)? {
            open @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                let object = open == b'{';
                objects = if object { objects | 1 << depth } else { objects & !(1 << depth) };
                depth += 1;
                i += 1;
                let close = if object { b'}' } else { b']' };
                if text.get(i) == Some(&close) {
                    depth -= 1;
                    i += 1;
                } else {
                    if object {
                        i = top_key(text, i, depth, &mut key_at, &mut value_at)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = string(text, i)?,
            b't' => i = literal(text, i, b"true")?,
            b'f' => i = literal(text, i, b"false")?,
            b'n' => i = literal(text, i, b"null")?,
            b'-' | b'0'..=b'9' => i = integer(text, i)?,
            _ => return None,
        }
        // after a value: a comma, or the ends of containers
        loop {
            if depth == 0 {
                return (i == text.len()).then_some(());
            }
            let object = objects & 1 << (depth - 1) != 0;
            if depth == 1 && object {
                // a member of the top object ended (`"key":` before its value: the key's quotes and colon)
                if let (Some(key), Some(value)) = (text.get(key_at + 1..value_at.saturating_sub(2)), text.get(value_at..i)) {
                    member(key, Raw(value));
                }
            }
            match *text.get(i)? {
                b',' => {
                    i += 1;
                    if object {
                        i = top_key(text, i, depth, &mut key_at, &mut value_at)?;
                    }
                    continue 'value;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            depth -= 1;
            i += 1;
        }
    }
}

/// `key`, noting where a member of the top object (`depth` 1) begins and its value starts.
#[inline(always)]
fn top_key(text: &[u8], i: usize, depth: u32, key_at: &mut usize, value_at: &mut usize) -> Option<usize> {
    let after = key(text, i)?;
    if depth == 1 {
        (*key_at, *value_at) = (i, after);
    }
    Some(after)
}

/// A member's key and colon at `i`: the index after the colon.
fn key(text: &[u8], i: usize) -> Option<usize> {
    if text.get(i) != Some(&b'"') {
        return None;
    }
    let end = string(text, i)?;
    (text.get(end) == Some(&b':')).then_some(end + 1)
}

/// A string at `i` whose escapes are dumps's own two-byte ones (no `\u`, no `\/`) and
/// with no raw control character: the index after its closing quote.
fn string(text: &[u8], i: usize) -> Option<usize> {
    let mut i = i + 1;
    loop {
        i = plain_run(text, i);
        match *text.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => match *text.get(i + 1)? {
                b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f' => i += 2,
                _ => return None,
            },
            _ => return None, // a raw control character
        }
    }
}

fn literal(text: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    text[i..].starts_with(word).then_some(i + word.len())
}

/// An integer as Python writes an int back: no fraction, no exponent, no `-0`, no
/// leading zero.
fn integer(text: &[u8], i: usize) -> Option<usize> {
    let start = if text[i] == b'-' { i + 1 } else { i };
    let digits = text[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    let end = start + digits;
    let leading_zero = digits > 1 && text[start] == b'0';
    let minus_zero = start > i && digits == 1 && text[start] == b'0';
    if digits == 0 || leading_zero || minus_zero || matches!(text.get(end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANONICAL: &[&str] = &[
        "{}", "[]", "\"\"", "0", "-12", "123456789012345678901234567890", "true", "false", "null",
        "{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":\"x\\\"y\\\\z\\n\\t\\r\\b\\f\"}",
        "{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\",\"description\":\"Zürich, CH\"}},\"required\":[\"location\"]}",
        "[[[[]]],{},{\"\":{}}]", "\"°C — «x» 😀\"", "\"\u{7f}\"",
    ];

    const NOT: &[&str] = &[
        "", " {}", "{} ", "{\"a\": 1}", "[1, 2]", "1.0", "1e5", "-0", "01", "\"\\u00e9\"", "\"\\/\"", "\"\\ud800\"",
        "\"\\u001f\"", "{\"a\":1,}", "[1,]", "{\"a\"}", "{\"a\":}", "[1 2]", "tru", "nul", "{\"a\":1}}", "[1]]", "{\"a\":1]",
        "\"abc", "\"a\u{1}b\"", "NaN", "Infinity", "-", "[", "{", "{1:2}",
    ];

    #[test]
    fn canonical_text_is_its_own_dumps() {
        for text in CANONICAL {
            let raw = Raw::canonical(text.as_bytes()).unwrap_or_else(|| panic!("canonical: {text}"));
            let value = Value::parse(text.as_bytes()).unwrap();
            assert_eq!(value.to_json(), text.as_bytes(), "{text}");
            assert_eq!(raw.to_json(), value.to_json());
            // every member's slice is its own dumps
            let tree: Vec<(Vec<u8>, Vec<u8>)> = (&value).members().map(|(k, v)| ({ let mut key = Vec::new(); k.dump(&mut key); key }, v.to_json())).collect();
            let slices: Vec<(Vec<u8>, Vec<u8>)> = raw.members().map(|(k, v)| ({ let mut key = Vec::new(); k.dump(&mut key); key }, v.to_json())).collect();
            assert_eq!(tree, slices, "{text}");
        }
    }

    #[test]
    fn anything_else_is_not() {
        for text in NOT {
            assert!(Raw::canonical(text.as_bytes()).is_none(), "not canonical: {text:?}");
        }
        assert!(Raw::canonical(b"\"\xed\xa0\x80\"").is_none()); // a lone surrogate's WTF-8
        let deep = "[".repeat(MAX_DEPTH as usize + 1) + &"]".repeat(MAX_DEPTH as usize + 1);
        assert!(Raw::canonical(deep.as_bytes()).is_none());
        let deepest = "[".repeat(MAX_DEPTH as usize) + &"]".repeat(MAX_DEPTH as usize);
        assert!(Raw::canonical(deepest.as_bytes()).is_some());
    }

    #[test]
    fn canonical_members_are_the_top_objects_members() {
        for text in CANONICAL.iter().chain(NOT) {
            let mut seen: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let raw = Raw::canonical_members(text.as_bytes(), |key, value| seen.push((key.to_vec(), value.text().to_vec())));
            assert_eq!(raw, Raw::canonical(text.as_bytes()), "{text}");
            if let Some(raw) = raw {
                let members: Vec<(Vec<u8>, Vec<u8>)> = raw.members().map(|(k, v)| (k.text.to_vec(), v.text().to_vec())).collect();
                assert_eq!(seen, members, "{text}");
            }
        }
    }

    #[test]
    fn the_rules_read_both_alike() {
        let text = b"{\"type\":\"function\",\"k\\\"ey\":{\"a\":[1,{\"b\":\"c\"}]},\"n\":null,\"s\":\"t\\\\u\"}";
        let raw = Raw::canonical(text).unwrap();
        let value = Value::parse(text).unwrap();
        assert!(raw.is_object() && value.is_object());
        for key in ["type", "n", "s", "missing"] {
            assert_eq!(raw.get(key).map(Data::to_json), value.get(key).map(Data::to_json), "{key}");
        }
        assert!(raw.get("type").unwrap().str_is("function") && value.get("type").unwrap().str_is("function"));
        assert!(raw.get("s").unwrap().str_is("t\\u") && value.get("s").unwrap().str_is("t\\u"));
        assert!(raw.get("n").unwrap().is_null() && !raw.get("s").unwrap().is_null());
        assert_eq!(raw.members().count(), 4);
        assert_eq!(Raw::canonical(b"[1]").unwrap().members().count(), 0);
        assert_eq!(Raw::canonical(b"{\"a\":1,\"a\":2}").unwrap().get("a").unwrap().text(), b"2");
    }
}
