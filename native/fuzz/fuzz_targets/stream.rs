//! The native response and stream pipeline (`pipeline::Transcoder`: the stream front,
//! the body front, the copies of a same-dialect pair) on any bytes, for every pair
//! whose codecs are ported: no panic, no hang, and the same result -- the same output
//! bytes, or the same error (class, dialect, offset, path, frame_offset) with the same
//! output before it -- whole, cut at the point the input picks, in 7-byte pieces and
//! byte by byte; and an abort after any of them ends the output the same way.
//! The first byte picks the kind, the pair (of the 9) and the cut; the rest is the
//! stream (or body). Seed it with the rpt stream and response bodies (native/README.md).
//! (Unlike the request target, the error itself may differ by chunking where the input
//! has two faults: see the comment below; Python's pipeline behaves the same.)
#![no_main]

use _native::canonical::Event;
use _native::error::Error;
use _native::pipeline::Transcoder;
use _native::session::{Kind, Options, ResponseStart, Session};
use libfuzzer_sys::fuzz_target;

mod feed;

const DIALECTS: [&str; 3] = ["openai", "anthropic", "ollama"];

fn options() -> Options {
    // small budgets and depth: the limits are reached too (max_value_bytes well under the
    // 8 KiB inputs: a value read whole is bounded the same whether it came as one token
    // or in fragments, `Cx::bound_scalar`)
    Options { reorder_budget: 1 << 16, max_depth: 32, max_value_bytes: 256, ..Options::default() }
}

/// The output, the error with the output pending before it, and what an abort adds then.
fn run(source: &'static str, target: &'static str, kind: Kind, pieces: &[&[u8]]) -> Option<(Vec<u8>, Option<Error>, Vec<u8>)> {
    let mut session = Session::new(options(), source, target, kind);
    // the hooks' readings, fixed: the output must not depend on the run
    session.response_start = Some(ResponseStart { time_us: 1_764_579_600_123_456, nonce: [7; 12] });
    let mut transcoder = Transcoder::new(session, None).ok()?; // not ported: nothing to fuzz
    let (out, err) = feed::feed_all(&mut transcoder, pieces);
    let error = Event::Error { kind: "api_error".into(), message: b"cut"[..].into(), status: Some(502) };
    let mut aborted = Vec::new();
    // (the binding's order: a whole answer is closed, else the error event ends it)
    if transcoder.abort_closes() || transcoder.abort(&error).is_ok() {
        transcoder.take_output(&mut aborted);
    }
    Some((out, err, aborted))
}

/// What tests/fuzz.py requires equal for every cut: class, dialect, offset, path, frame_offset.
type Located = (&'static str, Option<&'static str>, Option<u64>, Option<Vec<u8>>, Option<u64>);

fn located(err: &Option<Error>) -> Option<Located> {
    err.as_ref().map(|e| (e.class.name(), e.dialect, e.offset, e.path.clone(), e.frame_offset))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let kind = if pick & 0x80 == 0 { Kind::Stream } else { Kind::Response };
    let pair = pick & 0x7f;
    let (source, target) = (DIALECTS[(pair % 9 / 3) as usize], DIALECTS[(pair % 3) as usize]);
    let Some(whole) = run(source, target, kind, &[body]) else { return };
    let cut = (pair as usize / 9 * 7919) % (body.len() + 1);
    let runs = [
        ("cut", run(source, target, kind, &[&body[..cut], &body[cut..]])),
        ("7-byte pieces", run(source, target, kind, &body.chunks(7).collect::<Vec<_>>())),
        ("byte by byte", run(source, target, kind, &body.chunks(1).collect::<Vec<_>>())),
    ];
    for (how, other) in runs {
        let other = other.expect("ported a moment ago");
        let what = format!("{source} -> {target} {}: {how} (cut at {cut})", kind.name());
        // Where the input has two faults, which one is met first can depend on the chunking
        // in Python too (a string's first fragment is checked against the schema before the
        // tokenizer scans the rest of it for a raw control character): only whether it fails
        // must not. (Which error, where: tests/native, against Python, for every cut.)
        assert_eq!(whole.1.is_some(), other.1.is_some(), "{what}: failing depends on the chunking: {:?} / {:?}",
                   located(&whole.1), located(&other.1));
        if whole.1.is_none() {
            assert_eq!(whole.0, other.0, "{what}: the output depends on the chunking");
            assert_eq!(whole.2, other.2, "{what}: the abort depends on the chunking");
        }
    }
});
