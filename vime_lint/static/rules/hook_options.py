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
    """``parser.add_argument("--flag", ..., dest=...)`` calls of ``add_arguments``: dest ->
    (flag, call); ``open`` when some option is declared where the source does not say its
    name (a flag that is not a string literal, ``**kwargs``, the parser handed to a helper)."""

    def __init__(self, parser: str | None) -> None:
        self.parser = parser
        self.found: dict[str, tuple[str, cst.Call]] = {}
        self.open = False

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"):
            # add_arguments(parser) -> helper(parser): what the helper declares is not seen here
            if self.parser is not None and any(
                    isinstance(a.value, cst.Name) and a.value.value == self.parser
                    for a in node.args):
                self.open = True
            return
        if any(a.star for a in node.args):
            self.open = True
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        names = [string_value(v) for v in positional]
        flags = [v for v in names if v is not None and v.startswith("-")]
        if not flags:
            self.open = self.open or any(v is None for v in names)
            return
        if any(v is None for v in names):
            self.open = True
        dest_arg = next((a.value for a in node.args
                         if a.keyword is not None and a.keyword.value == "dest"), None)
        dest = string_value(dest_arg) if dest_arg is not None else None
        if dest_arg is not None and dest is None:
            self.open = True
        flag = next((f for f in flags if f.startswith("--")), flags[0])
        self.found[dest or flag.lstrip("-").replace("-", "_")] = (flag, node)


def _declaration(module: cst.Module) -> _Declared | None:
    """The options of the module's ``add_arguments`` (None without one)."""
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == _DECLARE:
            params = [*stmt.params.posonly_params, *stmt.params.params]
            visitor = _Declared(params[0].name.value if params else None)
            stmt.visit(visitor)
            return visitor
    return None


def _declared(module: cst.Module) -> dict[str, tuple[str, cst.Call]]:
    found = _declaration(module)
    return found.found if found is not None else {}


class _Reads(cst.CSTVisitor):
    """Every ``args.NAME`` read and ``getattr``/``hasattr(args, "NAME"...)`` of a module."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.guarded: set[str] = set()
        #: ``getattr(args, name)`` with a name the source does not spell (``for k in ...``).
        self.dynamic = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "args":
            self.names.add(node.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[0].value, cst.Name) \
                and node.args[0].value.value == "args":
            name = string_value(node.args[1].value)
            if name is None:
                self.dynamic = True
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
    sets ``--custom-config-path``, whose keys become ``args`` attributes, and in a module whose
    ``add_arguments`` declares an option the source does not name (a flag built at run time,
    ``**kwargs``, the parser handed to a helper): any name may be one of those.

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
        Valid("def add_arguments(parser):\n    parser.add_argument('-j', type=str)\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.j))\n"),
        Valid("def add_arguments(parser):\n    parser.add_argument('-j', '--judge-url')\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge_url))\n"),
        Valid("import common\n\ndef add_arguments(parser):\n"
              "    common.add_judge_options(parser)\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge_url))\n"),
        Valid("def add_arguments(parser):\n    for name in ('judge-url', 'judge-mode'):\n"
              "        parser.add_argument(f'--{name}')\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge_url))\n"),
        Valid("DEST = 'judge'\n\ndef add_arguments(parser):\n"
              "    parser.add_argument('--url', dest=DEST)\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge))\n"),
        Valid("OPTS = {'dest': 'judge'}\n\ndef add_arguments(parser):\n"
              "    parser.add_argument('--url', **OPTS)\n\n"
              "async def reward_func(args, sample):\n    return float(bool(args.judge))\n"),
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
        Invalid("def add_arguments(group):\n    g = group.add_argument_group('judge')\n"
                "    g.add_argument('--judge-url')\n\n"
                "async def reward_func(args, sample):\n"
                "    return float(bool(args.judge_url and args.judge_mode))\n",
                line=6, col=41),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.declared: set[str] = set()
        #: the module's ``add_arguments`` declares options the source does not name
        self.open = False
        self.guarded: set[str] = set()
        self.writes: set[int] = set()
        #: name -> (its first read in a function taking ``args``, that function's name)
        self.first: dict[str, tuple[cst.CSTNode, str]] = {}
        self.known = _known()

    def visit_Module(self, node: cst.Module) -> None:
        declaration = _declaration(node)
        self.declared = set(declaration.found) if declaration is not None else set()
        self.open = declaration is not None and declaration.open

    def leave_Module(self, original_node: cst.Module) -> None:
        if self.open:
            return   # any name may be one the module declares out of sight
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
    the module never reads (no ``args.dest``, no ``getattr(args, "dest")``). Quiet when the
    module reads ``getattr(args, name)`` with a computed name.

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
        # Options on an argument group, both read in an instance's __call__.
        Valid("def add_arguments(parser):\n"
              "    group = parser.add_argument_group('judge')\n"
              "    group.add_argument('--judge-url')\n"
              "    group.add_argument('--judge-timeout', type=float, default=30.0)\n"
              "class Judge:\n"
              "    async def __call__(self, args, sample, **kwargs):\n"
              "        return await ask(args.judge_url, sample, timeout=args.judge_timeout)\n"
              "reward_func = Judge()\n"),
        # Read in a module helper's comprehension by computed name: not knowable, so quiet.
        Valid("def add_arguments(parser):\n"
              "    parser.add_argument('--w-acc', type=float, default=1.0)\n"
              "    parser.add_argument('--w-fmt', type=float, default=0.5)\n"
              "def _weights(args):\n"
              "    return [getattr(args, k) for k in ('w_acc', 'w_fmt')]\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return sum(_weights(args))\n"),
    ]
    INVALID = [
        Invalid("def add_arguments(parser):\n    parser.add_argument('--format-bonus')\n\n"
                "async def reward_func(args, sample):\n    return 1.0\n", line=2, col=4),
        Invalid("def add_arguments(group):\n    group.add_argument('--a')\n"
                "    group.add_argument('--b')\n\n"
                "async def reward_func(args, sample):\n    return float(args.a)\n",
                line=3, col=4),
        # An option of an argument group that the instance's __call__ never reads.
        Invalid("def add_arguments(parser):\n"
                "    group = parser.add_argument_group('judge')\n"
                "    group.add_argument('--judge-url')\n"
                "    group.add_argument('--judge-timeout', type=float, default=30.0)\n"
                "class Judge:\n"
                "    async def __call__(self, args, sample, **kwargs):\n"
                "        return await ask(args.judge_url, sample)\n"
                "reward_func = Judge()\n", line=4, col=4),
        # getattr with the flag's spelling: argparse stores format_bonus.
        Invalid("def add_arguments(parser):\n"
                "    parser.add_argument('--format-bonus', type=float, default=0.1)\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return 1.0 + getattr(args, 'format-bonus', 0.0)\n", line=2, col=4),
        # One option read in a module helper, the other never.
        Invalid("def add_arguments(parser):\n"
                "    parser.add_argument('--bonus', type=float)\n"
                "    parser.add_argument('--penalty', type=float)\n"
                "def _bonus(args):\n"
                "    return args.bonus\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return [_bonus(args) for _ in range(1)][0]\n", line=3, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        declared = _declared(node)
        if not declared:
            return
        reads = _Reads()
        node.visit(reads)
        if reads.dynamic:
            return  # which options it reads is not in the source
        for dest, (flag, call) in declared.items():
            if dest not in reads.names:
                self.report(call, self.INVARIANT.render(flag=flag, dest=dest))
