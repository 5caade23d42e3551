"""The run's configuration as the runtime checker reads it, and where a check runs.

``CheckSettings.from_args(args)`` reads every argument the checks depend on with
``vime.config.arg`` (``args``' value, else the parser's default: the checker works on any
``argparse.Namespace``, also one without vime's full argument set). ``CheckContext`` says
which user function is being checked and at which rollout step, for the ``in ...`` line of
every finding.

Usage::

    s = CheckSettings.from_args(args)
    s.n_samples_per_prompt, s.mode, s.interval            # 4, "raise", 1
    ctx = CheckContext.for_hook("rollout_function_path", "my_pkg.rollout.generate_rollout", 7)
    ctx.describe()   # "rollout `my_pkg.rollout.generate_rollout` (--rollout-function-path) step 7"

See ``docs/contract.md`` §6b (modes, interval) and §11 (arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vime.config import arg
from vime.contract.hooks import HOOKS

__all__ = ["CheckContext", "CheckSettings", "Mode", "MODES"]

Mode = Literal["off", "warn", "raise"]
#: Accepted values of ``--contract-check``.
MODES: tuple[Mode, ...] = ("off", "warn", "raise")

#: Arguments whose presence means rollout log-probs are consumed by training (VIM109).
LOGPROB_CONSUMERS: tuple[tuple[str, str], ...] = (
    ("use_rollout_logprobs", "--use-rollout-logprobs"),
    ("use_tis", "--use-tis"),
    ("get_mismatch_metrics", "--get-mismatch-metrics"),
)

#: How findings name each hook kind ("rollout `pkg.fn`"); others use the hook's argument.
_HOOK_LABELS: Mapping[str, str] = {
    "rollout_function_path": "rollout",
    "eval_function_path": "eval rollout",
    "custom_generate_function_path": "generate function",
    "custom_rm_path": "reward function",
    "dynamic_sampling_filter_path": "dynamic sampling filter",
    "buffer_filter_path": "buffer filter",
    "rollout_sample_filter_path": "sample filter",
    "rollout_all_samples_process_path": "all-samples process",
    "rollout_sample_hook_path": "sample hook",
    "custom_reward_post_process_path": "reward post-process",
    "custom_convert_samples_to_train_data_path": "convert function",
    "custom_loss_function_path": "custom loss",
    "custom_advantage_function_path": "advantage function",
    "custom_tis_function_path": "TIS function",
    "custom_pg_loss_reducer_function_path": "pg-loss reducer",
    "agent_function_path": "agent function",
    "data_source_path": "data source",
    "custom_rollout_log_function_path": "rollout log function",
    "custom_eval_rollout_log_function_path": "eval rollout log function",
    "rollout_data_postprocess_path": "rollout data post-process",
    "custom_megatron_init_path": "Megatron init hook",
    "custom_megatron_before_log_prob_hook_path": "before-log-prob hook",
    "custom_megatron_before_train_step_hook_path": "before-train-step hook",
    "custom_model_provider_path": "model provider",
    "custom_update_weight_post_write_path": "weight post-write hook",
}


def _dataset_names(value: Any) -> tuple[str, ...] | None:
    """Configured eval dataset names; None when absent or empty (nothing to compare with)."""
    if not value:
        return None
    names: list[str] = []
    for item in value:
        name = item.get("name") if isinstance(item, Mapping) else getattr(item, "name", None)
        if name is not None:
            names.append(str(name))
    return tuple(names)


def _positive(value: Any) -> int | None:
    """A token budget: a positive int, else None (unset, 0 or not an int: no budget check)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _non_negative(value: Any) -> int | None:
    """A token id: an int >= 0, else None (unknown: the check is skipped)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any) -> str | None:
    """A token's text: a non-empty str, else None (unknown: the check is skipped)."""
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class CheckSettings:
    """The arguments the runtime checks read, with their defaults when absent from ``args``."""

    #: ``--n-samples-per-prompt``: samples per group (VIM103).
    n_samples_per_prompt: int = 1
    #: ``--rollout-batch-size``: groups per step (VIM104); None skips the check.
    rollout_batch_size: int | None = None
    #: ``--reward-key`` / ``--eval-reward-key``: the key of dict rewards (VIM110, VIM130).
    reward_key: str | None = None
    eval_reward_key: str | None = None
    #: Flags that make training read ``rollout_log_probs`` (``--use-rollout-logprobs``, ...).
    logprob_flags: tuple[str, ...] = ()
    #: ``--partial-rollout``: generate may receive samples that already have a response.
    partial_rollout: bool = False
    #: ``--rm-type`` / ``--custom-rm-path`` (VIM118, VIM141).
    rm_type: str | None = None
    custom_rm_path: str | None = None
    #: ``--label-key`` (VIM118).
    label_key: str | None = None
    #: ``--rollout-sample-filter-path`` / ``--rollout-all-samples-process-path`` (VIM120).
    rollout_sample_filter_path: str | None = None
    rollout_all_samples_process_path: str | None = None
    #: Names of the configured eval datasets (``args.eval_datasets``); None if absent or empty.
    eval_dataset_names: tuple[str, ...] | None = None
    #: Vocabulary size for the token-id range check (VIM106); None if unknown.
    vocab_size: int | None = None
    #: ``--loss-type``: ``sft_loss`` skips the constant-reward warning (VIM117).
    loss_type: str | None = None
    #: ``--rollout-max-response-len`` / ``--rollout-max-context-len`` (VIM124); None: unset.
    max_response_len: int | None = None
    max_context_len: int | None = None
    #: ``--contract-check``: ``off``, ``warn`` or ``raise``.
    mode: Mode = "raise"
    #: ``--contract-check-interval``: B2-B6 run on every N-th step.
    interval: int = 1
    #: ``--rollout-max-prompt-len`` (VIM172); None: unset.
    max_prompt_len: int | None = None
    #: ``--advantage-estimator`` and reward normalisation (off with
    #: ``--disable-rewards-normalization``); a custom reward post-process or conversion hook
    #: computes its own advantages (VIM171).
    advantage_estimator: str | None = "grpo"
    rewards_normalization: bool = True
    custom_advantages: bool = False
    #: The tokenizer's BOS id, EOS id and EOS text (VIM176, VIM170, VIM177), set on
    #: ``args`` by the rollout manager (``args.bos_token_id``, ``args.eos_token_id``,
    #: ``args.eos_token_text``); None skips what needs them.
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    eos_token_text: str | None = None
    #: ``--rollout-stop-token-ids``: more ids the engine stops on (VIM170).
    stop_token_ids: tuple[int, ...] = ()

    @property
    def logprobs_consumed(self) -> bool:
        """True when training reads ``rollout_log_probs`` (they must exist and be valid)."""
        return bool(self.logprob_flags)

    @property
    def rm_configured(self) -> bool:
        """True when a reward model scores samples after generate (VIM141)."""
        return bool(self.custom_rm_path or self.rm_type)

    @classmethod
    def from_args(cls, args: Any) -> CheckSettings:
        """Read the settings from ``args`` (any object; a missing attribute: the parser's default).

        Raises:
            ValueError: ``--contract-check`` is not one of off/warn/raise, or
                ``--contract-check-interval`` is not a positive int (the message names the
                argument and the value).
        """
        mode = arg(args, "contract_check")
        if mode not in MODES:
            raise ValueError(f"--contract-check={mode!r}: expected one of {', '.join(MODES)}")
        interval = arg(args, "contract_check_interval")
        if interval is None:
            interval = 1
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
            raise ValueError(f"--contract-check-interval={interval!r}: expected an int >= 1")
        n = arg(args, "n_samples_per_prompt")
        vocab = getattr(args, "vocab_size", None)
        return cls(
            n_samples_per_prompt=n if isinstance(n, int) and n > 0 else 1,
            rollout_batch_size=arg(args, "rollout_batch_size"),
            reward_key=arg(args, "reward_key") or None,
            eval_reward_key=arg(args, "eval_reward_key") or None,
            logprob_flags=tuple(flag for name, flag in LOGPROB_CONSUMERS
                                if arg(args, name)),
            partial_rollout=bool(arg(args, "partial_rollout")),
            rm_type=arg(args, "rm_type") or None,
            custom_rm_path=arg(args, "custom_rm_path") or None,
            label_key=arg(args, "label_key") or None,
            rollout_sample_filter_path=arg(args, "rollout_sample_filter_path") or None,
            rollout_all_samples_process_path=(
                arg(args, "rollout_all_samples_process_path") or None),
            eval_dataset_names=_dataset_names(getattr(args, "eval_datasets", None)),
            vocab_size=vocab if isinstance(vocab, int) and vocab > 0 else None,
            loss_type=arg(args, "loss_type"),
            max_response_len=_positive(arg(args, "rollout_max_response_len")),
            max_context_len=_positive(arg(args, "rollout_max_context_len")),
            mode=mode,
            interval=interval,
            max_prompt_len=_positive(arg(args, "rollout_max_prompt_len")),
            advantage_estimator=arg(args, "advantage_estimator"),
            rewards_normalization=bool(arg(args, "rewards_normalization")),
            custom_advantages=bool(arg(args, "custom_reward_post_process_path")
                                   or arg(args, "custom_convert_samples_to_train_data_path")),
            bos_token_id=_non_negative(getattr(args, "bos_token_id", None)),
            eos_token_id=_non_negative(getattr(args, "eos_token_id", None)),
            eos_token_text=_text(getattr(args, "eos_token_text", None)),
            stop_token_ids=tuple(i for i in arg(args, "rollout_stop_token_ids") or ()
                                 if _non_negative(i) is not None),
        )

    def eval_key(self) -> str | None:
        """The dict-reward key of eval data: ``--eval-reward-key``, else ``--reward-key``."""
        return self.eval_reward_key or self.reward_key


@dataclass(frozen=True, slots=True)
class CheckContext:
    """Which user function a finding belongs to, and when.

    ``hook`` is a key of ``vime.contract.HOOKS`` (its ``--*-path`` argument is read from
    there); ``name`` the function's dotted path; ``rollout_id`` the step (None: unknown).
    """

    hook: str
    name: str
    rollout_id: int | None = None

    @classmethod
    def for_hook(cls, hook: str, name: str | None, rollout_id: int | None = None) -> CheckContext:
        """Context for ``hook`` (a HOOKS dest); ``name`` None means the hook's default path."""
        spec = HOOKS[hook]
        return cls(hook, name or spec.default or f"configured {spec.arg}", rollout_id)

    @property
    def arg(self) -> str:
        """The hook's command-line argument, e.g. ``--rollout-function-path``."""
        spec = HOOKS.get(self.hook)
        return spec.arg if spec is not None else self.hook

    @property
    def label(self) -> str:
        """How findings name the hook kind, e.g. ``rollout`` or ``reward function``."""
        return _HOOK_LABELS.get(self.hook, self.arg)

    @property
    def call_site(self) -> str:
        """The key of once-per-call-site warnings: hook kind and dotted path."""
        return f"{self.hook}:{self.name}"

    def describe(self) -> str:
        """``rollout `pkg.mod.fn` (--rollout-function-path) step 7``."""
        step = f" step {self.rollout_id}" if self.rollout_id is not None else ""
        return f"{self.label} `{self.name}` ({self.arg}){step}"
