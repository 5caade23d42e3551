"""The agent function (``--agent-function-path``): a plain ``def`` (VIM050), a synchronous HTTP
client inside it (VIM051), and no reward returned on any path (VIM052).

See ``docs/contract.md`` §5 and §6a; the agent endpoint is ``vime/agent/``.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import called, returns_nothing
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["AgentFunctionSync", "AgentReturnsNothing", "AgentSyncClient"]

_AGENT = "agent_function_path"

#: Synchronous HTTP clients by qualified name (prefix match when the entry ends with ".").
SYNC_CLIENTS = ("openai.OpenAI", "openai.Client", "openai.AzureOpenAI", "httpx.Client",
                "requests.Session", "requests.get", "requests.post", "requests.request",
                "httpx.get", "httpx.post", "httpx.request", "urllib.request.urlopen")


def _sync_client(names: set[str]) -> str | None:
    for n in names:
        for c in SYNC_CLIENTS:
            if n == c or (c.endswith(".") and n.startswith(c)):
                return n
    return None


class AgentFunctionSync(FunctionTracker):
    """An agent function is an ``async def``.

    ## What it does
    Reports a plain ``def`` bound to ``--agent-function-path`` (by configuration, a
    ``AgentFunction`` annotation, or the conventional name ``run_agent``).

    ## Why is this bad?
    vime awaits ``run(args, sample, base_url, api_key)`` on the rollout's event loop; a plain
    ``def`` hands back its return value where a coroutine is awaited, and the first sample
    fails after the engines have started (failure kind: "signature vs call mode").

    ## Known problems
    VIM004 reports the same definition against the hook's signature; VIM050 adds the agent's
    fix (an async client).

    ## Example
    ```python
    def run_agent(args, sample, base_url, api_key, **kwargs):
        ...
    ```

    ## Use instead
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        client = AsyncOpenAI(base_url=base_url, api_key=api_key)
        ...
    ```

    ## Fix safety
    No fix: the body's calls have to become awaited calls too.
    """

    INVARIANT = INVARIANTS["VIM050"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
              "    return 1.0\n"),
        Valid("def run_agent(x):\n    return x\n"),
        Valid("def helper(args, sample, base_url, api_key):\n    return 1.0\n"),
        # An instance's async __call__; its sync helper method is not the hook.
        Valid("class Agent:\n"
              "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
              "        return self._score(sample)\n"
              "    def _score(self, sample):\n"
              "        return 1.0\n"
              "run_agent = Agent()\n"),
        # An async function behind an aliased functools.partial, with a sync module helper.
        Valid("from functools import partial as bind\n"
              "async def _run(max_turns, args, sample, base_url, api_key, **kwargs):\n"
              "    return _score(sample)\n"
              "def _score(sample):\n"
              "    return 1.0\n"
              "run_agent = bind(_run, 4)\n"),
    ]
    INVALID = [
        Invalid("def run_agent(args, sample, base_url, api_key, **kwargs):\n    return 1.0\n",
                line=1, col=4),
        Invalid("def run(args, sample, base_url, api_key):\n    return None\n", line=1, col=4,
                options={"hooks": {"run": _AGENT}}),
        # An instance bound as the agent function: its __call__ is a plain def.
        Invalid("class Agent:\n"
                "    def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
                "        return 1.0\n"
                "run_agent = Agent()\n", line=2, col=8),
        # A plain def behind functools.partial imported under an alias.
        Invalid("from functools import partial as bind\n"
                "def _run(max_turns, args, sample, base_url, api_key, **kwargs):\n"
                "    return 1.0\n"
                "run_agent = bind(_run, 4)\n", line=2, col=4),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is not None and binding.spec.dest == _AGENT and node.asynchronous is None:
            self.report(node.name, self.INVARIANT.render(name=node.name.value),
                        fix_hint=self.INVARIANT.fix.format(name=node.name.value))


class AgentSyncClient(FunctionTracker):
    """An agent function calls the endpoint with an async client.

    ## What it does
    Reports, inside the body of an ``--agent-function-path`` function, a call of a synchronous
    HTTP client: ``openai.OpenAI(...)`` / ``openai.Client(...)`` / ``openai.AzureOpenAI(...)``,
    ``httpx.Client(...)``, ``requests.Session()``, ``requests.get/post``, ``httpx.get/post``,
    ``urllib.request.urlopen`` (resolving aliases and ``from`` imports).

    ## Why is this bad?
    With ``--agent-function-mode inline`` (the default) the endpoint that answers the agent runs
    on the same event loop as the agent. A blocking request to it blocks the loop that would
    serve it: the call hangs until the client's timeout and every other trajectory stalls
    (failure kind: "blocking work on the event loop").

    ## Known problems
    The module's own helpers the agent function calls are read (a helper only handed to
    ``asyncio.to_thread`` is not called, so not read); helpers imported from other modules
    are not followed. ``--agent-function-mode subprocess`` makes a synchronous client work (the agent
    then has an event loop of its own); the rule does not read the launch flags.

    ## Example
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        client = openai.OpenAI(base_url=base_url, api_key=api_key)
        reply = client.chat.completions.create(model="m", messages=[...])
    ```

    ## Use instead
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key)
        reply = await client.chat.completions.create(model="m", messages=[...])
    ```

    ## Fix safety
    No fix: every call on the client must also be awaited.
    """

    INVARIANT = INVARIANTS["VIM051"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("from openai import AsyncOpenAI\n"
              "async def run_agent(args, sample, base_url, api_key):\n"
              "    client = AsyncOpenAI(base_url=base_url, api_key=api_key)\n"
              "    return 1.0\n"),
        Valid("import openai\nasync def other(args, sample, base_url, api_key):\n"
              "    return openai.OpenAI()\n"),
        Valid("import httpx\nasync def run_agent(args, sample, base_url, api_key):\n"
              "    async with httpx.AsyncClient() as c:\n"
              "        await c.post(base_url + '/chat/completions', json={})\n"
              "    return None\n"),
        # An aliased requests handed to asyncio.to_thread (run off the loop), not called.
        Valid("import asyncio\n"
              "import requests as rq\n"
              "async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
              "    resp = await asyncio.to_thread(rq.get, args.tool_url, timeout=10)\n"
              "    return resp.json()['score']\n"),
        # An instance's __call__ with the async client under an alias, awaited in a comprehension.
        Valid("from openai import AsyncOpenAI as Client\n"
              "class Agent:\n"
              "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
              "        client = Client(base_url=base_url, api_key=api_key)\n"
              "        replies = [await client.completions.create(model='m', prompt=p) for p in sample.prompt]\n"
              "        return len(replies)\n"
              "run_agent = Agent()\n"),
        # A blocking module helper only handed to asyncio.to_thread: it runs off the loop.
        Valid("import asyncio\n"
              "import requests\n"
              "def _fetch(url):\n"
              "    return requests.get(url, timeout=10).json()\n"
              "async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
              "    data = await asyncio.to_thread(_fetch, args.tool_url)\n"
              "    return data['score']\n"),
    ]
    INVALID = [
        Invalid("import openai\nasync def run_agent(args, sample, base_url, api_key):\n"
                "    client = openai.OpenAI(base_url=base_url, api_key=api_key)\n"
                "    return 1.0\n", line=3, col=13),
        Invalid("from openai import OpenAI as Sync\n"
                "async def run_agent(args, sample, base_url, api_key):\n"
                "    c = Sync(base_url=base_url)\n    return 1.0\n", line=3, col=8),
        Invalid("import httpx\nasync def run_agent(args, sample, base_url, api_key):\n"
                "    with httpx.Client() as c:\n        c.post(base_url)\n    return 1.0\n",
                line=3, col=9),
        Invalid("import requests\nasync def agent(args, sample, base_url, api_key):\n"
                "    return requests.post(base_url, json={}).json()['r']\n", line=3, col=11,
                options={"hooks": {"agent": _AGENT}}),
        # An instance's __call__: an aliased requests called in a comprehension.
        Invalid("import requests as rq\n"
                "class Agent:\n"
                "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
                "        replies = [rq.post(base_url + '/completions', json={'prompt': p}) for p in sample.prompt]\n"
                "        return len(replies)\n"
                "run_agent = Agent()\n", line=4, col=19),
        # The sync client built in a module helper the agent function calls.
        Invalid("import openai\n"
                "def _client(base_url, api_key):\n"
                "    return openai.OpenAI(base_url=base_url, api_key=api_key)\n"
                "async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
                "    client = _client(base_url, api_key)\n"
                "    return 1.0\n", line=3, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: A function of the module the agent function calls -> that agent function's name.
        self.reached: dict[int, str] = {}
        sem = context.semantic
        for fn in sem.functions():
            if not isinstance(fn, cst.FunctionDef):
                continue
            hit = context.hook_target(fn)
            if hit and hit[0].spec.dest == _AGENT:
                for helper in sem.closure(fn, sem.owner(fn))[1:]:
                    self.reached.setdefault(id(helper), fn.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.current
        if fn is None:
            return
        binding = self.hook_of(fn)
        agent = fn.name.value if binding is not None and binding.spec.dest == _AGENT \
            else self.reached.get(id(fn))
        if agent is None:
            return
        hit = _sync_client(self.qualified(node.func))
        if hit is not None:
            call = hit if agent == fn.name.value else f"{hit}` in `{fn.name.value}"
            self.report(node, self.INVARIANT.render(name=agent, call=call))


class AgentReturnsNothing(FunctionTracker):
    """An agent function returns its reward.

    ## What it does
    Reports an ``--agent-function-path`` function whose body has no ``return <value>`` (only
    bare ``return``, ``return None`` or none at all; a ``return helper(...)`` of the module's
    own function that itself returns no value counts as none).

    ## Why is this bad?
    The return value is the trajectory's reward; None means "unscored", and vime's reward
    function (``--rm-type`` / ``--custom-rm-path``) scores every trajectory instead. A body
    that never returns a value usually computed a reward and dropped it (failure kind:
    "reward fn returns None").

    ## Known problems
    ``return None`` on purpose (the run's reward function is meant to score) is reported too;
    suppress it with ``# noqa: VIM052`` on the ``def`` line.

    ## Example
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        answer = await solve(base_url, api_key, sample.prompt)
        reward = float(answer == sample.label)
    ```

    ## Use instead
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        answer = await solve(base_url, api_key, sample.prompt)
        return float(answer == sample.label)
    ```

    ## Fix safety
    No fix: only the author knows the reward.
    """

    INVARIANT = INVARIANTS["VIM052"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def run_agent(args, sample, base_url, api_key):\n"
              "    if sample.label:\n        return 1.0\n    return None\n"),
        Valid("async def run_agent(args, sample, base_url, api_key):\n"
              "    return {'score': 1.0}\n"),
        Valid("async def run_agent(args, sample, base_url, api_key):\n"
              "    raise NotImplementedError\n"),
        # Returns what a module helper returns, and the helper returns the score.
        Valid("async def _episode(sample, base_url):\n"
              "    reply = await chat(base_url, sample.prompt)\n"
              "    return float(sample.label in reply)\n"
              "async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
              "    return await _episode(sample, base_url)\n"),
        # An instance's __call__ returning a dict built from a comprehension.
        Valid("class Agent:\n"
              "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
              "        replies = [await chat(base_url, api_key, p) for p in sample.prompt]\n"
              "        return {'score': sum(sample.label in r for r in replies)}\n"
              "run_agent = Agent()\n"),
    ]
    INVALID = [
        Invalid("async def run_agent(args, sample, base_url, api_key):\n"
                "    reward = 1.0\n", line=1, col=10),
        Invalid("async def run_agent(args, sample, base_url, api_key):\n"
                "    def helper():\n        return 1.0\n    return None\n", line=1, col=10),
        Invalid("async def agent(args, sample, base_url, api_key):\n    return\n", line=1,
                col=10, options={"hooks": {"agent": _AGENT}}),
        # An instance's __call__ that sets the reward but returns nothing.
        Invalid("class Agent:\n"
                "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
                "        reply = await chat(base_url, api_key, sample.prompt)\n"
                "        sample.reward = float(sample.label in reply)\n"
                "run_agent = Agent()\n", line=2, col=14),
        # Returns a module helper's result, and the helper returns nothing.
        Invalid("async def _episode(sample, base_url):\n"
                "    reply = await chat(base_url, sample.prompt)\n"
                "    sample.metadata['reply'] = reply\n"
                "async def run_agent(args, sample, base_url, api_key, **kwargs):\n"
                "    return await _episode(sample, base_url)\n", line=4, col=10),
        # Behind an aliased functools.partial, a loop and no return.
        Invalid("import functools as ft\n"
                "async def _agent(max_turns, args, sample, base_url, api_key, **kwargs):\n"
                "    for _ in range(max_turns):\n"
                "        await chat(base_url, sample.prompt)\n"
                "run_agent = ft.partial(_agent, 3)\n", line=2, col=10),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != _AGENT:
            return
        values = [r for r in self.context.semantic.facts(node).returns
                  if not returns_nothing(r.value) and not self._valueless_call(node, r.value)]
        if not values and not _only_raises(node):
            self.report(node.name, self.INVARIANT.render(name=node.name.value))

    def _valueless_call(self, fn: cst.FunctionDef, value: cst.BaseExpression | None) -> bool:
        """``return [await] helper(...)`` of the module's own function (or ``self`` method)
        that itself never returns a value (and is not a stub that raises)."""
        call = called(value)
        if call is None:
            return False
        target = self.context.semantic.callee(call, fn, self.owner)
        if target is None or target is fn:
            return False
        facts = self.context.semantic.facts(target)
        return not facts.yields and not _only_raises(target) \
            and all(returns_nothing(r.value) for r in facts.returns)



def _only_raises(node: cst.FunctionDef) -> bool:
    """A body that ends in ``raise`` (a stub): no reward is expected from it."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    return (isinstance(last, cst.SimpleStatementLine) and bool(last.body)
            and isinstance(last.body[-1], cst.Raise))
