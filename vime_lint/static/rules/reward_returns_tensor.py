"""VIM024: a reward is a Python number, not a tensor, an array or a string: what a
``--custom-rm-path`` function returns (through
:func:`~vime_lint.static.rules._reward_rule.reward_leaves`), and what a rollout or custom
generate function stores in ``sample.reward``."""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.analysis import sample_names
from vime_lint.static.rules._reward_rule import (
    EVAL_FN,
    GENERATE,
    STR_CALLS,
    RewardRule,
    reward_leaves,
    short,
    via,
)
from vime_lint.static.rules._signature_checks import ROLLOUT_DESTS

__all__ = ["RewardReturnsTensor"]


_TORCH_PLAIN = ("torch.is_", "torch.get_", "torch.set_", "torch.cuda.", "torch.distributed.",
                "torch.backends.", "torch.utils.", "torch.numel", "torch.equal",
                "torch.allclose", "torch.no_grad", "torch.inference_mode", "torch.device",
                "torch.manual_seed", "torch.load", "torch.save", "torch.compile")
#: numpy callables that always build an array.
_NUMPY_ARRAYS = frozenset(f"numpy.{n}" for n in (
    "array", "asarray", "asanyarray", "zeros", "ones", "full", "empty", "arange", "linspace",
    "stack", "concatenate", "vstack", "hstack", "zeros_like", "ones_like", "full_like",
    "atleast_1d", "eye", "identity"))
#: numpy scalar types that are not Python numbers (``numpy.float64`` is a float subclass).
_NUMPY_SCALARS = frozenset(f"numpy.{n}" for n in (
    "float16", "float32", "half", "single", "longdouble", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "int_", "intc", "intp", "longlong", "bool_"))
#: Tensor methods whose result is a tensor again.
_TENSOR_METHODS = frozenset({
    "sum", "mean", "max", "min", "amax", "amin", "std", "var", "prod", "norm", "median",
    "float", "double", "half", "cpu", "cuda", "to", "detach", "clone", "squeeze", "unsqueeze",
    "reshape", "view", "flatten", "abs", "exp", "log", "sigmoid", "softmax", "clamp", "clip",
    "round", "sqrt", "neg", "mul", "add", "sub", "div", "pow", "contiguous", "type_as",
})
#: ndarray methods whose result is an array again (reductions give numpy scalars: left out).
_ARRAY_METHODS = frozenset({"astype", "reshape", "flatten", "ravel", "copy", "squeeze",
                            "transpose", "clip"})
_TENSOR = "a torch tensor"
_ARRAY = "a numpy array"
_JAX = "a jax array"


class RewardReturnsTensor(RewardRule):
    """A reward is a Python number, not a tensor, an array or a string.

    ## What it does
    Follows every value a ``--custom-rm-path`` function can return (as VIM023 does, and the
    values of a returned dict) and reports a torch tensor (a ``torch.*`` call, a tensor
    method such as ``t.sum()``, indexing or arithmetic on a tensor), a numpy array
    (``np.array(...)``, ``np.zeros(...)``, arithmetic on one), a numpy scalar type other than
    ``float64`` (``np.float32(x)``, ``np.int64(x)``) or any ``jax.numpy`` result, resolving
    ``import numpy as np`` and ``from torch import tensor as T`` by qualified name. ``.item()``,
    ``.tolist()``, ``float(...)`` end the tracking. numpy reductions (``np.mean(xs)``,
    ``arr.sum()``) are left alone: on float data they give ``numpy.float64``, a ``float``
    subclass that the runtime tolerates. A returned string (a literal, an f-string,
    ``str(...)``, ``"...".format(...)``) is reported too (the values of a returned dict are
    not: only the ``--reward-key`` one is read).

    The same values stored as a sample's reward by a rollout function
    (``--rollout-function-path``, ``--eval-function-path``) or a
    ``--custom-generate-function-path`` function, and the module's helpers they call, are
    reported: ``sample.reward = ...``, ``setattr(sample, "reward", ...)`` and
    ``Sample(reward=...)``, on a name that holds a sample (the generate function's sample
    parameter, a sample of ``get_samples(...)``, a ``Sample(...)``). A store only on the eval
    path (under ``if evaluation:``, a helper called only there, an eval function) is a
    warning: the eval output's samples are not converted to training data. Runtime twins:
    VIM122 (tensors, arrays), VIM110 (strings).

    ## Why is this bad?
    A tensor reward fails ``float()`` once it holds more than one element ("only one element
    tensors can be converted to Python scalars", shibing624/MedicalGPT#120), keeps GPU memory
    alive across Ray and compares as a tensor in filters; numpy scalars other than float64
    are not Python numbers and break ``json.dumps`` of dumps and metrics; a string cannot be
    normalised (the always-on reward check fails the step) (failure kind: "tensor reward").

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        scores = torch.tensor([judge(sample), fmt(sample)])
        return scores.mean()

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        for group in groups:
            for s in group:
                s.reward = str(judge(s))
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        scores = torch.tensor([judge(sample), fmt(sample)])
        return scores.mean().item()

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        for group in groups:
            for s in group:
                s.reward = float(judge(s))
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Known problems
    An element taken out of a list (``scores = [torch.tensor(x) ...]; return scores[0]``) is
    not followed: the list's elements are not tracked through subscripts.

    ## Fix safety
    No fix: ``float(x)`` fails on a tensor of several elements, which the author must reduce,
    and on a string that is not a number.
    """

    INVARIANT = INVARIANTS["VIM024"]
    VALID = [
        Valid("""
            import torch
            async def reward_func(args, sample, **kwargs):
                t = torch.tensor([1.0, 0.0])
                return t.mean().item()
        """),
        Valid("""
            import numpy as np
            async def reward_func(args, sample, **kwargs):
                return float(np.mean([1.0, 0.0]))
        """),
        Valid("""
            import numpy as np
            async def reward_func(args, sample, **kwargs):
                scores = np.array([1.0, 0.0])
                return np.float64(scores.mean())
        """),
        Valid("""
            import numpy as np
            async def reward_func(args, sample, **kwargs):
                return np.mean([1.0, 0.0])
        """),
        Valid("""
            import torch
            def features(x):
                return torch.tensor(x)
            async def reward_func(args, sample, **kwargs):
                return {'score': float(features([1.0]).sum())}
        """),
        # A dict reward with text beside the --reward-key value; a parsed number.
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return {'score': 1.0, 'pred': str(sample.response)}
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                text = str(sample.response).strip()
                return float(text)
        """),
        # Rollout stores: floats, .item() of a tensor, an unknown value, a dict.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            import torch
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        t = torch.tensor([1.0, 0.5])
                        s.reward = t.mean().item()
                        s.reward = float(str(s.response) == s.label)
                        s.reward = score(s)
                        s.reward = {'score': 1.0, 'pred': 'x'}
                return RolloutFnTrainOutput(samples=groups)
        """),
        # ... the instance's own attribute, and an object that is not a sample.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            import torch
            from my_env import Env
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    self.reward = torch.tensor(0.0)
                    step = Env().step()
                    step.reward = 'done'
                    return RolloutFnTrainOutput(samples=data_source.get_samples(2))
            generate_rollout = Rollout()
        """),
        # A class reward whose self method gives a tensor it takes .item() of.
        Valid("""
            import torch
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return self._score(sample).item()
                def _score(self, sample):
                    return torch.tensor(1.0)
            reward_func = Judge()
        """),
        # A custom generate function that stores a float.
        Valid("""
            async def generate(args, sample, sampling_params):
                out = await post(URL, {})
                sample.reward = float(out['score'])
                return sample
        """),
    ]
    INVALID = [
        Invalid("""
            import torch
            async def reward_func(args, sample, **kwargs):
                return torch.tensor(1.0 if sample.label else 0.0)
        """, line=3, col=11),
        Invalid("""
            from torch import as_tensor as T
            async def reward_func(args, sample, **kwargs):
                scores = T([1.0, 0.5])
                return scores.sum()
        """, line=4, col=11),
        Invalid("""
            import numpy
            async def reward_func(args, sample, **kwargs):
                return numpy.float32(0.5)
        """, line=3, col=11),
        Invalid("""
            import numpy as np
            def score(response):
                return np.array([len(response)]) / 10
            async def reward_func(args, sample, **kwargs):
                return score(sample.response)
        """, line=3, col=11),
        Invalid("""
            import torch.nn.functional as F
            import torch
            async def reward_func(args, sample, **kwargs):
                return {'score': F.sigmoid(torch.zeros(1))[0]}
        """, line=4, col=21),
        Invalid("""
            import jax.numpy as jnp
            async def batched_reward_func(args, samples, **kw):
                return [jnp.mean(jnp.ones(2)) for s in samples]
        """, line=3, col=12),
        # A class reward returning its self method's tensor; a nested helper's tensor; a
        # class generate hook storing a tensor.
        Invalid("""
            import torch
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return self._score(sample)
                def _score(self, sample):
                    return torch.tensor(1.0)
            reward_func = Judge()
        """, line=6, col=15),
        Invalid("""
            import torch
            async def reward_func(args, sample, **kwargs):
                def inner():
                    return torch.tensor(1.0)
                return inner()
        """, line=4, col=15),
        Invalid("""
            import torch
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample.reward = torch.sigmoid(torch.zeros(1))
                    return sample
            generate = Gen()
        """, line=4, col=24),
        # A reward function returning text: a literal, str(...) through a name.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                if sample.response == sample.label:
                    return '1'
                return 0.0
        """, line=3, col=15),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                score = str(len(sample.response) > 3)
                return score
        """, line=2, col=12),
        # A rollout function storing a tensor on each sample.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            import torch
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        s.reward = torch.tensor(1.0)
                return RolloutFnTrainOutput(samples=groups)
        """, line=8, col=23),
        # ... the mean of a tensor (still a tensor).
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            import torch
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        score_tensor = torch.tensor([1.0, 0.5])
                        s.reward = score_tensor.mean()
                return RolloutFnTrainOutput(samples=groups)
        """, line=9, col=23),
        # ... a string literal on a sample it builds.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = []
                for p in ['a', 'b']:
                    s = Sample(prompt=p)
                    s.reward = '1'
                    out.append([s])
                return RolloutFnTrainOutput(samples=out)
        """, line=7, col=19),
        # ... str(...) in a helper of the module given the sample.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def _finish(sample, score):
                sample.reward = str(score)
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        _finish(s, 1.0)
                return RolloutFnTrainOutput(samples=groups)
        """, line=4, col=20),
        # ... a Sample(...) keyword.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                s = Sample(prompt='p', reward=f'{1.0}')
                return RolloutFnTrainOutput(samples=[[s]])
        """, line=4, col=34),
        # ... an f-string only on the eval path: a warning.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        if evaluation:
                            s.reward = f'{s.label}'
                return RolloutFnTrainOutput(samples=groups)
        """, line=8, col=27, severity="warning"),
        # ... an --eval-function-path function: a warning.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def my_eval(args, rollout_id, data_source, evaluation=True):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        setattr(s, 'reward', str(s.label))
                return groups
        """, line=7, col=33, severity="warning", options={"hooks": {"my_eval": EVAL_FN}}),
        # A custom generate function storing a tensor, its sample parameter renamed.
        Invalid("""
            import torch
            async def my_generate(args, smp, sampling_params):
                logits = torch.zeros(2)
                smp.reward = torch.sigmoid(logits)[0]
                return smp
        """, line=4, col=17, options={"hooks": {"my_generate": GENERATE}}),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: Stored values already reported (a helper reached from two hooks reports once).
        self._reported: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is not None and (binding.spec.dest in ROLLOUT_DESTS
                                    or binding.spec.dest == GENERATE):
            self._stores(node, binding)

    def _name_kind(self, e: cst.Name, fn: cst.FunctionDef, depth: int) -> str | None:
        bound = self.context.semantic.facts(fn).values.get(e.value)
        if not bound or any(v is None for v in bound):
            return None
        kinds = {self._array(v, fn, depth + 1) for v in bound if v is not None}
        return kinds.pop() if len(kinds) == 1 else None

    def _call_kind(self, e: cst.Call, fn: cst.FunctionDef, depth: int) -> str | None:
        func = e.func
        if isinstance(func, cst.Attribute):
            receiver = self._array(func.value, fn, depth + 1)
            method = func.attr.value
            if receiver == _TENSOR:
                return _ARRAY if method == "numpy" else (
                    _TENSOR if method in _TENSOR_METHODS else None)
            if receiver == _ARRAY:
                return _ARRAY if method in _ARRAY_METHODS else None
            if receiver == _JAX:
                return None if method in ("item", "tolist") else _JAX
        for name in self.qualified(func):
            if name.startswith("torch.") and not name.startswith(_TORCH_PLAIN):
                return _TENSOR
            if name.startswith("jax.numpy."):
                return _JAX
            if name in _NUMPY_ARRAYS:
                return _ARRAY
            if name in _NUMPY_SCALARS:
                return f"a {name} scalar"
        return None

    def _array(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> str | None:
        """What torch/numpy/jax value ``e`` is (None: a Python value or unknown)."""
        if depth > 8:
            return None
        if isinstance(e, cst.Name):
            return self._name_kind(e, fn, depth)
        if isinstance(e, cst.Call):
            return self._call_kind(e, fn, depth)
        if isinstance(e, cst.Subscript):
            kind = self._array(e.value, fn, depth + 1)
            if kind == _ARRAY:
                return _ARRAY if any(isinstance(s.slice, cst.Slice) for s in e.slice) else None
            return kind if kind in (_TENSOR, _JAX) else None
        if isinstance(e, cst.BinaryOperation):
            kinds = {self._array(e.left, fn, depth + 1), self._array(e.right, fn, depth + 1)}
            for kind in (_TENSOR, _JAX, _ARRAY):
                if kind in kinds:
                    return kind
            return None
        if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            kind = self._array(e.expression, fn, depth + 1)
            return kind if kind in (_TENSOR, _JAX, _ARRAY) else None
        if isinstance(e, cst.Attribute) and e.attr.value in ("T", "data", "mT"):
            kind = self._array(e.value, fn, depth + 1)
            return kind if kind in (_TENSOR, _JAX, _ARRAY) else None
        return None

    def _text(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """True when ``e`` is certainly a string: a literal, an f-string, ``str(...)``/
        ``repr(...)``, ``"...".format(...)``/``.join(...)``, ``"..." % x``, or a local name
        every binding of which is one."""
        if depth > 8:
            return False
        if isinstance(e, _STRINGS):
            return True
        if isinstance(e, cst.Call):
            func = e.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, _STRINGS):
                return func.attr.value in ("format", "join")
            return bool(self.qualified(func) & STR_CALLS - {"builtins.type"})
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Modulo):
            return isinstance(e.left, _STRINGS)
        if isinstance(e, cst.Name):
            bound = self.context.semantic.facts(fn).values.get(e.value) or []
            return bool(bound) and all(v is not None and self._text(v, fn, depth + 1)
                                       for v in bound)
        return False

    def _not_number(self, value: cst.BaseExpression, fn: cst.FunctionDef) -> str | None:
        """What ``value`` certainly is when it is no Python number, else None."""
        array = self._array(value, fn)
        if array is not None:
            return array
        return "a string" if self._text(value, fn) else None

    def reward(self, fn: cst.FunctionDef, binding: HookBinding) -> None:
        for leaf in reward_leaves(fn, binding, self.context):
            values = [leaf.value]
            if isinstance(leaf.value, cst.Dict):
                values = [el.value for el in leaf.value.elements
                          if isinstance(el, cst.DictElement)]
            for value in values:
                what = self._array(value, leaf.fn)
                if what is None and value is leaf.value and self._text(value, leaf.fn):
                    self.report(value, self.INVARIANT.render(
                        hook="reward function", name=binding.function, does="returns",
                        what="a string" + via(leaf), code=short(value)),
                        fix_hint=_TEXT_FIX.format(verb="return"))
                elif what is not None:
                    self.report(value, self.INVARIANT.render(
                        hook="reward function", name=binding.function, does="returns",
                        what=what + via(leaf), code=short(value)))

    def _stores(self, node: cst.FunctionDef, binding: HookBinding) -> None:
        """Rewards a rollout or custom generate function (and its helpers) stores on samples."""
        sem = self.context.semantic
        dest = binding.spec.dest
        closure = sem.closure(node, self.owner)
        train = {id(f) for f in sem.closure(node, self.owner, side="train")}
        own: frozenset[str] = frozenset()
        if dest == GENERATE:
            positional = [p.name.value for p in (*node.params.posonly_params,
                                                 *node.params.params)]
            if self.owner is not None and positional and positional[0] in ("self", "cls"):
                positional = positional[1:]
            at = binding.spec.params.index("sample")
            own = frozenset(positional[at:at + 1])
        hook = "custom generate function" if dest == GENERATE else (
            "eval function" if dest == EVAL_FN else "rollout function")
        for i, fn in enumerate(closure):
            facts = sem.facts(fn)
            held = sample_names(sem, fn) | (own if i == 0 else frozenset())
            stores: list[tuple[cst.BaseExpression, str, bool]] = []
            for store in facts.attr_stores:
                obj = store.obj
                while isinstance(obj, cst.Subscript):
                    obj = obj.value
                if store.attr == "reward" and store.value is not None \
                        and isinstance(obj, cst.Name) and obj.value in held:
                    stores.append((store.value, f"`{short(store.obj, 20)}.reward`",
                                   i == 0 and store.side == "eval"))
            for site in facts.calls:
                if sem.refers_to(site.node.func, "Sample"):
                    stores.extend((a.value, "`Sample(reward=...)`", i == 0 and site.side == "eval")
                                  for a in site.node.args
                                  if a.keyword is not None and a.keyword.value == "reward")
            for value, where, eval_side in stores:
                what = self._not_number(value, fn)
                if what is None or id(value) in self._reported:
                    continue
                self._reported.add(id(value))
                eval_only = dest == EVAL_FN or (dest != GENERATE and (
                    eval_side or id(fn) not in train))
                helper = f" in `{fn.name.value}`" if fn is not node else ""
                note = ("; only on the eval path (`if evaluation:`), whose samples are not "
                        "converted to training data" if eval_only else "")
                self.report(value, self.INVARIANT.render(
                    hook=hook, name=binding.function, does=f"sets {where}{helper} to",
                    what=what, code=short(value)) + note,
                    severity="warning" if eval_only else None,
                    fix_hint=(_TEXT_FIX.format(verb="store") if what == "a string" else
                              "store float(x) (x.item() for a one-element tensor or array)"))


#: String expressions: literals, concatenated literals, f-strings.
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_TEXT_FIX = ("{verb} a number, not a string: compare the parsed answer and {verb} 1.0 / 0.0, "
             "or float(text) for a score the model wrote")
