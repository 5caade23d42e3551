"""Two real trainer ranks (``torch.distributed`` on gloo, one spawned process per rank) for the
data-parallel tests (imported as ``ranks_helpers``)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from typing import Any

import torch

from vime.data.batch_builder import BatchBuilder
from vime.utils.types import Sample


def batch(args: Namespace, shift: int = 0) -> dict[str, Any]:
    """Two groups of two samples of different lengths (prompt [1, 2, 3], 1-3 response tokens),
    rewards 0/1 within each group."""
    samples = [Sample(index=i, group_index=i // 2,
                      tokens=[1, 2, 3] + [(10 + 7 * i + 3 * k + shift) % 60 + 1
                                          for k in range(1 + (i + shift) % 3)],
                      response_length=1 + (i + shift) % 3, reward=float((i + shift) % 2),
                      status=Sample.Status.COMPLETED)
               for i in range(4)]
    return BatchBuilder.convert(args, samples)


def dynamic_args(args: Namespace) -> Namespace:
    """Token-packed micro-batches of at most 9 tokens: on two ranks rank 0's two samples (4 + 5
    tokens) fit one micro-batch and rank 1's (6 + 4) need two, so rank 0 runs a padding pass.
    With ``--use-kl-loss``: the reference model is sharded as well, and scored by every rank."""
    return Namespace(**{**vars(args), "use_dynamic_batch_size": True, "max_tokens_per_gpu": 9,
                        "use_kl_loss": True, "kl_loss_coef": 0.5})


def full_state(trainer: Any) -> dict[str, torch.Tensor]:
    """The trainer's parameters as full CPU tensors (rank 0; ``{}`` on the others)."""
    return {k: v.detach().cpu().clone() for k, v in trainer.dp.full_model_state(
        trainer.model).items()}


def rank_main(rank: int, world: int, port: int, args: Namespace, resume_from: str,
              out: str) -> None:
    """One rank: (1) one train step from the model on disk, parameters to ``out/step.pt``,
    checkpoint to ``out/ckpt``; (2) a fresh trainer resumed from the one-rank checkpoint
    ``resume_from`` (rollout 0) trains rollout 1 with ``--balance-data``, parameters to
    ``out/resumed.pt``; (3) one step with :func:`dynamic_args`, parameters to
    ``out/dynamic.pt``; (4) ``--weight-sync nccl``'s gathers without NCCL: rank 0 walks
    ``make_source`` (what it would send), rank 1 runs ``NcclShardFollower``; rank 0's full
    tensors to ``out/sent.pt``."""
    import torch.distributed as dist

    from vime.backends.parallel import init_rank
    from vime.backends.trainer import Trainer

    torch.set_num_threads(1)
    store = dist.TCPStore("127.0.0.1", port, world, is_master=rank == 0)
    init_rank(rank=rank, world=world, store=store, device=torch.device("cpu"))
    try:
        trainer = Trainer(args)
        metrics = trainer.train(0, batch(args))
        state = full_state(trainer)
        trainer.save(0, str(Path(out) / "ckpt"))
        resumed_args = Namespace(**{**vars(args), "balance_data": True})
        resumed = Trainer(resumed_args)
        resumed.load(resume_from, 0)
        resumed_metrics = resumed.train(1, batch(args, shift=1))
        resumed_state = full_state(resumed)
        dynamic = Trainer(dynamic_args(args))
        dynamic.train(0, batch(args))
        dynamic_state = full_state(dynamic)
        from vime.ray.weight_sync import NcclShardFollower, make_source

        if rank == 0:
            sent = {name: t.detach().cpu().clone() for name, t in make_source(dynamic.model)}
            from torch.distributed.fsdp import FSDPModule

            torch.save({"sent": sent, "state": dynamic_state, "sharded": dynamic.dp.sharded,
                        "ref_sharded": isinstance(dynamic.ref_model, FSDPModule)},
                       Path(out) / "sent.pt")
        else:
            assert NcclShardFollower(dynamic.model).push(1) > 0
        if rank == 0:
            torch.save({"state": dynamic_state}, Path(out) / "dynamic.pt")
            torch.save({"state": state, "metrics": metrics}, Path(out) / "step.pt")
            torch.save({"state": resumed_state, "metrics": resumed_metrics,
                        "global_step": resumed.global_step}, Path(out) / "resumed.pt")
    finally:
        dist.destroy_process_group()
