"""Sample matches the contract's field list; serialisation, rewards and response growth."""

from __future__ import annotations

import dataclasses
from argparse import Namespace

import pytest

from vime.contract import SAMPLE_FIELDS, STATUS_VALUES, ContractError
from vime.utils.types import Sample

pytestmark = pytest.mark.unit


def test_sample_fields_match_contract_names_hints_and_defaults() -> None:
    fields = dataclasses.fields(Sample)
    assert [f.name for f in fields] == [s.name for s in SAMPLE_FIELDS]
    for f, spec in zip(fields, SAMPLE_FIELDS, strict=True):
        assert f.type == spec.hint, f.name
        expected = eval(spec.default, {"Sample": Sample})  # noqa: S307 - contract literal
        if f.default_factory is not dataclasses.MISSING:
            assert spec.uses_factory, f.name
            assert f.default_factory() == expected, f.name
        else:
            assert not spec.uses_factory, f.name
            assert f.default == expected, f.name


def test_status_values_match_enum() -> None:
    assert [(m.name, m.value) for m in Sample.Status] == list(STATUS_VALUES)


def test_round_trip_preserves_every_field_and_unknown_keys() -> None:
    s = Sample(index=3, group_index=1, prompt=[{"role": "user", "content": "hi"}], tokens=[1, 2, 3],
               response="x", response_length=1, reward={"acc": 1.0}, loss_mask=[1],
               rollout_log_probs=[-0.5], status=Sample.Status.TRUNCATED, metadata={"a": 1})
    s.prefix_cache_info.cached_tokens = 4
    d = s.to_dict()
    assert d["status"] == "truncated"
    assert d["prefix_cache_info"] == {"cached_tokens": 4, "total_prompt_tokens": 0}
    d["my_extra"] = {"k": [1]}
    back = Sample.from_dict(d)
    assert back.my_extra == {"k": [1]}  # type: ignore[attr-defined]
    assert back.to_dict()["my_extra"] == {"k": [1]}
    del d["my_extra"]
    assert Sample.from_dict(d) == s


def test_from_dict_missing_fields_take_defaults_and_status_member_accepted() -> None:
    s = Sample.from_dict({"index": 1, "status": Sample.Status.ABORTED})
    assert s.status is Sample.Status.ABORTED and s.tokens == [] and s.reward is None


def test_from_dict_rejects_unknown_status_naming_value_and_allowed() -> None:
    with pytest.raises(ContractError, match=r"status='done' is not a Sample.Status value.*'completed'"):
        Sample.from_dict({"status": "done"})


def test_from_dict_rejects_non_mapping() -> None:
    with pytest.raises(ContractError, match="expects a mapping, got list"):
        Sample.from_dict([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reward", "key", "expected"),
    [(1.5, None, 1.5), ({"acc": 0.25, "fmt": 1.0}, "acc", 0.25), (0.0, "acc", 0.0)],
)
def test_get_reward_value(reward: object, key: str | None, expected: float) -> None:
    s = Sample(reward=reward)  # type: ignore[arg-type]
    assert s.get_reward_value(Namespace(reward_key=key)) == expected


def test_get_reward_value_dict_without_reward_key_names_keys() -> None:
    s = Sample(index=7, reward={"acc": 1.0})
    with pytest.raises(ContractError, match=r"VIM110.*index=7.*keys \['acc'\].*--reward-key"):
        s.get_reward_value(Namespace(reward_key=None))


def test_get_reward_value_missing_key_lists_present_keys() -> None:
    s = Sample(reward={"acc": 1.0})
    with pytest.raises(ContractError, match=r"VIM110.*without the key 'score'.*\['acc'\]"):
        s.get_reward_value(Namespace(reward_key="score"))


def test_get_reward_value_none_is_vim110() -> None:
    with pytest.raises(ContractError, match="VIM110.*reward is None"):
        Sample().get_reward_value(None)


def test_effective_response_length() -> None:
    assert Sample(response_length=3).effective_response_length == 3
    assert Sample(response_length=3, loss_mask=[1, 0, 1]).effective_response_length == 2


def test_append_trainable_then_environment_tokens_keeps_lists_in_step() -> None:
    s = Sample(tokens=[5, 6])
    s.append_response_tokens(tokens=[7, 8], log_probs=[-0.1, -0.2], text="ab")
    assert s.loss_mask is None and s.rollout_log_probs == [-0.1, -0.2]
    s.append_response_tokens(tokens=[9], trainable=False, text="c")
    assert s.tokens == [5, 6, 7, 8, 9]
    assert s.response_length == 3 and s.response == "abc"
    assert s.loss_mask == [1, 1, 0]
    assert s.rollout_log_probs == [-0.1, -0.2, 0.0]


def test_append_applies_finish_reason_and_weight_version() -> None:
    s = Sample(tokens=[1])
    s.append_response_tokens(tokens=[2], log_probs=[-1.0], meta_info={
        "finish_reason": {"type": "length"}, "weight_version": 4, "prompt_tokens": 1,
        "cached_tokens": 1})
    assert s.status is Sample.Status.TRUNCATED
    assert s.weight_versions == ["4"]
    assert s.prefix_cache_info.prefix_cache_hit_rate == 1.0
    s2 = Sample(tokens=[1])
    s2.append_response_tokens(tokens=[2], log_probs=[-1.0], meta_info={"finish_reason": "abort"})
    assert s2.status is Sample.Status.ABORTED


def test_append_rejects_log_prob_count_mismatch_naming_both_lengths() -> None:
    with pytest.raises(ValueError, match=r"log_probs has 1 entries.*len\(tokens\)=2"):
        Sample().append_response_tokens(tokens=[1, 2], log_probs=[-0.1])


def test_append_rejects_trainable_without_log_probs() -> None:
    with pytest.raises(ValueError, match="2 trainable tokens need log_probs"):
        Sample().append_response_tokens(tokens=[1, 2])


def test_append_rejects_environment_tokens_with_log_probs() -> None:
    with pytest.raises(ValueError, match="non-trainable.*take no log_probs"):
        Sample().append_response_tokens(tokens=[1], log_probs=[-0.1], trainable=False)


def test_append_rejects_non_int_tokens() -> None:
    with pytest.raises(ValueError, match=r"tokens\[1\] is True \(bool\)"):
        Sample().append_response_tokens(tokens=[1, True], log_probs=[0.0, 0.0])


def test_append_detects_preexisting_length_mismatch() -> None:
    s = Sample(tokens=[1, 2], response_length=1, loss_mask=[1, 1], rollout_log_probs=[-1.0])
    with pytest.raises(ValueError, match="loss_mask has 3 entries, expected response_length=2"):
        s.append_response_tokens(tokens=[3], log_probs=[-0.5])


def test_append_trainable_after_unlogged_response_is_rejected() -> None:
    s = Sample(tokens=[1, 2], response_length=1)
    with pytest.raises(ValueError, match="rollout_log_probs is None but the sample already has"):
        s.append_response_tokens(tokens=[3], log_probs=[-0.5])
