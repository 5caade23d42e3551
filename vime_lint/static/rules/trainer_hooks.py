"""The trainer hooks' results where the code shows them: VIM055, VIM056.

:class:`CustomLossReturnsPair` reports a ``--custom-loss-function-path`` function that returns
a bare loss instead of ``(loss, log_dict)``; :class:`AdvantageHookStoresAdvantages` an
``--custom-advantage-function-path`` function that returns its advantages, or never stores
``rollout_data["advantages"]``. Their runtime twins (VIM190, VIM191) check the values the
trainer receives, at boundary B7.

Each rule reads only the function the hook binding names (its own statements, not nested
functions), from the semantic model's facts of that function.

See ``docs/contract.md`` §5 and §6a, and ``docs/en/training.md`` ("Trainer hooks").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import Semantic

__all__ = ["AdvantageHookStoresAdvantages", "CustomLossReturnsPair"]


@dataclass(slots=True)
class _Body:
    """The returns, name assignments, subscript stores and call arguments of one function's
    own body (nested functions and lambdas left out), read from the semantic model."""

    returns: list[cst.Return] = field(default_factory=list)
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    stored_keys: set[str] = field(default_factory=set)
    call_args: set[str] = field(default_factory=set)


def _body(semantic: Semantic, node: cst.FunctionDef) -> _Body:
    facts = semantic.facts(node)
    body = _Body([r.node for r in facts.returns])
    for target, value, stmt in facts.bindings:
        if isinstance(stmt, cst.AugAssign):
            continue
        if isinstance(target, cst.Name):
            body.assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) \
                    and isinstance(index.value.evaluated_value, str):
                body.stored_keys.add(index.value.evaluated_value)
    for site in facts.calls:
        for a in site.node.args:
            if isinstance(a.value, cst.Name):
                body.call_args.add(a.value.value)
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("update", "setdefault"):
            body.call_args.add("<update>")
    return body


def _tensor_like(value: cst.BaseExpression) -> bool:
    """Arithmetic, a method call (``x.mean()``) or an attribute call (``torch.sum(...)``,
    ``F.cross_entropy(...)``): a tensor, never a ``(loss, log_dict)`` pair."""
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)


def _describe(value: cst.BaseExpression | None) -> str | None:
    """Why a returned expression is not a pair, or None when it may be one."""
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        return "None"
    if isinstance(value, cst.Tuple):
        n = len(value.elements)
        starred = any(isinstance(e, cst.StarredElement) for e in value.elements)
        return None if n == 2 or starred else f"a {n}-tuple"
    if _tensor_like(value):
        return "a bare tensor"
    return None


class CustomLossReturnsPair(FunctionTracker):
    """A custom loss returns ``(loss, log_dict)``.

    ## What it does
    Reports a ``return`` in a ``--custom-loss-function-path`` function whose value is a bare
    tensor (arithmetic, ``x.mean()``, ``torch.sum(...)``, a local name only ever assigned
    such a value), a tuple of another length, or None.

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
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    loss = logits.mean()\n    return loss, {'loss': loss.detach()}\n",
              options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    result = helper(logits)\n    return result\n", options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    def inner(x):\n        return x.mean()\n"
              "    return inner(logits), {}\n", options=_HOOK),
        Valid("def other(args, batch, logits, sum_of_sample_mean):\n    return logits.mean()\n"),
    ]
    INVALID = [
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    return logits.mean()\n", line=2, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = -sum_of_sample_mean(logits[:, :, 0])\n    return loss\n",
                line=3, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = logits.mean()\n    return loss, {}, 0\n", line=3, col=11,
                options=_HOOK),
        Invalid("import torch\n\ndef my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    if logits is None:\n        return\n    return torch.sum(logits), {}\n",
                line=5, col=8, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_loss_function_path":
            return
        body = _body(self.context.semantic, node)
        for ret in body.returns:
            problem = _describe(ret.value)
            if problem is None and isinstance(ret.value, cst.Name):
                values = body.assigned.get(ret.value.value, [])
                if values and all(_tensor_like(v) for v in values):
                    problem = "a bare tensor"
            if problem is not None:
                self.report(ret.value if ret.value is not None else ret,
                            self.INVARIANT.render(name=node.name.value, actual=problem))


class AdvantageHookStoresAdvantages(FunctionTracker):
    """An advantage hook stores ``rollout_data["advantages"]`` and returns None.

    ## What it does
    Reports a ``--custom-advantage-function-path`` function that returns a value, or whose
    body never assigns ``<dict>["advantages"] = ...`` (nor passes ``rollout_data`` on to
    another function, nor calls ``.update``/``.setdefault``, which may store it).

    ## Why is this bad?
    The trainer calls ``advantage_fn(args, rollout_data)`` for its side effect, as upstream
    does, and reads ``rollout_data["advantages"]`` afterwards: a returned list is thrown away
    and the step stops with a missing key. Runtime twin: VIM191.

    ## Example
    ```python
    def my_advantages(args, rollout_data):
        return [torch.ones_like(m) * r for r, m in zip(rollout_data["rewards"],
                                                     rollout_data["loss_masks"])]
    ```

    ## Use instead
    ```python
    def my_advantages(args, rollout_data):
        rollout_data["advantages"] = [torch.ones_like(m) * r for r, m in zip(
            rollout_data["rewards"], rollout_data["loss_masks"])]
    ```

    ## Fix safety
    No fix: where the value goes is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM056"]
    NEEDS_HOOKS = True
    _HOOK = {"hooks": {"adv": "custom_advantage_function_path"}}
    VALID = [
        Valid("def adv(args, rollout_data):\n"
              "    rollout_data['advantages'] = [m * 1.0 for m in rollout_data['loss_masks']]\n"
              "    rollout_data['returns'] = rollout_data['advantages']\n", options=_HOOK),
        Valid("def adv(args, rollout_data):\n    fill(args, rollout_data)\n", options=_HOOK),
        Valid("def adv(args, rollout_data):\n    rollout_data.update(advantages=[])\n"
              "    return None\n", options=_HOOK),
        Valid("def other(args, rollout_data):\n    return []\n"),
    ]
    INVALID = [
        Invalid("def adv(args, rollout_data):\n"
                "    return [m * 1.0 for m in rollout_data['loss_masks']]\n", line=2, col=11,
                options=_HOOK),
        Invalid("def adv(args, rollout_data):\n"
                "    advantages = [m * 1.0 for m in rollout_data['loss_masks']]\n",
                line=1, col=4, options=_HOOK),
        Invalid("def adv(args, rollout_data):\n    rollout_data['advantage'] = []\n",
                line=1, col=4, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_advantage_function_path":
            return
        body = _body(self.context.semantic, node)
        name = node.name.value
        for ret in body.returns:
            if _describe(ret.value) != "None":
                assert ret.value is not None
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem="returns a value; it is thrown away: store it in "
                    "rollout_data['advantages'] and return None"))
        params = [p.name.value for p in node.params.params]
        data = params[1] if len(params) > 1 else "rollout_data"
        if ("advantages" not in body.stored_keys and data not in body.call_args
                and "<update>" not in body.call_args):
            self.report(node.name, self.INVARIANT.render(
                name=name, problem=f"never sets {data}['advantages']"))
