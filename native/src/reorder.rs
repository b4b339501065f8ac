//! The one reorder-buffer mechanism (DESIGN §5; `src/interlingua/reorder.py`).
//!
//! Whatever a decoder or encoder must hold back because the target's order
//! differs from the source's goes into a hold taken from the pipeline's
//! `ReorderBuffer`. The buffer counts every held byte against one budget,
//! records the high-water mark and the rule (`reason`) that made each hold, and
//! fails with `BudgetExceeded` when the budget would be exceeded -- or
//! `ReorderRefused` at the first held byte when reordering is refused.
//!
//! A hold does not point at its buffer (Rust ownership: the pipeline owns the
//! buffer and its codecs own their holds): its methods take the buffer.
#![forbid(unsafe_code)]

use crate::error::{Error, ErrorClass, Result};
use crate::json::py_str_repr;

pub const DEFAULT_BUDGET: u64 = 64 * 1024 * 1024;

/// The bytes held under one reason: now, and at most.
#[derive(Clone, Debug)]
struct Tally {
    reason: String,
    held: u64,
    high: u64,
    /// where its high-water mark was first recorded among the tallies' (1, 2, ...; 0: not yet)
    reported: usize,
}

#[derive(Clone, Debug)]
pub struct ReorderBuffer {
    pub budget: u64,
    pub refuse: bool,
    held: u64,
    high_water: u64,
    tallies: Vec<Tally>,
    /// tallies with a high-water mark so far (their `reported` order is Python's
    /// `high_water_by_reason` dict order: a number per tally, not a list to allocate)
    reported: usize,
}

/// Which reason's tally a hold counts under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TallyId(usize);

std::thread_local! {
    /// A dropped buffer's tally list (its buffer), for the next one (`crate::spare`).
    static SPARE_TALLIES: std::cell::Cell<Option<Vec<Tally>>> = const { std::cell::Cell::new(None) };
}

impl Drop for ReorderBuffer {
    fn drop(&mut self) {
        crate::spare::keep(&SPARE_TALLIES, &mut self.tallies);
    }
}

impl Default for ReorderBuffer {
    fn default() -> Self {
        ReorderBuffer::new(DEFAULT_BUDGET, false)
    }
}

impl ReorderBuffer {
    pub fn new(budget: u64, refuse: bool) -> Self {
        ReorderBuffer { budget, refuse, held: 0, high_water: 0, tallies: Vec::new(), reported: 0 }
    }

    pub fn held(&self) -> u64 {
        self.held
    }

    pub fn high_water(&self) -> u64 {
        self.high_water
    }

    /// A new hold for `reason` (its tally found once, not per held item).
    pub fn hold<T>(&mut self, reason: &str) -> Hold<T> {
        Hold { tally: self.tally(reason), items: Vec::new(), size: 0 }
    }

    pub fn byte_hold(&mut self, reason: &str) -> ByteHold {
        ByteHold { tally: self.tally(reason), bytes: Vec::new() }
    }

    fn tally(&mut self, reason: &str) -> TallyId {
        if let Some(i) = self.tallies.iter().position(|t| t.reason == reason) {
            return TallyId(i);
        }
        if self.tallies.capacity() == 0 {
            // (a run holds for a rule or two: the list a dropped buffer left, taken at the first)
            self.tallies = crate::spare::take(&SPARE_TALLIES).unwrap_or_default();
        }
        self.tallies.push(Tally { reason: reason.to_string(), held: 0, high: 0, reported: 0 });
        TallyId(self.tallies.len() - 1)
    }

    /// `refused(reason)`: the refusal of a rule that, with reordering refused, held nothing
    /// and meets what it would have waited for too late (the error to return).
    pub fn refused(&self, reason: &str) -> Error {
        Error::new(ErrorClass::ReorderRefused, format!("input needs reordering ({reason}) and reordering is refused"))
    }

    fn add(&mut self, tally: TallyId, size: u64) -> Result<()> {
        if self.refuse && size > 0 {
            return Err(self.refused(&self.tallies[tally.0].reason));
        }
        let reason = &self.tallies[tally.0].reason;
        let held = self.held + size;
        if held > self.budget {
            return Err(Error::new(
                ErrorClass::BudgetExceeded,
                format!(
                    "reorder budget of {} bytes exceeded while holding for {}",
                    self.budget,
                    py_str_repr(reason.as_bytes())
                ),
            ));
        }
        self.held = held;
        self.high_water = self.high_water.max(held);
        let t = &mut self.tallies[tally.0];
        t.held += size;
        if t.held > t.high {
            if t.high == 0 {
                self.reported += 1;
                t.reported = self.reported;
            }
            t.high = t.held;
        }
        Ok(())
    }

    fn release(&mut self, tally: TallyId, size: u64) {
        self.held -= size;
        self.tallies[tally.0].held -= size;
    }

    /// `(high_water, [(reason, its high-water mark)])`: `ReorderBuffer.report()`.
    pub fn report(&self) -> (u64, Vec<(&str, u64)>) {
        let mut reported: Vec<&Tally> = self.tallies.iter().filter(|t| t.reported > 0).collect();
        reported.sort_unstable_by_key(|t| t.reported);
        (self.high_water, reported.into_iter().map(|t| (t.reason.as_str(), t.high)).collect())
    }
}

/// Items held for one rule; each counted with the byte size given.
#[derive(Clone, Debug)]
pub struct Hold<T> {
    tally: TallyId,
    items: Vec<T>,
    size: u64,
}

impl<T> Hold<T> {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn append(&mut self, buffer: &mut ReorderBuffer, item: T, size: u64) -> Result<()> {
        buffer.add(self.tally, size)?;
        self.items.push(item);
        self.size += size;
        Ok(())
    }

    /// `count(size)`: bytes held outside the items (what a block's builder keeps back
    /// while its events wait: `Gate::keep`).
    pub fn count(&mut self, buffer: &mut ReorderBuffer, size: u64) -> Result<()> {
        buffer.add(self.tally, size)?;
        self.size += size;
        Ok(())
    }

    /// `count(-size)`: bytes counted so, given back.
    pub fn uncount(&mut self, buffer: &mut ReorderBuffer, size: u64) {
        buffer.release(self.tally, size);
        self.size -= size;
    }

    /// Every held item in order, their bytes (counted ones too) released.
    pub fn drain(&mut self, buffer: &mut ReorderBuffer) -> std::vec::Drain<'_, T> {
        buffer.release(self.tally, self.size);
        self.size = 0;
        self.items.drain(..)
    }
}

/// Output bytes held (encoders): `Hold.write` / `take_bytes`, kept contiguous.
#[derive(Clone, Debug)]
pub struct ByteHold {
    tally: TallyId,
    bytes: Vec<u8>,
}

impl ByteHold {
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub fn write(&mut self, buffer: &mut ReorderBuffer, data: &[u8]) -> Result<()> {
        if !data.is_empty() {
            buffer.add(self.tally, data.len() as u64)?;
            self.bytes.extend_from_slice(data);
        }
        Ok(())
    }

    /// The held bytes appended to `out`, released.
    pub fn take_into(&mut self, buffer: &mut ReorderBuffer, out: &mut Vec<u8>) {
        buffer.release(self.tally, self.bytes.len() as u64);
        if out.is_empty() {
            std::mem::swap(out, &mut self.bytes); // the held bytes themselves, not a copy
        } else {
            out.append(&mut self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_high_water_and_refusal() {
        let mut buffer = ReorderBuffer::new(10, false);
        let mut a = buffer.hold::<u8>("system-first");
        let mut b = buffer.byte_hold("tool-args");
        a.append(&mut buffer, 1, 4).unwrap();
        b.write(&mut buffer, b"12345").unwrap();
        assert_eq!(buffer.held(), 9);
        let err = a.append(&mut buffer, 2, 2).unwrap_err();
        assert_eq!(err.class, ErrorClass::BudgetExceeded);
        assert_eq!(err.message, "reorder budget of 10 bytes exceeded while holding for 'system-first'");
        assert_eq!(a.drain(&mut buffer).collect::<Vec<_>>(), vec![1]);
        let mut out = Vec::new();
        b.take_into(&mut buffer, &mut out);
        assert_eq!((out.as_slice(), buffer.held()), (&b"12345"[..], 0));
        assert_eq!(buffer.report(), (9, vec![("system-first", 4), ("tool-args", 5)]));

        // reported in the order the marks were first recorded, not the holds made
        let mut buffer = ReorderBuffer::new(10, false);
        let (mut a, mut b) = (buffer.byte_hold("a"), buffer.byte_hold("b"));
        b.write(&mut buffer, b"1").unwrap();
        a.write(&mut buffer, b"12").unwrap();
        assert_eq!(buffer.report(), (3, vec![("b", 1), ("a", 2)]));

        let mut strict = ReorderBuffer::new(10, true);
        let mut c = strict.byte_hold("x");
        c.write(&mut strict, b"").unwrap();
        assert_eq!(c.write(&mut strict, b"1").unwrap_err().class, ErrorClass::ReorderRefused);
    }
}
