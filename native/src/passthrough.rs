//! Same-dialect responses and streams: the input is the output
//! (`src/interlingua/passthrough.py`: `BodyCopy`, `FrameCopy`). Owner: helper rp (issue 12).
//!
//! A response or stream transcoded into its own dialect is copied, not
//! re-encoded; the dialect decoder still reads every byte, and nothing goes out
//! past what it accepted. The pipeline's front hands a copy what Python's hands
//! it: a body chunk once the decoder consumed it (`BodyCopy::data`), a frame's
//! data as the framer hands it on and its end once the decoder accepted it
//! (`FrameCopy::frame_data` / `frame_end`). A copy writes into its own buffer,
//! which the `Transcoder` takes after every call (the copy is the only writer of
//! a passthrough run: the canonical events go nowhere).
#![forbid(unsafe_code)]

use crate::canonical::Event;
use crate::error::Result;
use crate::session::{Kind, Session};

/// Frame data held until the frame's end (for a clean abort); longer frames stream.
pub const FRAME_HOLD: usize = 64 * 1024;

/// `passthrough._BROKEN_END`: how an abort ends a frame already partly on the wire.
/// Its data cannot be mended, so its line (and SSE frame) is ended and the error frame
/// is a frame of its own; anthropic's is renamed `ping`, which its client skips unread.
fn broken_end(target: &str) -> &'static [u8] {
    match target {
        "anthropic" => b"\nevent: ping\n\n",
        "openai" => b"\n\n",
        _ => b"\n",
    }
}

/// `_Copy._error_output`: the dialect's own error output, from its encoder (which
/// has written nothing before: made here, its constructor's bytes, then `abort`).
/// The encoder reads `session.start()`: the caller reads the hooks first
/// (`Transcoder::abort_reads_start`).
fn error_output(error: &Event<'_>, kind: Kind, session: &mut Session, out: &mut Vec<u8>) -> Result<()> {
    let mut encoder = crate::pipeline::encoder(session.target, kind, session)?;
    encoder.start(session, out)?;
    encoder.abort(error, session, out)
}

/// `passthrough.BodyCopy`: a response body, chunk by chunk.
#[derive(Default)]
pub struct BodyCopy {
    /// the output not taken yet
    out: Vec<u8>,
    /// a byte of the body went out (an abort can no longer write an error body)
    written: bool,
    /// the source ended normally, or an abort was written
    done: bool,
}

std::thread_local! {
    /// A dropped body copy's buffer, for the next one (`crate::spare`).
    static SPARE_BODY: std::cell::Cell<Option<Vec<u8>>> = const { std::cell::Cell::new(None) };
}

impl Drop for BodyCopy {
    fn drop(&mut self) {
        crate::spare::keep(&SPARE_BODY, &mut self.out);
    }
}

impl BodyCopy {
    pub fn new() -> Self {
        BodyCopy { out: crate::spare::take(&SPARE_BODY).unwrap_or_default(), ..BodyCopy::default() }
    }

    /// A chunk the decoder consumed.
    pub fn data(&mut self, chunk: &[u8]) {
        if !chunk.is_empty() {
            self.written = true;
            self.out.extend_from_slice(chunk);
        }
    }

    /// The source ended and the decoder accepted it.
    pub fn finished(&mut self) {
        self.done = true;
    }

    /// Whether `abort` now writes the dialect's error body (and so needs the response start).
    pub fn abort_writes(&self) -> bool {
        !self.done && !self.written
    }

    pub fn abort(&mut self, error: &Event<'_>, session: &mut Session) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        if !self.written {
            error_output(error, Kind::Response, session, &mut self.out)?;
        }
        Ok(())
    }

    /// The output not taken yet, appended to `into`. A small body's bytes are copied, so
    /// that each buffer stays with its owner for the next transcoder (`crate::spare`: handed
    /// over, the copy's buffer would be allocated again each time); a large one is handed over.
    pub fn take(&mut self, into: &mut Vec<u8>) {
        if crate::spare::small(&self.out) && into.capacity() - into.len() >= self.out.len() {
            into.append(&mut self.out);
        } else {
            take(&mut self.out, into);
        }
    }
}

/// `passthrough.FrameCopy`: a stream, frame by frame (SSE or NDJSON, as the source).
pub struct FrameCopy {
    sse: bool,
    /// the output not taken yet
    out: Vec<u8>,
    /// the current frame's output, until its end (bounded by `FRAME_HOLD`)
    held: Vec<u8>,
    /// a frame has started (its head is held or written)
    open: bool,
    /// the current frame is past `FRAME_HOLD`: written as it comes
    streaming: bool,
    /// the event name its head carried (`head_named`: it had one); the buffer is kept
    /// from frame to frame
    head_event: String,
    head_named: bool,
    /// the source ended normally, or an abort was written
    done: bool,
}

impl FrameCopy {
    pub fn new(sse: bool) -> Self {
        FrameCopy {
            sse,
            out: Vec::new(),
            held: Vec::new(),
            open: false,
            streaming: false,
            head_event: String::new(),
            head_named: false,
            done: false,
        }
    }

    /// Data of the current frame, as the framer handed it on; `event`: the name seen so far.
    pub fn frame_data(&mut self, data: &[u8], event: Option<&str>) {
        if !self.open {
            self.open = true;
            self.head_event.clear();
            self.head_event.push_str(event.unwrap_or(""));
            self.head_named = event.is_some();
            if self.sse {
                // (a frame starts with nothing held and not streaming: the head is held)
                crate::framing::sse_open(&mut self.held, event);
            }
        }
        if self.sse && memchr::memchr(b'\n', data).is_some() {
            // the framer joins data lines with LF: each starts a new data line
            let mut lines = Vec::with_capacity(data.len() + 16);
            for (n, line) in data.split(|&b| b == b'\n').enumerate() {
                if n > 0 {
                    lines.extend_from_slice(b"\ndata: ");
                }
                lines.extend_from_slice(line);
            }
            self.put(&lines);
        } else {
            self.put(data);
        }
    }

    fn put(&mut self, data: &[u8]) {
        if self.streaming {
            self.out.extend_from_slice(data);
            return;
        }
        self.held.extend_from_slice(data);
        if self.held.len() > FRAME_HOLD {
            self.streaming = true;
            self.release();
        }
    }

    fn release(&mut self) {
        take(&mut self.held, &mut self.out);
    }

    /// The decoder accepted the frame: it goes out whole.
    pub fn frame_end(&mut self, event: Option<&str>) {
        if !self.open {
            return;
        }
        if self.sse {
            match event {
                Some(name) if !(self.head_named && name == self.head_event) => {
                    self.put(b"\nevent: ");
                    self.put(name.as_bytes());
                }
                _ => {}
            }
            self.put(crate::framing::SSE_END);
        } else {
            self.put(b"\n");
        }
        self.release();
        self.open = false;
        self.streaming = false;
        self.head_named = false;
    }

    /// The source ended and the decoder accepted it: `missing_terminator` is the
    /// frame the dialect adds when the source had none (openai's `[DONE]`).
    pub fn finished(&mut self, missing_terminator: &[u8]) {
        self.done = true;
        self.out.extend_from_slice(missing_terminator);
    }

    /// Whether `abort` now writes the dialect's error frame (and so needs the response start);
    /// `source_done`: the decoder's `source_done()`.
    pub fn abort_writes(&self, source_done: bool) -> bool {
        !self.done && !source_done
    }

    /// `source_end`: `None` while the source has not said all; after its last event or its
    /// error event, what a copy adds at its end (`missing_terminator`: openai's `[DONE]`).
    pub fn abort(&mut self, error: &Event<'_>, source_end: Option<&[u8]>, session: &mut Session) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        if self.streaming {
            // inside a frame already on the wire: end it, broken
            self.out.extend_from_slice(broken_end(session.target));
            self.streaming = false;
        }
        self.held.clear(); // a frame the decoder did not accept whole is not written
        self.open = false;
        match source_end {
            None => error_output(error, Kind::Stream, session, &mut self.out),
            Some(end) => {
                self.out.extend_from_slice(end); // (after the source's end, or its error event, no error event follows)
                Ok(())
            }
        }
    }

    /// The output not taken yet, appended to `into`.
    pub fn take(&mut self, into: &mut Vec<u8>) {
        take(&mut self.out, into);
    }
}

/// `from` appended to `into` and cleared (no copy when `into` is empty).
fn take(from: &mut Vec<u8>, into: &mut Vec<u8>) {
    if into.is_empty() {
        std::mem::swap(from, into);
    } else {
        into.append(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse_copy(frames: &[(&[&[u8]], Option<&str>, Option<&str>)]) -> Vec<u8> {
        let mut copy = FrameCopy::new(true);
        let mut out = Vec::new();
        for (pieces, head, end) in frames {
            for piece in *pieces {
                copy.frame_data(piece, *head);
            }
            copy.frame_end(*end);
            copy.take(&mut out);
        }
        out
    }

    #[test]
    fn sse_frames_are_reframed_with_their_event_names() {
        let out = sse_copy(&[
            (&[b"{\"a\":", b"1}"], Some("delta"), Some("delta")),
            (&[b"x", b"\n", b"y"], None, None),
            (&[b"{}"], None, Some("late")),
        ]);
        assert_eq!(out, b"event: delta\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\ndata: {}\nevent: late\n\n");
    }

    #[test]
    fn ndjson_lines_are_copied() {
        let mut copy = FrameCopy::new(false);
        let mut out = Vec::new();
        copy.frame_data(b"{\"a\":1}\r", None);
        copy.frame_end(None);
        copy.frame_end(None); // no frame open: nothing
        copy.finished(b"");
        copy.take(&mut out);
        assert_eq!(out, b"{\"a\":1}\r\n");
        assert!(!copy.abort_writes(false));
    }

    #[test]
    fn a_frame_past_the_hold_streams_and_cannot_be_mended() {
        let mut copy = FrameCopy::new(false);
        let mut out = Vec::new();
        copy.frame_data(b"{\"a\":1}", None);
        copy.take(&mut out);
        assert!(out.is_empty(), "held until the frame's end");
        assert!(copy.abort_writes(false));
        assert!(!copy.abort_writes(true), "after the source's end no error follows");
        copy.frame_data(&vec![b' '; FRAME_HOLD], None);
        copy.take(&mut out);
        assert_eq!(out.len(), FRAME_HOLD + 7, "past the hold: written as it comes");
        assert!(copy.abort_writes(false), "an abort ends the broken frame, then writes the error");
    }

    #[test]
    fn a_body_copy_writes_each_chunk() {
        let mut copy = BodyCopy::new();
        assert!(copy.abort_writes());
        let mut out = b"x".to_vec();
        copy.data(b"");
        assert!(copy.abort_writes(), "an empty chunk writes nothing");
        copy.data(b"{}");
        copy.take(&mut out);
        assert_eq!(out, b"x{}");
        assert!(!copy.abort_writes());
    }
}
