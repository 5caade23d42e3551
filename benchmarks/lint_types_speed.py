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

Target: warm <= 1 s per unchanged module.
"""

from __future__ import annotations

import argparse
import json
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


def _run(module: Path, cache: Path) -> tuple[float, int]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "vime_lint", "types", str(module),
                          "--cache-dir", str(cache)], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if out.returncode not in (0, 1):
        raise SystemExit(f"vime-lint types {module} failed ({out.returncode}): {out.stderr}")
    return seconds, out.stdout.count(": VIM2")


def measure(module: Path, repeat: int, workdir: Path) -> dict[str, float | int | str]:
    """Cold, warm and edited seconds for one module (a fresh cache per module)."""
    cache = workdir / f"cache_{module.stem}"
    shutil.rmtree(cache, ignore_errors=True)
    copy = workdir / module.name
    copy.write_text(module.read_text(encoding="utf-8"), encoding="utf-8")
    cold, findings = _run(copy, cache)
    warm = min(_run(copy, cache)[0] for _ in range(repeat))
    edited = []
    for i in range(repeat):
        with copy.open("a", encoding="utf-8") as f:
            f.write(f"# edit {i}\n")
        edited.append(_run(copy, cache)[0])
    return {"module": module.name, "cold_s": round(cold, 2), "warm_s": round(warm, 2),
            "edited_s": round(min(edited), 2), "findings": findings}


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
        print(f"{'module':<32} {'cold s':>7} {'warm s':>7} {'edited s':>8} {'findings':>8}")
        for m in modules:
            row = measure(m, ns.repeat, work)
            rows.append(row)
            print(f"{row['module']:<32} {row['cold_s']:>7} {row['warm_s']:>7} "
                  f"{row['edited_s']:>8} {row['findings']:>8}")
    worst = max(float(r["warm_s"]) for r in rows)
    print(f"worst warm: {worst:.2f} s (target <= 1 s per unchanged module)")
    if ns.json is not None:
        ns.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
