//! Same-dialect responses and streams: the input is the output
//! (`src/interlingua/passthrough.py`: `BodyCopy`, `FrameCopy`). Owner: helper RF (issue 12).
#![forbid(unsafe_code)]
