"""Trainer core on a very small local Llama: policy/KL/GSPO paths, checkpoints, weight export,
argument errors; logging and checkpoint helpers."""

from __future__ import annotations

import json
import math
from argparse import Namespace
from pathlib import Path

import pytest
import torch
from trainer_helpers import make_args

from vime.backends import checkpoint as ckpt
from vime.backends.trainer import Trainer
from vime.backends.weights import prune_versions, version_dir, write_weights
from vime.data.batch_builder import BatchBuilder
from vime.utils.logging_utils import MetricsLog, eval_metrics, pass_at_k, rollout_metrics
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def batch(args: Namespace, rewards: tuple[float, ...] = (0.0, 1.0, 0.0, 1.0),
          rollout_log_probs: tuple[float, ...] = (-1.0, -1.0, -1.0)) -> dict[str, object]:
    """Two groups of two samples (prompt [1, 2, 3], three response tokens each)."""
    samples = [Sample(index=i, group_index=i // 2, tokens=[1, 2, 3, 10 + i, 20 + i, 30],
                      response_length=3, reward=rewards[i], status=Sample.Status.COMPLETED,
                      rollout_log_probs=list(rollout_log_probs))
               for i in range(4)]
    return BatchBuilder.convert(args, samples)


def test_policy_step_with_kl_and_entropy(small_model: Path) -> None:
    args = make_args(small_model, use_kl_loss=True, kl_loss_coef=0.1, entropy_coef=0.01)
    trainer = Trainer(args)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    out = trainer.train(0, batch(args))
    assert out["train/num_steps"] == 1.0
    assert out["train/kl_loss"] == pytest.approx(0.0, abs=1e-7)  # policy == reference
    assert out["train/ppo_kl"] == pytest.approx(0.0, abs=1e-6)  # recomputed old log probs
    assert out["train/pg_clipfrac"] == 0.0 and out["train/lr"] == pytest.approx(1e-2)
    assert out["train/entropy"] > 0 and out["train/grad_norm"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(),
                                                     strict=True))
    second = trainer.train(1, batch(args))
    assert second["train/kl_loss"] > 0  # the policy moved away from the reference
    # the phases of train/time: each measured (> 0: log probs with a reference model), and
    # together within the call's own time
    phases = [f"perf/train_{p}_time" for p in ("log_probs", "advantages", "forward_backward",
                                               "optimizer_step")]
    assert all(second[k] > 0 for k in phases), {k: second[k] for k in phases}
    assert sum(second[k] for k in phases) <= second["train/time"]


def _first_step(model: Path, estimator: str, **kw: object) -> dict[str, float]:
    """One optimiser step from the saved initial weights (the same start for every estimator)."""
    rewards = kw.pop("rewards", (0.0, 1.0, 0.0, 1.0))
    lps = kw.pop("rollout_log_probs", (-1.0, -1.0, -1.0))
    args = make_args(model, advantage_estimator=estimator, **kw)
    out = Trainer(args).train(0, batch(args, rewards, lps))  # type: ignore[arg-type]
    assert out["train/pg_loss"] == pytest.approx(out["train/loss"], abs=1e-6)  # no KL/entropy
    return out


def test_gspo_equals_grpo_on_policy(small_model: Path) -> None:
    """At ratio 1 (old log probs recomputed) the sequence ratio is 1 too and its gradient flows
    through every token, so GSPO's first step is GRPO's."""
    grpo = _first_step(small_model, "grpo")
    gspo = _first_step(small_model, "gspo")
    assert grpo["train/ppo_kl"] == pytest.approx(0.0, abs=1e-6)
    assert gspo["train/pg_loss"] == pytest.approx(grpo["train/pg_loss"], abs=1e-6)
    assert gspo["train/grad_norm"] == pytest.approx(grpo["train/grad_norm"], rel=1e-4)


def test_gspo_clips_one_sequence_ratio_grpo_each_token(small_model: Path) -> None:
    """Off policy (rollout log probs that differ per token): GRPO clips each token's ratio,
    GSPO the sample's geometric-mean ratio; each loss matches its formula, and they differ."""
    lps = (-1.0, -3.0, -5.0)
    args = make_args(small_model, use_rollout_logprobs=True)
    data = batch(args, rollout_log_probs=lps)
    lp = torch.tensor(Trainer(args).compute_log_probs(data["tokens"],  # type: ignore[arg-type]
                                                      data["response_lengths"]))  # type: ignore[arg-type]
    log_ratio = lp - torch.tensor(lps)
    adv = torch.tensor(data["rewards"]).unsqueeze(-1)  # type: ignore[arg-type]

    def expected(ratio: torch.Tensor) -> float:
        per_token = torch.maximum(-adv * ratio, -adv * ratio.clamp(0.8, 1.2))  # eps_clip 0.2
        return float(per_token.mean(-1).mean())  # token mean per sample, mean over 4 rollouts

    token_level = expected(log_ratio.exp())
    sequence_level = expected(log_ratio.mean(-1, keepdim=True).exp().expand_as(log_ratio))
    assert abs(token_level - sequence_level) > 0.05  # the batch tells the two apart
    grpo = _first_step(small_model, "grpo", use_rollout_logprobs=True, rollout_log_probs=lps)
    gspo = _first_step(small_model, "gspo", use_rollout_logprobs=True, rollout_log_probs=lps)
    assert grpo["train/pg_loss"] == pytest.approx(token_level, rel=1e-4)
    assert gspo["train/pg_loss"] == pytest.approx(sequence_level, rel=1e-4)


def test_reinforce_plus_plus_baseline_whitens_over_the_step(small_model: Path) -> None:
    """GRPO divides each group by its (unbiased) std: rewards (0, 1) -> advantages -+1/sqrt(2);
    REINFORCE++-baseline only centres each group, then whitens over the step's tokens: -+1. At
    ratio 1 the gradient is linear in the advantages, so its norm grows by sqrt(2)."""
    grpo = _first_step(small_model, "grpo")
    rpp = _first_step(small_model, "reinforce_plus_plus_baseline")
    assert grpo["train/pg_loss"] == pytest.approx(0.0, abs=1e-6)  # centred advantages
    assert rpp["train/pg_loss"] == pytest.approx(0.0, abs=1e-6)
    assert rpp["train/grad_norm"] == pytest.approx(math.sqrt(2) * grpo["train/grad_norm"],
                                                   rel=1e-4)
    # Scaling one group's rewards: GRPO's per-group std erases it, the step-wide whitening of
    # REINFORCE++-baseline keeps group 1's advantages three times group 0's.
    spread = (0.0, 1.0, 0.0, 3.0)
    grpo_spread = _first_step(small_model, "grpo", rewards=spread)
    rpp_spread = _first_step(small_model, "reinforce_plus_plus_baseline", rewards=spread)
    assert grpo_spread["train/grad_norm"] == pytest.approx(grpo["train/grad_norm"], rel=1e-5)
    assert rpp_spread["train/grad_norm"] != pytest.approx(rpp["train/grad_norm"], rel=1e-3)


def test_rollout_logprobs_are_used_when_asked(small_model: Path) -> None:
    args = make_args(small_model, use_rollout_logprobs=True)
    out = Trainer(args).train(0, batch(args))
    assert out["train/ppo_kl"] != pytest.approx(0.0, abs=1e-3)  # -1.0 placeholders differ
    data = batch(args)
    del data["rollout_log_probs"]
    with pytest.raises(ValueError, match="--use-rollout-logprobs: the samples carry no rollout_log_probs"):
        Trainer(args).train(0, data)


def test_micro_batches_accumulate_to_the_same_step(small_model: Path) -> None:
    one = Trainer(make_args(small_model, micro_batch_size=4))
    two = Trainer(make_args(small_model, micro_batch_size=1))
    a = one.train(0, batch(one.args))
    b = two.train(0, batch(two.args))
    assert a["train/loss"] == pytest.approx(b["train/loss"], abs=1e-6)
    assert a["train/grad_norm"] == pytest.approx(b["train/grad_norm"], rel=1e-4)
    for p, q in zip(one.model.parameters(), two.model.parameters(), strict=True):
        assert torch.allclose(p, q, atol=1e-6)


def test_save_load_round_trip(small_model: Path, tmp_path: Path) -> None:
    args = make_args(small_model, save=str(tmp_path / "ckpt"), lr_warmup_steps=3)
    trainer = Trainer(args)
    trainer.train(0, batch(args))
    trainer.save(0)
    ckpt.mark_complete(args.save, 0)
    assert ckpt.latest_iteration(args.save) == 0
    expected = trainer.train(1, batch(args))
    resumed = Trainer(args)
    resumed.load(args.save, 0)
    assert resumed.global_step == 1
    got = resumed.train(1, batch(args))
    assert got["train/loss"] == expected["train/loss"] and got["train/lr"] == expected["train/lr"]
    with pytest.raises(FileNotFoundError, match=r"iter_0000009/model/model.safetensors is missing"):
        resumed.load(args.save, 9)


def test_write_weights_includes_tied_lm_head(small_model: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    trainer = Trainer(make_args(small_model))
    path = write_weights(trainer.model, version_dir(tmp_path, 1))
    tensors = load_file(str(path / "model.safetensors"))
    assert torch.equal(tensors["lm_head.weight"], tensors["model.embed_tokens.weight"])
    write_weights(trainer.model, version_dir(tmp_path, 2))
    write_weights(trainer.model, version_dir(tmp_path, 3))
    assert [p.name for p in prune_versions(tmp_path, keep=2)] == ["v000001"]


@pytest.mark.parametrize("kw,message", [
    ({"advantage_estimator": "ppo"}, "--advantage-estimator ppo is not implemented"),
    ({"kl_coef": 0.1}, "--kl-coef .* use --use-kl-loss"),
])
def test_unsupported_settings_raise(small_model: Path, kw: dict[str, object], message: str) -> None:
    with pytest.raises(NotImplementedError, match=message):
        Trainer(make_args(small_model, **kw))


def test_missing_checkpoint_and_cuda_errors(small_model: Path) -> None:
    with pytest.raises(ValueError, match="--hf-checkpoint is required"):
        Trainer(make_args(small_model, hf_checkpoint=None))
    with pytest.raises(ValueError, match="custom_loss needs --custom-loss-function-path"):
        Trainer(make_args(small_model, loss_type="custom_loss"))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="--train-device cuda: no CUDA device"):
            Trainer(make_args(small_model, train_device="cuda"))


def test_latest_iteration_rejects_garbage(tmp_path: Path) -> None:
    assert ckpt.latest_iteration(tmp_path) is None
    (tmp_path / ckpt.LATEST_FILE).write_text("abc")
    with pytest.raises(ValueError, match="expected a rollout id"):
        ckpt.latest_iteration(tmp_path)


def test_metrics_helpers(tmp_path: Path) -> None:
    samples = [Sample(index=0, tokens=[1, 2, 3], response_length=2, reward=1.0,
                      status=Sample.Status.TRUNCATED),
               Sample(index=1, tokens=[1, 2], response_length=1, reward=0.0)]
    m = rollout_metrics(Namespace(reward_key=None), samples, rollout_time=0.5)
    assert m["rollout/raw_reward"] == 0.5 and m["rollout/truncated_ratio"] == 0.5
    assert m["perf/tokens_per_s"] == 6.0 and m["rollout/response_len/max"] == 2.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 4) == 1.0
    e = eval_metrics(Namespace(n_samples_per_eval_prompt=2, log_passrate=True),
                     {"d": {"rewards": [1.0, 0.0, 0.0, 0.0], "truncated": [True, False] * 2}})
    assert e == {"eval/d": 0.25, "eval/d-truncated_ratio": 0.5, "eval/d-pass@1": 0.25,
                 "eval/d-pass@2": 0.5}
    log = MetricsLog(tmp_path)
    log.write(3, {"a": 1.5, "b": float("nan")})
    line = json.loads((tmp_path / "metrics.jsonl").read_text())
    assert line["rollout_id"] == 3 and line["a"] == 1.5 and line["b"] is None


def test_sft_reports_greedy_match_which_rises_as_the_batch_is_learned(small_model: Path) -> None:
    args = make_args(small_model, loss_type="sft_loss", lr=3e-2)
    samples = [Sample(index=i, group_index=i, tokens=[1, 2 + i, 10 + i, 20 + i, 30],
                      response_length=3, reward=0.0, status=Sample.Status.COMPLETED)
               for i in range(4)]  # distinct prompts: each answer can be learned
    trainer = Trainer(args)
    first = last = trainer.train(0, BatchBuilder.convert(args, samples))["train/greedy_match"]
    for step in range(1, 200):
        last = trainer.train(step, BatchBuilder.convert(args, samples))["train/greedy_match"]
        if last == 1.0:
            break
    assert first == 0.0 and last == 1.0  # every response token became the argmax
