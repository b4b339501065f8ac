//! A timing loop over the native response and stream pipeline (the sibling of profile_request.rs), for profiling without Python:
//! `cargo run --release --example profile_stream -- BODY SOURCE TARGET response|stream [SECONDS|Nx]`.
//! A stream is fed one frame per `feed` (SSE frames end at a blank line, NDJSON at a newline),
//! a response whole; a new `Transcoder` per run. Prints the median time of one transcode.
use std::time::{Duration, Instant};

use _native::pipeline::{dialect, Transcoder};
use _native::session::{Kind, Options, ResponseStart, Session};

fn frames(body: &[u8], kind: Kind, source: &str) -> Vec<Vec<u8>> {
    if kind == Kind::Response {
        return vec![body.to_vec()];
    }
    let end: &[u8] = if source == "ollama" { b"\n" } else { b"\n\n" };
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let at = rest.windows(end.len()).position(|w| w == end).map_or(rest.len(), |i| i + end.len());
        out.push(rest[..at].to_vec());
        rest = &rest[at..];
    }
    out
}

fn transcode(frames: &[Vec<u8>], source: &'static str, target: &'static str, kind: Kind) -> usize {
    let mut session = Session::new(Options::default(), source, target, kind);
    session.response_start = Some(ResponseStart { time_us: 1_764_579_600_500_000, nonce: [0; 12] });
    let mut transcoder = Transcoder::new(session, None).expect("a ported pair");
    let mut out = Vec::new();
    for frame in frames {
        transcoder.feed(frame).expect("a valid body");
        transcoder.take_output(&mut out);
    }
    transcoder.close().expect("a valid body");
    transcoder.take_output(&mut out);
    out.len()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let body = std::fs::read(&args[1]).expect("the body file");
    let source = dialect(&args[2]).expect("a dialect");
    let target = dialect(&args[3]).expect("a dialect");
    let kind = if args[4] == "stream" { Kind::Stream } else { Kind::Response };
    let limit = args.get(5).map_or("2", |s| s.as_str());
    let (seconds, runs): (f64, usize) = match limit.strip_suffix('x') {
        Some(n) => (f64::MAX / 4.0, n.parse().expect("a run count")),
        None => (limit.parse().expect("seconds"), usize::MAX),
    };
    let frames = frames(&body, kind, source);
    let size = transcode(&frames, source, target, kind);
    let mut times = Vec::new();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds.min(1e6));
    while Instant::now() < deadline && times.len() < runs {
        let start = Instant::now();
        std::hint::black_box(transcode(std::hint::black_box(&frames), source, target, kind));
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    println!("{source}->{target} {} bytes in {} frames, {size} out: median {:.2} us ({:.3} us/frame), best {:.2} us over {} runs",
             body.len(), frames.len(), median.as_secs_f64() * 1e6, median.as_secs_f64() * 1e6 / frames.len() as f64,
             times[0].as_secs_f64() * 1e6, times.len());
}
