//! What one transcoding run shares between its stages (`src/interlingua/session.py`):
//! `Options`, `Loss`, `Session` (losses, the reorder buffer, renamed tools).
//!
//! The run owns one `Session`; every stage gets `&mut Session` per call (no shared
//! ownership, no interior mutability). Owner: helper S.
#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::error::{Error, ErrorClass, Result};
use crate::json::py_str_repr;
use crate::losses::{lacks, lacks_len, path_subject_wtf8, push_lack_pieces};
use crate::naming::{name_limit, wire_name};
use crate::reorder::{ReorderBuffer, DEFAULT_BUDGET};
use crate::value::{Value, LONE_SURROGATE_MESSAGE};

/// `session.Options`, field for field (same names, same defaults).
#[derive(Clone, Debug)]
pub struct Options {
    pub strict: bool,
    pub reorder_budget: u64,
    pub refuse_reorder: bool,
    /// `None`, `"reasoning_content"` or `"reasoning"`
    pub openai_reasoning_field: Option<String>,
    pub default_max_tokens: i64,
    pub max_depth: usize,
    pub max_value_bytes: usize,
    /// wire name -> the client's name (responses)
    pub tool_names: Option<HashMap<String, String>>,
    /// `"auto"`, `"adaptive"` or `"budget"` (the default borrowed: no allocation per transcoder)
    pub anthropic_thinking: Cow<'static, str>,
    /// effort -> budget; `None`: anthropic.controls.THINKING_BUDGETS
    pub anthropic_thinking_budgets: Option<Vec<(String, i64)>>,
    pub ollama_sampling_defaults: bool,
    /// an openai stream writes its usage chunk (`false`: each count is a loss)
    pub openai_stream_usage: bool,
}

impl Default for Options {
    /// `session.Options()`.
    fn default() -> Self {
        Options {
            strict: false,
            reorder_budget: DEFAULT_BUDGET,
            refuse_reorder: false,
            openai_reasoning_field: None,
            default_max_tokens: 4096,
            max_depth: 128,
            max_value_bytes: 1 << 20,
            tool_names: None,
            anthropic_thinking: Cow::Borrowed("auto"),
            anthropic_thinking_budgets: None,
            ollama_sampling_defaults: false,
            openai_stream_usage: true,
        }
    }
}

/// A field of the input that could not be carried into the target. `path` and `reason`
/// are WTF-8: a path ends in an input key, which may hold an escaped lone surrogate
/// (`"x\ud83d"`), as Python's `str` does (the binding converts with `surrogatepass`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loss {
    /// (a dialect the core knows is its static name: no copy per loss)
    pub dialect: Cow<'static, str>,
    /// the path, then the reason: one buffer, written once (a response records a few
    /// losses, and each was two allocations and a copy)
    text: Vec<u8>,
    path_len: usize,
}

impl Loss {
    pub fn path(&self) -> &[u8] {
        &self.text[..self.path_len]
    }

    pub fn reason(&self) -> &[u8] {
        &self.text[self.path_len..]
    }
}

/// `session.NONCE_BYTES`: the entropy one response reads.
pub const NONCE_BYTES: usize = 12;
/// `session.MAX_CLOCK`: 10000-01-01T00:00:00Z, the last time RFC 3339 can write.
pub const MAX_CLOCK: f64 = 253402300800.0;

/// `session.ResponseStart`: what one response reads of the world, once, when its
/// transcoder is made -- the wall clock (microseconds since the epoch, UTC) and a
/// nonce that makes a generated id unique. The codecs get these two values, never
/// the hooks: the binding reads the `Transcoder`'s `clock` / `entropy` (Python's
/// `session.response_start`, with its checks) and sets `Session::response_start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseStart {
    pub time_us: i64,
    pub nonce: [u8; NONCE_BYTES],
}

impl ResponseStart {
    /// `response_start(None, None)` done in Rust: the wall clock and a fresh nonce
    /// (`now_us`, `fresh_nonce`): the core run without a binding (cargo tests, the fuzzer,
    /// a Rust caller), and the binding's reading of hooks left unset.
    pub fn now() -> ResponseStart {
        ResponseStart { time_us: now_us(), nonce: fresh_nonce() }
    }
}

/// `round(time.time() * 1_000_000)`: the wall clock in microseconds since the epoch.
pub fn now_us() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    time_us_of_seconds(since.as_secs_f64())
}

/// `round(seconds * 1_000_000)` of a float clock reading (half to even, as Python's
/// `round`); an int reading is `seconds * 1_000_000` exactly.
pub fn time_us_of_seconds(seconds: f64) -> i64 {
    (seconds * 1_000_000.0).round_ties_even() as i64
}

/// A nonce no other response of any process draws: the process's key (std's keyed hash --
/// SipHash, keys from the OS -- of its process id, drawn once) xor a process-wide count for
/// 8 bytes, the count's low 4 bytes for the rest. Distinct counts give distinct nonces; two
/// processes' keys differ. Python's default is `os.urandom(12)`, a system call (~0.4 us) per
/// response, and a hash per response ~200 instructions more: a nonce only has to make a
/// generated id unique, not secret.
pub fn fresh_nonce() -> [u8; NONCE_BYTES] {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let mut nonce = [0u8; NONCE_BYTES];
    nonce[..8].copy_from_slice(&(process_key() ^ n).to_le_bytes());
    nonce[8..].copy_from_slice(&n.to_le_bytes()[..NONCE_BYTES - 8]);
    nonce
}

/// The process's nonce key, drawn once (0: not drawn yet). A process that forks calls
/// `forked()` in the child (the binding registers it with `os.register_at_fork`), so the
/// child draws its own, keyed with its process id.
fn process_key() -> u64 {
    use std::hash::BuildHasher;
    use std::sync::atomic::Ordering;
    match PROCESS_KEY.load(Ordering::Relaxed) {
        0 => {
            let key = std::collections::hash_map::RandomState::new().hash_one(std::process::id()) | 1;
            PROCESS_KEY.store(key, Ordering::Relaxed);
            key
        }
        key => key,
    }
}

static PROCESS_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// After `fork`, in the child: forget the parent's nonce key (`fresh_nonce`).
pub fn forked() {
    PROCESS_KEY.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// `"request"`, `"response"` or `"stream"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    Stream,
}

/// `Session.tool_names`: wire name -> the source's name, in insertion order (a Python
/// dict's: the binding gives it back in that order). A run renames a few tools: a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolNames(Vec<(String, String)>);

impl ToolNames {
    pub fn get(&self, wire: &str) -> Option<&String> {
        self.0.iter().find(|(w, _)| w == wire).map(|(_, name)| name)
    }

    /// `names[wire] = name`: a new key goes last, an existing one keeps its place.
    pub fn insert(&mut self, wire: String, name: String) {
        match self.0.iter_mut().find(|(w, _)| *w == wire) {
            Some((_, old)) => *old = name,
            None => self.0.push((wire, name)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(w, n)| (w.as_str(), n.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Up to this many losses, `Session::lose` finds a repeated one by looking through them.
const FEW_LOSSES: usize = 16;

/// Per-run shared state (`session.Session`).
pub struct Session {
    pub options: Options,
    pub kind: Kind,
    pub source: &'static str,
    pub target: &'static str,
    pub losses: Vec<Loss>,
    pub reorder: ReorderBuffer,
    /// tool names changed for the target in this run: wire name -> the source's name
    pub tool_names: ToolNames,
    /// same-dialect copy (`interlingua.passthrough`): nothing is lost
    pub passthrough: bool,
    /// an openai request said `stream_options.include_usage: true` (`Transcoder.asks_stream_usage`)
    pub asks_stream_usage: bool,
    /// the request asks for a stream: its canonical `stream` control is true (`Transcoder.asks_stream`)
    pub asks_stream: bool,
    /// (dialect, path, reason) of the losses recorded (`lose`'s one-record rule), once
    /// there are `FEW_LOSSES` or more, or in strict mode; before that `losses` is
    /// looked through (a body loses a few fields: no key to build and hash per loss);
    /// made then (a new set seeds its hasher from a thread-local, per session otherwise)
    lost_paths: Option<Box<HashSet<(String, Vec<u8>, usize)>>>,
    /// the response's clock reading and nonce (`Session._start`), given by the
    /// binding from the `Transcoder`'s hooks; `None`: read the defaults at `start()`
    pub response_start: Option<ResponseStart>,
    /// losses of placing a block whose last fragment has not come (`hold_losses`)
    held_losses: Vec<Loss>,
    holding: bool,
    /// the source message of an unknown role last lost whole (`Encoder._lost_message`)
    pub lost_message: Option<i64>,
}

/// Strict mode's error for a loss: `LossError` "cannot carry {path}: {reason}".
fn loss_error(dialect: &str, path: &[u8], reason: &[u8]) -> Error {
    let message = [&b"cannot carry "[..], path, b": ", reason].concat();
    let err = Error::wtf8(ErrorClass::Loss, message).with_path(path.to_vec());
    // (an error names a dialect the core knows; any other name: the pipeline's source)
    match crate::pipeline::dialect(dialect) {
        Some(known) => err.in_dialect(known),
        None => err,
    }
}

std::thread_local! {
    /// A dropped session's loss list (its buffer), for the next one (`crate::spare`): a
    /// transcode between two dialects loses a few fields.
    static SPARE_LOSSES: std::cell::Cell<Option<Vec<Loss>>> = const { std::cell::Cell::new(None) };
}

impl Drop for Session {
    fn drop(&mut self) {
        crate::spare::keep(&SPARE_LOSSES, &mut self.losses);
    }
}

impl Session {
    pub fn new(options: Options, source: &'static str, target: &'static str, kind: Kind) -> Self {
        let reorder = ReorderBuffer::new(options.reorder_budget, options.refuse_reorder);
        Session {
            options,
            kind,
            source,
            target,
            losses: Vec::new(), // (the spare list taken at the first loss: a copy loses nothing)
            reorder,
            tool_names: ToolNames::default(),
            passthrough: false,
            asks_stream_usage: false,
            asks_stream: false,
            lost_paths: None,
            response_start: None,
            held_losses: Vec::new(),
            holding: false,
            lost_message: None,
        }
    }

    /// `Session.hold_losses`: keep the losses recorded from now on apart (`on`), until
    /// `release_losses`. A request encoder places a block at its first fragment, which
    /// comes earlier the finer the body is cut; the losses of placing it are recorded at
    /// its last fragment, which comes at the same place however the body is cut. Strict
    /// mode raises the first loss of that order (a held one at `release_losses`).
    pub fn hold_losses(&mut self, on: bool) {
        self.holding = on;
    }

    /// `Session.release_losses`: record the losses held (after those recorded meanwhile);
    /// strict: the first one's `LossError` (strict mode raises the first loss of that order).
    pub fn release_losses(&mut self) -> Result<()> {
        if !self.held_losses.is_empty() {
            let held = std::mem::take(&mut self.held_losses);
            if self.options.strict {
                return Err(loss_error(held[0].dialect.as_ref(), held[0].path(), held[0].reason()));
            }
            for loss in held {
                self.losses.push(loss);
            }
        }
        Ok(())
    }

    /// `Session.start`: the response's clock reading and nonce (`lifecycle::Stamp`),
    /// read by a response encoder once, when it is made (a same-dialect copy reads
    /// none). The binding sets `response_start` from the hooks before it makes the
    /// encoder; without it this is Python's default hooks' reading, taken now.
    pub fn start(&self) -> ResponseStart {
        self.response_start.unwrap_or_else(ResponseStart::now)
    }

    /// `Session.lose`: record that the field at `path` (in the source) is not
    /// carried; strict: a `LossError` "cannot carry {path}: {reason}" naming the
    /// loss's dialect and `path`. Nothing is recorded for a passthrough run.
    /// Responses and streams record one loss per (dialect, path, reason): a
    /// stream repeats its fields in every frame. (A request's paths name a
    /// message, not a field: two losses there are two things lost.) `path` / `reason`:
    /// WTF-8 (`&str` or bytes).
    pub fn lose(&mut self, path: impl AsRef<[u8]>, reason: impl AsRef<[u8]>, dialect: Option<&str>) -> Result<()> {
        let (path, reason) = (path.as_ref(), reason.as_ref());
        if let Some(dialect) = self.admit(path, reason, dialect)? {
            self.push(dialect, [path, reason].concat(), path.len());
        }
        Ok(())
    }

    /// `lose` of the reason `lacks(path_subject(path), target, what, done)`, the path
    /// given in pieces (joined): path and reason are written once, in the loss's buffer.
    pub fn lose_lacking(&mut self, path: &[&[u8]], target: &str, what: &str, done: Option<&str>, dialect: Option<&str>) -> Result<()> {
        if self.passthrough {
            return Ok(()); // (`lose` records nothing: the reason need not be written)
        }
        let path_len: usize = path.iter().map(|p| p.len()).sum();
        let mut text = Vec::with_capacity(path_len + lacks_len(path_len, target, what, done));
        for piece in path {
            text.extend_from_slice(piece);
        }
        let subject = path_len - path_subject_wtf8(&text).len();
        text.extend_from_within(subject..path_len);
        push_lack_pieces(&mut text, target, what, done);
        let (path, reason) = text.split_at(path_len);
        if let Some(dialect) = self.admit(path, reason, dialect)? {
            self.push(dialect, text, path_len);
        }
        Ok(())
    }

    /// The dialect a loss is recorded under, or `None` where it is not recorded (a
    /// passthrough run; a response's repeat); strict: the `LossError`.
    fn admit<'d>(&mut self, path: &[u8], reason: &[u8], dialect: Option<&'d str>) -> Result<Option<&'d str>> {
        if self.passthrough {
            return Ok(None);
        }
        let dialect = match dialect {
            Some(d) if !d.is_empty() => d,
            _ => self.source,
        };
        if self.kind != Kind::Request && self.seen_before(dialect, path, reason) {
            return Ok(None);
        }
        if self.options.strict && !self.holding {
            return Err(loss_error(dialect, path, reason)); // (held: raised at release, if none comes first)
        }
        Ok(Some(dialect))
    }

    /// Records the loss whose path is `text[..path_len]` and reason the rest.
    fn push(&mut self, dialect: &str, text: Vec<u8>, path_len: usize) {
        let dialect = match crate::pipeline::dialect(dialect) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(dialect.to_string()),
        };
        if self.holding {
            self.held_losses.push(Loss { dialect, text, path_len });
            return;
        }
        if self.losses.capacity() == 0 {
            // the list a dropped session left (`crate::spare`), or room for the few a
            // cross-dialect response loses (one allocation, not a growth series)
            self.losses = crate::spare::take(&SPARE_LOSSES).unwrap_or_else(|| Vec::with_capacity(8));
        }
        self.losses.push(Loss { dialect, text, path_len });
    }

    /// Whether (dialect, path, reason) was lost before; if not, it is now (Python's
    /// `_lost_paths` test and add; its keys: the dialect, path + reason, the path's length).
    fn seen_before(&mut self, dialect: &str, path: &[u8], reason: &[u8]) -> bool {
        let strict = self.options.strict; // (strict: `losses` stays empty, the set is the record)
        let lost_paths = match &mut self.lost_paths {
            Some(set) => set,
            None if !strict && self.losses.len() < FEW_LOSSES => {
                return self.losses.iter().any(|l| l.path() == path && l.reason() == reason && l.dialect == dialect);
            }
            None => {
                let set = self.losses.iter().map(|l| (l.dialect.to_string(), l.text.clone(), l.path_len)).collect();
                self.lost_paths.insert(Box::new(set))
            }
        };
        !lost_paths.insert((dialect.to_string(), [path, reason].concat(), path.len()))
    }

    /// `Session.lose_member`: a member of the source at `path` the target has
    /// nothing for (decoders: what no canonical event carries, in the target's
    /// terms); `what` defaults to "such field" in Python.
    pub fn lose_member(&mut self, path: &str, what: &str, done: Option<&str>) -> Result<()> {
        self.lose_member_wtf8(path.as_bytes(), what, done)
    }

    /// `lose_member` of a path that may end in an input key holding a lone surrogate
    /// (WTF-8, as Python's str holds it).
    pub fn lose_member_wtf8(&mut self, path: &[u8], what: &str, done: Option<&str>) -> Result<()> {
        self.lose_member_pieces(&[path], what, done)
    }

    /// `lose_member_wtf8` of a path given in pieces (joined in the loss's buffer).
    pub fn lose_member_pieces(&mut self, path: &[&[u8]], what: &str, done: Option<&str>) -> Result<()> {
        let target = if self.target.is_empty() { "the target" } else { self.target };
        self.lose_lacking(path, target, what, done, None)
    }

    /// `Session.tool_name_out`: a tool name of another dialect as the target
    /// accepts it (`naming::wire_name`); each name changed is recorded once, as
    /// a loss at `path`. `name`: the value the source had (`None`: missing; not
    /// a string: taken as `""`; `null` is missing, as `attrs.get("name")`).
    ///
    /// A name holding a lone surrogate (possible where a control's value was
    /// read with plain `json.loads`, e.g. openai `tool_choice`) cannot be hashed:
    /// Python raises `UnicodeEncodeError` there (a bug, reported); here it is a
    /// `LoneSurrogateError`. (Where Python returns such a name unchanged -- the
    /// same dialect, or a target with no name rule, which no encoder asks --
    /// it comes back with U+FFFD for the surrogate: a `String` cannot hold it.)
    pub fn tool_name_out(&mut self, name: Option<&Value>, path: &str) -> Result<String> {
        let text = match name {
            Some(Value::Str(bytes)) => match std::str::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) if self.source == self.target || name_limit(self.target).is_none() => {
                    return Ok(String::from_utf8_lossy(bytes).into_owned())
                }
                Err(_) => return Err(Error::new(ErrorClass::LoneSurrogate, LONE_SURROGATE_MESSAGE)),
            },
            _ => "",
        };
        let Some(limit) = name_limit(self.target).filter(|_| self.source != self.target) else {
            return Ok(text.to_string());
        };
        let wire = wire_name(text, self.target);
        if wire != text && self.tool_names.get(&wire).map(String::as_str) != Some(text) {
            self.tool_names.insert(wire.clone(), text.to_string());
            let what = match name {
                None | Some(Value::Null) => "a missing tool name".to_string(),
                Some(_) => format!("tool name {}", py_str_repr(text.as_bytes())),
            };
            let lack = format!("such tool name (^[a-zA-Z0-9_-]{{1,{limit}}}$)");
            let done = format!("sent as {}", py_str_repr(wire.as_bytes()));
            self.lose(path, lacks(&what, self.target, &lack, Some(&done)), None)?;
        }
        Ok(wire)
    }

    /// `tool_name_out` of an attribute's compact JSON (`attrs.get("name")`: absent -> `None`).
    pub fn tool_name_out_json(&mut self, raw: Option<&[u8]>, path: &str) -> Result<String> {
        let name = raw.map(Value::loads).transpose()?;
        self.tool_name_out(name.as_ref(), path)
    }

    /// `Session.tool_name_in`: a tool name read from a response: the client's
    /// name when the request renamed it (`Options.tool_names`).
    pub fn tool_name_in<'n>(&self, name: &'n str) -> std::borrow::Cow<'n, str> {
        match self.options.tool_names.as_ref().and_then(|names| names.get(name)) {
            Some(client) => std::borrow::Cow::Owned(client.clone()),
            None => std::borrow::Cow::Borrowed(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(kind: Kind, strict: bool) -> Session {
        Session::new(Options { strict, ..Options::default() }, "openai", "anthropic", kind)
    }

    #[test]
    fn a_fresh_nonce_is_never_drawn_twice() {
        let drawn: std::collections::HashSet<_> = (0..10_000).map(|_| fresh_nonce()).collect();
        assert_eq!(drawn.len(), 10_000);
        let before = now_us();
        let start = ResponseStart::now();
        assert!(before <= start.time_us && start.time_us <= now_us() && before > 1_700_000_000_000_000);
    }

    #[test]
    fn python_defaults() {
        let o = Options::default();
        assert_eq!((o.strict, o.reorder_budget, o.refuse_reorder, o.default_max_tokens), (false, 64 << 20, false, 4096));
        assert_eq!((o.max_depth, o.max_value_bytes, o.anthropic_thinking.as_ref()), (128, 1 << 20, "auto"));
        assert!(o.openai_reasoning_field.is_none() && o.tool_names.is_none() && o.anthropic_thinking_budgets.is_none());
        assert!(!o.ollama_sampling_defaults && o.openai_stream_usage);
        assert_eq!(Kind::from_name("stream"), Some(Kind::Stream));
    }

    #[test]
    fn lose_records_strict_raises_passthrough_keeps_nothing() {
        let mut s = session(Kind::Request, false);
        s.lose("$.a", "r", None).unwrap();
        s.lose("$.a", "r", None).unwrap(); // a request records both
        s.lose("$.b", "r", Some("anthropic")).unwrap();
        s.lose("$.c", "r", Some("")).unwrap();
        let dialects: Vec<&str> = s.losses.iter().map(|l| l.dialect.as_ref()).collect();
        assert_eq!(dialects, ["openai", "openai", "anthropic", "openai"]);

        let mut stream = session(Kind::Stream, false);
        for _ in 0..3 {
            stream.lose("$.a", "r", None).unwrap();
        }
        stream.lose("$.a", "other", None).unwrap();
        stream.lose("$.a", "r", Some("ollama")).unwrap();
        assert_eq!(stream.losses.len(), 3);
        // past FEW_LOSSES the set holds them: each recorded once still, in order
        for round in 0..2 {
            for n in 0..40 {
                stream.lose(format!("$.m{n}"), "r", None).unwrap();
            }
            assert_eq!(stream.losses.len(), 43, "round {round}");
        }
        stream.lose("$.a", "other", None).unwrap();
        assert_eq!(stream.losses.len(), 43);
        assert_eq!(stream.losses[42].path(), b"$.m39");

        let mut strict_stream = session(Kind::Stream, true);
        assert!(strict_stream.lose("$.a", "r", None).is_err());
        strict_stream.lose("$.a", "r", None).unwrap(); // once raised, a repeat is the same loss (Python's too)
        assert!(strict_stream.losses.is_empty());

        let mut strict = session(Kind::Request, true);
        let err = strict.lose("$.x", "x: anthropic has no y", Some("ollama")).unwrap_err();
        assert_eq!(err.class, ErrorClass::Loss);
        assert_eq!(err.message, "cannot carry $.x: x: anthropic has no y");
        assert_eq!((err.path.as_deref(), err.dialect), (Some(&b"$.x"[..]), Some("ollama")));
        assert!(strict.losses.is_empty());

        let mut copy = session(Kind::Response, true);
        copy.passthrough = true;
        copy.lose("$.x", "r", None).unwrap();
        assert!(copy.losses.is_empty());
    }

    #[test]
    fn strict_holds_a_placing_loss_until_release() {
        let mut strict = session(Kind::Request, true);
        strict.hold_losses(true);
        strict.lose("$.m", "placed elsewhere", None).unwrap(); // held
        strict.hold_losses(false);
        strict.release_losses().unwrap_err(); // the held one, nothing came first
        strict.hold_losses(true);
        strict.lose("$.m", "placed elsewhere", None).unwrap();
        strict.hold_losses(false);
        let first = strict.lose("$.m.name", "meanwhile", None).unwrap_err(); // before the held one
        assert_eq!(first.message, "cannot carry $.m.name: meanwhile");
        let mut lenient = session(Kind::Request, false);
        lenient.hold_losses(true);
        lenient.lose("$.m", "placed elsewhere", None).unwrap();
        lenient.hold_losses(false);
        lenient.lose("$.m.name", "meanwhile", None).unwrap();
        lenient.release_losses().unwrap();
        let paths: Vec<&[u8]> = lenient.losses.iter().map(|l| l.path()).collect();
        assert_eq!(paths, [&b"$.m.name"[..], b"$.m"]);
    }

    #[test]
    fn lose_member_words() {
        let mut s = session(Kind::Response, false);
        s.lose_member("$.options.num_ctx", "such field", None).unwrap();
        s.target = "";
        s.lose_member("$.x", "response id", Some("dropped")).unwrap();
        assert_eq!(s.losses[0].reason(), b"options.num_ctx: anthropic has no such field");
        assert_eq!(s.losses[1].reason(), b"x: the target has no response id; dropped");
    }

    #[test]
    fn tool_names_out_and_in() {
        let mut s = session(Kind::Request, false);
        assert_eq!(s.tool_name_out(Some(&Value::str("ok_name")), "$.tools").unwrap(), "ok_name");
        let wire = s.tool_name_out(Some(&Value::str("mcp.read")), "$.tools").unwrap();
        assert_eq!(wire, wire_name("mcp.read", "anthropic"));
        s.tool_name_out(Some(&Value::str("mcp.read")), "$.messages[1]").unwrap(); // recorded once
        assert_eq!(s.losses.len(), 1);
        assert_eq!(
            s.losses[0].reason(),
            format!("tool name 'mcp.read': anthropic has no such tool name (^[a-zA-Z0-9_-]{{1,128}}$); sent as '{wire}'").into_bytes()
        );
        assert_eq!(s.tool_names.get(&wire).map(String::as_str), Some("mcp.read"));
        s.tool_name_out_json(Some(b"null"), "$.tool_choice").unwrap();
        s.tool_name_out(Some(&Value::int(3)), "$.tools").unwrap(); // the same wire name: recorded once
        assert!(s.losses[1].reason().starts_with(b"a missing tool name: anthropic has no such tool name"));
        assert_eq!(s.losses.len(), 2);
        let surrogate = Value::Str(b"a\xed\xa0\x80".to_vec());
        assert_eq!(s.tool_name_out(Some(&surrogate), "$.tools").unwrap_err().class, ErrorClass::LoneSurrogate);

        let mut same = Session::new(Options::default(), "openai", "openai", Kind::Request);
        assert_eq!(same.tool_name_out(Some(&Value::str("a.b")), "$.tools").unwrap(), "a.b");
        let mut ollama = Session::new(Options::default(), "openai", "ollama", Kind::Request);
        assert_eq!(ollama.tool_name_out(None, "$.tools").unwrap(), "");

        let names = HashMap::from([("mcp_read_1".to_string(), "mcp.read".to_string())]);
        let response = Session::new(Options { tool_names: Some(names), ..Options::default() }, "anthropic", "openai", Kind::Response);
        assert_eq!(response.tool_name_in("mcp_read_1"), "mcp.read");
        assert_eq!(response.tool_name_in("other"), "other");
    }
}
