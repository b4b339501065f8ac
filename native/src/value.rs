//! A small JSON value: what Python's `json.loads` gives the codecs for small
//! members (tool definitions, controls, attributes), and `jsonwriter.dumps` of it.
//!
//! Python semantics, byte for byte: object members keep their order; a number
//! with a fraction or exponent is a float (written back in Python's `repr`), an
//! integer keeps its digits; strings are WTF-8 (a `\ud800` escape is a lone
//! surrogate, as in a Python `str`), and `dumps` of a value holding one writes
//! the whole value ASCII-escaped (`jsonwriter.dumps`'s fallback).
//! Owner: helper S (see /work/coord/NATIVE.md).
#![forbid(unsafe_code)]

/// A decoded JSON value (Python data after `json.loads`).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// an integer's text as Python writes the int back (`-0` -> `0`)
    Int(String),
    Float(f64),
    /// the decoded string, WTF-8
    Str(Vec<u8>),
    Array(Vec<Value>),
    /// members in input order (duplicate keys are refused by the tokenizer)
    Object(Vec<(Vec<u8>, Value)>),
}
