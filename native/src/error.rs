//! The error classes of `src/interlingua/errors.py`, one variant each.
#![forbid(unsafe_code)]

use std::fmt;

/// Which `TranscodeError` subclass an error is (the Python class of the same name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    Transcode,
    JsonSyntax,
    InvalidUtf8,
    ControlCharacter,
    TruncatedInput,
    NestingTooDeep,
    Schema,
    DuplicateKey,
    /// `LoneSurrogateError` (a SchemaError): an escaped lone surrogate in a value read as text
    LoneSurrogate,
    Loss,
    /// `NoMessageError` (a LossError): a request with no message left for a target that needs one
    NoMessage,
    BudgetExceeded,
    ReorderRefused,
}

impl ErrorClass {
    /// The Python class name (`interlingua.errors`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Transcode => "TranscodeError",
            ErrorClass::JsonSyntax => "JsonSyntaxError",
            ErrorClass::InvalidUtf8 => "InvalidUtf8Error",
            ErrorClass::ControlCharacter => "ControlCharacterError",
            ErrorClass::TruncatedInput => "TruncatedInputError",
            ErrorClass::NestingTooDeep => "NestingTooDeepError",
            ErrorClass::Schema => "SchemaError",
            ErrorClass::DuplicateKey => "DuplicateKeyError",
            ErrorClass::LoneSurrogate => "LoneSurrogateError",
            ErrorClass::Loss => "LossError",
            ErrorClass::NoMessage => "NoMessageError",
            ErrorClass::BudgetExceeded => "BudgetExceededError",
            ErrorClass::ReorderRefused => "ReorderRefusedError",
        }
    }
}

/// A typed error: class, message (the Python `reason`), byte offset and JSON
/// path. `path` is WTF-8 (a key may hold a lone surrogate from a `\uD800`
/// escape, as a Python `str` can); the binding decodes it with `surrogatepass`.
///
/// Boxed (`Error` derefs to its `ErrorData`): a `Result<T>` is then a pointer wide, so
/// the `Ok` path of every call that returns one -- each token, each frame -- passes it
/// in registers instead of through a ~150-byte slot in memory.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorData>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorData {
    pub class: ErrorClass,
    pub message: String,
    pub offset: Option<u64>,
    pub path: Option<Vec<u8>>,
    /// DuplicateKey: the key (WTF-8). Python's message ends with the key's
    /// `repr`, whose rule for non-ASCII needs the Unicode database: the core's
    /// message approximates it, the binding writes it with Python's `repr`.
    pub key: Option<Vec<u8>>,
    /// The message as WTF-8 where it holds a lone surrogate (a strict loss at a key
    /// with an escaped one: Python's message holds it); `message` then has U+FFFD.
    pub message_wtf8: Option<Vec<u8>>,
    /// The dialect, where the raising stage names one (Python's `dialect=` at the
    /// raise: a loss of a control from another dialect, an encoder's own error);
    /// otherwise the pipeline names the source (`exc.locate`).
    pub dialect: Option<&'static str>,
    /// In a stream: the stream offset of the first byte of the frame's JSON (or
    /// text) the error is in; `offset` and `path` then count inside that document
    /// (Python's `frame_offset`). `None` for bodies and for errors of the framing.
    pub frame_offset: Option<u64>,
}

/// Every constructor and locator is `#[cold]`: an error is the rare path, and a block that
/// makes one is then laid out away from the hot code around it (a small response's code
/// is fetched from past the instruction cache, once per transcode: its size is its cost).
impl Error {
    #[cold]
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorData {
            class,
            message: message.into(),
            offset: None,
            path: None,
            key: None,
            message_wtf8: None,
            dialect: None,
            frame_offset: None,
        }))
    }

    /// An error whose message is WTF-8 (it quotes an input key).
    #[cold]
    pub fn wtf8(class: ErrorClass, message: Vec<u8>) -> Self {
        match String::from_utf8(message) {
            Ok(text) => Error::new(class, text),
            Err(e) => {
                let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
                let mut err = Error::new(class, text);
                err.message_wtf8 = Some(e.into_bytes());
                err
            }
        }
    }

    #[cold]
    pub fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    #[cold]
    pub fn with_path(mut self, path: Vec<u8>) -> Self {
        self.path = Some(path);
        self
    }

    /// Raised naming a dialect (Python's `SomeError(..., dialect=X)`).
    #[cold]
    pub fn in_dialect(mut self, dialect: &'static str) -> Self {
        self.dialect = Some(dialect);
        self
    }

    /// `TranscodeError.locate`: fill in what the raising stage did not know
    /// (the path only if it has none: Python's `if path and not self.path`).
    #[cold]
    pub fn locate(self, dialect: &'static str, path: impl FnOnce() -> Vec<u8>, offset: u64) -> Self {
        self.locate_at(dialect, path, Some(offset))
    }

    /// `locate(dialect=, path=, offset=)` where the offset may be absent (Python's
    /// `offset=None`: `_StreamFront.feed` names only the dialect and the path).
    #[cold]
    pub fn locate_at(mut self, dialect: &'static str, path: impl FnOnce() -> Vec<u8>, offset: Option<u64>) -> Self {
        if self.dialect.is_none() {
            self.dialect = Some(dialect);
        }
        if self.offset.is_none() {
            self.offset = offset;
        }
        if self.path.as_ref().is_none_or(|p| p.is_empty()) {
            let path = path();
            if !path.is_empty() {
                self.path = Some(path);
            }
        }
        self
    }

    /// `locate(frame_offset=, offset=)`: an error inside a stream's frame (each
    /// filled only where the raising stage left it empty).
    #[cold]
    pub fn in_frame(mut self, frame_offset: Option<u64>, offset: u64) -> Self {
        if self.offset.is_none() {
            self.offset = Some(offset);
        }
        if self.frame_offset.is_none() {
            self.frame_offset = frame_offset;
        }
        self
    }
}

impl std::ops::Deref for Error {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorData {
        &mut self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.name(), self.message)?;
        if let Some(frame_offset) = self.frame_offset {
            write!(f, " (in the frame at stream byte {frame_offset})")?;
        }
        if let Some(offset) = self.offset {
            write!(f, " (byte {offset}")?;
            if let Some(path) = &self.path {
                write!(f, ", at {}", String::from_utf8_lossy(path))?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
