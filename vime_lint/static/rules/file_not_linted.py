"""Files the linter does not lint: too large, too deeply nested, too slow (VIM092).

This rule has no visitor: the engine reports it when a file is over one of the limits of
:mod:`vime_lint.static._guard`, instead of crashing or stalling on it.
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["FileNotLinted"]

#: Python accepts 130 ``and`` operands in one expression; LibCST nests them 129 levels deep,
#: over the depth limit (120).
_DEEP_BOOL = "ok = " + " and ".join(["a"] * 130) + "\n"


class FileNotLinted(Rule):
    """Every file given to the linter is linted.

    ## What it does
    Reports, at line 1, a file that vime-lint did not lint, and why: over 1,000,000 bytes
    ("too large"), a syntax tree more than 120 levels deep ("too deeply nested"; an
    `and`/`or` chain counts one level per operand), more than 60 s of linting ("too slow"),
    or a file Python accepts but LibCST cannot parse. A file that Python itself rejects
    (`compile()` fails: a syntax error, too many nested parentheses, too many levels of
    indentation, NUL bytes) is a syntax error instead (exit 2), as the interpreter would say.

    ## Why is this bad?
    Nothing in the file is checked: its contract violations show up at run time
    (failure kind: "file silently unchecked"). The limits exist so that a hostile or
    generated file cannot crash the linter (LibCST's native parser overflowed the stack on
    deeply nested code) or keep it busy for minutes.

    ## Example
    ```python
    ok = a and a and a and ...  # 130 operands
    ```

    ## Use instead
    ```python
    ok = all(checks)
    ```

    ## Fix safety
    No fix. Generated files can be excluded (`--extend-exclude`) or the code ignored
    (`--ignore VIM092`, `per-file-ignores`).
    """

    INVARIANT = INVARIANTS["VIM092"]
    ENGINE_ONLY = True
    VALID = [
        Valid("ok = a and b and c\n"),
        # Under the depth limit: a 100-operand chain, 60 nested ifs, 40 nested lists.
        Valid("ok = " + " and ".join(["a"] * 100) + "\n"),
        Valid("".join("    " * i + "if x:\n" for i in range(60)) + "    " * 60 + "pass\n"),
        Valid("x = " + "[" * 40 + "]" * 40 + "\n"),
    ]
    INVALID = [
        Invalid(_DEEP_BOOL, line=1, col=0),
        # An `or` chain, a `+` chain, the chain inside a function (still reported at line 1).
        Invalid("ok = " + " or ".join(["a"] * 130) + "\n", line=1, col=0),
        Invalid("n = " + " + ".join(["1"] * 130) + "\n", line=1, col=0),
        Invalid("def f(a):\n    return " + " and ".join(["a"] * 130) + "\n", line=1, col=0),
    ]
