"""Turn loops keep the sampled token ids instead of re-encoding generated text: VIM018.

:class:`ReencodedGeneratedText` looks at rollout, eval and custom generate functions together
with the module-level helpers they call
(:meth:`~vime_lint.static.analysis.Semantic.closure`); the per-function analysis is
:meth:`~vime_lint.static.analysis.Semantic.retokenised_calls`.

See ``docs/contract.md`` §2 (``append_response_tokens``), §8 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

#: A loop over ``{call}(...)`` that encodes ``row.response`` again (VALID/INVALID cases).
_ROW_LOOP = ("async def generate(args, sample, sampling_params):\n"
             "    for row in {call}([sample]):\n"
             "        out = await engine(ids)\n"
             "        ids = tokenizer.encode(row.response)\n"
             "    return sample\n")

__all__ = ["ReencodedGeneratedText"]

_TURN_DESTS = ("rollout_function_path", "eval_function_path", "custom_generate_function_path")


class ReencodedGeneratedText(FunctionTracker):
    """Turn loops keep the sampled token ids instead of re-encoding generated text.

    ## What it does
    In rollout, eval and custom generate functions (and the module-level helpers and, for a
    class hook's ``__call__``, the ``self`` methods they call),
    reports a tokenizer call inside a ``for``/``while`` loop that encodes text the model
    generated to build the next turn's tokens: ``tokenizer.encode(text)``, ``tokenizer(text)``,
    or
    ``tokenizer.apply_chat_template(messages)`` without ``tokenize=False`` (with it, when the
    rendered text goes back to the engine as a prompt: ``Sample(prompt=...)`` or
    ``sample.prompt`` into a generate call, a ``"prompt"`` payload), where ``text`` /
    ``messages`` hold ``tokenizer.decode(...)`` output, ``sample.response`` or an engine
    response's ``choices[...]["text"]``, directly or through assignments, f-strings,
    concatenation, string methods and ``messages.append({...})`` in the same loop.
    The encoded ids must visibly become tokens (assigned to ``.tokens``, passed as
    ``tokens=``/``token_ids=``, stored under ``"token_ids"``, or sent to an awaited or
    ``*generate*`` call), so counting tokens of a response for a metric is fine; so is encoding
    tool or environment output that is not derived from generated text.

    ## Known problems
    Decoded text and ``sample.response`` count as generated only in a loop that awaits
    something or calls a ``*generate*`` function (an SFT rollout tokenising dataset text in
    a loop is fine); the analysis does not follow values through calls of other functions.

    ## Why is this bad?
    Decoding and encoding again does not reproduce the sampled ids (merges, special tokens,
    whitespace normalisation), so the next turn's prompt and the trained tokens differ from
    what the engine sampled, and the log-probs of the sampler no longer line up with the
    trained tokens (failure kind: "retokenisation drift").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        for _ in range(MAX_TURNS):
            out = await engine(ids)
            messages.append({"role": "assistant", "content": tokenizer.decode(out.token_ids)})
            messages.append({"role": "tool", "content": run_tool(out)})
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        for _ in range(MAX_TURNS):
            out = await engine(sample.tokens)
            sample.append_response_tokens(args, tokens=out.token_ids, log_probs=out.log_probs)
            tool = tokenizer.encode(run_tool(out), add_special_tokens=False)
            sample.append_response_tokens(args, tokens=tool, trainable=False)
    ```

    ## Fix safety
    No fix: keeping the ids changes how the loop is written.
    """

    INVARIANT = INVARIANTS["VIM018"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def generate(args, sample, sampling_params):
                for _ in range(3):
                    out = await engine(sample.tokens)
                    text = tokenizer.decode(out)
                    tool = run_tool(text)
                    ids = tokenizer.encode(f'<result>{tool}</result>')
                    sample.append_response_tokens(args, tokens=ids, trainable=False)
                return sample
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                for _ in range(3):
                    out = await engine(sample.tokens)
                    text = tokenizer.decode(out)
                    sample.metadata['n'] = len(tokenizer.encode(text))
                return sample
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                text = tokenizer.decode(sample.tokens)
                ids = tokenizer.encode(text)
                return sample
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                for group in data_source.get_samples(4):
                    for sample in group:
                        sample.tokens = tokenizer.apply_chat_template(sample.prompt)
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                for group in data_source.get_samples(4):
                    for sample in group:
                        sample.response = sample.label
                        sample.tokens = tokenizer.encode(sample.prompt + sample.response)
        """),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    while True:\n"
              "        data = sample.response.encode('utf-8')\n"
              "        prompt = tokenizer.apply_chat_template(msgs + [{'content': sample.response}],"
              " tokenize=False)\n"
              "        break\n"
              "    return sample\n"),
        # Tool output encoded in a comprehension and appended as non-trainable tokens, in a
        # class hook's self method.
        Valid("class Gen:\n    async def __call__(self, args, sample, sampling_params):\n"
              "        return await self._episode(args, sample)\n"
              "    async def _episode(self, args, sample):\n        for _ in range(3):\n"
              "            out = await engine(sample.tokens)\n"
              "            sample.append_response_tokens(args, tokens=out['token_ids'],"
              " log_probs=out['lp'])\n"
              "            tool = [tokenizer.encode(r, add_special_tokens=False)"
              " for r in run_tools(out)]\n"
              "            sample.append_response_tokens(args, tokens=sum(tool, []),"
              " trainable=False)\n        return sample\ngenerate = Gen()\n"),
        # `row` holds a sample only through vime's iter_samples (qualified names)
        Valid("from mylib import iter_samples\n" + _ROW_LOOP.format(call="iter_samples")),
        Valid("import mylib as bt\n" + _ROW_LOOP.format(call="bt.iter_samples")),
        Valid("from mylib import walk as leaves\n" + _ROW_LOOP.format(call="leaves")),
    ]
    INVALID = [
        Invalid("""
            async def generate(args, sample, sampling_params):
                messages = [{'role': 'user', 'content': sample.prompt}]
                for _ in range(3):
                    out = await engine(ids)
                    text = tokenizer.decode(out['token_ids'])
                    messages.append({'role': 'assistant', 'content': text})
                    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
                return sample
        """, line=7, col=14),
        Invalid("""
            async def generate(args, sample, sampling_params):
                while not done:
                    prompt = self.tok.apply_chat_template(msgs, tokenize=False)
                    prompt += sample.response.strip()
                    ids = self.tok.encode(prompt)
                    sample = await vllm_generate(args, sample, ids)
                return sample
        """, line=5, col=14),
        Invalid("""
            async def _episode(sample):
                for turn in range(4):
                    out = await post(url, payload)
                    history = history + out['choices'][0]['text']
                    payload = {'token_ids': tokenizer(history)['input_ids']}
                return sample
            async def generate(args, sample, sampling_params):
                return await _episode(sample)
        """, line=5, col=32),
        # a text prompt re-rendered from generated text goes back to the engine, which encodes
        # it again: vime's built-in generate (Sample(prompt=...)), /v1/completions ("prompt")
        Invalid("""
            from vime.rollout.vllm_rollout import generate as engine_generate
            async def generate(args, sample, sampling_params):
                for turn in range(2):
                    text = tokenizer.apply_chat_template(messages, tokenize=False)
                    turn_sample = await engine_generate(args, Sample(prompt=text),
                                                        sampling_params)
                    messages.append({'role': 'assistant', 'content': turn_sample.response})
                return sample
        """, line=4, col=15),
        Invalid("""
            async def generate(args, sample, sampling_params):
                for turn in range(2):
                    sample.prompt = tok.apply_chat_template(history, tokenize=False,
                                                            add_generation_prompt=True)
                    sample = await vllm_generate(args, sample, sampling_params)
                    history.append({'role': 'assistant', 'content': sample.response})
                return sample
        """, line=3, col=24),
        Invalid("""
            async def generate(args, sample, sampling_params):
                while True:
                    out = await client.post(url, json={'prompt': prompt})
                    msgs.append({'role': 'assistant', 'content': out.json()['choices'][0]['text']})
                    prompt = tokenizer.apply_chat_template(msgs, tokenize=False)
                return sample
        """, line=5, col=17),
        # A class hook's __call__ (self.tokenizer), the self method it awaits, a tokenizer
        # held in a local name, decoded text joined from a comprehension.
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    for _ in range(3):
                        out = await engine(ids)
                        text = self.tokenizer.decode(out['token_ids'])
                        ids = self.tokenizer.encode(sample.prompt + text)
                    return sample
            generate = Gen()
        """, line=6, col=18),
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    return await self._episode(sample)
                async def _episode(self, sample):
                    for _ in range(3):
                        out = await engine(ids)
                        text = tokenizer.decode(out['token_ids'])
                        ids = tokenizer.encode(sample.prompt + text)
                    return sample
            generate = Gen()
        """, line=8, col=18),
        Invalid("""
            async def generate(args, sample, sampling_params):
                tok = load_tokenizer(args)
                for _ in range(3):
                    out = await engine(ids)
                    text = tok.decode(out['token_ids'])
                    ids = tok.encode(sample.prompt + text)
                return sample
        """, line=6, col=14),
        Invalid("""
            async def generate(args, sample, sampling_params):
                for _ in range(3):
                    out = await engine(ids)
                    texts = [tokenizer.decode(t) for t in out['token_ids']]
                    ids = tokenizer.encode(''.join(texts))
                return sample
        """, line=5, col=14),
        Invalid("from vime.rollout.base_types import iter_samples as leaves\n"
                + _ROW_LOOP.format(call="leaves"), line=5, col=14),
        Invalid("import vime.rollout.base_types as bt\n"
                + _ROW_LOOP.format(call="bt.iter_samples"), line=5, col=14),
        Invalid("from vime.rollout import base_types\n"
                + _ROW_LOOP.format(call="base_types.iter_samples"), line=5, col=14),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.reported: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _TURN_DESTS:
            return
        semantic = self.context.semantic
        for fn in semantic.closure(node, semantic.owner(node)):
            for call in semantic.retokenised_calls(fn):
                if id(call) in self.reported:
                    continue
                self.reported.add(id(call))
                self.report(call, self.INVARIANT.render(name=fn.name.value)
                            + f": `{_short(call)}` inside a loop encodes generated text again")


def _short(call: cst.Call, limit: int = 60) -> str:
    text = " ".join(code_of(call).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
