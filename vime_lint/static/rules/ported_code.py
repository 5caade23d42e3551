"""Code ported from slime / SGLang, and private vime imports: VIM012.

See ``docs/contract.md`` §6a and §8 (vLLM's token-in/token-out response fields).
"""

from __future__ import annotations

from pathlib import PurePath

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted_text, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule
from vime_lint.static.analysis import is_upstream

__all__ = ["PortedSglangShape"]

_SGLANG_KEYS = ("meta_info", "output_token_logprobs")
_REQUEST_KEYS = ("input_ids", "return_logprob")
_SGLANG_ENDPOINT = "/" + "generate"


class PortedSglangShape(Rule):
    """No slime/SGLang API shapes and no private ``vime`` imports.

    ## What it does
    Reports ``import slime`` / ``from slime... import`` (and the same for ``miles``, a fork of
    slime) and imports of ``_private`` names or modules of ``vime`` from outside the package
    (errors), and SGLang response/request keys:
    ``"meta_info"`` and ``"output_token_logprobs"`` used as keys, a request dict with
    ``"input_ids"`` or ``"return_logprob"`` next to ``"sampling_params"``, and the SGLang
    ``"/generate"`` endpoint (warnings).

    ## Why is this bad?
    vime talks to vLLM's ``/inference/v1/generate``, whose response carries
    ``choices[0].token_ids`` and ``logprobs.content``: code ported from slime parses keys
    that never arrive (failure kind: "SGLang response shape"). Private names change in any
    release.

    ## Example
    ```python
    from slime.utils.types import Sample
    logprobs = output["meta_info"]["output_token_logprobs"]
    ```

    ## Use instead
    ```python
    from vime.utils.types import Sample
    logprobs = [c["logprob"] for c in output["choices"][0]["logprobs"]["content"]]
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM012"]
    VALID = [
        Valid("from vime.utils.types import Sample\n"),
        Valid("url = base + '/inference/v1/generate'\n"),
        Valid("ids = tokenizer(text)['input_ids']\n"),
        Valid("import milestones\nfrom slimer import x\n"),
    ]
    INVALID = [
        Invalid("from slime.utils.types import Sample\n", line=1, col=0, severity="error"),
        Invalid("import slime.rollout\n", line=1, col=0, severity="error"),
        # miles, a fork of slime: the same hook API under another package, not importable here.
        Invalid("from miles.utils.types import Sample\n", line=1, col=0, severity="error"),
        Invalid("import miles.rollout.base_types as bt\n", line=1, col=0, severity="error"),
        Invalid("from vime.rollout.vllm_rollout import _parse\n", line=1, col=0,
                severity="error"),
        Invalid("x = out['meta_info']['output_token_logprobs']\n", line=1, col=8,
                severity="warning"),
        Invalid("payload = {'input_ids': ids, 'sampling_params': sp}\n", line=1, col=10,
                severity="warning"),
        Invalid("url = f'{base}' + '/generate'\n", line=1, col=18, severity="warning"),
    ]

    def _inside_vime(self) -> bool:
        parts = PurePath(self.context.path).parts
        return "vime" in parts or "vime_lint" in parts

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted_text(alias.name)
            if is_upstream(name):
                pkg = name.partition(".")[0]
                self.report(node, self.INVARIANT.render(
                    problem=f"`import {name}`: {pkg}'s API is not vime's; import from `vime`"),
                    severity="error")
            elif name.startswith("vime.") and not self._inside_vime() and any(
                    p.startswith("_") for p in name.split(".")):
                self.report(node, self.INVARIANT.render(
                    problem=f"`import {name}` imports a private vime module"), severity="error")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative:
            return
        mod = dotted_text(node.module)
        if is_upstream(mod):
            self.report(node, self.INVARIANT.render(
                problem=f"`from {mod} import ...`: {mod.partition('.')[0]}'s API is not vime's; "
                "import the same "
                "names from `vime`"), severity="error")
            return
        if not (mod == "vime" or mod.startswith("vime.")) or self._inside_vime():
            return
        private = [p for p in mod.split(".") if p.startswith("_") and not p.startswith("__")]
        if not private and not isinstance(node.names, cst.ImportStar):
            private = [a.name.value for a in node.names if isinstance(a.name, cst.Name)
                       and a.name.value.startswith("_") and not a.name.value.startswith("__")]
        if private:
            self.report(node, self.INVARIANT.render(
                problem=f"`from {mod} import ...` uses private vime name(s) "
                f"{', '.join(private)}; use the public API"), severity="error")

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        sl = node.slice
        if isinstance(sl, cst.Index):
            key = string_value(sl.value)
            if key in _SGLANG_KEYS:
                self.report(sl.value, self.INVARIANT.render(
                    problem=f"{key!r} is an SGLang response key; vLLM returns choices[0] with "
                    "token_ids and logprobs.content"), severity="warning")

    def visit_Dict(self, node: cst.Dict) -> None:
        keys = {string_value(el.key) for el in node.elements if isinstance(el, cst.DictElement)}
        if "sampling_params" in keys:
            bad = sorted(k for k in keys if k in _REQUEST_KEYS)
            if bad:
                self.report(node, self.INVARIANT.render(
                    problem=f"request keys {', '.join(repr(b) for b in bad)} are SGLang's; "
                    "vLLM's /inference/v1/generate takes token_ids and sampling_params"),
                    severity="warning")

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if string_value(node) == _SGLANG_ENDPOINT:
            self.report(node, self.INVARIANT.render(
                problem="'/generate' is SGLang's endpoint; vLLM serves /inference/v1/generate"),
                severity="warning")
