"""VIM002: the rollout function reads ``evaluation`` and each path returns its own output type
(``RolloutFnEvalOutput`` on the eval path).

See ``docs/contract.md`` §3, §4 (the ``call_rollout_fn`` table) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS, Severity
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import EVAL_OUT, TRAIN_OUT
from vime_lint.static.rules._signature_checks import ROLLOUT_DESTS

__all__ = ["EvaluationBranch"]


class EvaluationBranch(FunctionTracker):
    """The rollout function reads ``evaluation`` and returns eval output on the eval path.

    ## What it does
    Reports a rollout function whose ``evaluation`` parameter is never read or forwarded, and
    a ``return RolloutFnTrainOutput(...)`` under ``if evaluation:`` (or a
    ``RolloutFnEvalOutput`` on the train path). An error when the launch that names the
    function configures evaluation (``--eval-interval``, ``--eval-prompt-data``,
    ``--eval-config``; for a hook named in ``[tool.vime_lint] hooks``, any launch), else a
    warning: another launch's evaluation says nothing about a function it does not name.

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
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnEvalOutput(data={})
                return RolloutFnTrainOutput(samples=[])
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return helper(args, data_source, evaluation=evaluation)
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if not evaluation:
                    return RolloutFnTrainOutput(samples=[])
                return RolloutFnEvalOutput(data={})
        """),
        # An instance's __call__ through an aliased module, both paths right.
        Valid("""
            import vime.rollout.base_types as bt
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    if evaluation:
                        return bt.RolloutFnEvalOutput(data={})
                    return bt.RolloutFnTrainOutput(samples=data_source.get_samples(1))
            generate_rollout = Rollout()
        """),
        # A local alias of the flag (bool(evaluation)), both paths right.
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                is_eval = bool(evaluation)
                if not is_eval:
                    return RolloutFnTrainOutput(samples=data_source.get_samples(1))
                return RolloutFnEvalOutput(data={})
        """),
    ]
    INVALID = [
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return RolloutFnTrainOutput(samples=[])
        """, line=1, col=52, severity="warning"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return RolloutFnTrainOutput(samples=[])
        """, line=1, col=52, severity="error",
           options={"hooks": {"generate_rollout": "rollout_function_path"},
                    "launch_flags": ["--eval-interval"]}),
        # a launch that configures evaluation but names another rollout function: a warning
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return RolloutFnTrainOutput(samples=[])
        """, line=1, col=52, severity="warning", options={"launch_flags": ["--eval-interval"]}),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnTrainOutput(samples=[])
                return RolloutFnTrainOutput(samples=[])
        """, line=3, col=15),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnEvalOutput(data={})
                return RolloutFnEvalOutput(data={})
        """, line=4, col=11),
        # An aliased import, bound to a name first.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput as TrainOut
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = TrainOut(samples=data_source.get_samples(1))
                if evaluation is True:
                    return out
                return out
        """, line=5, col=15),
        # Built by a module helper, on the eval path of an instance's __call__.
        Invalid("""
            import vime.rollout.base_types as bt
            def _train(groups):
                return bt.RolloutFnTrainOutput(samples=groups)
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    if evaluation:
                        return _train([])
                    return _train(data_source.get_samples(1))
            generate_rollout = Rollout()
        """, line=7, col=19),
        # Train output under a local alias of the flag, in an instance's __call__.
        Invalid("""
            import vime.rollout.base_types as bt
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    mode = evaluation
                    if mode:
                        return bt.RolloutFnTrainOutput(samples=[])
                    return bt.RolloutFnTrainOutput(samples=data_source.get_samples(1))
            generate_rollout = Rollout()
        """, line=6, col=19),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in ROLLOUT_DESTS:
            return
        name = binding.function
        severity: Severity = "error" if self.context.options.eval_configured(binding) else "warning"
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
            for kind, leaf in sem.returned_kinds(node, ret.value, self.owner):
                if kind != wrong:
                    continue
                via = f" (built as `{code_of(leaf)[:40]}`)" if leaf is not None \
                    and leaf is not ret.value else ""
                path = "evaluation=True" if ret.side == "eval" else "evaluation=False"
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem=f"returns {wrong} on the {path} path{via}"),
                    severity=severity)
                break
