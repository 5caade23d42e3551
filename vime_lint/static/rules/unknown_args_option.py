"""VIM038: a hook module reads only ``args`` attributes vime defines (the dests of ``vime train``'s
parser, ``vime.config.defaults.option_names``) or its own ``add_arguments`` declares.
"""

from __future__ import annotations

import difflib
import functools

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["UnknownArgsOption"]


@functools.cache
def _known() -> frozenset[str]:
    """vime's own ``args`` names (built from its parser once per process: ~10 ms a call)."""
    from vime.config.defaults import option_names

    return option_names()


def _takes_args(fn: cst.FunctionDef | None) -> bool:
    return fn is not None and any(
        p.name.value == "args" for p in (*fn.params.posonly_params, *fn.params.params,
                                         *fn.params.kwonly_params))


class UnknownArgsOption(FunctionTracker):
    """A hook module reads only ``args`` attributes vime defines or its ``add_arguments``
    declares.

    ## What it does
    In modules that define hooks, reports ``args.NAME`` (and ``getattr(args, "NAME")`` without
    a default, vime's ``arg(args, "NAME")``) inside functions that take ``args`` (also through a
    local name bound to it, and ``self.args.NAME`` in a class whose method stores its ``args``
    parameter as ``self.args``), where ``NAME`` is neither a ``vime train``
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
        Valid("""
            async def reward_func(args, sample):
                return float(args.rm_type == 'x')
        """),
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--judge-url', type=str)

            async def reward_func(args, sample):
                return float(bool(args.judge_url))
        """),
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--url', dest='judge')

            async def reward_func(args, sample):
                return float(bool(args.judge))
        """),
        Valid("""
            async def reward_func(args, sample):
                return float(getattr(args, 'bonus', 0.0))
        """),
        Valid("""
            async def reward_func(args, sample):
                if hasattr(args, 'bonus'):
                    return args.bonus
                return 0.0
        """),
        Valid("""
            async def reward_func(args, sample):
                return float(args.bonus)

            def _has_bonus(args):
                return hasattr(args, 'bonus')
        """),
        Valid("""
            def helper(cfg):
                return cfg.whatever

            async def reward_func(args, sample):
                return 1.0
        """),
        Valid("""
            async def reward_func(args, sample):
                return float(args.tis_mode == 'x')
        """, options={"launch_flags": ["--custom-config-path"]}),
        Valid("""
            def add_arguments(parser):
                parser.add_argument('-j', type=str)

            async def reward_func(args, sample):
                return float(bool(args.j))
        """),
        Valid("""
            def add_arguments(parser):
                parser.add_argument('-j', '--judge-url')

            async def reward_func(args, sample):
                return float(bool(args.judge_url))
        """),
        Valid("""
            import common

            def add_arguments(parser):
                common.add_judge_options(parser)

            async def reward_func(args, sample):
                return float(bool(args.judge_url))
        """),
        Valid("""
            def add_arguments(parser):
                for name in ('judge-url', 'judge-mode'):
                    parser.add_argument(f'--{name}')

            async def reward_func(args, sample):
                return float(bool(args.judge_url))
        """),
        Valid("""
            DEST = 'judge'

            def add_arguments(parser):
                parser.add_argument('--url', dest=DEST)

            async def reward_func(args, sample):
                return float(bool(args.judge))
        """),
        # A class hook reading a declared option and a vime option through self.args; a
        # local alias of args; vime's arg() of a vime option; another object's self.args.
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--judge-url')

            class Judge:
                def __init__(self, args):
                    self.args = args
                async def __call__(self, args, sample, **kwargs):
                    return float(bool(self.args.judge_url and self.args.rm_type))
            reward_func = Judge()
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                cfg = args
                return float(cfg.rm_type == 'x')
        """),
        Valid("""
            from vime.config import arg
            async def reward_func(args, sample, **kwargs):
                return float(arg(args, 'rm_type') == 'x')
        """),
        Valid("""
            class Job:
                def __init__(self, spec):
                    self.args = spec
                def run(self):
                    return self.args.judge_url
            async def reward_func(args, sample, **kwargs):
                return 1.0
        """),
        Valid("""
            OPTS = {'dest': 'judge'}

            def add_arguments(parser):
                parser.add_argument('--url', **OPTS)

            async def reward_func(args, sample):
                return float(bool(args.judge))
        """),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample):
                return float(bool(args.judge_url))
        """, line=2, col=22),
        Invalid("""
            async def reward_func(args, sample):
                return float(bool(args.judge_url and args.judge_url))
        """, line=2, col=22),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                n = args.rollout_batch_sise
        """, line=2, col=8),
        Invalid("""
            def add_arguments(parser):
                parser.add_argument('--judge-url')

            async def reward_func(args, sample):
                return float(bool(args.judge_uri))
        """, line=5, col=22),
        Invalid("""
            def _budget(args):
                return getattr(args, 'tool_budget')

            async def reward_func(args, sample):
                return float(_budget(args))
        """, line=2, col=11),
        # Through self.args in a class hook; a local alias of args; a batch reward's
        # comprehension; vime's arg() under a module alias (it raises for a name that is no
        # option).
        Invalid("""
            class Judge:
                def __init__(self, args):
                    self.args = args
                async def __call__(self, args, sample, **kwargs):
                    return float(bool(self.args.judge_url))
            reward_func = Judge()
        """, line=5, col=26),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                cfg = args
                return float(bool(cfg.judge_url))
        """, line=3, col=22),
        Invalid("""
            async def reward_func(args, samples, **kwargs):
                return [float(args.judge_weight) for s in samples]
        """, line=2, col=18),
        Invalid("""
            import vime.config as C
            async def reward_func(args, sample, **kwargs):
                return float(bool(C.arg(args, 'judge_url')))
        """, line=3, col=22),
        Invalid("""
            def add_arguments(group):
                g = group.add_argument_group('judge')
                g.add_argument('--judge-url')

            async def reward_func(args, sample):
                return float(bool(args.judge_url and args.judge_mode))
        """, line=6, col=41),
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
        declaration = self.context.semantic.declared_options
        self.declared = set(declaration.found) if declaration is not None else set()
        self.open = declaration is not None and declaration.open

    def leave_Module(self, original_node: cst.Module) -> None:
        if self.open:
            return   # any name may be one the module declares out of sight
        # A guard anywhere in the module (``hasattr(args, "x")``, a ``getattr`` default) covers
        # every read of the name, so reads are reported once the traversal has seen all guards
        # (collected by visit_Call, as the semantic model's ArgsReads does, without a walk of
        # its own).
        for name, (node, fn) in self.first.items():
            if name in self.guarded:
                continue
            close = difflib.get_close_matches(name, [*self.known, *self.declared], n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            self.report(node, self.INVARIANT.render(attr=name, name=fn, hint=hint))

    def _is_args(self, expr: cst.BaseExpression) -> bool:
        """``args``; a local name bound only to it (``cfg = args``); ``self.args`` in a method
        of a class that sets it from a parameter named ``args``."""
        if isinstance(expr, cst.Name):
            if expr.value == "args":
                return True
            values = self.context.semantic.facts(self.current).values.get(expr.value) \
                if self.current is not None else None
            return bool(values) and all(isinstance(v, cst.Name) and v.value == "args"
                                        for v in values or ())
        if isinstance(expr, cst.Attribute) and expr.attr.value == "args" \
                and isinstance(expr.value, cst.Name) and expr.value.value == "self" \
                and self.owner is not None:
            return self._owner_keeps_args(self.owner)
        return False

    def _owner_keeps_args(self, cls: cst.ClassDef) -> bool:
        """A method of ``cls`` stores its ``args`` parameter as ``self.args``."""
        semantic = self.context.semantic
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef) and _takes_args(stmt):
                for store in semantic.facts(stmt).attr_stores:
                    if store.attr == "args" and isinstance(store.value, cst.Name) \
                            and store.value.value == "args":
                        return True
        return False

    def _check(self, node: cst.CSTNode, name: str, through_self: bool = False) -> None:
        if not (through_self or _takes_args(self.current)) or name in self.known \
                or name in self.declared or name in self.first or name.startswith("__"):
            return
        assert self.current is not None
        self.first[name] = (node, self.current.name.value)   # once per name: its first read

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self.writes and self.current is not None \
                and self._is_args(node.value):
            self._check(node, node.attr.value, through_self=isinstance(node.value, cst.Attribute))

    def visit_Assign(self, node: cst.Assign) -> None:
        # assignment targets are writes (VIM016's), not reads
        self.writes.update(id(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.writes.add(id(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        if len(node.args) == 2 and isinstance(node.args[0].value, cst.Name) \
                and node.args[0].value.value == "args" and any(
                    n.startswith("vime.config") and n.endswith(".arg")
                    for n in self.qualified(node.func)):
            name = string_value(node.args[1].value)
            if name:   # vime's arg(args, name) raises for a name that is no option
                self._check(node, name)
            return
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
