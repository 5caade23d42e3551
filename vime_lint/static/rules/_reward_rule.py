"""What the reward-return rules share (VIM023, VIM024, VIM030): :class:`RewardRule`, the base
of a rule that checks module-level ``--custom-rm-path`` functions, the values a reward function
returns (:func:`reward_leaves`, :func:`reward_functions`: the semantic model's
:meth:`~vime_lint.static.analysis.Semantic.returned`, per sample for a batch reward function),
and the wording helpers of their messages.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vime_lint.static._cst import code_of
from vime_lint.static._model import HookBinding
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import Leaf

__all__ = ["EVAL_FN", "GENERATE", "RM", "STR_CALLS", "RewardRule", "is_batched_reward",
           "reward_functions", "reward_leaves", "short", "via"]

RM = "custom_rm_path"
GENERATE = "custom_generate_function_path"
EVAL_FN = "eval_function_path"
#: Calls whose result is text (or a type): never a number.
STR_CALLS = frozenset({"builtins.str", "builtins.repr", "builtins.type", "builtins.format"})


def short(node: cst.CSTNode, limit: int = 40) -> str:
    """``node``'s code on one line, cut to ``limit`` characters."""
    text = " ".join(code_of(node).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def via(leaf: Leaf) -> str:
    """`` (through `a` -> `b`)`` when ``leaf`` was reached through helpers, else ``""``."""
    return f" (through `{'` -> `'.join(leaf.via)}`)" if leaf.via else ""


class RewardRule(FunctionTracker):
    """A rule that looks at module-level ``--custom-rm-path`` functions (``self.reward``)."""

    NEEDS_HOOKS = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is not None and binding.spec.dest == RM:
            self.reward(node, binding)

    def reward(self, fn: cst.FunctionDef, binding: HookBinding) -> None:
        """Check reward function ``fn``."""
        raise NotImplementedError


def is_batched_reward(binding: HookBinding, fn: cst.FunctionDef, context: FileContext) -> bool:
    """True for a ``--group-rm`` reward function: its spec says so, a launch configuration
    naming it sets ``--group-rm`` (:meth:`LintOptions.group_rm`), or its second parameter is
    ``samples``."""
    if context.options.group_rm(binding):
        return True
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return len(params) >= 2 and params[1] == "samples"


def reward_leaves(fn: cst.FunctionDef, binding: HookBinding, context: FileContext) -> list[Leaf]:
    """The expressions reward hook ``fn`` can return (the rewards of its list for a batch
    reward function): :meth:`~vime_lint.static.analysis.Semantic.returned`."""
    return context.semantic.returned(
        fn, elements=is_batched_reward(binding, fn, context)).leaves


def reward_functions(fn: cst.FunctionDef, binding: HookBinding, context: FileContext
                     ) -> Iterator[tuple[cst.FunctionDef, tuple[str, ...]]]:
    """``fn`` and the module-level helpers whose result it returns, with the helper chain."""
    yield from context.semantic.returned(
        fn, elements=is_batched_reward(binding, fn, context)).functions
