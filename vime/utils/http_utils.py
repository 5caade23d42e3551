"""Async HTTP helpers on one shared, pooled ``aiohttp.ClientSession`` per process, event loop
and pool.

Usage::

    from vime.utils.async_utils import run
    from vime.utils.http_utils import get, post, configure_client

    configure_client(max_connections=1024, timeout=14400.0)   # once, before the first call
    body = run(post("http://127.0.0.1:8000/inference/v1/generate", payload,
                    headers={"X-Session-ID": sid}))            # parsed JSON (dict/list/None)
    health = run(get("http://127.0.0.1:8000/health", retries=0))

Connection errors (refused, reset, dropped) and HTTP 502/503/504 are retried with exponential
back-off (``backoff * 2**attempt`` seconds, at most ``max_backoff``; the first retry of a
connection error goes at once, as that is most often a kept-alive connection the server had
closed); other HTTP errors raise at once with the response body in the message.

aiohttp, not httpx: at 256 concurrent generate calls (the demo's GRPO step) httpx's connection
pool cost about 2 ms of CPU per request (it scans every connection and queued request as each
one starts and ends), aiohttp's 0.2 ms (``benchmarks/http_client.py``); the rollout manager
shares the engine's cores, so that CPU was taken from generation.

See ``docs/contract.md`` §1 and §8.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

__all__ = ["HTTPError", "aclose_client", "configure_client", "get", "get_client", "post"]

#: HTTP statuses that mean "try again later" (gateway errors, overload).
RETRY_STATUSES = frozenset({502, 503, 504})

#: Connection pools of a loop: ``"generate"`` carries the default rollout's generate calls,
#: ``"default"`` everything else (engine control: abort, pause, weight reload; remote reward
#: models; user calls). Separate pools keep an abort from queueing for a connection behind the
#: very generations it is meant to stop.
POOLS = ("default", "generate")

_config: dict[str, Any] = {"max_connections": 1024, "timeout": 14400.0, "connect_timeout": 30.0}
#: (pid, id(loop), pool) -> the session of that pool; a session is bound to the loop that made it.
_sessions: dict[tuple[int, int, str], Any] = {}


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
    """Set the pool size and timeouts (seconds) of sessions created from now on (call
    :func:`aclose_client` to apply them to a loop that already has sessions).

    ``max_connections`` bounds concurrent connections per pool (:data:`POOLS`; the rollout sets
    it to ``vllm_server_concurrency * num_engines`` before its first generate call, so the
    ``"generate"`` pool gets that size); ``timeout`` is the longest wait for a free connection
    and between two reads of a response (the rollout uses ``--router-request-timeout-secs``);
    ``connect_timeout`` bounds opening a connection.
    """
    if max_connections is not None:
        _config["max_connections"] = int(max_connections)
    if timeout is not None:
        _config["timeout"] = float(timeout)
    if connect_timeout is not None:
        _config["connect_timeout"] = float(connect_timeout)


def _session(name: str = "default") -> aiohttp.ClientSession:
    import aiohttp

    if name not in POOLS:
        raise ValueError(f"http_utils: unknown pool {name!r}; use one of {POOLS}")
    loop = asyncio.get_running_loop()
    key = (os.getpid(), id(loop), name)
    session = _sessions.get(key)
    if session is None or session.closed:
        timeout = aiohttp.ClientTimeout(total=None, connect=_config["timeout"],
                                        sock_connect=_config["connect_timeout"],
                                        sock_read=_config["timeout"])
        connector = aiohttp.TCPConnector(limit=max(1, int(_config["max_connections"])),
                                         limit_per_host=0)
        session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)
        _sessions[key] = session
    return session


def get_client() -> aiohttp.ClientSession:
    """The running loop's shared ``aiohttp.ClientSession`` of the ``"default"`` pool (created
    on first use), which :func:`post` and :func:`get` use.

    Raises:
        RuntimeError: called outside a running event loop.
    """
    return _session()


async def aclose_client() -> None:
    """Close the running loop's shared sessions (new ones are created on the next request)."""
    loop = asyncio.get_running_loop()
    for name in POOLS:
        session = _sessions.pop((os.getpid(), id(loop), name), None)
        if session is not None:
            await session.close()


async def _request(method: str, url: str, *, json_body: Any = None, params: Any = None,
                   headers: dict[str, str] | None = None, timeout: float | None = None,
                   retries: int = 3, backoff: float = 0.5, max_backoff: float = 8.0,
                   pool: str = "default") -> Any:
    import aiohttp

    session = _session(pool)
    # aiohttp reads timeout=None as "no timeout at all": the session's own applies when not given
    call_timeout = session.timeout if timeout is None else aiohttp.ClientTimeout(total=timeout)
    attempt = 0
    while True:
        try:
            async with session.request(method, url, json=json_body, params=params,
                                       headers=headers, timeout=call_timeout) as response:
                status = response.status
                data = await response.read()
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError,
                aiohttp.ClientResponseError, asyncio.TimeoutError) as exc:
            # ClientResponseError here is a reply that is not HTTP (no status was read)
            # a read timeout raises at once; one opening a connection (or waiting for a free
            # one, aiohttp's ConnectionTimeoutError) is retried as a connection error
            if (isinstance(exc, asyncio.TimeoutError)
                    and not isinstance(exc, aiohttp.ConnectionTimeoutError)):
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
            if status < 400:
                if not data:
                    return None
                try:
                    return json.loads(data)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    return data.decode(errors="replace")
            body = data.decode(errors="replace")
            if status not in RETRY_STATUSES or attempt >= retries:
                raise HTTPError(f"{method} {url} returned HTTP {status}: {body[:2000]}",
                                url=url, status=status, body=body)
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
