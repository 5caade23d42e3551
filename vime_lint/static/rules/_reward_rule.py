"""What the reward-return rules share (VIM023, VIM024, VIM030): :class:`RewardRule`, the base
of a rule that checks module-level ``--custom-rm-path`` functions, and the wording helpers of
their messages.
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._cst import code_of
from vime_lint.static._model import HookBinding
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.rules._reward_values import Leaf

__all__ = ["EVAL_FN", "GENERATE", "RM", "STR_CALLS", "RewardRule", "short", "via"]

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
