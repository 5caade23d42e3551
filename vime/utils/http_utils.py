"""Async HTTP helpers on one shared, pooled ``httpx.AsyncClient`` per process and event loop.

Usage::

    from vime.utils.async_utils import run
    from vime.utils.http_utils import get, post, configure_client

    configure_client(max_connections=1024, timeout=14400.0)   # once, before the first call
    body = run(post("http://127.0.0.1:8000/inference/v1/generate", payload,
                    headers={"X-Session-ID": sid}))            # parsed JSON (dict/list/None)
    health = run(get("http://127.0.0.1:8000/health", retries=0))

Connection errors (refused, reset, protocol errors) and HTTP 502/503/504 are retried with
exponential back-off (``backoff * 2**attempt`` seconds, at most ``max_backoff``; the first retry
of a connection error goes at once, as that is most often a kept-alive connection the server
had closed); other HTTP errors raise at once with the response body in the message.

See ``docs/contract.md`` §1 and §8.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["HTTPError", "aclose_client", "configure_client", "get", "get_client", "post"]

#: HTTP statuses that mean "try again later" (gateway errors, overload).
RETRY_STATUSES = frozenset({502, 503, 504})

#: Connections per pooled client. httpcore's pool scans all its connections and queued requests
#: whenever a request starts or ends, so one client of N connections costs O(N) CPU per request
#: (measured: about half of the client's CPU at 256 concurrent requests); a large pool is split
#: into ``ceil(max_connections / CONNECTIONS_PER_CLIENT)`` clients used in turn (they share one
#: SSL context: building one per client costs about 20 ms).
CONNECTIONS_PER_CLIENT = 16

#: Connection pools of a loop: ``"generate"`` carries the default rollout's generate calls,
#: ``"default"`` everything else (engine control: abort, pause, weight reload; remote reward
#: models; user calls). Separate pools keep an abort from queueing for a connection behind the
#: very generations it is meant to stop.
POOLS = ("default", "generate")

_config: dict[str, Any] = {"max_connections": 1024, "timeout": 14400.0, "connect_timeout": 30.0}
#: (pid, id(loop), pool) -> the clients of that pool; a client is bound to the loop that made it.
_clients: dict[tuple[int, int, str], list[Any]] = {}
_turn = itertools.count()


class HTTPError(RuntimeError):
    """Raised when a request fails after its retries: an HTTP error status (with the response
    body), or a connection error. ``status`` is None for connection errors."""

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body


def configure_client(*, max_connections: int | None = None, timeout: float | None = None,
                     connect_timeout: float | None = None) -> None:
    """Set the pool size and timeouts (seconds) of clients created from now on (call
    :func:`aclose_client` to apply them to a loop that already has clients).

    ``max_connections`` bounds concurrent connections per pool (:data:`POOLS`) over all of its
    clients (the rollout sets it to ``vllm_server_concurrency * num_engines`` before its first
    generate call, so the ``"generate"`` pool gets that size); ``timeout`` is the read/write/pool
    timeout (the rollout uses ``--router-request-timeout-secs``).
    """
    if max_connections is not None:
        _config["max_connections"] = int(max_connections)
    if timeout is not None:
        _config["timeout"] = float(timeout)
    if connect_timeout is not None:
        _config["connect_timeout"] = float(connect_timeout)


def _pool(name: str = "default") -> list[httpx.AsyncClient]:
    import httpx

    if name not in POOLS:
        raise ValueError(f"http_utils: unknown pool {name!r}; use one of {POOLS}")
    loop = asyncio.get_running_loop()
    key = (os.getpid(), id(loop), name)
    clients = _clients.get(key)
    if clients is None or clients[0].is_closed:   # closed together (aclose_client)
        total = max(1, int(_config["max_connections"]))
        count = -(-total // CONNECTIONS_PER_CLIENT)
        per = total // count
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        timeout = httpx.Timeout(_config["timeout"], connect=_config["connect_timeout"])
        ssl_context = httpx.create_ssl_context(trust_env=False)
        clients = [httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False,
                                     verify=ssl_context) for _ in range(count)]
        _clients[key] = clients
    return clients


def get_client() -> httpx.AsyncClient:
    """The first shared ``httpx.AsyncClient`` of the running loop (created on first use); the
    requests of :func:`post` and :func:`get` use the loop's clients in turn.

    Raises:
        RuntimeError: called outside a running event loop.
    """
    return _pool()[0]


async def aclose_client() -> None:
    """Close the running loop's shared clients (new ones are created on the next request)."""
    loop = asyncio.get_running_loop()
    for name in POOLS:
        for client in _clients.pop((os.getpid(), id(loop), name), None) or []:
            await client.aclose()


async def _request(method: str, url: str, *, json_body: Any = None, params: Any = None,
                   headers: dict[str, str] | None = None, timeout: float | None = None,
                   retries: int = 3, backoff: float = 0.5, max_backoff: float = 8.0,
                   pool: str = "default") -> Any:
    import httpx

    clients = _pool(pool)
    client = clients[next(_turn) % len(clients)]
    attempt = 0
    while True:
        try:
            response = await client.request(
                method, url, json=json_body, params=params, headers=headers,
                timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout)
        except (httpx.TransportError, httpx.RemoteProtocolError) as exc:
            if isinstance(exc, httpx.TimeoutException) and not isinstance(exc,
                                                                           httpx.ConnectTimeout):
                raise HTTPError(f"{method} {url} timed out ({type(exc).__name__}) after "
                                f"{timeout if timeout is not None else _config['timeout']} s",
                                url=url) from exc
            if attempt >= retries:
                raise HTTPError(f"{method} {url} failed after {attempt + 1} attempt(s): "
                                f"{type(exc).__name__}: {exc}", url=url) from exc
            if attempt == 0:   # most often a kept-alive connection the server closed: at once
                attempt += 1
                continue
        else:
            if response.status_code < 400:
                if not response.content:
                    return None
                try:
                    return response.json()
                except json.JSONDecodeError:
                    return response.text
            body = response.text
            if response.status_code not in RETRY_STATUSES or attempt >= retries:
                raise HTTPError(f"{method} {url} returned HTTP {response.status_code}: "
                                f"{body[:2000]}", url=url, status=response.status_code,
                                body=body)
        await asyncio.sleep(min(max_backoff, backoff * (2 ** attempt)))
        attempt += 1


async def post(url: str, payload: Any = None, *, params: Any = None,
               headers: dict[str, str] | None = None, timeout: float | None = None,
               retries: int = 3, backoff: float = 0.5, pool: str = "default") -> Any:
    """POST ``payload`` as JSON; return the parsed JSON body (text if not JSON, None if empty).

    Args:
        url: full URL.
        payload: JSON-serialisable body (None: no body).
        params: query parameters.
        headers: extra headers (e.g. ``X-Session-ID``).
        timeout: seconds for this call (None: the client's ``timeout``).
        retries: extra attempts on connection errors and HTTP 502/503/504.
        backoff: first back-off in seconds, doubled per attempt.
        pool: ``"default"``, or ``"generate"`` for generate calls (see :data:`POOLS`).

    Raises:
        HTTPError: an HTTP error status (message has status and body), a read timeout, or a
            connection error after the retries.
        ValueError: an unknown ``pool``.
    """
    return await _request("POST", url, json_body=payload, params=params, headers=headers,
                          timeout=timeout, retries=retries, backoff=backoff, pool=pool)


async def get(url: str, *, params: Any = None, headers: dict[str, str] | None = None,
              timeout: float | None = None, retries: int = 3, backoff: float = 0.5) -> Any:
    """GET ``url``; return the parsed JSON body (text if not JSON). Arguments as :func:`post`.

    Raises:
        HTTPError: as :func:`post`.
    """
    return await _request("GET", url, params=params, headers=headers, timeout=timeout,
                          retries=retries, backoff=backoff)
