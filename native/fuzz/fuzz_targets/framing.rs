//! The SSE and NDJSON framers on any bytes: no panic, no hang, the same
//! frames and errors whole or cut at the point the input's first byte picks.
#![no_main]

use _native::error::Error;
use _native::framing::{FrameSink, NdjsonDecoder, SseDecoder};
use libfuzzer_sys::fuzz_target;

#[derive(Default, PartialEq, Debug)]
struct Frames(Vec<(Vec<u8>, Option<String>)>, Vec<u8>);

impl FrameSink for Frames {
    fn frame_data(&mut self, data: &[u8], _at: u64) -> Result<(), Error> {
        self.1.extend_from_slice(data);
        Ok(())
    }
    fn frame_end(&mut self, event: Option<&str>) -> Result<(), Error> {
        let data = std::mem::take(&mut self.1);
        self.0.push((data, event.map(str::to_string)));
        Ok(())
    }
}

fn sse(data: &[u8], cut: usize) -> (Frames, Option<Error>, Option<String>, Option<u64>) {
    let mut decoder = SseDecoder::new(40);
    let mut sink = Frames::default();
    let err = decoder
        .feed(&data[..cut], &mut sink)
        .and_then(|_| decoder.feed(&data[cut..], &mut sink))
        .and_then(|_| decoder.close(&mut sink))
        .err();
    (sink, err, decoder.last_event_id.clone(), decoder.retry)
}

fn ndjson(data: &[u8], cut: usize) -> Frames {
    let mut decoder = NdjsonDecoder::new();
    let mut sink = Frames::default();
    decoder.feed(&data[..cut], &mut sink).unwrap();
    decoder.feed(&data[cut..], &mut sink).unwrap();
    decoder.close(&mut sink).unwrap();
    sink
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, data)) = input.split_first() else { return };
    let cut = if data.is_empty() { 0 } else { pick as usize % (data.len() + 1) };
    let (whole, whole_err, id, retry) = sse(data, 0);
    let (frames, err, id2, retry2) = sse(data, cut);
    assert_eq!(err, whole_err);
    if err.is_none() {
        assert_eq!(frames, whole);
        assert_eq!((id, retry), (id2, retry2));
    }
    assert_eq!(ndjson(data, cut), ndjson(data, 0));
});
