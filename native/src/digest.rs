//! SHA-256 (FIPS 180-4) and base64 (RFC 4648), as `hashlib.sha256` and the
//! `base64` module give them to the Python codecs: `naming` hashes tool names
//! and long ids and escapes ids in base64url; the ollama codec sniffs a base64
//! image's first bytes (`base64.b64decode`, which skips what is not base64).
//!
//! SHA-256 is the `sha2` crate's: it uses the CPU's SHA extensions where there are
//! some (a generated response id is one or two blocks per response, and in software
//! they were a tenth of a 1 kB ollama response's transcode; the intrinsics need
//! `unsafe`, which this crate has none of). Base64 stays our own and small: its
//! decoder is binascii's lenient one (skips what is not base64, stops at a full
//! pad). Tested on the standards' vectors and, through the binding, against
//! Python. Owner: helper S.
#![forbid(unsafe_code)]

// -- SHA-256 ----------------------------------------------------------------------

/// `hashlib.sha256()`, fed in pieces (`update`): a generated id hashes its parts
/// joined with NUL without joining them in a buffer.
#[derive(Clone, Debug, Default)]
pub struct Sha256(sha2::Sha256);

impl Sha256 {
    pub fn update(&mut self, data: &[u8]) {
        sha2::Digest::update(&mut self.0, data);
    }

    /// `.digest()`.
    pub fn finish(self) -> [u8; 32] {
        sha2::Digest::finalize(self.0).into()
    }
}

/// `hashlib.sha256(data).digest()`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut hash = Sha256::default();
    hash.update(data);
    hash.finish()
}

/// `hashlib.sha256(data).hexdigest()` (lowercase).
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&sha256(data))
}

/// Lowercase hex digits of `bytes` (a table, not `format!` per byte: that cost a
/// generated response id ~20k instructions).
pub fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    push_hex(bytes, &mut text);
    text
}

/// `hex(bytes)` appended to `text`.
pub fn push_hex(bytes: &[u8], text: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 0x0F)] as char);
    }
}

// -- base64 -----------------------------------------------------------------------

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn encode_with(alphabet: &[u8; 64], data: &[u8], pad: bool) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let bits = group.iter().enumerate().fold(0u32, |v, (i, &b)| v | (b as u32) << (16 - 8 * i));
        let chars = group.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(alphabet[(bits >> (18 - 6 * i) & 0x3F) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// `base64.b64encode(data)` (padded).
pub fn b64encode(data: &[u8]) -> String {
    encode_with(STANDARD, data, true)
}

/// `base64.urlsafe_b64encode(data)` (padded; `naming` strips the `=`).
pub fn urlsafe_b64encode(data: &[u8]) -> String {
    encode_with(URLSAFE, data, true)
}

fn standard_value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// `base64.b64decode(data)` (not validating: `binascii.a2b_base64` with
/// `strict_mode=False`): bytes outside the alphabet are skipped, a complete
/// padding ends the data, `None` where Python raises `binascii.Error` (one
/// character more than a multiple of 4, or a missing pad).
pub fn b64decode(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 4 * 3);
    let (mut quad_pos, mut pads, mut left) = (0u8, 0u8, 0u32);
    for &c in data {
        if c == b'=' {
            if quad_pos >= 2 {
                pads += 1;
                if quad_pos + pads >= 4 {
                    return Some(out);
                }
            }
            continue;
        }
        let Some(v) = standard_value(c) else { continue };
        pads = 0;
        quad_pos = match quad_pos {
            0 => {
                left = v;
                1
            }
            1 => {
                out.push((left << 2 | v >> 4) as u8);
                left = v & 0x0F;
                2
            }
            2 => {
                out.push((left << 4 | v >> 2) as u8);
                left = v & 0x03;
                3
            }
            _ => {
                out.push((left << 6 | v) as u8);
                0
            }
        };
    }
    (quad_pos == 0).then_some(out)
}

/// `base64.urlsafe_b64decode(text)`: ASCII only (else Python's ValueError:
/// `None`), `-` and `_` read as `+` and `/`, then `b64decode`.
pub fn urlsafe_b64decode(text: &str) -> Option<Vec<u8>> {
    if !text.is_ascii() {
        return None;
    }
    let translated: Vec<u8> = text
        .bytes()
        .map(|c| match c {
            b'-' => b'+',
            b'_' => b'/',
            c => c,
        })
        .collect();
    b64decode(&translated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_fips_180_vectors() {
        let table: &[(&[u8], &str)] = &[
            (b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
            (
                b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
            ),
        ];
        for (data, hex) in table {
            assert_eq!(sha256_hex(data), *hex);
        }
        assert_eq!(
            sha256_hex(&vec![b'a'; 1_000_000]),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
        // the padding's edges (one block or two), values from hashlib
        let edges = [
            (55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"),
            (56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"),
            (63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"),
            (64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"),
            (119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"),
            (120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"),
        ];
        for (n, hex) in edges {
            assert_eq!(sha256_hex(&vec![b'x'; n]), hex, "{n}");
        }
        // fed in pieces: the same digest wherever the pieces end
        let data: Vec<u8> = (0..200u8).collect();
        for cut in [0, 1, 55, 56, 63, 64, 65, 127, 128, 199, 200] {
            for second in [0, 1, 64, 70] {
                let second = (cut + second).min(data.len());
                let mut hash = Sha256::default();
                for piece in [&data[..cut], &data[cut..second], &data[second..]] {
                    hash.update(piece);
                }
                assert_eq!(hash.finish(), sha256(&data), "{cut} {second}");
            }
        }
    }

    #[test]
    fn base64_rfc_4648_vectors() {
        let table: &[(&[u8], &str)] =
            &[(b"", ""), (b"f", "Zg=="), (b"fo", "Zm8="), (b"foo", "Zm9v"), (b"foob", "Zm9vYg=="), (b"fooba", "Zm9vYmE="), (b"foobar", "Zm9vYmFy")];
        for (data, text) in table {
            assert_eq!(b64encode(data), *text);
            assert_eq!(b64decode(text.as_bytes()).as_deref(), Some(*data));
        }
        assert_eq!(b64encode(&[0xfb, 0xff]), "+/8=");
        assert_eq!(urlsafe_b64encode(&[0xfb, 0xff]), "-_8=");
        assert_eq!(urlsafe_b64decode("-_8=").as_deref(), Some(&[0xfb, 0xff][..]));
    }

    #[test]
    fn b64decode_is_lenient_as_binascii() {
        // skipped bytes, a padding that ends the data, and binascii's two errors
        assert_eq!(b64decode(b"Zm 9v\nYg==garbage").as_deref(), Some(&b"foob"[..]));
        assert_eq!(b64decode(b"Z-m_9v").as_deref(), Some(&b"foo"[..]));
        assert_eq!(b64decode(b"=Zg=="), Some(b"f".to_vec()));
        assert_eq!(b64decode(b"Zg=x="), Some(b"f\x0c".to_vec()));
        assert_eq!(b64decode(b"Zg"), None);
        assert_eq!(b64decode(b"Zg="), None);
        assert_eq!(b64decode(b"Zm9vY"), None);
        assert_eq!(b64decode(b"Zm9=v"), Some(b"fo".to_vec()));
        assert_eq!(urlsafe_b64decode("é"), None);
    }
}
