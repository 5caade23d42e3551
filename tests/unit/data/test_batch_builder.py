"""BatchBuilder.convert and split_into_steps: formulas vs hand computation, fan-out, masks."""

from __future__ import annotations

import math
import sys
import types
from argparse import Namespace

import pytest

from vime.contract.errors import ContractError
from vime.data.batch_builder import (
    BatchBuilder,
    flatten_samples,
    global_batch_size,
    normalize_group_rewards,
    split_into_steps,
)
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def make_args(**kw: object) -> Namespace:
    base = dict(advantage_estimator="grpo", rewards_normalization=True,
                grpo_std_normalization=True, n_samples_per_prompt=2, rollout_batch_size=2,
                reward_key=None, global_batch_size=None, num_steps_per_rollout=None,
                custom_convert_samples_to_train_data_path=None,
                custom_reward_post_process_path=None)
    base.update(kw)
    return Namespace(**base)


def sample(index: int, group: int | None, reward: float, **kw: object) -> Sample:
    s = Sample(index=index, group_index=group, tokens=[1, 2, 3, 4], response_length=2,
               reward=reward, status=Sample.Status.COMPLETED)
    for k, v in kw.items():
        setattr(s, k, v)
    return s


def hand_grpo(values: list[float]) -> list[float]:
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return [(v - mean) / (std + 1e-6) for v in values]


def test_grpo_normalisation_matches_hand_computation() -> None:
    args = make_args(n_samples_per_prompt=3)
    rewards = [[1.0, 0.0, 0.5], [2.0, 2.0, 5.0]]
    groups = [[sample(3 * g + e, g, r) for e, r in enumerate(rs)] for g, rs in enumerate(rewards)]
    data = BatchBuilder.convert(args, flatten_samples(groups))
    expected = hand_grpo(rewards[0]) + hand_grpo(rewards[1])
    assert data["rewards"] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert data["raw_reward"] == [1.0, 0.0, 0.5, 2.0, 2.0, 5.0]


def test_grpo_equal_rewards_give_zero() -> None:
    data = BatchBuilder.convert(make_args(), [sample(0, 0, 1.0), sample(1, 0, 1.0)])
    assert data["rewards"] == [0.0, 0.0]


def test_reinforce_baseline_subtracts_mean_only() -> None:
    args = make_args(advantage_estimator="reinforce_plus_plus_baseline")
    data = BatchBuilder.convert(args, [sample(0, 0, 1.0), sample(1, 0, 0.0),
                                       sample(2, 1, 3.0), sample(3, 1, 1.0)])
    assert data["rewards"] == pytest.approx([0.5, -0.5, 1.0, -1.0])


def test_std_off_and_normalisation_off() -> None:
    flat = [sample(0, 0, 1.0), sample(1, 0, 0.0)]
    no_std = BatchBuilder.convert(make_args(grpo_std_normalization=False), flat)
    assert no_std["rewards"] == pytest.approx([0.5, -0.5])
    off = BatchBuilder.convert(make_args(rewards_normalization=False), flat)
    assert off["rewards"] == [1.0, 0.0]


def test_std_forced_off_for_one_sample_per_prompt() -> None:
    data = BatchBuilder.convert(make_args(n_samples_per_prompt=1),
                                [sample(0, 0, 3.0), sample(1, 1, 1.0)])
    assert data["rewards"] == [0.0, 0.0]


def test_float32_values() -> None:
    data = BatchBuilder.convert(make_args(), [sample(0, 0, 0.1), sample(1, 0, 0.3)])
    import numpy as np

    for v in data["rewards"]:
        assert float(np.float32(v)) == v


def test_fan_out_counts_rollout_once_and_copies_value() -> None:
    # group 0: rollout A split in 2 segments (reward 1), rollout B one segment (reward 0)
    a1 = sample(0, 0, 1.0, rollout_id=10, loss_mask=[1, 1])
    a2 = sample(0, 0, 1.0, rollout_id=10, loss_mask=[0, 1])
    b = sample(1, 0, 0.0, rollout_id=11)
    groups = [[[a1, a2], [b]]]
    data = BatchBuilder.convert(make_args(rollout_batch_size=1), flatten_samples(groups))
    expected = hand_grpo([1.0, 0.0])
    assert data["rewards"] == pytest.approx([expected[0], expected[0], expected[1]], rel=1e-5)
    assert data["rollout_ids"] == [10, 10, 11]
    assert data["rollout_mask_sums"] == [3, 3, 2]


def test_fan_out_siblings_must_share_reward() -> None:
    a1 = sample(0, 0, 1.0, rollout_id=10)
    a2 = sample(0, 0, 0.0, rollout_id=10)
    with pytest.raises(ContractError, match=r"VIM115 .*samples\[1\]\.reward \(index=0\) is 0.0 but its sibling samples\[0\] has 1.0"):
        BatchBuilder.convert(make_args(), [a1, a2, sample(1, 0, 0.0)])


def test_remove_sample_zeroes_mask_but_still_normalised() -> None:
    flat = [sample(0, 0, 1.0, remove_sample=True), sample(1, 0, 0.0)]
    data = BatchBuilder.convert(make_args(), flat)
    assert data["loss_masks"] == [[0, 0], [1, 1]]
    assert data["rewards"] == pytest.approx(hand_grpo([1.0, 0.0]), rel=1e-5)
    assert data["rollout_mask_sums"] == [0, 2]


def test_positional_groups_without_group_index() -> None:
    flat = [sample(i, None, r) for i, r in enumerate([1.0, 0.0, 4.0, 2.0])]
    data = BatchBuilder.convert(make_args(), flat)
    assert data["rewards"] == pytest.approx(hand_grpo([1.0, 0.0]) + hand_grpo([4.0, 2.0]),
                                            rel=1e-5)


def test_undividable_groups_raise() -> None:
    flat = [sample(i, None, float(i)) for i in range(3)]
    with pytest.raises(ContractError) as err:
        BatchBuilder.convert(make_args(), flat)
    msg = str(err.value)
    # Without group_index the rollouts are grouped positionally: the last group is short.
    assert "VIM103" in msg and "rollouts[2:3]" in msg and "n_samples_per_prompt=2" in msg


def test_mixed_group_index_raises() -> None:
    with pytest.raises(ContractError, match=r"VIM113 .*samples\[1\]\.group_index \(index=1\) is None but 1 of 2"):
        BatchBuilder.convert(make_args(), [sample(0, 0, 1.0), sample(1, None, 0.0)])


def test_columns_truncated_indices_masks_optional() -> None:
    s0 = sample(5, 0, 1.0, status=Sample.Status.TRUNCATED, rollout_log_probs=[-0.1, -0.2],
                train_metadata={"k": 1}, metadata={"raw_reward": 7.0, "round_number": 2})
    s1 = sample(6, 0, 0.0, loss_mask=[0, 1], rollout_log_probs=[-0.3, -0.4],
                train_metadata={"k": 2}, metadata={"round_number": 3})
    data = BatchBuilder.convert(make_args(), [s0, s1])
    assert data["truncated"] == [1, 0]
    assert data["sample_indices"] == [5, 6]
    assert data["loss_masks"] == [[1, 1], [0, 1]]
    assert data["response_lengths"] == [2, 2]
    assert data["rollout_log_probs"] == [[-0.1, -0.2], [-0.3, -0.4]]
    assert data["metadata"] == [{"k": 1}, {"k": 2}]
    assert data["round_number"] == [2, 3]
    assert data["raw_reward"] == [7.0, 0.0]
    assert "teacher_log_probs" not in data and "multimodal_train_inputs" not in data


def test_optional_column_on_some_samples_raises() -> None:
    s0 = sample(0, 0, 1.0, rollout_log_probs=[-0.1, -0.2])
    with pytest.raises(ContractError, match=r"VIM112 .*samples\[1\].*rollout_log_probs is set on 1 of 2"):
        BatchBuilder.convert(make_args(), [s0, sample(1, 0, 0.0)])


def test_loss_mask_length_raises() -> None:
    with pytest.raises(ContractError, match=r"VIM108 .*samples\[1\]\.loss_mask \(index=1\) has 3 entries"):
        BatchBuilder.convert(make_args(), [sample(0, 0, 1.0), sample(1, 0, 0.0, loss_mask=[1, 1, 1])])


def test_dict_reward_needs_reward_key() -> None:
    flat = [sample(0, 0, 0.0), sample(1, 0, 0.0)]
    flat[0].reward, flat[1].reward = {"acc": 1.0}, {"acc": 0.0}
    with pytest.raises(ContractError, match="VIM110"):
        BatchBuilder.convert(make_args(), flat)
    data = BatchBuilder.convert(make_args(reward_key="acc"), flat)
    assert data["raw_reward"] == [1.0, 0.0]


def _install_hooks(monkeypatch: pytest.MonkeyPatch) -> str:
    mod = types.ModuleType("bb_test_hooks")

    def post(args, samples):  # type: ignore[no-untyped-def]
        return [s.reward for s in samples], [10.0 * s.reward for s in samples]

    def short_post(args, samples):  # type: ignore[no-untyped-def]
        return [0.0], [0.0]

    def convert(args, samples):  # type: ignore[no-untyped-def]
        n = len(samples)
        return {"tokens": [s.tokens for s in samples], "response_lengths": [2] * n,
                "rewards": [1.0] * n, "raw_reward": [1.0] * n, "truncated": [0] * n,
                "sample_indices": list(range(n)), "loss_masks": [[1, 1]] * n}

    def bad_convert(args, samples):  # type: ignore[no-untyped-def]
        return {"tokens": []}

    mod.post, mod.short_post, mod.convert, mod.bad_convert = post, short_post, convert, bad_convert
    monkeypatch.setitem(sys.modules, "bb_test_hooks", mod)
    return "bb_test_hooks"


def test_custom_reward_post_process(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _install_hooks(monkeypatch)
    flat = [sample(0, 0, 1.0), sample(1, 0, 0.0)]
    data = BatchBuilder.convert(make_args(custom_reward_post_process_path=f"{m}.post"), flat)
    assert data["rewards"] == [10.0, 0.0] and data["raw_reward"] == [1.0, 0.0]
    with pytest.raises(ContractError, match=r"VIM162 .*short_post.*\(raw_rewards\) has 1 values for 2 samples"):
        BatchBuilder.convert(make_args(custom_reward_post_process_path=f"{m}.short_post"), flat)


def test_custom_convert(monkeypatch: pytest.MonkeyPatch) -> None:
    m = _install_hooks(monkeypatch)
    flat = [sample(0, 0, 1.0), sample(1, 0, 0.0)]
    data = BatchBuilder.convert(make_args(custom_convert_samples_to_train_data_path=f"{m}.convert"), flat)
    assert data["rewards"] == [1.0, 1.0]
    assert data["rollout_ids"] == [0, 1] and data["rollout_mask_sums"] == [2, 2]
    with pytest.raises(ContractError, match=r"VIM162 .*bad_convert.*is missing 'response_lengths'"):
        BatchBuilder.convert(make_args(custom_convert_samples_to_train_data_path=f"{m}.bad_convert"), flat)


def test_normalize_group_rewards_single() -> None:
    assert normalize_group_rewards([3.0], divide_by_std=True) == [0.0]


def test_split_into_steps_keeps_segments_and_drops_remainder() -> None:
    a1 = sample(0, 0, 1.0, rollout_id=0)
    a2 = sample(0, 0, 1.0, rollout_id=0)
    rest = [sample(i, i // 2, float(i % 2), rollout_id=i) for i in range(1, 4)]
    data = BatchBuilder.convert(make_args(), [a1, a2] + rest)
    # 4 rollouts (segments of rollout 0 count once), global batch 2 -> 2 steps
    steps = split_into_steps(make_args(global_batch_size=2), data)
    assert [s["rollout_ids"] for s in steps] == [[0, 0, 1], [2, 3]]
    assert steps[0]["total_lengths"] == [4, 4, 4]
    with pytest.warns(UserWarning, match="1 of 4 rollouts do not fill a global batch of 3"):
        steps = split_into_steps(make_args(global_batch_size=3), data)
    assert len(steps) == 1
    with pytest.raises(ValueError, match="fewer than --global-batch-size=5"):
        split_into_steps(make_args(global_batch_size=5), data)


def test_global_batch_size_default() -> None:
    assert global_batch_size(make_args(rollout_batch_size=4, n_samples_per_prompt=2)) == 8
    assert global_batch_size(make_args(rollout_batch_size=4, n_samples_per_prompt=2,
                                       num_steps_per_rollout=2)) == 4


def test_a_status_never_set_converts_as_not_truncated() -> None:
    # Sample.status defaults to PENDING; nothing at conversion fails on it: the sample trains
    # as a COMPLETED one would (truncated 0), which is why a status never set is a warning in
    # lint (VIM036) and at run time (VIM111): vime.contract.sample.UNSET_FIELD_SEVERITY
    from vime.contract.sample import UNSET_FIELD_SEVERITY

    pending = [sample(5, 0, 1.0), sample(6, 0, 0.0)]
    for s in pending:
        s.status = Sample.Status.PENDING
    assert Sample().status is Sample.Status.PENDING
    data = BatchBuilder.convert(make_args(), pending)
    done = BatchBuilder.convert(make_args(), [sample(5, 0, 1.0), sample(6, 0, 0.0)])
    assert data["truncated"] == [0, 0]
    assert data == done
    assert UNSET_FIELD_SEVERITY["status"] == "warning"
    assert {UNSET_FIELD_SEVERITY[f] for f in ("tokens", "response_length", "reward")} == {
        "error"}
