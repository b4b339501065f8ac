//! What one transcoding run shares between its stages (`src/interlingua/session.py`):
//! `Options`, `Loss`, `Session` (losses, the reorder buffer, renamed tools).
//!
//! The run owns one `Session`; every stage gets `&mut Session` per call (no shared
//! ownership, no interior mutability). Owner: helper S.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use crate::reorder::ReorderBuffer;

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
    /// `"auto"`, `"adaptive"` or `"budget"`
    pub anthropic_thinking: String,
    /// effort -> budget; `None`: anthropic.controls.THINKING_BUDGETS
    pub anthropic_thinking_budgets: Option<Vec<(String, i64)>>,
    pub ollama_sampling_defaults: bool,
}

/// A field of the input that could not be carried into the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loss {
    pub dialect: String,
    pub path: String,
    pub reason: String,
}

/// `"request"`, `"response"` or `"stream"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    Stream,
}

/// Per-run shared state (`session.Session`).
pub struct Session {
    pub options: Options,
    pub kind: Kind,
    pub source: &'static str,
    pub target: &'static str,
    pub losses: Vec<Loss>,
    pub reorder: ReorderBuffer,
    /// tool names changed for the target in this run: wire name -> the source's name
    pub tool_names: HashMap<String, String>,
    /// same-dialect copy (`interlingua.passthrough`): nothing is lost
    pub passthrough: bool,
    lost_paths: HashSet<(String, String, String)>,
}

impl Session {
    pub fn new(options: Options, source: &'static str, target: &'static str, kind: Kind) -> Self {
        let reorder = ReorderBuffer::new(options.reorder_budget, options.refuse_reorder);
        Session {
            options,
            kind,
            source,
            target,
            losses: Vec::new(),
            reorder,
            tool_names: HashMap::new(),
            passthrough: false,
            lost_paths: HashSet::new(),
        }
    }

    /// `Session.lose`: record that the field at `path` (in the source) is not
    /// carried; strict raises `LossError`. (Body: helper S.)
    pub fn lose(&mut self, path: &str, reason: &str, dialect: Option<&str>) -> Result<()> {
        let _ = (path, reason, dialect, &self.lost_paths);
        todo!("helper S: Session.lose")
    }
}
