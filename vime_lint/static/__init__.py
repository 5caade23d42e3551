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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Where each public name lives: imported on first use (PEP 562), so that importing a
#: light submodule (``_config``, ``_files``, ``_cache``: what a ``vime-lint types`` run answered
#: from its result cache needs) does not import LibCST and the rules.
_LAZY = {"lint_source": "_engine", "select_rules": "_engine", "Fix": "_rule", "Rule": "_rule",
         "ALL_RULES": "rules", "rules_for_code": "rules",
         **dict.fromkeys(("Edit", "Finding", "HookBinding", "Invalid", "LintOptions",
                          "LintResult", "ParseFailure", "Valid"), "_model")}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its submodule on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vime_lint.static' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"vime_lint.static.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ALL_RULES", "Edit", "Finding", "Fix", "HookBinding", "Invalid", "LintOptions", "LintResult",
    "ParseFailure", "Rule", "Valid", "lint_source", "rules_for_code", "select_rules",
]
