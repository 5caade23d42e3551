"""vime.rollout.sft_rollout: train and eval branches on a locally built tokenizer."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from vime.contract.errors import ContractError
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput, call_rollout_fn
from vime.rollout.data_source import RolloutDataSourceWithBuffer
from vime.rollout.sft_rollout import generate_rollout
from vime.utils.arguments import SFT_ROLLOUT_PATH, parse_args
from vime.utils.types import Sample

pytestmark = pytest.mark.unit

TOOLS = [{"type": "function", "function": {"name": "calculator"}}]


def _conversation(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"Compute {i} + {i}."},
        {"role": "assistant", "content": f"The answer is {2 * i}."},
        {"role": "user", "content": "Thank you"},
        {"role": "assistant", "content": "You are very welcome."},
    ]


def _write(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _args(tmp_path: Path, tokenizer_dir: Path, *extra: str) -> Namespace:
    train = _write(tmp_path / "sft.jsonl",
                   [{"messages": _conversation(i), "metadata": {"tools": TOOLS} if i == 1 else {}}
                    for i in range(5)])
    evals = _write(tmp_path / "eval.jsonl", [{"messages": _conversation(10 + i)}
                                             for i in range(3)])
    return parse_args([
        "--rollout-function-path", SFT_ROLLOUT_PATH, "--loss-type", "sft_loss",
        "--hf-checkpoint", str(tokenizer_dir), "--prompt-data", train, "--input-key", "messages",
        "--rollout-batch-size", "2", "--num-rollout", "2",
        "--eval-prompt-data", "chat", evals, "--eval-interval", "1", *extra])


def _trainable_text(tok: Any, sample: Sample) -> str:
    response = sample.tokens[len(sample.tokens) - sample.response_length:]
    assert sample.loss_mask is not None
    return tok.decode([t for t, b in zip(response, sample.loss_mask, strict=True) if b])


def test_train_branch(tmp_path: Path, chatml_tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(chatml_tokenizer_dir)
    args = _args(tmp_path, chatml_tokenizer_dir)
    data_source = RolloutDataSourceWithBuffer(args)
    out = call_rollout_fn(generate_rollout, args, 0, data_source, evaluation=False)
    assert isinstance(out, RolloutFnTrainOutput) and out.finalized
    assert [len(g) for g in out.samples] == [1, 1]
    for g, group in enumerate(out.samples):
        sample = group[0]
        assert isinstance(sample, Sample)
        messages = _conversation(g)
        full = tok.apply_chat_template(messages, tokenize=False,
                                       tools=TOOLS if g == 1 else None)
        assert tok.decode(sample.tokens) == full
        assert sample.loss_mask is not None and len(sample.loss_mask) == sample.response_length
        assert sample.loss_mask[0] == 1  # the response starts at the first trainable token
        assert _trainable_text(tok, sample) == (
            f"The answer is {2 * g}.<|im_end|>\nYou are very welcome.<|im_end|>\n")
        assert sample.response.startswith(f"The answer is {2 * g}.")
        assert (sample.reward, sample.status) == (0.0, Sample.Status.COMPLETED)
        assert sample.rollout_log_probs is None and (sample.group_index, sample.index) == (g, g)
    assert "calculator" in tok.decode(out.samples[1][0].tokens)
    mean = sum(sum(g[0].loss_mask or []) for g in out.samples) / 2
    assert out.metrics == {"rollout/sft/trainable_tokens_mean": mean}


def test_eval_branch_does_not_touch_data_source(tmp_path: Path,
                                                chatml_tokenizer_dir: Path) -> None:
    args = _args(tmp_path, chatml_tokenizer_dir)
    data_source = RolloutDataSourceWithBuffer(args)
    out = call_rollout_fn(generate_rollout, args, 0, data_source, evaluation=True)
    assert isinstance(out, RolloutFnEvalOutput) and list(out.data) == ["chat"]
    entry = out.data["chat"]
    assert entry["rewards"] == [0.0] * 3 and entry["truncated"] == [False] * 3
    assert [s.index for s in entry["samples"]] == [0, 1, 2]
    assert all(s.loss_mask and s.status is Sample.Status.COMPLETED for s in entry["samples"])
    assert (data_source.sample_index, data_source.sample_offset) == (0, 0)
    again = call_rollout_fn(generate_rollout, args, 1, data_source, evaluation=True)
    assert [s.tokens for s in again.data["chat"]["samples"]] == \
        [s.tokens for s in entry["samples"]]
    assert again.data["chat"]["samples"][0] is not entry["samples"][0]


def test_eval_without_datasets_is_empty(tmp_path: Path, chatml_tokenizer_dir: Path) -> None:
    args = _args(tmp_path, chatml_tokenizer_dir)
    args.eval_datasets = []
    out = generate_rollout(args, 0, None, evaluation=True)
    assert isinstance(out, RolloutFnEvalOutput) and out.data == {}


def test_output_passes_runtime_checker(tmp_path: Path, chatml_tokenizer_dir: Path) -> None:
    from vime_lint.runtime import validate_rollout_output

    args = _args(tmp_path, chatml_tokenizer_dir)
    data_source = RolloutDataSourceWithBuffer(args)
    for evaluation in (False, True):
        out = call_rollout_fn(generate_rollout, args, 0, data_source, evaluation=evaluation)
        found = validate_rollout_output(out, args, evaluation=evaluation,
                                        hook_path=SFT_ROLLOUT_PATH, rollout_id=0)
        assert [v for v in found if v.severity == "error"] == []


def test_sft_argument_requirements(tmp_path: Path, chatml_tokenizer_dir: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _args(tmp_path, chatml_tokenizer_dir, "--n-samples-per-prompt", "2")
    assert "argument --n-samples-per-prompt: the SFT rollout" in capsys.readouterr().err
    args = _args(tmp_path, chatml_tokenizer_dir)
    args.n_samples_per_prompt = 2
    with pytest.raises(ContractError, match="needs --n-samples-per-prompt 1, got 2"):
        generate_rollout(args, 0, None)
    args = _args(tmp_path, chatml_tokenizer_dir)
    args.apply_chat_template = True
    with pytest.raises(ContractError, match="remove --apply-chat-template"):
        generate_rollout(args, 0, None)


def test_bad_conversations_name_the_sample(tmp_path: Path, chatml_tokenizer_dir: Path) -> None:
    args = _args(tmp_path, chatml_tokenizer_dir)
    args.prompt_data = _write(tmp_path / "bad.jsonl", [
        {"messages": _conversation(0)},
        {"messages": [{"role": "user", "content": "no answer"}]},
    ])
    with pytest.raises(ContractError, match=r"samples\[1\]\[0\] \(index=1\): the conversation "
                                            "has no trainable token"):
        generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))
    args.prompt_data = _write(tmp_path / "str.jsonl", [{"messages": "just text"}] * 2)
    with pytest.raises(ContractError, match=r"samples\[0\]\[0\] \(index=0\): prompt is a str"):
        generate_rollout(args, 0, RolloutDataSourceWithBuffer(args))


def test_sft_rollout_lints_clean() -> None:
    import vime.rollout.sft_rollout as module
    from vime_lint.static._engine import lint_source
    from vime_lint.static.rules import ALL_RULES

    path = module.__file__
    assert path is not None
    result = lint_source(Path(path).read_text(), path, rules=ALL_RULES)
    assert result.failure is None
    assert [f"{f.code} {f.line}: {f.message}" for f in result.findings] == []
