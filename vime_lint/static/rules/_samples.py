"""Which expressions hold a ``Sample``, as far as the code shows it (shared by rule families).

A name holds a sample when it is a hook parameter named ``sample`` or a parameter annotated
``Sample`` (any import alias), is assigned ``Sample(...)``, loops over vime's
``iter_samples(...)`` (by qualified name: also ``bt.iter_samples`` or an ``as`` alias), over a
name ending in ``group``/``samples`` or over a local list of ``Sample(...)`` calls,
or is spelled ``sample``/``*_sample`` (:func:`vime_lint.static.analysis.is_sample_name`). Rules about Sample attributes only fire on such names,
so an unrelated object with a ``.status`` or ``.truncated`` attribute is left alone.

Also the ``Sample.Status`` member of each status value, the ``Sample`` import line that
rule examples start with, and the field a misspelt attribute names (:func:`suggest_field`).
"""

from __future__ import annotations

import difflib

import libcst as cst

from vime.contract import SAMPLE_FIELD_NAMES, STATUS_VALUES
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import is_sample_name

__all__ = ["SAMPLE_IMPORT", "STATUS_BY_VALUE", "SampleTracker", "suggest_field"]

#: The import that rule examples (VALID / INVALID cases) using ``Sample`` start with.
SAMPLE_IMPORT = "from vime.utils.types import Sample\n"
#: Status value -> ``Sample.Status`` member name (``"truncated"`` -> ``"TRUNCATED"``).
STATUS_BY_VALUE = {value: name for name, value in STATUS_VALUES}


def _group_like(name: str) -> bool:
    return name.endswith("group") or name.endswith("samples") or name == "batch"


class SampleTracker(FunctionTracker):
    """A rule that knows which local names hold samples (``self.is_sample(expr)``)."""

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.sample_vars: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        names: set[str] = set()
        semantic = self.context.semantic
        for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            if p.name.value == "sample":
                names.add("sample")
            elif p.annotation is not None and semantic.refers_to(p.annotation.annotation,
                                                                 "Sample"):
                names.add(p.name.value)   # def fill(s: Sample) (any import alias)
        self.sample_vars.append(names)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.sample_vars.pop()
        super().leave_FunctionDef(original_node)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        # ``Sample(...)``, or a local alias of a known sample (``cur = sample``).
        if (isinstance(value, cst.Call) and self.context.semantic.refers_to(value.func, "Sample")) \
                or self.is_sample(value):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    self.sample_vars[-1].add(t.target.value)

    def visit_For(self, node: cst.For) -> None:
        if not isinstance(node.target, cst.Name):
            return
        it = node.iter
        if isinstance(it, cst.Call) and self.context.semantic.refers_to(it.func, "iter_samples"):
            self.sample_vars[-1].add(node.target.value)
        elif isinstance(it, cst.Name) and (_group_like(it.value) or self._built_samples(it)):
            self.sample_vars[-1].add(node.target.value)

    def _built_samples(self, name: cst.Name) -> bool:
        """``name`` is bound in the current function only to lists of ``Sample(...)`` calls
        (``out = [Sample(prompt=p) for p in prompts]``)."""
        fn = self.current
        values = self.context.semantic.facts(fn).values.get(name.value) if fn is not None \
            else None
        if not values:
            return False
        semantic = self.context.semantic

        def built(e: cst.BaseExpression | None) -> bool:
            return isinstance(e, cst.Call) and semantic.refers_to(e.func, "Sample")
        return all(
            (isinstance(v, (cst.ListComp, cst.GeneratorExp)) and built(v.elt))
            or (isinstance(v, cst.List) and bool(v.elements)
                and all(built(el.value) for el in v.elements))
            for v in values)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.iter, cst.Name) \
                and _group_like(node.iter.value):
            self.sample_vars[-1].add(node.target.value)

    def _comprehension(self, for_in: cst.CompFor) -> None:
        # A comprehension's element is visited before its ``for``: register the targets first.
        cur: cst.CompFor | None = for_in
        while cur is not None:
            self.visit_CompFor(cur)
            cur = cur.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node.for_in)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node.for_in)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node.for_in)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node.for_in)

    def is_sample(self, expr: cst.BaseExpression) -> bool:
        """True when ``expr`` is a name known (or spelled) to hold a ``Sample``."""
        return isinstance(expr, cst.Name) and is_sample_name(expr.value, self.sample_vars[-1])


def suggest_field(name: str) -> str:
    """``"; did you mean `field`?"`` for the ``Sample`` field closest to ``name``, or ``""``."""
    close = difflib.get_close_matches(name, sorted(SAMPLE_FIELD_NAMES), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""
