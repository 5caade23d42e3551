"""VIM003: every ``return`` of the rollout function gives a ``RolloutFnTrainOutput`` /
``RolloutFnEvalOutput``, not a raw list or dict.

See ``docs/contract.md`` §3, §4 (the ``call_rollout_fn`` table) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS, Severity
from vime.contract.invariants import raw_rollout_return_severity
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix, FunctionTracker
from vime_lint.static.analysis import EVAL_OUT, TRAIN_OUT, Side
from vime_lint.static.rules._signature_checks import ROLLOUT_DESTS

__all__ = ["RawRolloutReturn"]


BASE_TYPES = "vime.rollout.base_types"



class RawRolloutReturn(FunctionTracker):
    """The rollout function returns ``RolloutFnTrainOutput`` / ``RolloutFnEvalOutput``.

    ## What it does
    Looks at every ``return`` of the rollout (or eval) function, following local variables,
    conditional expressions, the module's own helpers, ``self`` methods and nested functions
    that build the value, and the coroutine that ``asyncio.run(...)`` or vime's ``run(...)``
    runs. A bare list on the train path and a bare dict on the eval path are warnings
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
    missing) is unsafe: it is wrong on an evaluation path, which needs eval data instead. A
    dict literal on the train path whose keys are ``RolloutFnTrainOutput``'s (``samples``,
    ``metrics``) is rebuilt as ``RolloutFnTrainOutput(samples=..., metrics=...)``, unsafe too;
    any other dict (built elsewhere, other keys, a return on both paths) gets no fix, and the
    finding says why.
    """

    INVARIANT = INVARIANTS["VIM003"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnEvalOutput(data={})
                return RolloutFnTrainOutput(samples=[])
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return run(rollout_async(args, rollout_id, data_source, evaluation))
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                while True:
                    pass
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                raise NotImplementedError
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = data_source.get_samples(1)
                return out
        """),
        # Aliased imports, a module helper and a nested function building the outputs.
        Valid("""
            import vime.rollout.base_types as bt
            from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput
            def _eval(args):
                return EvalOutput(data={})
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return _eval(args)
                def pack(groups):
                    return bt.RolloutFnTrainOutput(samples=groups)
                return pack(data_source.get_samples(1))
        """),
        # A sync function running the module's async rollout (asyncio.run, vime's run under
        # another name); a class rollout's self method with the aliased output.
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            import asyncio
            async def _go(args, data_source):
                return RolloutFnTrainOutput(samples=data_source.get_samples(1))
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return asyncio.run(_go(args, data_source))
        """),
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput as Out
            from vime.utils.async_utils import run as drive
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    return drive(self._run(data_source))
                async def _run(self, data_source):
                    return Out(samples=data_source.get_samples(1))
            generate_rollout = Rollout()
        """),
        # An instance whose __call__ is the rollout function.
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    if evaluation:
                        return RolloutFnEvalOutput(data={})
                    return RolloutFnTrainOutput(samples=[])
            generate_rollout = Rollout()
        """),
    ]
    INVALID = [
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = [data_source.get_samples(1)]
                return groups
        """, line=3, col=11, severity="warning", fixed="""
            from vime.rollout.base_types import RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = [data_source.get_samples(1)]
                return RolloutFnTrainOutput(samples=groups)
        """),
        # A dict on the train path is fatal (call_rollout_fn raises VIM101).
        Invalid("""
            import vime.rollout.base_types as bt
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return dict(toy={})
        """, line=3, col=11, severity="error"),
        # A train-path dict literal of RolloutFnTrainOutput's keys: rebuilt by the unsafe fix.
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnEvalOutput(data={})
                groups = data_source.get_samples(1)
                return {"samples": groups, "metrics": {}}
        """, line=6, col=11, severity="error", fixed="""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return RolloutFnEvalOutput(data={})
                groups = data_source.get_samples(1)
                return RolloutFnTrainOutput(samples=groups, metrics={})
        """),
        # A dict on the eval path is only wrapped with a DeprecationWarning.
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return {'toy': {}}
                return RolloutFnTrainOutput(samples=[])
        """, line=4, col=15, severity="warning"),
        # A list on the eval path is fatal.
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if not evaluation:
                    return RolloutFnTrainOutput(samples=[])
                return [s for s in []]
        """, line=5, col=11, severity="error"),
        # Built by a module helper, step by step, and returned through it.
        Invalid("""
            def _finish(groups):
                out = {}
                out['samples'] = groups
                return out
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(1)
                return _finish(groups)
        """, line=7, col=11, severity="error"),
        # A class rollout's self method building a dict; a method of an instance bound as
        # the rollout returning None; a comprehension's list; a dict comprehension through
        # a local alias; None from the coroutine asyncio.run runs.
        Invalid("""
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    return self._run(data_source)
                def _run(self, data_source):
                    return {'samples': data_source.get_samples(1)}
            generate_rollout = Rollout()
        """, line=3, col=15, severity="error"),
        Invalid("""
            class Rollout:
                def run(self, args, rollout_id, data_source, evaluation=False):
                    return None
            generate_rollout = Rollout().run
        """, line=3, col=15, severity="error"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return [g for g in data_source.get_samples(2)]
        """, line=2, col=11, severity="warning", fixed="""
            from vime.rollout.base_types import RolloutFnTrainOutput
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return RolloutFnTrainOutput(samples=[g for g in data_source.get_samples(2)])
        """),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = {k: v for k, v in [('samples', [])]}
                res = out
                return res
        """, line=4, col=11, severity="error"),
        Invalid("""
            import asyncio
            async def _go(args, data_source):
                return None
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return asyncio.run(_go(args, data_source))
        """, line=5, col=11, severity="error"),
        # Built in a nested function.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                def pack(groups):
                    return tuple(groups)
                return pack(data_source.get_samples(1))
        """, line=4, col=11, severity="error"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                if evaluation:
                    return None
                return RolloutFnTrainOutput(samples=[])
        """, line=3, col=15, severity="error"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                data_source.get_samples(1)
        """, line=1, col=4, severity="error"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                yield 1
        """, line=1, col=4, severity="error"),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return [] if evaluation else {}
        """, line=2, col=11),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return groups, {}
        """, line=2, col=11, severity="error"),
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
            kinds = sem.returned_kinds(node, ret.value, self.owner)
            for kind in dict.fromkeys(k for k, _ in kinds):
                if kind in (TRAIN_OUT, EVAL_OUT):
                    continue
                severity = _severity(kind, ret.side)
                fix = None
                note = ""
                if [k for k, _ in kinds] == ["a bare list"] and ret.value is not None \
                        and ret.side != "eval":
                    fix = self._wrap_fix(ret.value)
                elif kind == "a bare dict" and ret.side != "eval":
                    fields = _train_fields(ret.value) if ret.side == "train" else None
                    if fields is not None and ret.value is not None:
                        fix = self._train_fix(ret.value, fields)
                    else:
                        note = _no_dict_fix(ret.side)
                target = ret.value if ret.value is not None else ret.node
                self.report(target, self.INVARIANT.render(
                    name=name, actual=_describe(kind, ret.value, kinds), expected=expected)
                    + _path_note(ret.side) + note, severity=severity, fix=fix)
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


    def _train_fix(self, value: cst.BaseExpression,
                   fields: list[tuple[str, cst.BaseExpression]]) -> Fix:
        local = self.context.semantic.imported_as(TRAIN_OUT)
        imports: tuple[tuple[str, str], ...] = ()
        if local is None:
            local = TRAIN_OUT
            imports = ((BASE_TYPES, TRAIN_OUT),)
        eq = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        call = cst.Call(func=cst.Name(local), args=[
            cst.Arg(value=v, keyword=cst.Name(k), equal=eq) for k, v in fields])
        return Fix(f"Build `{TRAIN_OUT}(...)` from the dict's keys", False, ((value, call),),
                   imports)


#: The keys of a train-path dict literal that become ``RolloutFnTrainOutput``'s keywords.
_TRAIN_FIELDS = ("samples", "metrics")


def _train_fields(value: cst.BaseExpression | None
                  ) -> list[tuple[str, cst.BaseExpression]] | None:
    """``[(field, value)]`` of a dict literal (``{"samples": g, "metrics": m}``, or
    ``dict(samples=g, ...)``) whose keys are ``RolloutFnTrainOutput`` fields, ``samples``
    among them; None for any other dict (built elsewhere, computed or other keys, ``**``)."""
    pairs: list[tuple[str, cst.BaseExpression]] = []
    if isinstance(value, cst.Dict):
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            key = el.key.evaluated_value
            pairs.append((key if isinstance(key, str) else "", el.value))
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
            and value.func.value == "dict":
        for arg in value.args:
            if arg.keyword is None:
                return None
            pairs.append((arg.keyword.value, arg.value))
    else:
        return None
    keys = [k for k, _ in pairs]
    if "samples" not in keys or not set(keys) <= set(_TRAIN_FIELDS) or len(set(keys)) < len(keys):
        return None
    return pairs


def _no_dict_fix(side: Side) -> str:
    """Why ``--unsafe-fixes`` does not rewrite this dict return."""
    if side is None:
        return ("; no automatic fix: no `if evaluation:` splits this return, so the eval path "
                "takes it too, where RolloutFnEvalOutput(data=...) is due: branch on "
                "`evaluation` first")
    return ("; no automatic fix: only a dict literal with the keys of RolloutFnTrainOutput "
            "(samples, metrics) is rewritten: build RolloutFnTrainOutput(samples=groups, "
            "metrics=...) from this one")


def _severity(kind: str, side: Side) -> Severity:
    """``call_rollout_fn`` wraps a bare list on the train path and a bare dict on the eval
    path with a DeprecationWarning; anything else fails the step (VIM101). Decided by the
    contract (:func:`vime.contract.invariants.raw_rollout_return_severity`)."""
    return raw_rollout_return_severity(_RAW_TYPES.get(kind), side)


#: VIM003's kinds of raw value, as the contract's types.
_RAW_TYPES: dict[str, type] = {"a bare list": list, "a bare dict": dict}


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
