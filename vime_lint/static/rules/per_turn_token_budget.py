"""The token budget of each turn of a multi-turn loop: VIM027.

:class:`FullBudgetEveryTurn` looks at the custom generate and rollout functions (with the
module-level helpers they call, :meth:`~vime_lint.static.analysis.Semantic.closure`) and
their turn loops (the semantic model's :meth:`~vime_lint.static.analysis.Semantic.turn_loops`).

See ``docs/contract.md`` §5 (``sampling_params``), §8 and §6a.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from vime.contract import INVARIANTS
from vime.contract.hooks import ASYNC_API
from vime_lint.static._cst import code_of, reads_any, string_value
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import TurnLoop, is_sample_name

#: A generate loop that asks for the full budget each turn, over ``{loop}`` (VALID/INVALID).
_TURNS = ("async def generate(args, sample, sampling_params):\n    response = ''\n"
          "    for _ in {loop}:\n"
          "        sampling_params['max_new_tokens'] = args.rollout_max_response_len\n"
          "        payload = {{'text': sample.prompt + response,"
          " 'sampling_params': sampling_params}}\n"
          "        out = await post(URL, payload)\n        response += out['text']\n"
          "        if out['done']:\n            break\n"
          "    return sample\n")

__all__ = ["FullBudgetEveryTurn"]

#: A generate loop whose turn budget is ``{left}`` (VALID/INVALID).
_LEFT = ("from vime.rollout.vllm_rollout import generate as turn\n"
         "async def generate(args, sample, sampling_params):\n    for _ in range(3):\n"
         "        left = {left}\n        if left <= 0:\n            break\n"
         "        sample = await turn(args, sample, {{**sampling_params, 'max_tokens': left}})\n"
         "    return sample\n")

_DESTS = ("custom_generate_function_path", "rollout_function_path", "eval_function_path")
_GENERATE = "custom_generate_function_path"
#: Sampling-parameter keys (and keywords) that cap one request's new tokens.
_BUDGET_KEYS = frozenset({"max_tokens", "max_new_tokens", "max_completion_tokens",
                          "max_response_len"})
_BUDGET_ARG = "rollout_max_response_len"
#: vime's generate functions: they subtract what a sample already holds from ``max_tokens``.
_SUBTRACTING = frozenset(n for n in ASYNC_API if n.rpartition(".")[2].startswith("generate"))


#: A generate whose loop appends ``{new}`` on every turn (one request per turn, full budget).
_PER_TURN = ("async def generate(args, sample, sampling_params):\n"
             "    messages, turns = [sample.prompt], []\n    for _ in range(4):\n"
             "        params = {{**sampling_params, 'max_new_tokens': args.rollout_max_response_len}}\n"
             "        out = await post(URL, {{'messages': messages, 'sampling_params': params}})\n"
             "        messages.append(out['text'])\n        turns.append({new})\n"
             "    return turns\n")


class FullBudgetEveryTurn(FunctionTracker):
    """A multi-turn loop does not ask for the whole response budget on every turn.

    ## What it does
    In a ``--custom-generate-function-path`` or rollout function, and the module-level helpers
    (and, for a class hook, the ``self`` methods) it calls, finds the turn loops (``while`` and ``for _ in range(...)`` loops that grow a
    trajectory: ``response += ...``, ``messages.append(...)``, ``prompt = prompt + ...``,
    ``sample.append_response_tokens(...)``) and reports sampling parameters whose
    ``max_tokens`` / ``max_new_tokens`` is exactly ``args.rollout_max_response_len`` (also
    through ``vime.config.arg(args, "rollout_max_response_len")``, ``getattr`` or a local
    name) when they go into the same request as the trajectory: set in the loop
    (``params["max_tokens"] = ...``, ``{"max_new_tokens": ...}``, ``SamplingParams(max_tokens=
    ...)``), or built before the loop (the generate function's own ``sampling_params``
    included) and sent unchanged on every turn. Anything that subtracts (``budget -
    sample.response_length``, ``min(...)``) is fine, and so is a loop that calls vime's
    ``generate``, which subtracts itself, and a loop that builds a new sample on each turn
    (``Sample(...)``, ``copy.deepcopy(sample)``, or a helper of the module whose returned
    value is one of these; slime's and miles' ``Sample`` count): each turn's sample then has
    its own response and its own budget. Runtime twin: VIM124.

    Also, in the same functions (in a loop or not), a budget that subtracts the length of a
    sample's ``tokens`` from ``args.rollout_max_response_len`` (``len(sample.tokens)``, or a
    local name holding ``sample.tokens`` / ``list(sample.tokens)``): ``tokens`` holds the
    prompt and the response, so the prompt is charged to the response budget.
    ``args.rollout_max_context_len - len(sample.tokens)`` and ``... - sample.response_length``
    are fine.

    ## Why is this bad?
    ``--rollout-max-response-len`` is the budget of the whole trajectory. Asking each turn for
    all of it lets a multi-turn response grow to turns x budget, past what training packs and
    pads for, until the engine rejects the context (NovaSky-AI/SkyRL#696,
    TIGER-AI-Lab/verl-tool#85; failure kind: "observation overruns the budget").
    Subtracting ``len(sample.tokens)`` instead charges the prompt: a long prompt leaves a
    short answer, and one longer than the budget none at all (THUDM/slime#2140).

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        response = ""
        for _ in range(MAX_TURNS):
            params = {**sampling_params, "max_tokens": args.rollout_max_response_len}
            out = await post(url, {"prompt": sample.prompt + response, "sampling_params": params})
            response += out["text"]
        ...
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        response_tokens = []
        for _ in range(MAX_TURNS):
            left = args.rollout_max_response_len - len(response_tokens)
            if left <= 0:
                break
            params = {**sampling_params, "max_tokens": left}
            ...
    ```

    ## Known problems
    The rule cannot see a budget subtracted inside a function of another module; it stays
    quiet when the request is a call of a parameter (a model-turn callable passed in).

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM027"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def generate(args, sample, sampling_params):
                response = ''
                for _ in range(3):
                    left = args.rollout_max_response_len - len(response)
                    out = await post(URL, {'text': sample.prompt + response,
                                           'sampling_params': {'max_new_tokens': left}})
                    response += out['text']
                return sample
        """),
        Valid("""
            from vime.rollout.vllm_rollout import generate as turn
            async def generate(args, sample, sampling_params):
                params = dict(sampling_params, max_tokens=args.rollout_max_response_len)
                while True:
                    sample = await turn(args, sample, params)
                    sample.append_response_tokens(args, tokens=[1], trainable=False)
                    if sample.response_length > 8:
                        return sample
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                results = []
                for i in range(4):
                    out = await post(URL, {'text': sample.prompt,
                        'sampling_params': {'max_new_tokens': args.rollout_max_response_len}})
                    results.append(out)
                return sample
        """),
        Valid("""
            async def run_episode(args, sample, params, model_turn):
                while True:
                    sample = await model_turn(args, sample, params)
                    sample.append_response_tokens(args, tokens=[1], trainable=False)
            async def generate(args, sample, sampling_params):
                return await run_episode(args, sample, sampling_params, None)
        """),
        # A loop over another library's `count` (by qualified name) is no turn loop.
        Valid("from mylib import count\n" + _TURNS.format(loop="count(sample.prompt)")),
        Valid("import mylib as itertools\n" + _TURNS.format(loop="itertools.count()")),
        Valid("from mylib import steps as range\n" + _TURNS.format(loop="range(3)")),
        # One sample per turn: each turn's response (and budget) is its own.
        Valid("""
            from vime.utils.types import Sample as S
            async def generate(args, sample, sampling_params):
                messages, turns = [sample.prompt], []
                for _ in range(4):
                    params = {**sampling_params, 'max_new_tokens': args.rollout_max_response_len}
                    out = await post(URL, {'messages': messages, 'sampling_params': params})
                    messages.append(out['text'])
                    turns.append(S(prompt=list(messages), response=out['text']))
                return turns
        """),
        Valid("import copy\nasync def _episode(args, sample, sampling_params):\n"
              "    history, out_samples = [], []\n    while True:\n"
              "        out = await post(URL, {'text': sample.prompt + ''.join(history),"
              " 'max_tokens': args.rollout_max_response_len})\n"
              "        history.append(out['text'])\n        turn = copy.deepcopy(sample)\n"
              "        turn.response = out['text']\n        out_samples.append(turn)\n"
              "        if out['done']:\n            return out_samples\n"
              "async def generate(args, sample, sampling_params):\n"
              "    return await _episode(args, sample, sampling_params)\n"),
        Valid("from vime.utils import types\nclass Agent:\n"
              "    async def __call__(self, args, sample, sampling_params):\n"
              "        messages, segs = [sample.prompt], []\n        for _ in range(3):\n"
              "            out = await post(URL, {'messages': messages,"
              " 'max_tokens': args.rollout_max_response_len})\n"
              "            messages.append(out['text'])\n"
              "            segs.append(types.Sample(prompt=list(messages)))\n"
              "        return segs\ngenerate = Agent()\n"),
        # ... built by a helper of the module (its returned value is a new Sample), and
        # miles' Sample (a fork of slime's, read as vime's).
        Valid("from vime.utils.types import Sample\ndef _turn_sample(messages, text):\n"
              "    seg = Sample(prompt=list(messages))\n    seg.response = text\n"
              "    return seg\n" + _PER_TURN.format(new="_turn_sample(messages, out['text'])")),
        Valid("import copy\ndef _fork(sample):\n    return copy.deepcopy(sample)\n"
              + _PER_TURN.format(new="_fork(sample)")),
        Valid("from miles.utils.types import Sample\n"
              + _PER_TURN.format(new="Sample(prompt=list(messages))")),
        # A class hook's self method that subtracts what the response already holds.
        Valid("class Agent:\n    async def __call__(self, args, sample, sampling_params):\n"
              "        return await self._loop(args, sample)\n"
              "    async def _loop(self, args, sample):\n        response = ''\n"
              "        for _ in range(3):\n"
              "            left = args.rollout_max_response_len - len(response)\n"
              "            params = {'max_new_tokens': left}\n"
              "            out = await post(URL, {'text': sample.prompt + response,"
              " 'sampling_params': params})\n"
              "            response += out['text']\n        return sample\n"
              "generate = Agent()\n"),
        # What is left of the response budget, or of the context (which holds the prompt);
        # the length of the engine's own output tokens.
        Valid(_LEFT.format(left="args.rollout_max_response_len - sample.response_length")),
        Valid(_LEFT.format(left="args.rollout_max_context_len - len(sample.tokens)")),
        Valid("""
            async def generate(args, sample, sampling_params):
                out = await post(URL)
                return args.rollout_max_response_len - len(out.tokens)
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                response_tokens = sample.tokens[-sample.response_length:]
                return args.rollout_max_response_len - len(response_tokens)
        """),
    ]
    INVALID = [
        Invalid("""
            async def generate(args, sample, sampling_params):
                response = ''
                for _ in range(3):
                    sampling_params['max_new_tokens'] = args.rollout_max_response_len
                    payload = {'text': sample.prompt + response, 'sampling_params': sampling_params}
                    out = await post(URL, payload)
                    response += out['text']
                return sample
        """, line=4, col=44),
        Invalid("from vime.config import arg as cfg\n"
                "async def _loop(args, client, messages):\n"
                "    budget = cfg(args, 'rollout_max_response_len')\n    while True:\n"
                "        reply = await client.chat.completions.create(messages=messages,"
                " max_tokens=budget)\n"
                "        messages.append({'role': 'assistant', 'content': reply})\n"
                "async def generate(args, sample, sampling_params):\n"
                "    await _loop(args, CLIENT, [])\n    return sample\n", line=5, col=83),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                params = {'temperature': 1.0, 'max_tokens': args.rollout_max_response_len}
                tokens = []
                for turn in range(4):
                    out = run(post(URL, {'prompt_token_ids': tokens, 'params': params}))
                    tokens += out['token_ids']
        """, line=2, col=48),
        Invalid("""
            async def generate(args, sample, sampling_params):
                tokens = list(sample.tokens)
                while len(tokens) < 4096:
                    out = await post(URL, {'input_ids': tokens, 'sampling_params': sampling_params})
                    tokens.extend(out['output_ids'])
                return sample
        """, line=4, col=20),
        # One record per turn that is not a sample (a dict): the turns share one budget.
        Invalid(_PER_TURN.format(new="{'text': out['text']}"), line=4, col=55),
        Invalid("def _record(text):\n    return {'text': text}\n"
                + _PER_TURN.format(new="_record(out['text'])"), line=6, col=55),
        # itertools.count under other names is a turn counter.
        Invalid("from itertools import count as turns\n" + _TURNS.format(loop="turns()"),
                line=5, col=44),
        Invalid("import itertools as it\n" + _TURNS.format(loop="it.count(1)"),
                line=5, col=44),
        Invalid("import itertools\n" + _TURNS.format(loop="itertools.count()"),
                line=5, col=44),
        # A class generate hook: the self method it awaits holds the loop; in __call__
        # itself through self.args; the budget held in a local name before the loop.
        Invalid("class Agent:\n    async def __call__(self, args, sample, sampling_params):\n"
                "        return await self._loop(args, sample)\n"
                "    async def _loop(self, args, sample):\n        response = ''\n"
                "        for _ in range(3):\n"
                "            params = {'max_new_tokens': args.rollout_max_response_len}\n"
                "            out = await post(URL, {'text': sample.prompt + response,"
                " 'sampling_params': params})\n"
                "            response += out['text']\n        return sample\n"
                "generate = Agent()\n", line=7, col=40),
        Invalid("class Agent:\n    async def __call__(self, args, sample, sampling_params):\n"
                "        response = ''\n        for _ in range(3):\n"
                "            params = {'max_new_tokens': self.args.rollout_max_response_len}\n"
                "            out = await post(URL, {'text': sample.prompt + response,"
                " 'sampling_params': params})\n"
                "            response += out['text']\n        return sample\n"
                "generate = Agent()\n", line=5, col=40),
        Invalid("async def generate(args, sample, sampling_params):\n    response = ''\n"
                "    budget = args.rollout_max_response_len\n    for _ in range(3):\n"
                "        params = {**sampling_params, 'max_new_tokens': budget}\n"
                "        out = await post(URL, {'text': sample.prompt + response,"
                " 'sampling_params': params})\n"
                "        response += out['text']\n    return sample\n", line=5, col=55),
        # The prompt charged to the response budget: in the loop, through a local name, a
        # config reader, a helper of the module, a rollout function's samples.
        Invalid(_LEFT.format(left="args.rollout_max_response_len - len(sample.tokens)"),
                line=4, col=15),
        Invalid(_LEFT.format(left="budget - len(tokens)").replace(
            "    for _ in range(3):\n", "    budget = args.rollout_max_response_len\n"
            "    tokens = list(sample.tokens)\n    for _ in range(3):\n"), line=6, col=15),
        Invalid("""
            from vime.config import arg
            def _left(args, sample):
                return arg(args, 'rollout_max_response_len') - len(sample.tokens)
            async def generate(args, sample, sampling_params):
                params = {**sampling_params, 'max_tokens': _left(args, sample)}
                return await call(args, sample, params)
        """, line=3, col=11),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    for group in data_source.get_samples(4):\n"
                "        for sample in group:\n"
                "            sample.metadata['budget'] = int(args.rollout_max_response_len)"
                " - len(sample.tokens)\n", line=4, col=40),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.reported: set[int] = set()

    def _full(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """``e`` is ``--rollout-max-response-len`` itself (nothing subtracted)."""
        if depth > 4:
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value == _BUDGET_ARG
        if isinstance(e, cst.Call):
            names = self.qualified(e.func)
            if "builtins.int" in names and len(e.args) == 1:
                return self._full(e.args[0].value, fn, depth + 1)
            reader = "builtins.getattr" in names or any(
                n.startswith("vime.") and n.endswith(".arg") for n in names)
            return reader and len(e.args) >= 2 and string_value(e.args[1].value) == _BUDGET_ARG
        if isinstance(e, cst.Name):
            values = self.context.semantic.facts(fn).values.get(e.value, [])
            return bool(values) and all(v is not None and self._full(v, fn, depth + 1)
                                        for v in values)
        return False

    def _sites(self, node: cst.CSTNode, fn: cst.FunctionDef | None
               ) -> list[tuple[cst.CSTNode, str, set[str]]]:
        """``(full-budget expression, key, names it is stored in)`` set inside ``node``; with
        ``fn`` None, every budget key set, whatever its value."""

        def budget(key: str | None, value: cst.BaseExpression) -> bool:
            return key in _BUDGET_KEYS and (fn is None or self._full(value, fn))

        facts = self.context.semantic.block(node)
        found: list[tuple[cst.CSTNode, str, set[str]]] = []
        for el in facts.dict_elements:
            key = string_value(el.key)
            if key is not None and budget(key, el.value):
                found.append((el.value, key, set()))
        for site in facts.calls:
            call = site.node
            func = call.func
            into = ({func.value.value} if isinstance(func, cst.Attribute)
                    and func.attr.value == "update" and isinstance(func.value, cst.Name)
                    else set())
            for a in call.args:
                if a.keyword is not None and budget(a.keyword.value, a.value):
                    found.append((a.value, a.keyword.value, into))
        for tgt, value, stmt in facts.bindings:
            if isinstance(stmt, cst.Assign) and isinstance(tgt, cst.Subscript) \
                    and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index):
                key = string_value(tgt.slice[0].slice.value)
                if key is not None and budget(key, value):
                    names = {tgt.value.value} if isinstance(tgt.value, cst.Name) else set()
                    found.append((value, key, names))
        return found

    def _direct(self, calls: list[cst.Call], params: set[str]) -> cst.Call | None:
        """The first call that sends the request itself: not vime's generate, not a call of a
        parameter (a callable passed in)."""
        for call in calls:
            if self.qualified(call.func) & _SUBTRACTING:
                continue
            if isinstance(call.func, cst.Name) and call.func.value in params:
                continue
            return call
        return None

    def _report_once(self, node: cst.CSTNode, key: str, name: str) -> None:
        if id(node) not in self.reported:
            self.reported.add(id(node))
            self.report(node, self.INVARIANT.render(problem=(
                f"`{key}` asks for the whole --rollout-max-response-len on every turn of the "
                f"loop in `{name}`: nothing generated in earlier turns is subtracted")))

    def _check_loop(self, fn: cst.FunctionDef, loop: TurnLoop, binding: HookBinding | None,
                    params: set[str]) -> None:
        if loop.per_turn_sample or any(self.qualified(c.func) & _SUBTRACTING
                                       for c in loop.calls):
            return  # one sample per turn: each turn's budget is its own
        sending = set(map(id, loop.receivers(loop.reaching(set(loop.accumulators)))))
        name = fn.name.value
        for site, key, into in self._sites(loop.node.body, fn):
            carrier = into | {n for n, value in loop.binds if _holds(value, site)}
            receivers = [c for c in loop.receivers(loop.reaching(carrier), site)
                         if id(c) in sending]
            if self._direct(receivers, params) is not None:
                self._report_once(site, key, name)
        if self._sites(loop.node.body, None):
            return  # the loop sets the budget of each turn itself
        for pname, where, key in self._outside(fn, loop, binding):
            if pname in loop.written:
                continue
            receivers = [c for c in loop.receivers(loop.reaching({pname})) if id(c) in sending]
            request = self._direct(receivers, params)
            if request is not None:
                self._report_once(where if where is not None else request, key, name)

    def _outside(self, fn: cst.FunctionDef, loop: TurnLoop, binding: HookBinding | None
                 ) -> list[tuple[str, cst.CSTNode | None, str]]:
        """Names bound outside ``loop`` to parameters with the full budget: the generate
        function's own ``sampling_params`` (no site), or a display or call that sets it."""
        out: list[tuple[str, cst.CSTNode | None, str]] = []
        positional = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        bound = self.context.semantic.facts(fn).values
        if binding is not None and binding.spec.dest == _GENERATE and len(positional) >= 3:
            param = positional[2]
            key = param  # max_tokens is the whole response budget (docs/contract.md §8)
            out.append((param, None, key))
            for pname, values in bound.items():  # params = dict(sampling_params), {**...}
                if pname != param and values and all(
                        v is not None and not _holds(loop.node, v) and reads_any(v, {param})
                        and not self._sites(v, None) for v in values):
                    out.append((pname, None, key))
        for pname, values in bound.items():
            for value in values:
                if value is not None and not _holds(loop.node, value):
                    out += [(pname, site, key) for site, key, _ in self._sites(value, fn)]
        return out

    def _sample_tokens(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0
                       ) -> bool:
        """``e`` is a sample's ``tokens`` (prompt and response): ``sample.tokens``,
        ``list(sample.tokens)`` or a local name bound only to these."""
        if depth > 4:
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value == "tokens" and isinstance(e.value, cst.Name) \
                and is_sample_name(e.value.value, frozenset())
        if isinstance(e, cst.Call):
            return "builtins.list" in self.qualified(e.func) and len(e.args) == 1 \
                and self._sample_tokens(e.args[0].value, fn, depth + 1)
        if isinstance(e, cst.Name):
            values = self.context.semantic.facts(fn).values.get(e.value, [])
            return bool(values) and all(v is not None and self._sample_tokens(v, fn, depth + 1)
                                        for v in values)
        return False

    def _check_prompt_charged(self, fn: cst.FunctionDef) -> None:
        """Report ``rollout_max_response_len - len(sample.tokens)`` in ``fn``."""
        for op in m.findall(fn, m.BinaryOperation(operator=m.Subtract())):
            assert isinstance(op, cst.BinaryOperation)
            right = op.right
            if not (isinstance(right, cst.Call) and len(right.args) == 1
                    and "builtins.len" in self.qualified(right.func)
                    and self._sample_tokens(right.args[0].value, fn)
                    and self._full(op.left, fn)) or id(op) in self.reported:
                continue
            self.reported.add(id(op))
            self.report(op, self.INVARIANT.render(problem=(
                f"`{code_of(op)}` in `{fn.name.value}` subtracts the length of "
                "the sample's tokens from --rollout-max-response-len, but `tokens` holds the "
                "prompt too: the prompt is charged to the response budget (long prompts get "
                "short answers or none)")))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _DESTS:
            return
        semantic = self.context.semantic
        for fn in semantic.closure(node, semantic.owner(node)):
            params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                             *fn.params.kwonly_params)}
            self._check_prompt_charged(fn)
            for loop in self.context.semantic.turn_loops(fn):
                self._check_loop(fn, loop, binding if fn is node else None, params)


def _holds(value: cst.CSTNode, site: cst.CSTNode) -> bool:
    """``value`` contains ``site`` (by identity)."""
    return value is site or any(_holds(c, site) for c in value.children)


