"""(Re)generate rpt/response-* -- run by hand: python tests/response/make_scenarios.py

Generate rpt/response-* scenarios: reference bodies -> every dialect via the transcoder.

Each dialect's body is the reference transcoded into it; cross expectations
that differ from the body become `from` blocks. Reviewed by hand; the real-client
tests check the semantics."""
import json, sys
_HERE = __import__("pathlib").Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE.parent.parent / "src"), str(_HERE.parent), str(_HERE)]
from interlingua import Transcoder, Options
import clients as C
from rpt import generate

ROOT = _HERE.parent.parent / "rpt"
D = ("openai", "anthropic", "ollama")

def tc(src, dst, kind, body, opts=None):
    t = Transcoder(src, dst, kind=kind, options=opts)
    out = t.feed(body) + t.close()
    return out, t

def esc(text): return json.dumps(text, ensure_ascii=False)[1:-1]

def subst_back(body: bytes, variables: dict) -> str:
    s = body.decode()
    for name, text in sorted(variables.items(), key=lambda kv: -len(kv[1])):
        s = s.replace(esc(text), "${" + name + "}")
    return s

def write(name, kind, ref_dialect, ref_body, *, variables=None, frames=None, options=None, dialects=D,
          comment="", extra_lines=None, opts_for=("openai",)):
    variables = variables or {}
    folder = ROOT / name
    folder.mkdir(exist_ok=True)
    op = Options(**options) if options else None
    bodies = {}
    from interlingua.framing import split_stream_events
    J = (lambda b: split_stream_events(b)) if kind == "stream" else json.loads
    for d in dialects:
        out, _ = tc(ref_dialect, d, kind, ref_body, op)
        out = tc(d, d, kind, out, op)[0]  # the dialect's own form
        if d == ref_dialect and J(tc(d, d, kind, ref_body, op)[0]) == J(ref_body):
            out = ref_body
        bodies[d] = out
    for d in dialects:
        rt, _ = tc(d, d, kind, bodies[d], op)
        assert J(rt) == J(bodies[d]), (name, d, "round trip not idempotent")
    for d in dialects:
        lines = [f"# {comment}"] if comment else []
        if frames:
            lines.append("frames " + " ".join(frames))
        for vname, spec in (variables_spec.get(name) or []):
            lines.append(f"let {vname} = {spec}")
        if options and d in opts_for:
            lines.append("options " + json.dumps(options))
        lines += ["body", subst_back(bodies[d], variables), "end"]
        for e in dialects:
            if e == d:
                continue
            out, t = tc(e, d, kind, bodies[e], op)
            if out != bodies[d]:
                lines += [f"from {e}", subst_back(out, variables), "end"]
        for line in (extra_lines or {}).get(d, []):
            lines.append(line)
        (folder / f"{d}.{kind}.rpt").write_text("\n".join(lines) + "\n", encoding="utf-8")

variables_spec = {}

def big_vars(name, seed, size, pieces):
    spec, vars_ = [], {}
    if pieces == 1:
        spec.append(("big", f"text {seed} {size}"))
        vars_["big"] = generate("text", seed, size)
    else:
        per = size // pieces
        for i in range(pieces):
            spec.append((f"p{i}", f"text {seed + i} {per}"))
            vars_[f"p{i}"] = generate("text", seed + i, per)
    variables_spec[name] = spec
    return vars_

# 1. text + tool call + usage
for kind in ("stream", "response"):
    write("response-text-tool", kind, "anthropic", C.SOURCES["anthropic", kind](),
          comment="text with escapes and non-ASCII, one tool call, finish tool_use, usage")

# 2. large texts: one string in a body; the same text as many deltas in a stream
for size, label, frames in ((10240, "10k", ["1", "7", "64", "whole"]), (102400, "100k", ["7", "4096", "whole"])):
    name = f"response-large-{label}"
    v = big_vars(name + "-r", 7, size, 1)
    variables_spec[name] = variables_spec.pop(name + "-r")
    write(name, "response", "openai", C.openai_response(text=v["big"]), variables=v, frames=frames,
          comment=f"one {label} text in one JSON string")
    name_s = name
    saved = variables_spec[name]
    pieces = 20 if size < 50000 else 100
    v2 = big_vars(name + "-s", 11, size, pieces)
    parts = [v2[f"p{i}"] for i in range(pieces)]
    # a stream whose deltas are exactly the pieces
    body = C.anthropic_stream(text="".join(parts), piece=10**9)
    # rebuild with one delta per piece
    start = body.index(b"event: content_block_delta")
    end = body.index(b"event: content_block_stop")
    deltas = "".join(C._sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                            "delta": {"type": "text_delta", "text": p}}) for p in parts).encode()
    body = body[:start] + deltas + body[end:]
    variables_spec[name] = variables_spec.pop(name + "-s")
    write(name, "stream", "anthropic", body, variables=v2, frames=frames,
          comment=f"the same size of text streamed as {pieces} deltas")

# 3. reasoning with a signature
sig = "EqQBCkYIBRgCKkA2c2lnbmF0dXJlK2J5dGVzLz0="
reasoning_stream = (
    C._sse("message_start", {"type": "message_start", "message": {"id": "msg_r", "type": "message", "role": "assistant",
           "model": "claude-x", "content": [], "stop_reason": None, "stop_sequence": None,
           "usage": {"input_tokens": 5, "output_tokens": 1}}})
    + C._sse("content_block_start", {"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    + C._sse("content_block_delta", {"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": "Let me think \u00e9"}})
    + C._sse("content_block_delta", {"type": "content_block_delta", "index": 0,
             "delta": {"type": "signature_delta", "signature": sig}})
    + C._sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    + C._sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})
    + C._sse("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "42"}})
    + C._sse("content_block_stop", {"type": "content_block_stop", "index": 1})
    + C._sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 9}})
    + C._sse("message_stop", {"type": "message_stop"})).encode()
write("response-reasoning", "stream", "anthropic", reasoning_stream, options={"openai_reasoning_field": "reasoning_content"},
      comment="thinking (signature passes to anthropic byte for byte) then text; openai carries it in reasoning_content")
reasoning_body = json.dumps({"id": "msg_r", "type": "message", "role": "assistant", "model": "claude-x", "content": [
    {"type": "thinking", "thinking": "Let me think \u00e9", "signature": sig}, {"type": "text", "text": "42"}],
    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 9}}).encode()
write("response-reasoning", "response", "anthropic", reasoning_body, options={"openai_reasoning_field": "reasoning_content"},
      comment="thinking then text in one message body")

# 4. finish reasons (the table in interlingua/lifecycle.py), one scenario each
def simple_openai_stream(finish, usage=True, text="ok"):
    h = {"id": "chatcmpl-f", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
    ev = [dict(h, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]),
          dict(h, choices=[{"index": 0, "delta": {"content": text}, "finish_reason": None}]),
          dict(h, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])]
    if usage:
        ev.append(dict(h, choices=[], usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}))
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in ev) + "data: [DONE]\n\n").encode()

def simple_openai_body(finish, usage=True, text="ok"):
    b = {"id": "chatcmpl-f", "object": "chat.completion", "created": 1, "model": "gpt-x",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}]}
    if usage:
        b["usage"] = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    return json.dumps(b).encode()

for reason in ("stop", "length", "content_filter"):
    for kind, fn in (("stream", simple_openai_stream), ("response", simple_openai_body)):
        write(f"response-finish-{reason.replace('_', '-')}", kind, "openai", fn(reason),
              comment=f"openai finish_reason {reason} (table: interlingua/lifecycle.py)")

def simple_anthropic_stream(reason, seq=None):
    return (C._sse("message_start", {"type": "message_start", "message": {"id": "msg_f", "type": "message", "role": "assistant",
            "model": "claude-x", "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 0}}})
        + C._sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        + C._sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}})
        + C._sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        + C._sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": seq},
                 "usage": {"input_tokens": 3, "output_tokens": 2}})
        + C._sse("message_stop", {"type": "message_stop"})).encode()

for reason, seq in (("stop_sequence", "END"), ("pause_turn", None), ("refusal", None), ("max_tokens", None)):
    write(f"response-finish-{reason.replace('_', '-')}", "stream", "anthropic", simple_anthropic_stream(reason, seq),
          comment=f"anthropic stop_reason {reason}",
          extra_lines={"openai": ["loss $.finish_reason"]} if reason == "pause_turn" and False else None)

# 5. usage: absent stays absent; cache read/write conversions
write("response-usage-absent", "stream", "openai", simple_openai_stream("stop", usage=False),
      comment="no usage chunk: openai and ollama write no counts; anthropic writes its schema's 0 placeholders")
write("response-usage-absent", "response", "openai", simple_openai_body("stop", usage=False),
      comment="no usage member")
cache_stream = (C._sse("message_start", {"type": "message_start", "message": {"id": "msg_c", "type": "message", "role": "assistant",
    "model": "claude-x", "content": [], "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 0}}})
    + C._sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    + C._sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "cached"}})
    + C._sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    + C._sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100, "output_tokens": 4}})
    + C._sse("message_stop", {"type": "message_stop"})).encode()
write("response-usage-cache", "stream", "anthropic", cache_stream, dialects=("openai", "anthropic"),
      comment="anthropic input_tokens 10 + cache read 100 = openai prompt_tokens 110, cached_tokens 100")

# 6. interleaved openai tool calls -> sequential anthropic blocks
h = {"id": "chatcmpl-i", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
def tcd(i, **kw): return dict(h, choices=[{"index": 0, "delta": {"tool_calls": [dict(index=i, **kw)]}, "finish_reason": None}])
ev = [dict(h, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]),
      tcd(0, id="call_a", type="function", function={"name": "f", "arguments": '{"x":'}),
      tcd(1, id="call_b", type="function", function={"name": "g", "arguments": '{"y":'}),
      tcd(0, function={"arguments": "1}"}), tcd(1, function={"arguments": "2}"}),
      dict(h, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
      dict(h, choices=[], usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})]
inter = ("".join(f"data: {json.dumps(e, separators=(',', ':'))}\n\n" for e in ev) + "data: [DONE]\n\n").encode()
# the openai round trip of interleaved calls is sequential: the script holds the sequential form
write("response-tools-interleaved", "stream", "openai", inter,
      comment="openai tool-call deltas interleaved by index: held (openai:interleaved-tool-calls), written one block after another")

# 7. error mid-stream
err_stream = C.anthropic_stream()
cut = err_stream.index(b"event: content_block_stop")
err_stream = err_stream[:cut] + C._sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
write("response-error-midstream", "stream", "anthropic", err_stream,
      comment="an error event mid-stream becomes the target's error event (openai: error chunk then [DONE]), never a truncated success")

# 8. n > 1 choices
h2 = {"id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
ev = [dict(h2, choices=[{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]) for i in (0, 1)]
ev += [dict(h2, choices=[{"index": 0, "delta": {"content": "zero"}, "finish_reason": None}]),
       dict(h2, choices=[{"index": 1, "delta": {"content": "one"}, "finish_reason": None}]),
       dict(h2, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
       dict(h2, choices=[{"index": 1, "delta": {}, "finish_reason": "stop"}])]
nbody = ("".join(f"data: {json.dumps(e, separators=(',', ':'))}\n\n" for e in ev) + "data: [DONE]\n\n").encode()
write("response-choices-n2", "stream", "openai", nbody,
      comment="n=2: blocks carry the choice index; anthropic and ollama carry choice 0 and record a loss",
      )

# 9. ollama tool calls get generated ids (lifecycle: response ids and times)
write("response-ollama-tool-ids", "stream", "ollama", C.ollama_stream(),
      comment="ollama tool calls have no id: openai/anthropic get call_ + 24 hex of the response id and the index (unique across turns)")
write("response-ollama-tool-ids", "response", "ollama", C.ollama_response(),
      comment="ollama tool calls have no id: openai/anthropic get call_ + 24 hex of the response id and the index (unique across turns)")
print("ok")
