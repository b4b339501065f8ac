//! How a loss is said (`src/interlingua/losses.py`): `lacks`, the subjects and
//! paths of blocks and fields, `INTERNAL_ATTRS`. Every reason a codec records
//! is built here, in the source dialect's words, with Python's exact strings.
//!
//! Block attributes are the canonical form (`(name, compact JSON)` pairs, as
//! `Block::attrs`): a test of an attribute is Python's truth value of the JSON
//! (`null`, `false`, `0`, `""`, `[]`, `{}` are false) and the text of one is
//! its decoded string (any other value: its JSON text). Owner: helper S.
#![forbid(unsafe_code)]

use std::borrow::Cow;

use crate::canonical::{RawJson, Section, TOP_LEVEL_SYSTEM};
use crate::value::Value;

/// Block attributes as `Block::attrs` holds them.
pub type Attrs<'a> = [(Cow<'a, str>, RawJson<'a>)];

/// Block attributes that shape canonical events (where a block goes, how it was
/// written) rather than being a field of any dialect: never reported as a loss.
pub const INTERNAL_ATTRS: &[&str] = &[
    "in_parts", "in_result", "in_messages", "role", "dialect", "where", "empty", "legacy", "key",
    "data_url", "ollama_no_tool_name", "ollama_no_tool_call_id", "ollama_no_arguments",
    "path", "call_type", "ollama_call_type", "ollama_no_type", "ollama_null_parameters", CALL_INDEX,
    THINKING_BLOCK, DATA_URL_TYPE,
];

/// `CALL_INDEX`: a tool call's `index` member (openai `tool_calls[i].index`, ollama
/// `function.index`) that equals the call's 0-based position among its message's calls: it says
/// nothing the order does not, so it is no loss anywhere and only its own dialect writes it back
/// (`decoding::index_at`). Any other index says something: the source's own attribute, a loss.
pub const CALL_INDEX: &str = "call_index";

/// `THINKING_BLOCK`: a reasoning block read from openai's `thinking_blocks` (LiteLLM's signed
/// thinking), which an openai target writes back into them.
pub const THINKING_BLOCK: &str = "in_thinking_blocks";

/// `DATA_URL_TYPE`: an openai file's data URL label that named no type (`images::UNNAMED_TYPES`)
/// where its bytes named one (the block's `media_type`): the label an openai target writes the URL
/// back with.
pub const DATA_URL_TYPE: &str = "data_url_type";

/// An anthropic `tool_result`'s own members and its content's share the result's blocks, so
/// they are named apart: the result's `cache_control` that came after its content began rides
/// on the result's last block as `result_cache_control`; the members of the leading text
/// element (whose text is the result's own block) are `part_<member>`.
pub const RESULT_CACHE_CONTROL: &str = "result_cache_control";
/// An openai message's `cache_control` (LiteLLM's spelling) rides on the message's last block:
/// the breakpoint of that block, apart from the block's (a part's) own.
pub const MESSAGE_CACHE_CONTROL: &str = "message_cache_control";
pub const PART_PREFIX: &str = "part_";
pub const PART_ATTRS: &[&str] = &["part_cache_control", "part_citations"];

/// The name of a leading text element's own member (`PART_PREFIX` + `key`).
pub fn part_attr(key: &'static str) -> &'static str {
    match key {
        "cache_control" => "part_cache_control",
        "citations" => "part_citations",
        other => other, // (a text block has no other member)
    }
}

pub fn is_internal_attr(name: &str) -> bool {
    INTERNAL_ATTRS.contains(&name)
}

/// Words of the pivot a loss reason must not contain (`INTERNAL_WORDS`, sorted):
/// the section names, the internal attributes with a `_`, and "canonical".
pub fn internal_words() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = Section::ALL.iter().map(|s| s.name()).collect();
    words.extend(INTERNAL_ATTRS.iter().filter(|a| a.contains('_')));
    words.extend(PART_ATTRS);
    words.push(RESULT_CACHE_CONTROL);
    words.push(MESSAGE_CACHE_CONTROL);
    words.push("canonical");
    words.sort_unstable();
    words.dedup();
    words
}

/// `NO_PLACE`: what a target lacks when it has no place for a whole block of a section.
pub fn no_place(section: Section) -> Option<&'static str> {
    Some(match section {
        Section::ServerToolResult => "server tools",
        Section::Citations => "citations",
        Section::UserAudio => "audio input",
        Section::UserVideo => "video input",
        Section::UserDocument => "documents",
        Section::AssistantRefusal => "refusal field",
        Section::Unknown => "such content",
        Section::ToolDefinition => "such tool",
        _ => return None,
    })
}

/// The one wording of a loss: `<subject>: <target> has no <what>[; <done>]`.
pub fn lacks(subject: &str, target: &str, what: &str, done: Option<&str>) -> String {
    let mut text = String::with_capacity(lacks_len(subject.len(), target, what, done));
    text.push_str(subject);
    for piece in lack_pieces(target, what, done) {
        text.push_str(piece);
    }
    text
}

/// `: <target> has no <what>[; <done>]` (pieces joined by hand: `format!` costs
/// several times more, and a response records a few of these)
fn lack_pieces<'p>(target: &'p str, what: &'p str, done: Option<&'p str>) -> impl Iterator<Item = &'p str> {
    let done = done.filter(|d| !d.is_empty());
    [": ", target, " has no ", what].into_iter().chain(done.map(|done| ["; ", done]).into_iter().flatten())
}

/// The length of `lacks`'s text, the subject's length given (its buffer is sized once).
pub fn lacks_len(subject: usize, target: &str, what: &str, done: Option<&str>) -> usize {
    subject + lack_pieces(target, what, done).map(str::len).sum::<usize>()
}

/// `lacks` after a subject already in `text` (WTF-8: a path ends in an input key,
/// which may hold a lone surrogate): the rest of the words.
pub fn push_lack_pieces(text: &mut Vec<u8>, target: &str, what: &str, done: Option<&str>) {
    for piece in lack_pieces(target, what, done) {
        text.extend_from_slice(piece.as_bytes());
    }
}

// -- the source dialect's names -------------------------------------------------------

/// `_BLOCK_NAMES[dialect][section]`.
fn block_name(dialect: &str, section: Section) -> Option<&'static str> {
    use Section as S;
    Some(match (dialect, section) {
        ("anthropic", S::SystemInstruction) => "system text block",
        ("anthropic", S::UserText | S::AssistantText) => "text block",
        ("anthropic", S::UserImage) => "image block",
        ("anthropic", S::UserDocument) => "document block",
        ("anthropic", S::AssistantReasoning) => "thinking block",
        ("anthropic", S::ToolCall) => "tool_use block",
        ("anthropic", S::ToolResult) => "tool_result block",
        ("anthropic", S::Citations) => "citations of a text block",
        ("anthropic", S::ServerToolResult) => "server tool block",
        ("anthropic", S::ToolDefinition) => "tool",
        ("anthropic", S::Unknown) => "content block",
        ("openai", S::SystemInstruction) => "system message",
        ("openai", S::UserText) => "user text",
        ("openai", S::AssistantText) => "assistant content",
        ("openai", S::UserImage) => "image_url part",
        ("openai", S::UserDocument) => "file part",
        ("openai", S::UserAudio) => "input_audio part",
        ("openai", S::AssistantReasoning) => "reasoning",
        ("openai", S::AssistantRefusal) => "refusal",
        ("openai", S::ToolCall) => "tool call",
        ("openai", S::ToolResult) => "tool message",
        ("openai", S::ToolDefinition) => "tool",
        ("openai", S::Unknown) => "content part",
        ("ollama", S::SystemInstruction) => "system message",
        ("ollama", S::UserText) => "user content",
        ("ollama", S::AssistantText) => "assistant content",
        ("ollama", S::UserImage) => "image",
        ("ollama", S::AssistantReasoning) => "thinking",
        ("ollama", S::ToolCall) => "tool call",
        ("ollama", S::ToolResult) => "tool message",
        ("ollama", S::ToolDefinition) => "tool",
        ("ollama", S::Unknown) => "message",
        _ => return None,
    })
}

/// The `type` of a block carried raw (anthropic server tool blocks, unknown
/// blocks): the anthropic decoders write it first (`{"type":"server_tool_use",...`).
/// Its bytes as Python decodes them (`errors="replace"`).
pub fn raw_block_type(payload: &[u8]) -> Option<Cow<'_, str>> {
    const HEAD: &[u8] = b"{\"type\":\"";
    let rest = payload.strip_prefix(HEAD)?;
    let end = memchr::memchr(b'"', rest)?;
    Some(String::from_utf8_lossy(&rest[..end]))
}

/// `raw_tool_member(payload, key)`: a string member of a tool carried raw (an anthropic server
/// tool, an openai tool of a type it does not know): its `type`, its `name` (WTF-8); the
/// client's own object, its keys in any order.
pub fn raw_tool_member(payload: &[u8], key: &str) -> Option<Vec<u8>> {
    // (a decoder's compact JSON, read whole and bounded)
    match Value::loads(payload).ok()?.get(key)? {
        Value::Str(text) => Some(text.clone()),
        _ => None,
    }
}

/// An attribute's raw JSON, if set.
fn attr<'x>(attrs: Option<&'x Attrs<'_>>, name: &str) -> Option<&'x [u8]> {
    attrs?.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_ref())
}

/// Python's truth value of a compact JSON value (`1e-400` is `0.0`: false).
pub fn json_truthy(raw: &[u8]) -> bool {
    match raw {
        b"null" | b"false" | b"\"\"" | b"[]" | b"{}" => false,
        b"true" => true,
        _ => Value::loads(raw).map_or(true, |value| value.truthy()),
    }
}

/// `str(value)` of an attribute (compact JSON) as an f-string writes it: a
/// string's text, `None`, `True`, `False`, a number's repr (a container: its
/// JSON, where Python would write its repr).
pub fn py_str(raw: &[u8]) -> String {
    match Value::loads(raw) {
        Ok(Value::Str(text)) => String::from_utf8_lossy(&text).into_owned(),
        Ok(Value::Null) => "None".to_string(),
        Ok(Value::Bool(b)) => (if b { "True" } else { "False" }).to_string(),
        Ok(Value::Int(digits)) => digits,
        Ok(Value::Float(f)) if f.is_infinite() => (if f > 0.0 { "inf" } else { "-inf" }).to_string(),
        Ok(number @ Value::Float(_)) => String::from_utf8_lossy(&number.to_json()).into_owned(),
        _ => String::from_utf8_lossy(raw).into_owned(),
    }
}

/// `KNOWN_ROLES`: the roles each dialect's request decoder knows; a message of any
/// other role is carried raw.
fn known_roles(dialect: &str) -> Option<&'static [&'static str]> {
    match dialect {
        "openai" => Some(&["system", "developer", "user", "assistant", "tool", "function"]),
        "ollama" => Some(&["system", "user", "assistant", "tool"]),
        _ => None,
    }
}

/// The `role` attribute: None without one, `Some(None)` when it is not a string.
fn string_role(attrs: Option<&Attrs<'_>>) -> Option<Option<String>> {
    let raw = attr(attrs, "role")?;
    Some(match Value::loads(raw) {
        Ok(Value::Str(text)) => Some(String::from_utf8_lossy(&text).into_owned()),
        _ => None,
    })
}

/// `unknown_role`: whether a block came from a message whose role `dialect` does not
/// know (the whole message is carried raw).
pub fn unknown_role(dialect: &str, attrs: Option<&Attrs<'_>>) -> bool {
    match (known_roles(dialect), string_role(attrs)) {
        (Some(known), Some(Some(role))) => !known.contains(&role.as_str()),
        _ => false,
    }
}

/// `role_subject`: a message of an unknown role, by its role (`""` is one too).
pub fn role_subject(role: &str) -> String {
    if role.is_empty() { "message with an empty role".to_string() } else { format!("{role} message") }
}

/// `several_subject`: texts of one source message joined into one (ollama's single
/// `content`), by what the source called them.
pub fn several_subject(dialect: &str, section: Section, attrs: Option<&Attrs<'_>>) -> String {
    let in_parts = attr(attrs, "in_parts").is_some_and(json_truthy);
    if dialect == "openai" && section == Section::AssistantRefusal && !in_parts {
        return "refusal beside the content of an assistant message".to_string();
    }
    let role = match section {
        Section::SystemInstruction => Some("system"),
        Section::UserText => Some("user"),
        Section::AssistantText => Some("assistant"),
        Section::ToolResult => Some("tool"),
        _ => None,
    };
    if let (true, true, Some(natural)) = (dialect == "openai", in_parts, role) {
        let role = attr(attrs, "role").filter(|raw| json_truthy(raw)).map_or_else(|| natural.to_string(), py_str);
        return format!("several text parts of {} {role} message", role_article(&role));
    }
    format!("several {}s", block_subject(dialect, section, attrs, b""))
}

/// What `dialect` calls the block a canonical block came from (`block_subject`).
pub fn block_subject(dialect: &str, section: Section, attrs: Option<&Attrs<'_>>, payload: &[u8]) -> String {
    let truthy = |name: &str| attr(attrs, name).is_some_and(json_truthy);
    if dialect == "anthropic" {
        if section == Section::AssistantReasoning && truthy("redacted") {
            return "redacted_thinking block".to_string();
        }
        if matches!(section, Section::ServerToolResult | Section::Unknown) {
            if let Some(kind) = raw_block_type(payload).filter(|k| !k.is_empty()) {
                return format!("{kind} block");
            }
        }
    }
    let role = attr(attrs, "role").filter(|raw| json_truthy(raw));
    if dialect == "openai" {
        if section == Section::SystemInstruction && role == Some(b"\"developer\"") {
            return "developer message".to_string();
        }
        if section == Section::Unknown && !unknown_role(dialect, attrs) {
            if let Some(Some(known)) = string_role(attrs) {
                // a part of an unknown type in a message of a known role
                let kind = raw_block_type(payload).filter(|k| !k.is_empty());
                let part = kind.map_or_else(|| "content part".to_string(), |k| format!("{k} part"));
                return format!("{part} of {} {known} message", role_article(&known));
            }
        }
    }
    if section == Section::Unknown && unknown_role(dialect, attrs) {
        return role_subject(&string_role(attrs).flatten().unwrap_or_default());
    }
    if truthy("in_result") && section != Section::ToolResult {
        return format!(
            "{} in a {}",
            block_subject(dialect, section, None, b""),
            block_subject(dialect, Section::ToolResult, None, b"")
        );
    }
    match block_name(dialect, section) {
        Some(name) => name.to_string(),
        None => format!("{dialect} content"),
    }
}

/// `_FIELD_NAMES`: a block attribute -> the field's name in the source dialect, where it differs.
fn field_name<'k>(dialect: &str, key: &'k str) -> &'k str {
    match (dialect, key) {
        ("openai", "detail") => "image_url.detail",
        ("openai", "filename") => "file.filename",
        ("openai", "file_id") => "file.file_id",
        ("anthropic", "signature") => "signature",
        ("anthropic", "file_id") => "source.file_id",
        ("ollama", "index") => "function.index",
        _ => key,
    }
}

/// `<field> of a <block>` in the source dialect's words (`field_subject`).
pub fn field_subject(dialect: &str, key: &str, section: Section, attrs: Option<&Attrs<'_>>) -> String {
    if key == RESULT_CACHE_CONTROL {
        return field_subject(dialect, "cache_control", Section::ToolResult, None); // (whichever block it rode)
    }
    if key == MESSAGE_CACHE_CONTROL {
        return format!("cache_control of {}", message_subject(section, attrs)); // (on the message's last block)
    }
    if let Some(member) = key.strip_prefix(PART_PREFIX).filter(|_| PART_ATTRS.contains(&key)) {
        // (the leading text of the result's content)
        return format!("{member} of a text block in a {}", block_subject(dialect, Section::ToolResult, None, b""));
    }
    let block = block_subject(dialect, section, attrs, b"");
    let field = match extra_prefix(key) {
        Some(prefix) => {
            // a legacy function_call keeps its function's members in `openai_extra`
            let legacy = attrs.and_then(|a| a.iter().find(|(name, _)| name == "legacy")).is_some_and(|(_, raw)| &raw[..] == b"true");
            extra_fields(if key == "openai_extra" && legacy { "function_call." } else { prefix }, key, attrs)
        }
        None => field_name(dialect, key).to_string(),
    };
    format!("{field} of {} {block}", article(&block))
}

/// `_EXTRA_FIELDS`: the attributes that keep source members as JSON text (`"k":v,...`) ->
/// where they sat.
fn extra_prefix(key: &str) -> Option<&'static str> {
    match key {
        "openai_extra" | "anthropic_extra" | "ollama_call_extra" | "openai_tool_extra" | "ollama_tool_extra" => Some(""),
        "openai_function_extra" | "ollama_extra" => Some("function."),
        "source_extra" => Some("source."),
        _ => None,
    }
}

/// `attr_says_nothing`: a block attribute at its API's default, what its absence says:
/// anthropic's `citations` -- a text block's `[]` (it cites nothing), a document's `{"enabled":
/// false}` (citing is off unless asked for; `{}` and `{"enabled": null}` leave it off too).
/// `{"enabled": true}` and a list of citations say something.
pub fn attr_says_nothing(key: &str, raw: &[u8]) -> bool {
    if key != "citations" && key != "part_citations" {
        return false;
    }
    match Value::loads(raw) {
        Ok(Value::Array(items)) => items.is_empty(),
        // (as Python's dict of them: a name repeated has its last value)
        Ok(Value::Object(members)) => {
            members.iter().all(|(name, _)| name == b"enabled")
                && members.last().is_none_or(|(_, value)| matches!(value, Value::Bool(false) | Value::Null))
        }
        _ => false,
    }
}

/// `MEMBER_DEFAULTS`: a member at its API's default says nothing -- anthropic's `caller:
/// {"type": "direct"}` on a tool_use block (the model called the tool itself, as every call of
/// another dialect is).
fn at_default(name: &[u8], value: &Value) -> bool {
    name == b"caller" && matches!(value.as_object(), Some([(key, Value::Str(kind))]) if key == b"type" && kind == b"direct")
}

/// `extras_said(key, attrs)`: `attrs` with the extras attribute `key` holding only the members
/// that say something (not null, not at their default); `None` when none does (nothing to lose:
/// `caller: null`, as an anthropic SDK's `model_dump()` writes on every tool_use). Any other
/// key: `attrs` as they are.
pub fn extras_said<'x, 'a>(key: &str, attrs: &'x Attrs<'a>) -> Option<Cow<'x, Attrs<'a>>> {
    let unchanged = Some(Cow::Borrowed(attrs));
    let Some(at) = attrs.iter().position(|(name, _)| name == key).filter(|_| extra_prefix(key).is_some()) else {
        return unchanged;
    };
    let Ok(Value::Str(text)) = Value::loads(&attrs[at].1) else { return unchanged };
    let object = [&b"{"[..], &text, b"}"].concat();
    let Ok(Value::Object(members)) = Value::loads(&object) else { return unchanged };
    let mut said = Vec::with_capacity(text.len());
    // (as Python's dict of them: a name once, where it first stands, with its last value)
    let last = |name: &[u8]| members.iter().rev().find(|(n, _)| n == name).map(|(_, value)| value);
    let firsts = members.iter().enumerate().filter(|(i, (name, _))| !members[..*i].iter().any(|(n, _)| n == name));
    for (name, value) in firsts.filter_map(|(_, (name, _))| Some((name, last(name)?))) {
        if value.is_null() || at_default(name, value) {
            continue;
        }
        if !said.is_empty() {
            said.push(b',');
        }
        crate::value::dumps_str(name, &mut said);
        said.push(b':');
        crate::value::dumps(value, &mut said);
    }
    if said.is_empty() {
        return None;
    }
    let mut owned = attrs.to_vec();
    owned[at].1 = Cow::Owned(crate::value::str_json(&said));
    Some(Cow::Owned(owned))
}

/// `_extra_fields`: the source members an extras attribute holds, by their names (`y`,
/// `function.x`), not the attribute's own name, which no dialect has.
fn extra_fields(prefix: &str, key: &str, attrs: Option<&Attrs<'_>>) -> String {
    let text = attrs.and_then(|attrs| attrs.iter().find(|(name, _)| name == key)).map(|(_, raw)| Value::loads(raw));
    let mut names: Vec<String> = Vec::new();
    if let Some(Ok(Value::Str(text))) = text {
        let mut object = Vec::with_capacity(text.len() + 2);
        object.push(b'{');
        object.extend_from_slice(&text);
        object.push(b'}');
        if let Ok(Value::Object(members)) = Value::loads(&object) {
            for (name, _) in members {
                let name = format!("{prefix}{}", String::from_utf8_lossy(&name));
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    if names.is_empty() {
        return "members".to_string();
    }
    names.join(", ")
}

/// `a` / `an` (by the first letter being a vowel, as Python's `noun[:1] in "aeiou"`).
pub fn article(noun: &str) -> &'static str {
    // by the noun's sound: "an image", "a user text", "a url citation"
    if noun.starts_with("us") || noun.starts_with("ur") || noun.starts_with("uni") {
        return "a";
    }
    match noun.bytes().next() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') | None => "an",
        _ => "a",
    }
}

/// `message_subject`: the message a block came from, by its role: "a user message".
pub fn message_subject(section: Section, attrs: Option<&Attrs<'_>>) -> String {
    let role = match string_role(attrs) {
        Some(Some(role)) => role,
        _ => match section {
            Section::SystemInstruction => "system",
            Section::UserText => "user",
            Section::AssistantText | Section::AssistantReasoning | Section::AssistantRefusal | Section::ToolCall => "assistant",
            Section::ToolResult => "tool",
            _ => "user",
        }
        .to_string(),
    };
    format!("{} {role} message", role_article(&role))
}

/// `role_article`: the article of a role's name: "a user message", "an assistant message".
pub fn role_article(role: &str) -> &'static str {
    if role.starts_with('u') { "a" } else { article(role) }
}

/// A source path as the subject of a reason: `$.options.num_ctx` -> `options.num_ctx`.
pub fn path_subject(path: &str) -> &str {
    path.strip_prefix("$.").unwrap_or(path)
}

/// `path_subject` of a WTF-8 path (`Extension.path`).
pub fn path_subject_wtf8(path: &[u8]) -> &[u8] {
    path.strip_prefix(b"$.").unwrap_or(path)
}

// -- where a canonical thing sits in the source ---------------------------------------

/// The source path of the finish reason (`finish_path`); `kind`: "request", "response" or "stream".
pub fn finish_path(dialect: &str, kind: &str, choice: i64) -> String {
    match dialect {
        "openai" if kind != "stream" => format!("$.choices[{choice}].finish_reason"),
        "openai" => "$.choices[0].finish_reason".to_string(),
        "anthropic" if kind == "stream" => "$.delta.stop_reason".to_string(),
        "anthropic" => "$.stop_reason".to_string(),
        _ => "$.done_reason".to_string(),
    }
}

/// The source path of the message (request) or choice (response) a block came from.
pub fn block_path(dialect: &str, kind: &str, message: i64) -> String {
    if kind == "request" {
        return if message == TOP_LEVEL_SYSTEM { "$.system".to_string() } else { format!("$.messages[{message}]") };
    }
    match dialect {
        "openai" if kind == "response" => format!("$.choices[{message}].message"),
        "openai" => "$.choices[0].delta".to_string(),
        "anthropic" if kind == "response" => "$.content".to_string(),
        "anthropic" => "$.content_block".to_string(),
        _ => "$.message".to_string(),
    }
}

/// The members that hold a block's payload: a field of the block is their sibling.
const PAYLOAD_MEMBERS: &[&str] =
    &["text", "thinking", "content", "refusal", "arguments", "input", "reasoning_content", "reasoning", "data", "partial_json"];

/// The path of the block's field `key`, from the path of the block or of its
/// payload (`$.content[0].thinking` -> `$.content[0].signature`).
pub fn field_path(block_path: &str, key: &str) -> String {
    if let Some((head, last)) = block_path.rsplit_once('.') {
        if !head.is_empty() && PAYLOAD_MEMBERS.contains(&last) {
            return format!("{head}.{key}");
        }
    }
    format!("{block_path}.{key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&'static str, &'static str)]) -> Vec<(Cow<'static, str>, RawJson<'static>)> {
        pairs.iter().map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(v.as_bytes()))).collect()
    }

    #[test]
    fn the_wording() {
        assert_eq!(lacks("cache_control of a text block", "openai", "field for it", None),
                   "cache_control of a text block: openai has no field for it");
        assert_eq!(lacks("thinking block", "openai", "reasoning field", Some("option openai_reasoning_field")),
                   "thinking block: openai has no reasoning field; option openai_reasoning_field");
        assert_eq!(lacks("x", "y", "z", Some("")), "x: y has no z");
        assert_eq!(path_subject("$.options.num_ctx"), "options.num_ctx");
        assert_eq!(path_subject("$[\"a b\"]"), "$[\"a b\"]");
        let mut text = path_subject_wtf8(b"$.x\xed\xa0\xbd").to_vec();
        push_lack_pieces(&mut text, "y", "z", None);
        assert_eq!(text, b"x\xed\xa0\xbd: y has no z");
        assert_eq!((article("image"), article("tool"), article("")), ("an", "a", "an"));
    }

    #[test]
    fn messages_of_unknown_roles_and_joined_parts() {
        // (dialect, role attribute, subject of an unknown block, a message of an unknown role)
        let table: &[(&str, &str, &str, bool)] = &[
            ("openai", "\"critic\"", "critic message", true),
            ("openai", "\"\"", "message with an empty role", true),
            ("openai", "\"Developer\"", "Developer message", true),
            ("ollama", "\"critic\"", "critic message", true),
            ("openai", "\"user\"", "foo part of a user message", false),
            ("openai", "\"assistant\"", "foo part of an assistant message", false),
        ];
        for (dialect, role, want, unknown) in table {
            let a = attrs(&[("role", role)]);
            assert_eq!(block_subject(dialect, Section::Unknown, Some(&a), br#"{"type":"foo"}"#), *want);
            assert_eq!(unknown_role(dialect, Some(&a)), *unknown);
        }
        assert!(!unknown_role("anthropic", Some(&attrs(&[("role", "\"critic\"")]))));
        let parts = attrs(&[("in_parts", "true")]);
        let several = |section, a: &Vec<_>| several_subject("openai", section, Some(a));
        assert_eq!(several(Section::SystemInstruction, &parts), "several text parts of a system message");
        assert_eq!(several(Section::UserText, &parts), "several text parts of a user message");
        assert_eq!(several(Section::AssistantText, &parts), "several text parts of an assistant message");
        let developer = attrs(&[("in_parts", "true"), ("role", "\"developer\"")]);
        assert_eq!(several(Section::SystemInstruction, &developer), "several text parts of a developer message");
        assert_eq!(several_subject("openai", Section::AssistantRefusal, None),
                   "refusal beside the content of an assistant message");
        assert_eq!(several_subject("anthropic", Section::SystemInstruction, Some(&parts)), "several system text blocks");
    }

    #[test]
    fn subjects() {
        let none = None;
        assert_eq!(block_subject("anthropic", Section::UserText, none, b""), "text block");
        let redacted = attrs(&[("redacted", "true")]);
        assert_eq!(block_subject("anthropic", Section::AssistantReasoning, Some(&redacted), b""), "redacted_thinking block");
        let not_redacted = attrs(&[("redacted", "false")]);
        assert_eq!(block_subject("anthropic", Section::AssistantReasoning, Some(&not_redacted), b""), "thinking block");
        assert_eq!(block_subject("anthropic", Section::ServerToolResult, none, br#"{"type":"web_search_tool_result","x":1}"#),
                   "web_search_tool_result block");
        assert_eq!(block_subject("anthropic", Section::Unknown, none, br#"{"type":""}"#), "content block");
        let developer = attrs(&[("role", "\"developer\"")]);
        assert_eq!(block_subject("openai", Section::SystemInstruction, Some(&developer), b""), "developer message");
        let role = attrs(&[("role", "\"critic\"")]);
        assert_eq!(block_subject("openai", Section::Unknown, Some(&role), b""), "critic message");
        assert_eq!(block_subject("ollama", Section::Unknown, Some(&role), b""), "critic message");
        let in_result = attrs(&[("in_result", "true")]);
        assert_eq!(block_subject("anthropic", Section::UserImage, Some(&in_result), b""), "image block in a tool_result block");
        assert_eq!(block_subject("ollama", Section::UserDocument, none, b""), "ollama content");
        assert_eq!(block_subject("gemini", Section::UserText, none, b""), "gemini content");
        assert_eq!(field_subject("openai", "detail", Section::UserImage, none), "image_url.detail of an image_url part");
        assert_eq!(field_subject("anthropic", "cache_control", Section::UserText, none), "cache_control of a text block");
        assert_eq!(no_place(Section::UserAudio), Some("audio input"));
        assert_eq!(no_place(Section::UserText), None);
        assert_eq!(raw_block_type(b"{\"type\":\"x\xff\"}").as_deref(), Some("x\u{fffd}"));
        assert_eq!(raw_block_type(b"{\"type\":\"unterminated"), None);
        let strs: Vec<String> = ["null", "true", "1e400", "-0", "\"a\\u00e9\"", "[1,2]"].iter().map(|r| py_str(r.as_bytes())).collect();
        assert_eq!(strs, ["None", "True", "inf", "0", "aé", "[1,2]"]);
    }

    #[test]
    fn truth_of_json() {
        for falsy in ["null", "false", "0", "-0", "0.0", "-0.0", "0e10", "0E-3", "1e-400", "\"\"", "[]", "{}"] {
            assert!(!json_truthy(falsy.as_bytes()), "{falsy}");
        }
        for truthy in ["true", "1", "0.5", "1e-300", "\"a\"", "[0]", "{\"a\":0}", "-2", "10"] {
            assert!(json_truthy(truthy.as_bytes()), "{truthy}");
        }
    }

    #[test]
    fn paths() {
        assert_eq!(finish_path("openai", "response", 2), "$.choices[2].finish_reason");
        assert_eq!(finish_path("openai", "stream", 2), "$.choices[0].finish_reason");
        assert_eq!(finish_path("anthropic", "stream", 0), "$.delta.stop_reason");
        assert_eq!(finish_path("anthropic", "response", 0), "$.stop_reason");
        assert_eq!(finish_path("ollama", "stream", 0), "$.done_reason");
        assert_eq!(block_path("openai", "request", 3), "$.messages[3]");
        assert_eq!(block_path("anthropic", "request", TOP_LEVEL_SYSTEM), "$.system");
        assert_eq!(block_path("openai", "response", 1), "$.choices[1].message");
        assert_eq!(block_path("openai", "stream", 1), "$.choices[0].delta");
        assert_eq!(block_path("anthropic", "stream", 1), "$.content_block");
        assert_eq!(block_path("ollama", "response", 1), "$.message");
        assert_eq!(field_path("$.content[0].thinking", "signature"), "$.content[0].signature");
        assert_eq!(field_path("$.messages[1]", "name"), "$.messages[1].name");
        assert_eq!(field_path(".text", "x"), ".text.x");
        assert!(internal_words().windows(2).all(|w| w[0] < w[1]) && internal_words().contains(&"canonical"));
    }

    #[test]
    fn the_article_follows_the_sound() {
        for (noun, expected) in [("image", "an"), ("assistant text", "an"), ("user text", "a"), ("url citation", "a"),
                                 ("unicode escape", "a"), ("unknown block", "an"), ("tool call", "a"), ("", "an")] {
            assert_eq!(article(noun), expected, "{noun}");
        }
    }
}
