"""What ``metadata`` / ``train_metadata`` may hold: VIM014.

:class:`TensorInMetadata` reports numpy or torch values stored in sample metadata.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule

__all__ = ["TensorInMetadata"]


_ARRAY_ROOTS = ("numpy.", "torch.")
_PLAIN = ("item", "tolist")


class TensorInMetadata(Rule):
    """No numpy or torch values stored in ``metadata`` / ``train_metadata``.

    ## What it does
    Reports ``x.metadata[key] = <numpy/torch call>`` (also for ``train_metadata``), resolving
    aliases such as ``import numpy as np`` by qualified name. ``.item()`` and ``.tolist()``
    results are fine. Runtime twin: VIM116.

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
        Valid("import numpy as np\nsample.metadata['s'] = np.array(x).tolist()\n"),
        Valid("sample.metadata['s'] = float(x)\n"),
    ]
    INVALID = [
        Invalid("import numpy as np\nsample.metadata['s'] = np.array(x)\n", line=2, col=0),
        Invalid("from torch import tensor\ns.train_metadata['t'] = tensor([1])\n", line=2,
                col=0),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in _PLAIN:
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Attribute) \
                    and tgt.value.attr.value in ("metadata", "train_metadata"):
                names = self.qualified(value.func)
                hit = next((n for n in names if n.startswith(_ARRAY_ROOTS)), None)
                if hit is not None:
                    self.report(node, self.INVARIANT.render(
                        problem=f"`.{tgt.value.attr.value}[...]` stores the result of `{hit}`, "
                        "which json.dumps cannot serialise"))
