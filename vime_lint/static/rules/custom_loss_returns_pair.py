"""VIM055: a ``--custom-loss-function-path`` function returns ``(loss, log_dict)``, not a bare
loss; its runtime twin (VIM190) checks the value the trainer receives, at boundary B7.

See ``docs/contract.md`` §5 and §6a, and ``docs/en/training.md`` ("Trainer hooks").
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.rules._trainer_hook_bodies import _body, _describe, _tensor_like

__all__ = ["CustomLossReturnsPair"]


class CustomLossReturnsPair(FunctionTracker):
    """A custom loss returns ``(loss, log_dict)``.

    ## What it does
    Reports a ``return`` in a ``--custom-loss-function-path`` function whose value is a bare
    tensor (arithmetic, ``x.mean()``, ``torch.sum(...)``, a local name only ever assigned
    such a value), a tuple of another length, or None.

    ## Why is this bad?
    The trainer unpacks ``loss, log_dict = custom_loss(args, batch, logits,
    sum_of_sample_mean)``: a bare scalar tensor fails to unpack, a vector silently unpacks its
    first two elements. Either happens at the first micro-batch, after a whole rollout was
    generated. Runtime twin: VIM190.

    ## Example
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        return sum_of_sample_mean(per_token_loss(logits, batch))
    ```

    ## Use instead
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        loss = sum_of_sample_mean(per_token_loss(logits, batch))
        return loss, {"my_loss": loss.detach()}
    ```

    ## Fix safety
    No fix: the log values are the author's choice.
    """

    INVARIANT = INVARIANTS["VIM055"]
    NEEDS_HOOKS = True
    _HOOK = {"hooks": {"my_loss": "custom_loss_function_path"}}
    VALID = [
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    loss = logits.mean()\n    return loss, {'loss': loss.detach()}\n",
              options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    result = helper(logits)\n    return result\n", options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    def inner(x):\n        return x.mean()\n"
              "    return inner(logits), {}\n", options=_HOOK),
        Valid("def other(args, batch, logits, sum_of_sample_mean):\n    return logits.mean()\n"),
    ]
    INVALID = [
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    return logits.mean()\n", line=2, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = -sum_of_sample_mean(logits[:, :, 0])\n    return loss\n",
                line=3, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = logits.mean()\n    return loss, {}, 0\n", line=3, col=11,
                options=_HOOK),
        Invalid("import torch\n\ndef my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    if logits is None:\n        return\n    return torch.sum(logits), {}\n",
                line=5, col=8, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_loss_function_path":
            return
        body = _body(self.context.semantic, node)
        for ret in body.returns:
            problem = _describe(ret.value)
            if problem is None and isinstance(ret.value, cst.Name):
                values = body.assigned.get(ret.value.value, [])
                if values and all(_tensor_like(v) for v in values):
                    problem = "a bare tensor"
            if problem is not None:
                self.report(ret.value if ret.value is not None else ret,
                            self.INVARIANT.render(name=node.name.value, actual=problem))
