"""The examples' pure parts, their load-time signature checks, and vime-lint on examples/."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import warnings
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # `examples` is a folder of the repository, not a package
    sys.path.insert(0, str(ROOT))

from examples import calculator_rollout as calc  # noqa: E402
from examples.answer_prefix_generate import PREFIX, add_prefix  # noqa: E402
from examples.demo.shuffled_rewards import reward_post_process  # noqa: E402
from examples.format_reward import format_reward, reward_func  # noqa: E402
from examples.informative_groups_filter import dynamic_sampling_filter  # noqa: E402
from vime.contract.errors import ContractError  # noqa: E402
from vime.utils.misc import load_function  # noqa: E402
from vime.utils.types import Sample  # noqa: E402
from vime_lint.runtime import check_generate_result  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from vime.utils.tiny_model import build_tokenizer

    return build_tokenizer()


# ---- format_reward -----------------------------------------------------------------------------

@pytest.mark.parametrize(("response", "label", "expected"), [
    ("The answer is 85.", "85", 1.0),
    ("The answer is 85.<|im_end|>\n", "85", 1.0),
    ("The answer is -7.", "-7", 1.0),
    ("85, I think", "85", 0.5),
    ("The answer is 85!", "85", 0.5),
    ("The answer is 84.", "85", 0.0),
    ("", "85", 0.0),
])
def test_format_reward_grades_number_and_form(response: str, label: str, expected: float) -> None:
    assert format_reward(response, label) == expected


def test_format_reward_without_label_names_the_argument() -> None:
    with pytest.raises(ValueError, match="--label-key"):
        format_reward("The answer is 1.", None)


def test_reward_func_is_async_and_reads_the_sample() -> None:
    sample = Sample(response="The answer is 12.", label="12")
    assert asyncio.run(reward_func(Namespace(), sample)) == 1.0


# ---- dynamic_sampling_filter -------------------------------------------------------------------

def _group(rewards: list[float], truncated: int = 0) -> list[Sample]:
    return [Sample(index=i, reward=r, status=Sample.Status.TRUNCATED if i < truncated
                   else Sample.Status.COMPLETED) for i, r in enumerate(rewards)]


def test_filter_keeps_a_group_with_reward_spread() -> None:
    out = dynamic_sampling_filter(Namespace(reward_key=None), _group([1.0, 0.0, 1.0, 1.0]))
    assert out.keep and out.reason is None


@pytest.mark.parametrize(("rewards", "reason"), [([0.0] * 4, "zero_std_0.0"),
                                                 ([1.0] * 4, "zero_std_1.0")])
def test_filter_drops_equal_rewards_with_reason(rewards: list[float], reason: str) -> None:
    out = dynamic_sampling_filter(Namespace(reward_key=None), _group(rewards))
    assert not out.keep and out.reason == reason


def test_filter_drops_mostly_truncated_groups() -> None:
    out = dynamic_sampling_filter(Namespace(reward_key=None), _group([1.0, 0.0, 1.0, 0.0], 3))
    assert not out.keep and out.reason == "mostly_truncated"


def test_filter_counts_fan_out_leaves_and_reads_dict_rewards() -> None:
    group: list[Any] = [[Sample(index=0, reward={"acc": 1.0}), Sample(index=1, reward={"acc": 1.0})],
                        [Sample(index=2, reward={"acc": 0.0})]]
    assert dynamic_sampling_filter(Namespace(reward_key="acc"), group).keep


def test_filter_rejects_dict_reward_without_reward_key() -> None:
    with pytest.raises(ContractError, match="VIM110"):
        dynamic_sampling_filter(Namespace(reward_key=None),
                                [Sample(index=0, reward={"acc": 1.0}),
                                 Sample(index=1, reward={"acc": 0.0})])


# ---- calculator --------------------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "expected"), [
    ("37+48", "85"), ("12 * (3 - 5)", "-24"), ("-4 // 3", "-2"), ("17 % 5", "2"),
])
def test_calculate_integer_arithmetic(expression: str, expected: str) -> None:
    assert calc.calculate(expression) == expected


@pytest.mark.parametrize("expression", ["__import__('os')", "2 ** 10", "1 / 2", "1.5 + 1",
                                        "1 // 0", "10**20", "99999999 * 99999999", "x + 1"])
def test_calculate_refuses_anything_else(expression: str) -> None:
    assert calc.calculate(expression).startswith("error: ")


@pytest.mark.parametrize(("response", "expected"), [
    ("<calc>37+48</calc>", "37+48"),
    ("Let me see. <calc>2*3</calc>\n", "2*3"),
    ("<calc>1+1</calc><result>2</result>The answer is 2.", None),
    ("The answer is 85.<|im_end|>", None),
    ("<calc>" + "1+" * 40 + "1</calc>", None),
])
def test_find_tool_call_only_at_the_end(response: str, expected: str | None) -> None:
    assert calc.find_tool_call(response) == expected


class ScriptedModel:
    """A model turn that appends scripted texts as trainable tokens (log-prob -0.5 each)."""

    def __init__(self, tokenizer: Any, turns: list[str], prompt: str) -> None:
        self.tokenizer, self.turns, self.prompt = tokenizer, list(turns), prompt
        self.params: list[dict[str, Any]] = []

    async def __call__(self, args: Namespace, sample: Sample,
                       sampling_params: dict[str, Any]) -> Sample:
        assert sample.status in (Sample.Status.PENDING, Sample.Status.ABORTED)
        self.params.append(sampling_params)
        if not sample.tokens:
            sample.tokens = self.tokenizer.encode(self.prompt, add_special_tokens=False)
        text = self.turns.pop(0)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        sample.append_response_tokens(args, tokens=ids, log_probs=[-0.5] * len(ids), text=text,
                                      meta_info={"finish_reason": {"type": "stop"}})
        return sample


def _episode(tokenizer: Any, turns: list[str], max_tokens: int = 64
             ) -> tuple[Sample, ScriptedModel]:
    prompt = "<|im_start|>user\nWhat is 37+48?<|im_end|>\n<|im_start|>assistant\n"
    model = ScriptedModel(tokenizer, turns, prompt)
    sample = Sample(index=0, group_index=0, prompt=prompt, label="85")
    args = Namespace(vllm_speculative_config=None)
    out = asyncio.run(calc.run_episode(args, sample, {"max_tokens": max_tokens}, model,
                                       tokenizer))
    return out, model


def test_episode_answers_a_tool_call_with_untrained_tokens(tokenizer: Any) -> None:
    sample, model = _episode(tokenizer, ["<calc>37+48</calc>", "The answer is 85.<|im_end|>"])
    assert sample.response == "<calc>37+48</calc><result>85</result>The answer is 85.<|im_end|>"
    assert sample.status == Sample.Status.COMPLETED
    assert sample.metadata["tool_calls"] == 1
    n_call = len(tokenizer.encode("<calc>37+48</calc>", add_special_tokens=False))
    n_result = len(tokenizer.encode("<result>85</result>", add_special_tokens=False))
    assert sample.loss_mask is not None and sample.rollout_log_probs is not None
    assert sample.loss_mask[:n_call] == [1] * n_call
    assert sample.loss_mask[n_call:n_call + n_result] == [0] * n_result
    assert sample.rollout_log_probs[n_call:n_call + n_result] == [0.0] * n_result
    assert len(sample.loss_mask) == sample.response_length == len(sample.rollout_log_probs)
    assert all(calc.CALL_END in p["stop"] for p in model.params)
    # the runtime checker's generate boundary (B2) accepts the result
    assert check_generate_result(Sample.Status.PENDING, sample,
                                 Namespace(contract_check="raise")) == []


def test_episode_stops_before_a_tool_result_that_overruns_the_budget(tokenizer: Any) -> None:
    prompt = "<|im_start|>user\nWhat is 37+48?<|im_end|>\n<|im_start|>assistant\n"
    call = "<calc>37+48</calc>"
    n_call = len(tokenizer.encode(call, add_special_tokens=False))
    model = ScriptedModel(tokenizer, [call, "never"], prompt)
    sample = Sample(index=0, group_index=0, prompt=prompt, label="85")
    args = Namespace(vllm_speculative_config=None)
    out = asyncio.run(calc.run_episode(args, sample, {"max_tokens": n_call + 3}, model,
                                       tokenizer))
    assert out.response == call and out.status == Sample.Status.TRUNCATED
    assert out.metadata["tool_calls"] == 0 and out.response_length == n_call


def test_episode_stops_after_max_tool_calls(tokenizer: Any) -> None:
    turns = ["<calc>1+1</calc>"] * (calc.MAX_TOOL_CALLS + 1)
    sample, model = _episode(tokenizer, turns, max_tokens=256)   # room for every result
    assert sample.metadata["tool_calls"] == calc.MAX_TOOL_CALLS
    assert sample.response.endswith("<calc>1+1</calc>") and not model.turns


def test_episode_without_a_call_is_one_turn(tokenizer: Any) -> None:
    sample, _ = _episode(tokenizer, ["The answer is 85.<|im_end|>"])
    assert sample.metadata["tool_calls"] == 0 and sample.loss_mask is None


# ---- answer prefix -----------------------------------------------------------------------------

def test_add_prefix_appends_environment_tokens(tokenizer: Any) -> None:
    sample = Sample(index=3, prompt="<|im_start|>user\n2+2=<|im_end|>\n<|im_start|>assistant\n")
    add_prefix(Namespace(vllm_speculative_config=None), sample, tokenizer)
    n = len(tokenizer.encode(PREFIX, add_special_tokens=False))
    assert sample.response == PREFIX and sample.response_length == n
    assert sample.loss_mask == [0] * n and sample.rollout_log_probs == [0.0] * n
    assert sample.status == Sample.Status.PENDING
    assert tokenizer.decode(sample.tokens) == sample.prompt + PREFIX


@pytest.mark.parametrize(("sample", "match"), [
    (Sample(index=1, prompt=[{"role": "user", "content": "hi"}]), "--apply-chat-template"),
    (Sample(index=2, prompt="x", tokens=[1, 2]), "fresh sample"),
])
def test_add_prefix_rejects_bad_input_with_index(tokenizer: Any, sample: Sample,
                                                 match: str) -> None:
    with pytest.raises(ValueError, match=match) as info:
        add_prefix(Namespace(), sample, tokenizer)
    assert f"index={sample.index}" in str(info.value)


# ---- shuffled_rewards (the demo's control) ------------------------------------------------------

def _scored(rewards: list[float], n: int) -> list[Sample]:
    return [Sample(index=i, group_index=i // n, reward=r) for i, r in enumerate(rewards)]


def test_shuffled_rewards_keep_the_raw_ones_and_train_on_a_permutation() -> None:
    rewards = [1.0, 0.0, 0.0, 0.0] * 4 + [1.0, 1.0, 0.0, 0.0] * 4  # 8 groups of 4
    args = Namespace(reward_key=None, grpo_std_normalization=True)
    raw, trained = reward_post_process(args, _scored(rewards, 4))
    assert raw == rewards  # logged: what the policy really earned
    assert len(trained) == len(rewards)
    for g in range(8):  # normalised per group: zero mean
        assert sum(trained[4 * g:4 * g + 4]) == pytest.approx(0.0, abs=1e-5)
    first = [trained[4 * g] for g in range(4)]  # groups 0-3 had their 1.0 first
    assert first != [pytest.approx(1.5)] * 4  # ... the shuffle moved it (seeded, 32 samples)


def test_shuffled_rewards_keep_the_built_in_reward_checks() -> None:
    samples = _scored([1.0, 0.0], 2)
    samples[1].reward = None
    with pytest.raises(ContractError, match="VIM110.*index=1"):
        reward_post_process(Namespace(reward_key=None), samples)


# ---- load-time signature check (VIM100) and the linter -----------------------------------------

@pytest.mark.parametrize(("path", "hook"), [
    ("examples.calculator_rollout.generate_rollout", "rollout_function_path"),
    ("examples.calculator_rollout.generate", "custom_generate_function_path"),
    ("examples.answer_prefix_generate.generate", "custom_generate_function_path"),
    ("examples.format_reward.reward_func", "custom_rm_path"),
    ("examples.informative_groups_filter.dynamic_sampling_filter",
     "dynamic_sampling_filter_path"),
    ("examples.demo.shuffled_rewards.reward_post_process", "custom_reward_post_process_path"),
])
def test_examples_pass_the_load_time_check(path: str, hook: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert callable(load_function(path, hook=hook))


def _lint(*targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vime_lint", "rollout", *targets], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_lint_is_clean_on_the_correct_examples() -> None:
    proc = _lint("examples", "--extend-exclude", "examples/broken")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "VIM" not in proc.stdout


def test_lint_reports_every_broken_example() -> None:
    proc = _lint("examples/broken")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    broken = sorted((ROOT / "examples" / "broken").glob("*.py"))
    assert broken
    for path in broken:
        assert f"examples/broken/{path.name}:" in proc.stdout, f"no finding in {path.name}"
    for vim_id in ("VIM001", "VIM002", "VIM004", "VIM005", "VIM006", "VIM007", "VIM008",
                   "VIM010", "VIM011", "VIM012", "VIM013", "VIM014", "VIM016"):
        assert vim_id in proc.stdout


def test_broken_readme_shows_what_the_linter_reports() -> None:
    """Every `file:line:col: VIMxxx` line quoted in examples/broken/README.md is still
    reported at that position, and nothing reported is missing from the README."""
    import re

    readme = (ROOT / "examples" / "broken" / "README.md").read_text()
    quoted = set(re.findall(r"^(examples/broken/\S+:\d+:\d+: VIM\d{3})", readme, re.M))
    proc = _lint("examples/broken")
    reported = set(re.findall(r"^(examples/broken/\S+:\d+:\d+: VIM\d{3})", proc.stdout, re.M))
    assert quoted == reported


def test_the_broken_examples_readme_shows_what_the_linter_prints() -> None:
    readme = (ROOT / "examples" / "broken" / "README.md").read_text()
    shown = readme.split("```text\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-m", "vime_lint", "rollout", "examples/broken",
                           "--no-cache", "--no-show-fixes"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout + proc.stderr == shown   # regenerate the block with the same command
    found = shown.splitlines()[-2].split()[1]
    readme_row = f"| lint ({found} findings in the 4 broken files, none in the correct examples)"
    assert readme_row in (ROOT / "README.md").read_text()
