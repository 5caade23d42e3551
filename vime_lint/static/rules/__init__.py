"""Every vime-lint rule, one module per rule family; :data:`ALL_RULES` in code order.
"""

from __future__ import annotations

from vime_lint.static._rule import Rule
from vime_lint.static.rules.agent_function import (
    AgentFunctionSync,
    AgentReturnsNothing,
    AgentSyncClient,
)
from vime_lint.static.rules.args_state import ArgsMutation, GroupExpandedTwice, RewardArithmetic
from vime_lint.static.rules.async_code import (
    AsyncioRunInHook,
    BlockingCallInAsync,
    UnawaitedCoroutine,
)
from vime_lint.static.rules.config_aware import (
    DictRewardWithoutRewardKey,
    LabelWithoutLabelKey,
    RewardSetBeforeCustomRm,
)
from vime_lint.static.rules.eval_data import EvalDataKeys
from vime_lint.static.rules.filter_returns import FilterReturnKind
from vime_lint.static.rules.finish_reason import UnmappedFinishReason
from vime_lint.static.rules.group_getattr import GetattrOnGroupElement, GroupUsedAsSample
from vime_lint.static.rules.hook_options import UnknownArgsOption, UnreadHookOption
from vime_lint.static.rules.limits import FileNotLinted
from vime_lint.static.rules.ported_code import PortedSglangShape
from vime_lint.static.rules.required_fields import RequiredFieldsNeverSet
from vime_lint.static.rules.retokenisation import ReencodedGeneratedText
from vime_lint.static.rules.reward_returns import (
    RewardReturnKind,
    RewardReturnsNone,
    RewardReturnsTensor,
    SwallowedRewardFailure,
)
from vime_lint.static.rules.rollout_returns import EvaluationBranch, RawRolloutReturn
from vime_lint.static.rules.sample_fields import SampleConstructor, UnknownSampleAttribute
from vime_lint.static.rules.sample_metadata import TensorInMetadata
from vime_lint.static.rules.shared_objects import MutableDefaultArgument, SharedSampleObject
from vime_lint.static.rules.signatures import (
    HookSignature,
    RolloutFunctionSignature,
    UnpicklableHook,
)
from vime_lint.static.rules.stale_api import StaleDataBuffer, StaleSampleFlag, StatusString
from vime_lint.static.rules.suppression import BareNoqa, UnusedSuppression
from vime_lint.static.rules.token_lists import MaskFromFullTokens, TokensWithoutLossMask
from vime_lint.static.rules.trainer_hooks import (
    AdvantageHookStoresAdvantages,
    CustomLossReturnsPair,
)
from vime_lint.static.rules.turn_budget import FullBudgetEveryTurn

__all__ = ["ALL_RULES", "rules_for_code"]

_RULES: list[type[Rule]] = [
    RolloutFunctionSignature,
    HookSignature,
    UnpicklableHook,
    EvaluationBranch,
    RawRolloutReturn,
    EvalDataKeys,
    RewardReturnsNone,
    SampleConstructor,
    UnknownSampleAttribute,
    StatusString,
    StaleSampleFlag,
    StaleDataBuffer,
    TokensWithoutLossMask,
    MaskFromFullTokens,
    GetattrOnGroupElement,
    TensorInMetadata,
    BlockingCallInAsync,
    UnawaitedCoroutine,
    ArgsMutation,
    GroupExpandedTwice,
    RewardArithmetic,
    PortedSglangShape,
    UnmappedFinishReason,
    ReencodedGeneratedText,
    DictRewardWithoutRewardKey,
    RewardSetBeforeCustomRm,
    LabelWithoutLabelKey,
    RewardReturnKind,
    RewardReturnsTensor,
    SharedSampleObject,
    MutableDefaultArgument,
    FullBudgetEveryTurn,
    GroupUsedAsSample,
    AsyncioRunInHook,
    SwallowedRewardFailure,
    RequiredFieldsNeverSet,
    FilterReturnKind,
    UnknownArgsOption,
    UnreadHookOption,
    AgentFunctionSync,
    AgentSyncClient,
    AgentReturnsNothing,
    CustomLossReturnsPair,
    AdvantageHookStoresAdvantages,
    BareNoqa,
    UnusedSuppression,
    FileNotLinted,
]

#: Every rule class, sorted by code, then by class name.
ALL_RULES: tuple[type[Rule], ...] = tuple(sorted(_RULES, key=lambda r: (r.code(), r.__name__)))


def rules_for_code(code: str) -> list[type[Rule]]:
    """The rules whose code or slug is ``code`` (case-insensitive), e.g. ``"VIM001"``; for an
    old code that several rules shared (``"VIM007"``), the rule of that code and those that
    had it."""
    c = code.strip()
    return [r for r in ALL_RULES
            if r.code() == c.upper() or r.slug() == c.lower() or c.upper() in r.ALIASES]
