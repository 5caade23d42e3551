"""VIM022: ``loss_mask`` and ``rollout_log_probs`` are sized by the response, not by the full
``tokens``.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["MaskFromFullTokens"]


def _tokens_len(expr: cst.BaseExpression, lengths: frozenset[str] = frozenset()) -> bool:
    """``len(x.tokens)``, or a local name in ``lengths`` (bound only to one)."""
    if isinstance(expr, cst.Name):
        return expr.value in lengths
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
            and expr.func.value == "len" and len(expr.args) == 1
            and isinstance(expr.args[0].value, cst.Attribute)
            and expr.args[0].value.attr.value == "tokens")


def _full_tokens_sized(value: cst.BaseExpression,
                       lengths: frozenset[str] = frozenset()) -> bool:
    """``[c] * len(x.tokens)``, ``[c for _ in x.tokens]``, ``[... in range(len(x.tokens))]``
    (also as ``list(...)`` or ``....tolist()``)."""
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value == "tolist":
        return _full_tokens_sized(value.func.value, lengths)
    if isinstance(value, cst.Call) and len(value.args) == 1 and isinstance(value.func, cst.Name) \
            and value.func.value == "list":
        return _full_tokens_sized(value.args[0].value, lengths)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return _tokens_len(value.left, lengths) or _tokens_len(value.right, lengths)
    if isinstance(value, cst.ListComp):
        it = value.for_in.iter
        if isinstance(it, cst.Attribute) and it.attr.value == "tokens":
            return True
        return (isinstance(it, cst.Call) and dotted(it.func) == "range" and len(it.args) == 1
                and _tokens_len(it.args[0].value, lengths))
    if isinstance(value, cst.Call) and len(value.args) >= 1:
        name = dotted(value.func) or ""
        if name.rpartition(".")[2] in ("ones", "zeros", "full"):
            return _tokens_len(value.args[0].value, lengths)
    return False


class MaskFromFullTokens(FunctionTracker):
    """``loss_mask`` and ``rollout_log_probs`` are sized by the response, not by ``tokens``.

    ## What it does
    Reports ``x.loss_mask`` / ``x.rollout_log_probs`` (or the same ``Sample(...)`` keywords)
    built with the length of the full ``x.tokens``: ``[1] * len(x.tokens)``,
    ``[1 for _ in x.tokens]``, ``np.ones(len(x.tokens))`` (also wrapped in ``list(...)`` or
    ``.tolist()``, through a local length ``n = len(x.tokens)``, or built by one of the
    module's own helpers). Runtime twins: VIM108, VIM109.

    ## Why is this bad?
    ``tokens`` holds the prompt and the response; the per-token lists have one entry per
    response token. A mask of ``len(tokens)`` fails the length check, or (when trimmed
    later) trains on the prompt (failure kind: "loss_mask length != response_length").

    ## Example
    ```python
    sample.loss_mask = [1] * len(sample.tokens)
    ```

    ## Use instead
    ```python
    sample.loss_mask = [1] * sample.response_length
    ```

    ## Fix safety
    No fix: the response length may live in another variable.
    """

    INVARIANT = INVARIANTS["VIM022"]
    VALID = [
        Valid("sample.loss_mask = [1] * sample.response_length\n"),
        Valid("sample.loss_mask = [1] * (len(sample.tokens) - prompt_len)\n"),
        # An aliased import sized by the response.
        Valid("""
            import numpy as np
            async def generate(args, sample, sampling_params):
                sample.tokens = prompt_ids + out['token_ids']
                sample.response_length = len(out['token_ids'])
                sample.loss_mask = np.ones(sample.response_length, dtype=int).tolist()
                return sample
        """),
        # An instance's __call__ through a local alias, sized by the new tokens.
        Valid("""
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    cur = sample
                    cur.tokens = prompt_ids + out['token_ids']
                    cur.rollout_log_probs = [0.0 for _ in out['token_ids']]
                    return cur
            generate = Generate()
        """),
        # A module helper sized by the response, and a local length of the new tokens.
        Valid("""
            def _response_mask(s, prompt_len):
                return [1] * (len(s.tokens) - prompt_len)
            async def generate(args, sample, sampling_params):
                sample.tokens = prompt_ids + out['token_ids']
                n = len(out['token_ids'])
                sample.loss_mask = _response_mask(sample, len(prompt_ids))
                sample.rollout_log_probs = [0.0] * n
                return sample
        """),
    ]
    INVALID = [
        Invalid("sample.loss_mask = [1] * len(sample.tokens)\n", line=1, col=0),
        Invalid("s.rollout_log_probs = [0.0 for _ in s.tokens]\n", line=1, col=0),
        Invalid("""
            from vime.utils.types import Sample
            s = Sample(tokens=t, loss_mask=[1] * len(x.tokens))
        """, line=2, col=4),
        # An aliased import, converted with .tolist().
        Invalid("""
            import numpy as np
            async def generate(args, sample, sampling_params):
                sample.tokens = prompt_ids + out['token_ids']
                sample.loss_mask = np.ones(len(sample.tokens), dtype=int).tolist()
                return sample
        """, line=4, col=4),
        # An instance's __call__ through a local alias of the sample.
        Invalid("""
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    cur = sample
                    cur.tokens = prompt_ids + out['token_ids']
                    cur.rollout_log_probs = [0.0 for _ in range(len(cur.tokens))]
                    return cur
            generate = Generate()
        """, line=5, col=8),
        # Sample(...) in a comprehension under an aliased import, wrapped in list().
        Invalid("""
            from vime.utils.types import Sample as S
            def rebuild(samples):
                return [S(tokens=s.tokens, loss_mask=list([1] * len(s.tokens))) for s in samples]
        """, line=3, col=12),
        # Through a local length of the full tokens.
        Invalid("""
            async def generate(args, sample, sampling_params):
                sample.tokens = prompt_ids + out['token_ids']
                n = len(sample.tokens)
                sample.loss_mask = [1] * n
                return sample
        """, line=4, col=4),
        # Built by a module helper the hook calls.
        Invalid("""
            def _ones_like_tokens(s):
                return [1] * len(s.tokens)
            async def generate(args, sample, sampling_params):
                sample.tokens = prompt_ids + out['token_ids']
                sample.loss_mask = _ones_like_tokens(sample)
                return sample
        """, line=5, col=4),
    ]

    def _sized(self, value: cst.BaseExpression) -> bool:
        """``value`` is built from the full tokens' length: itself, through a local length
        (``n = len(s.tokens)``), or (a name or a module helper's call) where it comes from."""
        fn = self.current
        if fn is None:
            return _full_tokens_sized(value)
        sem = self.context.semantic
        values = sem.facts(fn).values
        lengths = frozenset(n for n, vs in values.items()
                            if vs and all(v is not None and _tokens_len(v) for v in vs))
        if _full_tokens_sized(value, lengths):
            return True
        if not isinstance(value, (cst.Name, cst.Call)):
            return False
        return any(leaf is not None and leaf is not value and _full_tokens_sized(leaf)
                   for leaf, _ in sem.origins(fn, value, owner=self.owner))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value in ("loss_mask",
                                                                     "rollout_log_probs") \
                    and self._sized(node.value):
                self.report(node, self.INVARIANT.render(field=tgt.attr.value,
                                                        name=dotted(tgt.value) or "?"))

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.semantic.refers_to(node.func, "Sample"):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value in ("loss_mask", "rollout_log_probs") \
                    and self._sized(a.value):
                self.report(node, self.INVARIANT.render(field=a.keyword.value, name="Sample"))
