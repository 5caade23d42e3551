"""A ``vllm-router`` process in front of the engines (generate requests only).

Usage::

    router = VLLMRouter(["http://127.0.0.1:41235", "http://127.0.0.1:41236"],
                        policy="consistent_hash", log_dir="runs/r1/logs")
    router.start()       # blocks until GET /workers lists every engine
    router.url           # "http://127.0.0.1:41300" -> args.vllm_router_ip / vllm_router_port
    router.stop()

    ip, port = router_address(args, engine_urls, log_dir=...)   # router, or the single engine

With ``consistent_hash`` a request's engine is chosen from its ``X-Session-ID`` header (then
``X-User-ID``, ..., ``X-Request-ID``, then body ``session_id``/``user``), so every turn of one
sample reuses the engine that holds its prefix cache. The router forwards
``/inference/v1/generate`` only as intended: it would send pause, resume, abort and weight
reload to ONE worker chosen by the policy, so those go to every engine directly
(``vime.ray.engine_control``). One engine needs no router: its own address is used.

See ``docs/contract.md`` §8 and §11, and for the vllm-router flags and behaviour measured here
``docs/environment.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from vime.config import arg
from vime.ray._process import log_tail, stop_process_group, wait_ready
from vime.ray.engine_command import find_free_port
from vime.ray.reaper import set_pdeathsig, start_reaper

__all__ = ["ROUTER_POLICIES", "RouterStartError", "VLLMRouter", "router_address",
           "router_binary"]

#: Policies v1 supports (docs/contract.md §11: the others are parsed but not implemented).
ROUTER_POLICIES = ("consistent_hash", "round_robin")

_LIVE: set[VLLMRouter] = set()


class RouterStartError(RuntimeError):
    """Raised when the router exits or does not list its workers in time (log tail included)."""


def router_binary() -> str:
    """Path of the ``vllm-router`` executable (next to this interpreter, else on PATH).

    Raises:
        FileNotFoundError: not installed (``pip install vllm-router``; it is in the cpu extra).
    """
    local = Path(sys.executable).with_name("vllm-router")
    if local.exists():
        return str(local)
    found = shutil.which("vllm-router")
    if found is None:
        raise FileNotFoundError("vllm-router is not installed: pip install vllm-router "
                                "(part of vime's cpu and gpu extras)")
    return found


class VLLMRouter:
    """One ``vllm-router`` subprocess on 127.0.0.1.

    Args:
        worker_urls: engine base URLs.
        policy: one of :data:`ROUTER_POLICIES`.
        port: TCP port (None: a free one).
        request_timeout_secs: per-request timeout of the router (seconds).
        log_dir: folder for ``router.log`` (None: a temporary folder).
        startup_timeout: seconds to wait for the router to list its workers.

    Raises:
        NotImplementedError: a policy outside :data:`ROUTER_POLICIES`.
    """

    def __init__(self, worker_urls: Sequence[str], *, policy: str = "consistent_hash",
                 port: int | None = None, host: str = "127.0.0.1",
                 request_timeout_secs: int = 14400, log_dir: str | Path | None = None,
                 startup_timeout: float = 60.0) -> None:
        if policy not in ROUTER_POLICIES:
            raise NotImplementedError(f"--vllm-router-policy {policy} is not supported in v1; "
                                      f"use one of {', '.join(ROUTER_POLICIES)}")
        if not worker_urls:
            raise ValueError("VLLMRouter needs at least one worker URL")
        self.worker_urls = [u.rstrip("/") for u in worker_urls]
        self.policy = policy
        self.host = host
        self.port = port
        self.request_timeout_secs = int(request_timeout_secs)
        self.startup_timeout = startup_timeout
        self.log_dir = Path(log_dir) if log_dir is not None else Path(
            tempfile.mkdtemp(prefix="vime-router-logs-"))
        self.log_path = self.log_dir / "router.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.reaper: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []

    @property
    def url(self) -> str:
        """``http://host:port`` of the router (after :meth:`start`)."""
        if self.port is None:
            raise RuntimeError("the router has not been started")
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        """Start the router and wait until ``GET /workers`` lists every worker; return the URL.

        Raises:
            RouterStartError: it exited or did not list its workers within ``startup_timeout``.
        """
        if self.process is not None and self.process.poll() is None:
            return self.url
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = find_free_port(self.host)
        # the router always serves Prometheus metrics, on port 29000 unless told: a second
        # router on the machine (two runs, two test workers) then panics with "Address already
        # in use", so each gets a port of its own
        self.command = [router_binary(), "--host", self.host, "--port", str(self.port),
                        "--worker-urls", *self.worker_urls, "--policy", self.policy,
                        "--request-timeout-secs", str(self.request_timeout_secs),
                        "--prometheus-port", str(find_free_port("127.0.0.1"))]
        with open(self.log_path, "ab") as log:
            log.write(f"$ {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, preexec_fn=_preexec)
        # gone with the rollout manager or the driver, as the engines (vime.ray.reaper)
        self.reaper = start_reaper(self.process.pid)
        _LIVE.add(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self.url

    def workers(self) -> list[str]:
        """The worker URLs the router lists now (``GET /workers``)."""
        with urllib.request.urlopen(f"{self.url}/workers", timeout=5) as resp:
            body = json.loads(resp.read())
        return [w["url"].rstrip("/") for w in body.get("workers", [])]

    def _wait_ready(self) -> None:
        assert self.process is not None
        wait_ready(self.process, lambda: set(self.workers()) >= set(self.worker_urls),
                   timeout=self.startup_timeout, interval=0.2,
                   fail=lambda why: RouterStartError(self._failure(why)),
                   what="list its workers")

    def _failure(self, what: str) -> str:
        return (f"vllm-router ({self.url}) {what}\n  command: {' '.join(self.command)}\n"
                f"  log: {self.log_path}\n--- last lines of the log ---\n"
                f"{log_tail(self.log_path, 30)}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the router's process group, SIGKILL after ``timeout`` seconds. Idempotent."""
        _LIVE.discard(self)
        proc = self.process
        if proc is not None and proc.poll() is None:
            stop_process_group(proc, timeout)
        reaper, self.reaper = self.reaper, None
        if reaper is not None and reaper.poll() is None:
            reaper.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                reaper.wait(10)


def _preexec() -> None:  # pragma: no cover - runs in the child
    """A new session (the router leads its own group) and a SIGTERM when its parent dies."""
    os.setsid()
    set_pdeathsig()


def _stop_all_at_exit() -> None:
    for router in list(_LIVE):
        router.stop()


atexit.register(_stop_all_at_exit)


def router_address(args: Namespace, engine_urls: Sequence[str], *,
                   log_dir: str | Path | None = None) -> tuple[str, int, VLLMRouter | None]:
    """Where the rollout sends generate requests: ``(ip, port, router_or_None)``.

    ``args.vllm_router_ip/port`` given: used as they are (no router started). One engine: its
    own address (no router). Several: a new :class:`VLLMRouter` with ``args.router_policy``
    (default ``consistent_hash``) and ``args.router_request_timeout_secs``; the caller stops it.

    Raises:
        NotImplementedError: an unsupported policy; RouterStartError: the router failed.
    """
    ip = arg(args, "vllm_router_ip")
    port = arg(args, "vllm_router_port")
    if ip and port:
        return str(ip), int(port), None
    if len(engine_urls) == 1:
        parts = urlsplit(engine_urls[0])
        return str(parts.hostname), int(parts.port or 80), None
    router = VLLMRouter(engine_urls, policy=arg(args, "router_policy"),
                        request_timeout_secs=arg(args, "router_request_timeout_secs"),
                        log_dir=log_dir)
    router.start()
    return router.host, int(router.port or 0), router
