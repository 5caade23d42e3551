"""Command-line arguments of vime (CONTRACT.md §11): parsing, config files, validation.

Usage::

    args = parse_args(["--rollout-batch-size", "8", "--num-rollout", "10",
                       "--vllm-max-model-len", "512"])
    args.over_sampling_batch_size      # 8 (defaults to the rollout batch size)
    args.global_batch_size             # 8 = rollout_batch_size * n_samples_per_prompt // steps
    args.vllm_extra_args               # {"max-model-len": "512"}: passed to every vLLM server
    args.eval_datasets                 # list[EvalDatasetConfig]
    args = parse_args(["--config", "run.yaml", "--rollout-seed", "7"])   # the command line wins
    args = parse_args([...], training=False)   # tools: no --num-rollout/--num-epoch needed

Every hook ``--*-path`` argument is generated from ``vime.contract.HOOKS`` (argument, dest,
default; ``multiple`` hooks take ``action="append"`` with default ``[]``). Arguments marked P in
CONTRACT.md §11 are parsed with upstream's default and raise ``NotImplementedError`` naming the
argument when set to anything else. Unknown ``--vllm-<flag> [VALUE]`` arguments are collected
into ``args.vllm_extra_args`` (``{"<flag>": "VALUE"}``, a bare flag -> ``True``) and passed to
the vLLM servers as ``--<flag> VALUE``; any other unknown argument is an error naming it.

Errors are argparse's: usage, then ``vime: error: argument --rollout-temperature: must be > 0,
got 0`` on stderr and exit status 2.

Source: CONTRACT.md §4, §5, §11 (names, dests, defaults); ours (generation from HOOKS, config
files with strict keys, passthrough collection, parse-time validation).
"""

from __future__ import annotations

import argparse
import difflib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from vime.contract.hooks import HOOKS

__all__ = [
    "SFT_ROLLOUT_PATH",
    "UNSUPPORTED_ARGS",
    "UNSUPPORTED_CHOICES",
    "VLLM_PASSTHROUGH_PREFIX",
    "add_hook_arguments",
    "add_trainer_arguments",
    "get_parser",
    "parse_args",
    "validate_args",
]

PROG = "vime"
VLLM_PASSTHROUGH_PREFIX = "--vllm-"
SFT_ROLLOUT_PATH = "vime.rollout.sft_rollout.generate_rollout"

#: P arguments (CONTRACT.md §11): dest -> the only value v1 supports (upstream's default).
UNSUPPORTED_ARGS: dict[str, Any] = {
    "multimodal_keys": None,
    "rollout_data_transport": "object-store",
    "flush_cache_interval": 1,
    "use_rollout_routing_replay": False,
    "use_score_centering": False,
    "score_centering_top_k": 128,
    "use_tis": False,
    "tis_clip": 2.0,
    "tis_clip_low": 0.0,
    "get_mismatch_metrics": False,
    "offload": False,
    "offload_rollout": False,
    "vllm_config": None,
    "prefill_num_servers": None,
    "balance_by_flops": False,
    "dump_details": None,
    "log_reward_category": None,
}

#: P choices (CONTRACT.md §11): dest -> values that are parsed but not implemented in v1.
UNSUPPORTED_CHOICES: dict[str, tuple[str, ...]] = {
    "advantage_estimator": ("cispo", "reinforce_plus_plus", "ppo"),
    "loss_type": ("custom_loss",),
    "loss_mask_type": ("qwen3_5", "distill_qwen"),
    "router_policy": ("random", "cache_aware", "power_of_two"),
}


# ---- argument types -----------------------------------------------------------------------------

def _json_dict(text: str) -> dict[str, Any]:
    """argparse type: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg} at column {exc.colno}): "
                                         f"{text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}: "
                                         f"{text!r}")
    return value


def _json_value(text: str) -> Any:
    """argparse type: any JSON value."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text!r}") from None


# ---- groups -----------------------------------------------------------------------------------

def _add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("batches and data")
    g.add_argument("--rollout-batch-size", type=int, default=None,
                   help="Prompt groups per rollout step (required).")
    g.add_argument("--n-samples-per-prompt", type=int, default=1,
                   help="Samples generated per prompt (the GRPO group size).")
    g.add_argument("--over-sampling-batch-size", type=int, default=None,
                   help="Groups requested from the data source at a time (>= rollout batch "
                        "size; default: the rollout batch size).")
    g.add_argument("--global-batch-size", type=int, default=None,
                   help="Rollouts per optimiser step (default: rollout_batch_size * "
                        "n_samples_per_prompt // num_steps_per_rollout).")
    g.add_argument("--num-steps-per-rollout", type=int, default=None,
                   help="Optimiser steps per rollout step (default: 1, or derived from "
                        "--global-batch-size).")
    g.add_argument("--micro-batch-size", type=int, default=1, help="Samples per forward pass.")
    g.add_argument("--use-dynamic-batch-size", action="store_true",
                   help="Pack micro-batches up to --max-tokens-per-gpu tokens.")
    g.add_argument("--max-tokens-per-gpu", type=int, default=None,
                   help="Token budget per micro-batch with --use-dynamic-batch-size.")
    g.add_argument("--balance-data", action="store_true",
                   help="Balance tokens across data-parallel ranks.")
    g.add_argument("--num-rollout", type=int, default=None,
                   help="Rollout steps to run (this or --num-epoch is required).")
    g.add_argument("--num-epoch", type=int, default=None,
                   help="Epochs over --prompt-data (sets --num-rollout from the dataset size).")
    g.add_argument("--start-rollout-id", type=int, default=None,
                   help="First rollout id (default: 0, or the loaded checkpoint's next step).")
    g.add_argument("--prompt-data", type=str, default=None,
                   help="Train prompts: a .jsonl or .parquet file, optionally `path@[start:end]`.")
    g.add_argument("--input-key", type=str, default="input", help="Record key of the prompt.")
    g.add_argument("--label-key", type=str, default=None, help="Record key of the label.")
    g.add_argument("--metadata-key", type=str, default="metadata",
                   help="Record key of the metadata dict.")
    g.add_argument("--tool-key", type=str, default="tools",
                   help="Record key of the tools list (or JSON string) -> metadata['tools'].")
    g.add_argument("--apply-chat-template", action="store_true",
                   help="Render prompts with the tokenizer's chat template at load time.")
    g.add_argument("--apply-chat-template-kwargs", type=_json_dict, default={},
                   help="JSON object of extra keyword arguments for apply_chat_template.")
    g.add_argument("--disable-rollout-global-dataset", dest="rollout_global_dataset",
                   action="store_false",
                   help="Do not load --prompt-data in the data source (custom data sources).")
    g.add_argument("--multimodal-keys", type=_json_value, default=None,
                   help="(not implemented in v1) JSON map of media type -> record key.")


def _add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("sampling")
    g.add_argument("--hf-checkpoint", type=str, default=None,
                   help="Hugging Face model folder: the tokenizer and the engines' model.")
    g.add_argument("--rollout-temperature", type=float, default=1.0, help="Sampling temperature (> 0).")
    g.add_argument("--rollout-top-p", type=float, default=1.0, help="Nucleus sampling p in (0, 1].")
    g.add_argument("--rollout-top-k", type=int, default=-1, help="Top-k sampling (-1: off).")
    g.add_argument("--rollout-max-context-len", type=int, default=None,
                   help="Prompt + response budget in tokens.")
    g.add_argument("--rollout-max-prompt-len", type=int, default=None,
                   help="Longer string prompts (tokens) are dropped at load.")
    g.add_argument("--rollout-max-response-len", type=int, default=None,
                   help="Response budget in tokens.")
    g.add_argument("--rollout-skip-special-tokens", action="store_true",
                   help="Skip special tokens when decoding responses.")
    g.add_argument("--rollout-stop", type=str, nargs="+", default=None, help="Stop strings.")
    g.add_argument("--rollout-stop-token-ids", type=int, nargs="+", default=None,
                   help="Stop token ids.")
    g.add_argument("--rollout-shuffle", action="store_true",
                   help="Shuffle prompts per epoch (epoch e uses seed rollout_seed + e).")
    g.add_argument("--rollout-seed", type=int, default=42, help="Seed of shuffling and sampling.")
    g.add_argument("--partial-rollout", action="store_true",
                   help="Recycle aborted partial samples into the buffer; resume them next step.")
    g.add_argument("--mask-offpolicy-in-partial-rollout", action="store_true",
                   help="Mask (loss 0) the tokens a recycled sample generated in earlier steps.")
    g.add_argument("--buffer-sort-by-staleness", action="store_true",
                   help="Serve the buffer oldest weight version first (pop_oldest).")


def _add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("evaluation")
    g.add_argument("--eval-interval", type=int, default=None, help="Evaluate every N rollout steps.")
    g.add_argument("--skip-eval-before-train", action="store_true",
                   help="Do not evaluate before the first step.")
    g.add_argument("--eval-prompt-data", type=str, nargs="+", default=None,
                   help="`name path` pairs (a lone path is named `aime`).")
    g.add_argument("--eval-config", type=str, default=None,
                   help="YAML with eval.defaults and eval.datasets (overrides --eval-prompt-data).")
    g.add_argument("--eval-input-key", type=str, default=None, help="Default: --input-key.")
    g.add_argument("--eval-label-key", type=str, default=None, help="Default: --label-key.")
    g.add_argument("--eval-tool-key", type=str, default=None, help="Default: --tool-key.")
    g.add_argument("--n-samples-per-eval-prompt", type=int, default=1,
                   help="Samples generated per eval prompt.")
    g.add_argument("--eval-temperature", type=float, default=None,
                   help="Default: --rollout-temperature.")
    g.add_argument("--eval-top-p", type=float, default=None, help="Default: --rollout-top-p.")
    g.add_argument("--eval-top-k", type=int, default=None, help="Default: --rollout-top-k.")
    g.add_argument("--eval-max-response-len", type=int, default=None,
                   help="Default: --rollout-max-response-len.")
    g.add_argument("--eval-max-prompt-len", type=int, default=None,
                   help="Default: --rollout-max-prompt-len.")
    g.add_argument("--eval-min-new-tokens", type=int, default=None,
                   help="Minimum generated tokens (vLLM min_tokens).")
    g.add_argument("--eval-max-context-len", type=int, default=None,
                   help="Default: --rollout-max-context-len.")


def _add_reward_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("reward and algorithm")
    g.add_argument("--rm-type", type=str, default=None, help="Built-in reward (math, dapo, ...).")
    g.add_argument("--rm-url", type=str, default=None, help="URL of the remote_rm reward server.")
    g.add_argument("--reward-key", type=str, default=None,
                   help="Key of the scalar in dict rewards.")
    g.add_argument("--eval-reward-key", type=str, default=None, help="Default: --reward-key.")
    g.add_argument("--group-rm", action="store_true",
                   help="Score whole groups with one batched reward call.")
    g.add_argument("--advantage-estimator", type=str, default="grpo",
                   choices=["grpo", "gspo", "cispo", "reinforce_plus_plus",
                            "reinforce_plus_plus_baseline", "ppo"],
                   help="Advantage estimator (cispo, reinforce_plus_plus, ppo: not in v1).")
    g.add_argument("--disable-rewards-normalization", dest="rewards_normalization",
                   action="store_false", help="Do not subtract the group mean reward.")
    g.add_argument("--disable-grpo-std-normalization", dest="grpo_std_normalization",
                   action="store_false", help="Do not divide by the group reward std.")
    g.add_argument("--use-rollout-logprobs", action="store_true",
                   help="Use the sampler's log probs as the old policy's.")
    g.add_argument("--loss-type", type=str, default="policy_loss",
                   choices=["policy_loss", "sft_loss", "custom_loss"],
                   help="Loss (custom_loss: not in v1).")
    g.add_argument("--loss-mask-type", type=str, default="qwen",
                   choices=["qwen", "qwen3", "qwen3_5", "distill_qwen"],
                   help="Chat-template loss-mask method of the SFT rollout "
                        "(qwen3_5, distill_qwen: not in v1).")
    g.add_argument("--use-tis", action="store_true", help="(not implemented in v1)")
    g.add_argument("--tis-clip", type=float, default=2.0, help="(not implemented in v1)")
    g.add_argument("--tis-clip-low", type=float, default=0.0, help="(not implemented in v1)")
    g.add_argument("--get-mismatch-metrics", action="store_true", help="(not implemented in v1)")
    g.add_argument("--use-score-centering", action="store_true", help="(not implemented in v1)")
    g.add_argument("--score-centering-top-k", type=int, default=128,
                   help="(not implemented in v1)")
    g.add_argument("--use-rollout-routing-replay", action="store_true",
                   help="(not implemented in v1)")
    g.add_argument("--log-reward-category", type=str, default=None,
                   help="(not implemented in v1)")


def _add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("engines and router")
    g.add_argument("--rollout-num-gpus", type=int, default=None,
                   help="Devices for rollout engines in total.")
    g.add_argument("--rollout-num-gpus-per-engine", type=int, default=1,
                   help="Devices per vLLM engine.")
    g.add_argument("--num-gpus-per-node", type=int, default=8, help="Devices per node.")
    g.add_argument("--colocate", action="store_true",
                   help="Train and roll out on the same devices.")
    g.add_argument("--rollout-external-engine-addrs", type=str, nargs="+", default=None,
                   help="Use running vLLM servers (host:port) instead of starting engines.")
    g.add_argument("--vllm-router-ip", type=str, default=None, help="Set by the manager.")
    g.add_argument("--vllm-router-port", type=int, default=None, help="Set by the manager.")
    g.add_argument("--vllm-router-policy", dest="router_policy", type=str,
                   default="consistent_hash",
                   choices=["random", "round_robin", "cache_aware", "power_of_two",
                            "consistent_hash"],
                   help="vllm-router policy (random, cache_aware, power_of_two: not in v1).")
    g.add_argument("--router-request-timeout-secs", type=int, default=14400,
                   help="Router request timeout in seconds.")
    g.add_argument("--vllm-server-concurrency", type=int, default=512,
                   help="Concurrent requests per engine.")
    g.add_argument("--rollout-engine-retry-secs", type=float, default=60.0,
                   help="(ours) Seconds a generate request keeps being retried through the "
                   "router when no engine answers (connection error, HTTP 500/502/503/504), "
                   "before the rollout fails naming the dead engines.")
    g.add_argument("--vllm-enable-deterministic-inference", action="store_true",
                   help="Seed each group member's request (rollout_seed + j).")
    g.add_argument("--vllm-config", type=str, default=None, help="(not implemented in v1)")
    g.add_argument("--prefill-num-servers", type=int, default=None,
                   help="(not implemented in v1)")
    g.add_argument("--rollout-data-transport", type=str, default="object-store",
                   help="(only object-store in v1)")
    g.add_argument("--flush-cache-interval", type=int, default=1, help="(not implemented in v1)")
    g.add_argument("--offload", action="store_true", help="(not implemented in v1)")
    g.add_argument("--offload-rollout", action="store_true", help="(not implemented in v1)")
    g.add_argument("--balance-by-flops", action="store_true", help="(not implemented in v1)")


def _add_debug_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("debugging and contract checks")
    g.add_argument("--save-debug-rollout-data", type=str, default=None,
                   help="Dump each step's samples to this path (`{rollout_id}` is replaced).")
    g.add_argument("--load-debug-rollout-data", type=str, default=None,
                   help="Replay dumped samples instead of generating (`{rollout_id}`).")
    g.add_argument("--debug-rollout-only", action="store_true",
                   help="Generate and log, never train.")
    g.add_argument("--debug-train-only", action="store_true",
                   help="Train (on loaded rollout data), never start engines.")
    g.add_argument("--log-passrate", action="store_true", help="Log eval pass@k.")
    g.add_argument("--ci-test", action="store_true", help="Extra assertions for CI.")
    g.add_argument("--dump-details", type=str, default=None, help="(not implemented in v1)")
    g.add_argument("--contract-check", type=str, default="raise", choices=["off", "warn", "raise"],
                   help="Runtime contract checker mode (vime_lint.runtime).")
    g.add_argument("--contract-check-interval", type=int, default=1,
                   help="Check generate/output boundaries on every N-th step.")
    g.add_argument("--custom-config-path", type=str, default=None,
                   help="YAML whose keys are set on args as they are (for user hooks).")


def add_hook_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--*-path`` argument per ``vime.contract.HOOKS`` entry (never listed by hand)."""
    g = parser.add_argument_group("hooks (user functions by dotted path)")
    for spec in HOOKS.values():
        help_text = f"{spec.doc} Expected: `{spec.render()}`."
        if not spec.v1:
            help_text += " (Parsed; the v1 trainer does not call it.)"
        if spec.multiple:
            g.add_argument(spec.arg, dest=spec.dest, type=str, action="append", default=[],
                           help=help_text + " May be given several times.")
        else:
            g.add_argument(spec.arg, dest=spec.dest, type=str, default=spec.default,
                           help=help_text + (f" Default: {spec.default}." if spec.default else ""))


def add_trainer_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Add the trainer group (optimiser, PPO clip, KL, checkpoints, device); returns the group
    so that the trainer can add more arguments to it."""
    g = parser.add_argument_group("trainer")
    g.add_argument("--lr", type=float, default=1e-6, help="Peak learning rate.")
    g.add_argument("--min-lr", type=float, default=0.0, help="Final learning rate of decay.")
    g.add_argument("--lr-warmup-steps", type=int, default=0, help="Linear warm-up optimiser steps.")
    g.add_argument("--lr-decay-style", type=str, default="constant",
                   choices=["constant", "cosine", "linear"], help="Decay after warm-up.")
    g.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay.")
    g.add_argument("--weight-decay-all", action="store_true",
                   help="Apply --weight-decay to every parameter, norm weights and biases "
                        "included (default: matrices and embeddings only).")
    g.add_argument("--clip-grad", type=float, default=1.0, help="Gradient norm clip.")
    g.add_argument("--adam-beta1", type=float, default=0.9, help="AdamW beta1.")
    g.add_argument("--adam-beta2", type=float, default=0.999, help="AdamW beta2.")
    g.add_argument("--eps-clip", type=float, default=0.2, help="PPO ratio clip (low side).")
    g.add_argument("--eps-clip-high", type=float, default=None,
                   help="PPO ratio clip, high side (default: --eps-clip).")
    g.add_argument("--kl-coef", type=float, default=0.0, help="KL penalty in the reward.")
    g.add_argument("--use-kl-loss", action="store_true", help="Add a KL term to the loss.")
    g.add_argument("--kl-loss-coef", type=float, default=0.0, help="Weight of the KL loss.")
    g.add_argument("--entropy-coef", type=float, default=0.0, help="Entropy bonus weight.")
    g.add_argument("--save", type=str, default=None, help="Checkpoint folder.")
    g.add_argument("--load", type=str, default=None, help="Checkpoint folder to resume from.")
    g.add_argument("--save-interval", type=int, default=None, help="Save every N rollout steps.")
    g.add_argument("--early-stop-metric", type=str, default=None,
                   help="Stop once the mean of this logged metric (e.g. train/greedy_match) over "
                        "the last --early-stop-window steps reaches --early-stop-threshold; that "
                        "step is checkpointed like the last one.")
    g.add_argument("--early-stop-threshold", type=float, default=None,
                   help="Value of --early-stop-metric (window mean) that ends training.")
    g.add_argument("--early-stop-window", type=int, default=20,
                   help="Steps averaged for --early-stop-metric.")
    g.add_argument("--seed", type=int, default=1234, help="Trainer seed.")
    g.add_argument("--train-device", type=str, default="cpu", choices=["cpu", "cuda"],
                   help="Device of the trainer.")
    g.add_argument("--run-dir", type=str, default="runs/{time}",
                   help="Run folder for logs and metrics (`{time}` -> YYYYmmdd-HHMMSS).")
    # added by the trainer (issue 7)
    g.add_argument("--single-process", action="store_true",
                   help="Run the rollout manager and the trainer in the `vime train` process "
                        "instead of Ray actors (debugging; engines still run under Ray).")
    g.add_argument("--no-rollout-engines", dest="rollout_engines", action="store_false",
                   help="Start no vLLM engine: for rollout functions that do not generate "
                        "(the SFT rollout needs none either way).")
    return g


def get_parser() -> argparse.ArgumentParser:
    """A fresh parser with every argument of CONTRACT.md §11, the hooks and the trainer."""
    parser = argparse.ArgumentParser(
        prog=PROG, usage=f"{PROG} [--config FILE.yaml] [options]  (see `{PROG} --help`)",
        description="vime: RL post-training on vLLM. Unknown --vllm-<flag> [VALUE] arguments "
                    "are passed to the vLLM servers.",
        allow_abbrev=False,
    )
    parser.add_argument("--config", type=str, default=None,
                        help="YAML file of arguments (keys: dests or argument names); the "
                             "command line wins.")
    _add_batch_arguments(parser)
    _add_sampling_arguments(parser)
    _add_eval_arguments(parser)
    _add_reward_arguments(parser)
    _add_engine_arguments(parser)
    _add_debug_arguments(parser)
    add_hook_arguments(parser)
    add_trainer_arguments(parser)
    return parser


# ---- config files -------------------------------------------------------------------------------

def _config_names(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.Action, bool]]:
    """name -> (action, given by the option name of a store_false flag)."""
    names: dict[str, tuple[argparse.Action, bool]] = {}
    for action in parser._actions:
        if action.dest in ("help", "config"):
            continue
        names[action.dest] = (action, False)
        names[action.dest.replace("_", "-")] = (action, False)
        for opt in action.option_strings:
            inverted = isinstance(action, argparse._StoreFalseAction)
            names[opt.lstrip("-")] = (action, inverted)
            names[opt.lstrip("-").replace("-", "_")] = (action, inverted)
    return names


def _coerce(action: argparse.Action, value: Any, inverted: bool,
            where: str) -> Any:
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return (not value) if inverted else value
    convert: Callable[[str], Any] | None = action.type  # type: ignore[assignment]

    def one(item: Any) -> Any:
        if item is None:
            return None
        try:
            if convert in (_json_dict, _json_value):
                if isinstance(item, str):
                    return convert(item)
                if convert is _json_dict and not isinstance(item, Mapping):
                    raise ValueError(f"expected a mapping, got {item!r}")
                return dict(item) if isinstance(item, Mapping) else item
            if convert is None or convert is str:
                if not isinstance(item, str):
                    raise ValueError(f"expected a string, got {item!r}")
                return item
            if convert is int and (isinstance(item, bool) or not isinstance(item, (int, str))):
                raise ValueError(f"expected an integer, got {item!r}")
            if convert is float and (isinstance(item, bool)
                                     or not isinstance(item, (int, float, str))):
                raise ValueError(f"expected a number, got {item!r}")
            return convert(item)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            raise ValueError(f"{where}: {exc}") from None

    if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        out = [one(v) for v in items]
    else:
        if isinstance(value, list):
            raise ValueError(f"{where}: expected one value, got a list")
        out = one(value)
    if action.choices is not None:
        for v in out if isinstance(out, list) else [out]:
            if v is not None and v not in action.choices:
                choices = ", ".join(map(str, action.choices))
                raise ValueError(f"{where}: invalid choice {v!r} (choose from {choices})")
    return out


def _load_config(parser: argparse.ArgumentParser, path: str) -> tuple[dict[str, Any],
                                                                      dict[str, str | bool]]:
    """Read ``--config`` -> (dest -> value, vLLM passthrough). Errors via ``parser.error``."""
    import yaml

    file = Path(path)
    if not file.is_file():
        parser.error(f"argument --config: file {path!r} does not exist")
    try:
        doc = yaml.safe_load(file.read_text()) or {}
    except yaml.YAMLError as exc:
        parser.error(f"argument --config: {path}: not valid YAML: {exc}")
    if not isinstance(doc, Mapping):
        parser.error(f"argument --config: {path}: expected a mapping of argument names to "
                     f"values, got {type(doc).__name__}")
    names = _config_names(parser)
    values: dict[str, Any] = {}
    extra: dict[str, str | bool] = {}
    for raw_key, value in doc.items():
        key = str(raw_key).lstrip("-")
        if key in names:
            action, inverted = names[key]
            try:
                values[action.dest] = _coerce(action, value, inverted,
                                              f"key {raw_key!r} in {path}")
            except ValueError as exc:
                parser.error(f"argument --config: {exc}")
        elif key.replace("_", "-").startswith(VLLM_PASSTHROUGH_PREFIX[2:]):
            flag = key.replace("_", "-")[len(VLLM_PASSTHROUGH_PREFIX) - 2:]
            extra[flag] = value if isinstance(value, bool) else str(value)
        elif key == "config":
            parser.error(f"argument --config: key {raw_key!r} in {path}: config files do not "
                         "nest")
        else:
            close = difflib.get_close_matches(key, list(names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            parser.error(f"argument --config: unknown key {raw_key!r} in {path}{hint}")
    return values, extra


def _collect_passthrough(parser: argparse.ArgumentParser,
                         unknown: Sequence[str]) -> dict[str, str | bool]:
    extra: dict[str, str | bool] = {}
    i = 0
    while i < len(unknown):
        token = unknown[i]
        if not token.startswith(VLLM_PASSTHROUGH_PREFIX) or token == VLLM_PASSTHROUGH_PREFIX:
            parser.error(f"unrecognized argument {token!r}; only --vllm-<flag> arguments are "
                         "passed through (see `vime --help`)")
        name, eq, inline = token[len(VLLM_PASSTHROUGH_PREFIX):].partition("=")
        if eq:
            extra[name] = inline
            i += 1
        elif i + 1 < len(unknown) and not unknown[i + 1].startswith("--"):
            extra[name] = unknown[i + 1]
            i += 2
        else:
            extra[name] = True
            i += 1
    return extra


def parse_args(argv: list[str] | None = None, *, training: bool = True) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``), apply ``--config``, then :func:`validate_args`.

    ``training=False`` (tools such as ``vime-lint check``) skips the ``--num-rollout`` /
    ``--num-epoch`` requirement.

    Raises:
        SystemExit: status 2 with ``vime: error: argument --<name>: ...`` on stderr for a bad
            value, an unknown argument or config key (named with the file), or a failed check.
        NotImplementedError: a P argument (``UNSUPPORTED_ARGS``/``UNSUPPORTED_CHOICES``) set to
            a value v1 does not implement; the message names the argument.
    """
    parser = get_parser()
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", type=str, default=None)
    known, _ = pre.parse_known_args(argv)
    config_extra: dict[str, str | bool] = {}
    if known.config:
        values, config_extra = _load_config(parser, known.config)
        parser.set_defaults(**values)
    args, unknown = parser.parse_known_args(argv)
    args.vllm_extra_args = {**config_extra, **_collect_passthrough(parser, unknown)}
    return validate_args(args, training=training)


# ---- validation ---------------------------------------------------------------------------------

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


def _check_unsupported(args: argparse.Namespace) -> None:
    for dest, supported in UNSUPPORTED_ARGS.items():
        value = getattr(args, dest, supported)
        if value != supported:
            raise NotImplementedError(
                f"argument {_option(dest)}={value!r} is parsed for compatibility with upstream "
                f"but not implemented in vime v1; remove it (v1 supports only {supported!r})")
    for dest, values in UNSUPPORTED_CHOICES.items():
        value = getattr(args, dest, None)
        if value in values:
            raise NotImplementedError(
                f"argument {_option(dest)} {value} is parsed for compatibility with upstream but "
                "not implemented in vime v1; choose another value")


def _positive(args: argparse.Namespace, dest: str, *, allow_none: bool = True,
              minimum: int = 1) -> None:
    value = getattr(args, dest)
    if value is None and allow_none:
        return
    if value is None or value < minimum:
        _fail(_option(dest), f"must be >= {minimum}, got {_num(value)}")


def validate_args(args: argparse.Namespace, *, training: bool = True) -> argparse.Namespace:
    """Check and complete parsed arguments in place; returns ``args``.

    Fills: ``over_sampling_batch_size`` (= rollout batch size), ``num_steps_per_rollout`` and
    ``global_batch_size`` (gbs = rbs * n // steps), ``grpo_std_normalization`` (off when
    ``n_samples_per_prompt == 1``), ``eval_reward_key`` (= ``reward_key``), ``buffer_filter_path``
    (``pop_oldest`` with ``--buffer-sort-by-staleness``), ``eval_datasets``
    (``list[EvalDatasetConfig]``), ``run_dir`` (``{time}`` replaced), ``vllm_extra_args``
    (``{}`` if absent), and the keys of ``--custom-config-path``.

    Raises:
        SystemExit: status 2, ``vime: error: argument --<name>: <reason>``.
        NotImplementedError: a P argument set to a value v1 does not implement.
    """
    from vime.utils.eval_config import build_eval_datasets

    _check_unsupported(args)
    if args.rollout_batch_size is None:
        _fail("--rollout-batch-size", "is required")
    for dest in ("rollout_batch_size", "n_samples_per_prompt", "micro_batch_size",
                 "n_samples_per_eval_prompt", "contract_check_interval",
                 "rollout_num_gpus_per_engine", "vllm_server_concurrency"):
        _positive(args, dest, allow_none=False)
    for dest in ("over_sampling_batch_size", "global_batch_size", "num_steps_per_rollout",
                 "num_rollout", "num_epoch", "eval_interval", "save_interval",
                 "rollout_max_context_len", "rollout_max_prompt_len", "rollout_max_response_len",
                 "max_tokens_per_gpu", "eval_max_response_len", "eval_max_prompt_len",
                 "eval_max_context_len"):
        _positive(args, dest)
    _positive(args, "start_rollout_id", minimum=0)
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
    if not hasattr(args, "vllm_extra_args"):
        args.vllm_extra_args = {}
    if args.custom_config_path:
        _apply_custom_config(args)
    return args


def _apply_custom_config(args: argparse.Namespace) -> None:
    import yaml

    path = args.custom_config_path
    try:
        doc = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        _fail("--custom-config-path", f"cannot read {path!r}: {exc}")
    if not isinstance(doc, Mapping):
        _fail("--custom-config-path", f"{path}: expected a mapping, got {type(doc).__name__}")
    for key, value in doc.items():
        setattr(args, str(key), value)
