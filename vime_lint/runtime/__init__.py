"""``vime-lint check`` and the runtime checker's public names.

The runtime checks themselves live in :mod:`vime.contract.checks` (one function per invariant,
called by the training runtime and by ``vime-lint check`` alike); this package re-exports them
so that ``from vime_lint.runtime import validate_rollout_output`` keeps working, and holds the
dry-run harness (:mod:`vime_lint.runtime.harness`, ``vime-lint check``).
"""

from vime.contract.checks import (
    CheckContext,
    CheckSettings,
    ContractChecker,
    check_batch_reward_result,
    check_buffer_filter_result,
    check_convert_result,
    check_dynamic_filter_result,
    check_generate_result,
    check_group_rewards,
    check_reward_post_process_result,
    check_reward_result,
    check_sample_hook_result,
    check_sync_hook_result,
    collect_rollout_output,
    run_checks,
    should_check,
    validate_rollout_output,
)

__all__ = [
    "CheckContext",
    "CheckSettings",
    "ContractChecker",
    "check_batch_reward_result",
    "check_buffer_filter_result",
    "check_convert_result",
    "check_dynamic_filter_result",
    "check_generate_result",
    "check_group_rewards",
    "check_reward_post_process_result",
    "check_reward_result",
    "check_sample_hook_result",
    "check_sync_hook_result",
    "collect_rollout_output",
    "run_checks",
    "should_check",
    "validate_rollout_output",
]
