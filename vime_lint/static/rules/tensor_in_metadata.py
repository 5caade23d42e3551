"""What ``metadata`` / ``train_metadata`` may hold: VIM014.

:class:`TensorInMetadata` reports numpy or torch values stored in sample metadata.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["TensorInMetadata"]


_ARRAY_ROOTS = ("numpy.", "torch.")
_PLAIN = ("item", "tolist")


class TensorInMetadata(FunctionTracker):
    """No numpy or torch values stored in ``metadata`` / ``train_metadata``.

    ## What it does
    Reports ``x.metadata[key] = <numpy/torch call>`` (also for ``train_metadata``), resolving
    aliases such as ``import numpy as np`` by qualified name; inside a function also a local
    name bound to such a call, or the value of one of the module's own helpers that returns
    one (the semantic model's value origins), and a list comprehension of such calls.
    ``.item()`` and ``.tolist()`` results are fine. Runtime twin: VIM116.

    ## Why is this bad?
    Metadata is dumped as JSON with debug rollout data and sent between processes; arrays
    and tensors break ``json.dumps`` (failure kind: "metadata not JSON-serialisable").

    ## Example
    ```python
    sample.metadata["scores"] = np.array(scores)
    ```

    ## Use instead
    ```python
    sample.metadata["scores"] = np.array(scores).tolist()
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM014"]
    VALID = [
        Valid("""
            import numpy as np
            sample.metadata['s'] = np.array(x).tolist()
        """),
        Valid("sample.metadata['s'] = float(x)\n"),
        # An instance's __call__ under an aliased import: a local tensor stored as plain values.
        Valid("""
            import torch as th
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    probs = th.softmax(th.tensor(sample.rollout_log_probs), dim=0)
                    sample.metadata['probs'] = probs.tolist()
                    sample.metadata['top'] = probs.max().item()
                    return sample
            generate = Generate()
        """),
        # A module helper that converts before it returns.
        Valid("""
            import numpy as np
            def _scores(samples):
                return np.asarray([s.get_reward_value(None) for s in samples]).tolist()
            def post_process(args, samples):
                for s in samples:
                    s.metadata['group_scores'] = _scores(samples)
        """),
    ]
    INVALID = [
        Invalid("""
            import numpy as np
            sample.metadata['s'] = np.array(x)
        """, line=2, col=0),
        Invalid("""
            from torch import tensor
            s.train_metadata['t'] = tensor([1])
        """, line=2, col=0),
        # An instance's __call__: a local name bound to a tensor (aliased import).
        Invalid("""
            import torch as th
            class Generate:
                async def __call__(self, args, sample, sampling_params):
                    probs = th.softmax(th.tensor(sample.rollout_log_probs), dim=0)
                    sample.metadata['probs'] = probs
                    return sample
            generate = Generate()
        """, line=5, col=8),
        # The value of a module helper that returns an array.
        Invalid("""
            import numpy as np
            def _scores(samples):
                return np.asarray([s.get_reward_value(None) for s in samples])
            def post_process(args, samples):
                for s in samples:
                    s.metadata['group_scores'] = _scores(samples)
        """, line=6, col=8),
        # A list comprehension of tensors (from x import y as z).
        Invalid("""
            from torch import tensor as T
            def post_process(args, samples):
                for s in samples:
                    s.train_metadata['chunks'] = [T(c) for c in s.metadata['chunks']]
        """, line=4, col=8),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Attribute) \
                    and tgt.value.attr.value in ("metadata", "train_metadata"):
                hit = self._array_value(node.value)
                if hit is not None:
                    self.report(node, self.INVARIANT.render(
                        problem=f"`.{tgt.value.attr.value}[...]` stores the result of `{hit}`, "
                        "which json.dumps cannot serialise"))

    def _array_value(self, value: cst.BaseExpression) -> str | None:
        """The numpy/torch callee whose result ``value`` is: the call itself, or (inside a
        function) what a local name or a call of the module's own helper comes from."""
        if isinstance(value, (cst.ListComp, cst.SetComp)):
            value = value.elt  # a list of arrays is no more serialisable than one
        hit = self._array_call(value)
        fn = self.functions[-1] if self.functions else None
        if hit is not None or fn is None or not isinstance(value, (cst.Name, cst.Call, cst.Await)):
            return hit
        for leaf, _ in self.context.semantic.origins(fn, value, owner=self.owner):
            if leaf is not None and leaf is not value:
                hit = self._array_call(leaf)
                if hit is not None:
                    return hit
        return None

    def _array_call(self, value: cst.BaseExpression) -> str | None:
        if not isinstance(value, cst.Call):
            return None
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in _PLAIN:
            return None
        return next((n for n in self.qualified(value.func) if n.startswith(_ARRAY_ROOTS)), None)
