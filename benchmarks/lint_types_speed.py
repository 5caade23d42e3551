"""How fast is ``vime-lint types``? Cold, warm (cached) and edited time per module.

Run::

    .venv/bin/python benchmarks/lint_types_speed.py [--repeat 3] [--json out.json]

Modules: the example hooks of ``examples/`` (multi-turn with a tool, a filter, a generate, a
reward, a rollout) and one reward that imports torch and numpy (written to a temporary
directory). Each figure is the wall time of one ``python -m vime_lint types MODULE
--cache-dir DIR`` process (what a pre-commit run or an editor sees, interpreter start-up
included):

- cold: an empty mypy cache (vime and the third-party packages the module imports are
  analysed);
- warm: the cache of a previous run, the module unchanged (best of ``--repeat``);
- edited: the cache of a previous run, the module changed (a line appended), so mypy checks the
  module again and reads its dependencies from the cache (best of ``--repeat``).

Each figure also has the process's CPU time (user + system): on a loaded machine the wall time
includes waiting for a core, the CPU time does not.

Target: warm <= 1 s per unchanged module.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("calculator_rollout.py", "informative_groups_filter.py", "answer_prefix_generate.py",
            "format_reward.py", "reference_rollout.py")
TORCH_REWARD = '''import numpy as np
import torch


async def reward_func(args, sample):
    scores = torch.tensor([float(len(sample.response))])
    return float(np.mean(scores.numpy()))
'''


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(module: Path, cache: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and VIM2xx findings of one process."""
    started, cpu = time.perf_counter(), _cpu()
    out = subprocess.run([sys.executable, "-m", "vime_lint", "types", str(module),
                          "--cache-dir", str(cache)], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if out.returncode not in (0, 1):
        raise SystemExit(f"vime-lint types {module} failed ({out.returncode}): {out.stderr}")
    return seconds, _cpu() - cpu, out.stdout.count(": VIM2")


def measure(module: Path, repeat: int, workdir: Path) -> dict[str, float | int | str]:
    """Cold, warm and edited seconds for one module (a fresh cache per module)."""
    cache = workdir / f"cache_{module.stem}"
    shutil.rmtree(cache, ignore_errors=True)
    copy = workdir / module.name
    copy.write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    cold, cold_cpu, findings = _run(copy, cache)
    warm = min((_run(copy, cache)[:2] for _ in range(repeat)), key=lambda t: t[0])
    edited = []
    for i in range(repeat):
        with copy.open("a", encoding="utf-8") as f:
            f.write(f"# edit {i}\n")
        edited.append(_run(copy, cache)[:2])
    best = min(edited, key=lambda t: t[0])
    return {"module": module.name, "cold_s": round(cold, 2), "cold_cpu_s": round(cold_cpu, 2),
            "warm_s": round(warm[0], 2), "warm_cpu_s": round(warm[1], 2),
            "edited_s": round(best[0], 2), "edited_cpu_s": round(best[1], 2),
            "findings": findings}


def main(argv: list[str] | None = None) -> int:
    """Print one row per module; with ``--json`` also write the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    ns = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="vime-types-bench-") as tmp:
        work = Path(tmp)
        modules = [ROOT / "examples" / n for n in EXAMPLES]
        torch_reward = work / "src" / "torch_reward.py"
        torch_reward.parent.mkdir()
        torch_reward.write_text(TORCH_REWARD, encoding="utf-8")
        modules.append(torch_reward)
        print(f"{'module':<30} {'cold s (cpu)':>14} {'warm s (cpu)':>14} "
              f"{'edited s (cpu)':>15} {'findings':>8}")
        for m in modules:
            row = measure(m, ns.repeat, work)
            rows.append(row)
            print(f"{row['module']:<30} {row['cold_s']:>6} ({row['cold_cpu_s']:>5}) "
                  f"{row['warm_s']:>6} ({row['warm_cpu_s']:>5}) "
                  f"{row['edited_s']:>7} ({row['edited_cpu_s']:>5}) {row['findings']:>8}")
    worst = max(float(r["warm_s"]) for r in rows)
    worst_cpu = max(float(r["warm_cpu_s"]) for r in rows)
    print(f"worst warm: {worst:.2f} s wall, {worst_cpu:.2f} s CPU (target <= 1 s per unchanged "
          "module; on a shared machine the CPU time is the idle machine's wall time)")
    if ns.json is not None:
        ns.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
