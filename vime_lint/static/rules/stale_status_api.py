"""VIM007: ``status`` is set from and compared with ``Sample.Status`` members, not strings. Status
values come from ``vime.contract.STATUS_VALUES``; nothing is copied here.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix
from vime_lint.static.rules._samples import SAMPLE_IMPORT, STATUS_BY_VALUE, SampleTracker

__all__ = ["StatusString"]


def _status_member(value: str) -> str | None:
    return STATUS_BY_VALUE.get(value.lower())


class StatusString(SampleTracker):
    """``status`` is set from and compared with ``Sample.Status`` members, not strings.

    ## What it does
    Reports ``x.status = "completed"``, ``x.status == "aborted"`` (either side),
    ``x.status in ("aborted", "truncated")`` and ``Sample(status="truncated")``. A receiver not known to hold a sample is left alone when
    it holds an instance of the module's own class, or when the module defines a class with a
    ``status`` attribute of its own (an ``Order`` whose status is ``"pending"``).

    ## Why is this bad?
    ``Sample.Status`` is an ``Enum``: a string never equals a member, so status checks are
    always false, and ``to_dict`` needs ``.value`` (failure kind: "to_dict needs .value").

    ## Example
    ```python
    sample.status = "truncated"
    ```

    ## Use instead
    ```python
    sample.status = Sample.Status.TRUNCATED
    ```

    ## Known problems
    ``setattr(sample, "status", "completed")`` is not seen.

    ## Fix safety
    Replacing a known status string with its ``Sample.Status`` member is safe when ``Sample``
    is imported in the module; no fix is offered otherwise.
    """

    INVARIANT = INVARIANTS["VIM007"]
    VALID = [
        Valid("""
            from vime.utils.types import Sample
            def f(sample):
                sample.status = Sample.Status.TRUNCATED
        """),
        Valid("response.status = 'ok'\n"),
        Valid("""
            if resp.status == 200:
                pass
        """),
        # The module's own class has a `status` (an order, a job): its strings are its own.
        Valid("""
            from dataclasses import dataclass
            @dataclass
            class Order:
                status: str
            def cancel(orders, oid):
                order = orders.get(oid)
                if order.status != 'pending':
                    raise ValueError(oid)
                order.status = 'completed'
        """),
        Valid("""
            class Job:
                def __init__(self):
                    self.status = 'pending'
                def done(self):
                    return self.status == 'completed'
        """),
        # The member's value or name compared with a string; members in a tuple; an HTTP
        # status among numbers.
        Valid("""
            def f(sample):
                return sample.status.value == 'aborted'
        """),
        Valid("""
            def f(sample):
                return sample.status.name == 'ABORTED'
        """),
        Valid(SAMPLE_IMPORT + "def f(samples):\n    return [s for s in samples if s.status in"
              " (Sample.Status.ABORTED, Sample.Status.TRUNCATED)]\n"),
        Valid("""
            def f(resp):
                return resp.status in (200, 201)
        """),
    ]
    INVALID = [
        Invalid("""
            from vime.utils.types import Sample
            def f(sample):
                sample.status = 'truncated'
        """, line=3, col=4, fixed="""
            from vime.utils.types import Sample
            def f(sample):
                sample.status = Sample.Status.TRUNCATED
        """),
        Invalid("""
            def f(x):
                if x.status == 'aborted':
                    pass
        """, line=2, col=7),
        # ... but a receiver known to hold a sample is still reported next to such a class.
        Invalid("""
            from vime.utils.types import Sample
            class Job:
                status = 'pending'
            def f(sample: Sample):
                return sample.status == 'aborted'
        """, line=5, col=11, fixed="""
            from vime.utils.types import Sample
            class Job:
                status = 'pending'
            def f(sample: Sample):
                return sample.status == Sample.Status.ABORTED
        """),
        # In a comprehension (aliased import, the fix spells the alias); membership in a
        # tuple of strings; the string on the left; a class generate hook's store.
        Invalid("""
            from vime.utils.types import Sample as S
            def f(samples):
                return [s for s in samples if s.status == 'completed']
        """, line=3, col=34, fixed="""
            from vime.utils.types import Sample as S
            def f(samples):
                return [s for s in samples if s.status == S.Status.COMPLETED]
        """),
        Invalid("""
            def f(sample):
                if sample.status in ('aborted', 'truncated'):
                    return None
        """, line=2, col=7),
        Invalid("""
            from vime.utils.types import Sample
            def f(sample):
                return 'aborted' == sample.status
        """, line=3, col=11, fixed="""
            from vime.utils.types import Sample
            def f(sample):
                return Sample.Status.ABORTED == sample.status
        """),
        Invalid("""
            from vime.utils.types import Sample
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample.status = 'completed'
                    return sample
            generate = Gen()
        """, line=4, col=8, fixed="""
            from vime.utils.types import Sample
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample.status = Sample.Status.COMPLETED
                    return sample
            generate = Gen()
        """),
        Invalid("""
            from vime.utils.types import Sample
            s = Sample(prompt='p', status='completed')
        """, line=2, col=4, fixed="""
            from vime.utils.types import Sample
            s = Sample(prompt='p', status=Sample.Status.COMPLETED)
        """),
    ]

    def _member(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        value = string_value(node)
        member = _status_member(value) if value is not None else None
        alias = self.context.semantic.imported_as("Sample")
        if member is None or alias is None:
            return None
        return cst.parse_expression(f"{alias}.Status.{member}")

    def _report(self, node: cst.CSTNode, literal: cst.BaseExpression, what: str) -> None:
        repl = self._member(literal)
        value = string_value(literal)
        fix = Fix(f"Use `Sample.Status.{_status_member(value or '')}`", True,
                  ((literal, repl),)) if repl is not None else None
        self.report(node, self.INVARIANT.render(
            problem=f"{what} the string {value!r} instead of a `Sample.Status` member"), fix=fix)

    def _other_status(self, receiver: cst.BaseExpression) -> bool:
        """``receiver.status`` may well be another class's: ``receiver`` is not known to hold a
        sample and the module defines a class of its own with a ``status`` attribute (an
        ``Order`` dataclass, a tool-call record), or ``receiver`` holds an instance of one."""
        if self.is_sample(receiver):
            return False
        semantic = self.context.semantic
        if semantic.instance_class(receiver, self.current, self.owner) is not None:
            return True
        return any(isinstance(d, cst.ClassDef) and semantic.class_owns(d, "status")
                   for d in semantic.definitions.values())

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        value = string_value(node.value)
        if value is None:
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "status" and (
                    self.is_sample(tgt.value) or (_status_member(value) is not None
                                                  and not self._other_status(tgt.value))):
                self._report(node, node.value, "`status` is set to")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        if len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator,
                                                     (cst.Equal, cst.NotEqual)):
            right = node.comparisons[0].comparator
            if _is_status(right) and not _is_status(left) and string_value(left) is not None:
                swapped = node.with_changes(    # "aborted" == sample.status
                    left=right, comparisons=[node.comparisons[0].with_changes(comparator=left)])
                self._compare(swapped, right, report_at=node)
                return
        if _is_status(left):
            self._compare(node, left, report_at=None)

    def _compare(self, node: cst.Comparison, left: cst.BaseExpression,
                 report_at: cst.CSTNode | None) -> None:
        assert isinstance(left, cst.Attribute)
        if self._other_status(left.value):
            return
        for comp in node.comparisons:
            value = string_value(comp.comparator)
            if value is not None and _status_member(value) is not None \
                    and isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                self._report(report_at or node, comp.comparator, "`status` is compared with")
            elif isinstance(comp.operator, (cst.In, cst.NotIn)) \
                    and isinstance(comp.comparator, (cst.Tuple, cst.List, cst.Set)):
                strings = [string_value(el.value) for el in comp.comparator.elements]
                members = [v for v in strings if v is not None and _status_member(v)]
                if members:   # sample.status in ("aborted", "truncated"): never true
                    self.report(report_at or node, self.INVARIANT.render(
                        problem=f"`status` is looked up among the strings "
                        f"{', '.join(repr(m) for m in members)} instead of `Sample.Status` "
                        "members"))

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.semantic.refers_to(node.func, "Sample"):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "status" \
                    and string_value(a.value) is not None:
                self._report(node, a.value, "`status` is built from")


def _is_status(expr: cst.BaseExpression) -> bool:
    """``x.status``."""
    return isinstance(expr, cst.Attribute) and expr.attr.value == "status"
