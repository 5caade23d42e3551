"""VIM055: a ``--custom-loss-function-path`` function returns ``(loss, log_dict)``, not a bare
loss; its runtime twin (VIM190) checks the value the trainer receives, at boundary B7.

See ``docs/contract.md`` §5 and §6a, and ``docs/en/training.md`` ("Trainer hooks").
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.rules._trainer_hook_bodies import _body, _describe, _tensor_like

__all__ = ["CustomLossReturnsPair"]


class CustomLossReturnsPair(FunctionTracker):
    """A custom loss returns ``(loss, log_dict)``.

    ## What it does
    Reports a ``return`` in a ``--custom-loss-function-path`` function whose value is a bare
    tensor (arithmetic, ``x.mean()``, ``torch.sum(...)``, a call of the trainer's reducer,
    the hook's fourth parameter ``sum_of_sample_mean``; a local name only ever assigned such a
    value), a tuple of another length, or None; also when every value a returned
    local name or call of the module's own helper (a ``self`` method of a class loss too)
    can hold is one of those (:meth:`~vime_lint.static.analysis.Semantic.origins`).

    ## Why is this bad?
    The trainer unpacks ``loss, log_dict = custom_loss(args, batch, logits,
    sum_of_sample_mean)``: a bare scalar tensor fails to unpack, a vector silently unpacks its
    first two elements. Either happens at the first micro-batch, after a whole rollout was
    generated. Runtime twin: VIM190.

    ## Example
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        return sum_of_sample_mean(per_token_loss(logits, batch))
    ```

    ## Use instead
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        loss = sum_of_sample_mean(per_token_loss(logits, batch))
        return loss, {"my_loss": loss.detach()}
    ```

    ## Fix safety
    No fix: the log values are the author's choice.
    """

    INVARIANT = INVARIANTS["VIM055"]
    NEEDS_HOOKS = True
    _HOOK = {"hooks": {"my_loss": "custom_loss_function_path"}}
    VALID = [
        Valid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                loss = logits.mean()
                return loss, {'loss': loss.detach()}
        """, options=_HOOK),
        Valid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                result = helper(logits)
                return result
        """, options=_HOOK),
        Valid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                def inner(x):
                    return x.mean()
                return inner(logits), {}
        """, options=_HOOK),
        Valid("""
            def other(args, batch, logits, sum_of_sample_mean):
                return logits.mean()
        """),
        # A module helper / a class loss's self method that returns the pair; the pair built
        # from a comprehension's sum.
        Valid("""
            def _compute(logits):
                loss = logits.mean()
                return loss, {'loss': loss.detach()}
            def my_loss(args, batch, logits, sum_of_sample_mean):
                return _compute(logits)
        """, options=_HOOK),
        Valid("""
            class Loss:
                def __call__(self, args, batch, logits, sum_of_sample_mean):
                    return self._pg(logits)
                def _pg(self, logits):
                    loss = -logits.sum()
                    return loss, {}
            my_loss = Loss()
        """, options=_HOOK),
        Valid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                parts = [x.mean() for x in logits]
                total = sum(parts)
                return sum_of_sample_mean(total), {'n': len(parts)}
        """, options=_HOOK),
    ]
    INVALID = [
        Invalid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                return logits.mean()
        """, line=2, col=11, options=_HOOK),
        Invalid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                loss = -sum_of_sample_mean(logits[:, :, 0])
                return loss
        """, line=3, col=11, options=_HOOK),
        Invalid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                loss = logits.mean()
                return loss, {}, 0
        """, line=3, col=11, options=_HOOK),
        Invalid("""
            import torch

            def my_loss(args, batch, logits, sum_of_sample_mean):
                if logits is None:
                    return
                return torch.sum(logits), {}
        """, line=5, col=8, options=_HOOK),
        # The trainer's reducer returned bare (by position, in a class loss too); a module
        # helper's bare tensor; a self method's 3-tuple; torch under another name through
        # local aliases.
        Invalid("""
            def my_loss(args, batch, logits, sum_of_sample_mean):
                return sum_of_sample_mean(per_token_loss(logits, batch))
        """, line=2, col=11, options=_HOOK),
        Invalid("""
            class Loss:
                def __call__(self, args, batch, logits, reduce):
                    loss = reduce(logits)
                    return loss
            my_loss = Loss()
        """, line=4, col=15, options=_HOOK),
        Invalid("""
            def _compute(logits):
                return logits.mean()
            def my_loss(args, batch, logits, sum_of_sample_mean):
                return _compute(logits)
        """, line=4, col=11, options=_HOOK),
        Invalid("""
            class Loss:
                def __call__(self, args, batch, logits, sum_of_sample_mean):
                    return self._pg(logits)
                def _pg(self, logits):
                    return -logits.sum(), {}, 0
            my_loss = Loss()
        """, line=3, col=15, options=_HOOK),
        Invalid("""
            import torch as T
            def my_loss(args, batch, logits, sum_of_sample_mean):
                terms = [T.log(x) for x in logits]
                out = T.stack(terms).mean()
                res = out
                return res
        """, line=6, col=11, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_loss_function_path":
            return
        semantic = self.context.semantic
        owner = semantic.owner(node)
        hit = self.context.hook_target(node)
        params = [p.name for p in hit[1].params] if hit is not None else []
        reducer = params[3] if len(params) > 3 else None   # sum_of_sample_mean, by position
        body = _body(semantic, node)

        def problem_of(value: cst.BaseExpression | None) -> str | None:
            if isinstance(value, cst.Call) and reducer is not None \
                    and isinstance(value.func, cst.Name) and value.func.value == reducer:
                return "a bare tensor"   # the trainer's reducer returns a scalar tensor
            call = value.expression if isinstance(value, cst.Await) else value
            if isinstance(call, cst.Call) and semantic.callee(call, node, owner) is not None:
                return None   # the module's own helper: judged by what it returns, below
            return _describe(value)

        for ret in body.returns:
            problem = problem_of(ret.value)
            if problem is None and isinstance(ret.value, cst.Name):
                values = body.assigned.get(ret.value.value, [])
                if values and all(_tensor_like(v) or problem_of(v) for v in values):
                    problem = "a bare tensor"
            if problem is None and isinstance(ret.value, (cst.Name, cst.Call, cst.Await)):
                # a local alias or the module's own helper (self methods too): every value
                # it can hold is not a pair
                leaves = [leaf for leaf, _ in semantic.origins(node, ret.value, owner=owner)]
                found = [problem_of(leaf) if leaf is not None and leaf is not ret.value
                         else None for leaf in leaves]
                if found and all(found):
                    problem = found[0]
            if problem is not None:
                self.report(ret.value if ret.value is not None else ret,
                            self.INVARIANT.render(name=binding.function, actual=problem))
