"""Data-parallel trainer ranks on ``torch.distributed``: FSDP2 sharding, batch slices, full state.

Usage::

    init_rank(rank=r, world=2, host="127.0.0.1", port=port, device=torch.device("cpu"))
    dp = DataParallel.current()          # world 1 (no process group): every method is trivial
    dp.shard(model)                      # FSDP2 (fully_shard) per decoder layer, then the root
    mine = dp.step_rows(step, balance=False)   # this rank's rows of one optimiser step
    state = dp.full_model_state(model)   # rank 0: name -> full CPU tensor; other ranks: {}

Every rank holds one ``torch.distributed`` process group member (``gloo`` on the CPU, ``nccl``
on GPUs). The model is sharded with FSDP2 (``torch.distributed.fsdp.fully_shard``); measured on
torch 2.13 CPU with ``gloo`` (docs/en/training.md, "Trainer ranks"), so no DDP fallback is kept.
FSDP2 runs collectives inside each forward and backward, so every rank must run the same number
of them: :meth:`DataParallel.pad_count` gives the count all ranks run, the trainer fills the gap
with zero-loss passes. Gradients are summed, not averaged (``set_gradient_divide_factor(1)``):
each rank's loss already divides by the step's global rollout count, so the sum over ranks is
the one-rank loss.

With one rank nothing here starts a process group or wraps the model.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["DataParallel", "balanced_partition", "contiguous_partition", "init_rank"]

#: How long a collective (the rendezvous included) may wait for the other ranks.
TIMEOUT = datetime.timedelta(minutes=30)


def init_rank(*, rank: int, world: int, store: Any, device: torch.device) -> None:
    """Join the process group: ``gloo`` for a CPU trainer, ``nccl`` for CUDA.

    Args:
        rank: this process's rank in ``[0, world)``.
        world: number of trainer ranks (``--actor-num-nodes * --actor-num-gpus-per-node``).
        store: a ``torch.distributed.TCPStore`` (rank 0 hosts it, the others connect).
        device: the trainer's device (picks the backend; CUDA also sets the current device).

    Raises:
        RuntimeError: torch's own errors (a rank that never joins times out after 30 min).
    """
    import torch.distributed as dist

    if dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":   # Ray shows each rank its own GPU (CUDA_VISIBLE_DEVICES)
        torch.cuda.set_device(device.index or 0)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world, timeout=TIMEOUT)


def contiguous_partition(sizes: Sequence[int], parts: int) -> list[list[int]]:
    """Items ``0..len(sizes)-1`` cut into ``parts`` runs in order, sizes differing by at most one
    (the first ranks take the extra item)."""
    n = len(sizes)
    out, start = [], 0
    for r in range(parts):
        count = n // parts + (1 if r < n % parts else 0)
        out.append(list(range(start, start + count)))
        start += count
    return out


def balanced_partition(sizes: Sequence[int], parts: int) -> list[list[int]]:
    """Items split into ``parts`` groups of (nearly) equal count whose ``sizes`` sums are
    balanced: the largest item first goes to the group with the smallest sum that still has room
    (greedy longest-processing-time). Each group lists its items in ascending order.

    Args:
        sizes: one weight per item (tokens of a rollout).
        parts: number of groups (ranks).
    """
    n = len(sizes)
    room = [n // parts + (1 if r < n % parts else 0) for r in range(parts)]
    sums = [0] * parts
    groups: list[list[int]] = [[] for _ in range(parts)]
    for i in sorted(range(n), key=lambda k: (-sizes[k], k)):
        r = min((r for r in range(parts) if len(groups[r]) < room[r]), key=lambda r: (sums[r], r))
        groups[r].append(i)
        sums[r] += sizes[i]
    return [sorted(g) for g in groups]


@dataclass(frozen=True)
class DataParallel:
    """This process's place among the trainer ranks (``world == 1``: no process group)."""

    rank: int = 0
    world: int = 1

    @staticmethod
    def current() -> DataParallel:
        """The initialised process group's rank and size, else rank 0 of 1."""
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return DataParallel(dist.get_rank(), dist.get_world_size())
        return DataParallel()

    @property
    def sharded(self) -> bool:
        """Whether several ranks share the model (FSDP2)."""
        return self.world > 1

    # ---- the model ------------------------------------------------------------------------

    def shard(self, model: torch.nn.Module, device: torch.device) -> None:
        """``fully_shard`` each decoder layer (the model's ``_no_split_modules`` classes), then
        the whole model, over a 1-D mesh of all ranks; gradients are summed over ranks."""
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import FSDPModule, fully_shard

        mesh = init_device_mesh(device.type, (self.world,))
        block_names = set(getattr(model, "_no_split_modules", None) or ())
        for module in list(model.modules()):
            if module is not model and type(module).__name__ in block_names:
                fully_shard(module, mesh=mesh)
        fully_shard(model, mesh=mesh)
        for module in model.modules():
            if isinstance(module, FSDPModule):
                # plain sums: gloo has no PREMUL_SUM, which a divide factor otherwise uses
                module.set_gradient_divide_factor(1.0)
                module.set_force_sum_reduction_for_comms(True)

    def full_model_state(self, model: torch.nn.Module) -> dict[str, torch.Tensor]:
        """Every rank calls this; rank 0 gets ``name -> full tensor`` on the CPU (other ranks
        ``{}``). With one rank: ``model.state_dict()`` as is."""
        if not self.sharded:
            return dict(model.state_dict())
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full: Any = get_model_state_dict(
            model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        return dict(full)

    def load_model_state(self, model: torch.nn.Module, state: dict[str, torch.Tensor]
                         ) -> tuple[list[str], list[str]]:
        """Load a full state dict (every rank passes the same tensors); returns ``(missing,
        unexpected)`` key lists."""
        if not self.sharded:
            result = model.load_state_dict(state, strict=False)
            return list(result.missing_keys), list(result.unexpected_keys)
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        result = set_model_state_dict(model, dict[str, Any](state), options=StateDictOptions(
            full_state_dict=True, strict=False))
        return list(result.missing_keys), list(result.unexpected_keys)

    def full_optimizer_state(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer
                             ) -> dict[str, Any]:
        """The optimiser's state in ``Optimizer.state_dict()``'s layout (integer parameter ids,
        full tensors), the same whatever the rank count; every rank calls it, rank 0 gets it
        (other ranks ``{}``)."""
        if not self.sharded:
            return optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_optimizer_state_dict,
        )

        by_name: Any = get_optimizer_state_dict(model, optimizer, options=StateDictOptions(
            full_state_dict=True, cpu_offload=True))
        if self.rank != 0:
            return {}
        ids = {name: i for i, name in enumerate(_param_names(model, optimizer))}
        groups = [dict(g, params=[ids[name] for name in g["params"]])
                  for g in by_name["param_groups"]]
        return {"state": {ids[name]: value for name, value in by_name["state"].items()},
                "param_groups": groups}

    def load_optimizer_state(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                             state: dict[str, Any]) -> None:
        """Load what :meth:`full_optimizer_state` returned (every rank passes it)."""
        if not self.sharded:
            optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_optimizer_state_dict,
        )

        names = _param_names(model, optimizer)
        groups = [dict(g, params=[names[i] for i in g["params"]]) for g in state["param_groups"]]
        by_name: Any = {"state": {names[i]: value for i, value in state["state"].items()},
                   "param_groups": groups}
        set_optimizer_state_dict(model, optimizer, by_name,
                                 options=StateDictOptions(full_state_dict=True))

    # ---- data -----------------------------------------------------------------------------

    def step_rows(self, step: dict[str, Any], *, balance: bool) -> list[int]:
        """This rank's rows of one optimiser step: whole rollouts (a rollout's segments stay
        together), an equal count per rank (±1), balanced by tokens with ``balance``."""
        n = len(step["tokens"])
        if not self.sharded:
            return list(range(n))
        order: dict[Any, list[int]] = {}
        for i, rid in enumerate(step["rollout_ids"]):
            order.setdefault(rid, []).append(i)
        rollouts = list(order.values())
        tokens = [sum(step["total_lengths"][i] for i in rows) for rows in rollouts]
        split = (balanced_partition if balance else contiguous_partition)(tokens, self.world)
        return sorted(i for k in split[self.rank] for i in rollouts[k])

    def share(self, n: int) -> list[int]:
        """This rank's contiguous share of ``n`` rows (all of them with one rank)."""
        return contiguous_partition([1] * n, self.world)[self.rank]

    # ---- collectives ----------------------------------------------------------------------

    def pad_count(self, count: int) -> int:
        """The largest ``count`` over the ranks (``count`` itself with one rank)."""
        if not self.sharded:
            return count
        import torch.distributed as dist

        value = torch.tensor([count], dtype=torch.long, device=_collective_device())
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return int(value.item())

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` in rank order (``[obj]`` with one rank)."""
        if not self.sharded:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def sum_stats(self, stats: dict[str, float]) -> dict[str, float]:
        """Each key summed over the ranks (a key missing on a rank counts 0)."""
        if not self.sharded:
            return stats
        total: dict[str, float] = {}
        for part in self.gather(stats):
            for key, value in part.items():
                total[key] = total.get(key, 0.0) + float(value)
        return total

    def barrier(self) -> None:
        """Wait for every rank (nothing with one rank)."""
        if self.sharded:
            import torch.distributed as dist

            dist.barrier()


def _collective_device() -> torch.device:
    import torch.distributed as dist

    return torch.device("cuda", torch.cuda.current_device()) \
        if dist.get_backend() == "nccl" else torch.device("cpu")


def _param_names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The optimiser's parameters in ``state_dict()`` id order, by name (a tied parameter
    under its first name, as ``named_parameters`` gives it)."""
    names = {id(p): name for name, p in model.named_parameters()}
    return [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
