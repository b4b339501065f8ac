//! Framing: SSE and NDJSON push decoders and encoders (`src/interlingua/framing.py`).
//!
//! The decoders split a byte stream into frames without holding them: a
//! frame's data goes to the sink as it arrives (`frame_data`, borrowing the
//! chunk), so a 100 KB `data:` line costs no more memory than the chunk that
//! carries it. Only short things are held whole: a field name (64 bytes), the
//! value of an `event:` / `id:` / `retry:` line (`max_line`).
//!
//! The rules are framing.py's (WHATWG event-stream interpretation): CR, LF or
//! CRLF line ends (a CRLF cut between chunks is one line end); `:` starts a
//! comment; one optional space after the colon; `data:` lines of one event
//! joined with LF; a blank line dispatches an event that has data; `id:` and
//! `retry:` are kept and not handed on; unknown fields ignored; at the end of
//! input an event with data is dispatched. Parity: the same `frame_data`
//! pieces (same bytes, same `data_at`), the same frame ends and errors at the
//! same offsets, for any cut.
#![forbid(unsafe_code)]

use crate::error::{Error, ErrorClass, Result};

pub const DEFAULT_MAX_LINE: usize = 1 << 20;
const MAX_FIELD_NAME: usize = 64;
/// A UTF-8 byte order mark: not part of an SSE stream that begins with one (`_BOM`).
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Where a framer hands its frames.
pub trait FrameSink {
    /// Data bytes of the current frame; `data_at`: their stream offset.
    fn frame_data(&mut self, data: &[u8], data_at: u64) -> Result<()>;
    /// `frame_data` with the frame's event name as far as read (Python's
    /// `SseDecoder.event` during `frame_data`: a stream's copy writes it in the
    /// frame's head). The SSE decoder calls this one.
    fn frame_data_in(&mut self, data: &[u8], data_at: u64, event: Option<&str>) -> Result<()> {
        let _ = event;
        self.frame_data(data, data_at)
    }
    /// The frame is complete (SSE: its `event:` name, decoded with replacement).
    fn frame_end(&mut self, event: Option<&str>) -> Result<()>;
}

/// SSE line states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// reading a field name (from the line's start)
    Field,
    /// after `data:`: one optional space may follow
    DataSpace,
    /// inside a data line: bytes go straight to the sink
    Data,
    /// inside the value of a field held whole (event, id, retry)
    Value,
    /// inside a comment or an unknown field: skipped
    Comment,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Event,
    Id,
    Retry,
}

fn held_field(name: &[u8]) -> Option<Held> {
    match name {
        b"event" => Some(Held::Event),
        b"id" => Some(Held::Id),
        b"retry" => Some(Held::Retry),
        _ => None,
    }
}

/// Server-sent events -> frames. `feed`, then `close`.
pub struct SseDecoder {
    pub max_line: usize,
    pub last_event_id: Option<String>,
    pub retry: Option<u64>,
    /// bytes consumed
    offset: u64,
    /// stream offset of the data last handed on (framing.py's `data_at`)
    data_at: u64,
    line: Line,
    /// stream offset of the current line's first byte
    line_start: u64,
    /// the field name being read (bounded)
    name: Vec<u8>,
    /// the held field and its value so far (bounded by `max_line` with its name)
    held: Option<Held>,
    value: Vec<u8>,
    /// the line read so far, for the `max_line` rule (name, colon, value)
    held_line_len: usize,
    /// the last line ended with CR: an LF that follows belongs to it
    skip_lf: bool,
    /// the event's `event:` name (decoded with replacement), when `has_event`: its
    /// buffer is kept from event to event (no allocation per frame)
    event: String,
    has_event: bool,
    has_data: bool,
    /// nothing but the line end so far on this line
    line_empty: bool,
    /// while the stream's first bytes may be its BOM: how many of its bytes they are (`_first`)
    first: Option<usize>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder::new(DEFAULT_MAX_LINE)
    }
}

impl SseDecoder {
    pub fn new(max_line: usize) -> Self {
        SseDecoder {
            max_line,
            last_event_id: None,
            retry: None,
            offset: 0,
            data_at: 0,
            line: Line::Field,
            line_start: 0,
            name: Vec::new(),
            held: None,
            value: Vec::new(),
            held_line_len: 0,
            skip_lf: false,
            event: String::new(),
            has_event: false,
            has_data: false,
            line_empty: true,
            first: Some(0),
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn feed<S: FrameSink>(&mut self, data: &[u8], sink: &mut S) -> Result<()> {
        match self.first {
            None => self.lines(data, sink),
            Some(seen) => self.past_bom(seen, data, sink),
        }
    }

    /// `_past_bom`: the stream's leading UTF-8 BOM is not part of it (the SSE standard decodes
    /// it away; it was read as the first field's name, and that event dropped with nothing
    /// said). `seen`: the BOM's bytes held so far, while the first bytes may still be one.
    fn past_bom<S: FrameSink>(&mut self, seen: usize, data: &[u8], sink: &mut S) -> Result<()> {
        let rest = &BOM[seen..];
        let matched = rest.iter().zip(data).take_while(|(b, d)| b == d).count();
        if matched == rest.len() {
            self.first = None;
            self.offset = BOM.len() as u64; // (offsets stay the stream's: its data begins after the BOM)
            self.line_start = self.offset;
            return self.lines(&data[matched..], sink);
        }
        if matched == data.len() {
            self.first = Some(seen + matched);
            return Ok(());
        }
        self.first = None;
        if seen == 0 {
            return self.lines(data, sink);
        }
        let first = [&BOM[..seen], data].concat(); // (held bytes that were no BOM: the stream's, in one piece)
        self.lines(&first, sink)
    }

    fn lines<S: FrameSink>(&mut self, data: &[u8], sink: &mut S) -> Result<()> {
        let n = data.len();
        let base = self.offset;
        let mut i = 0;
        while i < n {
            if self.skip_lf {
                self.skip_lf = false;
                if data[i] == b'\n' {
                    i += 1;
                    self.line_start = base + i as u64;
                    continue;
                }
            }
            // the line's end in this chunk (n: the chunk ends first); an empty line (an
            // event's end) needs no search, and its empty piece no reading
            let j = match data[i] {
                b'\r' | b'\n' => i,
                _ => memchr::memchr2(b'\r', b'\n', &data[i..]).map_or(n, |k| i + k),
            };
            if j > i {
                self.line_part(data, i, j, base, sink)?;
            }
            if j == n {
                break;
            }
            self.line_end(sink)?;
            self.skip_lf = data[j] == b'\r';
            i = j + 1;
            self.line_start = base + i as u64;
        }
        self.offset = base + n as u64;
        Ok(())
    }

    /// `data[i..j]`, a piece of the current line (its end not in it).
    fn line_part<S: FrameSink>(&mut self, data: &[u8], mut i: usize, j: usize, base: u64, sink: &mut S) -> Result<()> {
        loop {
            match self.line {
                Line::Field => {
                    // (a line that starts with `data:` or `event:`, the usual ones: no search for the colon)
                    let colon = match &data[i..j] {
                        [b'd', b'a', b't', b'a', b':', ..] if self.name.is_empty() => Some(i + 4),
                        [b'e', b'v', b'e', b'n', b't', b':', ..] if self.name.is_empty() => Some(i + 5),
                        line => memchr::memchr(b':', line).map(|k| i + k),
                    };
                    let end = colon.unwrap_or(j);
                    if end > i {
                        self.line_empty = false;
                    }
                    if self.name.len() + (end - i) > MAX_FIELD_NAME {
                        return Err(self.name_too_long());
                    }
                    let Some(colon) = colon else {
                        self.name.extend_from_slice(&data[i..end]);
                        return Ok(());
                    };
                    self.line_empty = false;
                    if self.name.is_empty() {
                        self.field_named(&data[i..colon], sink)?; // (the whole name in this chunk: read where it is)
                    } else {
                        self.name.extend_from_slice(&data[i..colon]);
                        self.field_started(sink)?;
                    }
                    i = colon + 1;
                }
                Line::DataSpace => {
                    if j > i {
                        let start = if data[i] == b' ' { i + 1 } else { i };
                        self.line = Line::Data;
                        if j > start {
                            self.data_at = base + start as u64;
                            sink.frame_data_in(&data[start..j], self.data_at, event_name(self.has_event, &self.event))?;
                        }
                    }
                    return Ok(());
                }
                Line::Data => {
                    if j > i {
                        self.data_at = base + i as u64;
                        sink.frame_data_in(&data[i..j], self.data_at, event_name(self.has_event, &self.event))?;
                    }
                    return Ok(());
                }
                Line::Value => {
                    self.held_line_len += j - i;
                    if self.held_line_len > self.max_line {
                        return Err(self.line_too_long());
                    }
                    self.value.extend_from_slice(&data[i..j]);
                    return Ok(());
                }
                Line::Comment => return Ok(()),
            }
        }
    }

    // Errors name the byte that broke the limit, counted from the line's start:
    // the same wherever the chunks were cut.

    fn name_too_long(&self) -> Error {
        Error::new(ErrorClass::BudgetExceeded, "SSE field name too long").at(self.line_start + MAX_FIELD_NAME as u64)
    }

    fn line_too_long(&self) -> Error {
        Error::new(ErrorClass::BudgetExceeded, format!("SSE field line longer than max_line ({})", self.max_line))
            .at(self.line_start + self.max_line as u64)
    }

    /// The field name read (`self.name`) is complete.
    fn field_started<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        let name = std::mem::take(&mut self.name);
        let result = self.field_named(&name, sink);
        self.name = name;
        self.name.clear();
        result
    }

    /// A field `name` begins its value.
    fn field_named<S: FrameSink>(&mut self, name: &[u8], sink: &mut S) -> Result<()> {
        if name == b"data" {
            self.data_line(sink)?;
            self.line = Line::DataSpace;
        } else if let Some(held) = held_field(name) {
            self.line = Line::Value;
            self.held = Some(held);
            self.value.clear();
            self.held_line_len = name.len() + 1;
        } else {
            self.line = Line::Comment; // a comment (empty name) or an unknown field: ignored
        }
        Ok(())
    }

    fn data_line<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        if self.has_data {
            // data lines of one event are joined with LF (handed on at the last data's offset)
            sink.frame_data_in(b"\n", self.data_at, event_name(self.has_event, &self.event))?;
        }
        self.has_data = true;
        Ok(())
    }

    #[inline(always)]
    fn line_end<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        match self.line {
            Line::Field => {
                if self.line_empty {
                    self.dispatch(sink)?;
                } else if !self.name.is_empty() {
                    // a field name without colon: the whole line is the name, the value ""
                    self.field_started(sink)?;
                    if self.line == Line::Value {
                        self.held_value();
                    }
                }
            }
            Line::Value => self.held_value(),
            _ => {}
        }
        self.line = Line::Field;
        self.name.clear();
        self.line_empty = true;
        Ok(())
    }

    fn held_value(&mut self) {
        let value = if self.value.first() == Some(&b' ') { &self.value[1..] } else { &self.value[..] };
        match self.held.take() {
            Some(Held::Event) => {
                // into the kept buffer (valid UTF-8, the usual case, as it is); the same
                // name as the last event's (a stream's deltas) is there already
                if self.event.as_bytes() != value {
                    self.event.clear();
                    match std::str::from_utf8(value) {
                        Ok(text) => self.event.push_str(text),
                        Err(_) => self.event.push_str(&String::from_utf8_lossy(value)),
                    }
                }
                self.has_event = true;
            }
            Some(Held::Id) => {
                let text = String::from_utf8_lossy(value);
                if !text.contains('\0') {
                    self.last_event_id = Some(text.into_owned());
                }
            }
            Some(Held::Retry) => {
                let text = String::from_utf8_lossy(value);
                if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
                    self.retry = text.parse().ok();
                }
            }
            None => {}
        }
        self.value.clear();
    }

    fn dispatch<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        let has_event = std::mem::take(&mut self.has_event);
        if self.has_data {
            self.has_data = false;
            sink.frame_end(event_name(has_event, &self.event))?;
        }
        Ok(())
    }

    /// End of input: a pending line ends; an event with data is dispatched.
    pub fn close<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        if let Some(seen) = self.first.take().filter(|&seen| seen > 0) {
            self.lines(&BOM[..seen], sink)?; // (the stream ended inside what could have been a BOM: its bytes are data)
        }
        if !self.line_empty || self.line != Line::Field {
            self.line_end(sink)?;
        }
        self.dispatch(sink)
    }
}

/// The event name a sink is given (`None`: the event has no `event:` line).
#[inline]
fn event_name(has_event: bool, event: &str) -> Option<&str> {
    has_event.then_some(event)
}

/// Newline-delimited JSON -> frames: one non-blank line, one frame. Whitespace
/// before a line's first byte is skipped (blank lines and CRLF make no frames);
/// a last line without its newline is a frame.
#[derive(Default)]
pub struct NdjsonDecoder {
    offset: u64,
    in_line: bool,
}

impl NdjsonDecoder {
    pub fn new() -> Self {
        NdjsonDecoder::default()
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn feed<S: FrameSink>(&mut self, data: &[u8], sink: &mut S) -> Result<()> {
        let n = data.len();
        let base = self.offset;
        let mut i = 0;
        while i < n {
            if !self.in_line {
                match data[i..].iter().position(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n')) {
                    Some(k) => i += k,
                    None => break,
                }
                self.in_line = true;
            }
            let at = base + i as u64;
            let Some(k) = memchr::memchr(b'\n', &data[i..]) else {
                sink.frame_data(&data[i..], at)?;
                break;
            };
            let j = i + k;
            if j > i {
                sink.frame_data(&data[i..j], at)?;
            }
            self.in_line = false;
            sink.frame_end(None)?;
            i = j + 1;
        }
        self.offset = base + n as u64;
        Ok(())
    }

    pub fn close<S: FrameSink>(&mut self, sink: &mut S) -> Result<()> {
        if self.in_line {
            self.in_line = false;
            sink.frame_end(None)?;
        }
        Ok(())
    }
}

// -- encoders ---------------------------------------------------------------------

pub const SSE_END: &[u8] = b"\n\n";

/// The head of an SSE event up to the start of its data (data and `SSE_END` follow).
pub fn sse_open(out: &mut Vec<u8>, event: Option<&str>) {
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
}

/// One whole SSE event; `data` is compact JSON (no line breaks).
pub fn sse_event(out: &mut Vec<u8>, event: Option<&str>, data: &[u8]) {
    sse_open(out, event);
    out.extend_from_slice(data);
    out.extend_from_slice(SSE_END);
}

pub fn ndjson_line(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.push(b'\n');
}

/// `one_line`: a JSON text as part of one NDJSON line: its raw CR and LF -- whitespace between
/// its tokens (a model's pretty-printed tool arguments, carried as they came), since a string
/// holds them escaped -- as spaces.
pub fn one_line(text: &mut [u8]) {
    if memchr::memchr2(b'\n', b'\r', text).is_some() {
        for byte in text.iter_mut().filter(|byte| matches!(**byte, b'\n' | b'\r')) {
            *byte = b' ';
        }
    }
}

/// `ndjson_safe`: `out[start..]` (compact JSON of whole characters) with U+2028, U+2029 and
/// U+0085 escaped. JSON may hold them raw in a string, but Python's line readers (httpx
/// `iter_lines`, which the ollama client reads NDJSON with) end a line at them.
pub fn ndjson_safe(out: &mut Vec<u8>, start: usize) {
    let Some(first) = next_line_breaker(out, start) else {
        return; // (the usual case: nothing copied)
    };
    let mut safe = Vec::with_capacity(out.len() - start + 16);
    let (mut copied, mut at) = (start, Some(first));
    while let Some(i) = at {
        let (raw, escaped) = line_breaker(&out[i..]).unwrap_or((1, b""));
        safe.extend_from_slice(&out[copied..i]);
        safe.extend_from_slice(escaped);
        copied = i + raw;
        at = next_line_breaker(out, copied);
    }
    safe.extend_from_slice(&out[copied..]);
    out.truncate(start);
    out.extend_from_slice(&safe);
}

/// Where the next of `ndjson_safe`'s characters starts in `out[from..]`.
fn next_line_breaker(out: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let i = from + memchr::memchr2(0xE2, 0xC2, &out[from..])?;
        if line_breaker(&out[i..]).is_some() {
            return Some(i);
        }
        from = i + 1;
    }
}

/// The UTF-8 of U+2028, U+2029 or U+0085 at the start of `rest`: its length and its escape.
fn line_breaker(rest: &[u8]) -> Option<(usize, &'static [u8])> {
    match rest {
        [0xE2, 0x80, 0xA8, ..] => Some((3, b"\\u2028")),
        [0xE2, 0x80, 0xA9, ..] => Some((3, b"\\u2029")),
        [0xC2, 0x85, ..] => Some((2, b"\\u0085")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_safe_escapes_what_line_readers_split_at() {
        let mut out = b"kept\xe2\x80\xa8".to_vec();
        let start = out.len();
        out.extend_from_slice("{\"t\":\"a\u{2028}b\u{2029}c\u{85}d \u{2014}\u{a0}\"}".as_bytes());
        ndjson_safe(&mut out, start);
        assert_eq!(out, "kept\u{2028}{\"t\":\"a\\u2028b\\u2029c\\u0085d \u{2014}\u{a0}\"}".as_bytes());
        let mut plain = b"{\"t\":\"\xe2\x80\x94\"}".to_vec();
        ndjson_safe(&mut plain, 0);
        assert_eq!(plain, b"{\"t\":\"\xe2\x80\x94\"}");
    }

    #[derive(Default, Debug, PartialEq)]
    struct Frames(Vec<(Vec<u8>, Option<String>)>, Vec<u8>);

    impl FrameSink for Frames {
        fn frame_data(&mut self, data: &[u8], _at: u64) -> Result<()> {
            self.1.extend_from_slice(data);
            Ok(())
        }
        fn frame_end(&mut self, event: Option<&str>) -> Result<()> {
            let data = std::mem::take(&mut self.1);
            self.0.push((data, event.map(str::to_string)));
            Ok(())
        }
    }

    fn sse(chunks: &[&[u8]]) -> Result<Vec<(Vec<u8>, Option<String>)>> {
        let mut decoder = SseDecoder::new(100);
        let mut sink = Frames::default();
        for chunk in chunks {
            decoder.feed(chunk, &mut sink)?;
        }
        decoder.close(&mut sink)?;
        Ok(sink.0)
    }

    #[test]
    fn events_for_every_cut() {
        let stream: &[u8] = b": hi\r\nevent: delta\r\ndata: {\"a\":\r\ndata:1}\r\n\r\nid: 7\nretry: 10\ndata\n\ndata: x\rdata: y\r\r";
        let whole = sse(&[stream]).unwrap();
        assert_eq!(
            whole,
            vec![
                (b"{\"a\":\n1}".to_vec(), Some("delta".to_string())),
                (b"".to_vec(), None),
                (b"x\ny".to_vec(), None)
            ]
        );
        for cut in 0..=stream.len() {
            assert_eq!(sse(&[&stream[..cut], &stream[cut..]]).unwrap(), whole, "cut {cut}");
        }
    }

    #[test]
    fn limits_at_the_same_offset_for_every_cut() {
        let long_name = [b"x".repeat(70).as_slice(), b": 1\n"].concat();
        let long_event = [b"event: ".as_slice(), &b"e".repeat(200), b"\n"].concat();
        for (stream, offset) in [(long_name, 64u64), (long_event, 100)] {
            for cut in 0..=stream.len() {
                let err = sse(&[&stream[..cut], &stream[cut..]]).unwrap_err();
                assert_eq!(err.offset, Some(offset), "cut {cut}");
            }
        }
    }

    #[test]
    fn ndjson_lines() {
        let mut decoder = NdjsonDecoder::new();
        let mut sink = Frames::default();
        decoder.feed(b"\n {\"a\":1}\r\n\n{\"b\"", &mut sink).unwrap();
        decoder.feed(b":2}", &mut sink).unwrap();
        decoder.close(&mut sink).unwrap();
        assert_eq!(sink.0, vec![(b"{\"a\":1}\r".to_vec(), None), (b"{\"b\":2}".to_vec(), None)]);
    }

    #[test]
    fn encoders() {
        let mut out = Vec::new();
        sse_event(&mut out, Some("delta"), b"{}");
        ndjson_line(&mut out, b"{}");
        assert_eq!(out, b"event: delta\ndata: {}\n\n{}\n");
    }
}
