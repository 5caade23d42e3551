"""The agent endpoint's session keys over a real socket (vime.agent.server): the path key and
the bearer key must agree; an unknown, closed or conflicting key is a 401 and runs nothing."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from vime.agent.server import EndpointServer, create_app
from vime.agent.sessions import SessionStore

pytestmark = pytest.mark.unit


class _Calls:
    """Stands in for the engine side: records which session each call ran for."""

    def __init__(self) -> None:
        self.args = SimpleNamespace(hf_checkpoint="tiny")
        self.ran: list[str] = []

    async def chat(self, session: Any, body: Any, params: Any) -> Any:
        self.ran.append(session.key)
        return SimpleNamespace(body={"object": "chat.completion", "choices": []},
                               record=None, commit=lambda: True)


def _statuses(cases: list[tuple[str, str | None]]) -> tuple[list[int], list[str], str, str]:
    async def go() -> tuple[list[int], list[str], str, str]:
        calls, store = _Calls(), SessionStore()
        mine, other = store.open(index=0), store.open(index=1)
        closed = store.open(index=2)
        store.close(closed.key)
        keys = {"MINE": mine.key, "OTHER": other.key, "CLOSED": closed.key}
        server = EndpointServer(create_app(calls, store, lambda s: {}))  # type: ignore[arg-type]
        await server.start()
        out = []
        try:
            async with httpx.AsyncClient() as client:
                for path_key, bearer in cases:
                    url = (f"http://127.0.0.1:{server.port}/sessions/{keys[path_key]}/v1"
                           if path_key != "-" else f"http://127.0.0.1:{server.port}/v1")
                    headers = {"Authorization": f"Bearer {keys[bearer]}"} if bearer else {}
                    reply = await client.post(f"{url}/chat/completions", headers=headers,
                                              json={"messages": []})
                    out.append(reply.status_code)
        finally:
            await server.stop()
        return out, calls.ran, mine.key, other.key
    return asyncio.run(go())


# (path key, bearer key, status): "-" is the root route, None no Authorization header
CASES = [("MINE", None, 200), ("MINE", "MINE", 200), ("-", "MINE", 200),
         ("MINE", "OTHER", 401), ("OTHER", "MINE", 401), ("CLOSED", None, 401),
         ("CLOSED", "CLOSED", 401), ("-", None, 401), ("-", "CLOSED", 401)]


def test_a_path_key_that_disagrees_with_the_bearer_key_is_a_401() -> None:
    statuses, ran, mine, other = _statuses([(p, b) for p, b, _ in CASES])
    assert statuses == [s for _, _, s in CASES]
    assert ran == [mine, mine, mine]   # the refused requests ran nothing, for no session


def test_the_endpoint_listens_on_127_0_0_1_only() -> None:
    """Bound to 127.0.0.1, not every interface: the listening socket's address is 127.0.0.1
    and another address of this host (127.0.0.2, loopback on Linux, which a 0.0.0.0 bind
    would answer) refuses the connection."""
    import socket

    async def go() -> tuple[list[tuple[str, int]], bool, bool]:
        server = EndpointServer(create_app(_Calls(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
        await server.start()
        try:
            names = [s.getsockname()[:2] for srv in server._server.servers for s in srv.sockets]

            def reaches(host: str) -> bool:
                try:
                    socket.create_connection((host, server.port), timeout=2).close()
                except OSError:
                    return False
                return True
            return names, await asyncio.to_thread(reaches, "127.0.0.1"), \
                await asyncio.to_thread(reaches, "127.0.0.2")
        finally:
            await server.stop()

    names, local, other = asyncio.run(go())
    assert names and all(host == "127.0.0.1" for host, _ in names), names
    assert local and not other


# ---- the routes, bodies and answers of create_app, over the same real socket -------------------

CHAT = {"id": "c1", "object": "chat.completion", "created": 1, "model": "tiny",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}
TEXT = {"id": "t1", "object": "text_completion", "created": 1, "model": "tiny",
        "choices": [{"index": 0, "text": "4", "finish_reason": "stop"}]}


class _Answer:
    def __init__(self, body: dict[str, Any], committed: list[str], kept: bool = True,
                 record: bool = True) -> None:
        self.body, self._committed, self._kept = body, committed, kept
        self.record = (lambda: kept) if record else None

    def commit(self) -> bool:
        self._committed.append(self.body["object"])
        return self._kept if self.record is not None else False


class _Server:
    """A fake engine side: ``behaviour(kind, session, body, params)`` returns the answer."""

    def __init__(self, behaviour: Any = None) -> None:
        self.args = SimpleNamespace(hf_checkpoint="/models/tiny")
        self.seen: list[tuple[str, str, Any, Any]] = []
        self.committed: list[str] = []
        self.behaviour = behaviour

    async def _serve(self, kind: str, session: Any, body: Any, params: Any) -> Any:
        self.seen.append((kind, session.key, body, params))
        if self.behaviour is not None:
            return await self.behaviour(self, kind, session, body, params)
        return _Answer(CHAT if kind == "chat" else TEXT, self.committed)

    async def chat(self, session: Any, body: Any, params: Any) -> Any:
        return await self._serve("chat", session, body, params)

    async def completion(self, session: Any, body: Any, params: Any) -> Any:
        return await self._serve("completion", session, body, params)


def _talk(calls: _Server, requests: Any) -> tuple[list[Any], SessionStore, Any]:
    """Serve ``calls`` and run ``await requests(client, url_of, session)``; its result back."""
    async def go() -> tuple[list[Any], SessionStore, Any]:
        store = SessionStore()
        session = store.open(index=4)
        app = create_app(calls, store, lambda s: {"for": s.key})  # type: ignore[arg-type]
        server = EndpointServer(app)
        await server.start()
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                out = await requests(client, server, session)
        finally:
            await server.stop()
        return out, store, session
    return asyncio.run(go())


def test_each_route_serves_its_kind_with_the_sessions_run_params() -> None:
    async def requests(client: Any, server: Any, s: Any) -> list[Any]:
        root = f"http://127.0.0.1:{server.port}/v1"
        auth = {"Authorization": f"Bearer {s.key}"}
        replies = [await client.post(f"{server.base_url(s.key)}/chat/completions", json={"a": 1}),
                   await client.post(f"{server.base_url(s.key)}/completions", json={"b": 2}),
                   await client.post(f"{root}/chat/completions", json={"c": 3}, headers=auth),
                   await client.post(f"{root}/completions", json={"d": 4}, headers=auth)]
        return [(r.status_code, r.json()) for r in replies]

    calls = _Server()
    out, _, s = _talk(calls, requests)
    assert out == [(200, CHAT), (200, TEXT), (200, CHAT), (200, TEXT)]
    assert calls.seen == [("chat", s.key, {"a": 1}, {"for": s.key}),
                          ("completion", s.key, {"b": 2}, {"for": s.key}),
                          ("chat", s.key, {"c": 3}, {"for": s.key}),
                          ("completion", s.key, {"d": 4}, {"for": s.key})]
    assert calls.committed == ["chat.completion", "text_completion"] * 2


def test_models_and_health() -> None:
    async def requests(client: Any, server: Any, s: Any) -> list[Any]:
        root = f"http://127.0.0.1:{server.port}"
        return [(await client.get(url)).json() for url in (
            f"{root}/v1/models", f"{server.base_url(s.key)}/models", f"{root}/health")]

    models, health = _talk(_Server(), requests)[0][:2], _talk(_Server(), requests)[0][2]
    assert models == [{"object": "list", "data": [{"id": "/models/tiny", "object": "model",
                                                    "owned_by": "vime"}]}] * 2
    assert health == {"status": "ok", "open_sessions": 1}
    assert EndpointServer(None, port=0).base_url("k") == "http://127.0.0.1:0/sessions/k/v1"


def test_bad_bodies_and_keys_get_openais_error_object() -> None:
    async def requests(client: Any, server: Any, s: Any) -> list[Any]:
        url = f"{server.base_url(s.key)}/chat/completions"
        root = f"http://127.0.0.1:{server.port}/v1/chat/completions"
        replies = [
            await client.post(url, content=b"{not json", headers={"content-type": "x"}),
            await client.post(url, json=[1, 2]),
            await client.post(root, json={}),
            await client.post(root, json={}, headers={"Authorization": f"Basic {s.key}"}),
            await client.post(root, json={}, headers={"Authorization": f"bEaReR   {s.key}"}),
        ]
        return [(r.status_code, r.json()) for r in replies]

    calls = _Server()
    out, _, s = _talk(calls, requests)

    def error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    unknown = error("unknown or closed session: use the api_key and base_url vime handed to the "
                    "agent", "authentication_error")
    assert out == [(400, error("the request body is not JSON")),
                   (400, error("the request body must be a JSON object")),
                   (401, unknown), (401, unknown), (200, CHAT)]
    assert [k for k, *_ in calls.seen] == ["chat"]   # the bearer key, any case, trimmed


def test_a_request_error_is_answered_with_its_status_and_param() -> None:
    from vime.agent.render import RequestError

    async def refuse(self: Any, kind: str, session: Any, body: Any, params: Any) -> Any:
        raise RequestError("n must be 1", status=422, param="n")

    async def requests(client: Any, server: Any, s: Any) -> Any:
        r = await client.post(f"{server.base_url(s.key)}/chat/completions", json={"n": 2})
        return r.status_code, r.json()

    calls = _Server(refuse)
    out, _, _ = _talk(calls, requests)
    assert out == (422, {"error": {"message": "n must be 1", "type": "invalid_request_error",
                                   "param": "n", "code": None}})
    assert calls.committed == []


def test_a_call_that_outlived_its_session_is_a_401_and_a_refusal_is_answered() -> None:
    async def closed(self: Any, kind: str, session: Any, body: Any, params: Any) -> Any:
        if body.get("refused"):    # answered without an engine call: nothing to record
            return _Answer(CHAT, self.committed, record=False)
        return _Answer(CHAT, self.committed, kept=False)

    async def requests(client: Any, server: Any, s: Any) -> list[Any]:
        url = f"{server.base_url(s.key)}/chat/completions"
        return [(r.status_code, r.json()) for r in (await client.post(url, json={}),
                                                    await client.post(url, json={"refused": 1}))]

    calls = _Server(closed)
    out, _, _ = _talk(calls, requests)
    assert out == [(401, {"error": {"message": "the session closed while the call ran",
                                    "type": "authentication_error", "param": None,
                                    "code": None}}), (200, CHAT)]
    assert calls.committed == ["chat.completion", "chat.completion"]


def test_a_stream_sends_the_events_then_commits() -> None:
    from vime.agent.responses import chat_chunks

    async def requests(client: Any, server: Any, s: Any) -> list[Any]:
        url = f"{server.base_url(s.key)}/chat/completions"
        out = []
        for body in ({"stream": True}, {"stream": True, "stream_options": {"include_usage": True}},
                     {"stream": True, "stream_options": None}):
            r = await client.post(url, json=body)
            out.append((r.status_code, r.headers["content-type"].split(";")[0], r.text))
        r = await client.post(f"{server.base_url(s.key)}/completions", json={"stream": True})
        out.append((r.status_code, r.json()["error"]["param"], r.json()["error"]["message"]))
        return out

    calls = _Server()
    out, _, _ = _talk(calls, requests)
    plain, usage = "".join(chat_chunks(CHAT)), "".join(chat_chunks(CHAT, include_usage=True))
    assert usage != plain
    assert out == [(200, "text/event-stream", plain), (200, "text/event-stream", usage),
                   (200, "text/event-stream", plain),
                   (400, "stream", "stream=true is served for chat completions only")]
    assert calls.committed == ["chat.completion"] * 3   # never the refused text stream


def test_endpoint_server_binds_the_requested_port_and_stop_before_start_is_a_no_op() -> None:
    import socket

    async def go() -> tuple[int, int]:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        server = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}),  # type: ignore[arg-type]
                                port=port)
        await EndpointServer(None).stop()
        await server.start()
        try:
            taken = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}),  # type: ignore[arg-type]
                                   port=port)
            with pytest.raises(OSError):
                await taken.start()
            return port, server.port
        finally:
            await server.stop()

    wanted, got = asyncio.run(go())
    assert got == wanted


# ---- a client gone when its call finishes: the app driven through ASGI directly ----------------
# (the order of "call done" and "client gone" cannot be chosen over a real socket)


def _asgi_post(body: dict[str, Any], receive_after_body: Any, behaviour: Any
               ) -> tuple[list[int], bytes, _Server, Any]:
    """POST ``body`` to a session's chat route; ``receive_after_body(state)`` answers every
    receive after the body. Returns (statuses sent, body sent, the fake calls, the session)."""
    import json

    async def go() -> tuple[list[int], bytes, _Server, Any]:
        calls, store = _Server(behaviour), SessionStore()
        session = store.open(index=0)
        app = create_app(calls, store, lambda s: {})  # type: ignore[arg-type]
        path = f"/sessions/{session.key}/v1/chat/completions"
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
                 "server": ("127.0.0.1", 80),
                 "headers": [(b"content-type", b"application/json")]}
        state: dict[str, Any] = {"sent_body": False, "gone": False, "calls": calls}
        statuses: list[int] = []
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if not state["sent_body"]:
                state["sent_body"] = True
                return {"type": "http.request", "body": json.dumps(body).encode(),
                        "more_body": False}
            result: dict[str, Any] = await receive_after_body(state)
            return result

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        # bounded: a broken handler that waits for ever fails the test instead of hanging it
        await asyncio.wait_for(app(scope, receive, send), timeout=10)
        return statuses, b"".join(chunks), calls, session
    return asyncio.run(go())


async def _never(state: dict[str, Any]) -> dict[str, Any]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def test_a_client_gone_by_the_time_its_call_finished_gets_nothing_recorded() -> None:
    """Not streamed: the call finished first, and the client is gone when the handler looks
    (a receive answered at once): a 499, counted dropped, never committed."""
    async def receive_after_body(state: dict[str, Any]) -> dict[str, Any]:
        state["calls"].state = state
        if state["gone"]:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def finish_and_leave(self: Any, kind: str, session: Any, body: Any, params: Any
                               ) -> Any:
        await asyncio.sleep(0)         # the watch is waiting on receive by now
        self.state["gone"] = True      # the client leaves as the call finishes
        return _Answer(CHAT, self.committed)

    statuses, _, calls, session = _asgi_post({}, receive_after_body, finish_and_leave)
    assert (statuses, calls.committed, session.dropped) == ([499], [], 1)


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_leaves_in_the_same_turn_as_its_call_gets_nothing_recorded(
        stream: bool) -> None:
    """Streamed or not: the disconnect and the answer arrive together: a 499, dropped."""
    async def receive_after_body(state: dict[str, Any]) -> dict[str, Any]:
        if "event" in state:            # asked again: still gone (yielding, as a server does)
            await asyncio.sleep(0)
            return {"type": "http.disconnect"}
        event = state["calls"].event = state["event"] = asyncio.Event()
        await event.wait()
        return {"type": "http.disconnect"}

    async def finish_and_leave(self: Any, kind: str, session: Any, body: Any, params: Any
                               ) -> Any:
        await asyncio.sleep(0)   # the watch is waiting on receive by now
        self.event.set()         # the client leaves as the call finishes
        return _Answer(CHAT, self.committed)

    statuses, _, calls, session = _asgi_post({"stream": stream}, receive_after_body,
                                             finish_and_leave)
    assert (statuses, calls.committed, session.dropped) == ([499], [], 1)


def test_a_client_gone_before_its_call_finished_cancels_it_with_a_499() -> None:
    seen: list[str] = []

    async def leave(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"type": "http.disconnect"}

    async def hang(self: Any, kind: str, session: Any, body: Any, params: Any) -> Any:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return _Answer(CHAT, self.committed)

    statuses, _, calls, session = _asgi_post({}, leave, hang)
    assert statuses == [499] and seen == ["cancelled"] and calls.committed == []
    assert session.dropped == 0   # the engine call counts itself dropped (CallServer)


def test_a_connected_client_gets_its_answer_recorded() -> None:
    async def ok(self: Any, kind: str, session: Any, body: Any, params: Any) -> Any:
        await asyncio.sleep(0)
        return _Answer(CHAT, self.committed)

    import json

    statuses, sent, calls, session = _asgi_post({}, _never, ok)
    assert statuses == [200] and json.loads(sent) == CHAT
    assert calls.committed == ["chat.completion"] and session.dropped == 0


@pytest.mark.parametrize("stream", [False, True])
def test_only_an_unstreamed_answer_checks_for_a_gone_client_after_the_call(stream: bool
                                                                          ) -> None:
    """The call finished first and the client is gone when the handler looks: an unstreamed
    answer is dropped (counted once more), a stream is not (its own sending finds out)."""
    async def receive_after_body(state: dict[str, Any]) -> dict[str, Any]:
        state["calls"].state = state
        if state["gone"]:
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def finish_and_leave(self: Any, kind: str, session: Any, body: Any, params: Any
                               ) -> Any:
        await asyncio.sleep(0)
        session.dropped = 2            # two calls dropped before this one
        self.state["gone"] = True
        return _Answer(CHAT, self.committed)

    statuses, _, calls, session = _asgi_post({"stream": stream}, receive_after_body,
                                             finish_and_leave)
    assert session.dropped == (2 if stream else 3)
    assert calls.committed == (["chat.completion"] if stream else [])
    assert (statuses == [499]) is not stream


def test_a_path_key_wins_over_an_authorization_that_is_no_bearer() -> None:
    async def requests(client: Any, server: Any, s: Any) -> list[int]:
        url = f"{server.base_url(s.key)}/chat/completions"
        return [(await client.post(url, json={}, headers={"Authorization": f"Basic {s.key}"})
                 ).status_code]

    assert _talk(_Server(), requests)[0] == [200]


def test_the_endpoint_serves_no_docs_or_schema() -> None:
    async def requests(client: Any, server: Any, s: Any) -> list[int]:
        root = f"http://127.0.0.1:{server.port}"
        return [(await client.get(f"{root}{p}")).status_code
                for p in ("/docs", "/redoc", "/openapi.json")]

    assert _talk(_Server(), requests)[0] == [404, 404, 404]


def test_endpoint_server_start_socket_logging_and_stop() -> None:
    import logging
    import socket
    import time

    async def go() -> None:
        server = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
        assert server.sock is None and server.port == 0
        logging.getLogger("uvicorn.error").setLevel(logging.NOTSET)
        began = time.monotonic()
        await server.start()
        assert time.monotonic() - began < 1.0        # polls for "started" every 10 ms
        assert server.sock is not None
        assert server.sock.getsockname() == ("127.0.0.1", server.port)
        assert logging.getLogger("uvicorn.error").level == logging.WARNING
        assert server._server.config.timeout_keep_alive == 30
        await server.stop()
        assert server._task is not None and server._task.done()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()

    asyncio.run(go())


def test_endpoint_server_says_when_uvicorn_stops_before_listening(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    async def gives_up(self: Any, sockets: Any = None) -> None:
        return None

    monkeypatch.setattr(uvicorn.Server, "serve", gives_up)
    server = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError) as info:
        asyncio.run(server.start())
    assert str(info.value) == "the agent endpoint stopped before it started listening"
    assert server.sock is not None
    server.sock.close()


def test_endpoints_started_without_a_port_each_get_a_free_one() -> None:
    async def go() -> tuple[int, int]:
        one = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
        two = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
        await one.start()
        try:
            await two.start()
            await two.stop()
        finally:
            await one.stop()
        return one.port, two.port

    first, second = asyncio.run(go())
    assert first > 1024 and second > 1024 and first != second


def test_the_endpoint_writes_no_access_log_line_per_call(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An agent makes thousands of calls per run: none of them is logged, even with the
    access logger at INFO."""
    import logging

    access = logging.getLogger("uvicorn.access")

    async def go() -> int:
        server = EndpointServer(create_app(_Server(), SessionStore(), lambda s: {}))  # type: ignore[arg-type]
        await server.start()
        access.setLevel(logging.INFO)
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                reply = await client.get(f"http://127.0.0.1:{server.port}/health")
        finally:
            await server.stop()
        return reply.status_code

    try:
        assert asyncio.run(go()) == 200
    finally:
        access.setLevel(logging.WARNING)
    out, err = capsys.readouterr()
    assert "/health" not in out and "/health" not in err
    assert access.handlers == [] and access.propagate is False


def test_a_message_other_than_a_disconnect_keeps_the_call_running() -> None:
    """The watch on the connection ends only at ``http.disconnect``: another ASGI message
    (an empty body chunk, as a server may send) leaves the call to finish and be recorded."""
    async def receive_after_body(state: dict[str, Any]) -> dict[str, Any]:
        if not state.get("chunk_sent"):
            state["chunk_sent"] = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def slow(self: Any, kind: str, session: Any, body: Any, params: Any) -> Any:
        for _ in range(5):
            await asyncio.sleep(0)     # the watch reads the extra message meanwhile
        return _Answer(CHAT, self.committed)

    statuses, sent, calls, session = _asgi_post({}, receive_after_body, slow)
    assert (statuses, calls.committed, session.dropped) == ([200], ["chat.completion"], 0)
    assert b"chat.completion" in sent
