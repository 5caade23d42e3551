"""vime.contract.checks.settings on exact values: every field CheckSettings.from_args reads
(defaults, the values it keeps, the ones it drops to None), the argument errors, and
CheckContext's names."""

from __future__ import annotations

from argparse import Namespace

import pytest

from vime.contract.checks.settings import CheckContext, CheckSettings

pytestmark = pytest.mark.unit


def test_defaults_from_an_empty_namespace():
    assert CheckSettings.from_args(Namespace()) == CheckSettings(loss_type="policy_loss")


def test_every_field_read():
    args = Namespace(
        contract_check="warn", contract_check_interval=3, n_samples_per_prompt=8,
        rollout_batch_size=4, reward_key="acc", eval_reward_key="eacc",
        use_rollout_logprobs=True, use_tis=False, get_mismatch_metrics=True,
        partial_rollout=1, rm_type="math", custom_rm_path="a.rm", label_key="answer",
        rollout_sample_filter_path="a.f", rollout_all_samples_process_path="a.p",
        eval_datasets=[{"name": "aime"}, Namespace(name="gsm8k"), {"x": 1}, Namespace(), 7],
        vocab_size=100, loss_type="sft_loss", rollout_max_response_len=64,
        rollout_max_context_len=128, rollout_max_prompt_len=32, advantage_estimator="ppo",
        rewards_normalization=False, custom_reward_post_process_path="a.pp",
        bos_token_id=1, eos_token_id=0, eos_token_text="</s>",
        rollout_stop_token_ids=[5, -1, True, 6, "7"])
    assert CheckSettings.from_args(args) == CheckSettings(
        n_samples_per_prompt=8, rollout_batch_size=4, reward_key="acc", eval_reward_key="eacc",
        logprob_flags=("--use-rollout-logprobs", "--get-mismatch-metrics"),
        partial_rollout=True, rm_type="math", custom_rm_path="a.rm", label_key="answer",
        rollout_sample_filter_path="a.f", rollout_all_samples_process_path="a.p",
        eval_dataset_names=("aime", "gsm8k"), vocab_size=100, loss_type="sft_loss",
        max_response_len=64, max_context_len=128, mode="warn", interval=3,
        max_prompt_len=32, advantage_estimator="ppo", rewards_normalization=False,
        custom_advantages=True, bos_token_id=1, eos_token_id=0, eos_token_text="</s>",
        stop_token_ids=(5, 6))


def test_values_dropped_to_their_default():
    args = Namespace(n_samples_per_prompt=0, reward_key="", eval_reward_key="", rm_type="",
                     custom_rm_path="", label_key="", rollout_sample_filter_path="",
                     rollout_all_samples_process_path="", eval_datasets=[], vocab_size=0,
                     rollout_max_response_len=0, rollout_max_context_len=True,
                     rollout_max_prompt_len="32", bos_token_id=-1, eos_token_id=True,
                     eos_token_text="", rollout_stop_token_ids=None,
                     custom_convert_samples_to_train_data_path="a.cv",
                     contract_check_interval=None)
    s = CheckSettings.from_args(args)
    assert s == CheckSettings(loss_type="policy_loss", custom_advantages=True)
    assert CheckSettings.from_args(Namespace(n_samples_per_prompt="4")).n_samples_per_prompt == 1
    assert CheckSettings.from_args(Namespace(n_samples_per_prompt=1)).n_samples_per_prompt == 1
    assert CheckSettings.from_args(Namespace(vocab_size="9")).vocab_size is None
    assert CheckSettings.from_args(Namespace(vocab_size=1)).vocab_size == 1
    assert CheckSettings.from_args(Namespace(rollout_max_response_len=1)).max_response_len == 1
    assert CheckSettings.from_args(Namespace(eos_token_text=3)).eos_token_text is None
    assert CheckSettings.from_args(Namespace(eval_datasets=None)).eval_dataset_names is None


@pytest.mark.parametrize("values, message", [
    ({"contract_check": "loud"}, "--contract-check='loud': expected one of off, warn, raise"),
    ({"contract_check": None}, "--contract-check=None: expected one of off, warn, raise"),
    ({"contract_check_interval": 0}, "--contract-check-interval=0: expected an int >= 1"),
    ({"contract_check_interval": True}, "--contract-check-interval=True: expected an int >= 1"),
    ({"contract_check_interval": "2"}, "--contract-check-interval='2': expected an int >= 1"),
])
def test_argument_errors(values, message):
    with pytest.raises(ValueError) as info:
        CheckSettings.from_args(Namespace(**values))
    assert str(info.value) == message


def test_interval_one_and_modes():
    assert CheckSettings.from_args(Namespace(contract_check_interval=1)).interval == 1
    for mode in ("off", "warn", "raise"):
        assert CheckSettings.from_args(Namespace(contract_check=mode)).mode == mode


def test_properties_and_eval_key():
    assert CheckSettings().logprobs_consumed is False
    assert CheckSettings(logprob_flags=("--use-tis",)).logprobs_consumed is True
    assert CheckSettings().rm_configured is False
    assert CheckSettings(rm_type="math").rm_configured is True
    assert CheckSettings(custom_rm_path="a.b").rm_configured is True
    assert CheckSettings(reward_key="a").eval_key() == "a"
    assert CheckSettings(reward_key="a", eval_reward_key="b").eval_key() == "b"
    assert CheckSettings().eval_key() is None


def test_check_context_names():
    ctx = CheckContext.for_hook("custom_rm_path", None, 3)
    assert ctx == CheckContext("custom_rm_path", "configured --custom-rm-path", 3)
    assert ctx.describe() == ("reward function `configured --custom-rm-path` (--custom-rm-path) "
                              "step 3")
    assert ctx.call_site == "custom_rm_path:configured --custom-rm-path"
    assert CheckContext.for_hook("rollout_function_path", "my.fn").rollout_id is None
    default = CheckContext.for_hook("rollout_function_path", None)
    assert default.name != "configured --rollout-function-path" and "." in default.name
    assert CheckContext("eval_function_path", "a.b", 0).describe() == (
        "eval rollout `a.b` (--eval-function-path) step 0")
    other = CheckContext("not_a_hook", "a.b")
    assert (other.arg, other.label, other.describe()) == ("not_a_hook", "not_a_hook",
                                                          "not_a_hook `a.b` (not_a_hook)")
