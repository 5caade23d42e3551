"""VIM021: a call of an async function is awaited or scheduled.

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime.contract.hooks import ASYNC_API
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["UnawaitedCoroutine"]


#: Async functions by qualified name: vime's public async API and ``asyncio.sleep``.
KNOWN_ASYNC = ASYNC_API | {"asyncio.sleep"}


class UnawaitedCoroutine(FunctionTracker):
    """A call of an async function is awaited or scheduled.

    ## What it does
    Reports calls of an ``async def`` of the same module (also a nested one, an alias, a
    local name bound to one, an instance with an async ``__call__``), an async method of the
    same class (``self.fetch()``) or of a module-level instance (``judge.score()``),
    or a known async function of vime (``generate``, ``generate_and_rm``, ``async_rm``, ...)
    whose coroutine never runs: a bare statement, a comprehension statement, a value
    (``f().x``, ``f()[0]``, ``f() + 1``, ``if f():``, ``print(f())``), or a coroutine bound to
    a name or collected into a list that is never awaited or gathered. Awaiting it, passing it
    (or a list of them) to ``asyncio.gather``/``create_task``/``asyncio.run``/vime's ``run``,
    returning it, or handing it to a function the module does not show is fine; so are
    ``await asyncio.to_thread(f)`` and ``loop.run_in_executor(None, f)``, which get a function,
    not a coroutine.

    ## Why is this bad?
    An un-awaited call returns a coroutine: the work never runs (Python only warns
    "coroutine was never awaited" at garbage collection), and code that uses the result gets
    a coroutine object (failure kinds: "coroutine returned instead of value", "async reward
    not awaited").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        fetch_tools(sample)
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        await fetch_tools(sample)
        return sample
    ```

    ## Fix safety
    No fix: ``await`` is only valid inside ``async def``.
    """

    INVARIANT = INVARIANTS["VIM021"]
    VALID = [
        Valid("""
            async def f():
                pass
            async def g():
                await f()
        """),
        Valid("""
            import asyncio
            async def f(x):
                pass
            async def g(xs):
                await asyncio.gather(*[f(x) for x in xs])
        """),
        Valid("""
            async def f():
                pass
            def g():
                f = len
                f([])
        """),
        Valid("""
            async def f():
                pass
            async def g():
                task = f()
                await task
        """),
        # Collected, then gathered.
        Valid("""
            import asyncio
            async def f(x):
                pass
            async def g(xs):
                tasks = []
                for x in xs:
                    tasks.append(f(x))
                return await asyncio.gather(*tasks)
        """),
        # A task group, a loop's create_task, to_thread and run_in_executor.
        Valid("""
            import asyncio
            async def f(x):
                pass
            def slow(x):
                pass
            async def g(loop, xs):
                t = loop.create_task(f(1))
                await asyncio.to_thread(slow, 2)
                await loop.run_in_executor(None, slow, 3)
                await t
        """),
        # vime's run() from sync code; a dict comprehension of coroutines handed to gather.
        Valid("""
            import asyncio
            from vime.utils.async_utils import run
            async def f(x):
                pass
            def g(xs):
                coros = {x: f(x) for x in xs}
                return run(asyncio.gather(*coros.values()))
        """),
        # An async method of a module-level instance awaited; a local alias of a sync def;
        # a helper's list of coroutines gathered by the caller.
        Valid("""
            class Judge:
                async def score(self, s):
                    return 1.0
            judge = Judge()
            async def g(s):
                s.reward = await judge.score(s)
        """),
        Valid("""
            async def _fetch(x):
                return x
            def _sync(x):
                return x
            async def g(xs):
                f = _sync
                f(1)
        """),
        Valid("""
            import asyncio
            async def _fetch(x):
                return x
            def helper(xs):
                return [_fetch(x) for x in xs]
            async def g(xs):
                return await asyncio.gather(*helper(xs))
        """),
        # A sync method named like a module coroutine is not one.
        Valid("""
            async def fetch():
                pass
            class A:
                def fetch(self):
                    pass
                def run(self):
                    self.fetch()
        """),
    ]
    INVALID = [
        Invalid("""
            async def f():
                pass
            async def g():
                f()
        """, line=4, col=4),
        Invalid("""
            from vime.rollout.rm_hub import async_rm
            async def g(args, s):
                s.reward = async_rm(args, s) + 1
        """, line=3, col=15),
        Invalid("""
            class A:
                async def fetch(self):
                    pass
                async def run(self):
                    if self.fetch():
                        pass
        """, line=5, col=11),
        # Inside a list comprehension used as a statement.
        Invalid("""
            async def score(s):
                pass
            async def g(samples):
                [score(s) for s in samples]
        """, line=4, col=5),
        # Inside a dict comprehension bound to a name that is never gathered.
        Invalid("""
            async def score(s):
                pass
            async def g(samples):
                pending = {s.index: score(s) for s in samples}
                return len(pending)
        """, line=4, col=24),
        # Collected into a list that is never gathered.
        Invalid("""
            async def score(s):
                pass
            async def g(samples):
                tasks = []
                for s in samples:
                    tasks.append(score(s))
                return None
        """, line=6, col=21),
        # A nested coroutine, and an instance whose __call__ is async.
        Invalid("""
            async def g(samples):
                async def one(s):
                    pass
                one(samples[0])
        """, line=4, col=4),
        Invalid("""
            class Judge:
                async def __call__(self, s):
                    return 1.0
            judge = Judge()
            async def g(s):
                s.reward = judge(s)
        """, line=6, col=15),
        # vime's async_rm imported under another name; an async method of a module-level
        # instance; a local alias of an async def.
        Invalid("""
            from vime.rollout.rm_hub import async_rm as score
            async def g(args, s):
                s.reward = score(args, s)
        """, line=3, col=15),
        Invalid("""
            class Judge:
                async def score(self, s):
                    return 1.0
            judge = Judge()
            async def g(s):
                s.reward = judge.score(s)
        """, line=6, col=15),
        Invalid("""
            async def _fetch(x):
                return x
            async def g(xs):
                f = _fetch
                f(1)
        """, line=5, col=4),
        # Passed to a builtin that does not await it.
        Invalid("""
            async def f():
                pass
            async def g():
                print(f())
        """, line=4, col=10),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.known = frozenset(KNOWN_ASYNC)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        for call, callee, problem in self.context.semantic.unawaited(node, self.owner,
                                                                     self.known):
            self.report(call, self.INVARIANT.render(call=callee) + f": {problem}")
