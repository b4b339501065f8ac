//! `images.py`: what the dialects read of an image's own bytes -- its format, from the
//! first base64 characters (ollama carries no media type; anthropic takes four only).
#![forbid(unsafe_code)]

/// base64 characters enough to recognise the formats of `sniff_media_type`
pub const SNIFF_BYTES: usize = 16;

/// Media type of an image from its first base64 characters (None if unknown):
/// `base64.b64decode` of the usable prefix (non-validating, as Python's: `digest::b64decode`),
/// then the magic numbers. Only the first `SNIFF_BYTES` count, however many are given: a
/// streamed string is sniffed when that many have come, whatever else its chunk held.
pub fn sniff_media_type(b64_prefix: &[u8]) -> Option<&'static str> {
    let b64_prefix = &b64_prefix[..b64_prefix.len().min(SNIFF_BYTES)];
    let usable = b64_prefix.len() / 4 * 4;
    let head = crate::digest::b64decode(&b64_prefix[..usable])?;
    if head.starts_with(b"\x89PNG") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF8") {
        Some("image/gif")
    } else if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else {
        None
    }
}

/// Add to `head` what `payload` has of the image's first `SNIFF_BYTES` characters (an
/// encoder keeps them as the payload streams past, to sniff at the image's close).
pub fn keep_head(head: &mut Vec<u8>, payload: &[u8]) {
    let take = SNIFF_BYTES.saturating_sub(head.len()).min(payload.len());
    head.extend_from_slice(&payload[..take]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_sniffed_as_python_does() {
        assert_eq!(sniff_media_type(b"iVBORw0KGgo="), Some("image/png"));
        assert_eq!(sniff_media_type(b"/9j/4AAQSkZJRg"), Some("image/jpeg"));
        assert_eq!(sniff_media_type(b"UklGRiQAAABXRUJQVlA4"), Some("image/webp"));
        assert_eq!(sniff_media_type(b"data:image/png;base64,iVBOR"), None);
        assert_eq!(sniff_media_type(b"iVB"), None);
    }

    #[test]
    fn only_the_first_sniff_bytes_count() {
        // (what follows them -- here a character that is not base64 -- cannot change the answer)
        assert_eq!(sniff_media_type(b"iVBORw0KGgoAAAAN]SUhEUg=="), Some("image/png"));
        assert_eq!(sniff_media_type(b"iVBORw0KGgoAAAAN"), Some("image/png"));
        assert_eq!(sniff_media_type(b"AAAAAAAAAAAAAAAAiVBORw0KGgo="), None);
    }
}
