//! Tool-call ids and tool names as each target API accepts them, by
//! deterministic, stateless maps (`src/interlingua/naming.py`; its docstring
//! says why each map is what it is):
//!
//! * ids into anthropic: kept when they fit `^[a-zA-Z0-9_-]+$` and do not start
//!   with `ID_MARK`, else `ID_MARK` + unpadded base64url of the UTF-8;
//!   `canonical_id` inverts it;
//! * long ids into openai (over 40 characters): `call_` + 32 hex digits of SHA-256;
//! * names into openai / anthropic: kept when they fit `^[a-zA-Z0-9_-]{1,N}$`,
//!   else the bad characters replaced by `_`, cut, `_` + 8 hex digits of SHA-256.
//!
//! Lengths are Python's (code points, not bytes). Owner: helper S.
#![forbid(unsafe_code)]

use crate::digest::{sha256_hex, urlsafe_b64decode, urlsafe_b64encode};

/// Prefix of an id escaped for anthropic.
pub const ID_MARK: &str = "ilid_";
/// Longest id openai takes on a history tool call.
pub const OPENAI_ID_LIMIT: usize = 40;
const HASH_DIGITS: usize = 8;

/// `NAME_LIMIT`: the longest tool name each target takes (`^[a-zA-Z0-9_-]{1,N}$`);
/// `None`: the dialect takes any name.
pub fn name_limit(dialect: &str) -> Option<usize> {
    match dialect {
        "openai" => Some(64),
        "anthropic" => Some(128),
        _ => None,
    }
}

/// `[a-zA-Z0-9_-]` (ASCII only, as Python's `re` reads the class).
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `anthropic_id(id) == id`: a non-empty id of name characters, not marked.
fn is_own_anthropic_id(call_id: &[u8]) -> bool {
    !call_id.is_empty() && call_id.iter().all(|&b| is_name_char(b as char)) && !call_id.starts_with(ID_MARK.as_bytes())
}

/// The JSON text of an id `anthropic_id` keeps as it is (`"call_1"`): an encoder copies it
/// without parsing it.
pub fn is_anthropic_id_json(raw: &[u8]) -> bool {
    raw.len() >= 2 && raw[0] == b'"' && raw[raw.len() - 1] == b'"' && is_own_anthropic_id(&raw[1..raw.len() - 1])
}

/// A tool-call id as anthropic accepts it (`anthropic_id`).
pub fn anthropic_id(call_id: &str) -> String {
    if is_own_anthropic_id(call_id.as_bytes()) {
        return call_id.to_string();
    }
    let encoded = urlsafe_b64encode(call_id.as_bytes());
    format!("{ID_MARK}{}", encoded.trim_end_matches('='))
}

/// A tool-call id as openai accepts it (`openai_id`: at most 40 characters).
pub fn openai_id(call_id: &str) -> String {
    if call_id.chars().count() <= OPENAI_ID_LIMIT {
        return call_id.to_string();
    }
    format!("call_{}", &sha256_hex(call_id.as_bytes())[..32])
}

/// The id an anthropic id stands for (`canonical_id`: `anthropic_id`'s inverse);
/// any other id as it is.
pub fn canonical_id(wire_id: &str) -> String {
    let Some(rest) = wire_id.strip_prefix(ID_MARK) else {
        return wire_id.to_string();
    };
    let padded = format!("{rest}{}", "=".repeat((4 - rest.chars().count() % 4) % 4));
    let decoded = urlsafe_b64decode(&padded).and_then(|bytes| String::from_utf8(bytes).ok());
    match decoded {
        Some(decoded) if anthropic_id(&decoded) == wire_id => decoded,
        _ => wire_id.to_string(),
    }
}

/// Whether `dialect` takes `name` as a tool name as it is (`name_fits`).
pub fn name_fits(name: &str, dialect: &str) -> bool {
    match name_limit(dialect) {
        None => true,
        Some(limit) => !name.is_empty() && name.chars().count() <= limit && name.chars().all(is_name_char),
    }
}

/// A tool name as `dialect` accepts it (`wire_name`).
pub fn wire_name(name: &str, dialect: &str) -> String {
    let Some(limit) = name_limit(dialect).filter(|_| !name_fits(name, dialect)) else {
        return name.to_string();
    };
    let digest = sha256_hex(name.as_bytes());
    let safe: String =
        name.chars().map(|c| if is_name_char(c) { c } else { '_' }).take(limit - HASH_DIGITS - 1).collect();
    format!("{safe}_{}", &digest[..HASH_DIGITS])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(anthropic_id("toolu_01A-b"), "toolu_01A-b");
        assert_eq!(anthropic_id("functions.Bash:0"), "ilid_ZnVuY3Rpb25zLkJhc2g6MA");
        assert_eq!(anthropic_id(""), "ilid_");
        assert_eq!(anthropic_id("ilid_x"), "ilid_aWxpZF94");
        assert_eq!(anthropic_id("é"), "ilid_w6k");
        for id in ["functions.Bash:0", "", "ilid_x", "é", "a b", "toolu_1"] {
            assert_eq!(canonical_id(&anthropic_id(id)), id);
        }
        assert_eq!(canonical_id("ilid_é"), "ilid_é");
        assert_eq!(canonical_id("ilid_Zh"), "ilid_Zh"); // not anthropic_id's output (trailing bits)
        assert_eq!(canonical_id("ilid_a"), "ilid_a");
        assert_eq!(canonical_id("ilid_YWJj"), "ilid_YWJj"); // "abc" fits: anthropic_id keeps it
        assert_eq!(canonical_id("call_1"), "call_1");
        let long = "x".repeat(41);
        assert_eq!(openai_id(&"é".repeat(40)), "é".repeat(40));
        assert_eq!(openai_id(&long), format!("call_{}", &sha256_hex(long.as_bytes())[..32]));
    }

    #[test]
    fn names() {
        assert!(name_fits("get_weather-2", "openai") && name_fits("a.b", "ollama"));
        assert!(!name_fits("", "anthropic") && !name_fits(&"a".repeat(65), "openai") && name_fits(&"a".repeat(128), "anthropic"));
        assert_eq!(wire_name("get_weather", "openai"), "get_weather");
        assert_eq!(wire_name("a.b", "ollama"), "a.b");
        let digest = sha256_hex("mcp.server/tool é".as_bytes());
        assert_eq!(wire_name("mcp.server/tool é", "openai"), format!("mcp_server_tool___{}", &digest[..8]));
        assert_eq!(wire_name("", "anthropic"), format!("_{}", &sha256_hex(b"")[..8]));
        let long = "n".repeat(200);
        let wire = wire_name(&long, "openai");
        assert_eq!((wire.len(), &wire[..55]), (64, &long[..55]));
        assert_eq!(wire_name(&long, "anthropic").len(), 128);
    }
}
