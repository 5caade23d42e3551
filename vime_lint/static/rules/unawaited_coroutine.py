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
        Valid("async def f():\n    pass\nasync def g():\n    await f()\n"),
        Valid("import asyncio\nasync def f(x):\n    pass\nasync def g(xs):\n"
              "    await asyncio.gather(*[f(x) for x in xs])\n"),
        Valid("async def f():\n    pass\ndef g():\n    f = len\n    f([])\n"),
        Valid("async def f():\n    pass\nasync def g():\n    task = f()\n    await task\n"),
        # Collected, then gathered.
        Valid("import asyncio\nasync def f(x):\n    pass\nasync def g(xs):\n    tasks = []\n"
              "    for x in xs:\n        tasks.append(f(x))\n"
              "    return await asyncio.gather(*tasks)\n"),
        # A task group, a loop's create_task, to_thread and run_in_executor.
        Valid("import asyncio\nasync def f(x):\n    pass\ndef slow(x):\n    pass\n"
              "async def g(loop, xs):\n    t = loop.create_task(f(1))\n"
              "    await asyncio.to_thread(slow, 2)\n"
              "    await loop.run_in_executor(None, slow, 3)\n    await t\n"),
        # vime's run() from sync code; a dict comprehension of coroutines handed to gather.
        Valid("import asyncio\nfrom vime.utils.async_utils import run\nasync def f(x):\n    pass\n"
              "def g(xs):\n    coros = {x: f(x) for x in xs}\n"
              "    return run(asyncio.gather(*coros.values()))\n"),
        # An async method of a module-level instance awaited; a local alias of a sync def;
        # a helper's list of coroutines gathered by the caller.
        Valid("class Judge:\n    async def score(self, s):\n        return 1.0\n"
              "judge = Judge()\nasync def g(s):\n    s.reward = await judge.score(s)\n"),
        Valid("async def _fetch(x):\n    return x\ndef _sync(x):\n    return x\n"
              "async def g(xs):\n    f = _sync\n    f(1)\n"),
        Valid("import asyncio\nasync def _fetch(x):\n    return x\n"
              "def helper(xs):\n    return [_fetch(x) for x in xs]\n"
              "async def g(xs):\n    return await asyncio.gather(*helper(xs))\n"),
        # A sync method named like a module coroutine is not one.
        Valid("async def fetch():\n    pass\nclass A:\n    def fetch(self):\n        pass\n"
              "    def run(self):\n        self.fetch()\n"),
    ]
    INVALID = [
        Invalid("async def f():\n    pass\nasync def g():\n    f()\n", line=4, col=4),
        Invalid("from vime.rollout.rm_hub import async_rm\nasync def g(args, s):\n"
                "    s.reward = async_rm(args, s) + 1\n", line=3, col=15),
        Invalid("class A:\n    async def fetch(self):\n        pass\n"
                "    async def run(self):\n        if self.fetch():\n            pass\n",
                line=5, col=11),
        # Inside a list comprehension used as a statement.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n"
                "    [score(s) for s in samples]\n", line=4, col=5),
        # Inside a dict comprehension bound to a name that is never gathered.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n"
                "    pending = {s.index: score(s) for s in samples}\n    return len(pending)\n",
                line=4, col=24),
        # Collected into a list that is never gathered.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n    tasks = []\n"
                "    for s in samples:\n        tasks.append(score(s))\n    return None\n",
                line=6, col=21),
        # A nested coroutine, and an instance whose __call__ is async.
        Invalid("async def g(samples):\n    async def one(s):\n        pass\n"
                "    one(samples[0])\n", line=4, col=4),
        Invalid("class Judge:\n    async def __call__(self, s):\n        return 1.0\n"
                "judge = Judge()\nasync def g(s):\n    s.reward = judge(s)\n", line=6, col=15),
        # vime's async_rm imported under another name; an async method of a module-level
        # instance; a local alias of an async def.
        Invalid("from vime.rollout.rm_hub import async_rm as score\nasync def g(args, s):\n"
                "    s.reward = score(args, s)\n", line=3, col=15),
        Invalid("class Judge:\n    async def score(self, s):\n        return 1.0\n"
                "judge = Judge()\nasync def g(s):\n    s.reward = judge.score(s)\n",
                line=6, col=15),
        Invalid("async def _fetch(x):\n    return x\nasync def g(xs):\n    f = _fetch\n"
                "    f(1)\n", line=5, col=4),
        # Passed to a builtin that does not await it.
        Invalid("async def f():\n    pass\nasync def g():\n    print(f())\n", line=4, col=10),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.known = frozenset(KNOWN_ASYNC)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        for call, callee, problem in self.context.semantic.unawaited(node, self.owner,
                                                                     self.known):
            self.report(call, self.INVARIANT.render(call=callee) + f": {problem}")
