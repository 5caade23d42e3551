"""``Sample``: one prompt + response trajectory, the only object a rollout hands to training.

Usage::

    s = Sample(index=0, group_index=0, prompt="What is 2+3?", tokens=[11, 12, 13])
    s.append_response_tokens(args, tokens=[40, 41], log_probs=[-0.1, -0.3],
                             meta_info={"finish_reason": {"type": "stop"}}, text="5")
    s.response_length, s.status            # 2, Sample.Status.COMPLETED
    Sample.from_dict(s.to_dict()) == s     # True

The fields are the contract's (``vime.contract.sample.SAMPLE_FIELDS``); a test keeps this class
and that list identical. Construct with keywords only (VIM006): field order follows upstream.

Field names and order follow upstream slime's ``slime/utils/types.py``; see ``docs/contract.md`` §2.
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from vime.config import arg
from vime.contract.errors import ContractError
from vime.contract.invariants import INVARIANTS
from vime.contract.reward import reward_fix, reward_read_problem
from vime.contract.sample import FINISH_REASON_STATUS, RESPONSE_LENGTH_FIELDS

__all__ = ["MultimodalTypes", "ParamInfo", "RolloutBatch", "Sample"]


@dataclass
class Sample:
    """One trajectory. Field meanings: ``vime.contract.sample.SAMPLE_FIELDS`` (docs/contract.md §2).

    Per-token lists (``loss_mask``, ``rollout_log_probs``, ``teacher_log_probs``) have one entry
    per response token, i.e. ``response_length`` entries; ``tokens`` is prompt then response.
    """

    @dataclass
    class SpecInfo:
        """Speculative-decoding counters, summed over a sample's generate calls."""

        spec_accept_token_num: int = 0
        spec_draft_token_num: int = 0
        spec_verify_ct: int = 0
        completion_token_num: int = 0

        @property
        def spec_accept_rate(self) -> float:
            """Accepted / drafted tokens (0.0 with no drafts)."""
            return self.spec_accept_token_num / self.spec_draft_token_num if self.spec_draft_token_num else 0.0

        def add(self, meta_info: Mapping[str, Any], response_length: int = 0) -> None:
            """Add one generate call's counters (``spec_accept_token_num``, ... in ``meta_info``)."""
            self.spec_accept_token_num += int(meta_info.get("spec_accept_token_num", 0))
            self.spec_draft_token_num += int(meta_info.get("spec_draft_token_num", 0))
            self.spec_verify_ct += int(meta_info.get("spec_verify_ct", 0))
            self.completion_token_num += int(meta_info.get("completion_tokens", response_length))

        def to_dict(self) -> dict[str, Any]:
            return dict(vars(self))

        @staticmethod
        def from_dict(data: Mapping[str, Any]) -> Sample.SpecInfo:
            return Sample.SpecInfo(**data)


    @dataclass
    class PrefixCacheInfo:
        """Prefix-cache counters in tokens, summed over a sample's generate calls."""

        cached_tokens: int = 0
        total_prompt_tokens: int = 0

        @property
        def prefix_cache_hit_rate(self) -> float:
            """cached / prompt tokens (0.0 with no prompt tokens)."""
            return self.cached_tokens / self.total_prompt_tokens if self.total_prompt_tokens else 0.0

        def add(self, meta_info: Mapping[str, Any]) -> None:
            """Add ``cached_tokens`` and ``prompt_tokens`` of one generate call."""
            self.cached_tokens += int(meta_info.get("cached_tokens", 0) or 0)
            self.total_prompt_tokens += int(meta_info.get("prompt_tokens", 0) or 0)

        def to_dict(self) -> dict[str, Any]:
            return dict(vars(self))

        @staticmethod
        def from_dict(data: Mapping[str, Any]) -> Sample.PrefixCacheInfo:
            return Sample.PrefixCacheInfo(**data)


    class Status(Enum):
        """Where a sample stands: see docs/contract.md §2."""

        PENDING = "pending"  #: not generated yet
        COMPLETED = "completed"  #: stopped normally (EOS or a stop string)
        TRUNCATED = "truncated"  #: hit the token budget; exported truncated=1
        ABORTED = "aborted"  #: engine or rollout abort; partial-rollout candidate
        FAILED = "failed"  #: recoverable environment, API or parsing failure

    group_index: int | None = None
    index: int | None = None
    rollout_id: int | None = None
    prompt: str | list[dict[str, Any]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None
    multimodal_train_inputs: dict[str, Any] | None = None
    multimodal_train_input_id: str | None = None
    apply_chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None
    rollout_topk_token_ids: Any = None
    rollout_topk_log_probs: Any = None
    rollout_top_p_token_ids: Any = None
    rollout_top_p_token_offsets: Any = None
    rollout_top_p_log_probs: Any = None
    rollout_routed_experts: Any = None
    remove_sample: bool = False
    teacher_log_probs: list[float] | None = None
    status: Sample.Status = Status.PENDING
    metadata: dict[str, Any] = field(default_factory=dict)
    generate_function_path: str | None = None
    custom_rm_path: str | None = None
    train_metadata: dict[str, Any] | None = None
    session_id: str | None = None
    non_generation_time: float = 0.0
    spec_info: Sample.SpecInfo = field(default_factory=SpecInfo)
    prefix_cache_info: Sample.PrefixCacheInfo = field(default_factory=PrefixCacheInfo)

    # ---- serialisation -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A shallow dict of every attribute (extra ones too): ``status`` as its value string,
        ``spec_info``/``prefix_cache_info`` as dicts; lists and tensors are not copied."""
        out = dict(self.__dict__)
        out["status"] = self.status.value if isinstance(self.status, Enum) else self.status
        out["spec_info"] = self.spec_info.to_dict()
        out["prefix_cache_info"] = self.prefix_cache_info.to_dict()
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Sample:
        """Inverse of :meth:`to_dict`. Missing fields take their defaults; unknown keys become
        plain attributes and survive another ``to_dict()``.

        Raises:
            ContractError: ``status`` is not a ``Sample.Status`` value (names the value and
                the allowed ones); ``data`` is not a mapping.
        """
        if not isinstance(data, Mapping):
            raise ContractError(f"Sample.from_dict expects a mapping, got {type(data).__name__}")
        data = dict(data)
        status = data.pop("status", Sample.Status.PENDING)
        if not isinstance(status, Sample.Status):
            try:
                status = Sample.Status(status)
            except ValueError:
                allowed = ", ".join(repr(s.value) for s in Sample.Status)
                raise ContractError(
                    f"Sample.from_dict: status={status!r} is not a Sample.Status value; "
                    f"expected one of {allowed}"
                ) from None
        spec = data.pop("spec_info", None)
        prefix = data.pop("prefix_cache_info", None)
        known = {k: data.pop(k) for k in list(data) if k in Sample.__dataclass_fields__}
        sample = Sample(**known, status=status)
        if spec is not None:
            sample.spec_info = spec if isinstance(spec, Sample.SpecInfo) else Sample.SpecInfo.from_dict(spec)
        if prefix is not None:
            sample.prefix_cache_info = (prefix if isinstance(prefix, Sample.PrefixCacheInfo)
                                        else Sample.PrefixCacheInfo.from_dict(prefix))
        for key, value in data.items():
            setattr(sample, key, value)
        return sample

    # ---- reward and lengths ------------------------------------------------------------------

    def get_reward_value(self, args: Namespace | None) -> float:
        """The scalar reward: ``reward``, or ``reward[args.reward_key]`` for dict rewards.

        Raises:
            ContractError: VIM110 when the reward is None, a dict without ``--reward-key``, or a
                dict missing that key (the message lists the keys it has).
        """
        key = arg(args, "reward_key") if args is not None else None
        reward = self.reward
        problem = reward_read_problem(reward, key)
        if problem is not None:
            raise ContractError([INVARIANTS["VIM110"].violation(
                f"sample index={self.index}", problem=f"reward {problem}",
                fix=reward_fix(reward, key))])
        if isinstance(reward, Mapping):
            return reward[key]  # type: ignore[index,no-any-return]
        assert reward is not None  # reward_read_problem reports None
        return reward

    @property
    def effective_response_length(self) -> int:
        """Trainable response tokens: ``sum(loss_mask)``, or ``response_length`` with no mask."""
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length

    # ---- growing a response ------------------------------------------------------------------

    def append_response_tokens(
        self,
        args: Namespace | None = None,
        *,
        tokens: Sequence[int] | None = None,
        log_probs: Sequence[float] | None = None,
        trainable: bool = True,
        meta_info: Mapping[str, Any] | None = None,
        text: str | None = None,
        update_terminal_info: bool = True,
    ) -> None:
        """Append response tokens, keeping every per-token list in step (the supported way).

        Trainable (model) tokens bring one log-prob each; non-trainable (environment, tool)
        tokens bring none and get log-prob 0.0 and mask 0. ``loss_mask`` stays None while
        everything is trainable. ``meta_info`` (with a ``finish_reason``) then sets status,
        weight version and cache counters.

        Args:
            args: the run's arguments (read: ``vllm_speculative_config``), or None.
            tokens: token ids to append, ``len == n``.
            log_probs: natural-log probs, ``len == n``, required iff ``trainable``.
            trainable: True for model-generated tokens, False for environment tokens.
            meta_info: ``{"finish_reason": {"type": "length"|"stop"|"abort"}, "weight_version",
                "cached_tokens", "prompt_tokens", ...}``.
            text: decoded text appended to ``response``.
            update_terminal_info: apply ``meta_info``'s terminal fields.

        Raises:
            ValueError: lengths disagree (the message names the field and both lengths), or
                trainable tokens come without log-probs (or environment tokens with them).
        """
        new = list(tokens) if tokens is not None else []
        for i, t in enumerate(new):
            if not isinstance(t, int) or isinstance(t, bool):
                raise ValueError(f"append_response_tokens: tokens[{i}] is {t!r} "
                                 f"({type(t).__name__}); expected int token ids")
        n = len(new)
        if log_probs is not None and len(log_probs) != n:
            raise ValueError(f"append_response_tokens: log_probs has {len(log_probs)} entries, "
                             f"expected one per token: len(tokens)={n}")
        if trainable and n and log_probs is None:
            raise ValueError(f"append_response_tokens: {n} trainable tokens need log_probs "
                             "(one sampler log-prob per token); pass trainable=False for "
                             "environment tokens")
        if not trainable and log_probs is not None:
            raise ValueError("append_response_tokens: non-trainable (environment) tokens take no "
                             "log_probs; they get log-prob 0.0 and loss_mask 0")
        if n:
            if not trainable and self.loss_mask is None:
                self.loss_mask = [1] * self.response_length
            if self.loss_mask is not None:
                self.loss_mask.extend([1 if trainable else 0] * n)
            lp = [float(x) for x in log_probs] if log_probs is not None else [0.0] * n
            if self.rollout_log_probs is None:
                if self.response_length and trainable:
                    raise ValueError(
                        "append_response_tokens: rollout_log_probs is None but the sample already "
                        f"has response_length={self.response_length} tokens; earlier trainable "
                        "tokens were appended without log-probs")
                self.rollout_log_probs = [0.0] * self.response_length
            self.rollout_log_probs.extend(lp)
            self.tokens.extend(new)
            self.response_length += n
        if text:
            self.response += text
        if meta_info is not None:
            self._apply_meta_info(args, meta_info, tokens_added=n > 0,
                                  update_terminal_info=update_terminal_info)
        self._check_lengths("append_response_tokens")

    def _apply_meta_info(self, args: Namespace | None, meta_info: Mapping[str, Any], *,
                         tokens_added: bool = True, update_terminal_info: bool = True) -> None:
        """Apply a generate call's meta info (finish reason, weight version, cache counters)."""
        finish = meta_info.get("finish_reason")
        if finish is None or not update_terminal_info:
            return
        if args is not None and getattr(args, "vllm_speculative_config", None):
            self.spec_info.add(meta_info, self.response_length)
        self.prefix_cache_info.add(meta_info)
        version = meta_info.get("weight_version")
        if tokens_added and version is not None:
            self.weight_versions.append(str(version))
        kind = finish.get("type") if isinstance(finish, Mapping) else finish
        status = _finish_to_status(kind)
        if status is not None:
            self.status = status

    def update_from_meta_info(self, args: Namespace | None, meta_info: Mapping[str, Any]) -> None:
        """Deprecated classic alias of :meth:`_apply_meta_info`."""
        self._apply_meta_info(args, meta_info)

    def _check_lengths(self, where: str) -> None:
        for name in RESPONSE_LENGTH_FIELDS:
            value = getattr(self, name)
            if value is not None and len(value) != self.response_length:
                raise ValueError(f"{where}: {name} has {len(value)} entries, expected "
                                 f"response_length={self.response_length}")


@dataclass(frozen=True)
class ParamInfo:
    """One model parameter's name, dtype, shape and owning rank, for weight sync."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    size: int = 0
    src_rank: int = 0


#: Column name -> one value per sample (``tokens``, ``rewards``, ``loss_masks``, ...).
RolloutBatch = dict[str, list[Any]]


class MultimodalTypes(Enum):
    """Media kinds spliced at ``<image>``/``<video>``/``<audio>`` (advanced, not in v1)."""

    IMAGE = "image"
    VIDEO = "video"
    AUDIO = "audio"


def _finish_to_status(kind: object) -> Sample.Status | None:
    """vLLM finish reason -> status: length TRUNCATED, abort/cancelled ABORTED, stop COMPLETED."""
    member = FINISH_REASON_STATUS.get(str(kind)) if kind is not None else None
    return Sample.Status[member] if member is not None else None
