"""VIM032: no ``.truncated`` / ``.aborted`` booleans on samples: read ``status``.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["StaleSampleFlag"]


class StaleSampleFlag(SampleTracker):
    """No ``.truncated`` / ``.aborted`` booleans on samples: read ``status``.

    ## What it does
    Reports reads and writes of ``.truncated`` or ``.aborted`` on a name holding a sample
    (also through ``getattr``/``setattr`` with the name as a string).

    ## Why is this bad?
    These are fields of an old API. ``Sample`` accepts the attribute, so writing it raises
    nothing, but nothing reads it: the truncation never reaches the training data, which
    exports ``truncated`` from ``status == TRUNCATED`` only.

    ## Example
    ```python
    if sample.truncated:
        ...
    ```

    ## Use instead
    ```python
    if sample.status == Sample.Status.TRUNCATED:
        ...
    ```

    ## Fix safety
    No fix: a write needs a different statement than a read.
    """

    INVARIANT = INVARIANTS["VIM032"]
    ALIASES = ("VIM007",)
    VALID = [
        Valid("""
            def f(sample):
                return sample.status
        """),
        Valid("""
            def f(output):
                return output.truncated
        """),
        # another library's iter_samples (by qualified name, not by spelling): its rows
        Valid("""
            from mylib import iter_samples
            def f(data):
                for row in iter_samples(data):
                    row.truncated = True
        """),
        Valid("""
            import mylib as ml
            def f(data):
                for row in ml.iter_samples(data):
                    print(row.aborted)
        """),
        Valid("""
            from mylib import walk as iter_samples
            def f(data):
                for row in iter_samples(data):
                    print(row.truncated)
        """),
        # The status read in a class filter's comprehension; another object's getattr.
        Valid("""
            from vime.utils.types import Sample
            class Keep:
                def __call__(self, args, samples):
                    return [s for s in samples if s.status != Sample.Status.TRUNCATED]
            dynamic_sampling_filter = Keep()
        """),
        Valid("""
            def f(out):
                return getattr(out, 'truncated', False)
        """),
    ]
    INVALID = [
        Invalid("""
            def f(sample):
                if sample.truncated:
                    pass
        """, line=2, col=7),
        # A comprehension in a class filter; a helper whose parameter is annotated with the
        # aliased Sample; getattr with a default (always the default) and setattr.
        Invalid("""
            class Keep:
                def __call__(self, args, samples):
                    return [s for s in samples if not s.truncated]
            dynamic_sampling_filter = Keep()
        """, line=3, col=42),
        Invalid("""
            from vime.utils.types import Sample as S
            def _cut(s: S):
                return s.aborted
        """, line=3, col=11),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                return 0.0 if getattr(sample, 'truncated', False) else 1.0
        """, line=2, col=18),
        Invalid("""
            def f(group):
                for s in group:
                    setattr(s, 'aborted', True)
        """, line=3, col=8),
        Invalid("""
            def f(group):
                for s in group:
                    s.aborted = True
        """, line=3, col=8),
        # vime's iter_samples under other names
        Invalid("""
            from vime.rollout.base_types import iter_samples as leaves
            def f(data):
                for row in leaves(data):
                    row.truncated = True
        """, line=4, col=8),
        Invalid("""
            import vime.rollout.base_types as bt
            def f(data):
                for row in bt.iter_samples(data):
                    print(row.aborted)
        """, line=4, col=14),
        Invalid("""
            from vime.rollout import base_types
            def f(data):
                for row in base_types.iter_samples(data):
                    print(row.truncated)
        """, line=4, col=14),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr in ("truncated", "aborted") and self.is_sample(node.value):
            member = "TRUNCATED" if attr == "truncated" else "ABORTED"
            self.report(node, self.INVARIANT.render(
                problem=f"`.{attr}` is a stale Sample API; use `status == "
                f"Sample.Status.{member}`"))

    def visit_Call(self, node: cst.Call) -> None:
        """``getattr(sample, "truncated", False)`` / ``setattr(sample, "aborted", True)``."""
        names = self.qualified(node.func)
        if not names & {"builtins.getattr", "builtins.setattr"} or len(node.args) < 2:
            return
        attr = string_value(node.args[1].value)
        if attr in ("truncated", "aborted") and self.is_sample(node.args[0].value):
            member = "TRUNCATED" if attr == "truncated" else "ABORTED"
            self.report(node, self.INVARIANT.render(
                problem=f"`{code_of(node.func)}(..., {attr!r}, ...)` uses a stale Sample API; "
                f"use `status == Sample.Status.{member}`"))
