"""VIM051: an agent function (``--agent-function-path``) calls the endpoint with an async
client, not a synchronous HTTP client.

See ``docs/contract.md`` §5 and §6a; the agent endpoint is ``vime/agent/``.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["AgentSyncClient"]


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
        Valid("""
            from openai import AsyncOpenAI
            async def run_agent(args, sample, base_url, api_key):
                client = AsyncOpenAI(base_url=base_url, api_key=api_key)
                return 1.0
        """),
        Valid("""
            import openai
            async def other(args, sample, base_url, api_key):
                return openai.OpenAI()
        """),
        Valid("""
            import httpx
            async def run_agent(args, sample, base_url, api_key):
                async with httpx.AsyncClient() as c:
                    await c.post(base_url + '/chat/completions', json={})
                return None
        """),
        # An aliased requests handed to asyncio.to_thread (run off the loop), not called.
        Valid("""
            import asyncio
            import requests as rq
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                resp = await asyncio.to_thread(rq.get, args.tool_url, timeout=10)
                return resp.json()['score']
        """),
        # An instance's __call__ with the async client under an alias, awaited in a comprehension.
        Valid("from openai import AsyncOpenAI as Client\n"
              "class Agent:\n"
              "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
              "        client = Client(base_url=base_url, api_key=api_key)\n"
              "        replies = [await client.completions.create(model='m', prompt=p) for p in sample.prompt]\n"
              "        return len(replies)\n"
              "run_agent = Agent()\n"),
        # A blocking module helper only handed to asyncio.to_thread: it runs off the loop.
        Valid("""
            import asyncio
            import requests
            def _fetch(url):
                return requests.get(url, timeout=10).json()
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                data = await asyncio.to_thread(_fetch, args.tool_url)
                return data['score']
        """),
    ]
    INVALID = [
        Invalid("""
            import openai
            async def run_agent(args, sample, base_url, api_key):
                client = openai.OpenAI(base_url=base_url, api_key=api_key)
                return 1.0
        """, line=3, col=13),
        Invalid("""
            from openai import OpenAI as Sync
            async def run_agent(args, sample, base_url, api_key):
                c = Sync(base_url=base_url)
                return 1.0
        """, line=3, col=8),
        Invalid("""
            import httpx
            async def run_agent(args, sample, base_url, api_key):
                with httpx.Client() as c:
                    c.post(base_url)
                return 1.0
        """, line=3, col=9),
        Invalid("""
            import requests
            async def agent(args, sample, base_url, api_key):
                return requests.post(base_url, json={}).json()['r']
        """, line=3, col=11, options={"hooks": {"agent": _AGENT}}),
        # An instance's __call__: an aliased requests called in a comprehension.
        Invalid("import requests as rq\n"
                "class Agent:\n"
                "    async def __call__(self, args, sample, base_url, api_key, **kwargs):\n"
                "        replies = [rq.post(base_url + '/completions', json={'prompt': p}) for p in sample.prompt]\n"
                "        return len(replies)\n"
                "run_agent = Agent()\n", line=4, col=19),
        # The sync client built in a module helper the agent function calls.
        Invalid("""
            import openai
            def _client(base_url, api_key):
                return openai.OpenAI(base_url=base_url, api_key=api_key)
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                client = _client(base_url, api_key)
                return 1.0
        """, line=3, col=11),
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
