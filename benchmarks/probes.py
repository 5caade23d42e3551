"""Reward probes of ``vime-lint check`` on 16 prompts (target: <= 10 s).

Runs :func:`vime_lint.check.probe_run.run_probes` on 16 synthetic prompts with vime's math
reward (``--rm-type math``) and with a custom reward module, in this process, with a budget
large enough for every probe, then the ``--dynamic-sampling-filter-path`` probes on the
built-in filter, and prints the calls made and the wall time of each.

Usage::

    python benchmarks/probes.py [--prompts 16]
"""

from __future__ import annotations

import argparse
import time

from vime_lint.check.arguments import make_args, parse_check_args
from vime_lint.check.probe_run import run_filter_probes, run_probes
from vime_lint.check.probes import ProbeRow
from vime_lint.check.synthetic import synthetic_prompts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    ns = parser.parse_args()
    rows = [ProbeRow(p, label) for p, label, _ in synthetic_prompts(ns.prompts) if label]
    for reward in (["--rm-type", "math"],
                   ["--custom-rm-path", "examples.format_reward.reward_func"]):
        args = make_args(parse_check_args(["--rollout-function-path",
                                           "vime.rollout.sft_rollout.generate_rollout", *reward]))
        start = time.perf_counter()
        out = run_probes(args, rows, max_calls=100_000)
        took = time.perf_counter() - start
        print(f"{' '.join(reward)}: {len(rows)} prompts, {out.calls} reward calls, "
              f"{len(out.findings)} finding(s), {took:.2f} s")
    path = "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"
    args = make_args(parse_check_args(["--rollout-function-path",
                                       "vime.rollout.sft_rollout.generate_rollout",
                                       "--dynamic-sampling-filter-path", path]))
    start = time.perf_counter()
    out = run_filter_probes(args)
    print(f"--dynamic-sampling-filter-path {path}: {out.calls} filter calls, "
          f"{len(out.findings)} finding(s), {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
