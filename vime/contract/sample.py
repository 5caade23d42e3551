"""The fields of :class:`vime.utils.types.Sample`, as data.

``SAMPLE_FIELDS`` is the one ordered list of Sample fields: the runtime checker reads the type
hints and length rules, the linter reads the names (unknown ``Sample(...)`` keywords, VIM006),
and a test asserts that ``dataclasses.fields(Sample)`` matches it name for name, hint for hint
and default for default.

Usage::

    from vime.contract.sample import FIELDS_BY_NAME
    FIELDS_BY_NAME["loss_mask"].length_rule      # "response_length"
    FIELDS_BY_NAME["tokens"].hint                # "list[int]"

Field order follows upstream slime's ``slime/utils/types.py`` (newest); see ``docs/contract.md`` §2.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from vime.contract.errors import Severity

__all__ = [
    "FIELDS_BY_NAME",
    "FINISH_REASON_STATUS",
    "FieldSpec",
    "GENERATED_FIELDS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_TRAIN_FIELDS",
    "RESPONSE_LENGTH_FIELDS",
    "SAMPLE_FIELDS",
    "UNSET_FIELD_SEVERITY",
    "WRITTEN_IN_PLACE_FIELDS",
    "SAMPLE_FIELD_NAMES",
    "STATUS_VALUES",
    "LengthRule",
]

#: How a per-token field's length relates to the sample: ``"response_length"`` (one entry per
#: response token), ``"response_length+1"`` (ragged offsets), ``"tokens-1"`` (per transition).
LengthRule = Literal["response_length", "response_length+1", "tokens-1"]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of ``Sample``.

    Usage::

        FieldSpec("loss_mask", "list[int] | None", "None", length_rule="response_length",
                  read_by_conversion=True)
    """

    #: The attribute name, exactly as upstream spells it.
    name: str
    #: The type hint as source text, resolved lazily against ``vime.utils.types``.
    hint: str
    #: The default as source text: a literal (``"None"``, ``"0"``, ``"''"``), a fresh
    #: container (``"[]"``, ``"{}"``, built by ``default_factory``) or ``Sample.<...>``.
    default: str
    #: An advanced field: it exists and round-trips, but nothing in v1 produces it.
    advanced: bool = False
    #: Length rule for per-token fields, None for the others.
    length_rule: LengthRule | None = None
    #: Read by the conversion to training data: a wrong type there is an error, else a warning.
    read_by_conversion: bool = False
    #: One line of meaning, for docs and messages.
    doc: str = ""

    @property
    def uses_factory(self) -> bool:
        """True when the default is a fresh mutable object (``default_factory``)."""
        return self.default in ("[]", "{}") or self.default.endswith("()")


_ARR = "Any"  # ndarray, Tensor, nested list or TensorRef

SAMPLE_FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec("group_index", "int | None", "None", read_by_conversion=True,
              doc="Prompt-group id shared by the n_samples_per_prompt copies of one prompt."),
    FieldSpec("index", "int | None", "None", read_by_conversion=True,
              doc="Unique increasing sample id; sort key; exported as sample_indices."),
    FieldSpec("rollout_id", "int | None", "None", read_by_conversion=True,
              doc="Rollout-execution id (None means index); shared by fan-out siblings."),
    FieldSpec("prompt", "str | list[dict[str, Any]]", "''",
              doc="Templated prompt text, or the raw chat messages."),
    FieldSpec("tokens", "list[int]", "[]", read_by_conversion=True,
              doc="Prompt token ids followed by response token ids."),
    FieldSpec("multimodal_inputs", "dict[str, Any] | None", "None", advanced=True,
              doc="Raw media inputs."),
    FieldSpec("multimodal_train_inputs", "dict[str, Any] | None", "None", advanced=True,
              read_by_conversion=True, doc="Processor outputs for training."),
    FieldSpec("multimodal_train_input_id", "str | None", "None", advanced=True,
              doc="Id of stored multimodal training inputs."),
    FieldSpec("apply_chat_template_kwargs", "dict[str, Any]", "{}",
              doc="Per-sample keyword arguments for the chat template."),
    FieldSpec("response", "str", "''", doc="Decoded response text (all turns)."),
    FieldSpec("response_length", "int", "0", read_by_conversion=True,
              doc="Number of response tokens at the end of tokens."),
    FieldSpec("label", "str | None", "None", doc="Ground truth for the reward function."),
    FieldSpec("reward", "float | dict[str, Any] | None", "None", read_by_conversion=True,
              doc="Scalar reward, or a dict read through --reward-key."),
    FieldSpec("loss_mask", "list[int] | None", "None", length_rule="response_length",
              read_by_conversion=True, doc="0/1 per response token; None means all 1."),
    FieldSpec("weight_versions", "list[str]", "[]",
              doc="Engine weight version per response chunk."),
    FieldSpec("rollout_log_probs", "list[float] | None", "None", length_rule="response_length",
              read_by_conversion=True,
              doc="Sampler log-prob (natural log, <= 0) per response token."),
    FieldSpec("rollout_topk_token_ids", _ARR, "None", advanced=True,
              length_rule="response_length", doc="Top-k token ids for score centering."),
    FieldSpec("rollout_topk_log_probs", _ARR, "None", advanced=True,
              length_rule="response_length", doc="Top-k log-probs for score centering."),
    FieldSpec("rollout_top_p_token_ids", _ARR, "None", advanced=True,
              doc="Ragged top-p token ids; token i owns ids[off[i]:off[i+1]]."),
    FieldSpec("rollout_top_p_token_offsets", _ARR, "None", advanced=True,
              length_rule="response_length+1",
              doc="Offsets into the ragged top-p arrays, from 0 to len(ids)."),
    FieldSpec("rollout_top_p_log_probs", _ARR, "None", advanced=True,
              doc="Ragged top-p log-probs, aligned with rollout_top_p_token_ids."),
    FieldSpec("rollout_routed_experts", _ARR, "None", advanced=True, length_rule="tokens-1",
              doc="MoE routing replay, (len(tokens)-1, num_layers, moe_router_topk)."),
    FieldSpec("remove_sample", "bool", "False", read_by_conversion=True,
              doc="Zero the loss mask at conversion; the sample still counts in normalisation."),
    FieldSpec("teacher_log_probs", "list[float] | None", "None", length_rule="response_length",
              read_by_conversion=True, doc="Teacher log-probs for on-policy distillation."),
    FieldSpec("status", "Sample.Status", "Sample.Status.PENDING", read_by_conversion=True,
              doc="pending, completed, truncated, aborted or failed."),
    FieldSpec("metadata", "dict[str, Any]", "{}", read_by_conversion=True,
              doc="Dataset metadata, tools, rm_type, raw_reward, round_number, ..."),
    FieldSpec("generate_function_path", "str | None", "None",
              doc="Per-sample override of the generate function."),
    FieldSpec("custom_rm_path", "str | None", "None",
              doc="Per-sample override of the reward function."),
    FieldSpec("train_metadata", "dict[str, Any] | None", "None", read_by_conversion=True,
              doc="Forwarded to training as metadata."),
    FieldSpec("session_id", "str | None", "None",
              doc="Router affinity key (x-session-id header)."),
    FieldSpec("non_generation_time", "float", "0.0", doc="Seconds spent outside generation."),
    FieldSpec("spec_info", "Sample.SpecInfo", "Sample.SpecInfo()", advanced=True,
              doc="Speculative-decoding counters."),
    FieldSpec("prefix_cache_info", "Sample.PrefixCacheInfo", "Sample.PrefixCacheInfo()",
              doc="Prefix-cache counters."),
)

SAMPLE_FIELD_NAMES: frozenset[str] = frozenset(f.name for f in SAMPLE_FIELDS)
FIELDS_BY_NAME: MappingProxyType[str, FieldSpec] = MappingProxyType(
    {f.name: f for f in SAMPLE_FIELDS}
)

#: Per-token fields with one entry per response token (``length_rule == "response_length"``).
RESPONSE_LENGTH_FIELDS: tuple[str, ...] = tuple(
    f.name for f in SAMPLE_FIELDS if f.length_rule == "response_length")

#: List and dict fields vime itself writes into in place, after the user's code set them:
#: ``Sample.append_response_tokens`` extends ``tokens``, ``loss_mask`` and
#: ``rollout_log_probs``; failure records and partial-rollout bookkeeping add keys to
#: ``metadata``. One object shared by several samples is then written through all of them
#: (VIM025 is an error for these whatever the user's code does).
WRITTEN_IN_PLACE_FIELDS: frozenset[str] = frozenset(
    {"tokens", "loss_mask", "rollout_log_probs", "metadata"})

#: Fields every sample of a ``RolloutFnTrainOutput`` has set by the time it is returned: the
#: conversion to training data reads them (docs/contract.md §2, §4; VIM036).
REQUIRED_TRAIN_FIELDS: tuple[str, ...] = ("tokens", "response_length", "reward", "status")
#: Fields a generate step sets on the sample it returns (the built-in generate does; a
#: ``--custom-generate-function-path`` function must): the reward comes after, from the
#: reward function (docs/contract.md §2, §6a; VIM036).
GENERATED_FIELDS: tuple[str, ...] = ("tokens", "response_length", "status")
#: What a field of :data:`REQUIRED_TRAIN_FIELDS` (and :data:`GENERATED_FIELDS`) left at its
#: default does at run time, as the severity of the finding that says so (an error only where
#: the run fails or trains on a wrong value): no tokens or response length leaves nothing to
#: train on, and a reward left None fails conversion to training data (VIM110); a status left
#: ``PENDING`` (``Sample.status``'s default) is only warned about (VIM111, at the generate
#: boundary and in the train output) and converts as not truncated (conversion's ``truncated``
#: column is 1 for ``TRUNCATED`` alone), as a ``COMPLETED`` sample does. Read by VIM111 and
#: vime-lint's VIM036.
UNSET_FIELD_SEVERITY: MappingProxyType[str, Severity] = MappingProxyType({
    "tokens": "error", "response_length": "error", "reward": "error", "status": "warning"})

#: ``Sample.Status`` members as (NAME, value), in order.
STATUS_VALUES: tuple[tuple[str, str], ...] = (
    ("PENDING", "pending"),
    ("COMPLETED", "completed"),
    ("TRUNCATED", "truncated"),
    ("ABORTED", "aborted"),
    ("FAILED", "failed"),
)

#: vLLM ``finish_reason`` type -> ``Sample.Status`` member name, as applied by
#: ``Sample.append_response_tokens(meta_info=...)`` and the default generate (docs/contract.md §2,
#: §8); other reasons leave the status unchanged.
FINISH_REASON_STATUS: MappingProxyType[str, str] = MappingProxyType({
    "length": "TRUNCATED",
    "abort": "ABORTED",
    "cancelled": "ABORTED",
    "stop": "COMPLETED",
})

#: Columns present in training data iff the first sample has them: all or none (VIM112).
#: ``metadata.round_number`` means the key ``round_number`` of ``Sample.metadata``.
OPTIONAL_COLUMNS: tuple[str, ...] = (
    "rollout_log_probs",
    "teacher_log_probs",
    "train_metadata",
    "metadata.round_number",
)
