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
