"""Anthropic-only blocks: server tool use/results and citations pass through anthropic,
and are recorded losses elsewhere."""

from __future__ import annotations

import json

from interlingua import Decoder, Transcoder
from interlingua.canonical import Block, Section
from rpt import split_stream_events

from clients import _sse

CITATION = {"type": "web_search_result_location", "url": "https://e.x/a", "title": "A",
            "encrypted_index": "Eo8B", "cited_text": "sky is blue"}
RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
          "content": [{"type": "web_search_result", "url": "https://e.x/a", "title": "A",
                       "encrypted_content": "EqgB", "page_age": None}]}
BODY = json.dumps({
    "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-x",
    "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sky"}},
        RESULT,
        {"type": "text", "text": "It is blue.", "citations": [CITATION]},
    ],
    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 6},
}).encode()


def run(source, target, kind, body, size=5):
    t = Transcoder(source, target, kind=kind)
    return b"".join(t.feed(body[i:i + size]) for i in range(0, len(body), size)) + t.close(), t


def test_server_blocks_and_citations_round_trip_in_a_body():
    out, t = run("anthropic", "anthropic", "response", BODY)
    assert json.loads(out) == json.loads(BODY) and not t.losses
    blocks = [e for e in Decoder("anthropic", kind="response").feed(BODY) if type(e) is Block]
    sections = [b.section for b in blocks if b.init]
    assert sections == [Section.SERVER_TOOL_RESULT, Section.SERVER_TOOL_RESULT, Section.ASSISTANT_TEXT,
                        Section.CITATIONS]


def test_server_blocks_are_losses_for_openai():
    out, t = run("anthropic", "openai", "response", BODY)
    message = json.loads(out)["choices"][0]["message"]
    assert message["content"] == "It is blue."
    reasons = " ".join(loss.reason for loss in t.losses)
    assert "server_tool_use block: openai has no server tools" in reasons
    assert "web_search_tool_result block: openai has no server tools" in reasons
    # the citation is an annotation over its text (rpt fidelity-citations); what openai lacks is recorded
    assert message["annotations"] == [{"type": "url_citation", "url_citation": {
        "url": "https://e.x/a", "title": "A", "start_index": 0, "end_index": len("It is blue.")}}]
    assert "cited_text of a web search citation: openai has no field for it" in reasons


def test_streamed_server_tool_input_and_citations_delta():
    stream = (
        _sse("message_start", {"type": "message_start", "message": {
            "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}})
        + _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}})
        + _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": "{\"query\": \"s"}})
        + _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": "ky\"}"}})
        + _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        + _sse("content_block_start", {"type": "content_block_start", "index": 1, "content_block": RESULT})
        + _sse("content_block_stop", {"type": "content_block_stop", "index": 1})
        + _sse("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {
            "type": "text", "text": "", "citations": []}})
        + _sse("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {
            "type": "citations_delta", "citation": CITATION}})
        + _sse("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {
            "type": "text_delta", "text": "It is blue."}})
        + _sse("content_block_stop", {"type": "content_block_stop", "index": 2})
        + _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                     "stop_sequence": None},
                                 "usage": {"output_tokens": 6}})
        + _sse("message_stop", {"type": "message_stop"})).encode()
    out, t = run("anthropic", "anthropic", "stream", stream)
    assert not t.losses
    assert split_stream_events(out) == split_stream_events(stream)  # same dialect: frame for frame
    # the canonical server-tool block has the streamed input gathered into the block
    events = Decoder("anthropic", kind="stream").feed(stream)
    server = b"".join(e.payload for e in events if type(e) is Block and e.section is Section.SERVER_TOOL_RESULT)
    first = json.loads(server[:server.index(b"}{") + 1])
    assert first == {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sky"}}
    assert json.loads(server[server.index(b"}{") + 1:]) == RESULT
    # the official client accumulates the same message as from the source
    import anthropic
    import httpx2

    def final(body):
        transport = httpx2.MockTransport(lambda r: httpx2.Response(
            200, content=body, headers={"content-type": "text/event-stream"}))
        client = anthropic.Anthropic(api_key="k", base_url="http://a.test",
                                     http_client=httpx2.Client(transport=transport), max_retries=0)
        with client.messages.stream(model="m", max_tokens=9, messages=[{"role": "user", "content": "q"}]) as s:
            return s.get_final_message().model_dump()

    assert final(out)["content"] == final(stream)["content"]
