//! The pipeline (`src/interlingua/pipeline.py`): framing -> tokenizer -> dialect
//! decoder -> canonical events -> dialect encoder. `Front` (bytes to events, the
//! Python `_Front`), `Transcoder` (bytes to bytes) and the codec table. Owner:
//! helper P (NATIVE.md); the dialect helpers add their codec to the table, one
//! arm each.
//!
//! No Python object per token and no copy of the chunk: the tokenizer calls the
//! decoder through `Tokens` (one monomorphised call per token, one dynamic call
//! into the decoder), the decoder's events go straight into the encoder
//! (`Encoding`), borrowing the chunk where they can.
#![forbid(unsafe_code)]

use crate::canonical::{Control, Event};
use crate::decoding::{Decode, EventSink, Framing};
use crate::encoding::Encode;
use crate::error::{Error, ErrorClass, Result};
use crate::framing::{FrameSink, NdjsonDecoder, SseDecoder};
use crate::json::{Frames, Limits, Sink, Token, Tokenizer};
use crate::passthrough::{BodyCopy, FrameCopy};
use crate::session::{Kind, Session};

/// A dialect decoder the pipeline can run with the GIL released (a codec holds
/// no Python object and no `Rc`: plain state; `Sync` as a pyclass must be).
pub type BoxedDecoder = Box<dyn Decode + Send + Sync>;
pub type BoxedEncoder = Box<dyn Encode + Send + Sync>;

fn not_ported(dialect: &str, kind: Kind, side: &str) -> Error {
    Error::new(ErrorClass::Transcode, format!("the native core has no {dialect} {} {side} yet", kind.name()))
}

impl Kind {
    /// The Python name (`"request"`, `"response"`, `"stream"`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Stream => "stream",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        [Kind::Request, Kind::Response, Kind::Stream].into_iter().find(|k| k.name() == name)
    }
}

/// The dialect's name as the `&'static str` the session and errors hold.
pub fn dialect(name: &str) -> Option<&'static str> {
    crate::dialects::DIALECTS.into_iter().find(|d| *d == name)
}

/// `dialects.codecs(dialect, kind)[0]`: the decoder of a dialect and kind.
pub fn decoder(dialect: &str, kind: Kind, session: &Session) -> Result<BoxedDecoder> {
    let _ = session;
    match (dialect, kind) {
        ("anthropic", Kind::Request) => Ok(Box::new(crate::dialects::anthropic::request::RequestDecoder::new(session))),
        ("openai", Kind::Request) => Ok(Box::new(crate::dialects::openai::request::RequestDecoder::new(session))),
        ("ollama", Kind::Request) => Ok(Box::new(crate::dialects::ollama::request::RequestDecoder::new(session))),
        ("openai", Kind::Response) => Ok(Box::new(crate::dialects::openai::response::ResponseDecoder::new(session))),
        ("openai", Kind::Stream) => Ok(Box::new(crate::dialects::openai::response::StreamDecoder::new(session))),
        ("anthropic", Kind::Response) => Ok(Box::new(crate::dialects::anthropic::response::ResponseDecoder::new(session))),
        ("anthropic", Kind::Stream) => Ok(Box::new(crate::dialects::anthropic::response::StreamDecoder::new(session))),
        ("ollama", Kind::Response) => Ok(Box::new(crate::dialects::ollama::response::ResponseDecoder::new(session))),
        ("ollama", Kind::Stream) => Ok(Box::new(crate::dialects::ollama::response::StreamDecoder::new(session))),
        _ => Err(not_ported(dialect, kind, "decoder")),
    }
}

/// `dialects.codecs(dialect, kind)[1]`: the encoder of a dialect and kind.
pub fn encoder(dialect: &str, kind: Kind, session: &Session) -> Result<BoxedEncoder> {
    match (dialect, kind) {
        ("openai", Kind::Request) => Ok(Box::new(crate::dialects::openai::request::RequestEncoder::new(session))),
        ("anthropic", Kind::Request) => Ok(Box::new(crate::dialects::anthropic::request::RequestEncoder::new(session))),
        ("ollama", Kind::Request) => Ok(Box::new(crate::dialects::ollama::request::RequestEncoder::new(session))),
        ("openai", Kind::Response) => Ok(Box::new(crate::dialects::openai::response::ResponseEncoder::new(session))),
        ("openai", Kind::Stream) => Ok(Box::new(crate::dialects::openai::response::StreamEncoder::new(session))),
        ("anthropic", Kind::Response) => Ok(Box::new(crate::dialects::anthropic::response::ResponseEncoder::new(session))),
        ("anthropic", Kind::Stream) => Ok(Box::new(crate::dialects::anthropic::response::StreamEncoder::new(session))),
        ("ollama", Kind::Response) => Ok(Box::new(crate::dialects::ollama::response::ResponseEncoder::new(session)?)),
        ("ollama", Kind::Stream) => Ok(Box::new(crate::dialects::ollama::response::StreamEncoder::new(session)?)),
        _ => Err(not_ported(dialect, kind, "encoder")),
    }
}

/// Whether the codec table has all 9 pairs of `kind`: every dialect's decoder and
/// encoder (a same-dialect response or stream is a copy: its decoder, and its encoder
/// for an abort's error output). The binding's `COVERS` names the kinds that have.
pub fn covers(kind: Kind) -> bool {
    crate::dialects::DIALECTS.into_iter().all(|name| {
        let session = Session::new(crate::session::Options::default(), name, name, kind);
        decoder(name, kind, &session).is_ok() && encoder(name, kind, &session).is_ok()
    })
}

// -- the fronts: bytes in, canonical events out ------------------------------------------

/// The tokenizer's sink: each token to the decoder, its events to `out`.
struct Tokens<'a> {
    decoder: &'a mut (dyn Decode + Send + Sync),
    session: &'a mut Session,
    out: &'a mut dyn EventSink,
}

impl Sink for Tokens<'_> {
    #[inline]
    fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
        self.decoder.token(token, offset, path, self.session, self.out)
    }

    #[inline]
    fn member(&mut self, key: &[u8], key_offset: u64, value: Token<'_>, offset: u64, path: &Frames) -> Result<()> {
        self.decoder.member(key, key_offset, value, offset, path, self.session, self.out)
    }

    #[inline]
    fn whole_text(&mut self) -> Option<(&mut Vec<u8>, usize)> {
        self.decoder.whole_text(self.session.options.max_value_bytes)
    }
}

fn tokenizer(session: &Session) -> Tokenizer {
    Tokenizer::new(Limits { max_depth: session.options.max_depth, ..Limits::default() })
}

/// `pipeline._front`: bytes of one kind in, the source dialect's canonical events
/// out -- a body (`_Front`: requests and responses) or a stream (`_StreamFront`).
/// A stream's front is boxed: its framer and frame reader would make every front
/// (and transcoder) ~280 bytes larger, and a transcoder of a body then passes glibc's
/// 1032-byte thread-cache limit (a slower malloc and free per transcode); a stream
/// lasts long enough for one allocation more.
pub enum Front {
    Body(BodyFront),
    Stream(Box<StreamFront>),
}

impl Front {
    pub fn new(source: &'static str, kind: Kind, session: &Session) -> Result<Front> {
        Front::with_copy(source, kind, session, false)
    }

    /// The front of a same-dialect response or stream (`copy`: `interlingua.passthrough`):
    /// it hands its copy each chunk (frame) the decoder accepted.
    pub fn with_copy(source: &'static str, kind: Kind, session: &Session, copy: bool) -> Result<Front> {
        Ok(match kind {
            Kind::Stream => Front::Stream(Box::new(StreamFront::new(source, session, copy)?)),
            _ => Front::Body(BodyFront::new(source, kind, session, copy)?),
        })
    }

    pub fn source(&self) -> &'static str {
        match self {
            Front::Body(front) => front.source,
            Front::Stream(front) => front.source,
        }
    }

    pub fn feed(&mut self, data: &[u8], session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        match self {
            Front::Body(front) => front.feed(data, session, out),
            Front::Stream(front) => front.feed(data, session, out),
        }
    }

    pub fn close(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        match self {
            Front::Body(front) => front.close(session, out),
            Front::Stream(front) => front.close(session, out),
        }
    }

    /// `copy.finished(decoder)`: the source ended and the decoder accepted it.
    fn copy_finished(&mut self) {
        match self {
            Front::Body(front) => front.copy.as_mut().map_or((), BodyCopy::finished),
            Front::Stream(front) => {
                let terminator = front.reader.decoder.missing_terminator();
                if let Some(copy) = front.reader.copy.as_mut() {
                    copy.finished(terminator);
                }
            }
        }
    }

    fn copy_abort_writes(&self) -> bool {
        match self {
            Front::Body(front) => front.copy.as_ref().is_some_and(BodyCopy::abort_writes),
            Front::Stream(front) => {
                let source_done = front.reader.decoder.source_done();
                front.reader.copy.as_ref().is_some_and(|copy| copy.abort_writes(source_done))
            }
        }
    }

    fn copy_abort(&mut self, error: &Event<'_>, session: &mut Session) -> Result<()> {
        match self {
            Front::Body(front) => front.copy.as_mut().map_or(Ok(()), |copy| copy.abort(error, session)),
            Front::Stream(front) => {
                let decoder = &front.reader.decoder;
                let source_end = decoder.source_done().then(|| decoder.missing_terminator());
                front.reader.copy.as_mut().map_or(Ok(()), |copy| copy.abort(error, source_end, session))
            }
        }
    }

    /// What the copy wrote, appended to `out`.
    fn take_copied(&mut self, out: &mut Vec<u8>) {
        match self {
            Front::Body(front) => front.copy.as_mut().map_or((), |copy| copy.take(out)),
            Front::Stream(front) => front.reader.copy.as_mut().map_or((), |copy| copy.take(out)),
        }
    }
}

/// `pipeline._Front`: one JSON document (a request or response body) in, the
/// source dialect's canonical events out. Errors are located as Python's: the
/// source dialect, the tokenizer's path, and the offset of the token being read
/// (`decoder.at`; at `close`, the end of the input).
pub struct BodyFront {
    source: &'static str,
    tokenizer: Tokenizer,
    decoder: BoxedDecoder,
    /// `passthrough.BodyCopy`: gets each chunk the decoder accepted
    copy: Option<BodyCopy>,
}

impl BodyFront {
    fn new(source: &'static str, kind: Kind, session: &Session, copy: bool) -> Result<BodyFront> {
        let decoder = decoder(source, kind, session)?;
        let copy = copy.then(BodyCopy::new);
        Ok(BodyFront { source, tokenizer: tokenizer(session), decoder, copy })
    }

    /// `_Front.feed`: the chunk's tokens to the decoder, then its `flush`.
    pub fn feed(&mut self, data: &[u8], session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let decoder = &mut *self.decoder;
        let mut tokens = Tokens { decoder, session, out };
        let result = self.tokenizer.feed(data, &mut tokens);
        let Tokens { decoder, session, out } = tokens;
        let result = match result {
            Ok(()) => decoder.flush(session, out),
            // what the decoder held to join string fragments went out before the fault in Python
            Err(e) => decoder.interrupted(session, out).and(Err(e)),
        };
        result.map_err(|e| e.locate(self.source, || self.tokenizer.path(), decoder.at()))?;
        if let Some(copy) = self.copy.as_mut() {
            copy.data(data);
        }
        Ok(())
    }

    /// `_Front.close`: the tokenizer's end, then the decoder's `finish`.
    pub fn close(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let decoder = &mut *self.decoder;
        let mut tokens = Tokens { decoder, session, out };
        let result = self.tokenizer.close(&mut tokens);
        let Tokens { decoder, session, out } = tokens;
        let result = result.and_then(|()| decoder.finish(session, out));
        result.map_err(|e| e.locate(self.source, || self.tokenizer.path(), self.tokenizer.offset()))
    }
}

/// A stream's framing stage, as its decoder says (`ResponseDecoderBase.framing`).
enum Framer {
    Sse(SseDecoder),
    Ndjson(NdjsonDecoder),
}

/// What the current frame's data is, as far as read (`_StreamFront`'s
/// `_in_document` / `_text`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameData {
    /// nothing but whitespace yet (or no frame): undecided
    Undecided,
    /// a JSON document, in the tokenizer
    Document,
    /// data not starting with `{`, held whole (bounded by `max_line`) for `frame_text`
    Text,
}

/// `pipeline._StreamFront`: framed bytes in (SSE or NDJSON, per the decoder's
/// `framing()`), canonical events out. Each frame's data is one JSON document, fed
/// as the data arrives to the stream's one tokenizer, `reset` for each document:
/// offsets in errors count from the document's first byte and the error's
/// `frame_offset` says where in the stream that byte is. Data that does not start
/// with `{` (openai's `[DONE]`) is held whole -- bounded by `max_line` -- and
/// handed to the decoder's `frame_text`. After each frame the decoder's
/// `end_frame` runs and `Event::FrameEnd` follows.
pub struct StreamFront {
    source: &'static str,
    framer: Framer,
    reader: FrameReader,
}

/// The framer's sink (the frame-reading half of `_StreamFront`).
struct FrameReader {
    source: &'static str,
    tokenizer: Tokenizer,
    decoder: BoxedDecoder,
    max_line: usize,
    data: FrameData,
    /// the held text of a `FrameData::Text` frame (its buffer kept between frames)
    text: Vec<u8>,
    /// stream offset of the frame's JSON (or text) start
    frame_at: Option<u64>,
    /// `passthrough.FrameCopy`: gets each frame's data and end the decoder accepted
    copy: Option<FrameCopy>,
}

/// Bytes Python's `bytes.strip()` removes (`frame_text`'s data).
fn is_py_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn py_strip(data: &[u8]) -> &[u8] {
    let start = data.iter().position(|&b| !is_py_space(b)).unwrap_or(data.len());
    let end = data.iter().rposition(|&b| !is_py_space(b)).map_or(start, |i| i + 1);
    &data[start..end.max(start)]
}

impl StreamFront {
    fn new(source: &'static str, session: &Session, copy: bool) -> Result<StreamFront> {
        Ok(StreamFront::of(source, decoder(source, Kind::Stream, session)?, session, copy))
    }

    fn of(source: &'static str, decoder: BoxedDecoder, session: &Session, copy: bool) -> StreamFront {
        let max_line = session.options.max_value_bytes;
        let sse = decoder.framing() == Framing::Sse;
        let framer = if sse { Framer::Sse(SseDecoder::new(max_line)) } else { Framer::Ndjson(NdjsonDecoder::new()) };
        let reader = FrameReader {
            source,
            tokenizer: tokenizer(session),
            decoder,
            max_line,
            data: FrameData::Undecided,
            text: Vec::new(),
            frame_at: None,
            copy: copy.then(|| FrameCopy::new(sse)),
        };
        StreamFront { source, framer, reader }
    }

    /// `_StreamFront._where`: the path, inside a document.
    fn path(reader: &FrameReader) -> Vec<u8> {
        if reader.data == FrameData::Document {
            reader.tokenizer.path()
        } else {
            Vec::new()
        }
    }

    /// `_StreamFront.feed`: the framer's frames to the decoder, then (inside a
    /// document) its `flush`.
    pub fn feed(&mut self, data: &[u8], session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let mut frames = FrameIn { reader: &mut self.reader, session, out };
        let result = match &mut self.framer {
            Framer::Sse(framer) => framer.feed(data, &mut frames),
            Framer::Ndjson(framer) => framer.feed(data, &mut frames),
        };
        let result = result.and_then(|()| frames.flush_document());
        let reader = &self.reader;
        result.map_err(|e| e.locate_at(self.source, || Self::path(reader), None))
    }

    /// `_StreamFront.close`: the framer's end (a last frame), then the decoder's
    /// `finish`; an error of the stream's end is at its last byte.
    pub fn close(&mut self, session: &mut Session, out: &mut dyn EventSink) -> Result<()> {
        let mut frames = FrameIn { reader: &mut self.reader, session, out };
        let result = match &mut self.framer {
            Framer::Sse(framer) => framer.close(&mut frames),
            Framer::Ndjson(framer) => framer.close(&mut frames),
        };
        let FrameIn { reader, session, out } = frames;
        let result = result.and_then(|()| reader.decoder.finish(session, out));
        let offset = match &self.framer {
            Framer::Sse(framer) => framer.offset(),
            Framer::Ndjson(framer) => framer.offset(),
        };
        let reader = &self.reader;
        result.map_err(|e| e.locate_at(self.source, || Self::path(reader), Some(offset)))
    }
}

/// The framer's sink for one call: the reader with the run's session and event sink.
struct FrameIn<'a> {
    reader: &'a mut FrameReader,
    session: &'a mut Session,
    out: &'a mut dyn EventSink,
}

impl FrameIn<'_> {
    /// `_StreamFront._frame_data`.
    fn data(&mut self, data: &[u8], data_at: u64) -> Result<()> {
        let reader = &mut *self.reader;
        let data = match reader.data {
            FrameData::Document => return self.document(data),
            FrameData::Undecided => {
                let skipped = data.iter().position(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
                let Some(skipped) = skipped else { return Ok(()) }; // leading whitespace: undecided yet
                reader.frame_at = Some(data_at + skipped as u64);
                if data[skipped] == b'{' {
                    reader.tokenizer.reset();
                    reader.data = FrameData::Document;
                    reader.decoder.begin_frame(self.session, self.out)?;
                    return self.document(&data[skipped..]);
                }
                reader.data = FrameData::Text;
                reader.text.clear();
                &data[skipped..] // (blanks before the data are not in it, in whichever chunk they came)
            }
            FrameData::Text => data,
        };
        reader.text.extend_from_slice(data);
        if reader.text.len() > reader.max_line {
            // a budget, as the framer's limits: at the byte that broke it, counted from the data's start
            let message = format!("non-JSON frame data longer than max_line ({})", reader.max_line);
            let mut err = Error::new(ErrorClass::BudgetExceeded, message).in_dialect(reader.source).at(reader.max_line as u64);
            err.frame_offset = reader.frame_at;
            return Err(err);
        }
        Ok(())
    }

    /// A piece of the frame's JSON document to the tokenizer.
    fn document(&mut self, data: &[u8]) -> Result<()> {
        let reader = &mut *self.reader;
        let decoder = &mut *reader.decoder;
        let mut tokens = Tokens { decoder, session: self.session, out: self.out };
        let result = reader.tokenizer.feed(data, &mut tokens);
        let Tokens { decoder, session, out } = tokens;
        // what the decoder held to join string fragments went out before the fault in Python
        let result = result.or_else(|e| decoder.interrupted(session, out).and(Err(e)));
        result.map_err(|e| e.in_frame(reader.frame_at, decoder.at()))
    }

    /// `_StreamFront._flush_document`: after each feed, inside a document.
    fn flush_document(&mut self) -> Result<()> {
        let reader = &mut *self.reader;
        if reader.data != FrameData::Document {
            return Ok(());
        }
        let result = reader.decoder.flush(self.session, self.out);
        result.map_err(|e| e.in_frame(reader.frame_at, reader.decoder.at()))
    }

    /// `_StreamFront.frame_end`: the document's end (or the text to `frame_text`),
    /// the decoder's `end_frame`, then the copy's frame and `FrameEnd`.
    fn end(&mut self, event: Option<&str>) -> Result<()> {
        let reader = &mut *self.reader;
        let result = if reader.data == FrameData::Document {
            Self::end_document(reader, event, self.session, self.out)
        } else {
            let held = reader.data == FrameData::Text;
            reader.data = FrameData::Undecided;
            let text = std::mem::take(&mut reader.text);
            let data = if held { py_strip(&text) } else { b"" };
            let result = reader.decoder.frame_text(event, data, self.session, self.out);
            reader.text = text; // (its buffer serves the next text frame)
            // (an error of non-JSON data: at its start)
            result.map_err(|e| e.in_frame(reader.frame_at, 0))
        };
        result?;
        reader.frame_at = None;
        if let Some(copy) = reader.copy.as_mut() {
            copy.frame_end(event);
        }
        self.out.event(Event::FrameEnd, self.session)
    }

    fn end_document(reader: &mut FrameReader, event: Option<&str>, session: &mut Session,
                    out: &mut dyn EventSink) -> Result<()> {
        let decoder = &mut *reader.decoder;
        let mut tokens = Tokens { decoder, session, out };
        let result = reader.tokenizer.close(&mut tokens);
        let Tokens { decoder, session, out } = tokens;
        // as in `document`: what the decoder held to join string fragments went out
        // before a fault of the document's end (a frame ending inside a string) in Python
        let result = result
            .or_else(|e| decoder.interrupted(session, out).and(Err(e)))
            .and_then(|()| decoder.flush(session, out))
            .and_then(|()| decoder.end_frame(event, session, out));
        // (an error once the frame ended: at its end)
        result.map_err(|e| e.in_frame(reader.frame_at, reader.tokenizer.offset()))?;
        reader.data = FrameData::Undecided;
        Ok(())
    }
}

impl FrameSink for FrameIn<'_> {
    fn frame_data(&mut self, data: &[u8], data_at: u64) -> Result<()> {
        self.frame_data_in(data, data_at, None)
    }

    fn frame_data_in(&mut self, data: &[u8], data_at: u64, event: Option<&str>) -> Result<()> {
        self.data(data, data_at)?;
        if let Some(copy) = self.reader.copy.as_mut() {
            copy.frame_data(data, event);
        }
        Ok(())
    }

    fn frame_end(&mut self, event: Option<&str>) -> Result<()> {
        self.end(event)
    }
}

// -- the transcoder: bytes in, bytes out ---------------------------------------------------

/// `Transcoder(model=...)`: the model name the target gets instead of the source's.
pub enum ModelName {
    /// `(value, raw)`: the control's new value as compact JSON, and its raw JSON
    /// (`msgspec.json.encode(name)`) for a control that had raw JSON
    Fixed { value: Vec<u8>, raw: Vec<u8> },
    /// a function of the source's model value (compact JSON) returning `(value, raw)`
    /// as above; called once per model control (`_controls_acted_on`)
    Hook(Box<dyn FnMut(&[u8]) -> Result<(Vec<u8>, Vec<u8>)> + Send + Sync>),
}

impl ModelName {
    /// `_controls_acted_on.on_event_acted_on` for one model control (its value and raw JSON
    /// replaced).
    fn rename(&mut self, control: &mut Control<'_>) -> Result<()> {
        let (value, raw) = match self {
            ModelName::Fixed { value, raw } => (value.clone(), raw.clone()),
            ModelName::Hook(hook) => hook(&control.value)?,
        };
        control.raw = control.raw.as_ref().map(|_| raw.into());
        control.value = value.into();
        Ok(())
    }
}

/// The decoder's event sink in a transcoder: each event into the encoder, whose
/// output goes to this feed's bytes (a same-dialect copy has no encoder: the
/// events go nowhere, the copy writes).
struct Encoding<'a> {
    encoder: Option<&'a mut (dyn Encode + Send + Sync)>,
    model: Option<&'a mut ModelName>,
    out: &'a mut Vec<u8>,
}

impl EventSink for Encoding<'_> {
    #[inline]
    fn event(&mut self, mut event: Event<'_>, session: &mut Session) -> Result<()> {
        // `_controls_acted_on` (renamed in place: an event is large, and most go on unchanged)
        if let Event::Control(control) = &mut event {
            match (control.name.as_ref(), self.model.as_deref_mut()) {
                ("model", Some(model)) => model.rename(control)?,
                // (a request's: no response or stream event is a control)
                ("stream", _) => session.asks_stream = control.value.as_ref() == b"true",
                _ => {}
            }
        }
        match self.encoder.as_deref_mut() {
            Some(encoder) => encoder.event(event, session, self.out),
            None => Ok(()), // passthrough: `_Copy.on_event` needs none of them
        }
    }
}

/// `pipeline.ABORTED`: what `feed` / `close` return after `abort`.
pub const ABORTED: &str = "abort() ended the output: feed and close take nothing more";

/// `pipeline.Transcoder`: `feed` returns the bytes that chunk made possible,
/// `close` the rest. After an error every later call returns that error
/// (`_Poison`); `output()` then has the output produced before it. A response or
/// stream into its own dialect is copied (`interlingua.passthrough`): no encoder,
/// the front's copy writes.
///
/// A response or stream encoder reads `session.start` when it is made (Python's
/// `Stamp(session.start)`): the caller reads the hooks into it before `new`, and
/// before an `abort` of a copy when `abort_reads_start()` says so.
pub struct Transcoder {
    pub session: Session,
    front: Front,
    /// `None`: a same-dialect copy
    encoder: Option<BoxedEncoder>,
    model: Option<ModelName>,
    /// output not taken yet (written before an error: `pending_output`)
    out: Vec<u8>,
    poison: Option<Error>,
    closed: bool,
}

std::thread_local! {
    /// A dropped transcoder's output buffer, for the next one (`crate::spare`).
    static SPARE_OUTPUT: std::cell::Cell<Option<Vec<u8>>> = const { std::cell::Cell::new(None) };
}

impl Drop for Transcoder {
    fn drop(&mut self) {
        crate::spare::keep(&SPARE_OUTPUT, &mut self.out);
    }
}

impl Transcoder {
    /// Boxed where it is made: a transcoder is ~900 bytes, moved by value it was copied
    /// once per layer that returned it (a tenth of a small response's time).
    pub fn new(mut session: Session, model: Option<ModelName>) -> Result<Box<Transcoder>> {
        let (source, target, kind) = (session.source, session.target, session.kind);
        let mut out = crate::spare::take(&SPARE_OUTPUT).unwrap_or_default();
        if Transcoder::copies(&session) {
            // the input is the output (interlingua.passthrough): nothing can be lost
            session.passthrough = true;
            let front = Front::with_copy(source, kind, &session, true)?;
            return Ok(Box::new(Transcoder { session, front, encoder: None, model, out, poison: None, closed: false }));
        }
        let mut encoder = encoder(target, kind, &session)?;
        let front = Front::new(source, kind, &session)?;
        encoder.start(&mut session, &mut out)?; // (Python's encoder constructor writes)
        Ok(Box::new(Transcoder { session, front, encoder: Some(encoder), model, out, poison: None, closed: false }))
    }

    /// A response or stream into its own dialect is a copy (Python's `Transcoder.__init__`).
    pub fn copies(session: &Session) -> bool {
        session.source == session.target && session.kind != Kind::Request
    }

    fn check(&self) -> Result<()> {
        match &self.poison {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    fn poisoned<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(err) = &result {
            self.poison = Some(err.clone());
        }
        result
    }

    /// `Transcoder.feed`: the output this chunk made possible is then `output()`.
    pub fn feed(&mut self, data: &[u8]) -> Result<()> {
        self.check()?;
        self.out.reserve(data.len() + 64); // a request's output is about its input's size: one allocation, not a doubling series
        let result = self.run(|front, session, sink| front.feed(data, session, sink));
        self.poisoned(result)
    }

    /// `Transcoder.close`: the rest of the output is then `output()`. As in Python, a
    /// second `close` closes nothing more (the decoder's `finish` runs again) and a
    /// `feed` after it is the tokenizer's "data fed after close()".
    pub fn close(&mut self) -> Result<()> {
        self.check()?;
        let result = self.run(|front, session, sink| front.close(session, sink));
        let result = result.map(|()| self.front.copy_finished());
        self.front.take_copied(&mut self.out);
        self.closed = true;
        self.poisoned(result)
    }

    /// `Transcoder.abort`'s first step: input that is a whole answer already (its last event
    /// came, only its close did not) is closed, and `true`: no error follows an end. Else the
    /// output so far stays, `false`, and `abort` writes the error event. (Not after an error.)
    pub fn abort_closes(&mut self) -> bool {
        if self.poison.is_some() {
            return false;
        }
        let closed = self.close().is_ok();
        self.poison = closed.then(|| Error::new(ErrorClass::Transcode, ABORTED)); // (not whole: no error yet)
        closed
    }

    /// `Transcoder.abort(error)` after `abort_closes` said no: end the output with the target's
    /// error event (`error` an `Event::Error`, Python's `_abort_event` of what the caller gave);
    /// the output so far and that event are then `output()`. Runs after an error too (Python's
    /// does). The output has ended: a later `feed` / `close` returns `ABORTED` (an earlier error
    /// stays the one returned).
    pub fn abort(&mut self, error: &Event<'_>) -> Result<()> {
        let result = match self.encoder.as_deref_mut() {
            Some(encoder) => encoder.abort(error, &mut self.session, &mut self.out),
            None => self.front.copy_abort(error, &mut self.session),
        };
        self.front.take_copied(&mut self.out);
        if self.poison.is_none() {
            self.poison = Some(Error::new(ErrorClass::Transcode, ABORTED));
        }
        result
    }

    /// Whether `abort` now makes the dialect's error output with a new encoder, which
    /// reads `session.start` (a copy that has written nothing it cannot mend): Python
    /// reads the hooks there, not before.
    pub fn abort_reads_start(&self) -> bool {
        self.encoder.is_none() && self.front.copy_abort_writes()
    }

    /// The output not taken yet: what the last `feed` / `close` made (`clear_output`
    /// after taking it), or after an error what was written before it (Python's
    /// `pending_output`).
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    pub fn clear_output(&mut self) {
        self.out.clear();
    }

    /// `output()` appended to `out`, and cleared.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out);
    }

    fn run(&mut self, step: impl FnOnce(&mut Front, &mut Session, &mut Encoding<'_>) -> Result<()>) -> Result<()> {
        let encoder = self.encoder.as_mut().map(|e| &mut **e as &mut (dyn Encode + Send + Sync));
        let mut sink = Encoding { encoder, model: self.model.as_mut(), out: &mut self.out };
        let result = step(&mut self.front, &mut self.session, &mut sink);
        self.front.take_copied(&mut self.out);
        result
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

// -- the decoder: bytes in, canonical events out --------------------------------------------

/// `pipeline.Decoder` for the kinds whose decoders exist (requests): `feed` /
/// `close` hand over the events they produced, owned (they outlive the chunk:
/// the binding makes Python objects of them). After an error every later call
/// returns that error (`_Poison`).
pub struct Decoder {
    pub session: Session,
    front: Front,
    poison: Option<Error>,
}

/// The events of one call, owned.
struct Collect<'a>(&'a mut Vec<Event<'static>>);

impl EventSink for Collect<'_> {
    fn event(&mut self, event: Event<'_>, _session: &mut Session) -> Result<()> {
        self.0.push(owned(event));
        Ok(())
    }
}

/// An event that owns its bytes.
pub fn owned(event: Event<'_>) -> Event<'static> {
    use std::borrow::Cow;
    fn text(cow: Cow<'_, str>) -> Cow<'static, str> {
        Cow::Owned(cow.into_owned())
    }
    fn bytes(cow: Cow<'_, [u8]>) -> Cow<'static, [u8]> {
        Cow::Owned(cow.into_owned())
    }
    match event {
        Event::Block(block) => Event::Block(block.into_owned()),
        Event::Control(c) => Event::Control(Control {
            name: text(c.name),
            value: bytes(c.value),
            dialect: c.dialect.map(text),
            key: c.key.map(text),
            raw: c.raw.map(bytes),
        }),
        Event::Extension(e) => Event::Extension(crate::canonical::Extension {
            dialect: text(e.dialect),
            path: bytes(e.path),
            raw: bytes(e.raw),
            message: e.message,
            lossless: e.lossless,
        }),
        Event::SystemEnd => Event::SystemEnd,
        Event::MessagesEnd => Event::MessagesEnd,
        Event::MessageStart { id, model, choice } => Event::MessageStart { id: id.map(text), model: model.map(text), choice },
        Event::Finish { reason, stop_sequence, choice } => {
            Event::Finish { reason: reason.map(text), stop_sequence: stop_sequence.map(text), choice }
        }
        Event::Usage(usage) => Event::Usage(usage),
        Event::Logprobs { raw, choice } => Event::Logprobs { raw: bytes(raw), choice },
        Event::Error { kind, message, status } => Event::Error { kind: text(kind), message: bytes(message), status },
        Event::End => Event::End,
        Event::FrameEnd => Event::FrameEnd,
    }
}

impl Decoder {
    pub fn new(session: Session) -> Result<Decoder> {
        let front = Front::new(session.source, session.kind, &session)?;
        Ok(Decoder { session, front, poison: None })
    }

    fn step(&mut self, events: &mut Vec<Event<'static>>,
            work: impl FnOnce(&mut Front, &mut Session, &mut Collect<'_>) -> Result<()>) -> Result<()> {
        if let Some(err) = &self.poison {
            return Err(err.clone());
        }
        let start = events.len();
        let mut sink = Collect(events);
        let result = work(&mut self.front, &mut self.session, &mut sink);
        if let Err(err) = &result {
            self.poison = Some(err.clone());
            events.truncate(start); // Python's Decoder.feed raises: the failing call's events are not handed over
        }
        result
    }

    /// `Decoder.feed`: the events this chunk produced (appended to `events`).
    pub fn feed(&mut self, data: &[u8], events: &mut Vec<Event<'static>>) -> Result<()> {
        self.step(events, |front, session, sink| front.feed(data, session, sink))
    }

    /// `Decoder.close`: the rest of the events.
    pub fn close(&mut self, events: &mut Vec<Event<'static>>) -> Result<()> {
        self.step(events, |front, session, sink| front.close(session, sink))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_covered() {
        assert!(covers(Kind::Request));
    }

    #[test]
    fn kinds_and_dialects_by_name() {
        assert_eq!(Kind::from_name("stream"), Some(Kind::Stream));
        assert_eq!(Kind::from_name("body"), None);
        assert_eq!(dialect("ollama"), Some("ollama"));
        assert_eq!(dialect("gemini"), None);
    }

    /// A toy decoder: `"model"`'s string is a model control, a number is a SchemaError
    /// (raised without a location: the front locates it), the body's end is `End`.
    struct Toy {
        key: Vec<u8>,
        text: Vec<u8>,
        at: u64,
    }

    impl Decode for Toy {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
                 out: &mut dyn EventSink) -> Result<()> {
            self.at = offset;
            match token {
                Token::Key(key) => self.key = key.to_vec(),
                Token::StringOpen(text) | Token::StringPart(text) => self.text.extend_from_slice(text),
                Token::String(text) | Token::StringClose(text) if self.key == b"model" => {
                    let mut value = b"\"".to_vec();
                    value.append(&mut self.text);
                    value.extend_from_slice(text);
                    value.push(b'"');
                    let control = Control { name: "model".into(), value: value.into(), dialect: Some("openai".into()),
                                            key: Some("model".into()), raw: None };
                    out.event(Event::Control(control), session)?;
                }
                Token::Number(_) => return Err(Error::new(ErrorClass::Schema, "no numbers")),
                Token::ObjectEnd if path.depth() == 0 => out.event(Event::End, session)?,
                _ => {}
            }
            Ok(())
        }

        fn at(&self) -> u64 {
            self.at
        }
    }

    /// A toy encoder: each event's tag, a control's value after it.
    struct Tags;

    impl Encode for Tags {
        fn event(&mut self, event: Event<'_>, _session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
            out.extend_from_slice(event.tag().as_bytes());
            if let Event::Control(control) = &event {
                out.extend_from_slice(&control.value);
            }
            out.push(b';');
            Ok(())
        }

        fn finish(&mut self, _session: &mut Session, _out: &mut Vec<u8>) -> Result<()> {
            Ok(())
        }
    }

    fn toy_front() -> (Session, Front) {
        let session = Session::new(crate::session::Options::default(), "openai", "anthropic", Kind::Request);
        let limits = Limits { max_depth: session.options.max_depth, ..Limits::default() };
        let front = Front::Body(BodyFront { source: "openai", tokenizer: Tokenizer::new(limits), decoder: Box::new(Toy { key: vec![], text: vec![], at: 0 }), copy: None });
        (session, front)
    }

    fn toy(model: Option<ModelName>) -> Transcoder {
        let (session, front) = toy_front();
        Transcoder { session, front, encoder: Some(Box::new(Tags)), model, out: Vec::new(), poison: None, closed: false }
    }

    #[test]
    fn events_go_through_the_encoder_as_the_chunks_arrive() {
        let body = br#"{"model": "m1", "x": [true]}"#;
        for cut in 0..=body.len() {
            let mut t = toy(None);
            let mut out = Vec::new();
            t.feed(&body[..cut]).unwrap();
            t.take_output(&mut out);
            t.feed(&body[cut..]).unwrap();
            t.close().unwrap();
            t.take_output(&mut out);
            assert_eq!(out, b"control\"m1\";end;", "cut at {cut}");
        }
    }

    #[test]
    fn the_model_hook_renames_the_model_control() {
        let mut t = toy(Some(ModelName::Fixed { value: b"\"m2\"".to_vec(), raw: b"\"m2\"".to_vec() }));
        t.feed(br#"{"model":"m1"}"#).unwrap();
        assert_eq!(t.output(), b"control\"m2\";end;");
        let mut calls = 0;
        let hook = ModelName::Hook(Box::new(move |value: &[u8]| {
            calls += 1;
            assert_eq!((value, calls), (&b"\"m1\""[..], 1));
            Ok((b"\"m3\"".to_vec(), b"\"m3\"".to_vec()))
        }));
        let mut t = toy(Some(hook));
        t.feed(br#"{"model":"m1"}"#).unwrap();
        assert_eq!(t.output(), b"control\"m3\";end;");
    }

    #[test]
    fn an_error_is_located_and_poisons_the_transcoder() {
        let mut t = toy(None);
        let err = t.feed(br#"{"model":"m1", "n": [1,"#).unwrap_err();
        assert_eq!((err.class, err.dialect, err.offset), (ErrorClass::Schema, Some("openai"), Some(21)));
        assert_eq!(err.path.as_deref(), Some(&b"$.n[0]"[..]));
        assert_eq!(t.output(), b"control\"m1\";", "what was written before the error is pending");
        assert_eq!(t.feed(b"]}").unwrap_err(), err);
        assert_eq!(t.close().unwrap_err(), err);
        // the end of input: located at the tokenizer's offset
        let mut t = toy(None);
        t.feed(br#"{"a": "#).unwrap();
        let err = t.close().unwrap_err();
        assert_eq!((err.class, err.dialect, err.offset), (ErrorClass::TruncatedInput, Some("openai"), Some(6)));
    }

    #[test]
    fn a_decoder_hands_over_owned_events_and_nothing_of_a_failing_call() {
        let (session, front) = toy_front();
        let mut decoder = Decoder { session, front, poison: None };
        let mut events = Vec::new();
        decoder.feed(br#"{"model": "m"#, &mut events).unwrap();
        assert!(events.is_empty());
        decoder.feed(br#"1", "#, &mut events).unwrap();
        assert!(matches!(&events[..], [Event::Control(c)] if c.value.as_ref() == b"\"m1\""));
        let err = decoder.feed(br#""x": {"model": "m2"}, "n": 3}"#, &mut events).unwrap_err();
        assert_eq!(events.len(), 1, "the failing call's control is not handed over");
        assert_eq!(err.path.as_deref(), Some(&b"$.n"[..]));
        assert_eq!(decoder.close(&mut events).unwrap_err(), err);
    }

    /// A toy stream decoder: the toy's tokens; `[DONE]` text is `End`, other text a SchemaError.
    struct ToyStream(Toy);

    impl Decode for ToyStream {
        fn token(&mut self, token: Token<'_>, offset: u64, path: &Frames, session: &mut Session,
                 out: &mut dyn EventSink) -> Result<()> {
            match token {
                Token::ObjectEnd if path.depth() == 0 => Ok(()),
                token => self.0.token(token, offset, path, session, out),
            }
        }

        fn at(&self) -> u64 {
            self.0.at
        }

        fn frame_text(&mut self, _event: Option<&str>, data: &[u8], session: &mut Session,
                      out: &mut dyn EventSink) -> Result<()> {
            match data {
                b"[DONE]" => out.event(Event::End, session),
                b"" => Ok(()),
                _ => Err(Error::new(ErrorClass::Schema, format!("text {:?}", String::from_utf8_lossy(data)))),
            }
        }

        fn missing_terminator(&self) -> &'static [u8] {
            b"data: [DONE]\n\n"
        }
    }

    struct Tagged(Vec<u8>);

    impl EventSink for Tagged {
        fn event(&mut self, event: Event<'_>, session: &mut Session) -> Result<()> {
            Tags.event(event, session, &mut self.0)
        }
    }

    fn stream_front(max_line: usize, copy: bool) -> (Front, Session) {
        let options = crate::session::Options { max_value_bytes: max_line, ..Default::default() };
        let session = Session::new(options, "openai", "openai", Kind::Stream);
        let decoder = Box::new(ToyStream(Toy { key: vec![], text: vec![], at: 0 }));
        (Front::Stream(Box::new(StreamFront::of("openai", decoder, &session, copy))), session)
    }

    /// The stream fed cut at `cut` (and closed): the events' tags, and the error.
    fn run_stream(stream: &[u8], cut: usize, max_line: usize) -> (Vec<u8>, Option<Error>) {
        let (mut front, mut session) = stream_front(max_line, false);
        let mut out = Tagged(Vec::new());
        let result = front
            .feed(&stream[..cut], &mut session, &mut out)
            .and_then(|()| front.feed(&stream[cut..], &mut session, &mut out))
            .and_then(|()| front.close(&mut session, &mut out));
        (out.0, result.err())
    }

    #[test]
    fn a_stream_is_one_document_per_frame_and_text_frames_whole() {
        let stream = b"data: {\"model\": \"a\"}\n\n: ping\n\ndata:\n\ndata:  {\"model\"\ndata: :\"b\"}\n\ndata:  [DONE] \n\n";
        for cut in 0..=stream.len() {
            let (events, error) = run_stream(stream, cut, 100);
            assert_eq!(error, None, "cut {cut}");
            assert_eq!(events, b"control\"a\";frame-end;frame-end;control\"b\";frame-end;end;frame-end;", "cut {cut}");
        }
    }

    #[test]
    fn errors_in_a_frame_count_from_its_document_and_name_the_frame() {
        let head = b"data: {\"model\": \"a\"}\n\n".len() as u64;
        // (stream, class, offset, path, frame_offset)
        let cases: [(&[u8], ErrorClass, Option<u64>, Option<&[u8]>, Option<u64>); 5] = [
            (b"data: {\"model\": \"a\"}\n\ndata:   {\"n\": [1]}\n\n", ErrorClass::Schema, Some(7), Some(b"$.n[0]"), Some(head + 8)),
            (b"data: {\"model\": \"a\"}\n\ndata: {\"n\"\n\n", ErrorClass::TruncatedInput, Some(4), Some(b"$.n"), Some(head + 6)),
            (b"data: {\"model\": \"a\"}\n\ndata: [NOPE]\n\n", ErrorClass::Schema, Some(0), None, Some(head + 6)),
            (b"data: {\"model\": \"a\"}\n\ndata: [0123456789]\n\n", ErrorClass::BudgetExceeded, Some(10), None, Some(head + 6)),
            (b"data: {\"model\": \"a\"}\n\ndata: {\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx: 1\n\n",
             ErrorClass::BudgetExceeded, Some(head + 8 + 64), Some(b"$"), None),
        ];
        for (stream, class, offset, path, frame_offset) in cases {
            for cut in 0..=stream.len() {
                let (_, error) = run_stream(stream, cut, 10);
                let error = error.unwrap_or_else(|| panic!("no error, cut {cut}"));
                let what = format!("{:?} cut {cut}: {error:?}", String::from_utf8_lossy(stream));
                assert_eq!((error.class, error.offset, error.frame_offset), (class, offset, frame_offset), "{what}");
                assert_eq!(error.path.as_deref().filter(|p| *p != b"$" || path.is_some()), path, "{what}");
                assert_eq!(error.dialect, Some("openai"), "{what}");
            }
        }
    }

    #[test]
    fn a_stream_copy_is_the_frames_the_decoder_accepted() {
        let stream = b"event: x\ndata: {\"model\": \"a\"}\n\n: ping\ndata: 1\ndata: 2\nevent: y\n\n";
        for cut in 0..=stream.len() {
            let (mut front, mut session) = stream_front(100, true);
            let mut out = Tagged(Vec::new());
            let mut copied = Vec::new();
            let first = front.feed(&stream[..cut], &mut session, &mut out);
            front.take_copied(&mut copied);
            let result = first.and_then(|()| front.feed(&stream[cut..], &mut session, &mut out));
            assert!(result.is_err(), "\"1\\n2\" is text: a SchemaError");
            front.take_copied(&mut copied);
            assert_eq!(copied, b"event: x\ndata: {\"model\": \"a\"}\n\n", "cut {cut}: only the accepted frame");
        }
        let (mut front, mut session) = stream_front(100, true);
        let mut out = Tagged(Vec::new());
        front.feed(b"data: [DONE]\n\ndata: {}\nevent: y\n\n", &mut session, &mut out).unwrap();
        front.close(&mut session, &mut out).unwrap();
        front.copy_finished();
        let mut copied = Vec::new();
        front.take_copied(&mut copied);
        assert_eq!(copied, b"data: [DONE]\n\ndata: {}\nevent: y\n\ndata: [DONE]\n\n");
    }

    #[test]
    fn errors_are_located_as_python_locates_them() {
        let err = Error::new(ErrorClass::Schema, "x").locate("openai", || b"$.a".to_vec(), 7);
        assert_eq!((err.dialect, err.offset, err.path.as_deref()), (Some("openai"), Some(7), Some(&b"$.a"[..])));
        // what the raising stage knew stays
        let err = Error::new(ErrorClass::Loss, "x").at(3).with_path(b"$.b".to_vec()).in_dialect("anthropic");
        let err = err.locate("openai", || b"$.a".to_vec(), 7);
        assert_eq!((err.dialect, err.offset, err.path.as_deref()), (Some("anthropic"), Some(3), Some(&b"$.b"[..])));
    }
}
