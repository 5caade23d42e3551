"""Two trainer ranks as Ray actors (the session Ray cluster): one placement group, one gloo
process group, FSDP2; the weights rank 0 writes for the engines equal a one-rank step's."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from vime.data.batch_builder import BatchBuilder
from vime.utils.types import Sample

pytestmark = pytest.mark.integration


def _args(model: Path, **kw: Any) -> Namespace:
    base: dict[str, Any] = dict(
        hf_checkpoint=str(model), lr=1e-2, loss_type="policy_loss", advantage_estimator="grpo",
        rollout_batch_size=2, n_samples_per_prompt=2, global_batch_size=4, micro_batch_size=2,
        train_device="cpu", seed=0, rollout_temperature=1.0, clip_grad=1.0, eps_clip=0.2,
        rewards_normalization=True, grpo_std_normalization=True, actor_num_nodes=1,
        actor_num_gpus_per_node=2)
    base.update(kw)
    return Namespace(**base)


def _batch(args: Namespace) -> dict[str, Any]:
    samples = [Sample(index=i, group_index=i // 2, tokens=[1, 2, 3] + [10 + 7 * i] * (1 + i % 3),
                      response_length=1 + i % 3, reward=float(i % 2),
                      status=Sample.Status.COMPLETED) for i in range(4)]
    return BatchBuilder.convert(args, samples)


def test_two_ray_ranks_write_the_weights_of_a_one_rank_step(
        small_model: Path, ray_cluster: Any, tmp_path: Path) -> None:
    """On the one-layer Llama (no biases: the tiny Qwen2's k_proj biases have a zero gradient
    in exact arithmetic, so Adam turns rounding noise into 1e-4-relative steps either way)."""
    from safetensors.torch import load_file

    from vime.backends.trainer import Trainer
    from vime.ray.trainer_group import create_trainer_group

    args = _args(small_model)
    before = len(ray_cluster.util.placement_group_table())
    group = create_trainer_group(args, total_steps=4)
    try:
        assert len(group.actors) == 2
        data_ref = ray_cluster.put(_batch(args))   # each rank fetches it from the object store
        metrics = group.call("train", 0, data_ref)
        written = group.call("write_weights", str(tmp_path / "v000001"))
        saved = group.call("save", 0, str(tmp_path / "ckpt"))
    finally:
        group.close()
    states = ray_cluster.util.placement_group_table().values()
    assert sum(s["state"] != "REMOVED" for s in states) <= before   # the bundles are freed

    one = Trainer(args)   # no process group here: the one-rank path
    one_metrics = one.train(0, _batch(args))
    assert metrics["train/loss"] == pytest.approx(one_metrics["train/loss"], rel=1e-5, abs=1e-7)
    ranks = load_file(str(Path(written) / "model.safetensors"))
    ours = {k: v.detach() for k, v in one.model.state_dict().items()}
    assert "lm_head.weight" in ranks   # the engines' reload needs it (tied or not)
    worst = max(float((ranks[k] - v).norm() / v.norm()) for k, v in ours.items())
    assert worst < 1e-5, worst
    assert (Path(saved) / "trainer_state.pt").is_file()
