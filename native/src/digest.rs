//! SHA-256 (FIPS 180-4) and base64 (RFC 4648), as `hashlib.sha256` and the
//! `base64` module give them to the Python codecs: `naming` hashes tool names
//! and long ids and escapes ids in base64url; the ollama codec sniffs a base64
//! image's first bytes (`base64.b64decode`, which skips what is not base64).
//!
//! Our own small implementations instead of crates: the codecs hash a few
//! short names per request and a generated id per response (one or two blocks,
//! hence `compress`'s rotated round names), and the dependency tree stays small
//! (CI builds it on 2 cores). Tested on the standards' vectors
//! and, through the binding, against Python. Owner: helper S.
#![forbid(unsafe_code)]

// -- SHA-256 ----------------------------------------------------------------------

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const H0: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// One round of §6.2.2 step 3 on the working variables named in their round's roles: the
/// eight are not shifted down a place per round, the names rotate instead (`compress` calls
/// it eight times per loop, each time with the roles one place on), which spares the seven
/// moves a round: an ollama source's generated response id hashes two blocks per response.
macro_rules! round {
    ($w:ident, $t:expr, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident) => {
        let big_s1 = $e.rotate_right(6) ^ $e.rotate_right(11) ^ $e.rotate_right(25);
        let choose = $g ^ ($e & ($f ^ $g)); // (e & f) ^ (!e & g)
        let t1 = $h.wrapping_add(big_s1).wrapping_add(choose).wrapping_add(K[$t]).wrapping_add($w[$t]);
        let big_s0 = $a.rotate_right(2) ^ $a.rotate_right(13) ^ $a.rotate_right(22);
        let majority = ($a & $b) | ($c & ($a | $b)); // (a & b) ^ (a & c) ^ (b & c)
        $d = $d.wrapping_add(t1); // the next round's e
        $h = t1.wrapping_add(big_s0.wrapping_add(majority)); // the next round's a
    };
}

/// One 64-byte block into the state (FIPS 180-4 §6.2.2).
fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    let mut w = [0u32; 64];
    for (t, word) in block.chunks_exact(4).enumerate() {
        w[t] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
    }
    for t in 16..64 {
        let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
        let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16].wrapping_add(s0).wrapping_add(w[t - 7]).wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in (0..64).step_by(8) {
        round!(w, t, a, b, c, d, e, f, g, h);
        round!(w, t + 1, h, a, b, c, d, e, f, g);
        round!(w, t + 2, g, h, a, b, c, d, e, f);
        round!(w, t + 3, f, g, h, a, b, c, d, e);
        round!(w, t + 4, e, f, g, h, a, b, c, d);
        round!(w, t + 5, d, e, f, g, h, a, b, c);
        round!(w, t + 6, c, d, e, f, g, h, a, b);
        round!(w, t + 7, b, c, d, e, f, g, h, a);
    }
    for (word, add) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = word.wrapping_add(add);
    }
}

/// `hashlib.sha256()`, fed in pieces (`update`): a generated id hashes its parts
/// joined with NUL without joining them in a buffer.
#[derive(Clone, Debug)]
pub struct Sha256 {
    state: [u32; 8],
    /// the block being filled, `filled` bytes of it
    block: [u8; 64],
    filled: usize,
    /// bytes fed in all
    len: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256 { state: H0, block: [0; 64], filled: 0, len: 0 }
    }
}

impl Sha256 {
    pub fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.filled > 0 {
            let take = data.len().min(64 - self.filled);
            self.block[self.filled..self.filled + take].copy_from_slice(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled < 64 {
                return;
            }
            compress(&mut self.state, &self.block);
            self.filled = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            compress(&mut self.state, block.try_into().unwrap_or(&[0; 64]));
        }
        let rest = blocks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    /// `.digest()`: the padding (0x80, zeros, the bit length as a big-endian u64, to a
    /// whole block or two), then the state's words.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.len.wrapping_mul(8);
        self.block[self.filled..].fill(0);
        self.block[self.filled] = 0x80;
        if self.filled >= 56 {
            compress(&mut self.state, &self.block);
            self.block = [0; 64];
        }
        self.block[56..].copy_from_slice(&bits.to_be_bytes());
        compress(&mut self.state, &self.block);
        let mut digest = [0u8; 32];
        for (out, word) in digest.chunks_exact_mut(4).zip(self.state) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        digest
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
