"""Reading ``status`` / ``reward`` of group elements with a ``getattr`` default: VIM013.

:class:`GetattrOnGroupElement` reports ``getattr(x, "status" | "reward", default)``.

See ``docs/contract.md`` §3 (nested groups) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["GetattrOnGroupElement"]


class GetattrOnGroupElement(Rule):
    """No ``getattr(x, "status" | "reward", default)``: iterate leaves with ``iter_samples``.

    ## What it does
    Reports three-argument ``getattr`` calls that read ``status`` or ``reward``.

    ## Why is this bad?
    A group element may be a list of samples (fan-out); ``getattr`` with a default then
    answers the default, and a check such as "any sample aborted" is silently always false
    (failure kind: "aborted check false on nested group").

    ## Example
    ```python
    aborted = any(getattr(s, "status", None) == Sample.Status.ABORTED for s in group)
    ```

    ## Use instead
    ```python
    aborted = any(s.status == Sample.Status.ABORTED for s in iter_samples(group))
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM013"]
    VALID = [Valid("getattr(s, 'status')\n"), Valid("getattr(s, 'name', None)\n")]
    INVALID = [Invalid("x = getattr(s, 'status', None)\n", line=1, col=4),
               Invalid("x = [getattr(s, 'reward', 0.0) for s in group]\n", line=1, col=5)]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "getattr" \
                and len(node.args) == 3:
            attr = string_value(node.args[1].value)
            if attr in ("status", "reward"):
                self.report(node, self.INVARIANT.render(attr=attr))
