"""The torch trainer: a Hugging Face causal LM, the losses and hooks, AdamW, checkpoints, weights.

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
Advantages are computed once per rollout step (``vime.backends.advantages``, or
``--custom-advantage-function-path``); ``--use-tis`` re-weights the per-token pg loss and
``--get-mismatch-metrics`` measures the trainer-vs-engine gap (``vime.backends.tis``); the four
trainer hooks are called and checked in ``vime.backends.trainer_hooks``.

Devices: ``--train-device cpu`` (fp32) or ``cuda`` (one GPU per rank, fp32 weights). With a
``torch.distributed`` process group of several ranks (``--actor-num-gpus-per-node``,
``vime.ray.trainer_group``) the model is sharded with FSDP2 and each rank trains its share of
every step (``vime.backends.parallel``; docs/en/training.md, "Trainer ranks").

Each micro-batch's loss path (built-in ``policy_loss``/``sft_loss``, or the batch a custom loss
receives) is in ``vime.backends.loss_paths``, the formulas in ``vime.backends.losses``; the
forward pass and log probs in ``vime.backends.log_probs``; the checkpoint files that ``save`` and
``load`` write and read in ``vime.backends.checkpoint``.
"""

from __future__ import annotations

import time
from argparse import Namespace
from collections.abc import Sequence
from typing import Any

import torch

from vime.backends import checkpoint as ckpt
from vime.backends.advantages import custom_advantage_data, estimator_advantages
from vime.backends.batching import PaddedBatch, float_tensors, micro_batches
from vime.backends.log_probs import compute_log_probs, forward, response_log_probs
from vime.backends.loss_paths import (
    LossSettings,
    PgReducer,
    ResponseOutputs,
    TisFunction,
    builtin_loss,
    custom_loss_batch,
)
from vime.backends.optim import build_optimizer, build_scheduler
from vime.backends.parallel import DataParallel
from vime.backends.tis import mismatch_metrics, vanilla_tis_function
from vime.backends.trainer_hooks import TrainerHooks
from vime.backends.weights import write_weights
from vime.config import arg
from vime.contract.estimators import ESTIMATORS
from vime.data.batch_builder import split_into_steps

__all__ = ["SUPPORTED_ESTIMATORS", "SUPPORTED_LOSSES", "Trainer"]

SUPPORTED_LOSSES = ("policy_loss", "sft_loss", "custom_loss")
SUPPORTED_ESTIMATORS = ESTIMATORS


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
            ``num_steps_per_rollout``, ``use_tis``/``tis_clip``/``tis_clip_low``,
            ``get_mismatch_metrics``, ``gamma`` and the four trainer hooks
            (``vime.backends.trainer_hooks``).
        total_steps: optimiser steps of the run, the schedule's horizon (default:
            ``num_rollout * num_steps_per_rollout`` when both are known).

    Raises:
        ValueError: no ``--hf-checkpoint``; an unusable ``--train-device``.
        NotImplementedError: ``--loss-type`` or ``--advantage-estimator`` outside v1's set;
            ``--kl-coef`` != 0 (use ``--use-kl-loss``).
        ContractError: a trainer hook cannot be loaded or breaks its signature (VIM100).
    """

    def __init__(self, args: Namespace, *, total_steps: int | None = None) -> None:
        from transformers import AutoModelForCausalLM

        from vime.contract.errors import show_logged_warnings_once

        show_logged_warnings_once()   # runtime findings are logged; the warning copy is not shown

        from vime.ray.cores import pin_from_env

        pin_from_env()   # an overlapped CPU run: the cores trainer_env gave this actor
        self.args = args
        loss_type = arg(args, "loss_type")
        if loss_type not in SUPPORTED_LOSSES:
            raise NotImplementedError(f"--loss-type {loss_type} is not implemented in vime v1; "
                                      f"use one of {SUPPORTED_LOSSES}")
        estimator = arg(args, "advantage_estimator")
        if loss_type != "sft_loss" and estimator not in SUPPORTED_ESTIMATORS:
            raise NotImplementedError(f"--advantage-estimator {estimator} is not implemented in "
                                      f"vime v1's trainer; use one of {SUPPORTED_ESTIMATORS}")
        if float(arg(args, "kl_coef")) != 0.0:
            raise NotImplementedError("--kl-coef (a KL penalty in the reward) is not implemented "
                                      "in vime v1; use --use-kl-loss --kl-loss-coef C instead")
        if not arg(args, "hf_checkpoint"):
            raise ValueError("--hf-checkpoint is required: the trainer loads its model from it")
        self.device = _device(args)
        self.hooks = TrainerHooks.from_args(args)
        if loss_type == "custom_loss" and not self.hooks.has("custom_loss_function_path"):
            raise ValueError("--loss-type custom_loss needs --custom-loss-function-path "
                             "(the function that computes the loss)")
        self.use_rollout_lp = bool(arg(args, "use_rollout_logprobs"))
        self.use_tis = bool(arg(args, "use_tis"))
        self.mismatch = bool(arg(args, "get_mismatch_metrics"))
        torch.manual_seed(int(arg(args, "seed")))
        self.model = AutoModelForCausalLM.from_pretrained(
            args.hf_checkpoint, dtype=torch.float32).to(self.device)  # type: ignore[arg-type]
        self.model.train()
        # --actor-num-nodes x --actor-num-gpus-per-node ranks: FSDP2 (vime.backends.parallel)
        self.dp = DataParallel.current()
        if self.dp.sharded:
            self.dp.shard(self.model, self.device)
        self.pad_id = int(getattr(self.model.config, "pad_token_id", None) or 0)
        self.ref_model = None
        if arg(args, "use_kl_loss"):
            self.ref_model = AutoModelForCausalLM.from_pretrained(
                args.hf_checkpoint, dtype=torch.float32).to(self.device).eval()  # type: ignore[arg-type]
            self.ref_model.requires_grad_(False)
            if self.dp.sharded:   # sharded like the policy: each rank holds 1/world of it
                self.dp.shard(self.ref_model, self.device)
        if total_steps is None and arg(args, "num_rollout"):
            total_steps = int(args.num_rollout) * int(arg(args, "num_steps_per_rollout") or 1)
        self.total_steps = total_steps
        self.optimizer = build_optimizer(self.model, args)
        self.scheduler = build_scheduler(self.optimizer, args, total_steps)
        self.global_step = 0
        #: Seconds per phase of the current ``train`` call (its ``perf/train_*_time``).
        self._phase: dict[str, float] = {}

    # ---- forward and log probs ---------------------------------------------------------------

    def _forward(self, model: torch.nn.Module, tokens: Sequence[Sequence[int]]
                 ) -> tuple[PaddedBatch, torch.Tensor]:
        """The right-padded batch and the model's ``(B, T, V)`` logits on it."""
        return forward(model, tokens, pad_id=self.pad_id, device=self.device)

    def compute_log_probs(self, tokens: Sequence[Sequence[int]], response_lengths: Sequence[int],
                          *, micro_batch_size: int = 8, reference: bool = False
                          ) -> list[list[float]]:
        """Log probs of each sample's response tokens under the current (or reference) model:
        ``list[list[float]]``, ``response_lengths[i]`` natural-log probs for sample ``i`` at
        ``--rollout-temperature`` (``vime.backends.log_probs.compute_log_probs``)."""
        model = self.ref_model if reference else self.model
        assert model is not None
        return compute_log_probs(model, tokens, response_lengths, dp=self.dp,
                                 pad_id=self.pad_id, device=self.device,
                                 temperature=float(arg(self.args, "rollout_temperature")),
                                 micro_batch_size=micro_batch_size)

    # ---- training ----------------------------------------------------------------------------

    def train(self, rollout_id: int, data: dict[str, Any]) -> dict[str, float]:
        """Run this rollout's optimiser steps on converted data.

        Order (as upstream slime's ``train``): ``--rollout-data-postprocess-path``; the old
        (and reference) log probs; the advantages of the whole rollout step (the estimator, or
        ``--custom-advantage-function-path``); then the optimiser steps, each over
        micro-batches (the built-in loss with TIS and the pg-loss reducer, or
        ``--custom-loss-function-path``).

        Args:
            rollout_id: the rollout step (for hooks and logs).
            data: ``BatchBuilder.convert`` columns (one entry per sample).

        Returns:
            Mean over the steps of ``train/loss``, ``train/pg_loss`` or ``train/sft_loss``,
            ``train/pg_clipfrac``, ``train/ppo_kl``, ``train/kl_loss``, ``train/entropy``,
            ``train/grad_norm``, ``train/lr``; with TIS the TIS function's metrics
            (``train/tis``, ``train/tis_clipfrac``, ``train/tis_abs`` for the built-in), with
            ``--get-mismatch-metrics`` ``train/mismatch_*`` (``vime.backends.tis``), with a
            custom loss its ``log_dict``; plus ``train/num_steps``, ``train/time`` and the
            phases of that time (seconds): ``perf/train_log_probs_time`` (old and reference
            log probs), ``perf/train_advantages_time``, ``perf/train_forward_backward_time``
            (every micro-batch's loss and backward), ``perf/train_optimizer_step_time``
            (gradient norm, clipping and the optimiser and scheduler steps).

        Raises:
            ValueError: ``--use-rollout-logprobs``, ``--use-tis`` or ``--get-mismatch-metrics``
                without ``rollout_log_probs`` in the data.
            ContractError: a trainer hook's result breaks its contract (VIM190-VIM193).
        """
        t0 = time.perf_counter()
        self._phase = {"forward_backward": 0.0, "optimizer_step": 0.0}
        log_probs_s = advantages_s = 0.0
        args = self.args
        post = arg(args, "rollout_data_postprocess_path")
        if post:
            from vime.utils.misc import load_function

            load_function(post, hook="rollout_data_postprocess_path")(args, rollout_id, data)
        loss_type = arg(args, "loss_type")
        if loss_type != "sft_loss":
            needs_rollout = [f for f, on in (("--use-rollout-logprobs", self.use_rollout_lp),
                                             ("--use-tis", self.use_tis),
                                             ("--get-mismatch-metrics", self.mismatch))
                             if on]
            if needs_rollout and "rollout_log_probs" not in data:
                raise ValueError(f"{', '.join(needs_rollout)}: the samples carry no "
                                 "rollout_log_probs (the rollout must store one sampler "
                                 "log prob per response token)")
            mbs = max(1, int(arg(args, "micro_batch_size")))
            t_lp = time.perf_counter()
            train_lps = None
            if not self.use_rollout_lp or self.use_tis or self.mismatch:
                train_lps = self.compute_log_probs(data["tokens"], data["response_lengths"],
                                                   micro_batch_size=mbs)
            data["old_log_probs"] = data["rollout_log_probs"] if self.use_rollout_lp else train_lps
            if self.use_tis or self.mismatch:
                data["train_log_probs"] = train_lps
            if self.ref_model is not None:
                data["ref_log_probs"] = self.compute_log_probs(
                    data["tokens"], data["response_lengths"], reference=True,
                    micro_batch_size=mbs)
            t_adv = time.perf_counter()
            log_probs_s = t_adv - t_lp
            self._rollout_advantages(rollout_id, data)
            advantages_s = time.perf_counter() - t_adv
        steps = split_into_steps(args, data)
        per_step = [self._train_step(step, rollout_id) for step in steps]
        keys = sorted({k for s in per_step for k in s})
        out = {f"train/{k}": sum(s[k] for s in per_step if k in s) / len(per_step) for k in keys}
        out["train/num_steps"] = float(len(steps))
        out["train/time"] = time.perf_counter() - t0
        out["perf/train_log_probs_time"] = log_probs_s
        out["perf/train_advantages_time"] = advantages_s
        for phase, seconds in self._phase.items():
            out[f"perf/train_{phase}_time"] = seconds
        return out

    def _rollout_advantages(self, rollout_id: int, data: dict[str, Any]) -> None:
        """Set ``data["advantages"]`` (and ``["returns"]``), ``list[list[float]]`` one value
        per response token, for the whole rollout step."""
        masks = float_tensors(data["loss_masks"], self.device)
        if self.hooks.has("custom_advantage_function_path"):
            adv, ret = self.hooks.advantages(self.args,
                                             custom_advantage_data(data, masks, self.device),
                                             list(data["response_lengths"]), rollout_id)
        else:
            adv = estimator_advantages(self.args, data["rewards"], masks)
            ret = adv
        data["advantages"] = [a.detach().float().tolist() for a in adv]
        if ret is not None:
            data["returns"] = [r.detach().float().tolist() for r in ret]

    def _train_step(self, step: dict[str, Any], rollout_id: int) -> dict[str, float]:
        args = self.args
        n = len(step["tokens"])
        # FAILED rollouts (``failed`` column, --hook-failure fail-sample) have zero masks and
        # are not counted: the update equals that of a step that never had them.
        failed = step.get("failed") or [0] * n
        num_rollouts = max(1, len({rid for rid, f in zip(step["rollout_ids"], failed, strict=True)
                                   if not f}))
        max_tokens = (arg(args, "max_tokens_per_gpu")
                      if arg(args, "use_dynamic_batch_size") else None)
        # this rank's whole rollouts of the step (all of them with one rank); the losses keep
        # the step's global n and num_rollouts, so the ranks' summed gradients are one rank's
        mine = self.dp.step_rows(step, balance=bool(arg(args, "balance_data")))
        chunks = [[mine[k] for k in pos] for pos in micro_batches(
            [step["total_lengths"][i] for i in mine],
            micro_batch_size=int(arg(args, "micro_batch_size")), max_tokens=max_tokens)]
        # agreed before any forward: FSDP2's collectives must pair up across ranks
        passes = self.dp.pad_count(len(chunks))
        settings = LossSettings.from_args(args)
        sums: dict[str, float] = {}
        additive = {"loss", "pg_loss", "sft_loss", "kl_loss", "entropy"}
        t_fb = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        for rows in chunks:
            loss, stats, extra_additive = self._micro_batch_loss(settings, step, rows,
                                                                 num_rollouts, rollout_id)
            additive |= extra_additive
            stats["loss"] = float(loss.detach())
            loss.backward()  # type: ignore[no-untyped-call]
            for k, v in stats.items():
                # additive terms (sample-mean losses) sum over micro-batches; ratios average
                weight = 1.0 if k in additive else len(rows) / n
                sums[k] = sums.get(k, 0.0) + v * weight
        # FSDP2 reduces gradients inside backward: every rank runs as many as the busiest
        for _ in range(passes - len(chunks)):
            _, logits = self._forward(self.model, [[self.pad_id]])
            (logits.sum() * 0.0).backward()  # type: ignore[no-untyped-call]
        if self.dp.sharded:
            sums = self.dp.sum_stats(sums)
        if self.mismatch:
            sums.update(mismatch_metrics(step["train_log_probs"], step["rollout_log_probs"],
                                         step["loss_masks"],
                                         clip_low=float(arg(args, "tis_clip_low")),
                                         clip_high=float(arg(args, "tis_clip"))))
        t_opt = time.perf_counter()
        clip = float(arg(args, "clip_grad") or 0.0)
        params = [p for p in self.model.parameters() if p.requires_grad]
        if clip > 0:
            grad_norm = _scalar(torch.nn.utils.clip_grad_norm_(params, clip))
        else:
            grad_norm = _scalar(torch.nn.utils.get_total_norm([p.grad for p in params
                                                               if p.grad is not None]))
        sums["lr"] = float(self.optimizer.param_groups[0]["lr"])
        self.optimizer.step()
        self.scheduler.step()
        self.global_step += 1
        sums["grad_norm"] = grad_norm
        now = time.perf_counter()
        self._phase["forward_backward"] += t_opt - t_fb
        self._phase["optimizer_step"] += now - t_opt
        return sums

    def _micro_batch_loss(self, settings: LossSettings, step: dict[str, Any], rows: list[int],
                          num_rollouts: int, rollout_id: int
                          ) -> tuple[torch.Tensor, dict[str, float], set[str]]:
        """Run the model on one micro-batch and return ``(loss, stats, additive stat names)``
        from its loss path (``vime.backends.loss_paths``)."""
        tokens = [step["tokens"][i] for i in rows]
        if settings.loss_type == "custom_loss":
            padded, logits = self._forward(self.model, tokens)
            batch, sum_of_sample_mean = custom_loss_batch(step, rows, padded, num_rollouts,
                                                          settings.per_token)
            loss, stats = self.hooks.loss(self.args, batch, logits, sum_of_sample_mean,
                                          rollout_id)
            return loss, stats, set(stats)
        rlens = [step["response_lengths"][i] for i in rows]
        lp, valid, extra = response_log_probs(
            self.model, tokens, rlens, pad_id=self.pad_id, device=self.device,
            temperature=float(arg(self.args, "rollout_temperature")), with_stats=True)
        assert extra is not None
        tis: TisFunction | None = None
        if self.use_tis or (self.mismatch and self.hooks.has("custom_tis_function_path")):
            tis = self._tis_function(rollout_id)
        reducer: PgReducer | None = None
        if self.hooks.has("custom_pg_loss_reducer_function_path"):
            def reducer(factory_args: tuple[list[int], list[int], list[torch.Tensor], bool],
                        pg_flat: torch.Tensor) -> torch.Tensor:
                return self.hooks.reduce_pg_loss(factory_args, pg_flat, rollout_id)
        return builtin_loss(settings, step, rows, ResponseOutputs(lp, valid, *extra),
                            num_rollouts, tis=tis, reducer=reducer)

    def _tis_function(self, rollout_id: int) -> TisFunction:
        """``--custom-tis-function-path`` (checked, VIM192) or the built-in, called by keyword
        with ``args`` first."""
        args = self.args
        if self.hooks.has("custom_tis_function_path"):
            return lambda kwargs: self.hooks.tis({"args": args, **kwargs}, rollout_id)
        return lambda kwargs: vanilla_tis_function(args=args, **kwargs)

    # ---- weights and checkpoints -------------------------------------------------------------

    def write_weights(self, out_dir: str) -> str:
        """Write the current weights as safetensors into ``out_dir`` (see ``weights.py``);
        with several ranks every rank calls it, the full tensors are gathered on rank 0 and
        rank 0 writes the file."""
        if not self.dp.sharded:
            return str(write_weights(self.model, out_dir))
        state = self.dp.full_model_state(self.model)
        if self.dp.rank == 0:
            write_weights(self.model, out_dir, state=state)
        self.dp.barrier()
        return str(out_dir)

    def connect_weights_nccl(self, targets: list[Any], per_engine: int) -> None:
        """``--weight-sync nccl`` (GPUs only): rank 0 joins the engines' NCCL group
        (``vime.ray.weight_sync.NcclTrainerSide``); other trainer ranks only take part in its
        gathers of their FSDP shards (``NcclShardFollower``)."""
        from vime.ray.weight_sync import NcclShardFollower, NcclTrainerSide

        self._nccl: NcclTrainerSide | NcclShardFollower = (
            NcclTrainerSide(self.model, targets, per_engine) if self.dp.rank == 0
            else NcclShardFollower(self.model))

    def push_weights_nccl(self, version: int) -> None:
        """``--weight-sync nccl``: broadcast the weights to the engines, tagged ``version``."""
        self._nccl.push(version)

    def save(self, rollout_id: int, save_dir: str | None = None) -> str:
        """Write model (``save_pretrained`` + tokenizer files of ``--hf-checkpoint``), optimiser,
        scheduler, optimiser step and RNG states to ``<save>/iter_<rollout_id>``; returns it.

        Raises:
            ValueError: neither ``save_dir`` nor ``--save`` is set.
        """
        root = save_dir or arg(self.args, "save")
        if not root:
            raise ValueError("Trainer.save: no checkpoint folder; pass --save DIR")
        return str(ckpt.save_trainer_state(
            root, rollout_id, model=self.model, optimizer=self.optimizer,
            scheduler=self.scheduler, global_step=self.global_step, dp=self.dp,
            hf_checkpoint=self.args.hf_checkpoint))

    def load(self, load_dir: str, rollout_id: int) -> None:
        """Restore what :meth:`save` wrote for ``rollout_id`` under ``load_dir``
        (``vime.backends.checkpoint.load_trainer_state``).

        Raises:
            FileNotFoundError: the iteration folder or its files are missing (names the path).
            ValueError: the weights do not fit the model.
            UnsafeCheckpointError: ``trainer_state.pt`` holds more than plain data
                (``vime.backends.checkpoint.load_state``).
        """
        self.global_step = ckpt.load_trainer_state(
            load_dir, rollout_id, model=self.model, optimizer=self.optimizer,
            scheduler=self.scheduler, dp=self.dp, device=self.device)

    def ping(self) -> bool:
        """True (lets a caller wait until the actor has built the model)."""
        return True


def _scalar(value: torch.Tensor) -> float:
    """A 0-d tensor as a float; a DTensor (a sharded model's norm) is gathered first."""
    full = getattr(value, "full_tensor", None)
    return float(full() if callable(full) else value)
