//! The tokenizer on any bytes, cut anywhere: no panic, no hang, and the
//! invariants of the parity rule -- the same tokens (fragments joined) and the
//! same error whole or cut in two at the point the input's first byte picks;
//! every string fragment is UTF-8 and never ends inside an escape.
#![no_main]

use _native::error::Error;
use _native::json::{Frames, Limits, Sink, Token, Tokenizer};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Joined(Vec<(u8, Vec<u8>, u64)>, bool);

impl Sink for Joined {
    fn token(&mut self, token: Token<'_>, offset: u64, _path: &Frames) -> Result<(), Error> {
        let bytes = token.bytes().unwrap_or_default();
        if (6..=9).contains(&token.kind()) {
            assert!(std::str::from_utf8(bytes).is_ok(), "fragment splits a UTF-8 character");
            let trailing = bytes.iter().rev().take_while(|&&b| b == b'\\').count();
            assert!(trailing % 2 == 0, "fragment ends inside an escape");
        }
        match token.kind() {
            8 | 9 if self.1 => self.0.last_mut().unwrap().1.extend_from_slice(bytes),
            7 => {
                self.0.push((6, bytes.to_vec(), offset));
                self.1 = true;
                return Ok(());
            }
            kind => self.0.push((kind, bytes.to_vec(), offset)),
        }
        self.1 = token.kind() == 7 || token.kind() == 8;
        Ok(())
    }
}

fn run(data: &[u8], cuts: &[usize], limits: Limits) -> (Vec<(u8, Vec<u8>, u64)>, Option<Error>) {
    let mut tokenizer = Tokenizer::new(limits);
    let mut sink = Joined::default();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&data.len())) {
        if let Err(e) = tokenizer.feed(&data[start..cut], &mut sink) {
            return (sink.0, Some(e));
        }
        start = cut;
    }
    let err = tokenizer.close(&mut sink).err();
    (sink.0, err)
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else { return };
    let limits = if pick & 1 == 0 {
        Limits::default()
    } else {
        Limits { max_depth: 4, max_key_bytes: 5, max_number_bytes: 6, max_seen_key_bytes: 12 }
    };
    let (whole, whole_err) = run(data, &[], limits);
    let cut = if data.is_empty() { 0 } else { pick as usize % (data.len() + 1) };
    let (tokens, err) = run(data, &[cut], limits);
    assert_eq!(err, whole_err);
    if err.is_none() {
        assert_eq!(tokens, whole);
    }
    let bytes: Vec<usize> = (1..data.len()).collect();
    let (_, err) = run(data, &bytes, limits);
    assert_eq!(err, whole_err);
});
