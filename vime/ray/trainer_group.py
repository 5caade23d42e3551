"""Several trainer ranks as Ray actors in one placement group and one ``torch.distributed`` group.

Usage::

    group = create_trainer_group(args, total_steps=100)   # N x G ranks, models built
    metrics = group.call("train", rollout_id, data_ref)   # every rank; rank 0's result
    group.close()

``--actor-num-nodes N --actor-num-gpus-per-node G`` start ``N * G`` :class:`TrainerRank` actors
in a Ray placement group (one bundle per rank: one GPU with ``--train-device cuda``, else one
CPU; packed onto as few nodes as possible). Rank 0 hosts the rendezvous: a
``torch.distributed.TCPStore`` on a port the OS picks, bound to the loopback for a local run and
to rank 0's node address when the run joins a cluster (``--ray-address``); every rank then joins
the process group (``gloo`` on the CPU, ``nccl`` on GPUs) and builds its
:class:`vime.backends.trainer.Trainer`, which shards the model with FSDP2.

Every call goes to all ranks (FSDP2's collectives need each of them) with the same arguments;
an ``ObjectRef`` (the rollout data) is fetched by each rank from Ray's object store. When one
rank fails, the group is killed and its error raised: the other ranks would otherwise wait in a
collective for the failed one.
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from vime.config import arg

__all__ = ["TrainerGroup", "TrainerRank", "create_trainer_group", "num_trainer_ranks"]

#: Seconds to wait for the placement group before the run fails with the resources it needs.
PLACEMENT_TIMEOUT = 120.0


def num_trainer_ranks(args: Namespace) -> int:
    """``--actor-num-nodes * --actor-num-gpus-per-node``."""
    return int(arg(args, "actor_num_nodes")) * int(arg(args, "actor_num_gpus_per_node"))


class TrainerRank:
    """One trainer rank (the Ray actor): :meth:`rendezvous` on rank 0, :meth:`setup` on all,
    then :meth:`call` forwards to its ``Trainer``."""

    def __init__(self) -> None:
        from vime.contract.errors import show_logged_warnings_once

        show_logged_warnings_once()   # runtime findings are logged; the warning copy is not shown
        self.trainer: Any = None
        self._store: Any = None

    def rendezvous(self, world: int, *, loopback: bool) -> tuple[str, int]:
        """Rank 0: host the ``TCPStore`` (port picked by the OS); returns ``(host, port)``."""
        import ray
        import torch.distributed as dist

        host = "127.0.0.1" if loopback else ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        self._store = dist.TCPStore(  # type: ignore[attr-defined]
            host, 0, world, is_master=True, wait_for_workers=False)
        return host, int(self._store.port)

    def setup(self, args: Namespace, rank: int, world: int, host: str, port: int,
              total_steps: int | None) -> bool:
        """Join the process group as ``rank`` of ``world``, then build the ``Trainer``."""
        import torch.distributed as dist

        from vime.backends.parallel import init_rank
        from vime.backends.trainer import Trainer, _device

        store = self._store or dist.TCPStore(  # type: ignore[attr-defined]
            host, port, world, is_master=False)
        init_rank(rank=rank, world=world, store=store, device=_device(args))
        self.trainer = Trainer(args, total_steps=total_steps)
        return True

    def call(self, name: str, *a: Any, **kw: Any) -> Any:
        """``Trainer.<name>(*a, **kw)`` on this rank."""
        return getattr(self.trainer, name)(*a, **kw)

    def shutdown(self) -> None:
        """Leave the process group."""
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def _get_all(refs: list[Any]) -> list[Any]:
    """``ray.get`` of every ref, raising the first error as soon as one rank fails."""
    import ray

    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        ray.get(done)    # raises the failed rank's error
    return ray.get(refs)


class TrainerGroup:
    """The ranks of one run, called like ``vime.ray.handles.Remote``: :meth:`call` runs a
    ``Trainer`` method on every rank and returns rank 0's result."""

    def __init__(self, actors: list[Any], placement_group: Any) -> None:
        self.actors = actors
        self.placement_group = placement_group

    def call(self, name: str, *a: Any, num_returns: int = 1, **kw: Any) -> Any:
        """``Trainer.<name>`` on every rank (same arguments); rank 0's result.

        Raises:
            The first failing rank's error (the group is then killed: see the module doc).
        """
        if num_returns != 1:
            raise ValueError("TrainerGroup.call: only num_returns=1 is supported")
        try:
            return _get_all([actor.call.remote(name, *a, **kw) for actor in self.actors])[0]
        except BaseException:
            self.close(timeout=0)
            raise

    def close(self, timeout: float = 60.0) -> None:
        """Leave the process group (when the ranks answer), kill the actors, free the
        placement group."""
        import ray
        from ray.util.placement_group import remove_placement_group

        if timeout > 0:
            try:
                ray.get([a.shutdown.remote() for a in self.actors], timeout=timeout)
            except Exception:   # a busy or dead rank is killed below either way
                pass
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if self.placement_group is not None:
            remove_placement_group(self.placement_group)
            self.placement_group = None


def create_trainer_group(args: Namespace, *, total_steps: int | None = None) -> TrainerGroup:
    """Start ``--actor-num-nodes x --actor-num-gpus-per-node`` ranks and build their models;
    ``ray.init`` must have run.

    Raises:
        TimeoutError: the cluster cannot place one bundle per rank within
            :data:`PLACEMENT_TIMEOUT` s (names the bundles and the cluster's resources).
        The first failing rank's error while building the model.
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from vime.ray.cluster import ray_address
    from vime.ray.trainer_actor import trainer_env

    world = num_trainer_ranks(args)
    gpus = 1 if str(arg(args, "train_device")).startswith("cuda") else 0
    bundle = {"GPU": 1.0} if gpus else {"CPU": 1.0}
    pg = placement_group([dict(bundle) for _ in range(world)], strategy="PACK")
    if not pg.wait(PLACEMENT_TIMEOUT):
        remove_placement_group(pg)
        resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
        raise TimeoutError(
            f"--actor-num-nodes {arg(args, 'actor_num_nodes')} --actor-num-gpus-per-node "
            f"{arg(args, 'actor_num_gpus_per_node')}: Ray could not place {world} trainer "
            f"bundles of {bundle} in {PLACEMENT_TIMEOUT:g} s (cluster resources: "
            f"{resources}); lower the rank count or add nodes")
    env = trainer_env(args, gpus=gpus, ranks=int(arg(args, "actor_num_gpus_per_node")))
    actor_cls: Any = ray.remote(TrainerRank)
    actors: list[Any] = [actor_cls.options(
        num_cpus=0 if gpus else 1, num_gpus=gpus,
        runtime_env={"env_vars": env},
        scheduling_strategy=PlacementGroupSchedulingStrategy(
            placement_group=pg, placement_group_bundle_index=i)).remote()
        for i in range(world)]
    group = TrainerGroup(actors, pg)
    try:
        host, port = ray.get(actors[0].rendezvous.remote(
            world, loopback=ray_address(args) is None))
        _get_all([actor.setup.remote(args, rank, world, host, port, total_steps)
                  for rank, actor in enumerate(actors)])
    except BaseException:
        group.close(timeout=0)
        raise
    return group
