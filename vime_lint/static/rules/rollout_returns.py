"""What the rollout function returns on the train and eval paths: VIM002, VIM003.

:class:`RawRolloutReturn` (VIM003) checks that every ``return`` gives a
``RolloutFnTrainOutput`` / ``RolloutFnEvalOutput``; :class:`EvaluationBranch` (VIM002) that
``evaluation`` is read and each path returns its own output type. The output class names and
:func:`is_output_call` are also used by the eval-data rule (VIM020).

See ``docs/contract.md`` §3, §4 (the ``call_rollout_fn`` table) and §6a.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from vime.contract import INVARIANTS, Severity
from vime_lint.static._cst import body_statements, may_fall_through
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix, FunctionTracker
from vime_lint.static.analysis import FunctionFacts
from vime_lint.static.rules.signatures import ROLLOUT_DESTS

__all__ = ["EVAL_OUT", "EvaluationBranch", "RawRolloutReturn", "TRAIN_OUT", "is_output_call"]

TRAIN_OUT = "RolloutFnTrainOutput"
EVAL_OUT = "RolloutFnEvalOutput"
BASE_TYPES = "vime.rollout.base_types"

_IMPORTS = "from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"


def is_output_call(node: cst.BaseExpression | None, cls: str) -> bool:
    """True for ``RolloutFnTrainOutput(...)`` / ``bt.RolloutFnTrainOutput(...)`` (by name)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Name):
        return func.value == cls
    return isinstance(func, cst.Attribute) and func.attr.value == cls


_RAW_CALLS = {"dict": "a bare dict", "list": "a bare list", "sorted": "a bare list",
              "tuple": "a tuple"}


def classify(expr: cst.BaseExpression | None, local: FunctionFacts, depth: int = 0) -> list[str]:
    """The raw kinds ``expr`` can evaluate to (empty: an output object or unknown)."""
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return ["None"]
    if isinstance(expr, cst.Tuple):
        return ["a tuple"]
    if isinstance(expr, (cst.List, cst.ListComp)):
        return ["a bare list"]
    if isinstance(expr, (cst.Dict, cst.DictComp)):
        return ["a bare dict"]
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) \
            and expr.func.value in _RAW_CALLS:
        return [_RAW_CALLS[expr.func.value]]
    if isinstance(expr, cst.IfExp):
        return classify(expr.body, local, depth) + classify(expr.orelse, local, depth)
    if isinstance(expr, cst.Name) and depth < 3:
        values = local.values.get(expr.value)
        if not values or any(v is None for v in values):
            return []
        kinds = [classify(v, local, depth + 1) for v in values]
        if all(len(k) == 1 for k in kinds) and len({k[0] for k in kinds}) == 1:
            return kinds[0]
    return []


class RawRolloutReturn(FunctionTracker):
    """The rollout function returns ``RolloutFnTrainOutput`` / ``RolloutFnEvalOutput``.

    ## What it does
    Looks at every ``return`` of the rollout (or eval) function: a raw list or dict (also
    through a local variable, ``dict(...)``, ``list(...)`` or a conditional expression) is
    reported as a warning; ``return None``, a bare ``return``, a tuple, a generator
    (``yield``) or a path that falls off the end of the function is an error.

    ## Why is this bad?
    ``call_rollout_fn`` wraps a bare list or dict with a ``DeprecationWarning`` only; None, a
    tuple or a generator raise ``TypeError`` at the first rollout step, after engines and
    trainer have started (failure kind: "runtime TypeError").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        return groups
    ```

    ## Use instead
    ```python
    from vime.rollout.base_types import RolloutFnTrainOutput

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Fix safety
    Wrapping a returned list in ``RolloutFnTrainOutput(samples=...)`` (adding the import if
    missing) is unsafe: it is wrong on an evaluation path, which needs eval data instead.
    """

    INVARIANT = INVARIANTS["VIM003"]
    NEEDS_HOOKS = True
    VALID = [
        Valid(_IMPORTS + "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
              "    return RolloutFnTrainOutput(samples=[])\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    return run(rollout_async(args, rollout_id, data_source, evaluation))\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    while True:\n        pass\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    raise NotImplementedError\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    out = data_source.get_samples(1)\n    return out\n"),
    ]
    INVALID = [
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = [data_source.get_samples(1)]\n    return groups\n",
                line=3, col=11, severity="warning",
                fixed="from vime.rollout.base_types import RolloutFnTrainOutput\n"
                      "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                      "    groups = [data_source.get_samples(1)]\n"
                      "    return RolloutFnTrainOutput(samples=groups)\n"),
        Invalid("import vime.rollout.base_types as bt\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return dict(toy={})\n", line=3, col=11, severity="warning"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    if evaluation:\n        return None\n"
                "    return RolloutFnTrainOutput(samples=[])\n", line=3, col=15,
                severity="error"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    data_source.get_samples(1)\n", line=1, col=4, severity="error"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    yield 1\n", line=1, col=4, severity="error"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return [] if evaluation else {}\n", line=2, col=11),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return groups, {}\n", line=2, col=11, severity="error"),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in ROLLOUT_DESTS:
            return
        name = binding.function
        expected = f"{TRAIN_OUT} / {EVAL_OUT}"
        local = self.context.semantic.facts(node)
        if local.yields:
            self.report(node.name, self.INVARIANT.render(
                name=name, actual="a generator (it contains `yield`)", expected=expected))
            return
        for ret in local.returns:
            kinds = classify(ret.value, local)
            for kind in dict.fromkeys(kinds):
                severity: Severity = "warning" if kind in ("a bare list", "a bare dict") \
                    else "error"
                fix = None
                if kinds == ["a bare list"] and ret.value is not None:
                    fix = self._wrap_fix(ret.value)
                target = ret.value if ret.value is not None else ret.node
                self.report(target, self.INVARIANT.render(name=name, actual=kind,
                                                          expected=expected),
                            severity=severity, fix=fix)
        if may_fall_through(node.body):
            self.report(node.name, self.INVARIANT.render(
                name=name, actual="None (the function can end without `return`)",
                expected=expected))

    def _wrap_fix(self, value: cst.BaseExpression) -> Fix:
        local = self.context.semantic.imported_as(TRAIN_OUT)
        imports: tuple[tuple[str, str], ...] = ()
        if local is None:
            local = TRAIN_OUT
            imports = ((BASE_TYPES, TRAIN_OUT),)
        call = cst.Call(func=cst.Name(local), args=[cst.Arg(
            value=value, keyword=cst.Name("samples"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])
        return Fix(f"Wrap in `{TRAIN_OUT}(samples=...)`", False, ((value, call),), imports)


def _evaluation_test(test: cst.BaseExpression) -> str | None:
    """"eval" when ``test`` is ``evaluation``, "train" for ``not evaluation``, else None."""
    if isinstance(test, cst.Name) and test.value == "evaluation":
        return "eval"
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and isinstance(test.expression, cst.Name) and test.expression.value == "evaluation":
        return "train"
    return None


def _sided_returns(stmts: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
                   side: str | None) -> Iterator[tuple[cst.Return, str | None]]:
    """Each ``return`` with the branch it is on: "eval", "train" or None (either)."""
    rest_side = side
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return):
                    yield small, rest_side
        elif isinstance(stmt, cst.Return):
            yield stmt, rest_side
        elif isinstance(stmt, cst.If):
            branch = _evaluation_test(stmt.test)
            if branch is None:
                yield from _sided_returns(body_statements(stmt.body), rest_side)
                if isinstance(stmt.orelse, cst.Else):
                    yield from _sided_returns(body_statements(stmt.orelse.body), rest_side)
                elif isinstance(stmt.orelse, cst.If):
                    yield from _sided_returns([stmt.orelse], rest_side)
                continue
            other = "train" if branch == "eval" else "eval"
            yield from _sided_returns(body_statements(stmt.body), branch)
            if isinstance(stmt.orelse, cst.Else):
                yield from _sided_returns(body_statements(stmt.orelse.body), other)
            elif isinstance(stmt.orelse, cst.If):
                yield from _sided_returns([stmt.orelse], other)
            elif not may_fall_through(stmt.body):
                rest_side = other
        elif isinstance(stmt, (cst.For, cst.While, cst.With)):
            yield from _sided_returns(body_statements(stmt.body), rest_side)
        elif isinstance(stmt, cst.Try):
            yield from _sided_returns(body_statements(stmt.body), rest_side)
            for h in stmt.handlers:
                yield from _sided_returns(body_statements(h.body), rest_side)


class EvaluationBranch(FunctionTracker):
    """The rollout function reads ``evaluation`` and returns eval output on the eval path.

    ## What it does
    Reports a rollout function whose ``evaluation`` parameter is never read or forwarded, and
    a ``return RolloutFnTrainOutput(...)`` under ``if evaluation:`` (or a
    ``RolloutFnEvalOutput`` on the train path). An error when the launch scripts configure
    evaluation (``--eval-interval``, ``--eval-prompt-data``, ``--eval-config``), else a warning.

    ## Why is this bad?
    Eval steps call the same function with ``evaluation=True``. A function that ignores the
    flag returns train output there, which ``call_rollout_fn`` rejects mid-run (failure kind:
    "rejected by call_rollout_fn").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        return RolloutFnTrainOutput(samples=data_source.get_samples(1))
    ```

    ## Use instead
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        if evaluation:
            return RolloutFnEvalOutput(data=run_eval(args))
        return RolloutFnTrainOutput(samples=data_source.get_samples(1))
    ```

    ## Fix safety
    No fix: the eval path needs code only the author can write.
    """

    INVARIANT = INVARIANTS["VIM002"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
              "    return RolloutFnTrainOutput(samples=[])\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    return helper(args, data_source, evaluation=evaluation)\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    if not evaluation:\n        return RolloutFnTrainOutput(samples=[])\n"
              "    return RolloutFnEvalOutput(data={})\n"),
    ]
    INVALID = [
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return RolloutFnTrainOutput(samples=[])\n", line=1, col=52,
                severity="warning"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return RolloutFnTrainOutput(samples=[])\n", line=1, col=52,
                severity="error", options={"launch_flags": ["--eval-interval"]}),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    if evaluation:\n        return RolloutFnTrainOutput(samples=[])\n"
                "    return RolloutFnTrainOutput(samples=[])\n", line=3, col=15),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    if evaluation:\n        return RolloutFnEvalOutput(data={})\n"
                "    return RolloutFnEvalOutput(data={})\n", line=4, col=11),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in ROLLOUT_DESTS:
            return
        name = binding.function
        severity: Severity = "error" if self.context.options.eval_configured else "warning"
        param = next((p for p in (*node.params.params, *node.params.kwonly_params)
                      if p.name.value == "evaluation"), None)
        if param is None:
            return  # VIM001 reports the missing parameter
        if "evaluation" not in self.context.semantic.facts(node).names:
            self.report(param.name, self.INVARIANT.render(
                name=name, problem="never reads or forwards `evaluation`, so eval steps get "
                "train output"), severity=severity)
            return
        for ret, side in _sided_returns(body_statements(node.body), None):
            if side == "eval" and is_output_call(ret.value, TRAIN_OUT):
                assert ret.value is not None
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem=f"returns {TRAIN_OUT} on the evaluation=True path"),
                    severity=severity)
            elif side == "train" and is_output_call(ret.value, EVAL_OUT):
                assert ret.value is not None
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem=f"returns {EVAL_OUT} on the evaluation=False path"),
                    severity=severity)
