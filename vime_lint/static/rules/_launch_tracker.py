"""What the rules that need the launch configuration share (VIM019, VIM034, VIM035):
:class:`LaunchTracker`, the base of a rule that looks only at hooks a launch file names, and
the wording of the launches in their messages.

The launch configuration is what hook discovery read from the repository's shell scripts and
YAML/JSON/TOML configs: the file that names a hook (``--custom-rm-path pkg.rm.score``) and the
``--flags`` it sets (with those of the config files it names). These rules only look at hooks
named by a launch file and stay quiet when none was found, so a module linted on its own never
gets a configuration-aware finding.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vime_lint.static._model import HookBinding
from vime_lint.static._rule import FileContext
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["GENERATE", "LaunchTracker", "RM", "launch_text"]


RM = "custom_rm_path"
GENERATE = "custom_generate_function_path"


def launch_text(launches: Sequence[str]) -> str:
    more = f" (and {len(launches) - 1} more)" if len(launches) > 1 else ""
    return f"{launches[0]}{more}"


class LaunchTracker(SampleTracker):
    """Knows the hook of the enclosing module-level function (or the ``__call__`` of a class
    whose instance is bound as the hook) and its launch files.

    ``self.active`` is the (binding, launch files) of the innermost hook function whose
    launches pass :meth:`wants`, or None.
    """

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.active_stack: list[tuple[HookBinding, list[str]] | None] = []

    @classmethod
    def applies(cls, context: FileContext) -> bool:
        return any(b.launches for bs in context.hooks.values() for b in bs)

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        """The launch files that make the rule apply to ``binding`` (None: it does not)."""
        raise NotImplementedError

    @property
    def active(self) -> tuple[HookBinding, list[str]] | None:
        return next((a for a in reversed(self.active_stack) if a is not None), None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        entry = None
        if len(self.functions) == 1 and not self.class_depth:
            for b in self.context.hooks.get(node.name.value, ()):
                chosen = self.wants(b, self.context.options.launches_of(b))
                if chosen:
                    entry = (b, chosen)
                    break
        elif len(self.functions) == 1 and self.class_depth == 1 \
                and node.name.value == "__call__":
            # The ``__call__`` of a module-level class whose instance is bound as the hook.
            binding = self.hook_of(node)
            if binding is not None:
                chosen = self.wants(binding, self.context.options.launches_of(binding))
                if chosen:
                    entry = (binding, chosen)
        self.active_stack.append(entry)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.active_stack.pop()
        super().leave_FunctionDef(original_node)
