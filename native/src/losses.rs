//! How a loss is said (`src/interlingua/losses.py`): `lacks`, the subjects and
//! paths of blocks and fields, `INTERNAL_ATTRS`. Owner: helper S.
#![forbid(unsafe_code)]
