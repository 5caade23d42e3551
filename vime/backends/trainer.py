"""The torch trainer: a Hugging Face causal LM, the v1 losses, AdamW, checkpoints, weight export.

Usage::

    trainer = Trainer(args)                       # plain class (tests, single process)
    metrics = trainer.train(rollout_id, data)     # data: BatchBuilder.convert output
    trainer.write_weights(version_dir)            # safetensors for the engines
    trainer.save(rollout_id); trainer.load(load_dir, rollout_id)

    actor = create_trainer_actor(args)            # the same class as a Ray actor
    ray.get(actor.train.remote(rollout_id, data_ref))

One ``train`` call runs ``num_steps = rollouts // global_batch_size`` optimiser steps
(``vime.data.batch_builder.split_into_steps``); each step accumulates gradients over
micro-batches of ``--micro-batch-size`` samples (or ``--max-tokens-per-gpu`` tokens with
``--use-dynamic-batch-size``), clips the gradient norm to ``--clip-grad`` and steps AdamW and the
learning-rate schedule. ``--loss-type policy_loss`` compares against ``rollout_log_probs``
(``--use-rollout-logprobs``) or log probs recomputed by the model before the first step of the
rollout; with ``--use-kl-loss`` a frozen copy of the initial model gives reference log probs.

Devices: ``--train-device cpu`` (fp32) or ``cuda`` (one GPU, fp32 weights). docs/en/training.md
says how this extends to several GPUs.

The loss formulas are in ``vime.backends.losses``.
"""

from __future__ import annotations

import time
from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from vime.backends import checkpoint as ckpt
from vime.backends.batching import gather_response, micro_batches, pad_batch, pad_per_token
from vime.backends.losses import (
    argmax_hits,
    entropy_from_logits,
    greedy_match,
    kl_k3,
    policy_loss,
    reduce_sample_mean,
    sft_loss,
    token_log_probs,
)
from vime.backends.optim import build_optimizer, build_scheduler
from vime.backends.weights import write_weights
from vime.config import arg
from vime.data.batch_builder import split_into_steps

__all__ = ["SUPPORTED_ESTIMATORS", "SUPPORTED_LOSSES", "Trainer", "create_trainer_actor"]

SUPPORTED_LOSSES = ("policy_loss", "sft_loss")
SUPPORTED_ESTIMATORS = ("grpo", "gspo", "reinforce_plus_plus_baseline")


def _device(args: Namespace) -> torch.device:
    name = arg(args, "train_device")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--train-device {name}: no CUDA device is visible to this process "
                         "(torch.cuda.is_available() is False); use --train-device cpu")
    return torch.device(name)


class Trainer:
    """Plain-class trainer core (the Ray actor wraps it unchanged).

    Args:
        args: reads ``hf_checkpoint``, ``train_device``, ``seed``, ``loss_type``,
            ``advantage_estimator``, optimiser and schedule arguments, ``micro_batch_size``,
            ``use_dynamic_batch_size``/``max_tokens_per_gpu``, ``eps_clip(_high)``,
            ``use_kl_loss``/``kl_loss_coef``, ``kl_coef``, ``entropy_coef``,
            ``use_rollout_logprobs``, ``rollout_temperature``, ``save``, ``num_rollout``,
            ``num_steps_per_rollout``.
        total_steps: optimiser steps of the run, the schedule's horizon (default:
            ``num_rollout * num_steps_per_rollout`` when both are known).

    Raises:
        ValueError: no ``--hf-checkpoint``; an unusable ``--train-device``.
        NotImplementedError: ``--loss-type`` or ``--advantage-estimator`` outside v1's set;
            ``--kl-coef`` != 0 (use ``--use-kl-loss``).
    """

    def __init__(self, args: Namespace, *, total_steps: int | None = None) -> None:
        from transformers import AutoModelForCausalLM

        self.args = args
        loss_type = arg(args, "loss_type")
        if loss_type not in SUPPORTED_LOSSES:
            raise NotImplementedError(f"--loss-type {loss_type} is not implemented in vime v1; "
                                      f"use one of {SUPPORTED_LOSSES}")
        estimator = arg(args, "advantage_estimator")
        if loss_type == "policy_loss" and estimator not in SUPPORTED_ESTIMATORS:
            raise NotImplementedError(f"--advantage-estimator {estimator} is not implemented in "
                                      f"vime v1's trainer; use one of {SUPPORTED_ESTIMATORS}")
        if float(arg(args, "kl_coef")) != 0.0:
            raise NotImplementedError("--kl-coef (a KL penalty in the reward) is not implemented "
                                      "in vime v1; use --use-kl-loss --kl-loss-coef C instead")
        if not arg(args, "hf_checkpoint"):
            raise ValueError("--hf-checkpoint is required: the trainer loads its model from it")
        self.device = _device(args)
        torch.manual_seed(int(arg(args, "seed")))
        self.model = AutoModelForCausalLM.from_pretrained(
            args.hf_checkpoint, dtype=torch.float32).to(self.device)  # type: ignore[arg-type]
        self.model.train()
        self.pad_id = int(getattr(self.model.config, "pad_token_id", None) or 0)
        self.ref_model = None
        if arg(args, "use_kl_loss"):
            self.ref_model = AutoModelForCausalLM.from_pretrained(
                args.hf_checkpoint, dtype=torch.float32).to(self.device).eval()  # type: ignore[arg-type]
            self.ref_model.requires_grad_(False)
        if total_steps is None and arg(args, "num_rollout"):
            total_steps = int(args.num_rollout) * int(arg(args, "num_steps_per_rollout") or 1)
        self.total_steps = total_steps
        self.optimizer = build_optimizer(self.model, args)
        self.scheduler = build_scheduler(self.optimizer, args, total_steps)
        self.global_step = 0

    # ---- forward helpers ---------------------------------------------------------------------

    def _response_log_probs(self, model: torch.nn.Module, tokens: Sequence[Sequence[int]],
                            response_lengths: Sequence[int], *, with_stats: bool = False
                            ) -> tuple[torch.Tensor, torch.Tensor,
                                       tuple[torch.Tensor, torch.Tensor] | None]:
        """``(log_probs, valid, stats)``, each ``(B, R_max)``, response tokens left-aligned;
        ``stats`` (``with_stats``) is ``(entropy, argmax_hits)`` (see ``losses``)."""
        batch = pad_batch(tokens, pad_id=self.pad_id, side="right", device=self.device)
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                       position_ids=batch.position_ids).logits
        temperature = float(arg(self.args, "rollout_temperature"))
        lp, valid = gather_response(token_log_probs(logits, batch.input_ids, temperature),
                                    batch, response_lengths)
        if not with_stats:
            return lp, valid, None
        ent, _ = gather_response(entropy_from_logits(logits, temperature), batch,
                                 response_lengths)  # with grad: --entropy-coef
        with torch.no_grad():
            hits, _ = gather_response(argmax_hits(logits, batch.input_ids), batch,
                                      response_lengths)
        return lp, valid, (ent, hits)

    @torch.no_grad()
    def compute_log_probs(self, tokens: Sequence[Sequence[int]], response_lengths: Sequence[int],
                          *, micro_batch_size: int = 8, reference: bool = False
                          ) -> list[list[float]]:
        """Log probs of each sample's response tokens under the current (or reference) model.

        Args:
            tokens: ``list[list[int]]`` prompt + response ids.
            response_lengths: response tokens per sample.

        Returns:
            ``list[list[float]]``, ``response_lengths[i]`` natural-log probs for sample ``i``
            (at ``--rollout-temperature``).
        """
        model = self.ref_model if reference else self.model
        assert model is not None
        was_training = model.training
        model.eval()
        out: list[list[float]] = []
        try:
            for rows in micro_batches([len(t) for t in tokens], micro_batch_size=micro_batch_size):
                lp, _, _ = self._response_log_probs(model, [tokens[i] for i in rows],
                                                    [response_lengths[i] for i in rows])
                out += [lp[k, :response_lengths[i]].tolist() for k, i in enumerate(rows)]
        finally:
            model.train(was_training)
        return out

    # ---- training ----------------------------------------------------------------------------

    def train(self, rollout_id: int, data: dict[str, Any]) -> dict[str, float]:
        """Run this rollout's optimiser steps on converted data.

        Args:
            rollout_id: the rollout step (for hooks and logs).
            data: ``BatchBuilder.convert`` columns (one entry per sample).

        Returns:
            Mean over the steps of ``train/loss``, ``train/pg_loss`` or ``train/sft_loss``,
            ``train/pg_clipfrac``, ``train/ppo_kl``, ``train/kl_loss``, ``train/entropy``,
            ``train/grad_norm``, ``train/lr``, plus ``train/num_steps`` and
            ``train/time`` (seconds).

        Raises:
            ValueError: ``--use-rollout-logprobs`` without ``rollout_log_probs`` in the data.
        """
        t0 = time.perf_counter()
        args = self.args
        post = arg(args, "rollout_data_postprocess_path")
        if post:
            from vime.utils.misc import load_function

            load_function(post, hook="rollout_data_postprocess_path")(args, rollout_id, data)
        policy = arg(args, "loss_type") == "policy_loss"
        if policy:
            if arg(args, "use_rollout_logprobs"):
                if "rollout_log_probs" not in data:
                    raise ValueError("--use-rollout-logprobs: the samples carry no "
                                     "rollout_log_probs (the rollout must store one sampler "
                                     "log prob per response token)")
                data["old_log_probs"] = data["rollout_log_probs"]
            else:
                data["old_log_probs"] = self.compute_log_probs(
                    data["tokens"], data["response_lengths"],
                    micro_batch_size=max(1, int(arg(args, "micro_batch_size"))))
            if self.ref_model is not None:
                data["ref_log_probs"] = self.compute_log_probs(
                    data["tokens"], data["response_lengths"], reference=True,
                    micro_batch_size=max(1, int(arg(args, "micro_batch_size"))))
        steps = split_into_steps(args, data)
        per_step = [self._train_step(step, policy) for step in steps]
        keys = sorted({k for s in per_step for k in s})
        out = {f"train/{k}": sum(s[k] for s in per_step if k in s) / len(per_step) for k in keys}
        out["train/num_steps"] = float(len(steps))
        out["train/time"] = time.perf_counter() - t0
        return out

    def _train_step(self, step: dict[str, Any], policy: bool) -> dict[str, float]:
        args = self.args
        n = len(step["tokens"])
        # FAILED rollouts (``failed`` column, --hook-failure fail-sample) have zero masks and
        # are not counted: the update equals that of a step that never had them.
        failed = step.get("failed") or [0] * n
        num_rollouts = max(1, len({rid for rid, f in zip(step["rollout_ids"], failed, strict=True)
                                   if not f}))
        max_tokens = (arg(args, "max_tokens_per_gpu")
                      if arg(args, "use_dynamic_batch_size") else None)
        chunks = micro_batches(step["total_lengths"],
                               micro_batch_size=int(arg(args, "micro_batch_size")),
                               max_tokens=max_tokens)
        advantages = self._advantages(step) if policy else None
        entropy_coef = float(arg(args, "entropy_coef"))
        kl_coef = float(arg(args, "kl_loss_coef"))
        sums: dict[str, float] = {}
        self.optimizer.zero_grad(set_to_none=True)
        for rows in chunks:
            tokens = [step["tokens"][i] for i in rows]
            rlens = [step["response_lengths"][i] for i in rows]
            lp, valid, extra = self._response_log_probs(self.model, tokens, rlens, with_stats=True)
            assert extra is not None
            ent, hits = extra
            width = lp.shape[1]
            mask = pad_per_token([step["loss_masks"][i] for i in rows], width,
                                 device=self.device) * valid
            denom = torch.tensor([step["rollout_mask_sums"][i] for i in rows],
                                 dtype=torch.float32, device=self.device)
            if policy:
                assert advantages is not None
                old = pad_per_token([step["old_log_probs"][i] for i in rows], width,
                                    device=self.device)
                adv = advantages[rows, :width]
                loss, stats = policy_loss(
                    lp, old, adv, mask, denom, num_rollouts,
                    eps_clip=float(arg(args, "eps_clip")),
                    eps_clip_high=arg(args, "eps_clip_high"),
                    sequence_level=arg(args, "advantage_estimator") == "gspo")
                if self.ref_model is not None:
                    ref = pad_per_token([step["ref_log_probs"][i] for i in rows], width,
                                        device=self.device)
                    kl = reduce_sample_mean(kl_k3(lp, ref), mask, denom, num_rollouts)
                    loss = loss + kl_coef * kl
                    stats["kl_loss"] = float(kl.detach())
            else:
                loss, stats = sft_loss(lp, mask, denom, num_rollouts)
            ent_term = reduce_sample_mean(ent, mask, denom, num_rollouts)
            if entropy_coef:
                loss = loss - entropy_coef * ent_term
            stats["entropy"] = float(ent_term.detach())
            stats["greedy_match"] = greedy_match(hits, mask)
            stats["loss"] = float(loss.detach())
            loss.backward()  # type: ignore[no-untyped-call]
            for k, v in stats.items():
                # additive terms (sample-mean losses) sum over micro-batches; ratios average
                weight = 1.0 if k in ("loss", "pg_loss", "sft_loss", "kl_loss", "entropy") \
                    else len(rows) / n
                sums[k] = sums.get(k, 0.0) + v * weight
        clip = float(arg(args, "clip_grad") or 0.0)
        params = [p for p in self.model.parameters() if p.requires_grad]
        if clip > 0:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
        else:
            grad_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params
                                                             if p.grad is not None]))
        sums["lr"] = float(self.optimizer.param_groups[0]["lr"])
        self.optimizer.step()
        self.scheduler.step()
        self.global_step += 1
        sums["grad_norm"] = grad_norm
        return sums

    def _advantages(self, step: dict[str, Any]) -> torch.Tensor:
        """``(B, R_max)`` per-token advantages: each sample's normalised reward on its tokens
        (REINFORCE++-baseline: then whitened over the step's trainable tokens)."""
        width = max(step["response_lengths"])
        rewards = torch.tensor(step["rewards"], dtype=torch.float32, device=self.device)
        adv = rewards.unsqueeze(-1).expand(-1, width).clone()
        if arg(self.args, "advantage_estimator") == "reinforce_plus_plus_baseline":
            mask = pad_per_token(step["loss_masks"], width, device=self.device)
            n = mask.sum().clamp(min=1)
            mean = (adv * mask).sum() / n
            var = (((adv - mean) * mask) ** 2).sum() / n
            adv = (adv - mean) * torch.rsqrt(var + 1e-8)
        return adv

    # ---- weights and checkpoints -------------------------------------------------------------

    def write_weights(self, out_dir: str) -> str:
        """Write the current weights as safetensors into ``out_dir`` (see ``weights.py``)."""
        return str(write_weights(self.model, out_dir))

    def save(self, rollout_id: int, save_dir: str | None = None) -> str:
        """Write model (``save_pretrained`` + tokenizer files of ``--hf-checkpoint``), optimiser,
        scheduler, optimiser step and RNG states to ``<save>/iter_<rollout_id>``; returns it.

        Raises:
            ValueError: neither ``save_dir`` nor ``--save`` is set.
        """
        root = save_dir or arg(self.args, "save")
        if not root:
            raise ValueError("Trainer.save: no checkpoint folder; pass --save DIR")
        target = ckpt.iteration_dir(root, rollout_id)
        model_dir = target / "model"
        model_dir.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(model_dir))
        _copy_tokenizer_files(Path(self.args.hf_checkpoint), model_dir)
        torch.save({"optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "global_step": self.global_step,
                    "rng": ckpt.get_rng_state()}, target / "trainer_state.pt")
        return str(target)

    def load(self, load_dir: str, rollout_id: int) -> None:
        """Restore what :meth:`save` wrote for ``rollout_id`` under ``load_dir``.

        Raises:
            FileNotFoundError: the iteration folder or its files are missing (names the path).
        """
        from safetensors.torch import load_file

        target = ckpt.iteration_dir(load_dir, rollout_id)
        weights = target / "model" / "model.safetensors"
        state_path = target / "trainer_state.pt"
        for path in (weights, state_path):
            if not path.is_file():
                raise FileNotFoundError(f"--load {load_dir}: checkpoint file {path} is missing")
        state = load_file(str(weights), device=str(self.device))
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        missing = [k for k in missing if k != "lm_head.weight"
                   or not self.model.config.tie_word_embeddings]
        if missing or unexpected:
            raise ValueError(f"--load {load_dir}: {weights} does not fit the model: missing "
                             f"{missing[:5]}, unexpected {unexpected[:5]}")
        if self.model.config.tie_word_embeddings:
            self.model.tie_weights()
        trainer_state = torch.load(state_path, map_location=self.device, weights_only=False)
        self.optimizer.load_state_dict(trainer_state["optimizer"])
        self.scheduler.load_state_dict(trainer_state["scheduler"])
        self.global_step = int(trainer_state["global_step"])
        ckpt.set_rng_state(trainer_state["rng"])

    def ping(self) -> bool:
        """True (lets a caller wait until the actor has built the model)."""
        return True


def _copy_tokenizer_files(src: Path, dst: Path) -> None:
    import shutil

    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "chat_template.jinja", "generation_config.json", "vocab.json", "merges.txt"):
        if (src / name).is_file() and not (dst / name).exists():
            shutil.copy2(src / name, dst / name)


def create_trainer_actor(args: Namespace, *, total_steps: int | None = None) -> Any:
    """Start :class:`Trainer` as a Ray actor (one GPU with ``--train-device cuda``, else one
    CPU); returns the actor handle. ``ray.init`` must have run."""
    import os

    import ray

    gpus = 1 if str(arg(args, "train_device")).startswith("cuda") else 0
    threads = os.environ.get("OMP_NUM_THREADS") or str(os.cpu_count() or 1)
    actor_cls = ray.remote(num_cpus=0, num_gpus=gpus,
                           runtime_env={"env_vars": {"OMP_NUM_THREADS": threads}})(Trainer)
    return actor_cls.remote(args, total_steps=total_steps)
