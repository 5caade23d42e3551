"""Time ``vime report`` and ``vime-lint rescore`` on a run of dumped steps (targets:
each <= 10 s on the demo's 60 steps).

Writes a synthetic run folder shaped like the demo's GRPO run (``--steps`` dumps of
``--prompts`` x ``--n`` samples, 40 prompt + 24 response tokens, a few FAILED and filtered
samples, ``metrics.jsonl``), then times each whole command (start-up and imports included) in a
fresh process, ``--repeat`` times, and prints the median.

Usage::

    python benchmarks/report_and_rescore.py [--steps 60] [--prompts 32] [--n 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from vime.report.dump import step_rows, write_step
from vime.report.fates import FILTERED
from vime.rollout.failures import mark_failed
from vime.utils.types import Sample


def _group(rng: random.Random, step: int, g: int, n: int) -> list[Sample]:
    out = []
    for e in range(n):
        answer = rng.choice(["5", "6"])
        s = Sample(index=(step * 10_000) + g * n + e, group_index=g, prompt=f"What is {g}+4?",
                   tokens=list(range(64)), response=f"Let me think. The answer is {answer}.",
                   response_length=24, label="5", reward=float(answer == "5"),
                   loss_mask=[1] * 24, rollout_log_probs=[-0.5] * 24, weight_versions=[str(step)],
                   status=Sample.Status.COMPLETED)
        if rng.random() < 0.02:
            mark_failed(s, "reward", ValueError("no answer"), 0.1)
        out.append(s)
    return out


def make_run(root: Path, steps: int, prompts: int, n: int) -> Path:
    """The run folder (``metrics.jsonl`` and ``rollouts/step_N.parquet``)."""
    rng = random.Random(0)
    args = Namespace(reward_key=None, max_staleness=None, dump_rollouts=True)
    with (root / "metrics.jsonl").open("w") as fh:
        for step in range(steps):
            fh.write(json.dumps({"rollout_id": step, "rollout/raw_reward": rng.random(),
                                 "rollout/num_samples": prompts * n, "train/loss": 0.1}) + "\n")
    for step in range(steps):
        groups = [_group(rng, step, g, n) for g in range(prompts)]
        dropped = [(groups.pop(), FILTERED, "zero_std")]
        write_step(root, step, step_rows(args, step, groups, dropped=dropped), [])
    return root


def _time(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), ns.steps, ns.prompts, ns.n)
        shape = f"{ns.steps} steps x {ns.prompts * ns.n} samples"
        report = _time([sys.executable, "-m", "vime", "report", str(run)], ns.repeat)
        rescore = _time([sys.executable, "-m", "vime_lint", "rescore", str(run), "--rm-type",
                         "math"], ns.repeat)
    print(f"{shape}: vime report {report:.2f} s, vime-lint rescore --rm-type math "
          f"{rescore:.2f} s (median of {ns.repeat}, whole command)")


if __name__ == "__main__":
    main()
