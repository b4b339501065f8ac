//! `images.py`: what the dialects read of an image's or file's own bytes -- its format, from
//! the first base64 characters (ollama carries no media type; anthropic takes four only; an
//! openai file as raw base64 has none, one labelled `UNNAMED_TYPES` names none).
#![forbid(unsafe_code)]

/// base64 characters enough to recognise the formats of `sniff_media_type`
pub const SNIFF_BYTES: usize = 16;

/// `IMAGE_TYPES`: the image formats `sniff_media_type` names (anthropic's base64 images are these four).
pub const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// `UNNAMED_TYPES`: data URL labels that name no type (`application/octet-stream`: what a
/// browser's FileReader, `mimetypes` and S3 give a file they do not know): an openai file so
/// labelled is named by its bytes, as raw base64 is.
pub const UNNAMED_TYPES: [&str; 2] = ["application/octet-stream", "binary/octet-stream"];

/// `type_named(label) in UNNAMED_TYPES` of a label's text (their letters are ASCII: no other
/// character lower-cases to one of them).
pub fn names_no_type(label: &[u8]) -> bool {
    UNNAMED_TYPES.iter().any(|unnamed| label.eq_ignore_ascii_case(unnamed.as_bytes()))
}

/// `type_named(label)`: the media type a label names -- lower case (media types are
/// case-insensitive), an alias as its type (`image/jpg` is `image/jpeg`: OpenAI takes it).
pub fn type_named(label: &str) -> String {
    let label = label.to_ascii_lowercase();
    match label.as_str() {
        "image/jpg" | "image/pjpeg" => "image/jpeg".to_string(),
        _ => label,
    }
}

/// Media type of an image from its first base64 characters (None if unknown): the magic
/// numbers of what they decode to. Only the first `SNIFF_BYTES` count, however many are
/// given: a streamed string is sniffed when that many have come, whatever else its chunk held.
pub fn sniff_media_type(b64_prefix: &[u8]) -> Option<&'static str> {
    image_type(&decoded_head(b64_prefix))
}

/// Media type of a file (openai's `file_data` as raw base64, without a data URL's type)
/// from its first base64 characters, as `sniff_media_type`: a PDF (`%PDF-`) or one of the
/// image types; None if unknown (`images.sniff_file_type`).
pub fn sniff_file_type(b64_prefix: &[u8]) -> Option<&'static str> {
    let head = decoded_head(b64_prefix);
    if head.starts_with(b"%PDF-") { Some("application/pdf") } else { image_type(&head) }
}

/// The bytes the first `SNIFF_BYTES` base64 characters stand for (empty if they decode to
/// nothing): `base64.b64decode` of the usable prefix (non-validating, as Python's:
/// `digest::b64decode`).
fn decoded_head(b64_prefix: &[u8]) -> Vec<u8> {
    let b64_prefix = &b64_prefix[..b64_prefix.len().min(SNIFF_BYTES)];
    let usable = b64_prefix.len() / 4 * 4;
    crate::digest::b64decode(&b64_prefix[..usable]).unwrap_or_default()
}

fn image_type(head: &[u8]) -> Option<&'static str> {
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

/// Add to `head` what the escaped string fragment `payload` has of the image's first
/// `SNIFF_BYTES` characters, unescaped (`images.keep_head`: UTF-8, a lone surrogate as
/// its escape): a writer may escape any base64 character (PHP writes `/` as `\/`). A
/// fragment never ends inside an escape, so each unescapes on its own and the head is the
/// same however the string was cut.
pub fn keep_head(head: &mut Vec<u8>, payload: &[u8]) {
    let mut at = 0;
    while head.len() < SNIFF_BYTES && at < payload.len() {
        let window = &payload[at..payload.len().min(at + SNIFF_BYTES - head.len())];
        let Some(plain) = memchr::memchr(b'\\', window) else {
            head.extend_from_slice(window); // (plain base64: the usual case)
            break;
        };
        let escape = at + plain;
        head.extend_from_slice(&payload[at..escape]);
        let end = (escape + escape_len(payload, escape)).min(payload.len());
        // (the tokenizer checked the escape, so it unescapes; were it not, the head ends)
        let Ok(text) = crate::canonical::unescape_json_text(&payload[escape..end]) else { break };
        head.extend_from_slice(&text);
        at = end;
    }
    head.truncate(SNIFF_BYTES);
}

/// Length of the escape at `at`: `\x` 2, `\uXXXX` 6, a surrogate pair 12 (`_escape_len`).
fn escape_len(payload: &[u8], at: usize) -> usize {
    if payload.get(at + 1) != Some(&b'u') {
        return 2;
    }
    let unit = |at: usize| crate::json::u_escape(payload, at);
    let high = unit(at).is_some_and(|code| (0xD800..0xDC00).contains(&code));
    let low = unit(at + 6).is_some_and(|code| (0xDC00..0xE000).contains(&code));
    if high && low { 12 } else { 6 }
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
        assert_eq!(sniff_media_type(b"JVBERi0xLjQK"), None);
    }

    #[test]
    fn a_file_is_a_pdf_or_an_image() {
        assert_eq!(sniff_file_type(b"JVBERi0xLjQKJcfsj6IK"), Some("application/pdf"));
        assert_eq!(sniff_file_type(b"iVBORw0KGgo="), Some("image/png"));
        assert_eq!(sniff_file_type(b"JVBE"), None); // ("%PD")
        assert_eq!(sniff_file_type(b"aGVsbG8gd29ybGQK"), None);
        assert_eq!(sniff_file_type(b"JVB]ERi0xLjQK"), None); // (Python: "Incorrect padding", nothing decoded)
    }

    #[test]
    fn only_the_first_sniff_bytes_count() {
        // (what follows them -- here a character that is not base64 -- cannot change the answer)
        assert_eq!(sniff_media_type(b"iVBORw0KGgoAAAAN]SUhEUg=="), Some("image/png"));
        assert_eq!(sniff_media_type(b"iVBORw0KGgoAAAAN"), Some("image/png"));
        assert_eq!(sniff_media_type(b"AAAAAAAAAAAAAAAAiVBORw0KGgo="), None);
    }

    /// `keep_head` of `text` cut into pieces of `width` bytes or a little more: a fragment
    /// ends outside any escape (as the tokenizer cuts them).
    fn head_in_pieces(text: &[u8], width: usize) -> Vec<u8> {
        let mut ends = Vec::new();
        let mut i = 0;
        while i < text.len() {
            i += if text[i] == b'\\' { escape_len(text, i) } else { 1 };
            ends.push(i);
        }
        let (mut head, mut at) = (Vec::new(), 0);
        for &end in &ends {
            if end >= at + width || end == text.len() {
                keep_head(&mut head, &text[at..end]);
                at = end;
            }
        }
        head
    }

    #[test]
    fn the_head_is_the_text_the_escapes_stand_for_at_any_cut() {
        let cases: [(&[u8], &[u8]); 5] = [
            (br"\/9j\/4AAQSkZJRgABAQAAAQ", b"/9j/4AAQSkZJRgAB"),
            (br"\u0069VB\u004fRw0KGgoAAAANSUhE", b"iVBORw0KGgoAAAAN"),
            (br"iVBORw0KGgoAAAANSUhE", b"iVBORw0KGgoAAAAN"),
            (br"AAAAAAAAAAAAAA\ud83d\ude00AA", b"AAAAAAAAAAAAAA\xf0\x9f"),
            (br"AAAAAAAAAAAAA\ud800AA", b"AAAAAAAAAAAAA\\ud"),
        ];
        for (text, want) in cases {
            for width in 1..=text.len() {
                assert_eq!(head_in_pieces(text, width), want, "{} in pieces of {width}", String::from_utf8_lossy(text));
            }
        }
        assert_eq!(sniff_media_type(&head_in_pieces(br"\/9j\/4AAQSkZJRgABAQAAAQ", 3)), Some("image/jpeg"));
    }
}
