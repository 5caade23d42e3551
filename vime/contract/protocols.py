"""Typed ``Protocol``\\ s for every hook, so ``mypy`` checks user modules against the contract.

Usage, in a user module::

    from vime.contract.protocols import RolloutFunction, RewardFunction

    def generate_rollout(args, rollout_id, data_source, evaluation=False): ...
    async def reward_func(args, sample, **kwargs): ...

    _rollout: RolloutFunction = generate_rollout      # mypy: OK
    _rm: RewardFunction = reward_func                   # mypy: OK

A definition with another parameter name (``data_buffer``), no ``evaluation`` parameter, or
``async def`` where ``def`` is called fails the assignment under mypy. The names of these
classes are the ``protocol`` fields of ``vime.contract.hooks.HOOKS``; a test keeps them in step.

See ``docs/contract.md`` §4 and §5.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
    from vime.rollout.data_source import DataSource
    from vime.rollout.filter_hub.base_types import DynamicFilterOutput
    from vime.utils.types import Sample

__all__ = [
    "AdvantageFunction", "AgentFunction", "AllSamplesProcess", "BufferFilter", "ConvertSamplesToTrainData",
    "CustomLossFunction", "DataSourceFactory", "DynamicSamplingFilter", "EvalRolloutLogFunction",
    "GenerateFunction", "GroupRewardFunction", "MegatronBeforeLogProb",
    "MegatronBeforeTrainStep", "MegatronInit", "ModelProvider", "PGLossReducerFactory",
    "RewardFunction", "RewardPostProcess", "RolloutDataPostprocess", "RolloutFunction",
    "RolloutLogFunction", "RolloutSampleFilter", "SampleHook", "TISFunction",
    "UpdateWeightPostWrite",
]


class RolloutFunction(Protocol):
    """``--rollout-function-path`` / ``--eval-function-path``: one rollout step."""

    def __call__(
        self, args: Namespace, rollout_id: int, data_source: DataSource, evaluation: bool = False
    ) -> RolloutFnTrainOutput | RolloutFnEvalOutput: ...


class GenerateFunction(Protocol):
    """``--custom-generate-function-path``: grows one sample (may fan out into a list)."""

    async def __call__(
        self, args: Namespace, sample: Sample, sampling_params: dict[str, Any]
    ) -> Sample | list[Sample]: ...


class AgentFunction(Protocol):
    """``--agent-function-path``: runs an agent against ``base_url``/``api_key`` (an
    OpenAI-compatible endpoint); returns the trajectory's reward, or None (unscored)."""

    async def __call__(
        self, args: Namespace, sample: Sample, base_url: str, api_key: str
    ) -> float | dict[str, Any] | None: ...


class RewardFunction(Protocol):
    """``--custom-rm-path``: one sample's reward (a real, or a dict read via --reward-key)."""

    async def __call__(self, args: Namespace, sample: Sample) -> float | dict[str, Any]: ...


class GroupRewardFunction(Protocol):
    """``--custom-rm-path`` under ``--group-rm``: ``len(samples)`` rewards, in order."""

    async def __call__(
        self, args: Namespace, samples: list[Sample]
    ) -> list[float] | list[dict[str, Any]]: ...


class DynamicSamplingFilter(Protocol):
    """``--dynamic-sampling-filter-path``: keep or drop one finished group."""

    def __call__(self, args: Namespace, samples: list[Sample]) -> DynamicFilterOutput: ...


class BufferFilter(Protocol):
    """``--buffer-filter-path``: at most ``num_samples`` groups, removed from ``buffer``."""

    def __call__(
        self, args: Namespace, rollout_id: int | None, buffer: list[list[Sample]], num_samples: int
    ) -> list[list[Sample]]: ...


class RolloutSampleFilter(Protocol):
    """``--rollout-sample-filter-path``: sets ``remove_sample`` on some samples."""

    def __call__(self, args: Namespace, groups: list[list[Sample]]) -> None: ...


class AllSamplesProcess(Protocol):
    """``--rollout-all-samples-process-path``: sees every group of a step, kept or dropped."""

    def __call__(
        self, args: Namespace, all_groups: list[list[Sample]], data_source: DataSource
    ) -> None: ...


class SampleHook(Protocol):
    """``--rollout-sample-hook-path``: inspects a generated sample (None keeps it)."""

    def __call__(self, args: Namespace, sample: Sample) -> Sample | None: ...


class DataSourceFactory(Protocol):
    """``--data-source-path``: a class whose instances are data sources."""

    def __call__(self, args: Namespace) -> DataSource: ...


class RewardPostProcess(Protocol):
    """``--custom-reward-post-process-path``: ``(raw_rewards, rewards)`` per flat sample."""

    def __call__(
        self, args: Namespace, samples: list[Sample]
    ) -> tuple[list[float], list[float]]: ...


class ConvertSamplesToTrainData(Protocol):
    """``--custom-convert-samples-to-train-data-path``: flat samples to training columns."""

    def __call__(self, args: Namespace, samples: list[Sample]) -> dict[str, Any]: ...


class RolloutLogFunction(Protocol):
    """``--custom-rollout-log-function-path``: True skips the default logging."""

    def __call__(
        self,
        rollout_id: int,
        args: Namespace,
        samples: list[Sample],
        rollout_extra_metrics: dict[str, Any] | None,
        rollout_time: float,
    ) -> bool: ...


class EvalRolloutLogFunction(Protocol):
    """``--custom-eval-rollout-log-function-path``: True skips the default logging."""

    def __call__(
        self, rollout_id: int, args: Namespace, data: dict[str, dict[str, Any]],
        extra_metrics: dict[str, Any] | None,
    ) -> bool: ...


class RolloutDataPostprocess(Protocol):
    """``--rollout-data-postprocess-path``: edits training columns in place."""

    def __call__(self, args: Namespace, rollout_id: int, rollout_data: dict[str, Any]) -> None: ...


class CustomLossFunction(Protocol):
    """``--custom-loss-function-path``: ``(loss, log_dict)`` for a micro-batch."""

    def __call__(
        self, args: Namespace, batch: dict[str, Any], logits: Any, sum_of_sample_mean: Any
    ) -> tuple[Any, dict[str, Any]]: ...


class AdvantageFunction(Protocol):
    """``--custom-advantage-function-path``: sets ``advantages`` and ``returns``."""

    def __call__(self, args: Namespace, rollout_data: dict[str, Any]) -> None: ...


class TISFunction(Protocol):
    """``--custom-tis-function-path``: called with keywords only."""

    def __call__(
        self, *, args: Namespace, pg_loss: Any, train_log_probs: Any, rollout_log_probs: Any,
        loss_masks: Any, total_lengths: Any, response_lengths: Any,
    ) -> tuple[Any, Any, dict[str, Any]]: ...


class PGLossReducerFactory(Protocol):
    """``--custom-pg-loss-reducer-function-path``: returns the loss reducer."""

    def __call__(
        self, total_lengths: Any, response_lengths: Any, loss_masks: Any,
        calculate_per_token_loss: bool = False,
    ) -> Callable[..., Any]: ...


class MegatronInit(Protocol):
    """``--custom-megatron-init-path``."""

    def __call__(self, args: Namespace) -> None: ...


class MegatronBeforeLogProb(Protocol):
    """``--custom-megatron-before-log-prob-hook-path``."""

    def __call__(self, args: Namespace, model: Any, store_prefix: str) -> None: ...


class MegatronBeforeTrainStep(Protocol):
    """``--custom-megatron-before-train-step-hook-path``."""

    def __call__(
        self, args: Namespace, rollout_id: int, step_id: int, model: Any, optimizer: Any,
        opt_param_scheduler: Any,
    ) -> None: ...


class ModelProvider(Protocol):
    """``--custom-model-provider-path``."""

    def __call__(self, pre_process: bool, post_process: bool, vp_stage: int | None = None) -> Any: ...


class UpdateWeightPostWrite(Protocol):
    """``--custom-update-weight-post-write-path``: after a weight version is written."""

    def __call__(self, args: Namespace, version_dir: str, rollout_engines: list[Any]) -> None: ...
