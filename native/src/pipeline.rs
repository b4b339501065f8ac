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
use crate::decoding::{Decode, EventSink};
use crate::encoding::Encode;
use crate::error::{Error, ErrorClass, Result};
use crate::json::{Frames, Limits, Sink, Token, Tokenizer};
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
        ("ollama", Kind::Response) => Ok(Box::new(crate::dialects::ollama::response::ResponseEncoder::new(session)?)),
        ("ollama", Kind::Stream) => Ok(Box::new(crate::dialects::ollama::response::StreamEncoder::new(session)?)),
        _ => Err(not_ported(dialect, kind, "encoder")),
    }
}

// -- the front: bytes in, canonical events out ------------------------------------------

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
}

/// `pipeline._Front`: one JSON document (a request or response body) in, the
/// source dialect's canonical events out. Errors are located as Python's: the
/// source dialect, the tokenizer's path, and the offset of the token being read
/// (`decoder.at`; at `close`, the end of the input).
pub struct Front {
    source: &'static str,
    tokenizer: Tokenizer,
    decoder: BoxedDecoder,
}

impl Front {
    pub fn new(source: &'static str, kind: Kind, session: &Session) -> Result<Front> {
        if kind == Kind::Stream {
            // pipeline._StreamFront (framing, one document per frame): issue 12
            return Err(not_ported(source, kind, "front (framing)"));
        }
        let decoder = decoder(source, kind, session)?;
        let limits = Limits { max_depth: session.options.max_depth, ..Limits::default() };
        Ok(Front { source, tokenizer: Tokenizer::new(limits), decoder })
    }

    pub fn source(&self) -> &'static str {
        self.source
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
        result.map_err(|e| e.locate(self.source, || self.tokenizer.path(), decoder.at()))
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

// -- the transcoder: bytes in, bytes out ---------------------------------------------------

/// `Transcoder(model=...)`: the model name the target gets instead of the source's.
pub enum ModelName {
    /// `(value, raw)`: the control's new value as compact JSON, and its raw JSON
    /// (`msgspec.json.encode(name)`) for a control that had raw JSON
    Fixed { value: Vec<u8>, raw: Vec<u8> },
    /// a function of the source's model value (compact JSON) returning `(value, raw)`
    /// as above; called once per model control (`_model_renamer`)
    Hook(Box<dyn FnMut(&[u8]) -> Result<(Vec<u8>, Vec<u8>)> + Send + Sync>),
}

impl ModelName {
    /// `_model_renamer.on_event_renamed` for one model control.
    fn rename<'a>(&mut self, control: Control<'a>) -> Result<Control<'a>> {
        let (value, raw) = match self {
            ModelName::Fixed { value, raw } => (value.clone(), raw.clone()),
            ModelName::Hook(hook) => hook(&control.value)?,
        };
        let raw = control.raw.as_ref().map(|_| raw.into());
        Ok(Control { name: control.name, value: value.into(), dialect: control.dialect, key: control.key, raw })
    }
}

/// The decoder's event sink in a transcoder: each event into the encoder, whose
/// output goes to this feed's bytes.
struct Encoding<'a> {
    encoder: &'a mut (dyn Encode + Send + Sync),
    model: Option<&'a mut ModelName>,
    out: &'a mut Vec<u8>,
}

impl EventSink for Encoding<'_> {
    #[inline]
    fn event(&mut self, event: Event<'_>, session: &mut Session) -> Result<()> {
        let event = match (event, self.model.as_deref_mut()) {
            (Event::Control(control), Some(model)) if control.name == "model" => Event::Control(model.rename(control)?),
            (event, _) => event,
        };
        self.encoder.event(event, session, self.out)
    }
}

/// `pipeline.Transcoder` for the kinds whose codecs exist (requests): `feed`
/// returns the bytes that chunk made possible, `close` the rest. After an error
/// every later call returns that error (`_Poison`); `pending` has the output
/// produced before it.
pub struct Transcoder {
    pub session: Session,
    front: Front,
    encoder: BoxedEncoder,
    model: Option<ModelName>,
    /// output not taken yet (written before an error: `pending_output`)
    out: Vec<u8>,
    poison: Option<Error>,
    closed: bool,
}

impl Transcoder {
    pub fn new(mut session: Session, model: Option<ModelName>) -> Result<Transcoder> {
        let (source, target, kind) = (session.source, session.target, session.kind);
        if source == target && kind != Kind::Request {
            // interlingua.passthrough (BodyCopy / FrameCopy): issue 12
            return Err(not_ported(source, kind, "passthrough"));
        }
        let mut encoder = encoder(target, kind, &session)?;
        let front = Front::new(source, kind, &session)?;
        let mut out = Vec::new();
        encoder.start(&mut session, &mut out)?; // (Python's encoder constructor writes)
        Ok(Transcoder { session, front, encoder, model, out, poison: None, closed: false })
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
        let result = self.run(|front, session, sink| front.feed(data, session, sink));
        self.poisoned(result)
    }

    /// `Transcoder.close`: the rest of the output is then `output()`. As in Python, a
    /// second `close` closes nothing more (the decoder's `finish` runs again) and a
    /// `feed` after it is the tokenizer's "data fed after close()".
    pub fn close(&mut self) -> Result<()> {
        self.check()?;
        let result = self.run(|front, session, sink| front.close(session, sink));
        self.closed = true;
        self.poisoned(result)
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
        let mut sink = Encoding { encoder: &mut *self.encoder, model: self.model.as_mut(), out: &mut self.out };
        step(&mut self.front, &mut self.session, &mut sink)
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
            path: text(e.path),
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
        Event::Error { kind, message, status } => Event::Error { kind: text(kind), message: text(message), status },
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

    fn toy(model: Option<ModelName>) -> Transcoder {
        let session = Session::new(crate::session::Options::default(), "openai", "anthropic", Kind::Request);
        let limits = Limits { max_depth: session.options.max_depth, ..Limits::default() };
        let front = Front { source: "openai", tokenizer: Tokenizer::new(limits), decoder: Box::new(Toy { key: vec![], text: vec![], at: 0 }) };
        Transcoder { session, front, encoder: Box::new(Tags), model, out: Vec::new(), poison: None, closed: false }
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
        let t = toy(None);
        let mut decoder = Decoder { session: t.session, front: t.front, poison: None };
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
