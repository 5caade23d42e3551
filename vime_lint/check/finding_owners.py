"""Which hook a finding on a rollout's output is about: under vime's own rollout, the user's reward or generate hook, not vime's rollout module."""

from __future__ import annotations

from typing import Any

from vime.contract.errors import Violation
from vime.contract.hooks import hook_spec
from vime.contract.invariants import INVARIANTS

__all__ = ["owners"]

#: Runtime ids about the rewards of the batch, whatever the field path says.
_REWARD_IDS = frozenset({"VIM110", "VIM117", "VIM121", "VIM122", "VIM171"})
#: ``Sample`` fields a generate step (a custom generate, or the agent's trajectories) sets.
_GENERATED_FIELDS = frozenset({"tokens", "response", "response_length", "loss_mask",
                               "rollout_log_probs", "status", "weight_versions", "spec_info",
                               "routed_experts", "top_k_log_probs", "top_k_token_ids"})


def owners(found: list[Violation], dest: str, path: str, hooks: dict[str, Any]
           ) -> dict[tuple[str, str], list[Violation]]:
    """``found`` (B5/B6 findings on the output of the rollout ``path``) by the hook each
    is about (``hooks``: the loaded hooks by dest). Under vime's own rollout the output's
    rewards come from the user's ``--custom-rm-path`` (else the agent, whose return value is
    the reward) and its token fields from the user's ``--custom-generate-function-path``
    (else the agent): a finding on those names that hook (and its ``def``'s FILE:LINE), not
    vime's rollout module; so does a generate (B2) or reward (B3) boundary finding raised
    while the rollout ran."""
    by: dict[tuple[str, str], list[Violation]] = {}
    own = path == hook_spec(dest).default
    for v in found:
        owner = (dest, path)
        if own:
            # "samples[0][0].status (index=0)" -> "status"
            field = v.where.split(" (", 1)[0].rsplit(".", 1)[-1].split("[", 1)[0] \
                if "." in v.where.split(" (", 1)[0] else ""
            at = INVARIANTS[v.id].boundaries if v.id in INVARIANTS else ()
            wanted = (("custom_rm_path", "agent_function_path")
                      if v.id in _REWARD_IDS or field == "reward" or at == ("B3",) else
                      ("custom_generate_function_path", "agent_function_path")
                      if field in _GENERATED_FIELDS or v.id == "VIM124" or at == ("B2",)
                      else ())
            for d in wanted:
                hook = hooks.get(d)
                if hook is not None and isinstance(hook, tuple) \
                        and isinstance(hook[0], str):
                    owner = (d, hook[0])
                    break
        by.setdefault(owner, []).append(v)
    return by
