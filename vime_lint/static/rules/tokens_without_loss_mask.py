"""VIM008: code that grows ``tokens`` also grows the per-token lists ``loss_mask`` /
``rollout_log_probs``.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["TokensWithoutLossMask"]


_GROW_METHODS = ("extend", "append", "insert", "__iadd__")
_PER_TOKEN = ("loss_mask", "rollout_log_probs", "append_response_tokens")


class TokensWithoutLossMask(FunctionTracker):
    """Code that grows ``tokens`` also grows ``loss_mask`` / ``rollout_log_probs``.

    ## What it does
    Reports a function that extends ``x.tokens`` or ``x.response_length`` (``+=``,
    ``.extend``, ``.append``, ``x.tokens = x.tokens + ...``) but never touches ``.loss_mask``,
    ``.rollout_log_probs`` or ``append_response_tokens``. Setting ``tokens`` once (as a
    whole) is not reported. Runtime twins: VIM108, VIM109.

    ## Why is this bad?
    Multi-turn code that appends tokens turn by turn leaves the per-token lists one turn
    short; training then masks or scores the wrong tokens (failure kind: "loss_mask /
    log-prob length mismatch").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        sample.tokens += new_tokens
        sample.response_length += len(new_tokens)
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        sample.append_response_tokens(args, tokens=new_tokens, log_probs=new_log_probs)
        return sample
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM008"]
    VALID = [
        Valid("""
            def f(sample, t, lp):
                sample.tokens += t
                sample.loss_mask += [1]*len(t)
        """),
        Valid("""
            def f(sample, t):
                sample.tokens = [1, 2] + t
                sample.response_length = 2
        """),
        Valid("""
            def f(sample, t):
                sample.append_response_tokens(None, tokens=t)
        """),
        # A module helper the hook calls keeps the mask in step.
        Valid("""
            def _extend(s, toks):
                s.tokens += toks
                s.loss_mask += [1] * len(toks)
                s.response_length += len(toks)
            async def generate(args, sample, sampling_params):
                _extend(sample, [1, 2])
                return sample
        """),
        # An instance's __call__ through a local alias of the sample.
        Valid("""
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    cur = sample
                    cur.tokens.extend([1, 2])
                    cur.loss_mask.extend([1, 1])
                    cur.response_length += 2
                    return cur
            generate = Generate()
        """),
    ]
    INVALID = [
        Invalid("""
            async def generate(args, sample, sampling_params):
                sample.tokens += [1]
                sample.response_length += 1
                return sample
        """, line=2, col=4),
        Invalid("""
            def f(sample, t):
                sample.tokens.extend(t)
        """, line=2, col=4),
        Invalid("""
            def f(sample, t):
                sample.tokens = sample.tokens + t
        """, line=2, col=4),
        # The tokens grow inside a module helper the hook calls.
        Invalid("""
            def _extend(s, toks):
                s.tokens += toks
                s.response_length += len(toks)
            async def generate(args, sample, sampling_params):
                _extend(sample, [1, 2])
                return sample
        """, line=2, col=4),
        # An instance's __call__, through a local alias of the sample.
        Invalid("""
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    cur = sample
                    cur.tokens.extend([1, 2])
                    cur.response_length += 2
                    return cur
            generate = Generate()
        """, line=4, col=8),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.state: list[tuple[list[tuple[cst.CSTNode, str]], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.state.append(([], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        grows, handled = self.state.pop()
        if grows and not handled[0]:
            node, field = grows[0]
            self.report(node, self.INVARIANT.render(name=original_node.name.value, field=field))
        super().leave_FunctionDef(original_node)

    def _grow(self, node: cst.CSTNode, field: str) -> None:
        if self.state:
            self.state[-1][0].append((node, field))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        t = node.target
        if isinstance(t, cst.Attribute) and t.attr.value in ("tokens", "response_length") \
                and isinstance(node.operator, cst.AddAssign):
            self._grow(node, t.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "tokens" \
                    and isinstance(value, cst.BinaryOperation) \
                    and isinstance(value.left, cst.Attribute) and value.left.attr.value == "tokens":
                self._grow(node, "tokens")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _GROW_METHODS \
                and isinstance(func.value, cst.Attribute) and func.value.attr.value == "tokens":
            self._grow(node, "tokens")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _PER_TOKEN and self.state:
            self.state[-1][1][0] = True
