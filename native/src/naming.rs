//! Tool ids and names the target accepts (`src/interlingua/naming.py`). Owner: helper S.
#![forbid(unsafe_code)]
