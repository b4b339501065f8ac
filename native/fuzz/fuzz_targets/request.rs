//! The native request pipeline (`pipeline::Transcoder`) on any bytes, for every pair
//! whose codecs are ported: no panic, no hang, and the same result -- the same
//! output bytes, or the same error -- whole or cut at the point the input picks.
//! The first byte picks the pair (of the 9) and the cut; the rest is the body.
//! Seed it with the rpt request bodies, each behind a pair byte (native/README.md).
#![no_main]

use _native::error::{Error, ErrorClass};
use _native::pipeline::{Transcoder, ModelName};
use _native::session::{Kind, Options, Session};
use libfuzzer_sys::fuzz_target;

mod feed;

const DIALECTS: [&str; 3] = ["openai", "anthropic", "ollama"];

fn options() -> Options {
    // small budgets and depth: the limits are reached too (max_value_bytes well under the
    // 8 KiB inputs: a value read whole is bounded alike in one token or in fragments)
    Options { reorder_budget: 1 << 16, max_depth: 32, max_value_bytes: 256, ..Options::default() }
}

/// The output, or the error with the output pending before it.
fn run(source: &'static str, target: &'static str, pieces: &[&[u8]]) -> Option<(Vec<u8>, Option<Error>)> {
    let session = Session::new(options(), source, target, Kind::Request);
    let model: Option<ModelName> = None;
    let mut transcoder = Transcoder::new(session, model).ok()?; // not ported: nothing to fuzz
    let (out, err) = feed::feed_all(&mut transcoder, pieces);
    Some((out, err))
}

/// What tests/fuzz.py requires equal for every cut: class, dialect, offset, path.
fn located(err: &Option<Error>) -> Option<(&'static str, Option<&'static str>, Option<u64>, Option<Vec<u8>>)> {
    err.as_ref().map(|e| (e.class.name(), e.dialect, e.offset, e.path.clone()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let (source, target) = (DIALECTS[(pick % 9 / 3) as usize], DIALECTS[(pick % 3) as usize]);
    let Some(whole) = run(source, target, &[body]) else { return };
    let cut = (pick as usize / 9 * 7919) % (body.len() + 1);
    let cut_result = run(source, target, &[&body[..cut], &body[cut..]]).expect("ported a moment ago");
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    let bytewise = run(source, target, &bytes).expect("ported a moment ago");
    // The reorder budget counts each held fragment with its overhead (64 bytes + its length,
    // as Python's ReorderBuffer does), so smaller pieces hold more: whether it is exceeded
    // depends on the chunking in the specification too. Then only the other runs compare.
    let over_budget = |r: &Option<Error>| {
        r.as_ref().is_some_and(|e| e.class == ErrorClass::BudgetExceeded && e.message.starts_with("reorder budget"))
    };
    if [&whole.1, &cut_result.1, &bytewise.1].into_iter().any(over_budget) {
        return;
    }
    assert_eq!(located(&whole.1), located(&cut_result.1), "{source} -> {target}: the error depends on the cut at {cut}");
    assert_eq!(located(&whole.1), located(&bytewise.1), "{source} -> {target}: the error depends on feeding byte by byte");
    if whole.1.is_none() {
        assert_eq!(whole.0, cut_result.0, "{source} -> {target}: the output depends on the cut at {cut}");
        assert_eq!(whole.0, bytewise.0, "{source} -> {target}: the output depends on feeding byte by byte");
    }
});
