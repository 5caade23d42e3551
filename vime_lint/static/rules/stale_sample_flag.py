"""VIM032: no ``.truncated`` / ``.aborted`` booleans on samples: read ``status``.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static.rules._samples import SAMPLE_IMPORT, SampleTracker

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
        Valid("def f(sample):\n    return sample.status\n"),
        Valid("def f(output):\n    return output.truncated\n"),
        # another library's iter_samples (by qualified name, not by spelling): its rows
        Valid("from mylib import iter_samples\ndef f(data):\n"
              "    for row in iter_samples(data):\n        row.truncated = True\n"),
        Valid("import mylib as ml\ndef f(data):\n"
              "    for row in ml.iter_samples(data):\n        print(row.aborted)\n"),
        Valid("from mylib import walk as iter_samples\ndef f(data):\n"
              "    for row in iter_samples(data):\n        print(row.truncated)\n"),
        # The status read in a class filter's comprehension; another object's getattr.
        Valid(SAMPLE_IMPORT + "class Keep:\n    def __call__(self, args, samples):\n"
              "        return [s for s in samples if s.status != Sample.Status.TRUNCATED]\n"
              "dynamic_sampling_filter = Keep()\n"),
        Valid("def f(out):\n    return getattr(out, 'truncated', False)\n"),
    ]
    INVALID = [
        Invalid("def f(sample):\n    if sample.truncated:\n        pass\n", line=2, col=7),
        # A comprehension in a class filter; a helper whose parameter is annotated with the
        # aliased Sample; getattr with a default (always the default) and setattr.
        Invalid("class Keep:\n    def __call__(self, args, samples):\n"
                "        return [s for s in samples if not s.truncated]\n"
                "dynamic_sampling_filter = Keep()\n", line=3, col=42),
        Invalid("from vime.utils.types import Sample as S\ndef _cut(s: S):\n"
                "    return s.aborted\n", line=3, col=11),
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    return 0.0 if getattr(sample, 'truncated', False) else 1.0\n",
                line=2, col=18),
        Invalid("def f(group):\n    for s in group:\n        setattr(s, 'aborted', True)\n",
                line=3, col=8),
        Invalid("def f(group):\n    for s in group:\n        s.aborted = True\n", line=3, col=8),
        # vime's iter_samples under other names
        Invalid("from vime.rollout.base_types import iter_samples as leaves\ndef f(data):\n"
                "    for row in leaves(data):\n        row.truncated = True\n", line=4, col=8),
        Invalid("import vime.rollout.base_types as bt\ndef f(data):\n"
                "    for row in bt.iter_samples(data):\n        print(row.aborted)\n",
                line=4, col=14),
        Invalid("from vime.rollout import base_types\ndef f(data):\n"
                "    for row in base_types.iter_samples(data):\n"
                "        print(row.truncated)\n", line=4, col=14),
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
