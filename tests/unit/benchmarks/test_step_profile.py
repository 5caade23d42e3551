"""benchmarks/step_profile.py on a hand-written metrics.jsonl: medians per phase, evaluation
counted only on the steps that had one, what no phase covers, and the side-by-side ratio."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("step_profile", ROOT / "benchmarks" /
                                                  "step_profile.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(tmp: Path, steps: list[dict[str, float]]) -> Path:
    tmp.mkdir()
    lines = [{"rollout_id": -1, "eval/greedy": 0.1}]   # the evaluation before step 0
    lines += [{"rollout_id": i, "train/loss": 0.0, **s} for i, s in enumerate(steps)]
    (tmp / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return tmp


def test_medians_and_the_rest_of_the_step(tmp_path: Path) -> None:
    sp = _module()
    run = _run(tmp_path / "new", [
        {"perf/rollout_time": 1.0, "train/time": 0.5, "perf/weight_sync_time": 0.1,
         "perf/step_time": 2.0},
        {"perf/rollout_time": 3.0, "train/time": 0.7, "perf/weight_sync_time": 0.1,
         "perf/eval_time": 4.0, "perf/step_time": 8.0},
        {"perf/rollout_time": 2.0, "train/time": 0.6, "perf/weight_sync_time": 0.1,
         "perf/step_time": 3.0},
    ])
    steps = sp.step_records(run)
    assert len(steps) == 3                          # the pre-training eval line is not a step
    m = sp.medians(steps)
    assert m["perf/rollout_time"] == 2.0 and m["train/time"] == 0.6
    assert "perf/eval_time" not in m                # median over steps: 0 (one eval in three)
    assert m["other"] == pytest.approx(0.3)         # 2.0-1.6, 8.0-7.8, 3.0-2.7
    assert len(sp.step_records(run, skip_first=True)) == 2


def test_side_by_side_table_gives_the_ratio(tmp_path: Path) -> None:
    sp = _module()
    new = _run(tmp_path / "new", [{"perf/rollout_time": 1.5, "perf/step_time": 3.0}])
    old = _run(tmp_path / "old", [{"perf/rollout_time": 1.0, "perf/step_time": 2.0}])
    text = sp.table(sp.medians(sp.step_records(new)), sp.medians(sp.step_records(old)))
    assert "| rollout | 1500.0 | 50.0 % | 1000.0 | 1.50 |" in text
    assert "| step | 3000.0 | 100.0 % | 2000.0 | 1.50 |" in text
