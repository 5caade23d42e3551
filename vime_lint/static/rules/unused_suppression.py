"""A suppression comment that silences nothing, or names an unknown code (VIM091). The rule
has no visitor: the engine reports it while applying ``# noqa`` comments, whose syntax follows
flake8 and Ruff.
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["UnusedSuppression"]


class UnusedSuppression(Rule):
    """A suppression silences a finding that exists.

    ## What it does
    Reports a ``VIM###`` code in a ``# noqa: ...`` or ``# vime-lint: noqa: ...`` comment that
    silenced nothing (for enabled rules), and unknown ``VIM`` codes.

    ## Why is this bad?
    A stale suppression hides the next real finding of that code on its line.

    ## Example
    ```python
    x = compute()  # noqa: VIM003
    ```

    ## Use instead
    ```python
    x = compute()
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM091"]
    ENGINE_ONLY = True
    VALID = [
        Valid("""
            def f(sample):
                sample.aborted = True  # noqa: VIM007
        """),
        Valid("x = 1  # noqa: E501\n"),
        # A lower-case code without a space; beside another tool's code; file level.
        Valid("""
            def f(sample):
                sample.aborted = True  # noqa:vim007
        """),
        Valid("""
            def f(sample):
                sample.aborted = True  # noqa: E501, VIM007
        """),
        Valid("""
            # vime-lint: noqa: VIM007
            def f(sample):
                sample.aborted = True
        """),
    ]
    INVALID = [
        Invalid("x = 1  # noqa: VIM003\n", line=1, col=7),
        Invalid("""
            # vime-lint: noqa: VIM999
            x = 1
        """, line=1, col=0),
        # One code used and one not on the same line; an unused file-level code; a mistyped
        # code; a used code of another tool beside an unused VIM code.
        Invalid("""
            def f(sample):
                sample.aborted = True  # noqa: VIM007, VIM003
        """, line=2, col=27),
        Invalid("""
            # vime-lint: noqa: VIM003
            def f(sample):
                sample.aborted = True
        """, line=1, col=0),
        Invalid("x = 1  # noqa: VIM0007\n", line=1, col=7),
        Invalid("x = 1  # noqa: RUF100, VIM007\n", line=1, col=7),
    ]
