"""VIM039: every option a hook module declares in its ``add_arguments(parser)``
(``vime/config/hook_options.py``) is read in it.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["UnreadHookOption"]


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
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--bonus', type=float)

            async def reward_func(args, sample):
                return args.bonus
        """),
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--b', dest='bonus')

            async def reward_func(args, sample):
                return getattr(args, 'bonus', 0.0)
        """),
        # Options on an argument group, both read in an instance's __call__.
        Valid("""
            def add_arguments(parser):
                group = parser.add_argument_group('judge')
                group.add_argument('--judge-url')
                group.add_argument('--judge-timeout', type=float, default=30.0)
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return await ask(args.judge_url, sample, timeout=args.judge_timeout)
            reward_func = Judge()
        """),
        # Read in a module helper's comprehension by computed name: not knowable, so quiet.
        Valid("""
            def add_arguments(parser):
                parser.add_argument('--w-acc', type=float, default=1.0)
                parser.add_argument('--w-fmt', type=float, default=0.5)
            def _weights(args):
                return [getattr(args, k) for k in ('w_acc', 'w_fmt')]
            async def reward_func(args, sample, **kwargs):
                return sum(_weights(args))
        """),
    ]
    INVALID = [
        Invalid("""
            def add_arguments(parser):
                parser.add_argument('--format-bonus')

            async def reward_func(args, sample):
                return 1.0
        """, line=2, col=4),
        Invalid("""
            def add_arguments(group):
                group.add_argument('--a')
                group.add_argument('--b')

            async def reward_func(args, sample):
                return float(args.a)
        """, line=3, col=4),
        # An option of an argument group that the instance's __call__ never reads.
        Invalid("""
            def add_arguments(parser):
                group = parser.add_argument_group('judge')
                group.add_argument('--judge-url')
                group.add_argument('--judge-timeout', type=float, default=30.0)
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return await ask(args.judge_url, sample)
            reward_func = Judge()
        """, line=4, col=4),
        # getattr with the flag's spelling: argparse stores format_bonus.
        Invalid("""
            def add_arguments(parser):
                parser.add_argument('--format-bonus', type=float, default=0.1)
            async def reward_func(args, sample, **kwargs):
                return 1.0 + getattr(args, 'format-bonus', 0.0)
        """, line=2, col=4),
        # One option read in a module helper, the other never.
        Invalid("""
            def add_arguments(parser):
                parser.add_argument('--bonus', type=float)
                parser.add_argument('--penalty', type=float)
            def _bonus(args):
                return args.bonus
            async def reward_func(args, sample, **kwargs):
                return [_bonus(args) for _ in range(1)][0]
        """, line=3, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        sem = self.context.semantic
        found = sem.declared_options
        declared = found.found if found is not None else {}
        if not declared:
            return
        reads = sem.args_reads
        if reads.dynamic:
            return  # which options it reads is not in the source
        for dest, (flag, call) in declared.items():
            if dest not in reads.names:
                self.report(call, self.INVARIANT.render(flag=flag, dest=dest))
