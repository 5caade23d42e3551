"""Trainer ranks (--actor-num-gpus-per-node 2 on the CPU): two real ``torch.distributed`` ranks
(gloo, FSDP2) against one rank: the same parameters after a step, checkpoints that resume
across rank counts; the token-balanced split; the flags' checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from ranks_helpers import batch, dynamic_args, rank_main
from trainer_helpers import make_args

from vime.backends.parallel import balanced_partition, contiguous_partition
from vime.backends.trainer import Trainer
from vime.config import parse_args
from vime.ray.engine_command import find_free_port

pytestmark = pytest.mark.unit

#: Relative tolerance of the issue: ||p_2ranks - p_1rank|| / ||p_1rank|| per tensor.
REL = 1e-5


def worst_relative(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert sorted(a) == sorted(b)
    return max(float((a[k] - b[k]).norm() / b[k].norm()) for k in b)


def state(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


@pytest.fixture(scope="module")
def runs(small_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One rank in this process and two spawned ranks, on the same batches: after step 0
    (from the model on disk) and after step 1 resumed from the one-rank checkpoint of step 0;
    plus the one-rank run resumed from the two-rank checkpoint."""
    import torch.multiprocessing as mp

    out = tmp_path_factory.mktemp("ranks")
    args = make_args(small_model)
    one = Trainer(args)
    initial = state(one)
    one_metrics = one.train(0, batch(args))
    after_step = state(one)
    one.save(0, str(out / "ckpt1"))
    mp.spawn(rank_main, args=(2, find_free_port(), args, str(out / "ckpt1"), str(out)),
             nprocs=2, join=True)
    one.train(1, batch(args, shift=1))
    from_two = Trainer(args)
    from_two.load(str(out / "ckpt"), 0)
    from_two_metrics = from_two.train(1, batch(args, shift=1))
    dynamic = Trainer(dynamic_args(args))
    dynamic.train(0, batch(args))
    return {"dynamic": (state(dynamic), torch.load(out / "dynamic.pt", weights_only=False)),
            "initial": initial, "one": (after_step, one_metrics), "resumed_one": state(one),
            "two": torch.load(out / "step.pt", weights_only=False),
            "sent": torch.load(out / "sent.pt", weights_only=False),
            "resumed_two": torch.load(out / "resumed.pt", weights_only=False),
            "from_two": (state(from_two), from_two_metrics, from_two.global_step)}


def test_two_ranks_step_equals_one_rank(runs: dict[str, Any]) -> None:
    one, one_metrics = runs["one"]
    two = runs["two"]
    assert worst_relative(one, runs["initial"]) > 1e-3   # the step moved the weights
    assert worst_relative(two["state"], one) < REL
    for key in ("train/loss", "train/pg_loss", "train/entropy", "train/grad_norm"):
        assert two["metrics"][key] == pytest.approx(one_metrics[key], rel=1e-5, abs=1e-7), key


def test_ranks_with_unequal_micro_batch_counts_equal_one_rank(runs: dict[str, Any]) -> None:
    """--use-dynamic-batch-size: the rank with fewer micro-batches runs a zero-loss pass (FSDP2's
    collectives need both ranks); the update is still one rank's. With --use-kl-loss, whose
    reference model is sharded too (each rank holds half of it)."""
    one, two = runs["dynamic"]
    assert runs["sent"]["ref_sharded"]
    assert worst_relative(two["state"], one) < REL


def test_a_one_rank_checkpoint_resumes_on_two_ranks(runs: dict[str, Any]) -> None:
    """Adam's moments and the schedule come back: the second step matches the one-rank run."""
    assert runs["resumed_two"]["global_step"] == 2
    assert worst_relative(runs["resumed_two"]["state"], runs["resumed_one"]) < REL


def test_a_two_rank_checkpoint_resumes_on_one_rank(runs: dict[str, Any]) -> None:
    params, _, global_step = runs["from_two"]
    assert global_step == 2
    assert worst_relative(params, runs["resumed_one"]) < REL


def test_nccl_sender_gathers_full_tensors_with_the_other_rank(runs: dict[str, Any]) -> None:
    """--weight-sync nccl on two ranks: rank 0 alone sends; rank 1 (NcclShardFollower) takes
    part in every FSDP2 gather, so rank 0 gets each parameter whole (and the tied head)."""
    from vime.ray.weight_sync import TIED_HEAD

    sent, state = runs["sent"]["sent"], runs["sent"]["state"]
    assert runs["sent"]["sharded"]
    assert sent[TIED_HEAD].shape == state["model.embed_tokens.weight"].shape
    for name, tensor in state.items():
        assert torch.equal(sent[name], tensor), name


def test_contiguous_and_token_balanced_splits() -> None:
    assert contiguous_partition([5, 1, 1, 1, 9], 2) == [[0, 1, 2], [3, 4]]
    # whole rollouts, equal counts, token sums 13 and 12 instead of 7 and 18 in order
    assert balanced_partition([5, 1, 1, 6, 9, 3], 2) == [[2, 4, 5], [0, 1, 3]]
    assert balanced_partition([4, 4, 4], 3) == [[0], [1], [2]]


def test_rank_flags_are_checked(small_model: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--hf-checkpoint", str(small_model), "--rollout-batch-size", "2",
            "--n-samples-per-prompt", "2", "--num-rollout", "1"]
    args = parse_args([*base, "--actor-num-nodes", "2", "--actor-num-gpus-per-node", "2",
                       "--balance-data"])
    assert (args.actor_num_nodes, args.actor_num_gpus_per_node, args.balance_data) == (2, 2, True)
    for extra, said in ((["--actor-num-gpus-per-node", "0"], "must be >= 1"),
                        (["--actor-num-gpus-per-node", "8"], "without data"),
                        (["--actor-num-gpus-per-node", "2", "--single-process"],
                         "drop --single-process")):
        with pytest.raises(SystemExit) as exc:
            parse_args([*base, *extra])
        assert exc.value.code == 2
        assert said in capsys.readouterr().err
