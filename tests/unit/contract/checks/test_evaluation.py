"""vime.contract.checks.evaluation on exact values: every VIM130 finding of ``check_eval_data``
(where, severity, message, fix; which findings a bad entry or column stops), the dataset-name
warning, ``prompt_key``, ``eval_prompt_keys`` and every VIM131 finding of ``check_vim131``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vime.contract.checks.evaluation import (
    check_eval_data,
    check_vim131,
    eval_prompt_keys,
    prompt_key,
)
from vime.contract.checks.settings import CheckSettings
from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

S = CheckSettings()
FIX130 = INVARIANTS["VIM130"].fix
FIX131 = INVARIANTS["VIM131"].fix


def v130(where: str, message: str, *, severity: str = "error", fix: str = FIX130) -> Violation:
    return Violation("VIM130", severity, where, message, fix=fix)  # type: ignore[arg-type]


def entry(n: int = 2, **columns: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"rewards": [1.0] * n, "truncated": [False] * n,
                           "samples": [Sample(prompt=f"p{i}") for i in range(n)]}
    out.update(columns)
    return out


# -- check_eval_data: the data and its entries ----------------------------------------------

@pytest.mark.parametrize(("data", "shown"), [([], "a list of 0 item(s)"), (None, "None (NoneType)"),
                                            ("x", "'x' (str)")])
def test_data_that_is_not_a_dict_is_one_error(data: Any, shown: str) -> None:
    assert check_eval_data(data, S) == [
        v130("data", f"is {shown}, expected dict[str, dict] (one entry per eval dataset)")]


def test_valid_entries_and_empty_ones_have_no_finding() -> None:
    data = {"a": entry(3), "b": entry(0), "c": entry(1, rewards=[0], truncated=[True])}
    assert check_eval_data(data, S) == []
    assert check_eval_data({}, S) == []


def test_a_name_that_is_not_a_str_is_reported_and_its_entry_still_checked() -> None:
    assert check_eval_data({1: entry(), "b": entry()}, S) == [
        v130("data[1]", "name is 1 (int), expected str")]
    assert check_eval_data({("x",): {"rewards": [1.0]}}, S) == [
        v130("data[('x',)]", "name is a tuple of 1 item(s), expected str"),
        v130("data[('x',)]", "is missing 'truncated', 'samples'")]


def test_an_entry_that_is_not_a_dict_is_one_error_and_the_next_entries_are_checked() -> None:
    expected = "expected {'rewards': [...], 'truncated': [...], 'samples': [...]}"
    data = {"a": [1.0], "b": None, "c": entry(rewards=[1.0, None])}
    assert check_eval_data(data, S) == [
        v130("data['a']", f"is a list of 1 item(s), {expected}"),
        v130("data['b']", f"is None (NoneType), {expected}"),
        v130("data['c']['rewards'][1]", "is None; every sample needs a reward before training",
             fix="set sample.reward to a float on every sample before it is returned (the "
                 "default rollout scores samples with --rm-type or --custom-rm-path)")]


def test_missing_keys_are_one_error_and_the_present_columns_are_still_compared() -> None:
    assert check_eval_data({"a": {}}, S) == [
        v130("data['a']", "is missing 'rewards', 'truncated', 'samples'")]
    assert check_eval_data({"a": {"truncated": [False]}}, S) == [
        v130("data['a']", "is missing 'rewards', 'samples'")]
    assert check_eval_data({"a": {"rewards": [1.0], "truncated": [False, "no"]}}, S) == [
        v130("data['a']", "is missing 'samples'"),
        v130("data['a']['truncated'][1]", "is 'no' (str), expected a bool"),
        v130("data['a']", "has lists of different lengths (rewards=1, truncated=2); expected "
                          "one item per generated sample in each")]


def test_the_columns_after_a_missing_key_are_still_checked() -> None:
    # 'rewards' (the first key) is missing: 'truncated' and 'samples' after it are checked
    data = {"a": {"truncated": ["no"], "samples": [1]}}
    assert check_eval_data(data, S) == [
        v130("data['a']", "is missing 'rewards'"),
        v130("data['a']['truncated'][0]", "is 'no' (str), expected a bool"),
        v130("data['a']['samples'][0]", "is 1 (int), expected a Sample")]


def test_a_missing_key_is_not_a_column_of_none() -> None:
    # present keys whose value is None are not lists; absent ones are only "missing"
    assert check_eval_data({"a": {"rewards": None, "truncated": [True]}}, S) == [
        v130("data['a']", "is missing 'samples'"),
        v130("data['a']['rewards']", "is None (NoneType), expected a list")]


def test_a_column_that_is_not_a_list_is_one_error_left_out_of_the_lengths() -> None:
    # rewards (a tuple of 3) is neither checked nor counted; the columns after it still are
    data = {"a": entry(1, rewards=(1.0, 2.0, 3.0), truncated=["no"])}
    assert check_eval_data(data, S) == [
        v130("data['a']['rewards']", "is a tuple of 3 item(s), expected a list"),
        v130("data['a']['truncated'][0]", "is 'no' (str), expected a bool")]


def test_lengths_are_named_in_column_order() -> None:
    data = {"a": entry(2, truncated=[False] * 3, samples=[Sample()])}
    assert check_eval_data(data, S) == [
        v130("data['a']", "has lists of different lengths (rewards=2, truncated=3, samples=1); "
                          "expected one item per generated sample in each")]
    # two columns of one length and a third of another differ too
    data = {"a": entry(2, samples=[Sample()] * 3)}
    assert [v.message for v in check_eval_data(data, S)] == [
        "has lists of different lengths (rewards=2, truncated=2, samples=3); expected one item "
        "per generated sample in each"]


def test_each_entry_reports_its_own_findings_in_order() -> None:
    data = {"x": entry(1, truncated=[1]), "y": entry(1, samples=["s"])}
    assert check_eval_data(data, S) == [
        v130("data['x']['truncated'][0]", "is 1 (int), expected a bool", severity="warning"),
        v130("data['y']['samples'][0]", "is 's' (str), expected a Sample")]


# -- check_eval_data: the configured dataset names ------------------------------------------

def test_names_equal_to_the_configured_ones_do_not_warn() -> None:
    s = CheckSettings(eval_dataset_names=("b", "a"))
    assert check_eval_data({"a": entry(), "b": entry()}, s) == []


def test_other_names_warn_once_with_both_sorted() -> None:
    s = CheckSettings(eval_dataset_names=("y", "b"))
    assert check_eval_data({"z": entry(), "a": entry()}, s) == [
        v130("data", "has datasets ['a', 'z'], configured eval datasets are ['b', 'y']",
             severity="warning")]
    # a name that is not a str is reported, and is not one of the datasets
    s = CheckSettings(eval_dataset_names=("a",))
    assert check_eval_data({"a": entry(), 2: entry()}, s) == [
        v130("data[2]", "name is 2 (int), expected str")]
    s = CheckSettings(eval_dataset_names=("a", "2"))
    assert check_eval_data({"a": entry(), 2: entry()}, s)[1:] == [
        v130("data", "has datasets ['a'], configured eval datasets are ['2', 'a']",
             severity="warning")]


def test_no_configured_names_skips_the_comparison_and_an_empty_tuple_is_compared() -> None:
    assert check_eval_data({"a": entry()}, CheckSettings(eval_dataset_names=None)) == []
    assert check_eval_data({"a": entry()}, CheckSettings(eval_dataset_names=())) == [
        v130("data", "has datasets ['a'], configured eval datasets are []", severity="warning")]


# -- the columns ----------------------------------------------------------------------------

def test_rewards_report_the_first_bad_one_with_its_severity_and_fix() -> None:
    assert check_eval_data({"a": entry(3, rewards=[1.0, "x", None])}, S) == [
        v130("data['a']['rewards'][1]", "is 'x' (str), expected a finite real",
             fix="return a number, not a str: compare the parsed answer and return 1.0 / 0.0, "
                 "or float(text) for a score the model wrote")]
    assert check_eval_data({"a": entry(2, rewards=[0.5, True])}, S) == [
        v130("data['a']['rewards'][1]", "is a bool (True); store a float (1.0 / 0.0)",
             severity="warning", fix="store a float (1.0 / 0.0), not a bool")]
    assert check_eval_data({"a": entry(1, rewards=[float("inf")])}, S) == [
        v130("data['a']['rewards'][0]", "is inf, expected a finite real",
             fix="store a finite float (check for division by zero, NaN or inf)")]


def test_dict_rewards_without_a_key_name_reward_key() -> None:
    assert check_eval_data({"a": entry(1, rewards=[{"acc": 1.0}])}, S) == [
        v130("data['a']['rewards'][0]", "is a dict with keys ['acc'] but --reward-key is not set",
             fix="pass --reward-key naming one of ['acc']")]


def test_dict_rewards_are_read_with_reward_key_when_no_eval_reward_key() -> None:
    s = CheckSettings(reward_key="acc")
    assert check_eval_data({"a": entry(2, rewards=[{"acc": 1.0}, {"acc": 0.0}])}, s) == []
    assert check_eval_data({"a": entry(1, rewards=[{"b": 1.0}])}, s) == [
        v130("data['a']['rewards'][0]", "is a dict without the key 'acc' (--reward-key); it has "
                                        "['b']",
             fix="store 'acc' in every reward dict, or pass --reward-key naming one of ['b']")]


def test_eval_reward_key_wins_over_reward_key_and_is_named() -> None:
    s = CheckSettings(reward_key="r", eval_reward_key="acc")
    assert check_eval_data({"a": entry(1, rewards=[{"acc": 1.0}])}, s) == []
    assert check_eval_data({"a": entry(1, rewards=[{"r": 1.0}])}, s) == [
        v130("data['a']['rewards'][0]", "is a dict without the key 'acc' (--eval-reward-key); "
                                        "it has ['r']",
             fix="store 'acc' in every reward dict, or pass --eval-reward-key naming one of "
                 "['r']")]
    assert check_eval_data({"a": entry(1, rewards=[{"acc": True}])}, s) == [
        v130("data['a']['rewards'][0]", "['acc'] is a bool (True); store a float (1.0 / 0.0)",
             severity="warning", fix="store a float (1.0 / 0.0), not a bool")]


def test_truncated_reports_the_first_flag_that_is_not_a_bool() -> None:
    def found(flags: list[Any]) -> list[Violation]:
        return check_eval_data({"a": entry(len(flags), truncated=flags)}, S)

    assert found([True, 1, 2]) == [
        v130("data['a']['truncated'][1]", "is 1 (int), expected a bool", severity="warning")]
    assert found([False, 0]) == [
        v130("data['a']['truncated'][1]", "is 0 (int), expected a bool", severity="warning")]
    assert found([True, 2, 1]) == [v130("data['a']['truncated'][1]", "is 2 (int), expected a bool")]
    assert found([-1]) == [v130("data['a']['truncated'][0]", "is -1 (int), expected a bool")]
    # 1.0 == 1, but only an int 0 / 1 is the warning
    assert found([1.0]) == [v130("data['a']['truncated'][0]", "is 1.0 (float), expected a bool")]
    assert found([None, 1]) == [
        v130("data['a']['truncated'][0]", "is None (NoneType), expected a bool")]


def test_truncated_numpy_bools_pass_and_the_flag_after_one_is_checked() -> None:
    np = pytest.importorskip("numpy")

    def found(flags: list[Any]) -> list[Violation]:
        return check_eval_data({"a": entry(len(flags), truncated=flags)}, S)

    assert found([np.True_, np.False_, True]) == []
    assert found([np.True_, True, "no"]) == [
        v130("data['a']['truncated'][2]", "is 'no' (str), expected a bool")]
    # an int array item is no bool
    assert found([np.int64(1)]) == [
        v130("data['a']['truncated'][0]", f"is {np.int64(1)!r} (int64), expected a bool")]


def test_truncated_numpy_1_bools_pass_by_their_name() -> None:
    # numpy 1 names its bool scalar type 'bool_' (numpy 2: 'bool'); read by module and name
    old_bool = type("bool_", (), {"__module__": "numpy"})
    new_bool = type("bool", (), {"__module__": "numpy"})
    other = type("bool_", (), {"__module__": "mypkg"})
    flags = [old_bool(), new_bool(), other()]
    found = check_eval_data({"a": entry(3, truncated=flags)}, S)
    assert [(v.where, v.message.split(" (")[-1]) for v in found] == [
        ("data['a']['truncated'][2]", "bool_), expected a bool")]


def test_samples_report_the_first_item_that_is_not_a_sample() -> None:
    data = {"a": entry(3, samples=[Sample(), {"x": 1}, 3])}
    assert check_eval_data(data, S) == [
        v130("data['a']['samples'][1]", "is a dict of 1 item(s), expected a Sample")]


# -- prompt_key and eval_prompt_keys --------------------------------------------------------

def test_prompt_key_keeps_a_str_and_dumps_the_rest_as_sorted_json() -> None:
    assert prompt_key("What is 2+3?") == "What is 2+3?"
    assert prompt_key('"quoted"') == '"quoted"'
    assert prompt_key([{"role": "user", "content": "hi"}]) == \
        '[{"content": "hi", "role": "user"}]'
    assert prompt_key(None) == "null"
    assert prompt_key({"b": Path("x/y"), "a": 1}) == '{"a": 1, "b": "x/y"}'


def test_eval_prompt_keys_reads_every_list_of_the_eval_datasets() -> None:
    chat = [{"role": "user", "content": "q"}]
    sets = {"a": [Sample(prompt="p"), Sample(prompt=chat), Sample(prompt="p")],
            1: [SimpleNamespace()], "c": "not a list", "d": []}
    source = SimpleNamespace(eval_datasets=lambda: sets)
    assert eval_prompt_keys(source) == {
        "a": frozenset({"p", '[{"content": "q", "role": "user"}]'}), "1": frozenset({"null"}),
        "d": frozenset()}


def _raise() -> dict:
    raise FileNotFoundError("eval.jsonl")


@pytest.mark.parametrize("source", [
    SimpleNamespace(), SimpleNamespace(eval_datasets={"a": [Sample(prompt="p")]}),
    SimpleNamespace(eval_datasets=_raise), SimpleNamespace(eval_datasets=lambda: [["p"]]),
    SimpleNamespace(eval_datasets=lambda: None)])
def test_eval_prompt_keys_of_a_source_without_readable_sets_is_empty(source: Any) -> None:
    assert eval_prompt_keys(source) == {}


# -- check_vim131 ---------------------------------------------------------------------------

TRAIN = frozenset({"t0", "t1", "t2"})


def samples_of(*prompts: Any) -> dict[str, Any]:
    return {"samples": [Sample(prompt=p) for p in prompts]}


def v131(name: Any, n: int) -> Violation:
    return Violation("VIM131", "warning", f"data[{name!r}]['samples']",
                     f"are {n} samples whose prompts are all training prompts (--prompt-data): "
                     "this eval measures the training set", fix=FIX131)


def v131_file(name: Any, n: int) -> Violation:
    return Violation(
        "VIM131", "warning", f"data[{name!r}]['samples']",
        f"are {n} samples whose prompts are all training prompts (--prompt-data): the eval "
        f"dataset {name!r} itself holds only training prompts, so this eval measures the "
        "training set",
        fix=f"give eval dataset {name!r} (--eval-prompt-data / --eval-config) a file of held-out "
            "prompts, not the training file or a part of it")


def test_vim131_one_warning_per_dataset_of_training_prompts_only() -> None:
    data = {"a": samples_of("t0", "t1", "t0"), "b": samples_of("t0", "held"),
            "c": samples_of("t2")}
    assert check_vim131(data, TRAIN) == [v131("a", 3), v131("c", 1)]


def test_vim131_skips_entries_without_samples_and_checks_the_ones_after() -> None:
    data = {"x": "not a dict", "y": {"samples": "not a list"}, "z": {"samples": []},
            "u": {}, "w": samples_of("t1", "t1")}
    assert check_vim131(data, TRAIN) == [v131("w", 2)]


def test_vim131_reads_no_prompt_from_an_item_that_has_none() -> None:
    # a dict is not a Sample (VIM130 says so); its "prompt" key is not read as the prompt
    assert check_vim131({"a": {"samples": [{"prompt": "t0"}]}}, TRAIN) == []
    assert check_vim131({"a": {"samples": [{"prompt": "t0"}]}}, TRAIN | {"null"}) == [v131("a", 1)]


def test_vim131_chat_prompts_are_compared_by_their_key() -> None:
    chat = [{"role": "user", "content": "hi"}]
    train = frozenset({prompt_key([{"content": "hi", "role": "user"}])})
    assert check_vim131({"a": samples_of(chat)}, train) == [v131("a", 1)]


def test_vim131_nothing_without_training_prompts_or_without_a_dict() -> None:
    assert check_vim131({"a": samples_of("t0")}, frozenset()) == []
    assert check_vim131({"a": samples_of("t0")}, []) == []
    assert check_vim131([samples_of("t0")], TRAIN) == []
    assert check_vim131(None, TRAIN) == []


def test_vim131_names_the_eval_file_when_the_configured_dataset_is_training_prompts() -> None:
    data = {"a": samples_of("t0", "t1"), "b": samples_of("t2")}
    assert check_vim131(data, TRAIN, {"a": frozenset({"t0", "t1"}), "b": {"t2", "h"}}) == [
        v131_file("a", 2), v131("b", 1)]
    # a dataset the eval sets lack, or one with no prompts, is the rollout's doing
    assert check_vim131(data, TRAIN, {"a": frozenset()}) == [v131("a", 2), v131("b", 1)]
    assert check_vim131(data, TRAIN, {}) == [v131("a", 2), v131("b", 1)]
    assert check_vim131(data, TRAIN, None) == [v131("a", 2), v131("b", 1)]


def test_vim131_looks_a_name_up_as_its_str() -> None:
    data = {3: samples_of("t0")}
    assert check_vim131(data, TRAIN, {"3": {"t0"}}) == [v131_file(3, 1)]
