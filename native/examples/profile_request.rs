//! A timing loop over the native request pipeline, for profiling (`perf record`) without
//! Python: `cargo run --release --example profile_request -- BODY SOURCE TARGET|tokens [FRAME] [SECONDS|Nx]`.
//! Prints the median time of one transcode (a new `Transcoder` per run, the body fed in
//! FRAME-byte pieces, default 8192) and the output size. Not part of the test suite.
use std::time::{Duration, Instant};

use _native::error::Result;
use _native::json::{Frames, Sink, Token, Tokenizer};
use _native::pipeline::{dialect, Transcoder};
use _native::session::{Kind, Options, Session};

fn transcode(body: &[u8], source: &'static str, target: &'static str, frame: usize) -> usize {
    let session = Session::new(Options::default(), source, target, Kind::Request);
    let mut transcoder = Transcoder::new(session, None).expect("a ported pair");
    let mut out = Vec::new();
    for piece in body.chunks(frame) {
        transcoder.feed(piece).expect("a valid body");
        transcoder.take_output(&mut out);
    }
    transcoder.close().expect("a valid body");
    transcoder.take_output(&mut out);
    out.len()
}

/// The tokenizer alone, into a sink that counts tokens (what the codecs add is the rest).
fn tokenize(body: &[u8], frame: usize) -> usize {
    struct Count(usize);
    impl Sink for Count {
        fn token(&mut self, _token: Token<'_>, _offset: u64, _path: &Frames) -> Result<()> {
            self.0 += 1;
            Ok(())
        }
    }
    let mut tokenizer = Tokenizer::default();
    let mut count = Count(0);
    for piece in body.chunks(frame) {
        tokenizer.feed(piece, &mut count).expect("valid JSON");
    }
    tokenizer.close(&mut count).expect("valid JSON");
    count.0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let body = std::fs::read(&args[1]).expect("the body file");
    let source = dialect(&args[2]).expect("a dialect");
    let tokens_only = args[3] == "tokens";
    let target = if tokens_only { "openai" } else { dialect(&args[3]).expect("a dialect") };
    let frame = args.get(4).map_or(8192, |f| f.parse().expect("a frame size"));
    // SECONDS, or `N x` runs exactly (for instruction counts under callgrind)
    let limit = args.get(5).map_or("2", |s| s.as_str());
    let (seconds, runs): (f64, usize) = match limit.strip_suffix('x') {
        Some(n) => (f64::MAX / 4.0, n.parse().expect("a run count")),
        None => (limit.parse().expect("seconds"), usize::MAX),
    };
    let run = |body: &[u8]| if tokens_only { tokenize(body, frame) } else { transcode(body, source, target, frame) };
    let size = run(&body);
    let mut times = Vec::new();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds.min(1e6));
    while Instant::now() < deadline && times.len() < runs {
        let start = Instant::now();
        std::hint::black_box(run(std::hint::black_box(&body)));
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    let target = if tokens_only { "tokens" } else { target };
    println!("{source}->{target} {} bytes in, {size} out, frame {frame}: median {:.2} us, best {:.2} us over {} runs",
             body.len(), median.as_secs_f64() * 1e6, times[0].as_secs_f64() * 1e6, times.len());
}
