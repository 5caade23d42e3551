"""VIM013: no ``getattr(x, "status" | "reward", default)`` on an element of a nested group:
iterate leaves with ``iter_samples``. When the group flow (:mod:`vime_lint.static.rules._groups`)
knows the receiver is a group, VIM028 reports the ``getattr`` and this rule stays quiet, so one
mistake gives one finding.

See ``docs/contract.md`` §3 (nested groups), §7 (``get_samples``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static.rules._groups import GroupTracker, getattr_read

__all__ = ["GetattrOnGroupElement"]


class GetattrOnGroupElement(GroupTracker):
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
    VALID = [
        Valid("getattr(s, 'status')\n"),
        Valid("getattr(s, 'name', None)\n"),
        # A known group (here a key= lambda's parameter): VIM028 reports it instead.
        Valid("""
            def f(ds):
                return max(ds.get_samples(2), key=lambda g: getattr(g, 'reward', 0.0))
        """),
        # An instance's __call__: getattr with a default on args, not on an element.
        Valid("""
            class Filter:
                def __call__(self, args, samples, **kwargs):
                    key = getattr(args, 'reward_key', None)
                    return len({s.get_reward_value(args) for s in samples}) > 1 or key is None
            dynamic_sampling_filter = Filter()
        """),
        # A module helper reading another attribute with a default, in a set comprehension.
        Valid("""
            def _reward_of(sample):
                return getattr(sample, 'metadata', {}).get('score', 0.0)
            def dynamic_sampling_filter(args, samples, **kwargs):
                return len({_reward_of(s) for s in samples}) > 1
        """),
    ]
    INVALID = [
        Invalid("x = getattr(s, 'status', None)\n", line=1, col=4),
        Invalid("""
            def f(samples):
                return sorted(samples, key=lambda s: getattr(s, 'reward', 0.0))
        """, line=2, col=41),
        Invalid("x = [getattr(s, 'reward', 0.0) for s in group]\n", line=1, col=5),
        # The builtin under an aliased import, in a comprehension.
        Invalid("""
            from builtins import getattr as attr_or
            def score(samples):
                return [attr_or(s, 'reward', 0.0) for s in samples]
        """, line=3, col=12),
        # An instance's __call__, in a generator under all().
        Invalid("""
            class Filter:
                def __call__(self, args, samples, **kwargs):
                    return all(getattr(s, 'status', None) is not None for s in samples)
            dynamic_sampling_filter = Filter()
        """, line=3, col=19),
        # In a module helper the hook calls on each element.
        Invalid("""
            def _reward_of(sample):
                return getattr(sample, 'reward', None) or 0.0
            def dynamic_sampling_filter(args, samples, **kwargs):
                return len({_reward_of(s) for s in samples}) > 1
        """, line=2, col=11),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        read = getattr_read(self, node)
        if read is not None and len(node.args) == 3 and read[1] in ("status", "reward") \
                and self.group_of(read[0]) is None:  # a known group: VIM028's error
            self.report(node, self.INVARIANT.render(attr=read[1]))
