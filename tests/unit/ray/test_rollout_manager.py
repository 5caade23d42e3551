"""RolloutManagerCore without engines: hook loading, the generate/eval sequence, debug data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vime.contract.errors import ContractError
from vime.ray.rollout import RolloutManagerCore, load_hooks, needs_engines
from vime.utils.arguments import parse_args

pytestmark = pytest.mark.unit

HOOKS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "train_hooks"
TOY = "vime_toy_rollout"


@pytest.fixture(autouse=True)
def _toy_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HOOKS_DIR))


@pytest.fixture
def accepted(_toy_on_path: None) -> Iterator[list[int]]:
    """``vime_toy_rollout.ACCEPTED`` (the rollout ids whose ``on_accepted`` ran), empty at the
    start of the test and cleared after it: the module-level list outlives each test."""
    import vime_toy_rollout

    vime_toy_rollout.ACCEPTED.clear()
    yield vime_toy_rollout.ACCEPTED
    vime_toy_rollout.ACCEPTED.clear()


def make_args(tmp_path: Path, *extra: str) -> object:
    return parse_args(["--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                       "--num-rollout", "2", "--rollout-function-path",
                       f"{TOY}.generate_rollout", "--run-dir", str(tmp_path / "run"),
                       "--no-rollout-engines", *extra])


def test_generate_converts_and_reports_metrics(tmp_path: Path, accepted: list[int]) -> None:
    args = make_args(tmp_path)
    core = RolloutManagerCore(args)
    data, metrics = core.generate(0)
    assert data is not None
    assert data["tokens"] == [[11, 12, 13, 40, 41], [11, 12, 13, 41, 41]] * 2
    assert data["total_lengths"] == [5] * 4
    assert data["raw_reward"] == [0.0, 1.0, 0.0, 1.0]
    assert data["rewards"][1] > 0 > data["rewards"][0]
    assert data["sample_indices"] == [0, 1, 2, 3]
    assert metrics["rollout/toy/groups"] == 2
    assert metrics["rollout/raw_reward"] == 0.5
    assert metrics["perf/contract_check_time"] >= 0.0
    assert accepted == [0]  # on_accepted ran once, for this rollout
    core.shutdown()


def test_async_rollout_trains_only_the_groups_within_max_staleness(tmp_path: Path) -> None:
    """--async-rollout --max-staleness 2 at rollout 5: group 0 (lag 3) is dropped before
    conversion, group 1 (lag 1) is what trains; a manager that converted every returned group
    would give 4 rows and group 0's tokens."""
    args = make_args(tmp_path, "--rollout-function-path", f"{TOY}.stale_first_group",
                     "--async-rollout", "--use-rollout-logprobs", "--max-staleness", "2")
    core = RolloutManagerCore(args)
    data, metrics = core.generate(5)
    assert data is not None
    assert data["tokens"] == [[11, 12, 13, 50, 41], [11, 12, 13, 51, 41]]
    assert data["raw_reward"] == [0.0, 1.0]
    assert metrics["rollout/staleness/dropped_groups"] == 1.0
    assert metrics["rollout/staleness/lag_max"] == 3.0
    assert metrics["rollout/staleness/lag_mean"] == 2.0
    core.shutdown()
    # the same rollout within the bound (4 >= lag 3) trains both groups
    keep_all = RolloutManagerCore(make_args(
        tmp_path, "--rollout-function-path", f"{TOY}.stale_first_group", "--async-rollout",
        "--use-rollout-logprobs", "--max-staleness", "4"))
    data, metrics = keep_all.generate(5)
    assert data is not None and len(data["tokens"]) == 4
    assert metrics["rollout/staleness/dropped_groups"] == 0.0
    keep_all.shutdown()


def test_eval_metrics(tmp_path: Path) -> None:
    core = RolloutManagerCore(make_args(tmp_path))
    metrics = core.eval(3)
    assert metrics["eval/toy"] == 0.5
    assert metrics["eval/toy-truncated_ratio"] == 0.0


def test_debug_dump_then_load_gives_same_data(tmp_path: Path) -> None:
    dump = str(tmp_path / "dump" / "r{rollout_id}.pt")
    data, _ = RolloutManagerCore(make_args(tmp_path, "--save-debug-rollout-data", dump)).generate(0)
    assert (tmp_path / "dump" / "r0.pt").is_file()
    core = RolloutManagerCore(make_args(tmp_path, "--load-debug-rollout-data", dump,
                                        "--debug-train-only"))
    again, _ = core.generate(0)
    assert again == data
    assert core.eval(0) == {}
    with pytest.raises(FileNotFoundError, match=r"r5\.pt does not exist \(rollout_id=5\)"):
        core.generate(5)


def test_debug_rollout_only_returns_no_data(tmp_path: Path) -> None:
    data, metrics = RolloutManagerCore(make_args(tmp_path, "--debug-rollout-only")).generate(0)
    assert data is None and "rollout/raw_reward" in metrics


def test_custom_rollout_logger_true_skips_default_metrics(tmp_path: Path) -> None:
    args = make_args(tmp_path, "--custom-rollout-log-function-path", f"{TOY}.skip_default_log")
    _, metrics = RolloutManagerCore(args).generate(0)
    assert "rollout/raw_reward" not in metrics and metrics["rollout/toy/groups"] == 2


def test_contract_violation_raises_in_raise_mode(tmp_path: Path) -> None:
    args = make_args(tmp_path)
    args.rollout_function_path = f"{TOY}.broken_at_step_one"
    core = RolloutManagerCore(args)
    core.generate(0)
    with pytest.raises(ContractError) as err:
        core.generate(1)
    assert "VIM108" in str(err.value) and "loss_mask" in str(err.value)


def test_contract_violation_in_warn_mode_still_stops_at_conversion(tmp_path: Path) -> None:
    args = make_args(tmp_path, "--contract-check", "warn")
    args.rollout_function_path = f"{TOY}.broken_at_step_one"
    core = RolloutManagerCore(args)
    core.generate(0)
    with pytest.warns(UserWarning), pytest.raises(ContractError, match=r"VIM108 .*loss_mask \(index=5\) has 1 entries"):
        core.generate(1)


def test_hooks_are_loaded_and_checked_at_start(tmp_path: Path) -> None:
    args = make_args(tmp_path, "--custom-rollout-log-function-path", f"{TOY}.skip_default_log")
    hooks = load_hooks(args)
    assert {"rollout_function_path", "data_source_path", "buffer_filter_path",
            "custom_rollout_log_function_path"} <= set(hooks)
    args.rollout_function_path = f"{TOY}.old_signature"
    with pytest.raises(ContractError) as err:
        RolloutManagerCore(args)
    assert "VIM100" in str(err.value) and "--rollout-function-path" in str(err.value)
    assert "data_source" in str(err.value)


def test_needs_engines(tmp_path: Path) -> None:
    args = make_args(tmp_path)
    assert not needs_engines(args)
    args.rollout_engines = True
    assert needs_engines(args)
    args.rollout_function_path = "vime.rollout.sft_rollout.generate_rollout"
    assert not needs_engines(args)


def test_save_and_load_restore_data_source(tmp_path: Path) -> None:
    save = str(tmp_path / "ckpt")
    core = RolloutManagerCore(make_args(tmp_path, "--save", save))
    core.generate(0)
    core.save(0)
    expected, _ = core.generate(1)
    resumed = RolloutManagerCore(make_args(tmp_path, "--load", save))
    resumed.load(0)
    got, _ = resumed.generate(1)
    assert got is not None and expected is not None
    assert got["sample_indices"] == expected["sample_indices"] == [4, 5, 6, 7]
    with pytest.raises(FileNotFoundError, match="manager_state.pt is missing"):
        resumed.load(7)


def test_eval_on_training_prompts_warns_vim131_once(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    import json
    import logging

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"input": f"q{i}", "label": "1"}) + "\n"
                            for i in range(4)))
    core = RolloutManagerCore(make_args(tmp_path, "--prompt-data", str(data),
                                        "--contract-check", "warn"))
    with caplog.at_level(logging.WARNING, logger="vime.contract.checks"):
        core.eval(0)   # the toy rollout evaluates on data_source.get_samples: training prompts
    text = caplog.text
    assert text.count("VIM131 warning: data['toy']['samples'] are 4 samples whose prompts are "
                      "all training prompts") == 1, text
    assert "data_source.eval_datasets()" in text
    core.shutdown()
