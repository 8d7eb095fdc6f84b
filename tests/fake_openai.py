"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests: litellm talks to it over HTTP,
so the production model path runs end to end with no network and no real model.

    with FakeOpenAIServer(responder) as server:
        run dsstar with --model openai/fake --api-base server.base_url

`responder(role, messages) -> str` writes each reply; `role_of` reads the role from our prompts.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

ROLE_LINE = re.compile(r"You are the (\w+) of dsstar")
Responder = Callable[[str, list], str]


def as_text(messages: list[dict]) -> list[dict]:
    """The messages with each content as text: a message of text and image parts keeps its text."""
    return [{**m, "content": " ".join(part.get("text", "") for part in m["content"])}
            if isinstance(m["content"], list) else m for m in messages]


def role_of(messages: list[dict]) -> str:
    """The role named by the first message that names one (the system message holds the shared
    context; the role's instructions open the first user message)."""
    for message in as_text(messages):  # Text and image parts, for a model that accepts images.
        match = ROLE_LINE.search(message["content"])
        if match:
            return match.group(1).lower()
    return "unknown"


CACHE_MIN_TOKENS = 1024  # Like OpenAI: a prefix shorter than this is never cached.


def cached_tokens(prompt: str, earlier: list[str]) -> int:
    """Tokens of `prompt` an OpenAI-style prefix cache would serve: its longest common prefix with
    an earlier prompt, in whole 128-token blocks past the first 1,024 tokens (characters / 4)."""
    best = 0
    for other in earlier:
        n = 0
        limit = min(len(prompt), len(other))
        while n < limit and prompt[n] == other[n]:
            n += 1
        best = max(best, n)
    tokens = best // 4
    return 0 if tokens < CACHE_MIN_TOKENS else CACHE_MIN_TOKENS + (tokens - CACHE_MIN_TOKENS) // 128 * 128


FAULTS = ("ok", "429", "500", "nonjson", "empty", "cut", "hang", "drip", "drip_headers", "slow", "usage_str",
          "usage_text")
DRIP_INTERVAL_S = 2.0
SLOW_PIECE_S = 0.3


class FakeOpenAIServer:
    """`faults`: what to do instead of answering, one per request, in order (then answer normally):
    "ok" (answer normally, so the faults after it hit a run midway), "429" (with Retry-After: 1),
    "500", "nonjson" (a 200 whose body is HTML), "empty" (no choices), "cut" (the connection closes
    halfway through the body), "hang" (never answers), "drip" (a 200 whose body comes one byte every
    DRIP_INTERVAL_S, forever), "drip_headers" (the status line and headers come that way too),
    "slow" (a proper answer sent in 8 pieces, one every SLOW_PIECE_S: each read gets data soon, the
    whole takes 2.4 s), "usage_str" (a proper answer whose `usage` is the string "x"), "usage_text"
    (a proper answer whose `usage.prompt_tokens` is "many").
    `context_limit` (characters): longer prompts get the provider's context-length error.
    `require_key`: `GET /models` without an `Authorization` header gets 401, as from a server that
    needs a key (without it the server lists its one model to anyone)."""

    def __init__(self, responder: Responder, delay_s: float = 0.0, faults: list[str] | None = None,
                 context_limit: int | None = None, require_key: bool = False):
        self.responder = responder
        self.require_key = require_key
        self.delay_s = delay_s
        self.faults = list(faults or [])
        self.context_limit = context_limit
        self.requests: list[dict] = []
        self.prompts: list[str] = []  # Every prompt so far, for the simulated prefix cache.
        self.busy_s: list[float] = []  # Seconds each request spent in the server: the model's latency.
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True  # A hanging handler must not block shutdown.
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def roles(self) -> list[str]:
        return [role_of(r["messages"]) for r in self.requests]

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # Keep test output clean.
                pass

            def do_GET(self) -> None:
                if not self.path.rstrip("/").endswith("/models"):
                    return self._send(404, b'{"error": {"message": "not found"}}')
                if server.require_key and not self.headers.get("authorization"):
                    return self._send(401, json.dumps({"error": {"message": "You didn't provide an API key.",
                                                                 "type": "invalid_request_error"}}).encode())
                self._send(200, json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode())

            def do_POST(self) -> None:
                started = time.perf_counter()
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                server.requests.append({**body, "authorization": self.headers.get("authorization")})
                fault = server.faults.pop(0) if server.faults else "ok"
                if fault != "ok":
                    return self._fault(fault, body)
                texts = as_text(body["messages"])  # Image parts are not counted.
                prompt_chars = sum(len(m["content"]) for m in texts)
                if server.context_limit and prompt_chars > server.context_limit:
                    return self._send(400, json.dumps({"error": {
                        "message": f"This model's maximum context length is {server.context_limit // 4} tokens. "
                                   f"However, your messages resulted in {prompt_chars // 4} tokens.",
                        "type": "invalid_request_error", "code": "context_length_exceeded"}}).encode())
                if server.delay_s:
                    time.sleep(server.delay_s)
                text = server.responder(role_of(body["messages"]), body["messages"])
                prompt_tokens = prompt_chars // 4
                prompt = "".join(m["content"] for m in texts)
                cached = cached_tokens(prompt, server.prompts)
                server.prompts.append(prompt)
                payload = {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text) // 4,
                              "total_tokens": prompt_tokens + len(text) // 4,
                              "prompt_tokens_details": {"cached_tokens": cached}},
                }
                self._send(200, json.dumps(payload).encode())
                server.busy_s.append(time.perf_counter() - started)

            def _send(self, status: int, data: bytes, headers: dict | None = None, cut: bool = False) -> None:
                self.send_response(status)
                for key, value in {"content-type": "application/json", **(headers or {})}.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2] if cut else data)
                if cut:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # Mid-body: the client sees a truncated response.

            def _fault(self, kind: str, body: dict) -> None:
                ok = {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                      "choices": [{"index": 0, "finish_reason": "stop",
                                   "message": {"role": "assistant", "content": "never seen"}}],
                      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                if kind == "429":
                    self._send(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}', {"retry-after": "1"})
                elif kind == "500":
                    self._send(500, b'{"error": {"message": "internal error", "type": "server_error"}}')
                elif kind == "nonjson":
                    self._send(200, b"<html>502 Bad Gateway</html>", {"content-type": "text/html"})
                elif kind == "empty":
                    self._send(200, json.dumps({**ok, "choices": []}).encode())
                elif kind == "cut":
                    self._send(200, json.dumps(ok).encode(), cut=True)
                elif kind == "hang":
                    time.sleep(3600)
                elif kind == "slow":
                    self._slow(json.dumps({**ok, "choices": self._answer(body)}).encode())
                elif kind in ("drip", "drip_headers"):
                    self._drip(kind == "drip_headers")
                elif kind == "usage_str":
                    self._send(200, json.dumps({**ok, "choices": self._answer(body), "usage": "x"}).encode())
                elif kind == "usage_text":
                    self._send(200, json.dumps({**ok, "choices": self._answer(body),
                                                "usage": {"prompt_tokens": "many", "completion_tokens": 1}}).encode())

            def _answer(self, body: dict) -> list[dict]:
                """The choices a proper reply to this request would have."""
                text = server.responder(role_of(body["messages"]), body["messages"])
                return [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]

            def _slow(self, data: bytes, pieces: int = 8) -> None:
                """A proper answer in `pieces`, one every SLOW_PIECE_S: slow, but never silent for long."""
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                size = -(-len(data) // pieces)
                try:
                    for start in range(0, len(data), size):
                        time.sleep(SLOW_PIECE_S)
                        self.wfile.write(data[start:start + size])
                        self.wfile.flush()
                except OSError:
                    return
                server.busy_s.append(pieces * SLOW_PIECE_S)

            def _drip(self, headers_too: bool) -> None:
                """One byte every DRIP_INTERVAL_S, forever: each read gets data, so no per-read timeout fires."""
                head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n"
                stream = (head if headers_too else b"") + b"{" + b" " * 10**6
                if not headers_too:
                    self.wfile.write(head)
                try:
                    for i in range(len(stream)):
                        self.wfile.write(stream[i:i + 1])
                        self.wfile.flush()
                        time.sleep(DRIP_INTERVAL_S)
                except OSError:  # The client gave up: what it should do.
                    pass

        return Handler


if __name__ == "__main__":  # A demo server: python tests/fake_openai.py [PORT] [DELAY_S]
    import sys

    from sample_agent import respond

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    fake = FakeOpenAIServer(respond, delay_s=float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
    fake._server.server_close()
    fake._server = ThreadingHTTPServer(("127.0.0.1", port), fake._handler())
    print(f"serving the sample agent at http://127.0.0.1:{port}/v1", flush=True)
    fake._server.serve_forever()
