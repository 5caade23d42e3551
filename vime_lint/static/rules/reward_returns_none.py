"""VIM011: a ``--custom-rm-path`` function returns a value on every path."""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import called, may_fall_through, returns_nothing
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["RewardReturnsNone"]

class RewardReturnsNone(FunctionTracker):
    """A reward function returns a value on every path.

    ## What it does
    Reports ``return``/``return None`` in a ``--custom-rm-path`` function, a body that can
    end without ``return``, and ``return helper(...)`` of the module's own function (or
    ``self`` method) that can itself end without a value.

    ## Why is this bad?
    The reward lands in ``Sample.reward``; None cannot be normalised, and the step fails at
    conversion, far from the reward function (failure kind: "reward fn returns None").

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        if sample.response.strip() == sample.label:
            return 1.0
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        return 1.0 if sample.response.strip() == sample.label else 0.0
    ```

    ## Fix safety
    No fix: only the author knows the missing reward.
    """

    INVARIANT = INVARIANTS["VIM011"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return 1.0 if sample.label else 0.0
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                if sample.label:
                    return 1.0
                else:
                    return 0.0
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                raise NotImplementedError
        """),
        # An instance's __call__ whose try and except both return.
        Valid("""
            class Scorer:
                async def __call__(self, args, sample, **kwargs):
                    try:
                        return float(sample.response.strip() == sample.label)
                    except AttributeError:
                        return 0.0
            reward_func = Scorer()
        """),
        # A module helper that always returns, called in a comprehension.
        Valid("def _match(response, label):\n"
              "    return 1.0 if label in response else 0.0\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    scores = [_match(r, sample.label) for r in sample.response.split('\\n')]\n"
              "    return max(scores, default=0.0)\n"),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                if sample.label:
                    return 1.0
        """, line=1, col=10),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                if not sample.label:
                    return
                return 1.0
        """, line=3, col=8),
        Invalid("""
            async def score(args, sample, **kwargs):
                return None
        """, line=2, col=4, options={"hooks": {"score": "custom_rm_path"}}),
        # An instance's __call__ that can fall through.
        Invalid("""
            class Scorer:
                async def __call__(self, args, sample, **kwargs):
                    if sample.response.strip() == sample.label:
                        return 1.0
            reward_func = Scorer()
        """, line=2, col=14),
        # Returns what a module helper returns, and the helper can fall through.
        Invalid("""
            def _match(response, label):
                if label in response:
                    return 1.0
            async def reward_func(args, sample, **kwargs):
                return _match(sample.response, sample.label)
        """, line=5, col=4),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_rm_path":
            return
        facts = self.context.semantic.facts(node)
        if facts.yields:
            return
        name = binding.function
        for ret in facts.returns:
            if returns_nothing(ret.value):
                self.report(ret.node, self.INVARIANT.render(name=name, problem="`return None`"))
                continue
            helper = self._none_helper(node, ret.value)
            if helper is not None:
                self.report(ret.node, self.INVARIANT.render(
                    name=name, problem=f"it returns `{helper}(...)`, which can end without "
                    "a value"))
        if may_fall_through(node.body):
            self.report(node.name, self.INVARIANT.render(
                name=name, problem="the body can end without `return`"))

    def _none_helper(self, fn: cst.FunctionDef, value: cst.BaseExpression | None) -> str | None:
        """The name of the module's own function that ``return value`` hands back directly
        (``return helper(...)``, ``return await helper(...)``) when that function can end
        without a value (falls through, bare ``return``, ``return None``); else None."""
        call = called(value)
        if call is None:
            return None
        target = self.context.semantic.callee(call, fn, self.owner)
        if target is None or target is fn:
            return None
        facts = self.context.semantic.facts(target)
        if facts.yields:
            return None
        if facts.falls_through or any(returns_nothing(r.value) for r in facts.returns):
            return target.name.value
        return None

