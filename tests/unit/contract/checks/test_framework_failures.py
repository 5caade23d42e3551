"""Failures seen in other frameworks (VIM121-VIM128): each check passes correct output, names the
field and the numbers on a failing one, and a realistic multi-turn batch trips none of them."""

from __future__ import annotations

import copy
import json
import pickle
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import findings, make_args, make_groups, make_sample, only, train_output

from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckSettings
from vime.contract.errors import Violation
from vime.rollout.base_types import RolloutFnTrainOutput, SampleGroup
from vime.rollout.rollout_metrics import rollout_metrics, staleness_metrics
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

NEW_IDS = {"VIM121", "VIM122", "VIM123", "VIM124", "VIM125", "VIM126", "VIM127", "VIM128"}


def _new(found: list[Violation]) -> list[Violation]:
    return [v for v in found if v.id in NEW_IDS]


# ---- VIM121: one reward kind ---------------------------------------------------------------


def test_vim121_one_reward_kind_passes() -> None:
    assert only(findings(train_output(make_groups())), "VIM121") == []
    groups = make_groups()
    for g in groups:
        for s in g:
            s.reward = {"acc": float(s.index % 2), "format": 1.0}
    assert only(findings(train_output(groups), make_args(reward_key="acc")), "VIM121") == []


def test_vim121_mixed_rewards_name_the_counts_and_the_first_of_each_kind() -> None:
    groups = make_groups()
    groups[1][2].reward = {"acc": 1.0}
    groups[1][3].reward = {"acc": 0.0}
    [v] = only(findings(train_output(groups), make_args(reward_key="acc")), "VIM121")
    assert v.severity == "error"
    assert v.where == "samples[1][2].reward (index=6)"
    assert "6 samples have a number (first: samples[0][0] (index=0))" in v.message
    assert "2 a dict (first: samples[1][2] (index=6))" in v.message
    assert "reward[key], which fails on a number" in v.message


# ---- VIM122: rewards are Python numbers ----------------------------------------------------


def test_vim122_python_numbers_and_numpy_float64_pass() -> None:
    import numpy as np
    groups = make_groups()
    groups[0][0].reward = 1
    groups[0][1].reward = np.float64(0.5)      # a float subclass: tolerated
    found = findings(train_output(groups))
    assert only(found, "VIM122") == [] and only(found, "VIM110") == []


def test_vim122_torch_tensor_reward_names_type_shape_and_fix() -> None:
    import torch
    groups = make_groups()
    groups[0][1].reward = torch.tensor([0.5])
    groups[1][0].reward = torch.tensor([0.5, 1.0])
    found = findings(train_output(groups))
    one, two = only(found, "VIM122")
    assert one.where == "samples[0][1].reward (index=1)" and one.severity == "error"
    assert "is a torch.Tensor of shape (1,), dtype torch.float32" in one.message
    assert "only numpy.float64, a float subclass, is tolerated" in one.message
    assert "float(x)" in one.fix and ".item()" in one.fix
    assert "reduce the 2 elements" in two.fix
    assert only(found, "VIM110") == []        # one finding per value: VIM122 owns it


def test_vim122_numpy_scalars_arrays_and_dict_values() -> None:
    import numpy as np
    groups = make_groups()
    groups[0][0].reward = np.float32(1.0)
    groups[0][2].reward = np.array(0.0)
    found = {v.where: v for v in only(findings(train_output(groups)), "VIM122")}
    assert "is a numpy.float32 scalar" in found["samples[0][0].reward (index=0)"].message
    assert "is a numpy.ndarray of shape (), dtype float64" in found[
        "samples[0][2].reward (index=2)"].message
    groups = make_groups()
    for g in groups:
        for s in g:
            s.reward = {"acc": float(s.index % 2)}
    groups[1][1].reward = {"acc": np.int64(1)}
    [v] = only(findings(train_output(groups), make_args(reward_key="acc")), "VIM122")
    assert v.where == "samples[1][1].reward['acc'] (index=5)"
    assert "numpy.int64 scalar" in v.message


# ---- VIM123: no shared mutable objects -----------------------------------------------------


def test_vim123_copies_of_a_template_and_sibling_metadata_pass() -> None:
    template = {"tools": ["calc"], "rm_type": "math"}
    groups = make_groups()
    for g in groups:
        for k, s in enumerate(g):
            s.metadata = copy.deepcopy(template) if k % 2 else dict(template)
    assert only(findings(train_output(groups)), "VIM123") == []
    fanout = _fanout_groups()
    assert only(findings(train_output(fanout)), "VIM123") == []


def test_vim123_shared_metadata_between_samples_names_both() -> None:
    groups = make_groups()
    shared: dict[str, Any] = {"rm_type": "math"}
    groups[0][1].metadata = shared
    groups[1][3].metadata = shared
    [v] = only(findings(train_output(groups)), "VIM123")
    assert v.severity == "error"
    assert v.where == "samples[1][3].metadata (index=7)"
    assert "is the same dict object" in v.message
    assert "as metadata of samples[0][1] (index=1): a write to one changes both" in v.message


def test_vim123_fanout_siblings_may_not_share_per_token_lists() -> None:
    groups = _fanout_groups()
    first, second = groups[0][0]
    second.rollout_log_probs = first.rollout_log_probs
    [v] = only(findings(train_output(groups)), "VIM123")
    assert v.where == "samples[0][0][1].rollout_log_probs (index=0)"
    assert "as rollout_log_probs of samples[0][0][0] (index=0)" in v.message


def test_vim123_the_same_sample_object_twice() -> None:
    groups = make_groups()
    groups[1][3] = groups[1][2]
    found = only(findings(train_output(groups)), "VIM123")
    assert [v.where for v in found] == ["samples[1][3] (index=6)"]
    assert "is the same Sample object as samples[1][2] (index=6)" in found[0].message


def test_vim123_tokens_shared_across_groups() -> None:
    groups = make_groups()
    groups[1][0].tokens = groups[0][0].tokens
    v = only(findings(train_output(groups)), "VIM123")[0]
    assert v.where == "samples[1][0].tokens (index=4)" and "list object" in v.message


# ---- VIM124: token budgets -----------------------------------------------------------------


def test_vim124_within_budgets_and_unset_budgets_pass() -> None:
    groups = make_groups()                      # 3 prompt + 3 response tokens
    assert only(findings(train_output(groups)), "VIM124") == []
    args = make_args(rollout_max_response_len=3, rollout_max_context_len=6)
    assert only(findings(train_output(groups), args), "VIM124") == []


def test_vim124_response_and_context_over_budget_name_both_numbers() -> None:
    groups = make_groups()
    groups[0][2] = make_sample(0, 2, response_length=5)
    found = only(findings(train_output(groups), make_args(rollout_max_response_len=4,
                                                          rollout_max_context_len=7)), "VIM124")
    rl, ctx = found
    assert rl.severity == ctx.severity == "error"
    assert rl.where == "samples[0][2].response_length (index=2)"
    assert rl.message == "is 5 tokens, 1 over --rollout-max-response-len=4"
    assert ctx.where == "samples[0][2].tokens (index=2)"
    assert ctx.message == ("has 8 tokens (3 prompt + 5 response), 1 over "
                           "--rollout-max-context-len=7")


def test_vim124_response_ending_in_masked_tokens_warns() -> None:
    groups = make_groups()
    s = groups[1][1]
    s.loss_mask = [1, 0, 1]                     # masked in the middle: fine
    assert only(findings(train_output(groups)), "VIM124") == []
    s.loss_mask = [1, 0, 0]
    [v] = only(findings(train_output(groups)), "VIM124")
    assert v.severity == "warning"
    assert v.where == "samples[1][1].loss_mask[1] (index=5)"
    assert "ends in 2 masked tokens (loss_mask 0 at response positions 1-2" in v.message
    s.remove_sample = True                      # not trained: nothing to say
    assert only(findings(train_output(groups)), "VIM124") == []


# ---- VIM125: a group is one prompt ---------------------------------------------------------


def test_vim125_one_prompt_per_group_passes() -> None:
    assert only(findings(train_output(make_groups())), "VIM125") == []
    assert only(findings(train_output(_fanout_groups())), "VIM125") == []


def test_vim125_group_with_two_prompts_names_the_group_and_members() -> None:
    groups = make_groups()
    for s in groups[0][2:]:
        s.tokens = [11, 99, 13, 14] + s.tokens[3:]
    [v] = only(findings(train_output(groups)), "VIM125")
    assert v.severity == "error" and v.where == "samples[0]"
    assert "holds 2 different prompts (tokens[:len(tokens) - response_length])" in v.message
    assert "samples[0][0] (index=0), samples[0][1] (index=1) (3 prompt tokens)" in v.message
    assert "samples[0][2] (index=2), samples[0][3] (index=3) (4 prompt tokens)" in v.message
    assert "first differ at token 1" in v.message


# ---- VIM126: weight versions all or none; staleness metrics --------------------------------


def test_vim126_all_or_none_pass() -> None:
    assert only(findings(train_output(make_groups())), "VIM126") == []
    groups = make_groups(weight_versions=["3"])
    assert only(findings(train_output(groups)), "VIM126") == []


def test_vim126_some_samples_without_weight_versions_warn() -> None:
    groups = make_groups(weight_versions=["3"])
    groups[1][2].weight_versions = []
    [v] = only(findings(train_output(groups)), "VIM126")
    assert v.severity == "warning"
    assert v.where == "samples[1][2].weight_versions (index=6)"
    assert "is empty but 7 of 8 samples carry weight versions" in v.message


def test_vim126_staleness_metrics_per_step() -> None:
    samples = [Sample(weight_versions=v) for v in (["4"], ["4"], ["2", "3"], ["3", "4"], [])]
    m = staleness_metrics(samples)
    assert m == {"rollout/staleness/min": 0.0, "rollout/staleness/max": 2.0,
                 "rollout/staleness/mean": 0.75}
    assert staleness_metrics([Sample(weight_versions=["default"])]) == {}
    full = rollout_metrics(Namespace(reward_key=None),
                           [Sample(response_length=1, reward=1.0, weight_versions=["7"])], 1.0)
    assert full["rollout/staleness/max"] == 0.0


# ---- VIM127: loss-mask polarity ------------------------------------------------------------


def test_vim127_multi_turn_mask_passes() -> None:
    groups = _multi_turn_groups()
    assert only(findings(train_output(groups)), "VIM127") == []


def test_vim127_inverted_mask_warns_once() -> None:
    groups = make_groups()
    s = groups[0][3]
    s.loss_mask = [0, 1, 1]                     # model token masked, "observation" trained
    s.rollout_log_probs = [-0.7, 0.0, 0.0]
    found = findings(train_output(groups))
    [v] = only(found, "VIM127")
    assert v.severity == "warning" and v.where == "samples[0][3].loss_mask (index=3)"
    assert "looks inverted: all 2 trainable tokens (mask 1) have rollout_log_probs exactly 0.0"\
        in v.message
    assert only(found, "VIM109") == []          # not reported again as a placeholder


# ---- VIM128: groups are not samples --------------------------------------------------------


def test_vim128_group_used_as_a_sample_names_the_mistake() -> None:
    group = SampleGroup([make_sample(3, k) for k in range(4)])
    with pytest.raises(AttributeError, match=r"VIM128 error: group \(group_index=3\) `\.reward`: "
                       r"this is a group of 4 samples \(list\[Sample\]\) from get_samples, not a "
                       r"Sample: iterate `for group in groups: for sample in group:`"):
        group.reward = 1.0
    with pytest.raises(AttributeError, match=r"`\.status`: this is a group of 4 samples"):
        _ = group.status
    with pytest.raises(AttributeError, match=r"`\.get_reward_value`"):
        group.get_reward_value(None)
    assert getattr(group, "tokens", "default") == "default"   # getattr defaults still work
    with pytest.raises(AttributeError, match="'SampleGroup' object has no attribute 'nope'"):
        _ = group.nope


def test_vim128_sample_group_stays_a_real_list() -> None:
    import ray.cloudpickle as cloudpickle

    group = SampleGroup([make_sample(0, k) for k in range(4)])
    assert isinstance(group, list) and group == list(group) and group[:2] == list(group)[:2]
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(group, protocol=protocol))
        assert type(back) is SampleGroup and back == group
    back = cloudpickle.loads(cloudpickle.dumps(group))       # how Ray ships objects
    assert type(back) is SampleGroup and back == group
    assert type(copy.deepcopy(group)) is SampleGroup and copy.deepcopy(group) == group
    assert json.dumps(SampleGroup([1, {"a": 2}])) == '[1, {"a": 2}]'
    assert group.index(group[2]) == 2                         # list.index, not Sample.index
    out = RolloutFnTrainOutput(samples=[group, SampleGroup(make_sample(1, k) for k in range(4))])
    s = CheckSettings(n_samples_per_prompt=4, rollout_batch_size=2)
    assert collect_rollout_output(out, s, evaluation=False) == []


def test_vim128_default_data_sources_return_sample_groups(tmp_path: Path) -> None:
    from vime.rollout.data_source import RolloutDataSourceWithBuffer
    from vime.utils.arguments import parse_args
    from vime_lint.check.synthetic import SyntheticDataSource

    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps({"input": f"p{i}", "label": str(i)}) + "\n"
                            for i in range(4)))
    args = parse_args(["--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                       "--prompt-data", str(data), "--label-key", "label"], training=False)
    ds = RolloutDataSourceWithBuffer(args)
    groups = ds.get_samples(2)
    assert [type(g) for g in groups] == [SampleGroup, SampleGroup]
    for g in groups:
        for smp in g:
            smp.status = Sample.Status.ABORTED
    ds.add_samples([list(groups[0])])                       # a plain list goes back in
    assert [type(g) for g in ds.get_samples(2)] == [SampleGroup, SampleGroup]
    synthetic = SyntheticDataSource(Namespace(n_samples_per_prompt=2, prompt_data=None))
    assert all(type(g) is SampleGroup for g in synthetic.get_samples(2))


# ---- no false alarms: a realistic clean batch -----------------------------------------------


def _multi_turn_sample(g: int, k: int, n: int, template: dict[str, Any]) -> Sample:
    """A 2-turn tool episode: model turn, masked observation in the middle, model turn."""
    s = Sample(group_index=g, index=g * n + k, prompt=f"question {g}", label="5",
               tokens=[100 + g, 11, 12, 13], metadata=copy.deepcopy(template))
    meta = {"finish_reason": {"type": "stop"}, "weight_version": "7"}
    s.append_response_tokens(None, tokens=[40 + k, 41], log_probs=[-0.4, -0.2],
                             meta_info=meta, update_terminal_info=False)
    s.append_response_tokens(None, tokens=[60, 61, 62], trainable=False, text="<result>5</result>")
    s.append_response_tokens(None, tokens=[42, 43], log_probs=[-0.3, -0.1], meta_info=meta)
    s.weight_versions = ["7"]
    s.reward = {"acc": float(k % 2), "format": 1.0}
    s.metadata["tool_calls"] = 1
    return s


def _multi_turn_groups(groups: int = 2, n: int = 4) -> list[list[Sample]]:
    template = {"tools": [{"name": "calc"}], "rm_type": "math", "raw_reward": 0.0}
    return [[_multi_turn_sample(g, k, n, template) for k in range(n)] for g in range(groups)]


def _fanout_groups(groups: int = 2, n: int = 4) -> list[list[list[Sample]]]:
    """Each rollout cut into two segments that share the rollout's metadata dict."""
    out = []
    for g in range(groups):
        group = []
        for k in range(n):
            first = make_sample(g, k, n, rollout_id=g * n + k)
            second = make_sample(g, k, n, rollout_id=g * n + k)
            second.tokens = first.tokens + [70, 71, 72]  # its own list: prompt + turns 1, 2
            second.rollout_log_probs = [-0.5, -0.6, -0.7]
            second.metadata = first.metadata          # siblings share the rollout's metadata
            group.append([first, second])
        out.append(group)
    return out


def test_realistic_clean_batch_trips_none_of_the_new_checks() -> None:
    groups = _multi_turn_groups()
    args = make_args(reward_key="acc", label_key="label", rollout_max_response_len=8,
                     rollout_max_context_len=12)
    found = findings(train_output(groups), args)
    assert _new(found) == [], [v.format() for v in _new(found)]
    assert found == [], [v.format() for v in found]
    assert groups[0][0].loss_mask == [1, 1, 0, 0, 0, 1, 1]
    fanout = _fanout_groups()
    found = findings(train_output(fanout), make_args(rollout_max_response_len=3))
    assert _new(found) == [], [v.format() for v in _new(found)]
