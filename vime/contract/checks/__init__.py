"""The runtime contract checker: rollout outputs and hook results checked on live values.

Every rule comes from ``vime.contract`` (field hints, invariants, hook specs). Findings are
``vime.contract.Violation`` s with the invariant id, the location (``samples[3][1].loss_mask
(index=13)``), expected vs actual, the hook with its ``--*-path`` argument and step, and a fix.
``--contract-check`` (``off``/``warn``/``raise``, default ``raise``) and
``--contract-check-interval`` decide what happens to them.

Usage::

    from vime.contract.checks import run_checks, check_generate_result, ContractChecker
    findings, seconds = run_checks(out, args, evaluation=False, hook_path=path, rollout_id=7)

Boundaries (docs/contract.md §6b): B1/B5/B6 ``validate_rollout_output`` / ``run_checks``;
B2 ``check_generate_result``, ``check_agent_result``, ``check_token_boundaries``,
``check_generated_turns_result``; B3 ``check_reward_result``,
``check_batch_reward_result``; B4 ``check_group_rewards``, ``check_dynamic_filter_result``, ``check_buffer_filter_result``,
``check_sample_hook_result``, ``check_reward_post_process_result``, ``check_convert_result``,
``check_sync_hook_result``. ``vime-lint check`` is ``vime_lint.runtime.harness.main``.

Imports only the standard library, typeguard and ``vime`` 's light modules.
"""

from vime.contract.checks.boundaries import (
    HOOK_BOUNDARIES,
    check_agent_result,
    check_batch_reward_result,
    check_buffer_filter_result,
    check_convert_result,
    check_dynamic_filter_result,
    check_generate_result,
    check_generated_turns_result,
    check_group_rewards,
    check_reward_post_process_result,
    check_reward_result,
    check_sample_hook_result,
    check_sync_hook_result,
    check_token_boundaries,
)
from vime.contract.checks.checker import ContractChecker, run_checks, validate_rollout_output
from vime.contract.checks.policy import should_check
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings

__all__ = [
    "HOOK_BOUNDARIES",
    "CheckContext",
    "CheckSettings",
    "ContractChecker",
    "check_agent_result",
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
    "check_generated_turns_result",
    "check_token_boundaries",
    "collect_rollout_output",
    "run_checks",
    "should_check",
    "validate_rollout_output",
]
