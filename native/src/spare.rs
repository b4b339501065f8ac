//! Spare buffers: what a finished transcoder's stages leave for the next ones made
//! on the same thread.
//!
//! A small response is one tokenizer's, one machine's and one output buffer's
//! life: making their buffers cost an allocation and a free each per transcode
//! (a fixed cost the size of the JSON work on a 1 kB body). A stage takes its
//! buffers from its thread's slot when it is made and puts them back, cleared,
//! when it is dropped. One set per slot and thread, and only small buffers
//! (`SPARE_MAX`): a body with deep nesting or long keys does not pin its memory,
//! and many transcoders alive at once simply allocate as before.
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::thread::LocalKey;

/// The largest buffer a slot keeps, in bytes of capacity.
pub const SPARE_MAX: usize = 4096;

/// A thread's slot for one stage's spare buffers.
pub type Slot<T> = LocalKey<Cell<Option<T>>>;

/// The slot's buffers, if a finished stage left them.
#[inline]
pub fn take<T>(slot: &'static Slot<T>) -> Option<T> {
    // (None once the thread is being torn down)
    slot.try_with(Cell::take).ok().flatten()
}

/// Leave `buffers` (cleared by the caller) in the slot, for the next stage made on this thread.
#[inline]
pub fn give<T>(slot: &'static Slot<T>, buffers: T) {
    let _ = slot.try_with(|cell| cell.set(Some(buffers)));
}

/// Leave a stage's one buffer for the next stage (a `Drop`'s whole work): emptied, if it
/// was ever allocated and is small enough to keep.
#[inline]
pub fn keep<T>(slot: &'static Slot<Vec<T>>, buffer: &mut Vec<T>) {
    if buffer.capacity() > 0 && small(buffer) {
        let mut buffer = std::mem::take(buffer);
        buffer.clear();
        give(slot, buffer);
    }
}

/// Whether a buffer is small enough to keep.
#[inline]
pub fn small<T>(buffer: &Vec<T>) -> bool {
    buffer.capacity() * std::mem::size_of::<T>() <= SPARE_MAX
}

#[cfg(test)]
mod tests {
    use super::*;

    std::thread_local! {
        static TEST_SLOT: Cell<Option<Vec<u8>>> = const { Cell::new(None) };
    }

    #[test]
    fn a_slot_hands_back_what_was_left_once() {
        assert_eq!(take(&TEST_SLOT), None);
        give(&TEST_SLOT, Vec::with_capacity(100));
        let buffer = take(&TEST_SLOT).unwrap();
        assert!(buffer.capacity() >= 100);
        assert_eq!(take(&TEST_SLOT), None);
        assert!(small(&buffer));
        assert!(!small(&Vec::<u64>::with_capacity(SPARE_MAX / 8 + 1)));
    }

    #[test]
    fn keep_leaves_an_emptied_small_buffer_and_nothing_else() {
        let mut never_allocated = Vec::new();
        keep(&TEST_SLOT, &mut never_allocated);
        assert_eq!(take(&TEST_SLOT), None);
        let mut large = Vec::with_capacity(SPARE_MAX + 1);
        keep(&TEST_SLOT, &mut large);
        assert_eq!(take(&TEST_SLOT), None);
        let mut used = b"abc".to_vec();
        keep(&TEST_SLOT, &mut used);
        let kept = take(&TEST_SLOT).unwrap();
        assert!(kept.is_empty() && kept.capacity() >= 3 && used.capacity() == 0);
    }
}
