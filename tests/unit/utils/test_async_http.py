"""``async_utils.run`` (one background loop per process) and ``http_utils`` (retries, errors)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from vime.ray.engine_command import find_free_port
from vime.utils import http_utils
from vime.utils.async_utils import get_loop, run
from vime.utils.http_utils import HTTPError, get, post

pytestmark = pytest.mark.unit


async def _add(a, b):
    await asyncio.sleep(0)
    return a + b


def test_run_returns_result_on_one_background_loop():
    assert run(_add(2, 3)) == 5

    async def which_loop():
        return asyncio.get_running_loop()

    assert run(which_loop()) is run(which_loop()) is get_loop()

    async def which_thread():
        return threading.get_ident()

    assert run(which_thread()) != threading.get_ident()


def test_run_propagates_exceptions_and_rejects_non_coroutines():
    async def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        run(boom())
    with pytest.raises(TypeError, match=r"call the async function: run\(fn\(...\)\)"):
        run(_add)  # type: ignore[arg-type]


def test_run_from_the_loop_thread_is_refused():
    async def nested():
        return run(_add(1, 1))

    with pytest.raises(RuntimeError, match="use `await`"):
        run(nested())


def test_run_timeout():
    with pytest.raises(TimeoutError):
        run(asyncio.sleep(5), timeout=0.05)


class _Server:
    """A local threaded HTTP server answering from a script of (status, body) replies (then
    ``200 {}``); a ``None`` reply closes the connection without answering (a kept-alive
    connection the server dropped); ``delays`` maps a path to seconds to wait before answering;
    a ``bytes`` body is sent as it is, any other as JSON.
    ``calls`` records each request as it arrives, ``answered`` each path as its reply is sent."""

    def __init__(self, replies=(), delays=None):
        self.replies = list(replies)
        delays = dict(delays or {})
        self.calls = []
        self.answered = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.calls.append((self.command, self.path,
                                    self.rfile.read(length) if length else b"",
                                    dict(self.headers)))
                time.sleep(delays.get(self.path, 0.0))
                reply = outer.replies.pop(0) if outer.replies else (200, {})
                if reply is None:
                    self.close_connection = True
                    return
                status, body = reply
                outer.answered.append(self.path)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _reply  # noqa: N815 - http.server API

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def test_post_sends_json_and_headers_and_parses_json():
    srv = _Server([(200, {"ok": 1})])
    try:
        out = run(post(srv.url + "/x", {"a": 1}, headers={"X-Session-ID": "s"}))
    finally:
        srv.close()
    assert out == {"ok": 1}
    method, path, body, headers = srv.calls[0]
    assert (method, path, json.loads(body)) == ("POST", "/x", {"a": 1})
    assert headers["X-Session-ID"] == "s"


def test_gateway_errors_are_retried_then_succeed():
    srv = _Server([(503, {"e": 1}), (502, {"e": 2}), (200, {"ok": True})])
    try:
        assert run(get(srv.url + "/y", backoff=0.01)) == {"ok": True}
    finally:
        srv.close()
    assert len(srv.calls) == 3


def test_client_errors_raise_at_once_with_status_and_body():
    srv = _Server([(400, {"detail": "bad max_tokens"})])
    try:
        with pytest.raises(HTTPError, match=r"POST .*/z returned HTTP 400: .*bad max_tokens") as e:
            run(post(srv.url + "/z", {}))
    finally:
        srv.close()
    assert e.value.status == 400 and len(srv.calls) == 1


def test_connection_refused_is_retried_then_named():
    url = f"http://127.0.0.1:{find_free_port()}/health"
    with pytest.raises(HTTPError, match=r"GET .*/health failed after 3 attempt\(s\): "
                                        r"ClientConnectorError") as failed:
        run(get(url, retries=2, backoff=0.01))
    assert failed.value.status is None   # a connection error: the rollout's engine fail-over


def test_a_read_timeout_raises_at_once_naming_the_seconds():
    srv = _Server(delays={"/slow": 3.0})
    try:
        t0 = time.monotonic()
        with pytest.raises(HTTPError, match=r"POST .*/slow timed out \(\w+\) after 0.5 s") as e:
            run(post(srv.url + "/slow", {}, timeout=0.5))
        assert time.monotonic() - t0 < 2.5   # not retried
    finally:
        srv.close()
    assert e.value.status is None and len(srv.calls) == 1


def test_the_pools_read_timeout_applies_between_reads(one_connection_pools):
    http_utils.configure_client(timeout=0.5)
    run(http_utils.aclose_client())
    srv = _Server(delays={"/slow": 3.0})
    try:
        with pytest.raises(HTTPError, match=r"timed out \(\w+\) after 0.5 s"):
            run(post(srv.url + "/slow", {}, pool="generate"))
    finally:
        srv.close()


def test_an_empty_body_is_none_and_a_text_body_is_text():
    srv = _Server([(200, b""), (200, b"plain text"), (200, b'"json text"')])
    try:
        assert run(post(srv.url + "/e", {})) is None
        assert run(post(srv.url + "/t", {})) == "plain text"
        assert run(post(srv.url + "/j", {})) == "json text"
    finally:
        srv.close()


def test_dropped_connection_is_retried_at_once():
    srv = _Server([None, (200, {"ok": True})])
    try:
        t0 = time.monotonic()
        assert run(post(srv.url + "/g", {"a": 1}, backoff=30.0)) == {"ok": True}
        assert time.monotonic() - t0 < 10.0   # no 30 s back-off before the first retry
    finally:
        srv.close()
    assert len(srv.calls) == 2


def test_second_connection_error_backs_off():
    url = f"http://127.0.0.1:{find_free_port()}/health"
    t0 = time.monotonic()
    with pytest.raises(HTTPError, match=r"failed after 3 attempt\(s\)"):
        run(get(url, retries=2, backoff=0.2))
    assert time.monotonic() - t0 >= 0.4   # attempt 2 waited backoff * 2**1


def test_client_is_shared_per_loop():
    async def client_id():
        return id(http_utils.get_client())

    assert run(client_id()) == run(client_id())


@pytest.fixture
def one_connection_pools():
    """Every pool of the loop rebuilt with a single connection; restored afterwards."""
    saved = dict(http_utils._config)
    run(http_utils.aclose_client())
    http_utils.configure_client(max_connections=1)
    yield
    run(http_utils.aclose_client())
    http_utils._config.update(saved)


def _answer_order(srv: _Server, slow_pool: str) -> list[str]:
    """The order the server answered a POST /slow on ``slow_pool`` and a default-pool POST
    /fast sent once /slow holds its connection (the server keeps /slow for its delay)."""

    async def both():
        srv.answered.clear()
        before = len(srv.calls)
        slow = asyncio.ensure_future(post(srv.url + "/slow", {}, pool=slow_pool))
        deadline = time.monotonic() + 60
        while not any(path == "/slow" for _, path, _, _ in srv.calls[before:]):
            assert time.monotonic() < deadline, "POST /slow never reached the server"
            await asyncio.sleep(0.01)   # now /slow holds its pool's only connection
        await post(srv.url + "/fast", {})
        await slow
        return list(srv.answered)

    return run(both())


def test_control_calls_do_not_queue_behind_generate_calls(one_connection_pools):
    # Ordering, not timing: /fast overtakes /slow only when it does not wait for its connection.
    srv = _Server(delays={"/slow": 3.0})
    try:
        assert _answer_order(srv, "generate") == ["/fast", "/slow"]   # separate pools
        assert _answer_order(srv, "default") == ["/slow", "/fast"]    # one pool: it waits
    finally:
        srv.close()
    with pytest.raises(ValueError, match="unknown pool 'other'"):
        run(post(srv.url + "/fast", {}, pool="other"))


def test_a_process_that_used_the_shared_sessions_exits_without_a_warning():
    import subprocess
    import sys

    srv = _Server()
    try:
        code = ("from vime.utils.async_utils import run\n"
                "from vime.utils.http_utils import get, post\n"
                f"print(run(post({srv.url + '/g'!r}, {{}}, pool='generate')), "
                f"run(get({srv.url + '/h'!r})))\n")
        proc = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True,
                              text=True, timeout=60)
    finally:
        srv.close()
    assert proc.returncode == 0 and proc.stdout == "{} {}\n", proc.stderr
    assert "Unclosed" not in proc.stderr, proc.stderr
