//! The members' types and the required members per dialect (`dialects/fields.py`). Owner: helper D.
#![forbid(unsafe_code)]
