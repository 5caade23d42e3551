"""Generate ``docs/rules.md`` from the vime-lint rules' docstrings and ``vime.contract.INVARIANTS``.

Usage::

    python scripts/document_rules.py            # write docs/rules.md
    python scripts/document_rules.py --check    # exit 1 if docs/rules.md is stale

Follows Fixit's ``scripts/document_rules.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "rules.md"


def main(argv: list[str]) -> int:
    """Write (or with ``--check`` compare) ``docs/rules.md``; return the exit code."""
    sys.path.insert(0, str(ROOT))
    from vime_lint.rules_page import rules_page

    page = rules_page()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != page:
            print(f"{TARGET} is stale: run python scripts/document_rules.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(page, encoding="utf-8")
    print(f"wrote {TARGET} ({page.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
