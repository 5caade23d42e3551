"""One record per hook boundary, one function per invariant, and what "always enforced" means.

The runtime's ``check_*`` calls and the ``vime-lint check`` stages are built from
``HOOK_BOUNDARIES``; the conversion guards reuse the policy checker's functions and raise
whatever ``--contract-check`` says for the ids in ``ALWAYS_ENFORCED``.
"""

from __future__ import annotations

import inspect
from argparse import Namespace
from typing import Any

import pytest

from vime.contract import HOOKS, INVARIANTS
from vime.contract.checks import boundaries
from vime.contract.checks.boundaries import HOOK_BOUNDARIES, boundary_problems
from vime.contract.checks.enforced import (
    buffer_groups_problems,
    conversion_problems,
    group_size_problems,
    require,
)
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import ContractError
from vime.contract.invariants import ALWAYS_ENFORCED
from vime.contract.signature import optional_kwargs
from vime.data.batch_builder import BatchBuilder, rollout_keys
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", sorted(HOOK_BOUNDARIES))
def test_each_record_names_a_hook_and_ids_of_its_boundary(name: str) -> None:
    spec = HOOK_BOUNDARIES[name]
    assert spec.name == name
    assert spec.hook == "" and name == "sync_hook_result" or spec.hook in HOOKS
    assert spec.ids, name
    for inv_id in spec.ids:
        inv = INVARIANTS[inv_id]
        assert inv.scope == "runtime"
        assert spec.boundary in inv.boundaries, f"{inv_id} does not list {spec.boundary}"


def test_every_hook_boundary_invariant_has_a_record() -> None:
    covered = {i for spec in HOOK_BOUNDARIES.values() for i in spec.ids}
    hook_ids = {i for i, inv in INVARIANTS.items()
                if inv.scope == "runtime" and set(inv.boundaries) & {"B2", "B3", "B4"}}
    assert hook_ids - covered == set()


@pytest.mark.parametrize("name", sorted(HOOK_BOUNDARIES))
def test_each_record_has_its_public_check_call(name: str) -> None:
    call = getattr(boundaries, f"check_{name}")
    assert f'"{name}"' in inspect.getsource(call)


def _args(**kw: Any) -> Namespace:
    base: dict[str, Any] = dict(n_samples_per_prompt=2, contract_check="raise",
                                contract_check_interval=1, reward_key=None)
    base.update(kw)
    return Namespace(**base)


def test_check_call_and_dry_run_share_the_record() -> None:
    """The policy call raises what ``boundary_problems`` (the dry run's entry) reports."""
    ctx = CheckContext.for_hook("custom_rm_path", "m.rm", 0)
    found = boundary_problems("reward_result", None, settings=CheckSettings(), ctx=ctx)
    assert [v.id for v in found] == ["VIM150"]
    with pytest.raises(ContractError, match="VIM150"):
        boundaries.check_reward_result(None, _args(), hook_path="m.rm", rollout_id=0)
    assert boundaries.check_reward_result(None, _args(contract_check="off"), hook_path="m.rm",
                                          rollout_id=0) == []


def test_always_enforced_ids_are_runtime_invariants_marked_always() -> None:
    assert ALWAYS_ENFORCED
    for inv_id in ALWAYS_ENFORCED:
        assert INVARIANTS[inv_id].scope == "runtime"
        assert INVARIANTS[inv_id].enforcement == "always"
    assert all(inv.enforcement == "policy" for i, inv in INVARIANTS.items()
               if i not in ALWAYS_ENFORCED)


def _sample(index: int, group: int | None, reward: Any = 1.0, **kw: Any) -> Sample:
    s = Sample(index=index, group_index=group, tokens=[1, 2, 3, 4], response_length=2,
               reward=reward, status=Sample.Status.COMPLETED)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


@pytest.mark.parametrize("mode", ["off", "warn", "raise"])
def test_conversion_raises_whatever_the_mode(mode: str) -> None:
    args = Namespace(advantage_estimator="grpo", rewards_normalization=True,
                     grpo_std_normalization=True, n_samples_per_prompt=2, reward_key=None,
                     contract_check=mode, custom_convert_samples_to_train_data_path=None,
                     custom_reward_post_process_path=None)
    flat = [_sample(0, 0), _sample(1, 0, loss_mask=[1, 1, 1])]
    with pytest.raises(ContractError, match=r"VIM108 error: samples\[1\]\.loss_mask \(index=1\) "
                       r"has 3 entries, expected response_length=2"):
        BatchBuilder.convert(args, flat)


def test_conversion_problems_pass_a_good_batch_and_name_each_bad_one() -> None:
    good = [_sample(i, i // 2) for i in range(4)]
    assert conversion_problems(good, rollout_keys(good), n_samples_per_prompt=2,
                               reward_key=None) == []
    bad = [_sample(0, 0, reward="1"), _sample(1, None)]
    ids = [v.id for v in conversion_problems(bad, rollout_keys(bad), n_samples_per_prompt=2,
                                             reward_key=None)]
    assert ids == ["VIM110", "VIM113"]


def test_dict_reward_needs_the_reward_key_at_conversion() -> None:
    flat = [_sample(0, 0, reward={"acc": 1.0}), _sample(1, 0, reward={"acc": 0.0})]
    assert conversion_problems(flat, rollout_keys(flat), n_samples_per_prompt=2,
                               reward_key="acc") == []
    found = conversion_problems(flat, rollout_keys(flat), n_samples_per_prompt=2,
                                reward_key=None)
    assert [v.id for v in found] == ["VIM110"] and "--reward-key is not set" in found[0].message


def test_buffer_groups_and_group_size() -> None:
    groups = [[_sample(0, 0), _sample(1, 0)]]
    assert buffer_groups_problems(groups, 2, root="add_samples: samples") == []
    found = buffer_groups_problems([[_sample(0, 0)]], 2, root="add_samples: samples")
    assert [(v.id, v.where) for v in found] == [("VIM103", "add_samples: samples[0]")]
    found = group_size_problems([3], 2, ["rollout 4, group_index=1"])
    assert found[0].id == "VIM103" and found[0].where == "rollout 4, group_index=1"
    assert group_size_problems([2], 2, ["g"]) == []


def test_require_raises_errors_only() -> None:
    warning = INVARIANTS["VIM108"].violation("samples[0].loss_mask", severity="warning")
    require([warning])
    with pytest.raises(ContractError, match="VIM108 error"):
        require([warning, INVARIANTS["VIM108"].violation("samples[1].loss_mask")])


def test_optional_kwargs_follow_the_hook_spec() -> None:
    spec = HOOKS["rollout_sample_hook_path"]

    def takes_rollout_id(args: Any, sample: Any, rollout_id: int = 0) -> None: ...

    def takes_all(args: Any, sample: Any, **kwargs: Any) -> None: ...

    def takes_none(args: Any, sample: Any) -> None: ...

    assert optional_kwargs(takes_rollout_id, spec, rollout_id=3, evaluation=True) == {
        "rollout_id": 3}
    assert optional_kwargs(takes_all, spec, rollout_id=3, evaluation=True) == {
        "rollout_id": 3, "evaluation": True}
    assert optional_kwargs(takes_none, spec, rollout_id=3) == {}
    with pytest.raises(ValueError, match="not optional keywords"):
        optional_kwargs(takes_all, spec, step=3)


def test_conversion_checks_masks_without_reward_normalisation() -> None:
    """The always-enforced checks run once for every conversion, not only on the
    normalisation path (an estimator without group normalisation still needs valid masks)."""
    args = Namespace(advantage_estimator="grpo", rewards_normalization=False,
                     grpo_std_normalization=True, n_samples_per_prompt=2, reward_key=None,
                     contract_check="off", custom_convert_samples_to_train_data_path=None,
                     custom_reward_post_process_path=None)
    with pytest.raises(ContractError, match=r"VIM108 error: samples\[1\]\.loss_mask"):
        BatchBuilder.convert(args, [_sample(0, 0), _sample(1, 0, loss_mask=[1, 1, 1])])
    # without normalisation the groups need not divide: three rollouts convert
    data = BatchBuilder.convert(args, [_sample(i, None) for i in range(3)])
    assert data["rewards"] == [1.0, 1.0, 1.0]
