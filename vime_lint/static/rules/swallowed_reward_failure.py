"""VIM030: a reward function does not turn a broad exception into a constant score (in
the function and the module-level helpers whose result it returns, through
:func:`~vime_lint.static.rules._reward_rule.reward_functions`)."""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static.rules._reward_rule import (
    RM,
    STR_CALLS,
    RewardRule,
    reward_functions,
    short,
)

__all__ = ["SwallowedRewardFailure"]

#: Exception classes whose handler catches a failing scorer, not a wrong answer: anything
#: (``Exception``), or the errors of HTTP clients and connections (a reward server).
_BROAD = frozenset({"builtins.Exception", "builtins.BaseException"})
_SCORER_ERRORS = ("httpx.", "requests.", "aiohttp.", "openai.", "urllib.error.",
                  "builtins.ConnectionError", "builtins.ConnectionRefusedError",
                  "builtins.ConnectionResetError")
_NUMBER_CASTS = frozenset({"builtins.float", "builtins.int"})


class SwallowedRewardFailure(RewardRule):
    """A reward function does not turn a broad exception into a constant score.

    ## What it does
    In a ``--custom-rm-path`` function, and in the module-level helpers whose result it
    returns, reports an ``except`` block that catches everything (bare ``except:``,
    ``Exception``, ``BaseException``) or the errors of an HTTP client (``httpx``,
    ``requests``, ``aiohttp``, ``openai``, ``ConnectionError``) and then returns a constant
    score (``return 0.0``, ``return -1``, ``return {"score": 0.0, "error": str(e)}``, a module
    constant), or assigns one to the name the function returns (or appends one to the list a
    ``--group-rm`` batch function returns). The helpers followed include a class reward's
    ``self`` methods. A block that re-raises is
    fine, and so is a narrow handler (``except ValueError: return 0.0`` for an unparsable
    answer, which is a wrong answer).

    ## Why is this bad?
    A broken scorer (a crashed verifier, an unreachable reward server, a bug in the reward
    code) then looks exactly like a wrong answer: the step trains on zeros, the reward curve
    sags, and nothing fails (verl-project/verl#4417, NVIDIA-NeMo/RL#2207; failure kind:
    "scorer failure scored as a wrong answer"). This is a warning: some runs prefer to train
    on through a flaky judge, and should say so with ``# noqa: VIM030``.

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        try:
            return await judge(sample.response, sample.label)
        except Exception:
            return 0.0
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        try:
            answer = parse_answer(sample.response)
        except ValueError:
            return 0.0               # an unparsable answer is a wrong answer
        return await judge(answer, sample.label)   # a failing judge raises
    ```

    ## Fix safety
    No fix: whether to stop, retry or skip the sample is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM030"]
    VALID = [
        Valid("""
            async def reward_func(args, sample, **kwargs):
                try:
                    answer = int(sample.response.strip())
                except ValueError:
                    return 0.0
                return float(answer == int(sample.label))
        """),
        Valid("""
            import logging
            async def reward_func(args, sample, **kwargs):
                try:
                    return await judge(sample)
                except Exception:
                    logging.exception('judge failed')
                    raise
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                try:
                    return await judge(sample)
                except Exception:
                    return await fallback_judge(sample)
        """),
        # A class reward that logs and re-raises; one that chains a new error.
        Valid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    try:
                        return await self.client.score(sample.response)
                    except Exception:
                        self.log.exception('judge failed')
                        raise
            reward_func = Judge()
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                try:
                    return await judge(sample)
                except Exception as e:
                    raise RuntimeError('judge') from e
        """),
        # A batch reward that appends a parsed fallback for a narrow error.
        Valid("""
            async def reward_func(args, samples, **kwargs):
                out = []
                for s in samples:
                    try:
                        out.append(float(s.response))
                    except ValueError:
                        out.append(0.0)
                return out
        """, options={"hooks": {"reward_func": RM}, "launch_flags": ["--group-rm"]}),
        Valid("""
            def parse(text):
                try:
                    return int(text)
                except Exception:
                    return 0
            async def reward_func(args, sample, **kwargs):
                return float(parse(sample.response) == 4)
        """),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                try:
                    return compute(sample.response, sample.label)
                except Exception:
                    return 0.0
        """, line=5, col=8),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                try:
                    score = compute(sample)
                except:
                    score = 0.0
                return score
        """, line=5, col=8),
        Invalid("""
            import httpx as hx
            URL = 'http://judge:8000/score'
            async def call_judge(text):
                try:
                    async with hx.AsyncClient() as client:
                        r = await client.post(URL, json={'text': text})
                    return float(r.json()['score'])
                except hx.HTTPError:
                    return -1.0
            async def reward_func(args, sample, **kwargs):
                return await call_judge(sample.response)
        """, line=9, col=8),
        # A class reward's __call__ and the self method it awaits; requests imported under
        # another name; a batch reward appending a constant for each failed judge call.
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    try:
                        return await self.client.score(sample.response)
                    except Exception:
                        return 0.0
            reward_func = Judge()
        """, line=6, col=12),
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return await self._ask(sample)
                async def _ask(self, sample):
                    try:
                        return await self.client.score(sample.response)
                    except Exception:
                        return 0.0
            reward_func = Judge()
        """, line=8, col=12),
        Invalid("""
            import requests as rq
            async def reward_func(args, sample, **kwargs):
                try:
                    r = rq.post('http://judge', json={})
                    score = float(r.json()['score'])
                except rq.RequestException:
                    score = -1
                return score
        """, line=7, col=8),
        Invalid("""
            async def reward_func(args, samples, **kwargs):
                out = []
                for s in samples:
                    try:
                        out.append(await judge(s))
                    except Exception:
                        out.append(0.0)
                return out
        """, line=7, col=23, options={"hooks": {"reward_func": RM}, "launch_flags": ["--group-rm"]}),
        Invalid("""
            FAILED = 0.0
            async def reward_func(args, sample, **kwargs):
                try:
                    return {'score': await judge(sample)}
                except (KeyError, Exception) as exc:
                    return {'score': FAILED, 'error': str(exc)}
        """, line=6, col=8),
    ]

    def _caught(self, handler: cst.ExceptHandler) -> str | None:
        if handler.type is None:
            return "any exception (bare `except:`)"
        types = ([el.value for el in handler.type.elements]
                 if isinstance(handler.type, cst.Tuple) else [handler.type])
        for t in types:
            names = self.qualified(t)
            if names & _BROAD or any(n.startswith(_SCORER_ERRORS) for n in names):
                return f"`{code_of(t)}`"
        return None

    def _constant(self, e: cst.BaseExpression | None, numeric: bool = True) -> bool:
        if isinstance(e, (cst.Integer, cst.Float)):
            return True
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, (cst.Minus, cst.Plus)):
            return self._constant(e.expression)
        if isinstance(e, cst.Call) and len(e.args) == 1 \
                and self.qualified(e.func) & _NUMBER_CASTS:
            return self._constant(e.args[0].value)
        if isinstance(e, cst.Name):
            value = self.context.semantic.constant_values.get(e.value)
            return value is not None and not isinstance(value, cst.Name) \
                and self._constant(value)
        if isinstance(e, cst.Dict) and numeric:
            values = [el.value for el in e.elements if isinstance(el, cst.DictElement)]
            return len(values) == len(e.elements) and any(self._constant(v) for v in values) \
                and all(self._constant(v) or self._textual(v) for v in values)
        return False

    def _textual(self, e: cst.BaseExpression) -> bool:
        if isinstance(e, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        if isinstance(e, cst.Name):
            return e.value in ("None", "True", "False")
        return isinstance(e, cst.Call) and bool(self.qualified(e.func) & STR_CALLS)

    def reward(self, fn: cst.FunctionDef, binding: HookBinding) -> None:
        for helper, via in reward_functions(fn, binding, self.context):
            sem = self.context.semantic
            facts = sem.facts(helper)
            returned = {r.value.value for r in facts.returns if isinstance(r.value, cst.Name)}
            suffix = f" in `{helper.name.value}`" if via else ""
            for tr in facts.tries:
                for handler in tr.handlers:
                    caught = self._caught(handler)
                    if caught is None:
                        continue
                    body = sem.block(handler.body)
                    if body.raises:
                        continue
                    hits: list[tuple[cst.CSTNode, cst.BaseExpression]] = [
                        (r.node, r.value) for r in body.returns
                        if r.value is not None and self._constant(r.value)]
                    hits += [(a, a.value) for name, a in body.assigns
                             if name in returned and self._constant(a.value)]
                    # a batch reward's list: rewards.append(0.0) in the handler
                    hits += [(item, item) for name in sorted(returned)
                             for item in body.appends.get(name, ()) if self._constant(item)]
                    for node, value in hits:
                        self.report(node, self.INVARIANT.render(
                            name=binding.function, value=short(value), caught=caught,
                            via=suffix))
