//! The binding: the only file that names PyO3.
//!
//! What it exports is listed in `COVERS` (the stages the core implements) and
//! in native/README.md. Every entry point runs the core through `guard`, so a
//! Rust panic becomes an `interlingua.TranscodeError` instead of PyO3's
//! `PanicException` (a `BaseException`) or an abort.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use pyo3::types::{PyBytes, PyList};

use crate::error::Error;
use crate::framing::{FrameSink, NdjsonDecoder, SseDecoder};
use crate::json::{Frames, Limits, Sink, Token, Tokenizer};
use crate::reorder::{ByteHold, Hold, ReorderBuffer};

/// The stages the core implements (interlingua.backend reads it to decide
/// what the native backend covers).
const COVERS: &[&str] = &["json-tokenizer", "sse-framing", "ndjson-framing", "reorder-buffer", "canonical-events", "request-pipeline"];

/// `COVERS` with the kinds whose 9 pairs the codec table has (`pipeline::covers`):
/// `"response-pipeline"`, `"stream-pipeline"`, and `"pipeline"` once both are there.
fn covers() -> Vec<&'static str> {
    let mut covers = COVERS.to_vec();
    let kinds = [(crate::session::Kind::Response, "response-pipeline"), (crate::session::Kind::Stream, "stream-pipeline")];
    for (kind, name) in kinds {
        if crate::pipeline::covers(kind) {
            covers.push(name);
        }
    }
    if covers.contains(&"response-pipeline") && covers.contains(&"stream-pipeline") {
        covers.push("pipeline");
    }
    covers
}

/// Below this many bytes a chunk is worked on with the GIL held: releasing and
/// taking it back costs more than the work (see native/README.md, "Threads").
const DETACH_MIN: usize = 2048;

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS_MODULE
        .get_or_try_init(py, || py.import("interlingua.errors").map(Bound::unbind))?
        .bind(py))
}

/// A core error as the Python exception of the same class, message, offset and path.
#[cold]
pub(crate) fn to_py_err(py: Python<'_>, err: &Error, dialect: Option<&str>) -> PyErr {
    match build_py_err(py, err, dialect) {
        Ok(e) => e,
        Err(e) => e,
    }
}

fn build_py_err(py: Python<'_>, err: &Error, dialect: Option<&str>) -> PyResult<PyErr> {
    let class = errors_module(py)?.getattr(err.class.name())?;
    let message: Bound<'_, PyAny> = match (&err.key, &err.message_wtf8) {
        // "duplicate key {key!r}": Python's repr, exactly
        (Some(key), _) => pyo3::types::PyString::new(py, "duplicate key ").add(wtf8_to_py(py, key)?.repr()?)?,
        (None, Some(text)) => wtf8_to_py(py, text)?,
        (None, None) => err.message.as_str().into_pyobject(py)?.into_any(),
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("dialect", err.dialect.or(dialect))?;
    kwargs.set_item("offset", err.offset)?;
    if err.frame_offset.is_some() {
        kwargs.set_item("frame_offset", err.frame_offset)?;
    }
    if let Some(path) = &err.path {
        kwargs.set_item("path", wtf8_to_py(py, path)?)?;
    }
    let instance = class.call((message,), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
}

/// A Python str as WTF-8 bytes (a lone surrogate kept: `surrogatepass`).
pub(crate) fn wtf8_from_py(text: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let text = text.cast::<pyo3::types::PyString>()?;
    match text.to_str() {
        Ok(utf8) => Ok(utf8.as_bytes().to_vec()),
        Err(_) => text.call_method1("encode", ("utf-8", "surrogatepass"))?.extract(),
    }
}

/// WTF-8 bytes (UTF-8 that may hold encoded lone surrogates) as a Python str.
pub(crate) fn wtf8_to_py<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.into_pyobject(py)?.into_any()),
        Err(_) => pyo3::types::PyBytes::new(py, bytes).call_method1("decode", ("utf-8", "surrogatepass")),
    }
}

/// Run `work` (core code); a panic becomes a `TranscodeError` naming it.
pub(crate) fn guard<T>(py: Python<'_>, work: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| to_py_err(py, &panic_error(payload), None))
}

/// Test hook: a panic inside `guard`, to show it arrives as a TranscodeError.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: &str) -> PyResult<()> {
    guard(py, || panic!("{}", message))
}

/// The error raised when an object is used from a second thread while the
/// first is inside one of its methods.
pub(crate) fn busy(what: &str) -> PyErr {
    PyRuntimeError::new_err(format!("{what} is in use by another thread"))
}

// -- the tokenizer, for tests and benchmarks -----------------------------------

fn limits(max_depth: usize, max_key_bytes: usize, max_number_bytes: usize, max_seen_key_bytes: usize) -> Limits {
    Limits { max_depth, max_key_bytes, max_number_bytes, max_seen_key_bytes }
}

/// Tokens as Python tuples (test entry point only: a Python object per token is
/// what the native pipeline never makes).
struct ListSink<'py> {
    py: Python<'py>,
    tokens: Bound<'py, PyList>,
}

impl Sink for ListSink<'_> {
    fn token(&mut self, token: Token<'_>, offset: u64, _path: &Frames) -> crate::error::Result<()> {
        let py = self.py;
        let value: Option<Bound<'_, PyAny>> = match token {
            Token::Key(key) => wtf8_to_py(py, key).ok(),
            other => other.bytes().map(|b| PyBytes::new(py, b).into_any()),
        };
        self.tokens
            .append((token.kind(), value, offset))
            .map_err(|e| Error::new(crate::error::ErrorClass::Transcode, e.to_string()))
    }
}

/// Tokenize `data` fed in pieces cut at `cuts` (sorted offsets), then closed.
/// Returns `(tokens, error)`: tokens as `(kind, value, offset)`, with
/// `(0, None, None)` after each feed (the parity rule compares what each
/// feed delivered); `error` the TranscodeError raised, or None. Test entry point.
#[pyfunction]
#[pyo3(signature = (data, cuts, *, max_depth=128, max_key_bytes=65536, max_number_bytes=1024,
                    max_seen_key_bytes=1 << 20, dialect=None))]
#[allow(clippy::too_many_arguments)]
fn tokenize<'py>(
    py: Python<'py>,
    data: &[u8],
    cuts: Vec<usize>,
    max_depth: usize,
    max_key_bytes: usize,
    max_number_bytes: usize,
    max_seen_key_bytes: usize,
    dialect: Option<&str>,
) -> PyResult<(Bound<'py, PyList>, Option<Py<PyAny>>)> {
    let mut tokenizer = Tokenizer::new(limits(max_depth, max_key_bytes, max_number_bytes, max_seen_key_bytes));
    let mut sink = ListSink { py, tokens: PyList::empty(py) };
    let mut start = 0;
    let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c <= data.len()).collect();
    bounds.push(data.len());
    let result = guard(py, || -> crate::error::Result<()> {
        for end in bounds {
            let end = end.max(start);
            tokenizer.feed(&data[start..end], &mut sink)?;
            sink.tokens
                .append((0u8, py.None(), py.None()))
                .map_err(|e| Error::new(crate::error::ErrorClass::Transcode, e.to_string()))?;
            start = end;
        }
        tokenizer.close(&mut sink)
    })?;
    let error = match result {
        Ok(()) => None,
        Err(err) => Some(to_py_err(py, &err, dialect).into_value(py).into_any()),
    };
    Ok((sink.tokens, error))
}

struct CountSink(u64);

impl Sink for CountSink {
    #[inline]
    fn token(&mut self, _token: Token<'_>, _offset: u64, _path: &Frames) -> crate::error::Result<()> {
        self.0 += 1;
        Ok(())
    }
}

/// The native tokenizer with a sink that counts tokens: the cost of the core
/// and of one `feed` call through the binding (benchmarks, thread tests).
#[pyclass(module = "interlingua._native")]
struct TokenCounter {
    tokenizer: Tokenizer,
    dialect: Option<String>,
}

#[pymethods]
impl TokenCounter {
    #[new]
    #[pyo3(signature = (*, max_depth=128, max_key_bytes=65536, max_number_bytes=1024,
                        max_seen_key_bytes=1 << 20, dialect=None))]
    fn new(
        max_depth: usize,
        max_key_bytes: usize,
        max_number_bytes: usize,
        max_seen_key_bytes: usize,
        dialect: Option<String>,
    ) -> Self {
        let limits = limits(max_depth, max_key_bytes, max_number_bytes, max_seen_key_bytes);
        TokenCounter { tokenizer: Tokenizer::new(limits), dialect }
    }

    /// Feed a chunk; returns the number of tokens it completed.
    fn feed(slf: &Bound<'_, Self>, data: &[u8]) -> PyResult<u64> {
        let py = slf.py();
        let mut this = slf.try_borrow_mut().map_err(|_| busy("TokenCounter"))?;
        let this = &mut *this;
        let mut sink = CountSink(0);
        let tokenizer = &mut this.tokenizer;
        let result = if data.len() >= DETACH_MIN {
            py.detach(|| catch_unwind(AssertUnwindSafe(|| tokenizer.feed(data, &mut sink))))
                .map_err(|_| Error::new(crate::error::ErrorClass::Transcode, "internal error in the native core"))
                .and_then(|r| r)
        } else {
            guard(py, || tokenizer.feed(data, &mut sink))?
        };
        result.map_err(|e| to_py_err(py, &e, this.dialect.as_deref()))?;
        Ok(sink.0)
    }

    fn close(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let py = slf.py();
        let mut this = slf.try_borrow_mut().map_err(|_| busy("TokenCounter"))?;
        let this = &mut *this;
        let mut sink = CountSink(0);
        let tokenizer = &mut this.tokenizer;
        guard(py, || tokenizer.close(&mut sink))?.map_err(|e| to_py_err(py, &e, this.dialect.as_deref()))?;
        Ok(sink.0)
    }

    fn reset(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut this = slf.try_borrow_mut().map_err(|_| busy("TokenCounter"))?;
        this.tokenizer.reset();
        Ok(())
    }

    #[getter]
    fn offset(&self) -> u64 {
        self.tokenizer.offset()
    }
}

// -- framing, for tests ---------------------------------------------------------------

struct FrameList<'py> {
    py: Python<'py>,
    items: Bound<'py, PyList>,
}

fn py_failed(e: PyErr) -> Error {
    Error::new(crate::error::ErrorClass::Transcode, e.to_string())
}

impl FrameSink for FrameList<'_> {
    fn frame_data(&mut self, data: &[u8], data_at: u64) -> crate::error::Result<()> {
        self.items.append(("data", PyBytes::new(self.py, data), data_at)).map_err(py_failed)
    }

    fn frame_end(&mut self, event: Option<&str>) -> crate::error::Result<()> {
        self.items.append(("end", event, self.py.None())).map_err(py_failed)
    }
}

/// Frame `data` (`kind`: "sse" or "ndjson") fed in pieces cut at `cuts`, then
/// closed. Returns `(items, error, last_event_id, retry)`: items are
/// `("data", bytes, data_at)`, `("end", event, None)` and `("feed", None, None)`
/// after each feed. Test entry point.
#[pyfunction]
#[pyo3(signature = (kind, data, cuts, *, max_line=crate::framing::DEFAULT_MAX_LINE, dialect=None))]
#[allow(clippy::type_complexity)]
fn frames<'py>(
    py: Python<'py>,
    kind: &str,
    data: &[u8],
    cuts: Vec<usize>,
    max_line: usize,
    dialect: Option<&str>,
) -> PyResult<(Bound<'py, PyList>, Option<Py<PyAny>>, Option<String>, Option<u64>)> {
    let mut sink = FrameList { py, items: PyList::empty(py) };
    let mut bounds: Vec<usize> = cuts.into_iter().filter(|&c| c <= data.len()).collect();
    bounds.push(data.len());
    let mut sse = SseDecoder::new(max_line);
    let mut ndjson = NdjsonDecoder::new();
    let is_sse = match kind {
        "sse" => true,
        "ndjson" => false,
        _ => return Err(pyo3::exceptions::PyValueError::new_err("kind must be 'sse' or 'ndjson'")),
    };
    let result = guard(py, || -> crate::error::Result<()> {
        let mut start = 0;
        for end in bounds {
            let end = end.max(start);
            let piece = &data[start..end];
            if is_sse { sse.feed(piece, &mut sink)? } else { ndjson.feed(piece, &mut sink)? }
            sink.items.append(("feed", py.None(), py.None())).map_err(py_failed)?;
            start = end;
        }
        if is_sse { sse.close(&mut sink) } else { ndjson.close(&mut sink) }
    })?;
    let error = result.err().map(|err| to_py_err(py, &err, dialect).into_value(py).into_any());
    Ok((sink.items, error, sse.last_event_id.clone(), sse.retry))
}

// -- the reorder buffer, for tests ---------------------------------------------------

enum AnyHold {
    Items(Hold<i64>),
    Bytes(ByteHold),
}

/// Run `ops` on a ReorderBuffer: `("hold", reason)` / `("byte_hold", reason)` make
/// hold number k (in order), `("append", k, item, size)`, `("write", k, bytes)`,
/// `("drain", k)`. Returns `(drained, report, error)`: what each drain gave back
/// (a list of items, or bytes), the buffer's report, the error that stopped the
/// run (or None). Test entry point.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn reorder_ops<'py>(
    py: Python<'py>,
    budget: u64,
    refuse: bool,
    ops: Vec<Bound<'py, PyTuple>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyDict>, Option<Py<PyAny>>)> {
    let mut buffer = ReorderBuffer::new(budget, refuse);
    let mut holds: Vec<AnyHold> = Vec::new();
    let drained = PyList::empty(py);
    let mut error = None;
    for op in ops {
        let name: String = op.get_item(0)?.extract()?;
        let result = match name.as_str() {
            "hold" => {
                let reason: String = op.get_item(1)?.extract()?;
                holds.push(AnyHold::Items(buffer.hold(&reason)));
                Ok(())
            }
            "byte_hold" => {
                let reason: String = op.get_item(1)?.extract()?;
                holds.push(AnyHold::Bytes(buffer.byte_hold(&reason)));
                Ok(())
            }
            "append" => {
                let k: usize = op.get_item(1)?.extract()?;
                let (item, size): (i64, u64) = (op.get_item(2)?.extract()?, op.get_item(3)?.extract()?);
                match &mut holds[k] {
                    AnyHold::Items(hold) => hold.append(&mut buffer, item, size),
                    AnyHold::Bytes(_) => return Err(pyo3::exceptions::PyValueError::new_err("append to a byte hold")),
                }
            }
            "write" => {
                let k: usize = op.get_item(1)?.extract()?;
                let data: Vec<u8> = op.get_item(2)?.extract()?;
                match &mut holds[k] {
                    AnyHold::Bytes(hold) => hold.write(&mut buffer, &data),
                    AnyHold::Items(_) => return Err(pyo3::exceptions::PyValueError::new_err("write to an item hold")),
                }
            }
            "drain" => {
                let k: usize = op.get_item(1)?.extract()?;
                match &mut holds[k] {
                    AnyHold::Items(hold) => drained.append(hold.drain(&mut buffer).collect::<Vec<i64>>())?,
                    AnyHold::Bytes(hold) => {
                        let mut out = Vec::new();
                        hold.take_into(&mut buffer, &mut out);
                        drained.append(PyBytes::new(py, &out))?;
                    }
                }
                Ok(())
            }
            _ => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown op {name:?}"))),
        };
        if let Err(err) = result {
            error = Some(to_py_err(py, &err, None).into_value(py).into_any());
            break;
        }
    }
    let (high_water, by_reason) = buffer.report();
    let report = PyDict::new(py);
    report.set_item("high_water", high_water)?;
    let reasons = PyDict::new(py);
    for (reason, high) in by_reason {
        reasons.set_item(reason, high)?;
    }
    report.set_item("by_reason", reasons)?;
    Ok((drained, report, error))
}

// -- canonical events, for tests ---------------------------------------------------------

/// `[(section name, payload form)]` in declaration order; test entry point.
#[pyfunction]
fn sections() -> Vec<(&'static str, &'static str)> {
    use crate::canonical::{PayloadForm, Section};
    Section::ALL
        .iter()
        .map(|s| (s.name(), if s.form() == PayloadForm::Raw { "raw" } else { "escaped" }))
        .collect()
}

/// The event tags (the Python classes' `tag`); test entry point.
#[pyfunction]
fn event_tags() -> Vec<&'static str> {
    use crate::canonical::{Block, Control, Event, Extension, Section, Usage};
    use std::borrow::Cow;
    let block = Block { section: Section::Unknown, message: 0, payload: Cow::Borrowed(b""), init: true, fin: true, attrs: None };
    let control = Control { name: "".into(), value: Cow::Borrowed(b""), dialect: None, key: None, raw: None };
    let extension = Extension { dialect: "".into(), path: Cow::Borrowed(b""), raw: Cow::Borrowed(b""), message: None, lossless: false };
    [
        Event::Block(block),
        Event::Control(control),
        Event::Extension(extension),
        Event::SystemEnd,
        Event::MessagesEnd,
        Event::MessageStart { id: None, model: None, choice: 0 },
        Event::Finish { reason: None, stop_sequence: None, choice: 0 },
        Event::Usage(Usage::default()),
        Event::Logprobs { raw: Cow::Borrowed(b"{}"), choice: 0 },
        Event::Error { kind: "".into(), message: Cow::Borrowed(b""), status: None },
        Event::End,
        Event::FrameEnd,
    ]
    .iter()
    .map(Event::tag)
    .collect()
}

#[pyfunction]
fn escape_text<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(text.len());
    crate::canonical::escape_text(text, &mut out);
    PyBytes::new(py, &out)
}

#[pyfunction]
fn escape_raw_json<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(data.len());
    crate::canonical::escape_raw_json(data, &mut out);
    PyBytes::new(py, &out)
}

#[pyfunction]
#[pyo3(signature = (event, data))]
fn sse_event<'py>(py: Python<'py>, event: Option<&str>, data: &[u8]) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    crate::framing::sse_event(&mut out, event, data);
    PyBytes::new(py, &out)
}

#[pyfunction]
fn sse_open<'py>(py: Python<'py>, event: Option<&str>) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    crate::framing::sse_open(&mut out, event);
    PyBytes::new(py, &out)
}

#[pyfunction]
fn ndjson_line<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    crate::framing::ndjson_line(&mut out, data);
    PyBytes::new(py, &out)
}

// -- canonical events across the boundary -------------------------------------------------

static CANONICAL: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn module<'py>(py: Python<'py>, cell: &'static PyOnceLock<Py<PyModule>>, name: &str) -> PyResult<Bound<'py, PyModule>> {
    Ok(cell.get_or_try_init(py, || py.import(name).map(Bound::unbind))?.bind(py).clone())
}

fn json_loads<'py>(py: Python<'py>, raw: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    module(py, &JSON, "json")?.call_method1("loads", (PyBytes::new(py, raw),))
}

static JSONWRITER: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// `jsonwriter.dumps(value)`: the compact JSON the core's values must equal
/// (a lone surrogate makes the whole value ASCII-escaped, as Python writes it).
fn json_dumps(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    module(py, &JSONWRITER, "interlingua.jsonwriter")?.call_method1("dumps", (value,))?.extract()
}

fn opt_str(value: Bound<'_, PyAny>) -> PyResult<Option<std::borrow::Cow<'static, str>>> {
    Ok(value.extract::<Option<String>>()?.map(std::borrow::Cow::Owned))
}

/// A canonical event as the Python object of `interlingua.canonical` (the
/// `Decoder` boundary: the only place events become Python objects).
pub(crate) fn event_to_py<'py>(py: Python<'py>, event: &crate::canonical::Event<'_>) -> PyResult<Bound<'py, PyAny>> {
    use crate::canonical::Event;
    let canonical = module(py, &CANONICAL, "interlingua.canonical")?;
    let kwargs = PyDict::new(py);
    let class = match event {
        Event::Block(block) => {
            kwargs.set_item("section", canonical.getattr("Section")?.call1((block.section.name(),))?)?;
            kwargs.set_item("message", block.message)?;
            kwargs.set_item("payload", PyBytes::new(py, &block.payload))?;
            kwargs.set_item("init", block.init)?;
            kwargs.set_item("fin", block.fin)?;
            if let Some(attrs) = &block.attrs {
                let dict = PyDict::new(py);
                for (name, raw) in attrs {
                    dict.set_item(name.as_ref(), json_loads(py, raw)?)?;
                }
                kwargs.set_item("attrs", dict)?;
            }
            "Block"
        }
        Event::Control(control) => {
            kwargs.set_item("name", control.name.as_ref())?;
            kwargs.set_item("value", json_loads(py, &control.value)?)?;
            kwargs.set_item("dialect", control.dialect.as_deref())?;
            kwargs.set_item("key", control.key.as_deref())?;
            kwargs.set_item("raw", control.raw.as_deref().map(|raw| PyBytes::new(py, raw)))?;
            "Control"
        }
        Event::Extension(ext) => {
            kwargs.set_item("dialect", ext.dialect.as_ref())?;
            kwargs.set_item("path", wtf8_to_py(py, &ext.path)?)?;
            kwargs.set_item("raw", PyBytes::new(py, &ext.raw))?;
            kwargs.set_item("message", ext.message)?;
            kwargs.set_item("lossless", ext.lossless)?;
            "Extension"
        }
        Event::SystemEnd => "SystemEnd",
        Event::MessagesEnd => "MessagesEnd",
        Event::MessageStart { id, model, choice } => {
            kwargs.set_item("id", id.as_deref())?;
            kwargs.set_item("model", model.as_deref())?;
            kwargs.set_item("choice", choice)?;
            "MessageStart"
        }
        Event::Finish { reason, stop_sequence, choice } => {
            kwargs.set_item("reason", reason.as_deref())?;
            kwargs.set_item("stop_sequence", stop_sequence.as_deref())?;
            kwargs.set_item("choice", choice)?;
            "Finish"
        }
        Event::Usage(usage) => {
            for (name, value) in [
                ("input", usage.input),
                ("output", usage.output),
                ("cache_read", usage.cache_read),
                ("cache_write", usage.cache_write),
                ("reasoning", usage.reasoning),
                ("total", usage.total),
            ] {
                kwargs.set_item(name, value)?;
            }
            kwargs.set_item("service_tier", usage.service_tier.as_deref())?;
            "Usage"
        }
        Event::Logprobs { raw, choice } => {
            kwargs.set_item("raw", PyBytes::new(py, raw))?;
            kwargs.set_item("choice", choice)?;
            "Logprobs"
        }
        Event::Error { kind, message, status } => {
            kwargs.set_item("type", kind.as_ref())?;
            kwargs.set_item("message", wtf8_to_py(py, message)?)?;
            kwargs.set_item("status", status)?;
            "Error"
        }
        Event::End => "End",
        Event::FrameEnd => return py.import("interlingua.framing")?.getattr("FrameEnd")?.call0(),
    };
    canonical.getattr(class)?.call((), Some(&kwargs))
}

/// A Python canonical event as the core's (an encoder fed events from Python).
pub(crate) fn event_from_py(obj: &Bound<'_, PyAny>) -> PyResult<crate::canonical::Event<'static>> {
    use crate::canonical::{Block, Control, Event, Extension, Section, Usage};
    use std::borrow::Cow;
    let py = obj.py();
    let tag: String = obj.getattr("__struct_config__")?.getattr("tag")?.extract()?;
    let get = |name: &str| obj.getattr(name);
    Ok(match tag.as_str() {
        "block" => {
            let section: String = get("section")?.getattr("value")?.extract()?;
            let attrs = get("attrs")?;
            let attrs = if attrs.is_none() {
                None
            } else {
                let mut out = Vec::new();
                for (name, value) in attrs.cast::<PyDict>()?.iter() {
                    out.push((Cow::Owned(name.extract::<String>()?), Cow::Owned(json_dumps(py, &value)?)));
                }
                Some(out)
            };
            Event::Block(Block {
                section: Section::from_name(&section).unwrap_or(Section::Unknown),
                message: get("message")?.extract()?,
                payload: Cow::Owned(get("payload")?.extract::<Vec<u8>>()?),
                init: get("init")?.extract()?,
                fin: get("fin")?.extract()?,
                attrs,
            })
        }
        "control" => Event::Control(Control {
            name: Cow::Owned(get("name")?.extract()?),
            value: Cow::Owned(json_dumps(py, &get("value")?)?),
            dialect: opt_str(get("dialect")?)?,
            key: opt_str(get("key")?)?,
            raw: get("raw")?.extract::<Option<Vec<u8>>>()?.map(Cow::Owned),
        }),
        "extension" => Event::Extension(Extension {
            dialect: Cow::Owned(get("dialect")?.extract()?),
            path: Cow::Owned(wtf8_from_py(&get("path")?)?),
            raw: Cow::Owned(get("raw")?.extract()?),
            message: get("message")?.extract()?,
            lossless: get("lossless")?.extract()?,
        }),
        "system-end" => Event::SystemEnd,
        "messages-end" => Event::MessagesEnd,
        "message-start" => Event::MessageStart {
            id: opt_str(get("id")?)?,
            model: opt_str(get("model")?)?,
            choice: get("choice")?.extract()?,
        },
        "finish" => Event::Finish {
            reason: opt_str(get("reason")?)?,
            stop_sequence: opt_str(get("stop_sequence")?)?,
            choice: get("choice")?.extract()?,
        },
        "usage" => Event::Usage(Usage {
            input: get("input")?.extract()?,
            output: get("output")?.extract()?,
            cache_read: get("cache_read")?.extract()?,
            cache_write: get("cache_write")?.extract()?,
            reasoning: get("reasoning")?.extract()?,
            total: get("total")?.extract()?,
            service_tier: get("service_tier")?.extract::<Option<String>>()?.map(Cow::Owned),
        }),
        "logprobs" => Event::Logprobs {
            raw: Cow::Owned(get("raw")?.extract()?),
            choice: get("choice")?.extract()?,
        },
        "error" => Event::Error {
            kind: Cow::Owned(get("type")?.extract()?),
            message: Cow::Owned(wtf8_from_py(&get("message")?)?),
            // (written nowhere: one beyond 64 bits, or not an int, is none)
            status: get("status")?.extract().ok().flatten(),
        },
        "end" => Event::End,
        "frame-end" => Event::FrameEnd,
        other => return Err(pyo3::exceptions::PyTypeError::new_err(format!("not a canonical event: {other}"))),
    })
}

/// Python events -> the core's -> Python events (both conversions); test entry point.
#[pyfunction]
fn canonical_roundtrip<'py>(py: Python<'py>, events: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for event in events {
        out.append(event_to_py(py, &event_from_py(&event)?)?)?;
    }
    Ok(out)
}

// -- the pipeline: options, the codecs' test entry points, the Transcoder ----------------------

static INTERLINGUA: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn binding_failed(e: PyErr) -> Error {
    Error::new(crate::error::ErrorClass::Transcode, format!("the binding failed: {e}"))
}

/// `session.Options` as the core's, field by field. `options` is an
/// `interlingua.Options`, a dict of its fields (made into one, so that Python's
/// defaults apply), or None (the defaults).
fn options_from_py<'py>(py: Python<'py>, options: Option<&Bound<'py, PyAny>>) -> PyResult<crate::session::Options> {
    let obj = match options {
        // `Options()`: the core's defaults are Python's (tests/native/test_harness.py), and a
        // transcoder per request should not pay for making and reading a Python object
        None => return Ok(crate::session::Options::default()),
        Some(obj) if obj.is_none() => return Ok(crate::session::Options::default()),
        Some(obj) => match obj.cast::<PyDict>() {
            Ok(dict) => module(py, &INTERLINGUA, "interlingua")?.getattr("Options")?.call((), Some(dict))?,
            Err(_) => obj.clone(),
        },
    };
    let get = |name: &Bound<'py, pyo3::types::PyString>| obj.getattr(name);
    let tool_names = get(pyo3::intern!(py, "tool_names"))?;
    let budgets = get(pyo3::intern!(py, "anthropic_thinking_budgets"))?;
    Ok(crate::session::Options {
        strict: get(pyo3::intern!(py, "strict"))?.extract()?,
        reorder_budget: get(pyo3::intern!(py, "reorder_budget"))?.extract()?,
        refuse_reorder: get(pyo3::intern!(py, "refuse_reorder"))?.extract()?,
        openai_reasoning_field: get(pyo3::intern!(py, "openai_reasoning_field"))?.extract()?,
        default_max_tokens: get(pyo3::intern!(py, "default_max_tokens"))?.extract()?,
        max_depth: get(pyo3::intern!(py, "max_depth"))?.extract()?,
        max_value_bytes: get(pyo3::intern!(py, "max_value_bytes"))?.extract()?,
        tool_names: if tool_names.is_none() { None } else { Some(tool_names.extract()?) },
        anthropic_thinking: get(pyo3::intern!(py, "anthropic_thinking"))?.extract::<String>()?.into(),
        anthropic_thinking_budgets: if budgets.is_none() {
            None
        } else {
            // in the dict's order (the Python code iterates it)
            let mut out = Vec::new();
            for (effort, budget) in budgets.cast::<PyDict>()?.iter() {
                out.push((effort.extract()?, budget.extract()?));
            }
            Some(out)
        },
        ollama_sampling_defaults: get(pyo3::intern!(py, "ollama_sampling_defaults"))?.extract()?,
        openai_stream_usage: get(pyo3::intern!(py, "openai_stream_usage"))?.extract()?,
    })
}

/// `dialects.codecs`' checks of the names: the same ValueError.
fn dialect_and_kind(dialect: &str, kind: &str) -> PyResult<(&'static str, crate::session::Kind)> {
    use pyo3::exceptions::PyValueError;
    let name = crate::pipeline::dialect(dialect).ok_or_else(|| {
        let known = crate::dialects::DIALECTS.join(", ");
        PyValueError::new_err(format!("unknown dialect {} (known: {known})", py_repr(dialect)))
    })?;
    let kind = crate::session::Kind::from_name(kind)
        .ok_or_else(|| PyValueError::new_err(format!("unknown kind {} (known: request, response, stream)", py_repr(kind))))?;
    Ok((name, kind))
}

/// Python's `repr` of a str (for the messages that quote a name).
fn py_repr(text: &str) -> String {
    crate::json::py_str_repr(text.as_bytes())
}

/// The core's `Options` made from `options` (an `interlingua.Options`, a dict or
/// None), field by field as a dict: the conversion's test entry point.
#[pyfunction]
#[pyo3(signature = (options=None))]
fn options_fields<'py>(py: Python<'py>, options: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let o = options_from_py(py, options.as_ref())?;
    let out = PyDict::new(py);
    out.set_item("strict", o.strict)?;
    out.set_item("reorder_budget", o.reorder_budget)?;
    out.set_item("refuse_reorder", o.refuse_reorder)?;
    out.set_item("openai_reasoning_field", o.openai_reasoning_field)?;
    out.set_item("default_max_tokens", o.default_max_tokens)?;
    out.set_item("max_depth", o.max_depth)?;
    out.set_item("max_value_bytes", o.max_value_bytes)?;
    out.set_item("tool_names", o.tool_names)?;
    out.set_item("anthropic_thinking", o.anthropic_thinking)?;
    let budgets = match o.anthropic_thinking_budgets {
        None => None,
        Some(pairs) => {
            let dict = PyDict::new(py);
            for (effort, budget) in pairs {
                dict.set_item(effort, budget)?;
            }
            Some(dict)
        }
    };
    out.set_item("anthropic_thinking_budgets", budgets)?;
    out.set_item("ollama_sampling_defaults", o.ollama_sampling_defaults)?;
    out.set_item("openai_stream_usage", o.openai_stream_usage)?;
    Ok(out)
}

fn error_value(py: Python<'_>, err: &Error, dialect: Option<&str>) -> Py<PyAny> {
    to_py_err(py, err, dialect).into_value(py).into_any()
}

/// The decoder's events as Python objects, per feed (test entry point only).
struct EventList<'py> {
    py: Python<'py>,
    events: Bound<'py, PyList>,
}

impl crate::decoding::EventSink for EventList<'_> {
    fn event(&mut self, event: crate::canonical::Event<'_>, _session: &mut crate::session::Session) -> crate::error::Result<()> {
        let event = event_to_py(self.py, &event).map_err(binding_failed)?;
        self.events.append(event).map_err(binding_failed)
    }
}

/// Run the native decoder of `source` / `kind` (`pipeline._Front`: the tokenizer
/// and the dialect decoder, errors located as Python's) over `pieces`, then close.
/// Returns `(events_per_piece, losses, error)`: one list of events per piece and
/// one for the close (up to the piece that failed), the losses as
/// `(dialect, path, reason)`, the TranscodeError (or None). Test entry point.
#[pyfunction]
#[pyo3(signature = (source, kind, pieces, options=None))]
#[allow(clippy::type_complexity)]
fn decode_events<'py>(
    py: Python<'py>,
    source: &str,
    kind: &str,
    pieces: Vec<Vec<u8>>,
    options: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>, Option<Py<PyAny>>)> {
    let (source, kind) = dialect_and_kind(source, kind)?;
    let options = options_from_py(py, options.as_ref())?;
    let mut session = crate::session::Session::new(options, source, "", kind);
    let per_piece = PyList::empty(py);
    let result = guard(py, || -> crate::error::Result<()> {
        let mut front = crate::pipeline::Front::new(source, kind, &session)?;
        for piece in &pieces {
            let mut sink = EventList { py, events: PyList::empty(py) };
            let result = front.feed(piece, &mut session, &mut sink);
            per_piece.append(&sink.events).map_err(binding_failed)?;
            result?;
        }
        let mut sink = EventList { py, events: PyList::empty(py) };
        let result = front.close(&mut session, &mut sink);
        per_piece.append(&sink.events).map_err(binding_failed)?;
        result
    })?;
    Ok((per_piece, loss_tuples(py, &session.losses)?, result.err().map(|err| error_value(py, &err, None))))
}

/// Run the native encoder of `target` / `kind` over Python canonical `events`
/// (`python::event_from_py`), then its `finish`. Returns `(out_per_event, tail,
/// losses, error)`: the bytes written for each event (up to the one that
/// failed), the bytes `finish` wrote, the losses as `(dialect, path, reason)`,
/// the TranscodeError (or None; located as the encoder located it). Test entry point.
#[pyfunction]
#[pyo3(signature = (source, target, kind, events, options=None, *, clock=None, entropy=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn encode_events<'py>(
    py: Python<'py>,
    source: &str,
    target: &str,
    kind: &str,
    events: Vec<Bound<'py, PyAny>>,
    options: Option<Bound<'py, PyAny>>,
    clock: Option<Bound<'py, PyAny>>,
    entropy: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>, Bound<'py, PyList>, Option<Py<PyAny>>)> {
    let (source, kind) = dialect_and_kind(source, kind)?;
    let (target, _) = dialect_and_kind(target, kind.name())?;
    let options = options_from_py(py, options.as_ref())?;
    let events = events.iter().map(event_from_py).collect::<PyResult<Vec<_>>>()?;
    let mut session = crate::session::Session::new(options, source, target, kind);
    if kind != crate::session::Kind::Request {
        // a response or stream encoder reads the hooks when it is made (`Session.start`)
        let hooks = Hooks { clock: clock.map(Bound::unbind), entropy: entropy.map(Bound::unbind) };
        session.response_start = Some(hooks.read(py)?);
    }
    let per_event = PyList::empty(py);
    let mut tail = Vec::new();
    let result = guard(py, || -> crate::error::Result<()> {
        let mut encoder = crate::pipeline::encoder(target, kind, &session)?;
        for event in events {
            let mut out = Vec::new();
            let result = encoder.event(event, &mut session, &mut out);
            per_event.append(PyBytes::new(py, &out)).map_err(binding_failed)?;
            result?;
        }
        encoder.finish(&mut session, &mut tail)
    })?;
    Ok((per_event, PyBytes::new(py, &tail), loss_tuples(py, &session.losses)?, result.err().map(|err| error_value(py, &err, None))))
}

// -- the request Transcoder ------------------------------------------------------------------

static SESSION: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static MSGSPEC_JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The run's losses as `interlingua.Loss` objects.
fn losses_to_py<'py>(py: Python<'py>, losses: &[crate::session::Loss]) -> PyResult<Bound<'py, PyList>> {
    let class = module(py, &SESSION, "interlingua.session")?.getattr("Loss")?;
    let out = PyList::empty(py);
    for loss in losses {
        out.append(class.call1((loss.dialect.as_ref(), wtf8_to_py(py, loss.path())?, wtf8_to_py(py, loss.reason())?))?)?;
    }
    Ok(out)
}

/// `losses` as Python's: the same list object at every access, which grows as the run
/// records losses (Python's is the session's live list). Made at the first access (a run
/// nobody asks makes no Python object); synced after every call that may record one.
#[derive(Default)]
struct LiveLosses {
    list: Option<Py<PyList>>,
    synced: usize,
}

impl LiveLosses {
    /// The list, with every loss recorded so far.
    fn get<'py>(&mut self, py: Python<'py>, losses: &[crate::session::Loss]) -> PyResult<Bound<'py, PyList>> {
        if self.list.is_none() {
            self.list = Some(PyList::empty(py).unbind());
        }
        self.sync(py, losses)?;
        Ok(self.list.as_ref().map(|l| l.bind(py).clone()).unwrap_or_else(|| PyList::empty(py)))
    }

    /// Append the losses recorded since the last sync (nothing before the first `get`).
    fn sync(&mut self, py: Python<'_>, losses: &[crate::session::Loss]) -> PyResult<()> {
        let Some(list) = &self.list else { return Ok(()) };
        if losses.len() > self.synced {
            let new = losses_to_py(py, &losses[self.synced..])?;
            list.bind(py).call_method1("extend", (new,))?;
            self.synced = losses.len();
        }
        Ok(())
    }
}

/// The run's losses as `(dialect, path, reason)` tuples of str (the test entry points').
fn loss_tuples<'py>(py: Python<'py>, losses: &[crate::session::Loss]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for loss in losses {
        out.append((loss.dialect.as_ref(), wtf8_to_py(py, loss.path())?, wtf8_to_py(py, loss.reason())?))?;
    }
    Ok(out)
}

/// `msgspec.json.encode(value)`: the raw JSON `_controls_acted_on` gives a renamed model control.
fn msgspec_encode(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    module(py, &MSGSPEC_JSON, "msgspec.json")?.call_method1("encode", (value,))?.extract()
}

/// A panic's message (`guard`, and the calls that release the GIL).
fn panic_error(payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    Error::new(crate::error::ErrorClass::Transcode, format!("internal error in the native core: {what}"))
}

/// A Python exception raised by the `model=` hook while the core ran: kept here
/// (the core sees a marker error) and raised as itself, as Python's
/// `_controls_acted_on` lets it through.
type HookError = std::sync::Arc<std::sync::Mutex<Option<PyErr>>>;

/// `Transcoder(model=...)`: a name (any value: Python uses it as it is), or a
/// function of the source's model value returning it.
/// `hook_error`: the slot for the function's exception, given when `model` is callable.
fn model_name(py: Python<'_>, model: &Bound<'_, PyAny>, hook_error: Option<&HookError>) -> PyResult<crate::pipeline::ModelName> {
    use crate::pipeline::ModelName;
    let Some(slot) = hook_error else {
        return Ok(ModelName::Fixed { value: json_dumps(py, model)?, raw: msgspec_encode(py, model)? });
    };
    let hook = model.clone().unbind();
    let slot = slot.clone();
    Ok(ModelName::Hook(Box::new(move |value: &[u8]| {
        Python::attach(|py| {
            let named = (|| -> PyResult<(Vec<u8>, Vec<u8>)> {
                let name = hook.bind(py).call1((json_loads(py, value)?,))?;
                Ok((json_dumps(py, &name)?, msgspec_encode(py, &name)?))
            })();
            named.map_err(|e| {
                *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(e);
                Error::new(crate::error::ErrorClass::Transcode, "the model hook raised")
            })
        })
    })))
}

/// A transcoder's `clock` / `entropy` arguments (None: Python's defaults).
struct Hooks {
    clock: Option<Py<PyAny>>,
    entropy: Option<Py<PyAny>>,
}

impl Hooks {
    /// `response_start_from_py`: Python's own `session.response_start` (its checks, its
    /// defaults, a test's patch of it), once per response, where Python reads it.
    fn read(&self, py: Python<'_>) -> PyResult<crate::session::ResponseStart> {
        let clock = self.clock.as_ref().map(|hook| hook.bind(py));
        let entropy = self.entropy.as_ref().map(|hook| hook.bind(py));
        response_start_from_py(py, clock, entropy)
    }
}

static PIPELINE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// `Transcoder.abort`'s argument as a canonical `Error`, through Python's own
/// `pipeline._abort_event` (its kind, status and text rules; an abort is rare).
fn error_event<'py>(py: Python<'py>, error: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    module(py, &PIPELINE, "interlingua.pipeline")?.getattr("_abort_event")?.call1((error,))
}

/// `interlingua.Transcoder` for requests on the native core: bytes of one dialect
/// in (cut anywhere), the target's bytes out, with the Python class's API
/// (`feed`, `close`, `abort`, `pending_output`, `losses`, `reorder`, `tool_names`).
/// A chunk of `DETACH_MIN` bytes or more is worked on with the GIL released; a
/// second thread calling in meanwhile gets `RuntimeError`. After an error every
/// later `feed` / `close` raises it again (Python's `_Poison`).
#[pyclass(module = "interlingua._native", name = "Transcoder")]
struct NativeTranscoder {
    /// boxed: the object PyO3 makes then moves a pointer, not the pipeline's ~1.2 kB
    core: Box<crate::pipeline::Transcoder>,
    /// where a `model=` function's exception waits (None: no function, no lock per call)
    hook_error: Option<HookError>,
    /// the Python exception of the first error (the core's, the model hook's, a panic's):
    /// every later call raises this same object again, as Python's `_Poison` does
    py_poison: Option<PyErr>,
    losses: LiveLosses,
    /// `clock=` / `entropy=`, for a copy's abort (which reads them, as Python's does)
    hooks: Hooks,
}

/// Keep `err` as the object every later call raises (`pipeline._Poison`); returns it.
fn keep_poison(slot: &mut Option<PyErr>, py: Python<'_>, err: PyErr) -> PyErr {
    *slot = Some(err.clone_ref(py));
    err
}

impl NativeTranscoder {
    /// A same-dialect copy reads the hooks when its abort makes the dialect's error
    /// output (Python's `Session.start`, read when that encoder is made), not before.
    fn read_start_for_abort(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.core.session.response_start.is_none() && self.core.abort_reads_start() {
            self.core.session.response_start = Some(self.hooks.read(py)?);
        }
        Ok(())
    }

    fn poison(&mut self, py: Python<'_>, err: PyErr) -> PyErr {
        keep_poison(&mut self.py_poison, py, err)
    }

    /// One step of the core (`feed` or `close`), with the GIL released for a big
    /// chunk; errors as Python's, and the ones the core cannot hold kept here.
    fn step<'py>(
        slf: &Bound<'py, Self>,
        size: usize,
        work: impl FnOnce(&mut crate::pipeline::Transcoder) -> crate::error::Result<()> + Send,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Transcoder"))?;
        let this = &mut *this;
        if let Some(err) = &this.py_poison {
            return Err(err.clone_ref(py));
        }
        let core = &mut *this.core;
        let run = || catch_unwind(AssertUnwindSafe(|| work(core)));
        let result = if size >= DETACH_MIN { py.detach(run) } else { run() };
        let result = match result {
            Ok(result) => result,
            Err(payload) => return Err(this.poison(py, to_py_err(py, &panic_error(payload), None))),
        };
        this.losses.sync(py, &this.core.session.losses)?;
        let hook_raised = this.hook_error.as_ref().and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(err) = hook_raised {
            return Err(this.poison(py, err));
        }
        if let Err(err) = result {
            // (the output stays pending) kept: every later call raises this same object
            return Err(this.poison(py, to_py_err(py, &err, None)));
        }
        let out = PyBytes::new(py, this.core.output());
        this.core.clear_output();
        Ok(out)
    }
}

#[pymethods]
impl NativeTranscoder {
    /// `clock` / `entropy` are read by a response encoder only (`Session.start`): a request
    /// transcoder takes them, as Python's does, and reads neither.
    #[new]
    #[pyo3(signature = (source, target, *, kind="request", options=None, model=None, clock=None, entropy=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: &str,
        target: &str,
        kind: &str,
        options: Option<Bound<'_, PyAny>>,
        model: Option<Bound<'_, PyAny>>,
        clock: Option<Bound<'_, PyAny>>,
        entropy: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = options_from_py(py, options.as_ref())?;
        // Python looks the target's codecs up first, makes the encoder (a response or
        // stream encoder reads the hooks: `Session.start`), then looks the source's up
        let (target, kind) = dialect_and_kind(target, kind)?;
        let hooks = Hooks { clock: clock.map(Bound::unbind), entropy: entropy.map(Bound::unbind) };
        let start = match kind {
            crate::session::Kind::Request => None,
            _ if source == target => None, // a copy: read by an abort's error output only
            _ => Some(hooks.read(py)?),
        };
        let (source, _) = dialect_and_kind(source, kind.name())?;
        // (the slot only for a function: no allocation, and no lock per call, without one)
        let hook_error = model.as_ref().filter(|model| model.is_callable()).map(|_| HookError::default());
        let model = match model {
            Some(model) if !model.is_none() => Some(model_name(py, &model, hook_error.as_ref())?),
            _ => None,
        };
        let mut session = crate::session::Session::new(options, source, target, kind);
        session.response_start = start;
        let core = guard(py, || crate::pipeline::Transcoder::new(session, model))?
            .map_err(|err| to_py_err(py, &err, None))?;
        Ok(NativeTranscoder { core, hook_error, py_poison: None, losses: LiveLosses::default(), hooks })
    }

    /// Feed a chunk; returns the output it made possible (maybe `b""`).
    fn feed<'py>(slf: &Bound<'py, Self>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        Self::step(slf, data.len(), |core| core.feed(data))
    }

    /// End of input; returns the rest of the output.
    fn close<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        Self::step(slf, 0, |core| core.close())
    }

    /// After an error: the output produced before it (a prefix of the full output).
    fn pending_output<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Transcoder"))?;
        let out = PyBytes::new(slf.py(), this.core.output());
        this.core.clear_output();
        Ok(out)
    }

    /// `Transcoder.abort(error)`: the output so far, ended with the target's error event
    /// (`error`: a canonical `Error`, or an exception / None made into one by Python's
    /// own `pipeline._abort_event`). A request encoder has no error event: (as in Python)
    /// the output produced so far. Runs after an error too; after it, `feed` and `close`
    /// raise (`pipeline.ABORTED`; an earlier error stays the one raised).
    #[pyo3(signature = (error=None))]
    fn abort<'py>(slf: &Bound<'py, Self>, error: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        let event = event_from_py(&error_event(py, error)?)?;
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Transcoder"))?;
        let this = &mut *this;
        let core = &mut this.core;
        if !guard(py, || core.abort_closes())? {
            if let Some(slot) = &this.hook_error {
                slot.lock().unwrap_or_else(|p| p.into_inner()).take(); // (abort does not fail: Python's neither)
            }
            this.read_start_for_abort(py)?;
            let core = &mut this.core;
            guard(py, || core.abort(&event))?.map_err(|err| to_py_err(py, &err, None))?;
        }
        let out = PyBytes::new(py, this.core.output());
        this.core.clear_output();
        Ok(out)
    }

    /// What could not be carried (`interlingua.Loss` records, in order): one live list.
    #[getter]
    fn losses<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Transcoder"))?;
        let this = &mut *this;
        this.losses.get(slf.py(), &this.core.session.losses)
    }

    /// What was held for reordering (a snapshot of the reorder buffer's figures).
    #[getter]
    fn reorder(slf: &Bound<'_, Self>) -> PyResult<ReorderReport> {
        let this = slf.try_borrow().map_err(|_| busy("Transcoder"))?;
        Ok(ReorderReport::of(&this.core.session.reorder))
    }

    /// Tool names changed for the target (wire name -> source name).
    #[getter]
    fn tool_names<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let this = slf.try_borrow().map_err(|_| busy("Transcoder"))?;
        tool_names_to_py(slf.py(), &this.core.session)
    }

    /// An openai request's `stream_options.include_usage` is true (for its response's options).
    #[getter]
    fn asks_stream_usage(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(|_| busy("Transcoder"))?;
        Ok(this.core.session.asks_stream_usage)
    }

    /// The request asks for a stream (its `stream` is true; ollama's absent one is).
    #[getter]
    fn asks_stream(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(|_| busy("Transcoder"))?;
        Ok(this.core.session.asks_stream)
    }
}

/// `interlingua.Decoder` for requests on the native core: `feed` / `close` return
/// the canonical events (`interlingua.canonical` objects, made only here, at the
/// boundary) they produced. The GIL is released while the core works on a chunk
/// of `DETACH_MIN` bytes or more; a second thread calling in meanwhile gets
/// `RuntimeError`; after an error every later call raises it again.
#[pyclass(module = "interlingua._native", name = "Decoder")]
struct NativeDecoder {
    core: crate::pipeline::Decoder,
    /// the Python exception of the first error (the core's, a panic's): every later call
    /// raises this same object again (`pipeline._Poison`)
    py_poison: Option<PyErr>,
}

impl NativeDecoder {
    fn step<'py>(
        slf: &Bound<'py, Self>,
        size: usize,
        work: impl FnOnce(&mut crate::pipeline::Decoder, &mut Vec<crate::canonical::Event<'static>>) -> crate::error::Result<()>
            + Send,
    ) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Decoder"))?;
        let this = &mut *this;
        if let Some(err) = &this.py_poison {
            return Err(err.clone_ref(py));
        }
        let mut events = Vec::new();
        let core = &mut this.core;
        let run = || catch_unwind(AssertUnwindSafe(|| work(core, &mut events)));
        let result = if size >= DETACH_MIN { py.detach(run) } else { run() };
        let failed = match result {
            Ok(result) => result.err().map(|err| to_py_err(py, &err, None)),
            Err(payload) => Some(to_py_err(py, &panic_error(payload), None)),
        };
        if let Some(err) = failed {
            return Err(keep_poison(&mut this.py_poison, py, err));
        }
        let out = PyList::empty(py);
        for event in &events {
            out.append(event_to_py(py, event)?)?;
        }
        Ok(out)
    }
}

#[pymethods]
impl NativeDecoder {
    #[new]
    #[pyo3(signature = (source, *, kind="request", options=None))]
    fn new(py: Python<'_>, source: &str, kind: &str, options: Option<Bound<'_, PyAny>>) -> PyResult<Self> {
        let options = options_from_py(py, options.as_ref())?;
        let (source, kind) = dialect_and_kind(source, kind)?;
        let session = crate::session::Session::new(options, source, "", kind);
        let core = guard(py, || crate::pipeline::Decoder::new(session))?.map_err(|err| to_py_err(py, &err, None))?;
        Ok(NativeDecoder { core, py_poison: None })
    }

    /// Feed a chunk; returns the events it produced.
    fn feed<'py>(slf: &Bound<'py, Self>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
        Self::step(slf, data.len(), |core, events| core.feed(data, events))
    }

    /// End of input; returns the rest of the events.
    fn close<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        Self::step(slf, 0, |core, events| core.close(events))
    }
}

/// `interlingua.Encoder` on the native core (the kinds it covers): canonical events from Python
/// in (`python::event_from_py`, one conversion per event, never per token), the target's
/// bytes out, with the Python class's API (`feed` of one event or an iterable, `close`,
/// `abort`, `pending_output`, `losses`, `reorder`, `tool_names`). After an error every
/// later `feed` / `close` raises that same exception object; after `close` they raise
/// `TranscodeError`. The GIL stays held (each event comes from a Python object).
#[pyclass(module = "interlingua._native", name = "Encoder")]
struct NativeEncoder {
    encoder: crate::pipeline::BoxedEncoder,
    session: crate::session::Session,
    out: Vec<u8>,
    closed: bool,
    py_poison: Option<PyErr>,
    losses: LiveLosses,
}

impl NativeEncoder {
    /// One step (events or the close) with the poison and closed checks of Python's.
    fn step<'py>(
        slf: &Bound<'py, Self>,
        work: impl FnOnce(&mut NativeEncoder) -> PyResult<()>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Encoder"))?;
        let this = &mut *this;
        if let Some(err) = &this.py_poison {
            return Err(err.clone_ref(py));
        }
        if this.closed {
            let target = this.session.target;
            let err = Error::new(crate::error::ErrorClass::Transcode,
                                 format!("the {target} encoder is closed: its events have ended")).in_dialect(target);
            return Err(to_py_err(py, &err, None));
        }
        let result = work(this);
        this.losses.sync(py, &this.session.losses)?;
        if let Err(err) = result {
            return Err(keep_poison(&mut this.py_poison, py, err));
        }
        Ok(this.take(py))
    }

    fn take<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let out = PyBytes::new(py, &self.out);
        self.out.clear();
        out
    }

    /// One event into the encoder (a panic: a `TranscodeError`).
    fn event(&mut self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
        let event = event_from_py(obj)?;
        let (encoder, session, out) = (&mut self.encoder, &mut self.session, &mut self.out);
        guard(py, || encoder.event(event, session, out))?.map_err(|err| to_py_err(py, &err, None))
    }
}

#[pymethods]
impl NativeEncoder {
    #[new]
    #[pyo3(signature = (target, *, kind="request", source="", options=None, clock=None, entropy=None))]
    fn new(
        py: Python<'_>,
        target: &str,
        kind: &str,
        source: &str,
        options: Option<Bound<'_, PyAny>>,
        clock: Option<Bound<'_, PyAny>>,
        entropy: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (target, kind) = dialect_and_kind(target, kind)?;
        let source = if source.is_empty() { "" } else { dialect_and_kind(source, kind.name())?.0 };
        let options = options_from_py(py, options.as_ref())?;
        let mut session = crate::session::Session::new(options, source, target, kind);
        if kind != crate::session::Kind::Request {
            // a response or stream encoder reads the hooks when it is made (`Session.start`)
            let hooks = Hooks { clock: clock.map(Bound::unbind), entropy: entropy.map(Bound::unbind) };
            session.response_start = Some(hooks.read(py)?);
        }
        let mut out = Vec::new();
        let encoder = guard(py, || -> crate::error::Result<_> {
            let mut encoder = crate::pipeline::encoder(target, kind, &session)?;
            encoder.start(&mut session, &mut out)?; // (Python's constructor writes it)
            Ok(encoder)
        })?
        .map_err(|err| to_py_err(py, &err, None))?;
        Ok(NativeEncoder { encoder, session, out, closed: false, py_poison: None, losses: LiveLosses::default() })
    }

    /// Feed one event or an iterable of events; returns the output they made possible.
    fn feed<'py>(slf: &Bound<'py, Self>, events: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        Self::step(slf, |this| {
            if events.hasattr(pyo3::intern!(py, "__struct_config__"))? {
                return this.event(py, &events);
            }
            for event in events.try_iter()? {
                this.event(py, &event?)?;
            }
            Ok(())
        })
    }

    /// The events ended; returns the rest of the output.
    fn close<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        Self::step(slf, |this| {
            this.closed = true;
            let (encoder, session, out) = (&mut this.encoder, &mut this.session, &mut this.out);
            guard(py, || encoder.finish(session, out))?.map_err(|err| to_py_err(py, &err, None))
        })
    }

    /// After an error: the output produced before it (a prefix of the full output).
    fn pending_output<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Encoder"))?;
        Ok(this.take(slf.py()))
    }

    /// `Transcoder.abort`: the output so far plus the target's error event, if it has one
    /// (`error`: an exception or a canonical `Error`, made one as Python's `_abort_event`).
    #[pyo3(signature = (error=None))]
    fn abort<'py>(slf: &Bound<'py, Self>, error: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyBytes>> {
        let py = slf.py();
        let event = event_from_py(&error_event(py, error)?)?;
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Encoder"))?;
        let this = &mut *this;
        let (encoder, session, out) = (&mut this.encoder, &mut this.session, &mut this.out);
        guard(py, || encoder.abort(&event, session, out))?.map_err(|err| to_py_err(py, &err, None))?;
        Ok(this.take(py))
    }

    /// What could not be carried (`interlingua.Loss` records, in order): one live list.
    #[getter]
    fn losses<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let mut this = slf.try_borrow_mut().map_err(|_| busy("Encoder"))?;
        let this = &mut *this;
        this.losses.get(slf.py(), &this.session.losses)
    }

    /// What was held for reordering (a snapshot of the reorder buffer's figures).
    #[getter]
    fn reorder(slf: &Bound<'_, Self>) -> PyResult<ReorderReport> {
        let this = slf.try_borrow().map_err(|_| busy("Encoder"))?;
        Ok(ReorderReport::of(&this.session.reorder))
    }

    /// Tool names changed for the target (wire name -> source name).
    #[getter]
    fn tool_names<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let this = slf.try_borrow().map_err(|_| busy("Encoder"))?;
        tool_names_to_py(slf.py(), &this.session)
    }

    /// An openai request's `stream_options.include_usage` is true (for its response's options).
    #[getter]
    fn asks_stream_usage(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = slf.try_borrow().map_err(|_| busy("Encoder"))?;
        Ok(this.session.asks_stream_usage)
    }
}

/// `Transcoder.reorder` of the native transcoder: the figures of
/// `reorder.ReorderBuffer` (taken when asked, not live).
#[pyclass(module = "interlingua._native", frozen)]
struct ReorderReport {
    #[pyo3(get)]
    budget: u64,
    #[pyo3(get)]
    refuse: bool,
    #[pyo3(get)]
    held: u64,
    #[pyo3(get)]
    high_water: u64,
    by_reason: Vec<(String, u64)>,
}

impl ReorderReport {
    fn of(buffer: &ReorderBuffer) -> ReorderReport {
        let (high_water, by_reason) = buffer.report();
        ReorderReport {
            budget: buffer.budget,
            refuse: buffer.refuse,
            held: buffer.held(),
            high_water,
            by_reason: by_reason.into_iter().map(|(reason, high)| (reason.to_string(), high)).collect(),
        }
    }
}

/// The run's renamed tools as a dict (wire name -> source name).
fn tool_names_to_py<'py>(py: Python<'py>, session: &crate::session::Session) -> PyResult<Bound<'py, PyDict>> {
    let names = PyDict::new(py);
    for (wire, name) in session.tool_names.iter() {
        names.set_item(wire, name)?;
    }
    Ok(names)
}

#[pymethods]
impl ReorderReport {
    #[getter]
    fn high_water_by_reason<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (reason, high) in &self.by_reason {
            out.set_item(reason, high)?;
        }
        Ok(out)
    }

    /// `ReorderBuffer.report()`.
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("high_water", self.high_water)?;
        out.set_item("by_reason", self.high_water_by_reason(py)?)?;
        Ok(out)
    }
}

// -- the codecs' leaves (value, jsonwriter, naming, digest, losses, session), for the
// parity tests (helper S's block; test entry points only) ---------------------------------

/// `(ok, bytes)`: a core `Result<Vec<u8>>` as bytes or the Python exception.
fn bytes_or_err<'py>(py: Python<'py>, result: crate::error::Result<Vec<u8>>) -> PyResult<Bound<'py, PyBytes>> {
    result.map(|b| PyBytes::new(py, &b)).map_err(|e| to_py_err(py, &e, None))
}

/// `jsonwriter.dumps(json.loads(raw))` (`data`: `decoding._data(raw)`, lone surrogates refused).
#[pyfunction]
#[pyo3(signature = (raw, *, data))]
fn value_roundtrip<'py>(py: Python<'py>, raw: &[u8], data: bool) -> PyResult<Bound<'py, PyBytes>> {
    use crate::value::Value;
    let value = guard(py, || if data { Value::parse(raw) } else { Value::loads(raw) })?;
    bytes_or_err(py, value.map(|v| v.to_json()))
}

/// `jsonwriter.dumps(decoding._scalar(kind, value))`.
#[pyfunction]
fn value_scalar<'py>(py: Python<'py>, kind: u8, value: Option<&[u8]>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = value.unwrap_or_default();
    let token = match kind {
        6 => Token::String(bytes),
        10 => Token::Number(bytes),
        11 => Token::True,
        12 => Token::False,
        13 => Token::Null,
        _ => return Err(PyRuntimeError::new_err("not a scalar token kind")),
    };
    let value = guard(py, || crate::value::Value::scalar(&token))?.unwrap_or_else(|| unreachable!());
    bytes_or_err(py, value.map(|v| v.to_json()))
}

/// `canonical.decode_escaped(payload)` (a str, lone surrogates kept).
#[pyfunction]
fn decode_escaped<'py>(py: Python<'py>, payload: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let text = guard(py, || crate::canonical::decode_escaped(payload).map(|t| t.into_owned()))?;
    wtf8_to_py(py, &text.map_err(|e| to_py_err(py, &e, None))?)
}

/// `canonical.unescape_json_text(payload)`.
#[pyfunction]
fn unescape_json_text<'py>(py: Python<'py>, payload: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let text = guard(py, || crate::canonical::unescape_json_text(payload).map(|t| t.into_owned()))?;
    bytes_or_err(py, text)
}

/// A `naming` function by name: `anthropic_id`, `openai_id`, `canonical_id`,
/// `wire_name`, `name_fits` (the last two take `dialect`).
#[pyfunction]
#[pyo3(signature = (function, text, dialect=""))]
fn naming_call<'py>(py: Python<'py>, function: &str, text: &str, dialect: &str) -> PyResult<Bound<'py, PyAny>> {
    use crate::naming::*;
    let text = text.to_string();
    let dialect = dialect.to_string();
    let function = function.to_string();
    let result = guard(py, move || match function.as_str() {
        "anthropic_id" => Ok(anthropic_id(&text)),
        "openai_id" => Ok(openai_id(&text)),
        "canonical_id" => Ok(canonical_id(&text)),
        "wire_name" => Ok(wire_name(&text, &dialect)),
        "name_fits" => Err(name_fits(&text, &dialect)),
        _ => panic!("no naming function {function}"),
    })?;
    Ok(match result {
        Ok(text) => text.into_pyobject(py)?.into_any(),
        Err(fits) => pyo3::types::PyBool::new(py, fits).to_owned().into_any(),
    })
}

/// `digest`: `sha256_hex`, `b64encode`, `urlsafe_b64encode`, `b64decode` (None: binascii's error).
#[pyfunction]
fn digest_call<'py>(py: Python<'py>, function: &str, data: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
    use crate::digest::*;
    let out = guard(py, || match function {
        "sha256_hex" => Some(sha256_hex(data).into_bytes()),
        "b64encode" => Some(b64encode(data).into_bytes()),
        "urlsafe_b64encode" => Some(urlsafe_b64encode(data).into_bytes()),
        "b64decode" => b64decode(data),
        _ => panic!("no digest function {function}"),
    })?;
    Ok(out.map(|b| PyBytes::new(py, &b)))
}

/// A `losses` function by name, its arguments in a tuple:
/// `block_subject(dialect, section, attrs: [(name, json bytes)] | None, payload)`,
/// `field_subject(dialect, key, section, attrs)`, `finish_path(dialect, kind, choice)`,
/// `block_path(dialect, kind, message)`, `field_path(path, key)`, `path_subject(path)`,
/// `raw_block_type(payload)`, `lacks(subject, target, what, done)`, `article(noun)`.
#[pyfunction]
fn losses_call(py: Python<'_>, function: &str, args: &Bound<'_, PyTuple>) -> PyResult<Option<String>> {
    use crate::canonical::Section;
    use crate::losses::*;
    use std::borrow::Cow;
    let section = |i: usize| -> PyResult<Section> {
        let name: String = args.get_item(i)?.extract()?;
        Section::from_name(&name).ok_or_else(|| PyRuntimeError::new_err(format!("no section {name}")))
    };
    type Attrs = Vec<(Cow<'static, str>, crate::canonical::RawJson<'static>)>;
    let attrs = |i: usize| -> PyResult<Option<Attrs>> {
        let pairs: Option<Vec<(String, Vec<u8>)>> = args.get_item(i)?.extract()?;
        Ok(pairs.map(|p| p.into_iter().map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))).collect()))
    };
    let text = |i: usize| -> PyResult<String> { args.get_item(i)?.extract() };
    Ok(match function {
        "block_subject" => {
            let (dialect, section, attrs) = (text(0)?, section(1)?, attrs(2)?);
            let payload: Vec<u8> = args.get_item(3)?.extract()?;
            Some(guard(py, || block_subject(&dialect, section, attrs.as_deref(), &payload))?)
        }
        "field_subject" => {
            let attrs = attrs(3)?;
            let (dialect, key, section) = (text(0)?, text(1)?, section(2)?);
            Some(guard(py, || field_subject(&dialect, &key, section, attrs.as_deref()))?)
        }
        "finish_path" => Some(finish_path(&text(0)?, &text(1)?, args.get_item(2)?.extract()?)),
        "block_path" => Some(block_path(&text(0)?, &text(1)?, args.get_item(2)?.extract()?)),
        "field_path" => Some(field_path(&text(0)?, &text(1)?)),
        "path_subject" => Some(path_subject(&text(0)?).to_string()),
        "raw_block_type" => raw_block_type(&args.get_item(0)?.extract::<Vec<u8>>()?).map(Cow::into_owned),
        "lacks" => Some(lacks(&text(0)?, &text(1)?, &text(2)?, args.get_item(3)?.extract::<Option<String>>()?.as_deref())),
        "article" => Some(article(&text(0)?).to_string()),
        _ => return Err(PyRuntimeError::new_err(format!("no losses function {function}"))),
    })
}

/// A `Session` driven by `ops`: `("lose", path, reason, dialect|None)`,
/// `("lose_member", path, what, done|None)`, `("tool_name_out", name json|None, path)`,
/// `("tool_name_in", name)`. Returns `(results, losses, tool_names, error)`:
/// each op's result (a name, or None), the losses as `(dialect, path, reason)`,
/// the renamed tools, and the error that stopped the ops (or None).
#[pyfunction]
#[pyo3(signature = (source, target, kind, ops, *, strict=false, passthrough=false, tool_names=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn session_ops<'py>(
    py: Python<'py>,
    source: &str,
    target: &str,
    kind: &str,
    ops: Vec<Bound<'py, PyTuple>>,
    strict: bool,
    passthrough: bool,
    tool_names: Option<std::collections::HashMap<String, String>>,
) -> PyResult<(Vec<Option<String>>, Bound<'py, PyList>, Bound<'py, PyDict>, Option<Py<PyAny>>)> {
    use crate::session::{Kind, Options, Session};
    use crate::value::Value;
    let known = |name: &str| crate::pipeline::dialect(name).unwrap_or("");
    let kind = Kind::from_name(kind).ok_or_else(|| PyRuntimeError::new_err("no such kind"))?;
    let options = Options { strict, tool_names, ..Options::default() };
    let mut session = Session::new(options, known(source), known(target), kind);
    session.passthrough = passthrough;
    let mut results = Vec::new();
    let mut error = None;
    for op in ops {
        let name: String = op.get_item(0)?.extract()?;
        let arg = |i: usize| -> PyResult<Option<String>> { op.get_item(i)?.extract() };
        let outcome = match name.as_str() {
            "lose" => session.lose(&arg(1)?.unwrap_or_default(), &arg(2)?.unwrap_or_default(), arg(3)?.as_deref()).map(|_| None),
            "lose_member" => {
                let (path, what, done) = (arg(1)?.unwrap_or_default(), arg(2)?.unwrap_or_default(), arg(3)?);
                session.lose_member(&path, &what, done.as_deref()).map(|_| None)
            }
            "tool_name_out" => {
                let raw: Option<Vec<u8>> = op.get_item(1)?.extract()?;
                let value = raw.map(|r| Value::loads(&r)).transpose().map_err(|e| to_py_err(py, &e, None))?;
                let path = arg(2)?.unwrap_or_default();
                guard(py, || session.tool_name_out(value.as_ref(), &path))?.map(Some)
            }
            "tool_name_in" => Ok(Some(session.tool_name_in(&arg(1)?.unwrap_or_default()).into_owned())),
            _ => return Err(PyRuntimeError::new_err(format!("no session op {name}"))),
        };
        match outcome {
            Ok(result) => results.push(result),
            Err(err) => {
                error = Some(to_py_err(py, &err, None).into_value(py).into_any());
                break;
            }
        }
    }
    Ok((results, loss_tuples(py, &session.losses)?, tool_names_to_py(py, &session)?, error))
}

// -- the response lifecycle (lifecycle.rs) and the response start (session.rs) ----------

static SESSION_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static LIBRARY_RESPONSE_START: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `session.response_start(clock, entropy)`: the `Transcoder`'s hooks read once (None:
/// the wall clock and a fresh nonce), with Python's checks and `ValueError`s -- by `read_hooks`
/// while that function is the library's own, else by calling the replacement (a test's
/// fixed clock); once per response transcoder, never per frame. The binding sets the result as
/// `Session::response_start` before it makes a response or stream encoder of another
/// dialect (Python reads it there: `Stamp(session.start)` in the encoder's `__init__`).
pub(crate) fn response_start_from_py(py: Python<'_>, clock: Option<&Bound<'_, PyAny>>,
                                     entropy: Option<&Bound<'_, PyAny>>) -> PyResult<crate::session::ResponseStart> {
    let session = module(py, &SESSION_MODULE, "interlingua.session")?;
    let reader = session.getattr(pyo3::intern!(py, "response_start"))?;
    // (the library's own function, looked up once: it is a constant; `response_start` is
    // looked up per call, since a test may replace it)
    let library = LIBRARY_RESPONSE_START.get_or_try_init(py, || session.getattr("LIBRARY_RESPONSE_START").map(Bound::unbind))?;
    if reader.is(library) {
        read_hooks(py, &session, clock, entropy)
    } else {
        start_of(&reader.call1((clock, entropy))?) // replaced (a test's fixed clock): its reading
    }
}

/// `session.response_start` done here, to spare the Python call (a third of a small
/// response's binding cost): the hooks are called as Python calls them, and a reading
/// that is not plain goes to Python's own checks (`start_after_clock`, `checked_nonce`).
/// A hook left unset is read in Rust, with no Python call: the wall clock (`time.time`'s)
/// and a fresh nonce (`session::fresh_nonce`, not `os.urandom`: a system call per response).
fn read_hooks(py: Python<'_>, session: &Bound<'_, PyModule>, clock: Option<&Bound<'_, PyAny>>,
              entropy: Option<&Bound<'_, PyAny>>) -> PyResult<crate::session::ResponseStart> {
    use crate::session::{ResponseStart, NONCE_BYTES};
    let time_us = match truthy(clock)? {
        None => crate::session::now_us(),
        Some(clock) => {
            let seconds = clock.call0()?;
            match plain_time_us(&seconds) {
                Some(time_us) => time_us,
                None => return start_of(&session.getattr(pyo3::intern!(py, "start_after_clock"))?.call1((seconds, entropy))?),
            }
        }
    };
    let Some(entropy) = truthy(entropy)? else {
        return Ok(ResponseStart { time_us, nonce: crate::session::fresh_nonce() });
    };
    let nonce = entropy.call1((NONCE_BYTES,))?;
    match nonce.cast::<PyBytes>().ok().and_then(|bytes| <[u8; NONCE_BYTES]>::try_from(bytes.as_bytes()).ok()) {
        Some(nonce) => Ok(ResponseStart { time_us, nonce }),
        None => {
            session.getattr(pyo3::intern!(py, "checked_nonce"))?.call1((nonce,))?; // raises its ValueError
            Err(PyRuntimeError::new_err("checked_nonce took a nonce the binding did not"))
        }
    }
}

/// `hook or default`: the hook unless it is falsy (as Python's `or` decides).
fn truthy<'a, 'py>(hook: Option<&'a Bound<'py, PyAny>>) -> PyResult<Option<&'a Bound<'py, PyAny>>> {
    match hook {
        Some(hook) if hook.is_truthy()? => Ok(Some(hook)),
        _ => Ok(None),
    }
}

/// `round(seconds * 1_000_000)` of a plain in-range reading (an exact `float` or
/// `int`, `0 <= seconds < MAX_CLOCK`); `None` for anything else (Python checks it).
fn plain_time_us(seconds: &Bound<'_, PyAny>) -> Option<i64> {
    use crate::session::MAX_CLOCK;
    if let Ok(float) = seconds.cast_exact::<pyo3::types::PyFloat>() {
        let seconds = float.value();
        // (f64 times 1e6 rounded half to even: Python's float product and `round`)
        (0.0..MAX_CLOCK).contains(&seconds).then(|| (seconds * 1e6).round_ties_even() as i64)
    } else if seconds.is_exact_instance_of::<pyo3::types::PyInt>() {
        let seconds: i64 = seconds.extract().ok()?;
        (0..MAX_CLOCK as i64).contains(&seconds).then(|| seconds * 1_000_000)
    } else {
        None
    }
}

/// A `session.ResponseStart` as the core's.
fn start_of(start: &Bound<'_, PyAny>) -> PyResult<crate::session::ResponseStart> {
    let nonce: Vec<u8> = start.getattr("nonce")?.extract()?;
    Ok(crate::session::ResponseStart {
        time_us: start.getattr("time_us")?.extract()?,
        nonce: nonce.try_into().map_err(|_| PyRuntimeError::new_err("a nonce of another length"))?,
    })
}

/// `response_start_from_py` as `(time_us, nonce)`; test entry point.
#[pyfunction]
#[pyo3(signature = (clock=None, entropy=None))]
fn response_start<'py>(py: Python<'py>, clock: Option<Bound<'py, PyAny>>,
                       entropy: Option<Bound<'py, PyAny>>) -> PyResult<(i64, Bound<'py, PyBytes>)> {
    // (the binding's own reading, even where a test replaced `session.response_start`)
    let session = module(py, &SESSION_MODULE, "interlingua.session")?;
    let start = read_hooks(py, &session, clock.as_ref(), entropy.as_ref())?;
    Ok((start.time_us, PyBytes::new(py, &start.nonce)))
}

fn usage_from_py(obj: &Bound<'_, PyAny>) -> PyResult<crate::canonical::Usage> {
    match event_from_py(obj)? {
        crate::canonical::Event::Usage(usage) => Ok(usage),
        _ => Err(PyRuntimeError::new_err("not a Usage")),
    }
}

/// One lifecycle.rs function on Python arguments, in a session of `source` -> `target`
/// of `kind`; test entry point. Returns `(result, losses, error)`. Values that are
/// dicts in Python go in and come out as compact JSON bytes; `Usage` as
/// `canonical.Usage`. `stamp`: `(time_us, nonce, ops)`, ops `("source", Extension)`,
/// `("time_us",)`, `("response_id", prefix, source_id, model)`: a list of results.
#[pyfunction]
#[pyo3(signature = (function, args, source="openai", target="anthropic", kind="response", strict=false))]
#[allow(clippy::type_complexity)]
fn lifecycle_call<'py>(py: Python<'py>, function: &str, args: Bound<'py, PyTuple>, source: &str, target: &str,
                       kind: &str, strict: bool)
                       -> PyResult<(Py<PyAny>, Py<PyAny>, Option<Py<PyAny>>)> {
    use crate::canonical::{Event, Usage};
    use crate::lifecycle as lc;
    use crate::session::{Kind, Options, Session};
    use crate::value::Value;
    let known = |name: &str| crate::pipeline::dialect(name).unwrap_or("");
    let kind = Kind::from_name(kind).ok_or_else(|| PyRuntimeError::new_err("no such kind"))?;
    let mut session = Session::new(Options { strict, ..Options::default() }, known(source), known(target), kind);
    let arg = |i: usize| args.get_item(i);
    let text = |i: usize| -> PyResult<Option<String>> { arg(i)?.extract() };
    let json = |i: usize| -> PyResult<Value> {
        let raw: Vec<u8> = arg(i)?.extract()?;
        Value::loads(&raw).map_err(|e| to_py_err(py, &e, None))
    };
    let none = || py.None();
    let usage_out = |u: Usage| -> PyResult<Py<PyAny>> { Ok(event_to_py(py, &Event::Usage(u))?.unbind()) };
    let bytes_out = |b: Vec<u8>| -> Py<PyAny> { PyBytes::new(py, &b).into_any().unbind() };
    let str_out = |s: Option<String>| -> PyResult<Py<PyAny>> { Ok(s.into_pyobject(py)?.into_any().unbind()) };
    let int_out = |n: Option<i64>| -> PyResult<Py<PyAny>> { Ok(n.into_pyobject(py)?.into_any().unbind()) };
    let outcome: crate::error::Result<Py<PyAny>> = match function {
        "finish_from" => {
            let (dialect, reason) = (text(0)?.unwrap_or_default(), text(1)?);
            Ok(str_out(lc::finish_from(&dialect, reason.as_deref()).map(|r| r.into_owned()))?)
        }
        "finish_to" => {
            let (dialect, reason, sequence) = (text(0)?.unwrap_or_default(), text(1)?, text(2)?);
            match lc::finish_to(&dialect, reason.as_deref(), &mut session, sequence.as_deref()) {
                Ok(r) => Ok(str_out(r.map(|r| r.into_owned()))?),
                Err(e) => Err(e),
            }
        }
        "usage_from_openai" | "usage_from_anthropic" => {
            let (obj, path) = (json(0)?, text(1)?.unwrap_or_default());
            let read = if function == "usage_from_openai" { lc::usage_from_openai } else { lc::usage_from_anthropic };
            match read(&lc::UsageObject::Data(&obj), &mut session, &path) {
                Ok(u) => Ok(usage_out(u)?),
                Err(e) => Err(e),
            }
        }
        "usage_from_ollama" => {
            let obj = json(0)?;
            match lc::usage_from_ollama(obj.get("prompt_eval_count"), obj.get("eval_count")) {
                Ok(u) => Ok(usage_out(u)?),
                Err(e) => Err(e),
            }
        }
        "usage_to_openai" => lc::usage_to_openai(&usage_from_py(&arg(0)?)?, &session).map(|b| b.map_or_else(none, bytes_out)),
        "usage_to_anthropic" => {
            let (u, require_input) = (usage_from_py(&arg(0)?)?, arg(1)?.extract()?);
            lc::usage_to_anthropic(&u, &mut session, require_input).map(bytes_out)
        }
        "usage_to_ollama" => lc::usage_to_ollama(&usage_from_py(&arg(0)?)?, &mut session).map(|v| bytes_out(v.to_json())),
        "usage_path" => Ok(str_out(Some(lc::usage_path(&session, &text(0)?.unwrap_or_default())))?),
        "tier_from" => {
            let (dialect, value) = (text(0)?.unwrap_or_default(), json(1)?);
            Ok(str_out(lc::tier_from(&dialect, Some(&value)).map(std::borrow::Cow::into_owned))?)
        }
        "tier_to" => {
            let (dialect, u) = (text(0)?.unwrap_or_default(), usage_from_py(&arg(1)?)?);
            match lc::tier_to(&dialect, &u, &mut session) {
                Ok(t) => Ok(str_out(t.map(str::to_string))?),
                Err(e) => Err(e),
            }
        }
        "merge_usage" => {
            let old = arg(0)?;
            let old = if old.is_none() { None } else { Some(usage_from_py(&old)?) };
            Ok(usage_out(lc::merge_usage(old.as_ref(), usage_from_py(&arg(1)?)?))?)
        }
        "ollama_time_us" => Ok(int_out(lc::ollama_time_us(&arg(0)?.extract::<Vec<u8>>()?))?),
        "openai_time_us" => Ok(int_out(lc::openai_time_us(&arg(0)?.extract::<Vec<u8>>()?))?),
        "openai_created" => Ok(bytes_out(lc::openai_created(arg(0)?.extract()?))),
        "ollama_created_at" => Ok(bytes_out(lc::ollama_created_at(arg(0)?.extract()?))),
        "source_time_us" => match event_from_py(&arg(0)?)? {
            Event::Extension(ext) => Ok(int_out(lc::source_time_us(&ext))?),
            _ => return Err(PyRuntimeError::new_err("not an Extension")),
        },
        "generated_response_id" => {
            let (prefix, nonce, time_us) = (text(0)?.unwrap_or_default(), arg(1)?.extract::<Vec<u8>>()?, arg(2)?.extract()?);
            let model: Option<Vec<u8>> = arg(3)?.extract()?;
            Ok(str_out(Some(lc::generated_response_id(&prefix, &nonce, time_us, model.as_deref())))?)
        }
        "generated_tool_id" => {
            let (id, n): (Vec<u8>, u64) = (arg(0)?.extract()?, arg(1)?.extract()?);
            Ok(str_out(Some(lc::generated_tool_id(&id, n)))?)
        }
        "logprob_to_openai" => lc::logprob_to_openai(&arg(0)?.extract::<Vec<u8>>()?).map(|v| bytes_out(v.to_json())),
        "stamp" => {
            let nonce: Vec<u8> = arg(1)?.extract()?;
            let nonce = nonce.try_into().map_err(|_| PyRuntimeError::new_err("a nonce of 12 bytes"))?;
            let mut stamp = lc::Stamp::new(crate::session::ResponseStart { time_us: arg(0)?.extract()?, nonce });
            let results = PyList::empty(py);
            for op in arg(2)?.try_iter()? {
                let op = op?;
                let name: String = op.get_item(0)?.extract()?;
                let result: Py<PyAny> = match name.as_str() {
                    "source" => match event_from_py(&op.get_item(1)?)? {
                        Event::Extension(ext) => stamp.source(&ext).into_pyobject(py)?.to_owned().into_any().unbind(),
                        _ => return Err(PyRuntimeError::new_err("not an Extension")),
                    },
                    "time_us" => int_out(Some(stamp.time_us()))?,
                    "response_id" => {
                        let prefix: String = op.get_item(1)?.extract()?;
                        let (id, model): (Option<String>, Option<String>) = (op.get_item(2)?.extract()?, op.get_item(3)?.extract()?);
                        str_out(Some(stamp.response_id(&prefix, id.as_deref(), model.as_deref())))?
                    }
                    _ => return Err(PyRuntimeError::new_err(format!("no stamp op {name}"))),
                };
                results.append(result)?;
            }
            Ok(results.into_any().unbind())
        }
        _ => return Err(PyRuntimeError::new_err(format!("no lifecycle function {function}"))),
    };
    let losses = loss_tuples(py, &session.losses)?.into_any().unbind();
    Ok(match outcome {
        Ok(result) => (result, losses, None),
        Err(err) => (none(), losses, Some(to_py_err(py, &err, None).into_value(py).into_any())),
    })
}

/// One of lifecycle.rs's helpers driven by `ops`; test entry point. `helper`:
/// `"block_stream"` (`args`: section, message, attrs `[(name, json)]`, key; ops
/// `("fragment", data)`, `("announce",)`, `("close", late)`, `("set", name, json)`: the
/// blocks, as `canonical.Block`s), `"reasoning_first"` (ops `("text", data, init, fin)`,
/// `("member", reasoning)`, `("reasoning_end",)`, `("release",)`: the sink's calls
/// `(data, init, fin)`), `"deferred"` (ops `("fragment", data, ready)`, `("release",)`:
/// the block's fragments), `"open_frame"` (ops `("fragment", key, head, tail, payload)`,
/// `("close",)`: the bytes each op wrote). Returns `(outputs, (high_water, by_reason), error)`.
#[pyfunction]
#[pyo3(signature = (helper, args, ops, *, refuse_reorder=false, reorder_budget=1 << 20))]
#[allow(clippy::type_complexity)]
fn lifecycle_helper<'py>(py: Python<'py>, helper: &str, args: Bound<'py, PyTuple>, ops: Vec<Bound<'py, PyTuple>>,
                         refuse_reorder: bool, reorder_budget: u64)
                         -> PyResult<(Bound<'py, PyList>, (u64, Vec<(String, u64)>), Option<Py<PyAny>>)> {
    use crate::canonical::{Event, Section};
    use crate::lifecycle as lc;
    use crate::session::{Kind, Options, Session};
    use std::borrow::Cow;
    let options = Options { refuse_reorder, reorder_budget, ..Options::default() };
    let mut session = Session::new(options, "openai", "anthropic", Kind::Stream);
    let out = PyList::empty(py);
    let attrs_of = |obj: Bound<'py, PyAny>| -> PyResult<Vec<crate::decoding::Attr>> {
        let pairs: Vec<(String, Vec<u8>)> = obj.extract()?;
        Ok(pairs.into_iter().map(|(k, v)| (Cow::Owned(k), Cow::Owned(v))).collect())
    };
    let mut block_stream = None;
    let mut reasoning = lc::ReasoningFirst::new("test:content-before-reasoning");
    let mut deferred = lc::Deferred::new("test:arguments-before-name");
    let mut frame: lc::OpenFrame<i64> = lc::OpenFrame::new();
    if helper == "block_stream" {
        let section: String = args.get_item(0)?.extract()?;
        let section = Section::from_name(&section).ok_or_else(|| PyRuntimeError::new_err("no such section"))?;
        block_stream = Some(lc::BlockStream::new(section, args.get_item(1)?.extract()?, attrs_of(args.get_item(2)?)?,
                                                 args.get_item(3)?.extract()?));
    }
    let mut error = None;
    for op in ops {
        let name: String = op.get_item(0)?.extract()?;
        let bytes = |i: usize| -> PyResult<Vec<u8>> { op.get_item(i)?.extract() };
        let piece = |data: &[u8], init: bool, fin: bool| (PyBytes::new(py, data), init, fin);
        let outcome: crate::error::Result<()> = match (helper, name.as_str()) {
            ("block_stream", op_name) => {
                let Some(stream) = block_stream.as_mut() else { return Err(PyRuntimeError::new_err("no stream")) };
                let block = match op_name {
                    "fragment" => {
                        let data = bytes(1)?;
                        stream.fragment(&data).map(|b| b.into_owned())
                    }
                    "announce" => stream.announce(),
                    "close" => Some(stream.close(&attrs_of(op.get_item(1)?)?)),
                    "set" => {
                        crate::decoding::set_attr(&mut stream.attrs, Cow::Owned(op.get_item(1)?.extract()?), bytes(2)?);
                        None
                    }
                    _ => return Err(PyRuntimeError::new_err(format!("no op {op_name}"))),
                };
                if let Some(block) = block {
                    out.append(event_to_py(py, &Event::Block(block))?)?;
                }
                Ok(())
            }
            ("reasoning_first", "text") => {
                let (data, init, fin): (Vec<u8>, bool, bool) = (bytes(1)?, op.get_item(2)?.extract()?, op.get_item(3)?.extract()?);
                match reasoning.text(&data, &mut session) {
                    Ok(true) => out.append(piece(&data, init, fin)).map(|_| Ok(()))?,
                    Ok(false) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            ("reasoning_first", other) => {
                let mut released = Vec::new();
                let mut sink = |data: &[u8]| {
                    released.push(data.to_vec());
                    Ok(())
                };
                let outcome = match other {
                    "member" => reasoning.member(op.get_item(1)?.extract()?, &mut session, &mut sink),
                    "reasoning_end" => reasoning.reasoning_end(&mut session, &mut sink),
                    _ => reasoning.release(&mut session, &mut sink),
                };
                for data in released {
                    out.append(piece(&data, false, false))?;
                }
                outcome
            }
            ("deferred", "fragment") => {
                let data = bytes(1)?;
                match deferred.fragment(&data, op.get_item(2)?.extract()?, &mut session) {
                    Ok(true) => out.append(PyBytes::new(py, &data)).map(|_| Ok(()))?,
                    Ok(false) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            ("deferred", _) => {
                for data in deferred.release(&mut session) {
                    out.append(PyBytes::new(py, &data))?;
                }
                Ok(())
            }
            ("open_frame", op_name) => {
                let mut written = Vec::new();
                if op_name == "fragment" {
                    let (key, head, tail, payload): (i64, Vec<u8>, Vec<u8>, Vec<u8>) =
                        (op.get_item(1)?.extract()?, bytes(2)?, bytes(3)?, bytes(4)?);
                    frame.fragment(key, |w| w.extend_from_slice(&head), &tail, &payload, &mut written);
                } else {
                    frame.close(&mut written);
                }
                out.append(PyBytes::new(py, &written))?;
                Ok(())
            }
            _ => return Err(PyRuntimeError::new_err(format!("no helper {helper}"))),
        };
        if let Err(err) = outcome {
            error = Some(to_py_err(py, &err, None).into_value(py).into_any());
            break;
        }
    }
    let (high, by_reason) = session.reorder.report();
    let by_reason = by_reason.into_iter().map(|(r, n)| (r.to_string(), n)).collect();
    Ok((out, (high, by_reason), error))
}

/// Tokens into a `jsonwriter::RawValue`: its text and the output length at each completion.
struct RawValueSink {
    raw: crate::jsonwriter::RawValue,
    out: Vec<u8>,
    complete_at: Vec<usize>,
}

impl Sink for RawValueSink {
    fn token(&mut self, token: Token<'_>, _offset: u64, _path: &Frames) -> crate::error::Result<()> {
        if self.raw.feed(&token, &mut self.out) {
            self.complete_at.push(self.out.len());
        }
        Ok(())
    }
}

/// `RawValue` fed the tokens of `data` cut at `cuts`: `(text, complete_at, error)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn raw_value_text<'py>(py: Python<'py>, data: &[u8], cuts: Vec<usize>) -> PyResult<(Bound<'py, PyBytes>, Vec<usize>, Option<Py<PyAny>>)> {
    let mut sink = RawValueSink { raw: Default::default(), out: Vec::new(), complete_at: Vec::new() };
    let result = guard(py, || {
        let mut tokenizer = Tokenizer::default();
        let mut start = 0;
        for cut in cuts.iter().copied().chain([data.len()]) {
            let end = cut.clamp(start, data.len());
            tokenizer.feed(&data[start..end], &mut sink)?;
            start = end;
        }
        tokenizer.close(&mut sink)
    })?;
    let error = result.err().map(|e| to_py_err(py, &e, None).into_value(py).into_any());
    Ok((PyBytes::new(py, &sink.out), sink.complete_at, error))
}

/// `repr(text)` by the core (`unicode::py_repr`); `text` may hold lone surrogates.
#[pyfunction]
fn unicode_repr(text: &Bound<'_, pyo3::types::PyString>) -> PyResult<String> {
    let wtf8: Vec<u8> = text.call_method1("encode", ("utf-8", "surrogatepass"))?.extract()?;
    Ok(crate::unicode::py_repr(&wtf8))
}

/// `repr(json.loads(data))` by the core (`unicode::py_value_repr`): the loss wordings' repr.
#[pyfunction]
fn value_repr(data: &[u8]) -> PyResult<String> {
    let value = crate::value::Value::loads(data).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.message.clone()))?;
    Ok(crate::unicode::py_value_repr(&value))
}

/// The code points `unicode::is_printable` refuses, as inclusive ranges.
#[pyfunction]
fn not_printable_ranges() -> Vec<(u32, u32)> {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for code in 0..0x110000u32 {
        if crate::unicode::is_printable(code) {
            continue;
        }
        match ranges.last_mut() {
            Some((_, high)) if *high + 1 == code => *high = code,
            _ => ranges.push((code, code)),
        }
    }
    ranges
}

fn add_leaves(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(unicode_repr, m)?)?;
    m.add_function(wrap_pyfunction!(value_repr, m)?)?;
    m.add_function(wrap_pyfunction!(not_printable_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(raw_value_text, m)?)?;
    m.add_function(wrap_pyfunction!(value_roundtrip, m)?)?;
    m.add_function(wrap_pyfunction!(value_scalar, m)?)?;
    m.add_function(wrap_pyfunction!(decode_escaped, m)?)?;
    m.add_function(wrap_pyfunction!(unescape_json_text, m)?)?;
    m.add_function(wrap_pyfunction!(naming_call, m)?)?;
    m.add_function(wrap_pyfunction!(digest_call, m)?)?;
    m.add_function(wrap_pyfunction!(losses_call, m)?)?;
    m.add_function(wrap_pyfunction!(session_ops, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle_call, m)?)?;
    m.add_function(wrap_pyfunction!(lifecycle_helper, m)?)?;
    m.add_function(wrap_pyfunction!(response_start, m)?)?;
    Ok(())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_roundtrip, m)?)?;
    m.add_function(wrap_pyfunction!(decode_events, m)?)?;
    m.add_function(wrap_pyfunction!(encode_events, m)?)?;
    m.add_function(wrap_pyfunction!(options_fields, m)?)?;
    m.add_function(wrap_pyfunction!(sse_event, m)?)?;
    m.add_function(wrap_pyfunction!(sse_open, m)?)?;
    m.add_function(wrap_pyfunction!(ndjson_line, m)?)?;
    m.add_function(wrap_pyfunction!(sections, m)?)?;
    m.add_function(wrap_pyfunction!(event_tags, m)?)?;
    m.add_function(wrap_pyfunction!(escape_text, m)?)?;
    m.add_function(wrap_pyfunction!(escape_raw_json, m)?)?;
    m.add_function(wrap_pyfunction!(reorder_ops, m)?)?;
    m.add_function(wrap_pyfunction!(frames, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_class::<TokenCounter>()?;
    m.add_class::<NativeTranscoder>()?;
    m.add_class::<NativeDecoder>()?;
    m.add_class::<NativeEncoder>()?;
    m.add_class::<ReorderReport>()?;
    m.add("COVERS", PyTuple::new(m.py(), covers())?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    add_leaves(m)?;
    forget_the_nonce_key_after_fork(m)
}

/// `os.register_at_fork(after_in_child=...)`: a forked worker's generated ids are keyed
/// with a nonce key of its own (`session::forked`; no such hook where there is no fork).
fn forget_the_nonce_key_after_fork(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let os = m.py().import("os")?;
    if !os.hasattr("register_at_fork")? {
        return Ok(());
    }
    let kwargs = PyDict::new(m.py());
    kwargs.set_item("after_in_child", wrap_pyfunction!(_forked, m)?)?;
    os.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    Ok(())
}

#[pyfunction]
fn _forked() {
    crate::session::forked();
}
