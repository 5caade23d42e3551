"""Suppression comments: bare ``# noqa`` (VIM090) and unused suppressions (VIM091).

These rules have no visitor: the engine reports them while applying ``# noqa`` comments.

The comment syntax follows flake8 and Ruff.
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["BareNoqa", "UnusedSuppression"]


class BareNoqa(Rule):
    """A ``# noqa`` comment names the codes it silences.

    ## What it does
    Reports ``# noqa`` without codes. vime-lint does not honour it: only
    ``# noqa: VIM001`` (this line) and ``# vime-lint: noqa: VIM001`` (whole file) silence
    findings. Codes of other tools (``# noqa: E501``) are left alone.

    ## Why is this bad?
    A bare noqa hides every finding on its line, including ones that appear later, such as
    a new contract violation (failure kind: "suppression hides new findings").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_buffer, evaluation=False):  # noqa
        ...
    ```

    ## Use instead
    ```python
    def generate_rollout(args, rollout_id, data_buffer, evaluation=False):  # noqa: VIM001
        ...
    ```

    ## Fix safety
    No fix: the codes to name are the author's choice.
    """

    INVARIANT = INVARIANTS["VIM090"]
    ENGINE_ONLY = True
    VALID = [Valid("x = 1  # noqa: E501\n"), Valid("x = 1\n")]
    INVALID = [Invalid("x = 1  # noqa\n", line=1, col=7)]


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
        Valid("def f(sample):\n    sample.aborted = True  # noqa: VIM007\n"),
        Valid("x = 1  # noqa: E501\n"),
    ]
    INVALID = [
        Invalid("x = 1  # noqa: VIM003\n", line=1, col=7),
        Invalid("# vime-lint: noqa: VIM999\nx = 1\n", line=1, col=0),
    ]
