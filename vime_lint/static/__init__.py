"""vime-lint's static linter: LibCST rules for the rollout contract (``vime-lint rollout``).

Usage::

    from vime_lint.static import ALL_RULES, LintOptions, lint_source
    result = lint_source(open("my_rollout.py", "rb").read(), "my_rollout.py", LintOptions(),
                         rules=ALL_RULES)
    for f in result.findings:
        print(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}")

The linter never imports or runs the code it lints. Rules live in
``vime_lint.static.rules`` (one module per family); hook signatures, Sample fields and
invariant ids come from ``vime.contract``.

See ``docs/contract.md`` §6a.
"""

from vime_lint.static._engine import lint_source, select_rules
from vime_lint.static._model import (
    Edit,
    Finding,
    HookBinding,
    Invalid,
    LintOptions,
    LintResult,
    ParseFailure,
    Valid,
)
from vime_lint.static._rule import Fix, Rule
from vime_lint.static.rules import ALL_RULES, rules_for_code

__all__ = [
    "ALL_RULES", "Edit", "Finding", "Fix", "HookBinding", "Invalid", "LintOptions", "LintResult",
    "ParseFailure", "Rule", "Valid", "lint_source", "rules_for_code", "select_rules",
]
