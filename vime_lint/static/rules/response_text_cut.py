"""VIM059: ``sample.response`` is not cut while the sample's tokens are kept: the rule reads
the semantic model's per-function stores (``facts(fn).attr_stores``).

See ``docs/contract.md`` §2 (``tokens``, ``response``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["ResponseTextCut"]


_CUTS = frozenset({"split", "rsplit", "partition", "rpartition"})
#: Fields that say which tokens a response has; code that writes one cuts the tokens too.
_TOKEN_FIELDS = frozenset({"tokens", "response_length", "loss_mask", "rollout_log_probs"})

#: A generate that cuts the response text at a marker with ``{cut}`` (VALID/INVALID).
_CUT = ("async def generate(args, sample, sampling_params):\n"
        "    sample = await engine(args, sample, sampling_params)\n"
        "    at = sample.response.find('</answer>')\n"
        "    if at >= 0:\n        sample.response = {cut}\n"
        "{after}    return sample\n")


class ResponseTextCut(SampleTracker):
    """A generate that cuts ``sample.response`` cuts the response tokens too.

    ## What it does
    Reports ``sample.response = ...`` whose value cuts the sample's own response text (a slice
    ``sample.response[:n]``, an index of ``sample.response.split(...)``/``.rsplit``/
    ``.partition``/``.rpartition``, also through a local name holding ``sample.response``) in a
    function that writes none of ``tokens``, ``response_length``, ``loss_mask`` or
    ``rollout_log_probs`` (of any sample), calls no method of the sample with ``token`` in its
    name and deletes nothing from them. Cleaning the text (``strip``, ``replace``) is not a
    cut.

    ## Why is this bad?
    The reward scores ``sample.response`` while training trains on ``tokens`` and
    ``loss_mask``: with every token kept, the tokens after the cut are pushed up (or down)
    by a reward that never saw them (modelscope/ms-swift#6803; failure kind: "response text
    and tokens disagree").

    ## Example
    ```python
    cut = sample.response.find("</answer>")
    if cut >= 0:
        sample.response = sample.response[:cut + len("</answer>")]
    ```

    ## Use instead
    ```python
    # pass "stop": ["</answer>"] (and include_stop_str_in_output) in the sampling parameters,
    # so the engine stops there and the tokens end with the text; or parse the answer in the
    # reward and leave sample.response whole
    ```

    ## Known problems
    A cut written through ``setattr(s, "response", ...)`` is not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM059"]
    VALID = [
        # The tokens are cut too; the text is only cleaned; a new variable, not the field.
        Valid(_CUT.format(cut="sample.response[:at]",
                          after="        keep = len(tokenizer.encode(sample.response))\n"
                                "        sample.tokens = sample.tokens[:len(sample.tokens)"
                                " - sample.response_length + keep]\n"
                                "        sample.response_length = keep\n")),
        Valid(_CUT.format(cut="sample.response.strip()", after="")),
        Valid(_CUT.format(cut="sample.response.replace('<|im_end|>', '')", after="")),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                answer = sample.response.split('</think>')[-1]
                return float(answer.strip() == sample.label)
        """),
        Valid(_CUT.format(cut="sample.response[:at]",
                          after="        del sample.loss_mask[at:]\n")),
        # A helper of the module that trims the tokens to the kept text.
        Valid("def _trim(sample, n):\n    sample.tokens = sample.tokens[:n]\n"
              "    sample.response_length = n\n"
              + _CUT.format(cut="sample.response[:at]", after="        _trim(sample, at)\n")),
        # The sample's own method that trims tokens with the text.
        Valid(_CUT.format(cut="sample.response[:at]",
                          after="        sample.truncate_tokens(at)\n")),
        # A class hook whose self method trims the tokens to the kept text; a class reward
        # that cuts a local copy.
        Valid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample = await engine(args, sample, sampling_params)
                    sample.response = sample.response[:self.limit]
                    self._trim(sample)
                    return sample
                def _trim(self, sample):
                    sample.tokens = sample.tokens[:len(sample.tokens) - 1]
                    sample.response_length -= 1
            generate = Gen()
        """),
        Valid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    answer = sample.response[:200]
                    return float(answer == sample.label)
            reward_func = Judge()
        """),
        # Another object's `response`.
        Valid("""
            def f(out):
                out.response = out.response[:10]
                return out
        """),
    ]
    INVALID = [
        Invalid(_CUT.format(cut="sample.response[:at + len('</answer>')]", after=""),
                line=5, col=8),
        Invalid(_CUT.format(cut="sample.response.split('</answer>')[0] + '</answer>'",
                            after=""), line=5, col=8),
        Invalid(_CUT.format(cut="text.partition('</answer>')[0]", after="").replace(
            "    at = ", "    text = sample.response\n    at = "), line=6, col=8),
        # In a module helper given an annotated sample (aliased import); in a class hook's
        # __call__; an rsplit index; through a local alias of the sample.
        Invalid("""
            from vime.utils.types import Sample as S
            def _clip(sample: S, marker):
                at = sample.response.find(marker)
                if at >= 0:
                    sample.response = sample.response[:at]
            async def generate(args, sample, sampling_params):
                sample = await engine(args, sample, sampling_params)
                _clip(sample, '</answer>')
                return sample
        """, line=5, col=8),
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample = await engine(args, sample, sampling_params)
                    sample.response = sample.response[:self.limit]
                    return sample
            generate = Gen()
        """, line=4, col=8),
        Invalid("""
            async def generate(args, sample, sampling_params):
                sample = await engine(args, sample, sampling_params)
                sample.response = sample.response.rsplit('</answer>', 1)[0]
                return sample
        """, line=3, col=4),
        Invalid("""
            async def generate(args, sample, sampling_params):
                sample = await engine(args, sample, sampling_params)
                cur = sample
                cur.response = cur.response[:100]
                return sample
        """, line=4, col=4),
        # In a rollout function's loop over a group's samples.
        Invalid("""
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = run(args, data_source)
                for group in groups:
                    for s in group:
                        s.response = s.response[:512]
                return groups
        """, line=6, col=12),
    ]

    def _response_of(self, fn: cst.FunctionDef, expr: cst.BaseExpression, obj: str,
                     depth: int = 0) -> bool:
        """``expr`` is ``obj.response`` (or a local name bound only to it)."""
        if isinstance(expr, cst.Attribute):
            return expr.attr.value == "response" and isinstance(expr.value, cst.Name) \
                and expr.value.value == obj
        if isinstance(expr, cst.Name) and depth < 4:
            values = self.context.semantic.facts(fn).values.get(expr.value, [])
            return bool(values) and all(v is not None and self._response_of(fn, v, obj, depth + 1)
                                        for v in values)
        return False

    def _cut(self, fn: cst.FunctionDef, expr: cst.BaseExpression, obj: str) -> bool:
        """``expr`` cuts ``obj.response``: a slice of it, an index of a split of it, or
        ``cut + text`` where ``cut`` is one."""
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self._cut(fn, expr.left, obj)
        if not isinstance(expr, cst.Subscript):
            return False
        base = expr.value
        if any(isinstance(el.slice, cst.Slice) for el in expr.slice) \
                and self._response_of(fn, base, obj):
            return True
        return isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute) \
            and base.func.attr.value in _CUTS and self._response_of(fn, base.func.value, obj)

    def _touches_tokens(self, fn: cst.FunctionDef) -> bool:
        """``fn`` writes a token field, calls a ``*token*`` method of a sample, or deletes
        from a token field."""
        semantic = self.context.semantic
        facts = semantic.facts(fn)
        if any(st.attr in _TOKEN_FIELDS for st in facts.attr_stores):
            return True
        for site in facts.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute) and "token" in func.attr.value \
                    and self.is_sample(func.value):
                return True
            # a helper of the module that gets the sample and writes its token fields
            target = semantic.callee(site.node, fn, self.owner)
            if target is not None and target is not fn and any(
                    isinstance(a.value, cst.Name) and self.is_sample(a.value)
                    for a in site.node.args) and any(
                    st.attr in _TOKEN_FIELDS for helper in semantic.closure(target, self.owner)
                    for st in semantic.facts(helper).attr_stores):
                return True
        for attr in _TOKEN_FIELDS:
            for _node, parents in facts.attributes.get(attr, []):
                if any(isinstance(p, (cst.Del, cst.AssignTarget, cst.AugAssign))
                       for p in parents):
                    return True
        return False

    def _check_store(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        fn = self.current
        if fn is None or not isinstance(target, cst.Attribute) \
                or target.attr.value != "response" or not self.is_sample(target.value):
            return
        assert isinstance(target.value, cst.Name)
        obj = target.value.value
        if not self._cut(fn, value, obj) or self._touches_tokens(fn):
            return
        self.report(target, self.INVARIANT.render(problem=(
            f"`{obj}.response = {code_of(value)}` in `{fn.name.value}` cuts the response text "
            "but keeps every response token: the reward scores the cut text while training "
            "trains on all the tokens, those after the cut included")))

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        for t in node.targets:
            self._check_store(t.target, node.value)
