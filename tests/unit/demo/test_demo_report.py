"""The demo's report: per-step series, the summary numbers, the PNG, the eval config copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vime.demo.cli import main
from vime.demo.config import CONFIGS, QUICK, DemoPaths, Scale, StageResult
from vime.demo.report import report, summarize
from vime.demo.stages import _write_eval_config
from vime.utils.plot import metric_series, plot_run, read_metrics

pytestmark = pytest.mark.unit


def grpo_records(greedy: list[float], sampled: list[float], *, interval: int = 2,
                 rewards: list[float] | None = None) -> list[dict[str, Any]]:
    """Records as ``vime train`` writes them: a pre-training eval record, then one record per
    step, with an eval every ``interval`` steps (``greedy[0]`` is the pre-training eval)."""
    steps = (len(greedy) - 1) * interval
    rewards = rewards if rewards is not None else [0.1 * (i % 5) for i in range(steps)]
    records: list[dict[str, Any]] = [{"rollout_id": 0, "eval/greedy": greedy[0],
                                      "eval/sampled": sampled[0], "perf/eval_time": 3.0}]
    for r in range(steps):
        rec: dict[str, Any] = {"rollout_id": r, "rollout/raw_reward": rewards[r],
                               "train/loss": 0.1, "perf/step_time": 2.0}
        if (r + 1) % interval == 0:
            k = (r + 1) // interval
            rec.update({"eval/greedy": greedy[k], "eval/sampled": sampled[k]})
        records.append(rec)
    return records


def test_metric_series_places_evals_after_their_step() -> None:
    records = grpo_records([0.3, 0.4, 0.5], [0.1, 0.2, 0.3])
    assert metric_series(records, "eval/greedy") == [(0, 0.3), (2, 0.4), (4, 0.5)]
    assert [x for x, _ in metric_series(records, "rollout/raw_reward")] == [0, 1, 2, 3]


def test_metric_series_skips_missing_and_non_finite_values() -> None:
    records = [{"rollout_id": 0, "eval/greedy": None}, {"rollout_id": 1, "train/loss": 1.0,
                                                         "eval/greedy": True}]
    assert metric_series(records, "eval/greedy") == []


def test_metric_series_names_a_record_without_rollout_id() -> None:
    with pytest.raises(ValueError, match="metrics record 1 has rollout_id=None"):
        metric_series([{"rollout_id": 0, "x": 1.0}, {"x": 2.0}], "x")


def test_summarize_start_final_and_gain() -> None:
    records = grpo_records([0.30, 0.32, 0.40, 0.42, 0.44], [0.10, 0.1, 0.2, 0.2, 0.2])
    s = summarize(records)
    assert s["start_greedy"] == 0.30 and s["start_sampled"] == 0.10
    assert s["final_greedy"] == pytest.approx((0.40 + 0.42 + 0.44) / 3)
    assert s["gain_points"] == pytest.approx(100 * ((0.40 + 0.42 + 0.44) / 3 - 0.30))
    assert s["final_sampled"] == pytest.approx(0.2)
    assert s["evals"] == 4 and s["steps"] == 8 and s["step_seconds"] == 2.0


def test_summarize_with_fewer_evals_than_the_window() -> None:
    s = summarize(grpo_records([0.2, 0.25], [0.1, 0.1]))
    assert s["final_greedy"] == 0.25 and s["evals"] == 1


def test_summarize_without_records_is_all_none() -> None:
    s = summarize([])
    assert s["start_greedy"] is None and s["final_greedy"] is None and s["gain_points"] is None
    assert s["steps"] == 0 and s["reward_first"] is None


def test_summarize_reward_windows() -> None:
    rewards = [0.0] * 10 + [1.0] * 10
    s = summarize(grpo_records([0.1] * 11, [0.1] * 11, rewards=rewards))
    assert s["reward_first"] == 0.0 and s["reward_last"] == 1.0 and s["reward_window"] == 6
    short = summarize(grpo_records([0.1] * 6, [0.1] * 6, rewards=[0.0] * 5 + [1.0] * 5))
    assert (short["reward_window"], short["reward_first"], short["reward_last"]) == (3, 0.0, 1.0)


def test_plot_run_writes_a_png(tmp_path: Path) -> None:
    out = plot_run(grpo_records([0.3, 0.4, 0.5], [0.1, 0.2, 0.3]), tmp_path / "sub" / "p.png",
                   title="t")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_run_draws_the_baseline_dashed(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    shown: list[list[str]] = []
    original = plt.Figure.savefig

    def record(fig: Any, *a: Any, **kw: Any) -> None:
        shown.append([line.get_label() for ax in fig.axes for line in ax.get_lines()])
        original(fig, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plt.Figure, "savefig", record)
        plot_run(grpo_records([0.3, 0.5], [0.1, 0.2]), tmp_path / "p.png",
                 baseline=grpo_records([0.3, 0.25], [0.1, 0.1]), baseline_label="control")
    assert "control (eval/greedy)" in shown[0] and "control (eval/sampled)" in shown[0]


def test_plot_run_with_nothing_to_plot_says_so(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_run([{"rollout_id": 0, "train/loss": 1.0}], tmp_path / "p.png")


def test_read_metrics_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"rollout_id": 0}) + "\n\n[1]\n")
    with pytest.raises(ValueError, match=r"metrics.jsonl:3: expected a JSON object"):
        read_metrics(path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_metrics(tmp_path / "missing.jsonl")


def test_eval_config_copy_points_at_the_output_folder(tmp_path: Path) -> None:
    import yaml

    from vime.utils.arguments import parse_args

    paths = DemoPaths(tmp_path)
    paths.data.mkdir()
    (paths.data / "eval.jsonl").write_text(
        json.dumps({"input": [{"role": "user", "content": "1+1="}], "label": "2"}) + "\n")
    _write_eval_config(paths)
    doc = yaml.safe_load(paths.eval_config.read_text())
    assert {d["name"] for d in doc["eval"]["datasets"]} == {"greedy", "sampled"}
    assert all(d["path"] == str(paths.data / "eval.jsonl") for d in doc["eval"]["datasets"])
    args = parse_args(["--rollout-batch-size", "1", "--eval-config", str(paths.eval_config),
                       "--eval-interval", "1"], training=False)
    by_name = {d.name: d for d in args.eval_datasets}
    assert by_name["greedy"].top_k == 1 and by_name["sampled"].top_k == -1
    assert by_name["greedy"].rm_type == "math" and by_name["greedy"].label_key == "label"


@pytest.mark.parametrize("name", ["sft.yaml", "grpo.yaml"])
def test_stage_configs_parse_with_the_demo_overrides(name: str, tmp_path: Path) -> None:
    """The YAML files of examples/demo are valid `vime train` configs."""
    from vime.utils.arguments import parse_args

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input": [{"role": "user", "content": "1+1="}],
                                "label": "2"}) + "\n")
    paths = DemoPaths(tmp_path)
    paths.data.mkdir()
    (paths.data / "eval.jsonl").write_text(data.read_text())
    _write_eval_config(paths)
    args = parse_args(["--config", str(CONFIGS / name), "--prompt-data", str(data),
                       "--eval-config", str(paths.eval_config)])
    if name == "sft.yaml":
        assert args.loss_type == "sft_loss" and args.n_samples_per_prompt == 1
        assert args.early_stop_metric == "train/greedy_match" and args.early_stop_threshold > 0
        assert args.lr_decay_style == "constant" and args.weight_decay_all
    else:
        assert args.loss_type == "policy_loss" and args.n_samples_per_prompt == 8
        assert args.rollout_max_response_len >= 22 and args.contract_check == "raise"
        assert args.use_rollout_logprobs and args.eval_interval >= 1


def test_main_rejects_non_positive_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--grpo-steps", "0", "--out", "/nonexistent/never"]) == 2
    assert "--grpo-steps must be >= 1" in capsys.readouterr().err


def test_quick_scale_is_small() -> None:
    assert QUICK.grpo_steps % QUICK.eval_interval == 0
    default = Scale()
    assert default.grpo_steps % default.eval_interval == 0 and default.n_eval >= 500


def test_report_with_the_control_column(tmp_path: Path) -> None:
    paths = DemoPaths(tmp_path)
    for run, greedy in ((paths.grpo_run, [0.14, 0.3, 0.45, 0.5, 0.55]),
                        (paths.control_run, [0.14, 0.12, 0.1, 0.09, 0.08])):
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text("".join(
            json.dumps(r) + "\n" for r in grpo_records(greedy, [0.1] * len(greedy))))
    stages = [StageResult("GRPO", 10.0), StageResult("control", 10.0)]
    summary = report(paths, stages, quick=False, total_seconds=20.0)
    assert summary["gain_points"] == pytest.approx(36.0)
    assert summary["control"]["gain_points"] == pytest.approx(-5.0)
    text = (tmp_path / "summary.txt").read_text()
    assert "control:" in text and "9.0 %" in text  # the header may wrap
    assert "control (same steps, rewards shuffled): -5.0 points" in text


def test_report_without_the_control_has_no_control_column(tmp_path: Path) -> None:
    paths = DemoPaths(tmp_path)
    paths.grpo_run.mkdir(parents=True)
    (paths.grpo_run / "metrics.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in grpo_records([0.1, 0.2], [0.1, 0.1])))
    summary = report(paths, [StageResult("GRPO", 1.0)], quick=False,
                          total_seconds=1.0)
    assert summary["control"] is None
    text = (tmp_path / "summary.txt").read_text()
    assert "control:" not in text and "rewards shuffled)" not in text    # no column, no gain
    # what says how much of the gain the reward taught, and how to get it
    assert "no control run: --control runs the same steps on shuffled rewards" in text


class _EngineThatDidNotStart:
    """A demo engine whose start failed: :meth:`flags` raises as ``DemoEngine.flags`` does."""

    def flags(self) -> list[str]:
        from vime.ray.engine import EngineStartError

        raise EngineStartError(
            "vLLM engine demo (http://127.0.0.1:1, model m) did not answer GET /health in 300 s\n"
            "  command: vllm serve m --max-model-len 512\n  log: runs/demo/logs/demo-engine.log\n"
            "--- last lines of the log ---\n" + "\n".join(
                f"INFO non-default args: {{'model': 'm', 'row': {i}}}" for i in range(60)))


@pytest.mark.parametrize("stage", ["check", "GRPO"])
def test_a_failed_engine_is_one_line_in_the_stage_table_and_whole_in_the_log(
        stage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vime.demo.config import REAL_RECIPE
    from vime.demo.stages import stage_check, stage_grpo

    paths = DemoPaths(tmp_path)
    engine: Any = _EngineThatDidNotStart()
    result = (stage_check(paths, REAL_RECIPE, QUICK, engine=engine) if stage == "check"
              else stage_grpo(paths, QUICK, engine=engine))
    assert not result.ok and result.name == stage
    assert result.detail == ("vLLM engine demo (http://127.0.0.1:1, model m) did not answer "
                             "GET /health in 300 s")
    err = capsys.readouterr().err      # the command, the log's path and its tail: printed
    assert f"{stage} failed: vLLM engine demo" in err
    assert "log: runs/demo/logs/demo-engine.log" in err and "'row': 59}" in err
    report(paths, [result], quick=True, total_seconds=1.0)
    table = (tmp_path / "summary.txt").read_text()
    assert "did not answer" in table and "'row'" not in table and "command:" not in table


def test_the_sampled_row_names_the_eval_configs_temperature(tmp_path: Path) -> None:
    from vime.demo.config import REAL_RECIPE, TINY_RECIPE, Recipe

    assert TINY_RECIPE.sampled_label == "sampled, temperature 1"
    assert REAL_RECIPE.sampled_label == "sampled, temperature 0.5"
    (tmp_path / "eval.yaml").write_text(
        "eval:\n  datasets:\n    - name: greedy\n      temperature: 1.0\n"
        "    - name: sampled\n      temperature: 0.25\n")
    other = Recipe(name="x", configs=tmp_path, default_out="o", sft=False, start_label="s",
                   target_gain_points=None)
    assert other.sampled_label == "sampled, temperature 0.25"


def test_the_real_recipe_report_states_its_target(tmp_path: Path) -> None:
    from vime.demo.config import REAL_RECIPE

    paths = DemoPaths(tmp_path)
    paths.grpo_run.mkdir(parents=True)
    (paths.grpo_run / "metrics.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in grpo_records([0.4, 0.5, 0.55], [0.1] * 3)))
    summary = report(paths, [StageResult("GRPO", 1.0)], quick=False, total_seconds=1.0,
                     recipe=REAL_RECIPE)
    assert summary["target_gain_points"] == 20.0
    assert "(target +20: not met)" in (tmp_path / "summary.txt").read_text()
