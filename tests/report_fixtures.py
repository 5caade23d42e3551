"""A synthetic run folder with one sample of every fate (shared by the report tests)."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

from vime.contract.errors import Violation
from vime.report.dump import step_rows, write_step
from vime.report.fates import FILTERED
from vime.rollout.failures import mark_failed
from vime.utils.types import Sample

ARGS = Namespace(reward_key=None, max_staleness=1, dump_rollouts=True)


def sample(index: int, group: int, reward: float, *, mask: list[int] | None = None,
           response: str = "The answer is 5.") -> Sample:
    return Sample(index=index, group_index=group, prompt=f"What is {index}+1?",
                  tokens=[1, 2, 3, 10 + index, 20 + index], response=response, response_length=2,
                  label="5", reward=reward, loss_mask=mask if mask is not None else [1, 1],
                  rollout_log_probs=[-0.5, -0.25], weight_versions=["3", "3"],
                  status=Sample.Status.COMPLETED)


def step_groups() -> tuple[list[list[Sample]], list[list[Sample]], list[tuple[list[Sample], str, str]]]:
    """Groups returned (trained, masked+removed+failed, stale), the stale ones, the dropped."""
    trained = [sample(0, 0, 1.0), sample(1, 0, 0.0)]
    mixed = [sample(2, 1, 1.0, mask=[0, 0]), sample(3, 1, 0.0)]
    mixed[1].remove_sample = True
    failing = sample(5, 1, 0.0)
    mark_failed(failing, "reward", ValueError("no answer in the response"), 0.2)
    mixed.append(failing)
    stale = [sample(6, 2, 1.0), sample(7, 2, 1.0)]
    dropped = [([sample(8, 3, 1.0), sample(9, 3, 1.0)], FILTERED, "zero_std_1.0")]
    return [trained, mixed, stale], [stale], dropped


FINDING = Violation("VIM108", "warning", "samples[1][0].loss_mask", "a test finding",
                    fix="none")


def make_run(run_dir: Path, steps: int = 3) -> Path:
    """``metrics.jsonl`` with ``steps`` records and a dump of each step."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "metrics.jsonl").open("w") as fh:
        for s in range(steps):
            fh.write(json.dumps({"rollout_id": s, "time": 0.0, "rollout/raw_reward": 0.25 * s,
                                 "rollout/raw_reward_std": 0.1, "rollout/truncated_ratio": 0.0,
                                 "rollout/response_len/mean": 2.0,
                                 "rollout/response_len/max": 2.0, "rollout/num_samples": 9,
                                 "rollout/vllm_rollout/engine_retries": float(s),
                                 "rollout/staleness/dropped_groups": 1.0,
                                 "train/loss": 0.5}) + "\n")
    for s in range(steps):
        groups, stale, dropped = step_groups()
        rows = step_rows(ARGS, s, groups, stale=stale, dropped=dropped, findings=[FINDING],
                         advantages={id(groups[0][0]): 1.0, id(groups[0][1]): -1.0})
        write_step(run_dir, s, rows, [FINDING])
    return run_dir
