"""The litellm adapter against a real local server that misbehaves: our retry loop, its limits,
and the errors a user can act on. Backoff sleeps are recorded, not slept."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dsstar_cli.model import RETRY_ATTEMPTS, LiteLLMModel, ModelConfigError, ModelUnreachable

OK_BODY = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}],
           "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}


class Faulty:
    """Answers each request with the next (status, headers, body) in `plan`; the last one repeats."""

    def __init__(self, plan):
        self.plan, self.count = list(plan), 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, body = outer.plan[min(outer.count, len(outer.plan) - 1)]
                outer.count += 1
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for key, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def faulty():
    servers = []

    def make(plan):
        servers.append(Faulty(plan))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def model(url, sleeps):
    return LiteLLMModel("openai/m", api_base=url, timeout_s=5, sleep=sleeps.append)


def test_429_then_500_then_success(faulty):
    server = faulty([(429, {"retry-after": "7"}, {"error": {"message": "slow down"}}),
                     (500, {}, {"error": {"message": "oops"}}),
                     (200, {}, OK_BODY)])
    sleeps = []
    reply = model(server.url, sleeps).complete([{"role": "user", "content": "hi"}], role="planner")
    assert reply.text == "fine" and (reply.input_tokens, reply.output_tokens) == (7, 1)
    assert server.count == 3
    assert sleeps[0] == 7.0  # Retry-After honoured.
    assert 0 < sleeps[1] <= 2.0


def test_persistent_5xx_gives_up_after_the_retry_limit(faulty):
    server = faulty([(503, {}, {"error": {"message": "down"}})])
    sleeps = []
    with pytest.raises(ModelUnreachable):
        model(server.url, sleeps).complete([{"role": "user", "content": "hi"}], role="coder")
    assert server.count == RETRY_ATTEMPTS and len(sleeps) == RETRY_ATTEMPTS - 1


def test_authentication_failure_is_not_retried(faulty):
    server = faulty([(401, {}, {"error": {"message": "Incorrect API key provided"}})])
    with pytest.raises(ModelConfigError, match="credentials"):
        model(server.url, []).complete([{"role": "user", "content": "hi"}], role="coder")
    assert server.count == 1


def test_unknown_model_is_not_retried(faulty):
    server = faulty([(404, {}, {"error": {"message": "model not found"}})])
    with pytest.raises(ModelConfigError, match="not found"):
        model(server.url, []).complete([{"role": "user", "content": "hi"}], role="coder")
    assert server.count == 1
