"""VIM056: a ``--custom-advantage-function-path`` function stores
``rollout_data["advantages"]`` instead of returning its advantages; its runtime twin
(VIM191) checks the values the trainer receives, at boundary B7.

See ``docs/contract.md`` §5 and §6a, and ``docs/en/training.md`` ("Trainer hooks").
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import Semantic
from vime_lint.static.rules._trainer_hook_bodies import _body, _describe

__all__ = ["AdvantageHookStoresAdvantages"]


class AdvantageHookStoresAdvantages(FunctionTracker):
    """An advantage hook stores ``rollout_data["advantages"]`` and returns None.

    ## What it does
    Reports a ``--custom-advantage-function-path`` function that returns a value, or whose
    body never assigns ``<dict>["advantages"] = ...`` (nor passes ``rollout_data`` on to
    another function, nor calls ``.update``/``.setdefault``, which may store it). A module
    helper or ``self`` method given ``rollout_data`` is read too: it counts as a store unless
    its own body stores only other constant keys and hands nothing on.

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
        Valid("""
            def adv(args, rollout_data):
                rollout_data['advantages'] = [m * 1.0 for m in rollout_data['loss_masks']]
                rollout_data['returns'] = rollout_data['advantages']
        """, options=_HOOK),
        Valid("""
            def adv(args, rollout_data):
                fill(args, rollout_data)
        """, options=_HOOK),
        Valid("""
            def adv(args, rollout_data):
                rollout_data.update(advantages=[])
                return None
        """, options=_HOOK),
        Valid("""
            def other(args, rollout_data):
                return []
        """),
        # An instance's __call__ under an aliased import, storing the key.
        Valid("import torch as th\n"
              "class Advantages:\n"
              "    def __call__(self, args, rollout_data):\n"
              "        rollout_data['advantages'] = [th.ones_like(m) * r for r, m in\n"
              "                                      zip(rollout_data['rewards'], rollout_data['loss_masks'])]\n"
              "adv = Advantages()\n", options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # Stored through a local alias of rollout_data.
        Valid("""
            def adv(args, rollout_data):
                data = rollout_data
                data['advantages'] = [m * 1.0 for m in data['loss_masks']]
        """, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # An instance's __call__ storing through a self method.
        Valid("""
            class Advantages:
                def _store(self, data, values):
                    data['advantages'] = values
                def __call__(self, args, rollout_data):
                    self._store(rollout_data, [m * 1.0 for m in rollout_data['loss_masks']])
            adv = Advantages()
        """, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # A module helper storing under keys from a loop: not knowable, so quiet.
        Valid("""
            def _store(data, values):
                for key in ('advantages', 'returns'):
                    data[key] = values
            def adv(args, rollout_data):
                _store(rollout_data, [m * 1.0 for m in rollout_data['loss_masks']])
        """, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
    ]
    INVALID = [
        Invalid("""
            def adv(args, rollout_data):
                return [m * 1.0 for m in rollout_data['loss_masks']]
        """, line=2, col=11, options=_HOOK),
        Invalid("""
            def adv(args, rollout_data):
                advantages = [m * 1.0 for m in rollout_data['loss_masks']]
        """, line=1, col=4, options=_HOOK),
        Invalid("""
            def adv(args, rollout_data):
                rollout_data['advantage'] = []
        """, line=1, col=4, options=_HOOK),
        # An instance's __call__ under an aliased import returning the list.
        Invalid("import torch as th\n"
                "class Advantages:\n"
                "    def __call__(self, args, rollout_data):\n"
                "        return [th.ones_like(m) * r for r, m in zip(rollout_data['rewards'], rollout_data['loss_masks'])]\n"
                "adv = Advantages()\n",
                line=4, col=15, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # ... and the missing store, reported at its name (self is not a contract position).
        Invalid("import torch as th\n"
                "class Advantages:\n"
                "    def __call__(self, args, rollout_data):\n"
                "        return [th.ones_like(m) * r for r, m in zip(rollout_data['rewards'], rollout_data['loss_masks'])]\n"
                "adv = Advantages()\n",
                line=3, col=8, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # A misspelt key stored through a local alias of rollout_data.
        Invalid("""
            def adv(args, rollout_data):
                data = rollout_data
                data['advantage'] = [m * 1.0 for m in data['loss_masks']]
        """, line=1, col=4, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
        # A module helper given rollout_data that stores a misspelt key only.
        Invalid("""
            def _store(data, values):
                data['advantage'] = values
            def adv(args, rollout_data):
                _store(rollout_data, [m * 1.0 for m in rollout_data['loss_masks']])
        """, line=3, col=4, options={'hooks': {'adv': 'custom_advantage_function_path'}}),
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
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if self.owner is not None and params and params[0] in ("self", "cls"):
            params = params[1:]  # a class hook's ``__call__``: the contract's positions follow
        data = params[1] if len(params) > 1 else "rollout_data"
        if ("advantages" not in body.stored_keys and not self._may_store(node, data)
                and "<update>" not in body.call_args):
            self.report(node.name, self.INVARIANT.render(
                name=name, problem=f"never sets {data}['advantages']"))


#: Hooks that get the step's flat samples (or the columns made from them).

    def _may_store(self, fn: cst.FunctionDef, data: str) -> bool:
        """``data`` goes into a call that may store the advantages: one the linter cannot
        follow, or a module helper (or ``self`` method) whose own body stores
        ``["advantages"]``, calls ``.update``/``.setdefault``, or hands a parameter on."""
        sem = self.context.semantic
        for site in sem.facts(fn).calls:
            if not any(isinstance(a.value, cst.Name) and a.value.value == data
                       for a in site.node.args):
                continue
            target = sem.callee(site.node, fn, self.owner)
            if target is None or target is fn:
                return True
            helper = _body(sem, target)
            params = {p.name.value for p in (*target.params.posonly_params,
                                             *target.params.params, *target.params.kwonly_params)}
            if "advantages" in helper.stored_keys or "<update>" in helper.call_args \
                    or helper.call_args & params or _computed_store(sem, target):
                return True
        return False


def _computed_store(sem: Semantic, fn: cst.FunctionDef) -> bool:
    """``x[key] = ...`` with a key the source does not spell (``for key in ...``)."""
    for target, _, _ in sem.facts(fn).bindings:
        if isinstance(target, cst.Subscript):
            index = target.slice[0].slice if len(target.slice) == 1 else None
            if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)):
                return True
    return False
