"""VIM011: a ``--custom-rm-path`` function returns a value on every path."""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import may_fall_through
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["RewardReturnsNone"]

class RewardReturnsNone(FunctionTracker):
    """A reward function returns a value on every path.

    ## What it does
    Reports ``return``/``return None`` in a ``--custom-rm-path`` function, and a body that can
    end without ``return``.

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
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    return 1.0 if sample.label else 0.0\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    if sample.label:\n        return 1.0\n    else:\n        return 0.0\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    raise NotImplementedError\n"),
    ]
    INVALID = [
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    if sample.label:\n        return 1.0\n", line=1, col=10),
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    if not sample.label:\n        return\n    return 1.0\n", line=3, col=8),
        Invalid("async def score(args, sample, **kwargs):\n    return None\n", line=2, col=4,
                options={"hooks": {"score": "custom_rm_path"}}),
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
            if ret.value is None or (isinstance(ret.value, cst.Name) and ret.value.value == "None"):
                self.report(ret.node, self.INVARIANT.render(name=name, problem="`return None`"))
        if may_fall_through(node.body):
            self.report(node.name, self.INVARIANT.render(
                name=name, problem="the body can end without `return`"))
