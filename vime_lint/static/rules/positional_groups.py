"""VIM057: a post-processing hook (reward post-process, custom convert, custom advantages)
groups the flat samples by ``group_index``, not by cutting them into rows of
``n_samples_per_prompt`` by position.

See ``docs/contract.md`` §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["PositionalGroups"]


_FLAT_HOOKS = frozenset({"custom_reward_post_process_path",
                         "custom_convert_samples_to_train_data_path",
                         "custom_advantage_function_path"})
#: Methods (and ``torch``/``numpy`` functions) that cut a flat sequence into rows by size.
_ROW_METHODS = frozenset({"view", "reshape", "unflatten", "split"})
_ROW_FUNCTIONS = frozenset({"torch.reshape", "numpy.reshape", "torch.split", "numpy.split",
                            "numpy.array_split", "torch.unflatten"})
_GROUP_SIZE = "n_samples_per_prompt"

#: A reward post-process hook that normalises ``rows`` of its rewards (VALID/INVALID).
_POST = ("import torch\ndef reward_post_process(args, samples):\n"
         "    raw = [s.get_reward_value(args) for s in samples]\n"
         "    r = torch.tensor(raw)\n    rows = {rows}\n"
         "    return raw, (rows - rows.mean(dim=-1, keepdim=True)).flatten().tolist()\n")


class PositionalGroups(FunctionTracker):
    """Post-processing hooks find a sample's group by ``group_index``, not by position.

    ## What it does
    In a ``--custom-reward-post-process-path``, ``--custom-convert-samples-to-train-data-path``
    or ``--custom-advantage-function-path`` function (and the module's helpers it calls; a
    class hook's ``self`` methods too),
    reports cutting the flat samples (or values made from them) into rows of
    ``n_samples_per_prompt`` by position: ``x.view(-1, n)``, ``.reshape``, ``.unflatten``,
    ``.split``, ``torch.reshape``/``np.reshape``/``np.split`` with a size that is
    ``args.n_samples_per_prompt`` (also through ``getattr``, ``vime.config.arg`` or a local
    name, and arithmetic on it), and ``range(start, stop, n)`` stepping by it. Runtime twins:
    VIM103 and VIM113 check the rollout's groups, not the hook's grouping.

    ## Why is this bad?
    The hook gets the step's flat samples. Rows of ``n_samples_per_prompt`` by position are
    the prompt groups only when every rollout is one sample and every group arrives whole
    and in order: the segments of a fan-out rollout (several samples sharing a
    ``rollout_id``) or uneven groups put samples of different prompts in one row, and the
    advantages computed from its mean are silently wrong (THUDM/slime#1414,
    radixark/miles#1573; failure kind: "uneven group sizes silently change GRPO
    advantages"). A warning: for even groups of one-sample rollouts the rows are right.

    ## Example
    ```python
    def reward_post_process(args, samples):
        raw = [s.get_reward_value(args) for s in samples]
        rows = torch.tensor(raw).view(-1, args.n_samples_per_prompt)
        return raw, (rows - rows.mean(dim=-1, keepdim=True)).flatten().tolist()
    ```

    ## Use instead
    ```python
    def reward_post_process(args, samples):
        raw = [s.get_reward_value(args) for s in samples]
        groups = defaultdict(list)
        for i, s in enumerate(samples):
            groups[s.group_index].append(i)
        rewards = list(raw)
        for idx in groups.values():
            mean = sum(raw[i] for i in idx) / len(idx)
            for i in idx:
                rewards[i] = raw[i] - mean
        return raw, rewards
    ```

    ## Known problems
    A size passed in from another module, or computed from ``len(samples)``, is not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM057"]
    NEEDS_HOOKS = True
    VALID = [
        # By group_index.
        Valid("""
            from collections import defaultdict
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                groups = defaultdict(list)
                for i, s in enumerate(samples):
                    groups[s.group_index].append(i)
                out = list(raw)
                for idx in groups.values():
                    m = sum(raw[i] for i in idx) / len(idx)
                    for i in idx:
                        out[i] = raw[i] - m
                return raw, out
        """),
        # A reshape by something else; a reshape in a hook that gets one group; another
        # function of the module that no flat hook calls.
        Valid(_POST.format(rows="r.view(1, -1)")),
        Valid("""
            import torch
            def dynamic_sampling_filter(args, samples, **kwargs):
                r = torch.tensor([s.get_reward_value(args) for s in samples])
                return r.view(-1, args.n_samples_per_prompt).std() > 0
        """),
        Valid("""
            def chunks(args, xs):
                return [xs[i:i + args.n_samples_per_prompt]
                        for i in range(0, len(xs), args.n_samples_per_prompt)]
        """),
        # A class hook's self method grouping by group_index; a comprehension that steps by
        # 1 (not the group size).
        Valid("from collections import defaultdict\nclass Post:\n"
              "    def __call__(self, args, samples):\n"
              "        raw = [s.get_reward_value(args) for s in samples]\n"
              "        return raw, self._norm(raw, samples)\n"
              "    def _norm(self, raw, samples):\n        groups = defaultdict(list)\n"
              "        for i, s in enumerate(samples):\n"
              "            groups[s.group_index].append(raw[i])\n"
              "        return [raw[i] - sum(groups[s.group_index]) / len(groups[s.group_index])"
              " for i, s in enumerate(samples)]\nreward_post_process = Post()\n"),
        Valid("""
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                n = args.n_samples_per_prompt
                return raw, [raw[i] / n for i in range(0, len(raw), 1)]
        """),
        # The group size used as a number, not a row size.
        Valid("""
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                scale = 1.0 / args.n_samples_per_prompt
                return raw, [r * scale for r in raw]
        """),
    ]
    INVALID = [
        Invalid(_POST.format(rows="r.view(-1, args.n_samples_per_prompt)"), line=5, col=11),
        Invalid(_POST.format(rows="r.reshape(len(samples) // args.n_samples_per_prompt, "
                             "args.n_samples_per_prompt)"), line=5, col=11),
        # Through a local name and vime's config reader, with torch.reshape.
        Invalid("""
            import torch
            from vime.config import arg
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                n = arg(args, 'n_samples_per_prompt')
                rows = torch.reshape(torch.tensor(raw), (-1, n))
                return raw, (rows - rows.mean(-1, keepdim=True)).flatten().tolist()
        """, line=6, col=11),
        # Chunks by range stepping, in a helper the hook calls.
        Invalid("""
            def _normalise(raw, n):
                out = []
                for i in range(0, len(raw), n):
                    row = raw[i:i + n]
                    out += [x - sum(row) / len(row) for x in row]
                return out
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                return raw, _normalise(raw, args.n_samples_per_prompt)
        """, line=3, col=13),
        # A class hook: the self method it gives the group size; __call__ itself through
        # self.args; a comprehension stepping by a local alias; numpy under another name.
        Invalid("""
            class Post:
                def __call__(self, args, samples):
                    raw = [s.get_reward_value(args) for s in samples]
                    return raw, self._norm(raw, args.n_samples_per_prompt)
                def _norm(self, raw, n):
                    out = []
                    for i in range(0, len(raw), n):
                        row = raw[i:i + n]
                        out += [x - sum(row) / len(row) for x in row]
                    return out
            reward_post_process = Post()
        """, line=7, col=17),
        Invalid("""
            import torch
            class Post:
                def __call__(self, args, samples):
                    raw = [s.get_reward_value(args) for s in samples]
                    rows = torch.tensor(raw).view(-1, self.args.n_samples_per_prompt)
                    return raw, rows.flatten().tolist()
            reward_post_process = Post()
        """, line=5, col=15),
        Invalid("""
            def reward_post_process(args, samples):
                raw = [s.get_reward_value(args) for s in samples]
                n = args.n_samples_per_prompt
                rows = [raw[i:i + n] for i in range(0, len(raw), n)]
                return raw, [x - sum(r) / len(r) for r in rows for x in r]
        """, line=4, col=34),
        Invalid("""
            import numpy as xp
            def reward_post_process(args, samples):
                raw = xp.array([s.get_reward_value(args) for s in samples])
                rows = xp.split(raw, len(raw) // args.n_samples_per_prompt)
                return raw.tolist(), xp.concatenate([r - r.mean() for r in rows]).tolist()
        """, line=4, col=11),
        # An advantage hook that splits the rewards by getattr's group size.
        Invalid("""
            import torch
            def adv(args, rollout_data):
                g = getattr(args, 'n_samples_per_prompt', 1)
                rows = torch.tensor(rollout_data['rewards']).split(g)
                rollout_data['advantages'] = [r - r.mean() for r in rows]
        """, line=4, col=11, options={"hooks": {"adv": "custom_advantage_function_path"}}),
    ]

    def _size(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """``e`` is (or is computed from) ``n_samples_per_prompt``."""
        if depth > 4:
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value == _GROUP_SIZE
        if isinstance(e, cst.Call):
            names = self.qualified(e.func)
            reader = "builtins.getattr" in names or any(
                n.startswith("vime.") and n.endswith(".arg") for n in names)
            if reader and len(e.args) >= 2:
                v = e.args[1].value
                return isinstance(v, cst.SimpleString) and v.evaluated_value == _GROUP_SIZE
            if "builtins.int" in names and len(e.args) == 1:
                return self._size(e.args[0].value, fn, depth + 1)
            return False
        if isinstance(e, cst.BinaryOperation):
            return self._size(e.left, fn, depth + 1) or self._size(e.right, fn, depth + 1)
        if isinstance(e, cst.UnaryOperation):
            return self._size(e.expression, fn, depth + 1)
        if isinstance(e, cst.Tuple | cst.List):
            return any(self._size(el.value, fn, depth + 1) for el in e.elements)
        if isinstance(e, cst.Name):
            values = self.context.semantic.facts(fn).values.get(e.value, [])
            return any(v is not None and self._size(v, fn, depth + 1) for v in values)
        return False

    def _rows(self, call: cst.Call, fn: cst.FunctionDef) -> str | None:
        """What ``call`` does when it cuts rows of the group size by position."""
        func = call.func
        args = [a.value for a in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _ROW_METHODS \
                and any(self._size(a, fn) for a in args):
            return f".{func.attr.value}(...)"
        names = self.qualified(func)
        if names & _ROW_FUNCTIONS and any(self._size(a, fn) for a in args[1:]):
            return f"{code_of(func)}(...)"
        if "builtins.range" in names and len(args) == 3 and self._size(args[2], fn):
            return "range(..., step)"
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _FLAT_HOOKS:
            return
        hook = node.name.value
        semantic = self.context.semantic
        owner = semantic.owner(node)
        flows = [node]
        for fn in semantic.closure(node, owner):
            if fn is not node:
                flows.append(fn)
        # A helper called with the group size: its parameter stands for it there.
        sized: dict[int, set[str]] = {}
        for fn in flows:
            for site in semantic.facts(fn).calls:
                target = semantic.callee(site.node, fn, owner)
                if target is None or target is fn:
                    continue
                params = [p.name.value for p in (*target.params.posonly_params,
                                                 *target.params.params)]
                if isinstance(site.node.func, cst.Attribute) and params:
                    params = params[1:]   # self.method(...): the first parameter is self
                for i, a in enumerate(site.node.args):
                    if a.keyword is None and not a.star and i < len(params) \
                            and self._size(a.value, fn):
                        sized.setdefault(id(target), set()).add(params[i])
                    elif a.keyword is not None and self._size(a.value, fn):
                        sized.setdefault(id(target), set()).add(a.keyword.value)
        for fn in flows:
            extra = sized.get(id(fn), set())
            for site in semantic.facts(fn).calls:
                call = site.node
                what = self._rows(call, fn) or (self._rows_by(call, extra) if extra else None)
                if what is None:
                    continue
                where = f"`{fn.name.value}`" + ("" if fn is node else f" (called by `{hook}`)")
                self.report(call, self.INVARIANT.render(problem=(
                    f"`{code_of(call)}` in {where} cuts the flat samples into rows of "
                    "n_samples_per_prompt by position: a fan-out rollout's segments or uneven "
                    "groups put samples of different prompts in one row, and the advantages "
                    "from its mean are wrong")))

    def _rows_by(self, call: cst.Call, params: set[str]) -> str | None:
        """``call`` cuts rows by one of ``params`` (a helper's parameter that the hook passes
        the group size to)."""
        def is_param(e: cst.BaseExpression) -> bool:
            return isinstance(e, cst.Name) and e.value in params or (
                isinstance(e, cst.BinaryOperation) and (is_param(e.left) or is_param(e.right)))
        func = call.func
        args = [a.value for a in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _ROW_METHODS \
                and any(is_param(a) for a in args):
            return f".{func.attr.value}(...)"
        names = self.qualified(func)
        if names & _ROW_FUNCTIONS and any(is_param(a) for a in args[1:]):
            return f"{code_of(func)}(...)"
        if "builtins.range" in names and len(args) == 3 and is_param(args[2]):
            return "range(..., step)"
        return None
