"""A custom generate function maps the engine's finish reason to ``status``: VIM009.

:class:`UnmappedFinishReason` looks at the generate function together with the module-level
helpers it calls, through the semantic model's
:meth:`~vime_lint.static.analysis.Semantic.finish_reason_use`. The finish-reason
mapping comes from ``vime.contract.FINISH_REASON_STATUS``; nothing is copied here.

See ``docs/contract.md`` §2 (``append_response_tokens(meta_info=...)``), §8 (vLLM's
``finish_reason``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import FINISH_REASON_STATUS, INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.rules._samples import STATUS_BY_VALUE

__all__ = ["UnmappedFinishReason"]

_GENERATE_DESTS = ("custom_generate_function_path",)
#: The status members a generate function must reach from the finish reason (VIM009).
_REQUIRED = ("TRUNCATED", "ABORTED")


def _covered(members: set[str], literals: set[str]) -> set[str]:
    """Status members reached: named, or named by a finish-reason / status literal."""
    out = set(members)
    for lit in literals:
        if lit in FINISH_REASON_STATUS:
            out.add(FINISH_REASON_STATUS[lit])
        if lit in STATUS_BY_VALUE:
            out.add(STATUS_BY_VALUE[lit])
    return out


class UnmappedFinishReason(FunctionTracker):
    """A custom generate function that reads the finish reason maps it to ``status``.

    ## What it does
    In a ``--custom-generate-function-path`` function (and the module-level helpers it calls),
    reports the first read of the engine's finish reason (``out["finish_reason"]``,
    ``choice.get("finish_reason")``, ``result.finish_reason``) when the code never reaches
    ``Sample.Status.TRUNCATED`` (from ``"length"``) or ``Sample.Status.ABORTED`` (from
    ``"abort"``), and never passes ``meta_info`` to ``append_response_tokens``, which does
    the mapping. Runtime twin: VIM111.

    ## Why is this bad?
    A response cut by the token budget or aborted by the rollout then stays COMPLETED (or
    PENDING): it is rewarded and trained as a finished answer, and an aborted partial
    rollout is never resumed (failure kind: "status not set from finish reason").

    ## Known problems
    To stay precise the rule is quiet when it cannot see the mapping: when the finish reason
    or the sample is passed to a function of another module, when ``status`` is assigned
    something other than a ``Sample.Status`` member (a call, a variable), or when the module
    names both members anywhere in the generate function, its helpers or its constants.

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        out = await post(url, payload)
        choice = out["choices"][0]
        sample.append_response_tokens(args, tokens=choice["token_ids"], log_probs=lps)
        if choice["finish_reason"] == "stop":
            sample.status = Sample.Status.COMPLETED
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        out = await post(url, payload)
        choice = out["choices"][0]
        sample.append_response_tokens(
            args, tokens=choice["token_ids"], log_probs=lps,
            meta_info={"finish_reason": {"type": choice["finish_reason"]}})
        return sample
    ```

    ## Fix safety
    No fix: where the status should be set is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM009"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def generate(args, sample, sampling_params):
                choice = (await post(url, sampling_params))['choices'][0]
                sample.append_response_tokens(args, tokens=choice['token_ids'], log_probs=lp,
                    meta_info={'finish_reason': {'type': choice['finish_reason']}})
                return sample
        """),
        Valid("""
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                reason = (await post(url, sampling_params))['finish_reason']
                if reason == 'length':
                    sample.status = Sample.Status.TRUNCATED
                elif reason == 'abort':
                    sample.status = Sample.Status.ABORTED
                else:
                    sample.status = Sample.Status.COMPLETED
                return sample
        """),
        Valid("""
            from vime.utils.types import Sample
            _STATUS = {'length': Sample.Status.TRUNCATED,
                       'abort': Sample.Status.ABORTED}
            async def generate(args, sample, sampling_params):
                out = await post(url, sampling_params)
                sample.status = _STATUS.get(out['finish_reason'], Sample.Status.COMPLETED)
                return sample
        """),
        Valid("""
            from my_lib import status_from
            async def generate(args, sample, sampling_params):
                out = await post(url, sampling_params)
                sample.status = status_from(out['finish_reason'])
                return sample
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                out = await post(url, sampling_params)
                finish(sample, out)
                log(out['finish_reason'])
                return sample
        """),
        Valid("""
            def helper(out):
                return out['finish_reason']
        """),
        # An instance's __call__ under an aliased import, the reasons read in comprehensions.
        Valid("""
            from vime.utils.types import Sample as S
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    outs = [await post(url, sampling_params) for _ in range(2)]
                    reasons = [o['finish_reason'] for o in outs]
                    if any(r == 'abort' for r in reasons):
                        sample.status = S.Status.ABORTED
                    elif any(r == 'length' for r in reasons):
                        sample.status = S.Status.TRUNCATED
                    else:
                        sample.status = S.Status.COMPLETED
                    return sample
            generate = Generate()
        """),
    ]
    INVALID = [
        Invalid("""
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                choice = (await post(url, sampling_params))['choices'][0]
                sample.append_response_tokens(args, tokens=choice['token_ids'], log_probs=lp)
                if choice['finish_reason'] == 'stop':
                    sample.status = Sample.Status.COMPLETED
                return sample
        """, line=5, col=7),
        Invalid("""
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                out = await post(url, sampling_params)
                reason = out['choices'][0]['finish_reason']
                sample.status = (Sample.Status.TRUNCATED if reason == 'length'
                                 else Sample.Status.COMPLETED)
                return sample
        """, line=4, col=13),
        Invalid("""
            from vime.utils.types import Sample
            async def _turn(sample, out):
                sample.status = Sample.Status.COMPLETED
                return out.finish_reason
            async def my_generate(args, sample, sampling_params):
                await _turn(sample, await post(url, sampling_params))
                return sample
        """, line=4, col=11, options={"hooks": {"my_generate": "custom_generate_function_path"}}),
        # Read in a generator under all(), which only looks at the value: length never mapped.
        Invalid("""
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                outs = [await post(url, sampling_params) for _ in range(2)]
                done = all(o['finish_reason'] == 'stop' for o in outs)
                sample.status = Sample.Status.COMPLETED if done else Sample.Status.ABORTED
                return sample
        """, line=4, col=15),
        # An instance's __call__, aliased import, a local alias of the sample.
        Invalid("from vime.utils.types import Sample as S\n"
                "class Generate:\n"
                "    async def __call__(self, args, sample, sampling_params):\n"
                "        out = await post(url, sampling_params)\n"
                "        cur = sample\n"
                "        cur.status = S.Status.COMPLETED if out['finish_reason'] == 'stop' else S.Status.ABORTED\n"
                "        return cur\n"
                "generate = Generate()\n", line=6, col=43),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _GENERATE_DESTS:
            return
        use = self.context.semantic.finish_reason_use(node)
        if not use.reads or use.meta_info or use.delegated or use.opaque_status:
            return
        missing = [m for m in _REQUIRED if m not in _covered(use.members, use.literals)]
        if not missing:
            return
        reasons = {m: sorted(r for r, s in FINISH_REASON_STATUS.items() if s == m)[0]
                   for m in missing}
        what = " or ".join(f"`{reasons[m]}` -> {m}" for m in missing)
        self.report(use.reads[0], self.INVARIANT.render(
            name=binding.function,
            problem=f"reads the finish reason but never maps {what}"))
