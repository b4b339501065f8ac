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

use crate::error::Error;

/// The stages the core implements (interlingua.backend reads it to decide
/// what the native backend covers).
const COVERS: &[&str] = &[];

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS_MODULE
        .get_or_try_init(py, || py.import("interlingua.errors").map(Bound::unbind))?
        .bind(py))
}

/// A core error as the Python exception of the same class, message, offset and path.
pub(crate) fn to_py_err(py: Python<'_>, err: &Error, dialect: Option<&str>) -> PyErr {
    match build_py_err(py, err, dialect) {
        Ok(e) => e,
        Err(e) => e,
    }
}

fn build_py_err(py: Python<'_>, err: &Error, dialect: Option<&str>) -> PyResult<PyErr> {
    let class = errors_module(py)?.getattr(err.class.name())?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dialect", dialect)?;
    kwargs.set_item("offset", err.offset)?;
    if let Some(path) = &err.path {
        kwargs.set_item("path", wtf8_to_py(py, path)?)?;
    }
    let instance = class.call((err.message.as_str(),), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
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
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let err = Error::new(crate::error::ErrorClass::Transcode, format!("internal error in the native core: {what}"));
        to_py_err(py, &err, None)
    })
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("COVERS", PyTuple::new(m.py(), COVERS)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
