"""vime.utils.arguments and vime.config.eval_config: defaults, hooks, validation, config files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from vime.config.eval_config import EvalDatasetConfig
from vime.contract import HOOKS
from vime.utils.arguments import (
    UNSUPPORTED_ARGS,
    get_parser,
    parse_args,
)

pytestmark = pytest.mark.unit

BASE = ["--rollout-batch-size", "4", "--num-rollout", "3"]


def _error(capsys: pytest.CaptureFixture[str], argv: list[str], **kw: bool) -> str:
    with pytest.raises(SystemExit) as info:
        parse_args(argv, **kw)
    assert info.value.code == 2
    return capsys.readouterr().err


# ---- defaults ---------------------------------------------------------------------------------

def test_contract_defaults_spot_checks() -> None:
    args = parse_args(BASE)
    expected = {
        "n_samples_per_prompt": 1, "over_sampling_batch_size": 4, "micro_batch_size": 1,
        "input_key": "input", "label_key": None, "metadata_key": "metadata", "tool_key": "tools",
        "apply_chat_template": False, "apply_chat_template_kwargs": {},
        "rollout_global_dataset": True, "rollout_temperature": 1.0, "rollout_top_p": 1.0,
        "rollout_top_k": -1, "rollout_seed": 42, "rollout_shuffle": False,
        "n_samples_per_eval_prompt": 1, "advantage_estimator": "grpo",
        "rewards_normalization": True, "loss_type": "policy_loss", "loss_mask_type": "qwen",
        "rollout_num_gpus_per_engine": 1, "num_gpus_per_node": 8,
        "router_policy": "consistent_hash", "router_request_timeout_secs": 14400,
        "vllm_server_concurrency": 512, "contract_check": "raise", "contract_check_interval": 1,
        "debug_rollout_only": False, "vllm_extra_args": {}, "eval_datasets": [],
        "lr": 1e-6, "lr_decay_style": "constant", "clip_grad": 1.0, "adam_beta2": 0.999,
        "eps_clip": 0.2, "eps_clip_high": None, "seed": 1234, "train_device": "cpu",
        "save": None, "load": None, "tis_clip": 2.0, "score_centering_top_k": 128,
        "rollout_data_transport": "object-store", "flush_cache_interval": 1,
    }
    for dest, value in expected.items():
        assert getattr(args, dest) == value, dest
    assert args.run_dir.startswith("runs/") and "{time}" not in args.run_dir


def test_global_batch_size_and_std_normalization_derived() -> None:
    args = parse_args(BASE + ["--n-samples-per-prompt", "8", "--num-steps-per-rollout", "2"])
    assert args.global_batch_size == 16 and args.num_steps_per_rollout == 2
    assert args.grpo_std_normalization is True
    args = parse_args(BASE + ["--n-samples-per-prompt", "8", "--global-batch-size", "8"])
    assert args.num_steps_per_rollout == 4
    args = parse_args(BASE)  # n == 1: forced off
    assert args.grpo_std_normalization is False and args.global_batch_size == 4


def test_validate_args_is_idempotent() -> None:
    from vime.utils.arguments import validate_args

    args = parse_args(BASE + ["--n-samples-per-prompt", "5", "--global-batch-size", "6",
                              "--buffer-sort-by-staleness", "--eval-prompt-data", "e.jsonl"])
    assert (args.global_batch_size, args.num_steps_per_rollout) == (6, 3)
    before = dict(vars(args))
    assert vars(validate_args(args)) == before


def test_every_hook_has_its_generated_argument() -> None:
    actions = {a.dest: a for a in get_parser()._actions}
    args = parse_args(BASE)
    for dest, spec in HOOKS.items():
        action = actions[dest]
        assert spec.arg in action.option_strings
        if spec.multiple:
            assert isinstance(action, argparse._AppendAction)
            assert getattr(args, dest) == []
        else:
            assert getattr(args, dest) == spec.default
    hook = next(s for s in HOOKS.values() if s.multiple)
    args = parse_args(BASE + [hook.arg, "a.b", hook.arg, "c.d"])
    assert getattr(args, hook.dest) == ["a.b", "c.d"]
    assert parse_args(BASE).__dict__[hook.dest] == []  # the default list is not shared


# ---- validation errors name the argument ----------------------------------------------------------

@pytest.mark.parametrize(("extra", "needle"), [
    (["--rollout-temperature", "0"], "argument --rollout-temperature: must be > 0, got 0"),
    (["--over-sampling-batch-size", "2"],
     "argument --over-sampling-batch-size: must be >= --rollout-batch-size (4), got 2"),
    (["--debug-rollout-only", "--debug-train-only"], "argument --debug-train-only"),
    (["--rollout-top-p", "1.5"], "argument --rollout-top-p: must be in (0, 1], got 1.5"),
    (["--n-samples-per-prompt", "0"], "argument --n-samples-per-prompt: must be >= 1, got 0"),
    (["--eval-interval", "5"], "argument --eval-interval: needs --eval-prompt-data"),
    (["--global-batch-size", "3", "--num-steps-per-rollout", "2"],
     "argument --global-batch-size: 3 with --num-steps-per-rollout 2 does not fit"),
    (["--apply-chat-template-kwargs", "[1]"],
     "argument --apply-chat-template-kwargs: expected a JSON object"),
    (["--eval-prompt-data", "a", "a.jsonl", "b"], "argument --eval-prompt-data: expected `name"),
    (["--rollout-function-path", "vime.rollout.sft_rollout.generate_rollout",
      "--n-samples-per-prompt", "2"], "argument --n-samples-per-prompt: the SFT rollout"),
    (["--async-rollout", "--use-rollout-logprobs", "--single-process"],
     "argument --async-rollout: needs the rollout manager and the trainer as Ray actors"),
    (["--async-rollout"], "argument --async-rollout: needs --use-rollout-logprobs"),
    (["--async-rollout", "--use-rollout-logprobs", "--max-staleness", "0"],
     "argument --max-staleness: must be >= 1, got 0"),
])
def test_validation_errors_name_the_argument(capsys: pytest.CaptureFixture[str],
                                             extra: list[str], needle: str) -> None:
    err = _error(capsys, BASE + extra)
    assert "vime train: error: " + needle in err


def test_valid_edge_values_pass() -> None:
    args = parse_args(BASE + ["--over-sampling-batch-size", "4", "--rollout-top-p", "1",
                              "--rollout-temperature", "0.01", "--rollout-top-k", "0"])
    assert args.over_sampling_batch_size == 4 and args.rollout_temperature == 0.01


def test_num_rollout_required_unless_tool(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, ["--rollout-batch-size", "4"])
    assert "argument --num-rollout: one of --num-rollout and --num-epoch is required" in err
    assert parse_args(["--rollout-batch-size", "4"], training=False).num_rollout is None
    assert parse_args(["--rollout-batch-size", "4", "--num-epoch", "1"]).num_epoch == 1
    err = _error(capsys, ["--num-rollout", "1"])
    assert "argument --rollout-batch-size: is required" in err


@pytest.mark.parametrize(("extra", "name"), [
    (["--rollout-data-transport", "shm"], "--rollout-data-transport"),
    (["--vllm-config", "x.yaml"], "--vllm-config"),
    (["--advantage-estimator", "ppo"], "--advantage-estimator"),
    (["--loss-mask-type", "distill_qwen"], "--loss-mask-type"),
    (["--vllm-router-policy", "random"], "--vllm-router-policy"),
])
def test_unsupported_arguments_raise_not_implemented(extra: list[str], name: str) -> None:
    with pytest.raises(NotImplementedError, match=f"argument {name}"):
        parse_args(BASE + extra)


def test_unsupported_arguments_at_default_pass() -> None:
    args = parse_args(BASE + ["--tis-clip", "2.0", "--advantage-estimator", "gspo",
                              "--vllm-router-policy", "round_robin"])
    for dest, value in UNSUPPORTED_ARGS.items():
        assert getattr(args, dest) == value


# ---- vLLM passthrough -------------------------------------------------------------------------------

def test_vllm_passthrough_collects_values_and_flags() -> None:
    args = parse_args(BASE + ["--vllm-max-model-len", "512", "--vllm-enforce-eager",
                              "--vllm-dtype=float32", "--vllm-seed", "-1",
                              "--vllm-server-concurrency", "8"])
    assert args.vllm_extra_args == {"max-model-len": "512", "enforce-eager": True,
                                    "dtype": "float32", "seed": "-1"}
    assert args.vllm_server_concurrency == 8  # a known --vllm-* argument is not passed through


def test_unknown_argument_is_an_error_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(capsys, BASE + ["--rollout-temprature", "0.5"])
    assert "unrecognized argument '--rollout-temprature'" in err


# ---- config files ---------------------------------------------------------------------------------

def test_config_file_supplies_arguments_and_command_line_wins(tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text("rollout-batch-size: 8\nnum_rollout: 2\nrollout_seed: 5\n"
                   "disable-rollout-global-dataset: true\nrollout_stop: ['</s>']\n"
                   "rollout-temperature: 1\nvllm-max-model-len: 256\n"
                   "apply_chat_template_kwargs: {enable_thinking: false}\n")
    args = parse_args(["--config", str(cfg), "--rollout-seed", "7"])
    assert args.rollout_batch_size == 8 and args.num_rollout == 2
    assert args.rollout_seed == 7  # command line wins
    assert args.rollout_global_dataset is False
    assert args.rollout_stop == ["</s>"] and args.rollout_temperature == 1.0
    assert args.apply_chat_template_kwargs == {"enable_thinking": False}
    assert args.vllm_extra_args == {"max-model-len": "256"}
    assert args.config == str(cfg)


@pytest.mark.parametrize(("text", "needle"), [
    ("rollout_batch_sise: 8\n", "unknown key 'rollout_batch_sise' in {f}; did you mean"),
    ("rollout_batch_size: eight\n", "key 'rollout_batch_size' in {f}: invalid literal"),
    ("rollout_shuffle: 1\n", "key 'rollout_shuffle' in {f}: expected true or false"),
    ("advantage_estimator: foo\n", "key 'advantage_estimator' in {f}: invalid choice 'foo'"),
])
def test_config_file_errors_name_key_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, needle: str) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    err = _error(capsys, ["--config", str(cfg)] + BASE)
    assert "argument --config: " + needle.format(f=cfg) in err


def test_custom_config_path_sets_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "custom.yaml"
    cfg.write_text("my_threshold: 0.5\n")
    assert parse_args(BASE + ["--custom-config-path", str(cfg)]).my_threshold == 0.5


# ---- eval datasets --------------------------------------------------------------------------------

def test_eval_prompt_data_pairs_and_lone_path() -> None:
    args = parse_args(BASE + ["--eval-prompt-data", "e.jsonl", "--rollout-temperature", "0.7"])
    assert [(d.name, d.path) for d in args.eval_datasets] == [("aime", "e.jsonl")]
    assert args.eval_datasets[0].temperature == 0.7
    args = parse_args(BASE + ["--eval-prompt-data", "gsm", "g.jsonl", "math", "m.jsonl",
                              "--eval-temperature", "0.3", "--eval-input-key", "q"])
    assert [(d.name, d.path) for d in args.eval_datasets] == [("gsm", "g.jsonl"),
                                                              ("math", "m.jsonl")]
    assert all(d.temperature == 0.3 and d.input_key == "q" for d in args.eval_datasets)
    assert all(isinstance(d, EvalDatasetConfig) for d in args.eval_datasets)


def test_eval_config_resolution_order(tmp_path: Path) -> None:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(
        "eval:\n"
        "  defaults: {n_samples_per_eval_prompt: 4, temperature: 0.5, max_response_len: 64}\n"
        "  datasets:\n"
        "    - {name: a, path: a.jsonl, temperature: 0.9, metadata_overrides: {k: v}}\n"
        "    - {name: b, path: b.jsonl, rm_type: math}\n"
    )
    args = parse_args(BASE + ["--eval-config", str(cfg), "--eval-prompt-data", "ignored.jsonl",
                              "--eval-top-p", "0.8", "--rm-type", "f1"])
    a, b = args.eval_datasets
    assert (a.name, a.temperature, a.n_samples_per_eval_prompt, a.max_response_len) == \
        ("a", 0.9, 4, 64)
    assert (b.name, b.temperature, b.top_p, b.rm_type) == ("b", 0.5, 0.8, "math")
    assert a.rm_type == "f1" and a.metadata_overrides == {"k": "v"} and a.no_stop_trim is True


@pytest.mark.parametrize(("text", "needle"), [
    ("eval:\n  datasets:\n    - {name: a, path: a.jsonl, temprature: 1}\n",
     "unknown key 'temprature' in {f} (eval.datasets[0]); did you mean 'temperature'?"),
    ("eval:\n  defaults: {bogus: 1}\n", "unknown key 'bogus' in {f} (eval.defaults)"),
    ("eval:\n  extra: 1\n", "unknown key 'eval.extra' in {f}"),
    ("evals: {}\n", "{f}: expected a top-level `eval:` mapping"),
    ("eval:\n  datasets:\n    - {path: a.jsonl}\n", "{f} (eval.datasets[0]) has no 'name'"),
])
def test_eval_config_errors_name_key_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              text: str, needle: str) -> None:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(text)
    err = _error(capsys, BASE + ["--eval-config", str(cfg)])
    assert "argument --eval-config: " + needle.format(f=cfg) in err


def test_eval_config_unsupported_key_not_implemented(tmp_path: Path) -> None:
    cfg = tmp_path / "eval.yaml"
    cfg.write_text("eval:\n  defaults: {eval_early_stop_patience: 3}\n")
    with pytest.raises(NotImplementedError, match="eval_early_stop_patience"):
        parse_args(BASE + ["--eval-config", str(cfg)])


def test_parser_defaults_are_values_not_strings() -> None:
    # Tools (vime-lint check) read parser defaults directly: typed defaults must be values.
    for action in get_parser()._actions:
        if action.type not in (None, str) and action.default is not None:
            assert not isinstance(action.default, str), action.dest
    kwargs = parse_args(BASE).apply_chat_template_kwargs
    kwargs["x"] = 1
    assert parse_args(BASE).apply_chat_template_kwargs == {}
