"""Options a hook module reads and declares: VIM038 (an ``args`` name nobody defines), VIM039 (a
declared option nothing reads).

A hook module may declare its own options in ``add_arguments(parser)``
(``vime/config/hook_options.py``); vime's own are the dests of ``vime train``'s parser
(``vime.config.defaults.option_names``).
"""

from __future__ import annotations

import difflib
import functools

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker, Rule

__all__ = ["UnknownArgsOption", "UnreadHookOption"]

_DECLARE = "add_arguments"


@functools.cache
def _known() -> frozenset[str]:
    """vime's own ``args`` names (built from its parser once per process: ~10 ms a call)."""
    from vime.config.defaults import option_names

    return option_names()


class _Declared(cst.CSTVisitor):
    """``parser.add_argument("--flag", ..., dest=...)`` calls: dest -> (flag, call)."""

    def __init__(self) -> None:
        self.found: dict[str, tuple[str, cst.Call]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"):
            return
        flags = [v for a in node.args if a.keyword is None
                 and (v := string_value(a.value)) is not None and v.startswith("--")]
        if not flags:
            return
        dest = next((string_value(a.value) for a in node.args
                     if a.keyword is not None and a.keyword.value == "dest"), None)
        self.found[dest or flags[0][2:].replace("-", "_")] = (flags[0], node)


def _declared(module: cst.Module) -> dict[str, tuple[str, cst.Call]]:
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == _DECLARE:
            visitor = _Declared()
            stmt.visit(visitor)
            return visitor.found
    return {}


class _Reads(cst.CSTVisitor):
    """Every ``args.NAME`` read and ``getattr``/``hasattr(args, "NAME"...)`` of a module."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.guarded: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "args":
            self.names.add(node.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[0].value, cst.Name) \
                and node.args[0].value.value == "args":
            name = string_value(node.args[1].value)
            if name:
                self.names.add(name)
                if node.func.value == "hasattr" or len(node.args) >= 3:
                    self.guarded.add(name)


def _takes_args(fn: cst.FunctionDef | None) -> bool:
    return fn is not None and any(
        p.name.value == "args" for p in (*fn.params.posonly_params, *fn.params.params,
                                         *fn.params.kwonly_params))


class UnknownArgsOption(FunctionTracker):
    """A hook module reads only ``args`` attributes vime defines or its ``add_arguments``
    declares.

    ## What it does
    In modules that define hooks, reports ``args.NAME`` (and ``getattr(args, "NAME")`` without
    a default) inside functions that take ``args``, where ``NAME`` is neither a ``vime train``
    option's dest nor declared by the module's ``add_arguments(parser)``. Writes are VIM016's;
    a name guarded by ``hasattr(args, ...)`` or read with a ``getattr`` default is not reported;
    each name is reported once per module (its first read). Off when a launch script or config
    sets ``--custom-config-path``, whose keys become ``args`` attributes.

    ## Why is this bad?
    ``args`` holds vime's options and the options the hook modules declare; any other name
    raises ``AttributeError`` when the line first runs, often hours into a run (failure kind:
    "unknown option"). A value set only by a ``--custom-config-path`` file works, but nothing
    checks it: declaring it makes it a typed, documented ``vime train`` option.

    ## Example
    ```python
    async def reward_func(args, sample):
        return 1.0 if judge(args.judge_url, sample.response) else 0.0
    ```

    ## Use instead
    ```python
    def add_arguments(parser):
        parser.add_argument("--judge-url", type=str, required=True)

    async def reward_func(args, sample):
        return 1.0 if judge(args.judge_url, sample.response) else 0.0
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM038"]
    NEEDS_HOOKS = True

    @classmethod
    def applies(cls, context: FileContext) -> bool:
        """Not when a launch sets ``--custom-config-path``: its keys may become ``args``."""
        return super().applies(context) and \
            "--custom-config-path" not in context.options.launch_flags
    VALID = [
        Valid("async def reward_func(args, sample):\n    return float(args.rm_type == 'x')\n"),
        Valid("def add_arguments(parser):\n    parser.add_argument('--judge-url', type=str)\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge_url))\n"),
        Valid("def add_arguments(parser):\n    parser.add_argument('--url', dest='judge')\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge))\n"),
        Valid("async def reward_func(args, sample):\n"
              "    return float(getattr(args, 'bonus', 0.0))\n"),
        Valid("async def reward_func(args, sample):\n"
              "    if hasattr(args, 'bonus'):\n        return args.bonus\n    return 0.0\n"),
        Valid("async def reward_func(args, sample):\n    return float(args.bonus)\n\n"
              "def _has_bonus(args):\n    return hasattr(args, 'bonus')\n"),
        Valid("def helper(cfg):\n    return cfg.whatever\n\n"
              "async def reward_func(args, sample):\n    return 1.0\n"),
        Valid("async def reward_func(args, sample):\n    return float(args.tis_mode == 'x')\n",
              options={"launch_flags": ["--custom-config-path"]}),
    ]
    INVALID = [
        Invalid("async def reward_func(args, sample):\n    return float(bool(args.judge_url))\n",
                line=2, col=22),
        Invalid("async def reward_func(args, sample):\n"
                "    return float(bool(args.judge_url and args.judge_url))\n", line=2, col=22),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    n = args.rollout_batch_sise\n", line=2, col=8),
        Invalid("def add_arguments(parser):\n    parser.add_argument('--judge-url')\n\n"
                "async def reward_func(args, sample):\n    return float(bool(args.judge_uri))\n",
                line=5, col=22),
        Invalid("def _budget(args):\n    return getattr(args, 'tool_budget')\n\n"
                "async def reward_func(args, sample):\n    return float(_budget(args))\n",
                line=2, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.declared: set[str] = set()
        self.guarded: set[str] = set()
        self.writes: set[int] = set()
        #: name -> (its first read in a function taking ``args``, that function's name)
        self.first: dict[str, tuple[cst.CSTNode, str]] = {}
        self.known = _known()

    def visit_Module(self, node: cst.Module) -> None:
        self.declared = set(_declared(node))

    def leave_Module(self, original_node: cst.Module) -> None:
        # A guard anywhere in the module (``hasattr(args, "x")``, a ``getattr`` default) covers
        # every read of the name, so reads are reported once the traversal has seen all guards
        # (collected by visit_Call, as _Reads does, without a walk of its own).
        for name, (node, fn) in self.first.items():
            if name in self.guarded:
                continue
            close = difflib.get_close_matches(name, [*self.known, *self.declared], n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            self.report(node, self.INVARIANT.render(attr=name, name=fn, hint=hint))

    def _check(self, node: cst.CSTNode, name: str) -> None:
        if not _takes_args(self.current) or name in self.known or name in self.declared \
                or name in self.first or name.startswith("__"):
            return
        assert self.current is not None
        self.first[name] = (node, self.current.name.value)   # once per name: its first read

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "args" \
                and id(node) not in self.writes:
            self._check(node, node.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        # assignment targets are writes (VIM016's), not reads
        self.writes.update(id(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.writes.add(id(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[0].value, cst.Name) \
                and node.args[0].value.value == "args":
            name = string_value(node.args[1].value)
            if not name:
                return
            if node.func.value == "hasattr" or len(node.args) >= 3:
                self.guarded.add(name)
            elif len(node.args) == 2:
                self._check(node, name)


class UnreadHookOption(Rule):
    """Every option a hook module declares in ``add_arguments`` is read in it.

    ## What it does
    Reports a ``parser.add_argument("--flag", ...)`` in a module's ``add_arguments`` whose dest
    the module never reads (no ``args.dest``, no ``getattr(args, "dest")``).

    ## Why is this bad?
    The option is accepted and ignored: a user sets it, and nothing changes (failure kind:
    "unknown option").

    ## Example
    ```python
    def add_arguments(parser):
        parser.add_argument("--format-bonus", type=float, default=0.1)

    async def reward_func(args, sample):
        return 1.0
    ```

    ## Use instead
    ```python
    def add_arguments(parser):
        parser.add_argument("--format-bonus", type=float, default=0.1)

    async def reward_func(args, sample):
        return 1.0 + args.format_bonus
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM039"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("def add_arguments(parser):\n    parser.add_argument('--bonus', type=float)\n\n"
              "async def reward_func(args, sample):\n    return args.bonus\n"),
        Valid("def add_arguments(parser):\n    parser.add_argument('--b', dest='bonus')\n\n"
              "async def reward_func(args, sample):\n    return getattr(args, 'bonus', 0.0)\n"),
    ]
    INVALID = [
        Invalid("def add_arguments(parser):\n    parser.add_argument('--format-bonus')\n\n"
                "async def reward_func(args, sample):\n    return 1.0\n", line=2, col=4),
        Invalid("def add_arguments(group):\n    group.add_argument('--a')\n"
                "    group.add_argument('--b')\n\n"
                "async def reward_func(args, sample):\n    return float(args.a)\n",
                line=3, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        declared = _declared(node)
        if not declared:
            return
        reads = _Reads()
        node.visit(reads)
        for dest, (flag, call) in declared.items():
            if dest not in reads.names:
                self.report(call, self.INVARIANT.render(flag=flag, dest=dest))
