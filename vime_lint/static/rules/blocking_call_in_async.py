"""VIM005: no blocking calls inside ``async def`` hooks and the helpers they call.

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import Semantic

__all__ = ["BlockingCallInAsync"]


#: Blocking callables by qualified name (prefix match when the entry ends with ".").
BLOCKING = (
    "time.sleep", "requests.", "urllib.request.urlopen", "urllib3.request",
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "os.system", "httpx.get", "httpx.post", "httpx.put", "httpx.patch", "httpx.delete",
    "httpx.head", "httpx.request", "socket.create_connection",
)


#: Iterations of a pure-Python loop that keep the event loop busy for tens of milliseconds
#: or more (a ``for`` over ``range(n)``): the loop is CPU-bound work for a thread.
_LONG_LOOP = 100_000


def _long_loop(semantic: Semantic, loop: cst.For, fn: cst.FunctionDef) -> int | None:
    """The iteration count of ``for ... in range(...)`` when it is a known number of at least
    ``_LONG_LOOP`` (:meth:`~vime_lint.static.analysis.Semantic.range_count`); else None."""
    n = semantic.range_count(loop, fn)
    return n if n is not None and n >= _LONG_LOOP else None


def _blocking(names: set[str]) -> str | None:
    for n in names:
        for b in BLOCKING:
            if n == b or (b.endswith(".") and n.startswith(b) and n.count(".") == 1):
                return n
    return None


class BlockingCallInAsync(FunctionTracker):
    """No blocking calls inside ``async def``.

    ## What it does
    Reports calls of ``time.sleep``, ``requests.*``, ``urllib.request.urlopen``,
    ``subprocess.run``/``call``/``check_output``, ``os.system`` and sync ``httpx`` functions
    directly inside an ``async def`` (resolving ``from time import sleep``, import aliases
    and local names bound to them, ``post = requests.post``),
    a ``for`` loop over ``range(n)`` of at least 100000 iterations there (``n`` a literal, a
    parameter's default or a module constant), and a call of one of the module's own sync
    functions that does either (itself or through the sync helpers it calls). Passing the
    function to ``asyncio.to_thread`` or an executor is fine.

    ## Why is this bad?
    Generate and reward hooks share one event loop per process; a blocking call, or seconds
    of CPU-bound checking in plain Python, stalls every concurrent request and serialises the
    whole rollout (failure kind: "blocking work on the event loop"; redai-studio/Relax#181).

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        r = requests.post(URL, json={"text": sample.response})
        return r.json()["score"]
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        r = await asyncio.to_thread(requests.post, URL, json={"text": sample.response})
        return r.json()["score"]
    ```

    ## Known problems
    A loop bound read from a parameter's default counts even where the call passes a smaller
    value; a loop bound computed at run time is not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM005"]
    VALID = [
        Valid("""
            import asyncio, time
            async def f():
                await asyncio.sleep(1)
        """),
        Valid("""
            import time
            def f():
                time.sleep(1)
        """),
        Valid("""
            import asyncio, requests
            async def f(u):
                return await asyncio.to_thread(requests.get, u)
        """),
        Valid("""
            import time
            async def f():
                def g():
                    time.sleep(1)
                return g
        """),
        # A short loop, a loop of unknown length, CPU work handed to a thread, an async
        # helper (awaited: its own body is checked where it is defined).
        Valid("""
            def norm(text):
                for _ in range(10):
                    text = text.strip()
                return text
            async def reward_func(args, sample, **kwargs):
                return float(norm(sample.response) == sample.label)
        """),
        Valid("""
            def check(answer, rounds):
                for i in range(rounds):
                    pass
            async def reward_func(args, sample, **kwargs):
                return float(check(sample.response, len(sample.response)))
        """),
        Valid("""
            import asyncio
            def check(answer, rounds=1_000_000):
                for i in range(rounds):
                    pass
                return True
            async def reward_func(args, sample, **kwargs):
                return float(await asyncio.to_thread(check, sample.response))
        """),
        # A class reward handing its blocking self method to a thread; a lambda run in an
        # executor.
        Valid("""
            import asyncio, requests
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return await asyncio.to_thread(self._post, sample.response)
                def _post(self, text):
                    return requests.post(URL, json={'t': text}).json()['score']
            reward_func = Judge()
        """),
        Valid("""
            import asyncio, time
            async def reward_func(args, sample, **kwargs):
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(None, lambda: time.sleep(1) or 1.0)
        """),
        Valid("""
            import asyncio
            async def fetch(u):
                await asyncio.sleep(0)
            async def f(u):
                return await fetch(u)
        """),
    ]
    INVALID = [
        Invalid("""
            import time
            async def f():
                time.sleep(1)
        """, line=3, col=4),
        Invalid("""
            from time import sleep
            async def f():
                sleep(1)
        """, line=3, col=4),
        Invalid("""
            import requests as rq
            async def f(u):
                return rq.get(u)
        """, line=3, col=11),
        Invalid("""
            import subprocess
            async def f():
                subprocess.run(['ls'])
        """, line=3, col=4),
        # CPU-bound work in a sync helper (a default parameter, a module constant, one
        # helper further), or a long loop in the async def itself.
        Invalid("""
            def equivalent(a, b, rounds=200_000):
                acc = 0
                for i in range(rounds):
                    acc = (acc * 31 + i) % 7
                return a == b
            async def reward_func(args, sample, **kwargs):
                return float(equivalent(sample.response, sample.label))
        """, line=7, col=17),
        Invalid("""
            ROUNDS = 500_000
            def _mix(a):
                for i in range(1, ROUNDS):
                    a = hash((a, i))
                return a
            def verify(a):
                return _mix(a) > 0
            async def reward_func(args, sample, **kwargs):
                ok = verify(sample.response)
                return float(ok)
        """, line=9, col=9),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                acc = 0
                for i in range(1_000_000):
                    acc += i
                return 0.0
        """, line=3, col=4),
        # A class reward's __call__; its sync self method; a batch comprehension; a local
        # alias of requests.post.
        Invalid("""
            import time
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    time.sleep(0.1)
                    return 1.0
            reward_func = Judge()
        """, line=4, col=8),
        Invalid("""
            import requests
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return self._post(sample.response)
                def _post(self, text):
                    return requests.post(URL, json={'t': text}).json()['score']
            reward_func = Judge()
        """, line=4, col=15),
        Invalid("""
            import requests
            async def reward_func(args, samples, **kwargs):
                return [requests.post(URL, json={'t': s.response}).json()['score'] for s in samples]
        """, line=3, col=12),
        Invalid("""
            import requests
            async def reward_func(args, sample, **kwargs):
                post = requests.post
                return post(URL).json()['score']
        """, line=4, col=11),
        # A blocking call in a sync helper.
        Invalid("""
            import requests
            def score(text):
                return requests.post(URL, json={'t': text}).json()['score']
            async def reward_func(args, sample, **kwargs):
                return score(sample.response)
        """, line=5, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: id(sync function) -> what blocks in it (or in the sync helpers it calls), or None.
        self._blocks: dict[int, str | None] = {}

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.current
        if fn is None or fn.asynchronous is None:
            return
        name = fn.name.value
        hit = _blocking(self.qualified(node.func))
        if hit is None and isinstance(node.func, cst.Name) \
                and node.func.value in self.context.semantic.facts(fn).values:
            # a local alias of a blocking function (post = requests.post; post(...))
            for leaf, _ in self.context.semantic.origins(fn, node.func, owner=self.owner):
                if isinstance(leaf, (cst.Name, cst.Attribute)) and leaf is not node.func:
                    hit = hit or _blocking(self.qualified(leaf))
        if hit is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"blocking call `{hit}` inside async def `{name}`"))
            return
        target = self.context.semantic.callee(node, fn, self.owner)
        if target is None or target.asynchronous is not None:
            return
        what = self._helper_blocks(target)
        if what is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"`{code_of(node.func)}(...)` inside async def `{name}` blocks the "
                f"event loop: it {what}"))

    def visit_For(self, node: cst.For) -> None:
        fn = self.current
        if fn is None or fn.asynchronous is None:
            return
        n = _long_loop(self.context.semantic, node, fn)
        if n is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"a pure-Python loop of {n} iterations inside async def "
                f"`{fn.name.value}` runs on the event loop"))

    def _helper_blocks(self, target: cst.FunctionDef) -> str | None:
        """What blocks the loop in the sync function ``target`` or the sync helpers of the
        module it calls: a blocking call, or a loop of at least ``_LONG_LOOP`` iterations."""
        if id(target) in self._blocks:
            return self._blocks[id(target)]
        self._blocks[id(target)] = None
        semantic = self.context.semantic
        found: str | None = None
        for helper in semantic.closure(target, self.owner):
            if helper.asynchronous is not None:
                continue
            where = f"`{helper.name.value}`"
            for site in semantic.facts(helper).calls:
                hit = _blocking(self.qualified(site.node.func))
                if hit is not None:
                    found = f"makes the blocking call `{hit}` (in {where})"
                    break
            if found is None:
                for loop in m.findall(helper.body, m.For()):
                    assert isinstance(loop, cst.For)
                    n = _long_loop(semantic, loop, helper)
                    if n is not None:
                        found = f"runs a pure-Python loop of {n} iterations (in {where})"
                        break
            if found is not None:
                break
        self._blocks[id(target)] = found
        return found
