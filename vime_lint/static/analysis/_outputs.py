"""What a rollout function returns: the kinds of a returned value (vime's train or eval output,
``None``, a tuple, a bare list or dict), followed to its leaves; a fact of the semantic model
(:meth:`Semantic.returned_kinds`), read by VIM002, VIM003 and VIM036. Also the output class
names and :func:`is_output_call` (VIM020).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["EVAL_OUT", "FINALIZE", "TRAIN_OUT", "classify", "is_output_call", "kind_of"]


TRAIN_OUT = "RolloutFnTrainOutput"
EVAL_OUT = "RolloutFnEvalOutput"
#: ``vime.rollout.base_types.finalize_rollout_groups``: returns a ``RolloutFnTrainOutput``.
FINALIZE = "finalize_rollout_groups"


def is_output_call(node: cst.BaseExpression | None, cls: str, semantic: Semantic) -> bool:
    """True for a call of vime's ``cls`` (``RolloutFnTrainOutput``), however it is imported."""
    return isinstance(node, cst.Call) and semantic.refers_to(node.func, cls)


_RAW_CALLS = {"dict": "a bare dict", "list": "a bare list", "sorted": "a bare list",
              "tuple": "a tuple"}


def kind_of(expr: cst.BaseExpression | None, semantic: Semantic) -> str | None:
    """What one returned leaf is: ``TRAIN_OUT``, ``EVAL_OUT``, ``"None"``, ``"a tuple"``,
    ``"a bare list"``, ``"a bare dict"``, or None when the code does not show it."""
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return "None"
    if isinstance(expr, cst.Tuple):
        return "a tuple"
    if isinstance(expr, (cst.List, cst.ListComp)):
        return "a bare list"
    if isinstance(expr, (cst.Dict, cst.DictComp)):
        return "a bare dict"
    if isinstance(expr, cst.Call):
        # vime's finalize_rollout_groups(args, rollout_id, groups) builds the train output
        if semantic.refers_to(expr.func, TRAIN_OUT) or semantic.refers_to(expr.func, FINALIZE):
            return TRAIN_OUT
        if semantic.refers_to(expr.func, EVAL_OUT):
            return EVAL_OUT
        if isinstance(expr.func, cst.Name) and expr.func.value in _RAW_CALLS \
                and semantic.qualified(expr.func) <= {expr.func.value,
                                                      "builtins." + expr.func.value}:
            return _RAW_CALLS[expr.func.value]
    return None


def classify(fn: cst.FunctionDef, expr: cst.BaseExpression | None, semantic: Semantic,
             owner: cst.ClassDef | None = None) -> list[tuple[str, cst.BaseExpression | None]]:
    """The kinds a returned expression can have, following local names, conditional
    expressions and the module's own helpers (:meth:`Semantic.origins`); each with the leaf
    it comes from. Empty when any leaf is unknown (precision first: nothing is reported)."""
    if expr is None:
        return [("None", None)]
    out: list[tuple[str, cst.BaseExpression | None]] = []
    for leaf, _where in semantic.origins(fn, expr, owner=owner):
        kind = kind_of(leaf, semantic) if leaf is not None else None
        if kind is None:
            return [] if not isinstance(expr, cst.IfExp) else [
                k for k in out if k[0] not in (TRAIN_OUT, EVAL_OUT)]
        out.append((kind, leaf))
    return out
