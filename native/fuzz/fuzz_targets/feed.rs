//! What the pipeline targets share: one transcoder fed the pieces, as a proxy feeds it.

use _native::error::Error;
use _native::pipeline::Transcoder;

/// Feed every piece, then close: the output, and the error with the output pending
/// before it (the transcoder stops at the first error, as `Transcoder.feed` does).
pub fn feed_all(transcoder: &mut Transcoder, pieces: &[&[u8]]) -> (Vec<u8>, Option<Error>) {
    let mut out = Vec::new();
    let mut result = Ok(());
    for piece in pieces {
        result = transcoder.feed(piece);
        transcoder.take_output(&mut out); // (after an error: the output pending before it)
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() {
        result = transcoder.close();
        transcoder.take_output(&mut out);
    }
    (out, result.err())
}
