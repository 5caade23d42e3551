"""A bare ``# noqa`` comment (VIM090). The rule has no visitor: the engine reports it while
applying ``# noqa`` comments, whose syntax follows flake8 and Ruff.
"""

from __future__ import annotations

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["BareNoqa"]


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
    VALID = [
        Valid("x = 1  # noqa: E501\n"), Valid("x = 1\n"),
        # Codes without a space, or several of another tool; the directive inside a string.
        Valid("""
            def f(sample):
                sample.aborted = True  # noqa:VIM007
        """),
        Valid("x = 1  # noqa: E501,W291\n"),
        Valid("x = '# noqa'\n"),
    ]
    INVALID = [
        Invalid("x = 1  # noqa\n", line=1, col=7),
        # Upper case, no space, after another comment.
        Invalid("x = 1  # NOQA\n", line=1, col=7),
        Invalid("x = 1  #noqa\n", line=1, col=7),
        Invalid("x = 1  # type: ignore  # noqa\n", line=1, col=23),
    ]
