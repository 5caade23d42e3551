"""VIM058: text rendered by ``apply_chat_template(..., tokenize=False)`` is not encoded again
with special tokens: the rule follows the text a tokenizer encodes back to the rendering
(local names, the module's helpers, ``+``) through the semantic model's
:meth:`~vime_lint.static.analysis.Semantic.origins`.

See ``docs/contract.md`` §2 (``tokens``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.analysis import is_tokenizer, tokenize_false
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["TemplatedTextSpecialTokens"]


_ENCODE = frozenset({"encode", "encode_plus"})

#: A generate that renders the template to ``text`` and encodes it with ``{encode}``.
_RENDER = ("async def generate(args, sample, sampling_params):\n"
           "    messages = [{{'role': 'user', 'content': sample.prompt}}]\n"
           "    text = tokenizer.apply_chat_template(messages, tokenize=False,"
           " add_generation_prompt=True)\n"
           "    sample.tokens = {encode}\n    return sample\n")


class TemplatedTextSpecialTokens(SampleTracker):
    """Text rendered by the chat template is encoded without special tokens.

    ## What it does
    Reports ``tokenizer.encode(text)``, ``tokenizer.encode_plus(text)`` and
    ``tokenizer(text)`` where ``text`` is the output of
    ``apply_chat_template(..., tokenize=False)`` (directly, through local names, the
    module's own helpers that return it, at the start of a ``+`` concatenation or an
    f-string, or as the element of a list of rendered texts a loop or comprehension walks) and
    ``add_special_tokens`` is not ``False`` (given as ``True``, or left to its default,
    ``True``). Runtime twin: VIM176 (checked on the tokens when the BOS id is known).

    ## Why is this bad?
    The chat template already writes the BOS token; encoding its text with special tokens
    prefixes a second one for every tokenizer that adds BOS (Llama, Gemma, Mistral), so every
    prompt starts off the distribution the model was tuned on (NVIDIA-NeMo/RL#855,
    huggingface/trl#3856; failure kind: "chat template applied twice").

    ## Example
    ```python
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    sample.tokens = tokenizer.encode(text)
    ```

    ## Use instead
    ```python
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    sample.tokens = tokenizer.encode(text, add_special_tokens=False)
    ```

    ## Fix safety
    No fix: the fix depends on the tokenizer (one that adds no BOS is not affected).
    """

    INVARIANT = INVARIANTS["VIM058"]
    VALID = [
        Valid(_RENDER.format(encode="tokenizer.encode(text, add_special_tokens=False)")),
        Valid(_RENDER.format(encode="tokenizer(text, add_special_tokens=False)['input_ids']")),
        # Tokenized by the template itself; plain text (not templated) with special tokens;
        # a flag the code computes.
        Valid("""
            def f(tokenizer, messages):
                return tokenizer.apply_chat_template(messages, tokenize=True)
        """),
        Valid("""
            def f(tokenizer, sample):
                return tokenizer.encode(sample.prompt)
        """),
        Valid(_RENDER.format(encode="tokenizer.encode(text, add_special_tokens=flag)")),
        # A batch of rendered texts encoded without special tokens in a comprehension; a
        # loop over plain prompts with them.
        Valid("""
            def f(tokenizer, batch):
                texts = [tokenizer.apply_chat_template(m, tokenize=False) for m in batch]
                return [tokenizer.encode(t, add_special_tokens=False) for t in texts]
        """),
        Valid("""
            def f(tokenizer, samples):
                out = []
                for t in [s.prompt for s in samples]:
                    out.append(tokenizer.encode(t))
                return out
        """),
        # Templated text that something is appended to, encoded without special tokens.
        Valid(_RENDER.format(encode="tok.encode(text + sample.response, "
                                    "add_special_tokens=False)")),
    ]
    INVALID = [
        Invalid(_RENDER.format(encode="tokenizer.encode(text, add_special_tokens=True)"),
                line=4, col=20),
        Invalid(_RENDER.format(encode="tokenizer.encode(text)"), line=4, col=20),
        Invalid(_RENDER.format(encode="tokenizer(text)['input_ids']"), line=4, col=20),
        # Rendered by a helper of the module, and concatenated with more text.
        Invalid("def render(tok, prompt):\n"
                "    return tok.apply_chat_template([{'role': 'user', 'content': prompt}],"
                " tokenize=False, add_generation_prompt=True)\n"
                "def prompt_ids(tok, sample):\n"
                "    return tok.encode(render(tok, sample.prompt) + '<think>')\n",
                line=4, col=11),
        # A comprehension (and a for loop) over rendered texts; an f-string that starts with
        # the rendered text; a class hook's self method rendering it; a local tokenizer
        # alias called directly.
        Invalid("""
            def f(tokenizer, batch):
                texts = [tokenizer.apply_chat_template(m, tokenize=False) for m in batch]
                return [tokenizer.encode(t) for t in texts]
        """, line=3, col=12),
        Invalid("""
            def f(tokenizer, batch):
                out = []
                for t in (tokenizer.apply_chat_template(m, tokenize=False) for m in batch):
                    out.append(tokenizer(t)['input_ids'])
                return out
        """, line=4, col=19),
        Invalid("""
            def f(tokenizer, messages):
                text = tokenizer.apply_chat_template(messages, tokenize=False)
                return tokenizer.encode(f'{text}<think>')
        """, line=3, col=11),
        Invalid("class Gen:\n    def _render(self, messages):\n"
                "        return self.tok.apply_chat_template(messages, tokenize=False,"
                " add_generation_prompt=True)\n"
                "    async def __call__(self, args, sample, sampling_params):\n"
                "        sample.tokens = self.tok.encode(self._render(sample.prompt))\n"
                "        return sample\ngenerate = Gen()\n", line=5, col=24),
        Invalid("""
            def f(tokenizer, messages):
                tok = tokenizer
                text = tok.apply_chat_template(messages, tokenize=False)
                return tok(text, return_tensors=None)['input_ids']
        """, line=4, col=11),
        Invalid("""
            class Env:
                def reset(self, messages):
                    prompt = self.tokenizer.apply_chat_template(messages, tokenize=False)
                    return self.tokenizer.encode_plus(prompt)['input_ids']
        """, line=4, col=15),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: ``(target name, iterated expression)`` of the loops and comprehensions around the
        #: node being visited (innermost last).
        self.loops: list[tuple[str, cst.BaseExpression]] = []

    def _push_comp(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp
                   | cst.DictComp) -> None:
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            if isinstance(comp.target, cst.Name):
                self.loops.append((comp.target.value, comp.iter))
            else:
                self.loops.append(("", comp.iter))
            comp = comp.inner_for_in

    def _pop_comp(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp
                  | cst.DictComp) -> None:
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            self.loops.pop()
            comp = comp.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        super().visit_ListComp(node)
        self._push_comp(node)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._pop_comp(original_node)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        super().visit_SetComp(node)
        self._push_comp(node)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._pop_comp(original_node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        super().visit_GeneratorExp(node)
        self._push_comp(node)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._pop_comp(original_node)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        super().visit_DictComp(node)
        self._push_comp(node)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self._pop_comp(original_node)

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        name = node.target.value if isinstance(node.target, cst.Name) else ""
        self.loops.append((name, node.iter))

    def leave_For(self, original_node: cst.For) -> None:
        self.loops.pop()

    def _element_templated(self, fn: cst.FunctionDef, name: str) -> bool:
        """``name`` is the target of a loop or comprehension around the call whose iterated
        list holds rendered text (``[tok.apply_chat_template(m, tokenize=False) for m in
        batch]``)."""
        for target, it in reversed(self.loops):
            if target != name:
                continue
            for leaf, where in self.context.semantic.origins(fn, it, owner=self.owner):
                if isinstance(leaf, (cst.ListComp, cst.GeneratorExp)) \
                        and isinstance(where, cst.FunctionDef) \
                        and self._templated(where, leaf.elt, 1):
                    return True
            return False
        return False

    def _templated(self, fn: cst.FunctionDef, expr: cst.BaseExpression | None,
                   depth: int = 0) -> bool:
        """``expr`` in ``fn`` starts with text the chat template rendered."""
        if expr is None or depth > 4:
            return False
        for leaf, where in self.context.semantic.origins(fn, expr, owner=self.owner):
            if isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Attribute) \
                    and leaf.func.attr.value == "apply_chat_template" and tokenize_false(leaf):
                return True
            if isinstance(leaf, cst.BinaryOperation) and isinstance(leaf.operator, cst.Add) \
                    and isinstance(where, cst.FunctionDef) \
                    and self._templated(where, leaf.left, depth + 1):
                return True
            if isinstance(leaf, cst.FormattedString) and leaf.parts \
                    and isinstance(leaf.parts[0], cst.FormattedStringExpression) \
                    and isinstance(where, cst.FunctionDef) \
                    and self._templated(where, leaf.parts[0].expression, depth + 1):
                return True   # f"{text}<think>"
        return False

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.current
        if fn is None:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _ENCODE \
                and is_tokenizer(func.value):
            how = f"`.{func.attr.value}`"
        elif is_tokenizer(func):
            how = "calling the tokenizer"
        else:
            return
        special = next((a.value for a in node.args
                        if a.keyword is not None and a.keyword.value == "add_special_tokens"),
                       None)
        if special is not None and not (isinstance(special, cst.Name)
                                        and special.value == "True"):
            return  # False, or a value the code computes
        text = next((a.value for a in node.args if a.keyword is None and not a.star), None)
        if text is None:
            text = next((a.value for a in node.args
                         if a.keyword is not None and a.keyword.value == "text"), None)
        if not self._templated(fn, text) and not (
                isinstance(text, cst.Name) and self._element_templated(fn, text.value)):
            return
        flag = "add_special_tokens=True" if special is not None else \
            "add_special_tokens defaults to True"
        self.report(node, self.INVARIANT.render(problem=(
            f"`{code_of(node)}` in `{fn.name.value}` encodes text rendered by "
            f"apply_chat_template(..., tokenize=False) with special tokens ({how}, {flag}): "
            "a tokenizer that adds BOS (Llama, Gemma, Mistral) prefixes a second BOS to the "
            "one the template wrote")))


#: Methods that cut a string, read by an index or slice of their result.
