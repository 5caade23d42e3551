"""What the rollout function returns on the train and eval paths: VIM002, VIM003.

:class:`RawRolloutReturn` (VIM003) checks that every ``return`` gives a
``RolloutFnTrainOutput`` / ``RolloutFnEvalOutput``; :class:`EvaluationBranch` (VIM002) that
``evaluation`` is read and each path returns its own output type. The output class names and
:func:`is_output_call` are also used by the eval-data rule (VIM020).

See ``docs/contract.md`` §3, §4 (the ``call_rollout_fn`` table) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS, Severity
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix, FunctionTracker
from vime_lint.static.analysis import Semantic, Side
from vime_lint.static.rules._signature_checks import ROLLOUT_DESTS

__all__ = ["EVAL_OUT", "EvaluationBranch", "RawRolloutReturn", "TRAIN_OUT", "is_output_call"]

TRAIN_OUT = "RolloutFnTrainOutput"
EVAL_OUT = "RolloutFnEvalOutput"
BASE_TYPES = "vime.rollout.base_types"
#: ``vime.rollout.base_types.finalize_rollout_groups``: returns a ``RolloutFnTrainOutput``.
FINALIZE = "finalize_rollout_groups"

_IMPORTS = "from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"


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


class RawRolloutReturn(FunctionTracker):
    """The rollout function returns ``RolloutFnTrainOutput`` / ``RolloutFnEvalOutput``.

    ## What it does
    Looks at every ``return`` of the rollout (or eval) function, following local variables,
    conditional expressions and the module's own helpers and nested functions that build the
    value. A bare list on the train path and a bare dict on the eval path are warnings
    (``call_rollout_fn`` wraps them with a ``DeprecationWarning``); a bare dict on the train
    path (or on a path that is not split by ``evaluation``), a bare list on the eval path,
    ``return None``, a bare ``return``, a tuple, a generator (``yield``) or a path that falls
    off the end of the function is an error.

    ## Why is this bad?
    ``call_rollout_fn`` wraps a bare list (train) or dict (eval) with a
    ``DeprecationWarning`` only; None, a tuple, a generator, a dict in train mode or a list in
    eval mode raise ``ContractError`` (VIM101) at the first rollout step, after engines and
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
        # Aliased imports, a module helper and a nested function building the outputs.
        Valid("import vime.rollout.base_types as bt\n"
              "from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput\n"
              "def _eval(args):\n    return EvalOutput(data={})\n"
              "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    if evaluation:\n        return _eval(args)\n"
              "    def pack(groups):\n        return bt.RolloutFnTrainOutput(samples=groups)\n"
              "    return pack(data_source.get_samples(1))\n"),
        # An instance whose __call__ is the rollout function.
        Valid(_IMPORTS + "class Rollout:\n"
              "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
              "        if evaluation:\n            return RolloutFnEvalOutput(data={})\n"
              "        return RolloutFnTrainOutput(samples=[])\n"
              "generate_rollout = Rollout()\n"),
    ]
    INVALID = [
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = [data_source.get_samples(1)]\n    return groups\n",
                line=3, col=11, severity="warning",
                fixed="from vime.rollout.base_types import RolloutFnTrainOutput\n"
                      "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                      "    groups = [data_source.get_samples(1)]\n"
                      "    return RolloutFnTrainOutput(samples=groups)\n"),
        # A dict on the train path is fatal (call_rollout_fn raises VIM101).
        Invalid("import vime.rollout.base_types as bt\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return dict(toy={})\n", line=3, col=11, severity="error"),
        # A dict on the eval path is only wrapped with a DeprecationWarning.
        Invalid(_IMPORTS + "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    if evaluation:\n        return {'toy': {}}\n"
                "    return RolloutFnTrainOutput(samples=[])\n", line=4, col=15,
                severity="warning"),
        # A list on the eval path is fatal.
        Invalid(_IMPORTS + "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    if not evaluation:\n        return RolloutFnTrainOutput(samples=[])\n"
                "    return [s for s in []]\n", line=5, col=11, severity="error"),
        # Built by a module helper, step by step, and returned through it.
        Invalid("def _finish(groups):\n    out = {}\n    out['samples'] = groups\n    return out\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = data_source.get_samples(1)\n    return _finish(groups)\n",
                line=7, col=11, severity="error"),
        # Built in a nested function.
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    def pack(groups):\n        return tuple(groups)\n"
                "    return pack(data_source.get_samples(1))\n", line=4, col=11,
                severity="error"),
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
        sem = self.context.semantic
        local = sem.facts(node)
        if local.yields:
            self.report(node.name, self.INVARIANT.render(
                name=name, actual="a generator (it contains `yield`)", expected=expected))
            return
        for ret in local.returns:
            kinds = classify(node, ret.value, sem, self.owner)
            for kind in dict.fromkeys(k for k, _ in kinds):
                if kind in (TRAIN_OUT, EVAL_OUT):
                    continue
                severity = _severity(kind, ret.side)
                fix = None
                if [k for k, _ in kinds] == ["a bare list"] and ret.value is not None \
                        and ret.side != "eval":
                    fix = self._wrap_fix(ret.value)
                target = ret.value if ret.value is not None else ret.node
                self.report(target, self.INVARIANT.render(
                    name=name, actual=_describe(kind, ret.value, kinds), expected=expected)
                    + _path_note(ret.side), severity=severity, fix=fix)
        if local.falls_through:
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


def _severity(kind: str, side: Side) -> Severity:
    """``call_rollout_fn`` wraps a bare list on the train path and a bare dict on the eval
    path with a DeprecationWarning; anything else fails the step (VIM101)."""
    if kind == "a bare list" and side != "eval":
        return "warning"
    if kind == "a bare dict" and side == "eval":
        return "warning"
    return "error"


def _describe(kind: str, value: cst.BaseExpression | None,
              kinds: list[tuple[str, cst.BaseExpression | None]]) -> str:
    leaf = next((leaf for k, leaf in kinds if k == kind), None)
    if leaf is not None and value is not None and leaf is not value \
            and not isinstance(value, cst.IfExp):
        return f"{kind} (built as `{code_of(leaf)[:40]}`)"
    return kind


def _path_note(side: Side) -> str:
    if side == "eval":
        return " on the evaluation=True path"
    if side == "train":
        return " on the evaluation=False path"
    return ""


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
        # An instance's __call__ through an aliased module, both paths right.
        Valid("import vime.rollout.base_types as bt\n"
              "class Rollout:\n"
              "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
              "        if evaluation:\n"
              "            return bt.RolloutFnEvalOutput(data={})\n"
              "        return bt.RolloutFnTrainOutput(samples=data_source.get_samples(1))\n"
              "generate_rollout = Rollout()\n"),
        # A local alias of the flag (bool(evaluation)), both paths right.
        Valid("from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput\n"
              "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    is_eval = bool(evaluation)\n"
              "    if not is_eval:\n"
              "        return RolloutFnTrainOutput(samples=data_source.get_samples(1))\n"
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
        # An aliased import, bound to a name first.
        Invalid("from vime.rollout.base_types import RolloutFnTrainOutput as TrainOut\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    out = TrainOut(samples=data_source.get_samples(1))\n"
                "    if evaluation is True:\n        return out\n    return out\n",
                line=5, col=15),
        # Built by a module helper, on the eval path of an instance's __call__.
        Invalid("import vime.rollout.base_types as bt\n"
                "def _train(groups):\n    return bt.RolloutFnTrainOutput(samples=groups)\n"
                "class Rollout:\n"
                "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
                "        if evaluation:\n            return _train([])\n"
                "        return _train(data_source.get_samples(1))\n"
                "generate_rollout = Rollout()\n", line=7, col=19),
        # Train output under a local alias of the flag, in an instance's __call__.
        Invalid("import vime.rollout.base_types as bt\n"
                "class Rollout:\n"
                "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
                "        mode = evaluation\n"
                "        if mode:\n"
                "            return bt.RolloutFnTrainOutput(samples=[])\n"
                "        return bt.RolloutFnTrainOutput(samples=data_source.get_samples(1))\n"
                "generate_rollout = Rollout()\n", line=6, col=19),
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
        sem = self.context.semantic
        for ret in sem.facts(node).returns:
            if ret.side is None or ret.value is None:
                continue
            wrong = TRAIN_OUT if ret.side == "eval" else EVAL_OUT
            for kind, leaf in classify(node, ret.value, sem, self.owner):
                if kind != wrong:
                    continue
                via = f" (built as `{code_of(leaf)[:40]}`)" if leaf is not None \
                    and leaf is not ret.value else ""
                path = "evaluation=True" if ret.side == "eval" else "evaluation=False"
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem=f"returns {wrong} on the {path} path{via}"),
                    severity=severity)
                break
