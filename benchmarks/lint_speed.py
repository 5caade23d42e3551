"""How fast is vime-lint? Per-file time against the LibCST floor and against Fixit, plus start-up.

Run::

    .venv/bin/python benchmarks/lint_speed.py [--generated 500] [--repeat 3]

Files: the project's own modules (``vime/``, ``vime_lint/``) plus N generated rollout-like
modules (written to a temporary directory). Figures, per file (median over files of the best
of ``--repeat`` runs):

- floor: ``libcst.parse_module`` + the metadata vime-lint resolves for that file
  (``QualifiedNameProvider`` with its ``ScopeProvider``; ``PositionProvider`` when the file has
  findings);
- vime-lint: ``lint_source`` with every rule, in process;
- Fixit: ``fixit lint`` (its default rules) on the same files, wall time per file, next to
  ``vime-lint rollout --no-cache`` on the same files (its worker processes use every core);
- cache: a cold ``vime-lint rollout`` (empty ``.vime_lint_cache/``) and a re-lint of the
  unchanged tree, as a percentage of the cold run;
- start-up: wall time of ``vime-lint --version`` and the heavy modules it imports (none
  expected: torch, ray, vllm, transformers, httpx, libcst).

Targets: vime-lint <= 1.5x the floor; faster than Fixit; a re-lint of an unchanged tree <= 10 %
of a cold run; start-up imports nothing heavy.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEMPLATE = '''"""Generated rollout-like module {i}."""

import asyncio
import copy

from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
from vime.utils.types import Sample


async def generate(args, sample, sampling_params):
    for turn in range({turns}):
        await asyncio.sleep(0)
        sample.append_response_tokens(args, tokens=[1, 2, 3], log_probs=[-0.1, -0.2, -0.3])
    if sample.response_length > {limit}:
        sample.status = Sample.Status.TRUNCATED
    return sample


async def reward_func(args, sample, **kwargs):
    text = sample.response.strip()
    score = {score}
    if text == sample.label:
        score += 1.0
    return score


def _helper_{i}(group, k):
    out = []
    for s in group:
        c = copy.copy(s)
        c.metadata["k"] = k
        out.append(c)
    return out


def generate_rollout(args, rollout_id, data_source, evaluation=False):
    groups = data_source.get_samples(args.rollout_batch_size)
    for group in groups:
        for k, sample in enumerate(group):
            sample.tokens = [11, 12, 13, 40 + k, 41]
            sample.response_length = 2
            sample.reward = float(k % {mod})
            sample.status = Sample.Status.COMPLETED
    {bug}
    if evaluation:
        flat = [s for group in groups for s in group]
        return RolloutFnEvalOutput(data={{"toy": {{"rewards": [s.reward for s in flat],
                                                 "truncated": [False] * len(flat),
                                                 "samples": flat}}}})
    return RolloutFnTrainOutput(samples=groups, metrics={{"rollout/toy/groups": len(groups)}})
'''
BUGS = ["pass", "pass", "pass", "args.step = rollout_id", "groups[0][0].status = 'aborted'"]


def generated(n: int, where: Path) -> list[Path]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        p = where / f"gen_{i:04d}.py"
        p.write_text(TEMPLATE.format(i=i, turns=rng.randint(1, 4), limit=rng.randint(8, 64),
                                     score=rng.random(), mod=rng.randint(2, 5),
                                     bug=rng.choice(BUGS)))
        out.append(p)
    return out


def best_of(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    """Print the figures; return 0."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--generated", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-fixit", action="store_true")
    ns = ap.parse_args()

    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

    from vime_lint.static._engine import lint_source
    from vime_lint.static.rules import ALL_RULES

    tmp = Path(tempfile.mkdtemp(prefix="vime-lint-bench-"))
    try:
        own = sorted([*ROOT.glob("vime/**/*.py"), *ROOT.glob("vime_lint/**/*.py")])
        gen = generated(ns.generated, tmp)
        files = own + gen
        sources = [p.read_text() for p in files]
        floor, lint, ratios = [], [], []
        for src in sources:
            has_findings = bool(lint_source(src, "f.py", rules=ALL_RULES).findings)

            def do_floor(src: str = src, pos: bool = has_findings) -> None:
                w = MetadataWrapper(cst.parse_module(src), unsafe_skip_copy=True)
                w.resolve(QualifiedNameProvider)
                if pos:
                    w.resolve(PositionProvider)

            f = best_of(do_floor, ns.repeat)
            v = best_of(lambda src=src: lint_source(src, "f.py", rules=ALL_RULES), ns.repeat)
            floor.append(f)
            lint.append(v)
            ratios.append(v / f)
        print(f"files: {len(own)} project modules + {len(gen)} generated")
        print(f"floor (parse + metadata): median {statistics.median(floor) * 1e3:.2f} ms/file, "
              f"total {sum(floor):.2f} s")
        print(f"vime-lint (in process):   median {statistics.median(lint) * 1e3:.2f} ms/file, "
              f"total {sum(lint):.2f} s")
        print(f"ratio vime-lint / floor:  median {statistics.median(ratios):.2f}x, "
              f"total {sum(lint) / sum(floor):.2f}x, worst file "
              f"{max(ratios):.2f}x  (target <= 1.5x)")

        listing = tmp / "files"
        listing.mkdir()
        for i, p in enumerate(files):
            shutil.copy(p, listing / f"f{i:04d}.py")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        bindir = Path(sys.executable).parent
        cli = [str(bindir / "vime-lint"), "rollout", str(listing), "--exit-zero",
               "--output-format", "json"]

        def timed(args: list[str]) -> float:
            t = time.perf_counter()
            subprocess.run(args, capture_output=True, env=env, check=True, cwd=listing)
            return time.perf_counter() - t

        vime_cli = timed([*cli, "--no-cache"])
        print(f"vime-lint rollout CLI (--no-cache, {os.cpu_count()} cores): {vime_cli:.2f} s for "
              f"{len(files)} files ({vime_cli / len(files) * 1e3:.2f} ms/file, incl. start-up)")
        shutil.rmtree(listing / ".vime_lint_cache", ignore_errors=True)
        cold = timed(cli)
        warm = timed(cli)
        print(f"cache: cold run {cold:.2f} s, re-lint of the unchanged tree {warm:.2f} s = "
              f"{warm / cold * 100:.1f} % of the cold run (target <= 10 %)")
        if not ns.skip_fixit and (bindir / "fixit").exists():
            t = time.perf_counter()
            subprocess.run([str(bindir / "fixit"), "lint", str(listing)], capture_output=True,
                           env=env)
            fixit = time.perf_counter() - t
            print(f"fixit lint CLI:        {fixit:.2f} s for {len(files)} files "
                  f"({fixit / len(files) * 1e3:.2f} ms/file); vime-lint (--no-cache) is "
                  f"{fixit / vime_cli:.2f}x faster")

        startups = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([str(bindir / "vime-lint"), "--version"], capture_output=True,
                           check=True)
            startups.append(time.perf_counter() - t)
        probe = ("import sys; from vime_lint.cli import main; main(['--version']); "
                 "print([m for m in ('torch','ray','vllm','transformers','httpx','libcst') "
                 "if m in sys.modules])")
        heavy = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               env=env, check=True).stdout.strip().splitlines()[-1]
        bare = []
        for _ in range(5):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - t)
        print(f"start-up `vime-lint --version`: median {statistics.median(startups) * 1e3:.0f} ms "
              f"(bare python {statistics.median(bare) * 1e3:.0f} ms); heavy modules imported: "
              f"{heavy}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
