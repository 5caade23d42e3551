"""How does vime-lint behave on one very large function? Wall time of the real commands, and
LibCST's scope resolution against vime-lint's linear one.

Run::

    .venv/bin/python benchmarks/lint_large_file.py                     # 100 KB, 500 KB, 5 MB
    .venv/bin/python benchmarks/lint_large_file.py --sizes 0.5,5 --commands rollout
    .venv/bin/python benchmarks/lint_large_file.py --scopes-only

Each file is one hook (``async def reward_func(args, sample, **kwargs):``, so ``vime-lint
types`` type-checks it too) whose body repeats one statement until the file has the size
asked for: ``x = x + i`` (one name assigned and read on every line: the shape that made
LibCST's flow-ordered scope resolution quadratic) or ``y<i> = x + i`` (distinct names).

Figures, one JSON line each:

- ``command``: ``vime-lint rollout --no-cache FILE`` and ``vime-lint types FILE`` (mypy's
  cache in a fresh temporary folder) as subprocesses: wall seconds, exit code and the first
  line they print (a file over the size limit, 1,000,000 bytes, is reported as VIM092 "not
  linted: too large" without being parsed; one over the 60 s budget as "too slow");
- ``scopes``: seconds to resolve scopes of a ``x = x + i`` function of 25 KB and 50 KB with
  LibCST's ``ScopeProvider`` and with ``LinearScopeProvider``
  (``vime_lint.static.analysis._scopes``): doubling the size about quadruples LibCST's time
  and doubles the linear one's.

Targets: a 5 MB file ends in <= 10 s with a clear finding (both commands); no command runs
past the per-file budget plus start-up; the linear provider's time grows linearly.

Measured on a shared 2-core machine (other jobs running): 5 MB, both shapes: ``rollout``
1.5-1.7 s, ``types`` 1.9-2.1 s, exit 1 with VIM092 "too large" (before: killed at 300 s and
180 s). 500 KB ``x = x + i``: ``rollout`` and ``types`` 66 s, VIM092 "too slow" at the 60 s
budget (before: 122 s for a 500 KB function; LibCST's scopes alone grew 4x per doubling);
500 KB ``y<i> = x + i``: ``rollout`` 39 s clean, ``types`` 71 s clean. Scopes of
``x = x + i``: LibCST 7.5 s (25 KB) -> 21.1 s (50 KB), linear 2.6 s -> 5.4 s. Whole lints
in process: 50 / 100 / 200 KB in 8.8 / 18.2 / 31.8 s (linear; about 6 KB/s on this machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HEADER = "async def reward_func(args, sample, **kwargs):\n    x = 0\n"
SHAPES = {"same_name": "    x = x + {i}\n", "distinct_names": "    y{i} = x + {i}\n"}


def big_function(size: int, shape: str) -> str:
    """One hook of about ``size`` bytes whose body repeats ``SHAPES[shape]``."""
    parts = [HEADER]
    total, i = len(HEADER), 0
    line = SHAPES[shape]
    while total < size:
        text = line.format(i=i)
        parts.append(text)
        total += len(text)
        i += 1
    parts.append("    return float(x)\n")
    return "".join(parts)


def run_command(command: str, path: Path, timeout: float) -> dict[str, object]:
    """Wall time, exit code and first output line of ``vime-lint COMMAND path``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(prefix="vime-lint-bench-") as cache:
        argv = [sys.executable, "-m", "vime_lint", command, str(path)]
        argv += ["--no-cache"] if command == "rollout" else ["--cache-dir", cache]
        started = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  cwd=path.parent, env=env)
        except subprocess.TimeoutExpired:
            return {"seconds": round(time.perf_counter() - started, 2), "exit": "timeout"}
        seconds = time.perf_counter() - started
    first = (proc.stdout + proc.stderr).strip().splitlines()
    return {"seconds": round(seconds, 2), "exit": proc.returncode,
            "first_line": first[0][:160] if first else ""}


def scope_seconds(sizes: list[int]) -> list[dict[str, object]]:
    """Seconds to resolve scopes of a ``x = x + i`` function with both providers."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, ScopeProvider

    from vime_lint.static.analysis._scopes import LinearScopeProvider

    rows = []
    for size in sizes:
        module = cst.parse_module(big_function(size, "same_name"))
        row: dict[str, object] = {"figure": "scopes", "bytes": size}
        for name, provider in (("libcst", ScopeProvider), ("linear", LinearScopeProvider)):
            started = time.perf_counter()
            MetadataWrapper(module, unsafe_skip_copy=True).resolve(provider)
            row[f"{name}_s"] = round(time.perf_counter() - started, 2)
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.1,0.5,5", help="file sizes in MB, comma-separated")
    parser.add_argument("--shapes", default="same_name,distinct_names")
    parser.add_argument("--commands", default="rollout,types")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds before a command is stopped and reported as timeout")
    parser.add_argument("--scopes-only", action="store_true")
    ns = parser.parse_args()
    if not ns.scopes_only:
        with tempfile.TemporaryDirectory(prefix="vime-lint-large-") as tmp:
            (Path(tmp) / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
            for mb in (float(s) for s in ns.sizes.split(",")):
                for shape in ns.shapes.split(","):
                    path = Path(tmp) / f"big_{shape}_{mb:g}mb.py"
                    path.write_text(big_function(int(mb * 1_000_000), shape))
                    for command in ns.commands.split(","):
                        row = {"figure": "command", "command": command, "shape": shape,
                               "bytes": path.stat().st_size,
                               **run_command(command, path, ns.timeout)}
                        print(json.dumps(row), flush=True)
    for row in scope_seconds([25_000, 50_000]):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
