"""VIM130 (eval data) and VIM101 (the output type of the mode)."""

from __future__ import annotations

from argparse import Namespace

import pytest
from runtime_helpers import eval_output, findings, make_args, make_groups, only, rejects

pytestmark = pytest.mark.unit


def _data(n: int = 4) -> dict:
    samples = [s for g in make_groups() for s in g][:n]
    return {"toy": {"rewards": [s.reward for s in samples], "truncated": [False] * n,
                    "samples": samples}}


def test_vim130_accepts_valid_eval_data() -> None:
    assert findings(eval_output(_data()), evaluation=True) == []


def test_vim130_rejects_missing_truncated() -> None:
    data = _data()
    del data["toy"]["truncated"]
    err = rejects(eval_output(data), evaluation=True)
    assert "VIM130 error: data['toy'] is missing 'truncated'" in str(err)


def test_vim130_rejects_unequal_lengths() -> None:
    data = _data()
    data["toy"]["rewards"].pop()
    err = rejects(eval_output(data), evaluation=True)
    assert "data['toy'] has lists of different lengths (rewards=3, truncated=4, samples=4)" \
        in str(err)


def test_vim130_rejects_none_reward_and_non_sample() -> None:
    data = _data()
    data["toy"]["rewards"][2] = None
    data["toy"]["samples"][1] = {"x": 1}
    err = rejects(eval_output(data), evaluation=True)
    assert "data['toy']['rewards'][2] is None" in str(err)
    assert "data['toy']['samples'][1] is a dict of 1 item(s), expected a Sample" in str(err)


def test_vim130_reduces_dict_rewards_with_eval_reward_key() -> None:
    data = _data()
    data["toy"]["rewards"] = [{"acc": 1.0}] * 4
    err = rejects(eval_output(data), evaluation=True)
    assert "data['toy']['rewards'][0] is a dict with keys ['acc'] but --reward-key" in str(err)
    assert findings(eval_output(data), make_args(eval_reward_key="acc"), evaluation=True) == []


def test_vim130_warns_on_dataset_names() -> None:
    args = make_args(eval_datasets=[Namespace(name="aime"), {"name": "gsm8k"}])
    found = only(findings(eval_output(_data()), args, evaluation=True), "VIM130")
    assert [(v.severity, v.where) for v in found] == [("warning", "data")]
    assert "configured eval datasets are ['aime', 'gsm8k']" in found[0].message


def test_vim130_warns_int_truncated_and_rejects_strings() -> None:
    data = _data()
    data["toy"]["truncated"][0] = 1
    data["toy"]["truncated"][1] = "no"
    found = only(findings(eval_output(data), evaluation=True), "VIM130")
    assert [(v.severity, v.where) for v in found] == [("warning", "data['toy']['truncated'][0]")]
    data["toy"]["truncated"][0] = False
    assert "data['toy']['truncated'][1] is 'no' (str), expected a bool" in str(
        rejects(eval_output(data), evaluation=True))


def test_vim101_rejects_train_output_on_eval_path() -> None:
    from vime.rollout.base_types import RolloutFnTrainOutput

    err = rejects(RolloutFnTrainOutput(samples=make_groups()), evaluation=True)
    assert "VIM101 error: output `my_pkg.rollout.generate_rollout` (eval) returned" in str(err)


def test_vim101_accepts_legacy_dict_on_eval_path() -> None:
    assert findings(_data(), evaluation=True) == []


def test_vim130_skips_name_check_without_configured_datasets() -> None:
    assert findings(eval_output(_data()), make_args(eval_datasets=[]), evaluation=True) == []


def test_vim130_accepts_numpy_bool_truncated() -> None:
    # numpy 2 names its bool scalar type `bool`, numpy 1 `bool_`: both are accepted (eval
    # logging reads each flag as bool(t)); a Python int 1 still warns, a str is still an error
    np = pytest.importorskip("numpy")
    data = _data()
    data["toy"]["truncated"] = [np.True_, np.False_, False, np.bool_(True)]
    assert findings(eval_output(data), evaluation=True) == []
    data["toy"]["truncated"][2] = "no"
    assert "data['toy']['truncated'][2] is 'no' (str), expected a bool" in str(
        rejects(eval_output(data), evaluation=True))
