"""Every user hook (``--*-path`` argument) of vime, as data.

One :class:`HookSpec` per hook gives its argument, default, parameters, sync/async mode and
return type. ``vime.utils.arguments`` builds the ``--*-path`` arguments from ``HOOKS``,
``load_function(path, hook=dest)`` checks signatures against it (VIM100), the linter checks hook
definitions against it (VIM001, VIM004) and the docs list it.

Usage::

    from vime.contract.hooks import HOOKS, hook_spec
    spec = HOOKS["rollout_function_path"]
    spec.arg                  # "--rollout-function-path"
    spec.render()             # "def generate_rollout(args, rollout_id, data_source, evaluation=False)"
    hook_spec("custom_rm_path", group_rm=True).params   # ("args", "samples")

See ``docs/contract.md`` §4 and §5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from vime.contract.sample import GENERATED_FIELDS, REQUIRED_TRAIN_FIELDS

__all__ = ["ASYNC_API", "FIELD_SETTERS", "HOOK_API_MODULES", "BUILTIN_GENERATE_PATH", "DEFAULT_ROLLOUT_PATH", "ENGINE_FREE_ROLLOUTS",
           "EVAL_DATASETS_VIEW", "EVAL_ENTRY_KEYS", "SFT_ROLLOUT_PATH",
           "HOOKS", "HookSpec", "HookKind", "HookMode", "GROUP_RM_SPEC", "CONVERT_REQUIRED_KEYS",
           "hook_spec", "hook_for_arg"]

HookMode = Literal["sync", "async", "either"]
HookKind = Literal["function", "class"]


@dataclass(frozen=True, slots=True)
class HookSpec:
    """The contract of one user hook.

    The call site passes ``params`` positionally, in order, except the names in
    ``keyword_passed``, which it passes by keyword. ``optional_kwargs`` are passed only when the
    hook declares them (or ``**kwargs``).
    """

    #: The command-line argument, e.g. ``"--custom-rm-path"``.
    arg: str
    #: The argparse dest, e.g. ``"custom_rm_path"``; the key of ``HOOKS``.
    dest: str
    #: Dotted path used when the argument is not given (None: the hook is off).
    default: str | None
    #: ``"function"``, or ``"class"`` for a class whose ``__init__(self, ...)`` takes ``params``.
    kind: HookKind
    #: Parameter names in call order (``self`` excluded for classes).
    params: tuple[str, ...]
    #: ``"sync"`` (plain ``def``), ``"async"`` (``async def``) or ``"either"``.
    mode: HookMode
    #: The return type, as source text resolved against ``vime.utils.types`` and friends.
    returns: str
    #: Where vime calls it.
    call_site: str
    #: One line of meaning.
    doc: str
    #: Required defaults: name -> default source text. A missing one is an error, another
    #: value a warning (the rollout function's ``evaluation=False``).
    param_defaults: MappingProxyType[str, str] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: Names the call site passes by keyword (the hook must accept them by that name).
    keyword_passed: tuple[str, ...] = ()
    #: Keywords passed only if the hook declares them or ``**kwargs``.
    optional_kwargs: tuple[str, ...] = ()
    #: Old parameter names of a stale API: old -> current (deprecated: a warning, since the
    #: argument is passed positionally and the call still works).
    renames: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The name of the typed Protocol in ``vime.contract.protocols``.
    protocol: str = ""
    #: Function names that the linter treats as this hook when nothing configures it.
    conventional_names: tuple[str, ...] = ()
    #: The argument may be given several times (``action="append"``).
    multiple: bool = False
    #: Called by the v1 runtime (False: rejected at parse time with :attr:`rejection`).
    v1: bool = True
    #: Why vime rejects a hook it does not call, and what to use instead (``v1=False`` only).
    rejection: str = ""

    @property
    def positional(self) -> tuple[str, ...]:
        """The names passed positionally, in order."""
        return tuple(p for p in self.params if p not in self.keyword_passed)

    def render(self, name: str | None = None) -> str:
        """The expected definition as source text, e.g. ``async def generate(args, sample, ...)``."""
        parts = [
            f"{p}={self.param_defaults[p]}" if p in self.param_defaults else p
            for p in self.params
        ]
        parts += [f"{k}=..." for k in self.optional_kwargs]
        fname = name or (self.conventional_names[0] if self.conventional_names else "hook")
        if self.kind == "class":
            return f"class {fname}: def __init__(self, {', '.join(parts)})"
        prefix = {"sync": "def", "async": "async def", "either": "def or async def"}[self.mode]
        return f"{prefix} {fname}({', '.join(parts)})"


def _d(**kw: str) -> MappingProxyType[str, str]:
    return MappingProxyType(dict(kw))


_ROLLOUT = dict(
    kind="function",
    params=("args", "rollout_id", "data_source", "evaluation"),
    mode="sync",
    returns="RolloutFnTrainOutput | RolloutFnEvalOutput",
    param_defaults=_d(evaluation="False"),
    keyword_passed=("evaluation",),
    renames=_d(data_buffer="data_source"),
    protocol="RolloutFunction",
    conventional_names=("generate_rollout",),
)

#: The start of every Megatron hook's rejection message.
_TORCH = ("vime's trainer is torch (a Hugging Face model and torch AdamW; torch FSDP2 for many "
          "GPUs), not Megatron-LM, so this hook would never run; ")

_SPECS: tuple[HookSpec, ...] = (
    HookSpec(
        arg="--rollout-function-path", dest="rollout_function_path",
        default="vime.rollout.vllm_rollout.generate_rollout",
        call_site="RolloutManager.generate and RolloutManager.eval, through call_rollout_fn",
        doc="Produces one rollout step: train groups, or eval data when evaluation=True.",
        **_ROLLOUT,  # type: ignore[arg-type]
    ),
    HookSpec(
        arg="--eval-function-path", dest="eval_function_path", default=None,
        call_site="RolloutManager.eval, through call_rollout_fn (default: the rollout function)",
        doc="Produces eval data; called with evaluation=True.",
        **{**_ROLLOUT, "conventional_names": ("eval_rollout",)},  # type: ignore[arg-type]
    ),
    HookSpec(
        arg="--custom-generate-function-path", dest="custom_generate_function_path",
        default=None, kind="function", params=("args", "sample", "sampling_params"),
        mode="async", returns="Sample | list[Sample]",
        call_site="vllm_rollout.generate_and_rm, once per sample",
        doc="Generates one sample's response (multi-turn, tools); grows it with "
            "Sample.append_response_tokens.",
        optional_kwargs=("evaluation",), protocol="GenerateFunction",
        conventional_names=("generate", "custom_generate"),
    ),
    HookSpec(
        arg="--agent-function-path", dest="agent_function_path", default=None,
        kind="function", params=("args", "sample", "base_url", "api_key"), mode="async",
        returns="float | dict[str, Any] | None",
        call_site="vime.agent.generate.generate (the default rollout's generate step), once "
                  "per sample",
        doc="Runs an agent against the OpenAI-compatible base_url/api_key vime hands it; its "
            "calls become the sample (tokens, loss mask, log-probs); returns the reward "
            "(None: the run's reward function scores it).",
        optional_kwargs=("evaluation",), protocol="AgentFunction",
        conventional_names=("run_agent",),
    ),
    HookSpec(
        arg="--custom-rm-path", dest="custom_rm_path", default=None, kind="function",
        params=("args", "sample"), mode="async", returns="float | dict[str, Any]",
        call_site="rm_hub.async_rm, once per sample (with --group-rm: batched_async_rm)",
        doc="Scores one sample: a real reward, or a dict read through --reward-key.",
        protocol="RewardFunction", conventional_names=("reward_func", "custom_rm"),
    ),
    HookSpec(
        arg="--dynamic-sampling-filter-path", dest="dynamic_sampling_filter_path",
        default=None, kind="function", params=("args", "samples"), mode="sync",
        returns="DynamicFilterOutput", call_site="vllm_rollout.generate_rollout_async, per finished group",
        doc="Keeps or drops a finished group (DynamicFilterOutput(keep, reason)).",
        protocol="DynamicSamplingFilter", conventional_names=("dynamic_sampling_filter",),
    ),
    HookSpec(
        arg="--buffer-filter-path", dest="buffer_filter_path",
        default="vime.rollout.data_source.pop_first", kind="function",
        params=("args", "rollout_id", "buffer", "num_samples"), mode="sync",
        returns="list[list[Sample]]", call_site="RolloutDataSourceWithBuffer.get_samples",
        doc="Takes at most num_samples groups out of the buffer (and removes them from it).",
        protocol="BufferFilter", conventional_names=("buffer_filter",),
    ),
    HookSpec(
        arg="--rollout-sample-filter-path", dest="rollout_sample_filter_path", default=None,
        kind="function", params=("args", "groups"), mode="sync", returns="None",
        call_site="base_types.finalize_rollout_groups, once per step",
        doc="Marks samples to leave out of the loss by setting remove_sample=True.",
        protocol="RolloutSampleFilter", conventional_names=("rollout_sample_filter",),
    ),
    HookSpec(
        arg="--rollout-all-samples-process-path", dest="rollout_all_samples_process_path",
        default=None, kind="function", params=("args", "all_groups", "data_source"),
        mode="sync", returns="None",
        call_site="end of the default rollout, on all groups including dropped ones",
        doc="Sees every group of the step, kept or dropped (for logging or recycling).",
        protocol="AllSamplesProcess", conventional_names=("process_all_samples",),
    ),
    HookSpec(
        arg="--rollout-sample-hook-path", dest="rollout_sample_hook_path", default=None,
        kind="function", params=("args", "sample"), mode="either", returns="Sample | None",
        call_site="vllm_rollout.generate_and_rm, before the reward, on every leaf sample",
        doc="Inspects or replaces a generated sample before its reward (None keeps it).",
        optional_kwargs=("rollout_id", "evaluation"), multiple=True,
        protocol="SampleHook", conventional_names=("sample_hook",),
    ),
    HookSpec(
        arg="--data-source-path", dest="data_source_path",
        default="vime.rollout.data_source.RolloutDataSourceWithBuffer", kind="class",
        params=("args",), mode="sync", returns="DataSource",
        call_site="RolloutManager.__init__", doc="The prompt source: a DataSource subclass.",
        protocol="DataSourceFactory",
    ),
    HookSpec(
        arg="--custom-reward-post-process-path", dest="custom_reward_post_process_path",
        default=None, kind="function", params=("args", "samples"), mode="sync",
        returns="tuple[list[float], list[float]]",
        call_site="batch_builder.convert, before normalisation",
        doc="Returns (raw_rewards, rewards), one of each per flat sample.",
        protocol="RewardPostProcess", conventional_names=("reward_post_process",),
    ),
    HookSpec(
        arg="--custom-convert-samples-to-train-data-path",
        dest="custom_convert_samples_to_train_data_path", default=None, kind="function",
        params=("args", "samples"), mode="sync", returns="dict[str, Any]",
        call_site="batch_builder.convert (replaces it)",
        doc="Turns flat samples into training columns (tokens, response_lengths, rewards, ...).",
        protocol="ConvertSamplesToTrainData", conventional_names=("convert_samples_to_train_data",),
    ),
    HookSpec(
        arg="--custom-rollout-log-function-path", dest="custom_rollout_log_function_path",
        default=None, kind="function",
        params=("rollout_id", "args", "samples", "rollout_extra_metrics", "rollout_time"),
        mode="sync", returns="bool", call_site="RolloutManager, log_rollout_data",
        doc="Logs a train rollout; returning True skips the default logging.",
        protocol="RolloutLogFunction", conventional_names=("log_rollout_data",),
    ),
    HookSpec(
        arg="--custom-eval-rollout-log-function-path",
        dest="custom_eval_rollout_log_function_path", default=None, kind="function",
        params=("rollout_id", "args", "data", "extra_metrics"), mode="sync", returns="bool",
        call_site="RolloutManager, log_eval_rollout_data",
        doc="Logs an eval rollout; returning True skips the default logging.",
        protocol="EvalRolloutLogFunction", conventional_names=("log_eval_rollout_data",),
    ),
    HookSpec(
        arg="--rollout-data-postprocess-path", dest="rollout_data_postprocess_path",
        default=None, kind="function", params=("args", "rollout_id", "rollout_data"),
        mode="sync", returns="None", call_site="trainer, after receiving a step's training data",
        doc="Edits the training data columns in place before the loss.",
        protocol="RolloutDataPostprocess",
    ),
    HookSpec(
        arg="--custom-loss-function-path", dest="custom_loss_function_path", default=None,
        kind="function", params=("args", "batch", "logits", "sum_of_sample_mean"), mode="sync",
        returns="tuple[Any, dict[str, Any]]",
        call_site="Trainer, once per micro-batch, instead of the built-in loss "
                  "(--loss-type custom_loss)",
        doc="Computes (loss, log_dict) for a micro-batch.", protocol="CustomLossFunction",
    ),
    HookSpec(
        arg="--custom-advantage-function-path", dest="custom_advantage_function_path",
        default=None, kind="function", params=("args", "rollout_data"), mode="sync",
        returns="None",
        call_site="Trainer.train, once per rollout step, after the log probs and before the "
                  "optimiser steps (instead of --advantage-estimator)",
        doc="Sets rollout_data['advantages'] and ['returns'].", protocol="AdvantageFunction",
    ),
    HookSpec(
        arg="--custom-tis-function-path", dest="custom_tis_function_path", default=None,
        kind="function",
        params=("args", "pg_loss", "train_log_probs", "rollout_log_probs", "loss_masks",
                "total_lengths", "response_lengths"),
        keyword_passed=("args", "pg_loss", "train_log_probs", "rollout_log_probs", "loss_masks",
                        "total_lengths", "response_lengths"),
        mode="sync", returns="tuple[Any, Any, dict[str, Any]]",
        call_site="Trainer policy loss, once per micro-batch, on the per-token pg loss "
                  "(with --use-tis or --get-mismatch-metrics; replaces the built-in TIS)",
        doc="Returns (pg_loss, modified_response_masks, tis_metrics).", protocol="TISFunction",
    ),
    HookSpec(
        arg="--custom-pg-loss-reducer-function-path",
        dest="custom_pg_loss_reducer_function_path", default=None, kind="function",
        params=("total_lengths", "response_lengths", "loss_masks", "calculate_per_token_loss"),
        param_defaults=_d(calculate_per_token_loss="False"), mode="sync",
        returns="Callable[..., Any]",
        call_site="Trainer policy loss, once per micro-batch; the callable reduces the "
                  "per-token pg loss (instead of sum_of_sample_mean)",
        doc="Returns the reducer of per-token policy losses.", protocol="PGLossReducerFactory",
    ),
    HookSpec(
        arg="--custom-megatron-init-path", dest="custom_megatron_init_path", default=None,
        kind="function", params=("args",), mode="sync", returns="None",
        call_site="Megatron trainer start-up", doc="Megatron initialisation hook.",
        protocol="MegatronInit", v1=False,
        rejection=_TORCH + "set-up code belongs in the data source's or the rollout function's "
                  "module (imported at start), or in --custom-config-path.",
    ),
    HookSpec(
        arg="--custom-megatron-before-log-prob-hook-path",
        dest="custom_megatron_before_log_prob_hook_path", default=None, kind="function",
        params=("args", "model", "store_prefix"), mode="sync", returns="None",
        call_site="Megatron trainer, before log-prob computation",
        doc="Megatron hook before log-probs.", protocol="MegatronBeforeLogProb", v1=False,
        rejection=_TORCH + "use --rollout-data-postprocess-path (called on the step's data "
                  "before the log probs are used).",
    ),
    HookSpec(
        arg="--custom-megatron-before-train-step-hook-path",
        dest="custom_megatron_before_train_step_hook_path", default=None, kind="function",
        params=("args", "rollout_id", "step_id", "model", "optimizer", "opt_param_scheduler"),
        mode="sync", returns="None", call_site="Megatron trainer, before each train step",
        doc="Megatron hook before a train step.", protocol="MegatronBeforeTrainStep", v1=False,
        rejection=_TORCH + "use --rollout-data-postprocess-path (once per rollout step, "
                  "before its optimiser steps) or --custom-loss-function-path.",
    ),
    HookSpec(
        arg="--custom-model-provider-path", dest="custom_model_provider_path", default=None,
        kind="function", params=("pre_process", "post_process", "vp_stage"),
        param_defaults=_d(vp_stage="None"), mode="sync", returns="Any",
        call_site="Megatron model construction", doc="Builds the Megatron model.",
        protocol="ModelProvider", v1=False,
        rejection=_TORCH + "the model is AutoModelForCausalLM.from_pretrained(--hf-checkpoint): "
                  "save your model as a Hugging Face folder and pass it there.",
    ),
    HookSpec(
        arg="--custom-update-weight-post-write-path",
        dest="custom_update_weight_post_write_path", default=None, kind="function",
        params=("args", "version_dir", "rollout_engines"), mode="sync", returns="None",
        call_site="weight sync, after the weights are written and before engines reload",
        doc="Runs after a weight version is written to version_dir.",
        protocol="UpdateWeightPostWrite",
    ),
)

#: Every hook, keyed by argparse dest.
HOOKS: MappingProxyType[str, HookSpec] = MappingProxyType({s.dest: s for s in _SPECS})

#: ``--custom-rm-path`` under ``--group-rm`` (or for a fan-out list from generate): one call
#: per group, ``len(samples)`` rewards back.
GROUP_RM_SPEC: HookSpec = HookSpec(
    arg="--custom-rm-path", dest="custom_rm_path", default=None, kind="function",
    params=("args", "samples"), mode="async", returns="list[float | dict[str, Any]]",
    call_site="rm_hub.batched_async_rm, once per group (--group-rm)",
    doc="Scores a whole group: len(samples) rewards, in order.",
    renames=_d(sample="samples"), protocol="GroupRewardFunction",
    conventional_names=("batched_reward_func", "group_reward_func"),
)

#: Keys a ``--custom-convert-samples-to-train-data-path`` result must hold, each a column of
#: ``len(samples)`` values (docs/contract.md §5; VIM162).
CONVERT_REQUIRED_KEYS: tuple[str, ...] = (
    "tokens", "response_lengths", "rewards", "raw_reward", "truncated", "sample_indices",
    "loss_masks",
)

#: The default rollout function (``--rollout-function-path``'s default).
DEFAULT_ROLLOUT_PATH: str = str(HOOKS["rollout_function_path"].default)
#: The built-in SFT rollout function (no engine: it tokenises the dataset's messages).
SFT_ROLLOUT_PATH = "vime.rollout.sft_rollout.generate_rollout"
#: The built-in generate function, used when ``--custom-generate-function-path`` is unset.
BUILTIN_GENERATE_PATH = "vime.rollout.vllm_rollout.generate"
#: Rollout functions that need no inference engine (the manager starts none for them).
ENGINE_FREE_ROLLOUTS: frozenset[str] = frozenset({SFT_ROLLOUT_PATH})
#: The modules of vime's hook-facing API: what hook code imports for its types and calls
#: (``Sample``, the output dataclasses, the data source, the rollout entry points, the default
#: rollout's generate/reward helpers and state, ``http_utils``, the Protocols). ``vime-lint
#: types`` type-checks hooks against these and treats every other vime module as ``Any``.
HOOK_API_MODULES: tuple[str, ...] = (
    "vime.contract.protocols", "vime.utils.types", "vime.rollout.base_types",
    "vime.rollout.data_source", "vime.rollout.filter_hub.base_types",
    "vime.rollout.vllm_rollout", "vime.rollout.vllm.rollout_fn", "vime.rollout.vllm.client",
    "vime.rollout.vllm.sampling", "vime.rollout.vllm.evaluation", "vime.rollout.vllm.state",
    "vime.rollout.vllm.train_loop", "vime.rollout.vllm.abort", "vime.rollout.sft_rollout",
    "vime.rollout.rm_hub", "vime.utils.http_utils", "vime.utils.async_utils",
)

#: The async functions of vime's public API: user code must ``await`` them.
ASYNC_API: frozenset[str] = frozenset({
    BUILTIN_GENERATE_PATH, "vime.rollout.vllm_rollout.generate_and_rm",
    "vime.rollout.vllm_rollout.generate_and_rm_group", "vime.rollout.rm_hub.async_rm",
    "vime.rollout.rm_hub.batched_async_rm", "vime.utils.http_utils.post",
    "vime.utils.http_utils.get",
})

#: vime callables that set required Sample fields on the samples they are given: (the tail of
#: the qualified name, which a re-export and its defining module share; the fields set).
#: The linter's required-fields rule reads it (VIM036).
FIELD_SETTERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vllm_rollout.generate_rollout", REQUIRED_TRAIN_FIELDS),
    ("generate_and_rm_group", REQUIRED_TRAIN_FIELDS),
    ("generate_and_rm", REQUIRED_TRAIN_FIELDS),
    ("vllm_rollout.generate", GENERATED_FIELDS),
    ("client.generate", GENERATED_FIELDS),
    ("agent.generate.generate", GENERATED_FIELDS),
    ("rm_hub.async_rm", ("reward",)),
    ("rm_hub.batched_async_rm", ("reward",)),
    ("Sample.from_dict", REQUIRED_TRAIN_FIELDS),
)

#: Keys every entry of ``RolloutFnEvalOutput.data`` holds: one list each, one value per sample
#: (VIM130).
EVAL_ENTRY_KEYS: tuple[str, ...] = ("rewards", "truncated", "samples")

#: Where a rollout's eval branch gets the eval datasets (``--eval-prompt-data`` /
#: ``--eval-config``): ``{name: samples}``, ``n_samples_per_eval_prompt`` copies of each prompt,
#: the samples the default rollout evaluates (``vime.rollout.data_source.DataSource``,
#: ``vime.rollout.eval_data``); ``data_source.get_samples`` serves training prompts (VIM131).
EVAL_DATASETS_VIEW = "data_source.eval_datasets()"

_BY_ARG = {s.arg: s for s in _SPECS}


def hook_spec(dest: str, *, group_rm: bool = False) -> HookSpec:
    """The spec for ``dest``; with ``group_rm`` the batched ``--custom-rm-path`` form.

    Raises:
        KeyError: ``dest`` is no hook; the message lists the known ones.
    """
    if group_rm and dest == "custom_rm_path":
        return GROUP_RM_SPEC
    try:
        return HOOKS[dest]
    except KeyError:
        raise KeyError(f"{dest!r} is not a vime hook; known hooks: {', '.join(HOOKS)}") from None


def hook_for_arg(arg: str) -> HookSpec | None:
    """The spec whose command-line argument is ``arg`` (``"--custom-rm-path"``), or None."""
    return _BY_ARG.get(arg)
