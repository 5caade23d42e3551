"""The semantic model (vime_lint.static.analysis) and the rule aliases, beyond the rules'
VALID/INVALID snippets."""

from __future__ import annotations

import libcst as cst
import pytest

from vime_lint.static._engine import file_context, lint_source, select_rules
from vime_lint.static._model import LintOptions, options_from_mapping
from vime_lint.static.analysis import fields_set
from vime_lint.static.rules import ALL_RULES, rules_for_code

pytestmark = pytest.mark.unit


def _context(code: str, hooks: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    ctx, _ = file_context("m.py", cst.parse_module(code),
                          options_from_mapping({"hooks": hooks} if hooks else {}))
    return ctx


def test_qualified_names_follow_imports_aliases_and_module_assignments() -> None:
    code = ("import vime.rollout.base_types as bt\n"
            "from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput\n"
            "from slime.utils.types import Sample\n"
            "Out = bt.RolloutFnTrainOutput\n"
            "class RolloutFnTrainOutput:\n    pass\n"
            "a = bt.RolloutFnTrainOutput\nb = EvalOutput\nc = Out\nd = RolloutFnTrainOutput\n"
            "e = Sample\n")
    ctx = _context(code)
    values = {s.body[0].targets[0].target.value: s.body[0].value  # type: ignore[attr-defined]
              for s in ctx.module.body[-5:]}
    sem = ctx.semantic
    assert sem.refers_to(values["a"], "RolloutFnTrainOutput")
    assert sem.refers_to(values["b"], "RolloutFnEvalOutput")
    assert sem.refers_to(values["c"], "RolloutFnTrainOutput")  # through the module alias
    assert not sem.refers_to(values["d"], "RolloutFnTrainOutput")  # the user's own class
    assert sem.refers_to(values["e"], "Sample")  # slime.* reads as vime.*
    assert sem.imported_as("RolloutFnEvalOutput") == "EvalOutput"


@pytest.mark.parametrize(("code", "via", "n_params", "is_async"), [
    ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n    pass\n",
     "", 4, False),
    ("class R:\n    async def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
     "        pass\ngenerate_rollout = R()\n", "an instance of `R` (its async `__call__`)", 4, True),
    ("generate_rollout = lambda args, rollout_id, data_source, evaluation=False: None\n",
     "a lambda", 4, False),
    ("import functools\ndef _impl(tok, args, rollout_id, data_source, evaluation=False):\n"
     "    pass\ngenerate_rollout = functools.partial(_impl, None)\n",
     "functools.partial of `_impl`", 4, False),
    ("def _impl(args, rollout_id, data_source, evaluation=False):\n    pass\n"
     "generate_rollout = _impl\n", "an alias of `_impl`", 4, False),
    ("def deco(fn):\n    async def wrapper(*a, **k):\n        return fn(*a, **k)\n"
     "    return wrapper\ndef _impl(args, rollout_id, data_source, evaluation=False):\n"
     "    pass\ngenerate_rollout = deco(_impl)\n",
     "decorated by `deco` (vime calls its wrapper `wrapper`, without functools.wraps)", 4, True),
    ("class R:\n    async def run(self, args, rollout_id, data_source, evaluation=False):\n"
     "        pass\ngenerate_rollout = R().run\n", "the method `run` of a `R` instance", 4, True),
    ("class R:\n    def run(self, args, rollout_id, data_source):\n        pass\n"
     "_r = R()\ngenerate_rollout = _r.run\n", "the method `run` of a `R` instance", 3, False),
])
def test_hook_targets_for_every_binding_form(code: str, via: str, n_params: int,
                                             is_async: bool) -> None:
    ctx = _context(code, {"generate_rollout": "rollout_function_path"})
    target = ctx.semantic.target("generate_rollout")
    assert target is not None and target.function is not None
    assert (target.via, len(target.params), target.is_async) == (via, n_params, is_async)
    assert ctx.hook_target(target.function) is not None  # rules see it as the hook's code


def test_a_conventional_name_the_module_uses_is_a_helper_not_a_hook() -> None:
    code = ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n    pass\n"
            "def main(args):\n    return generate_rollout(args, 0, None)\n")
    assert "generate_rollout" not in _context(code).hooks
    # Mentioned only in a string or a docstring: still a hook (no text matching).
    code = ('"""Call generate_rollout(args, ...) from the manager."""\n'
            "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n    pass\n")
    assert "generate_rollout" in _context(code).hooks


def test_facts_are_computed_once_per_function() -> None:
    ctx = _context("def f(x):\n    y = x\n    return y\n")
    fn = ctx.semantic.definitions["f"]
    assert isinstance(fn, cst.FunctionDef)
    assert ctx.semantic.facts(fn) is ctx.semantic.facts(fn)
    assert [r.value for r in ctx.semantic.facts(fn).returns][0] is not None


STALE = "def f(sample):\n    return sample.truncated{noqa}\n"


def test_old_codes_are_aliases_in_noqa_select_ignore_and_rule() -> None:
    rules = list(ALL_RULES)
    found = lint_source(STALE.format(noqa=""), "m.py", LintOptions(), rules=rules).findings
    assert [f.code for f in found] == ["VIM032"]
    for noqa in ("  # noqa: VIM032", "  # noqa: VIM007"):
        res = lint_source(STALE.format(noqa=noqa), "m.py", LintOptions(), rules=rules)
        assert res.findings == (), res.findings  # silenced, and the noqa counts as used
    assert "VIM032" not in {r.code() for r in select_rules(ALL_RULES, ("VIM",), ("VIM007",))}
    assert "VIM032" in {r.code() for r in select_rules(ALL_RULES, ("VIM007",))}
    assert {r.code() for r in rules_for_code("VIM007")} == {"VIM007", "VIM032", "VIM033"}
    assert {r.code() for r in rules_for_code("VIM019")} == {"VIM019", "VIM034", "VIM035"}


def test_function_facts_hold_what_the_rules_used_to_walk_for() -> None:
    code = ("def f(sample, out):\n"
            "    while True:\n"
            "        for t in range(3):\n"
            "            reason = out['finish_reason']\n"
            "            sample.status = STATUS[reason]\n"
            "            payload = {'max_tokens': 8}\n"
            "        ids += await post(payload)\n"
            "    key = lambda s: s.reward\n"
            "    def inner(data_source):\n"
            "        return data_source\n"
            "    return 'done'\n")
    ctx = _context(code)
    fn = ctx.module.body[0]
    assert isinstance(fn, cst.FunctionDef)
    sem = ctx.semantic
    facts = sem.facts(fn)
    assert [(type(n).__name__, d) for n, d in facts.statement_loops] == [("While", 0), ("For", 1)]
    assert list(facts.subscripts) == ["finish_reason"]
    assert "status" in facts.attributes and "reward" not in facts.attributes  # lambda body
    assert {"finish_reason", "max_tokens", "done"} <= facts.strings
    assert [type(stmt).__name__ for _, _, stmt in facts.bindings] == [
        "Assign", "Assign", "Assign", "AugAssign", "Assign"]
    assert len(facts.awaits) == 1 and len(facts.dict_elements) == 1 and len(facts.lambdas) == 1
    # calls and reads in source order, for "the first read" reports
    order = facts.order
    sub = facts.subscripts["finish_reason"][0][0]
    call = next(s.node for s in facts.calls if s.node.func.value == "post")  # type: ignore[union-attr]
    assert order[id(sub)] < order[id(call)]
    # one loop's facts: what it binds, without the loop around it
    loop = facts.statement_loops[1][0]
    assert {t.value for t, _, _ in sem.block(loop).bindings  # type: ignore[attr-defined]
            if isinstance(t, cst.Name)} == {"reason", "payload"}
    # names spelled anywhere in a function, nested scopes included (the rename fix asks)
    assert sem.mentions(fn, "data_source") and sem.mentions(fn, "reward")
    assert not sem.mentions(fn, "rollout_id")


def test_stores_calls_and_returns_know_their_evaluation_side() -> None:
    code = ("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    s = data_source.get_samples(1)[0][0]\n"
            "    if evaluation:\n"
            "        s.reward = 1.0\n"
            "        score_eval(s)\n"
            "    elif other:\n"
            "        s.status = 1\n"
            "    if not evaluation: s.tokens = [1]\n"
            "    else: setattr(s, 'response_length', 1)\n"
            "    if evaluation is True:\n"
            "        return eval_out(s)\n"
            "    s.metadata['x'] = 1\n"
            "    s.label = 'y'\n"
            "    return train_out(s)\n"
            "def helper(s):\n"
            "    s.reward = 0.0\n")
    ctx = _context(code)
    fn = ctx.module.body[0]
    assert isinstance(fn, cst.FunctionDef)
    sem = ctx.semantic
    facts = sem.facts(fn)
    assert [(st.attr, st.side) for st in facts.attr_stores] == [
        ("reward", "eval"), ("status", "train"), ("tokens", "train"),
        ("response_length", "eval"), ("label", "train")]
    calls = {c.node.func.value: c.side for c in facts.calls  # type: ignore[union-attr]
             if isinstance(c.node.func, cst.Name)}
    assert calls["score_eval"] == "eval" and calls["eval_out"] == "eval"
    assert calls["train_out"] == "train"
    assert [r.side for r in facts.returns] == ["eval", "train"]
    # without an `if evaluation:` branch every statement is on both sides (None)
    helper = ctx.module.body[1]
    assert isinstance(helper, cst.FunctionDef)
    assert [st.side for st in sem.facts(helper).attr_stores] == [None]


def test_a_field_set_only_for_evaluation_does_not_count_for_the_train_output() -> None:
    code = ("from vime.rollout.base_types import RolloutFnTrainOutput\n"
            "def _score(s):\n    s.reward = 1.0\n"
            "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
            "    groups = data_source.get_samples(2)\n"
            "    for g in groups:\n        for s in g:\n"
            "            s.append_response_tokens(args, tokens=[1], log_probs=[-0.1], "
            "meta_info={'finish_reason': 'stop'})\n"
            "            if evaluation:\n                _score(s)\n"
            "    return RolloutFnTrainOutput(samples=groups)\n")
    ctx = _context(code)
    fn = ctx.module.body[2]
    assert isinstance(fn, cst.FunctionDef)
    sem = ctx.semantic
    train = fields_set(sem, sem.closure(fn, side="train"), None, side="train")
    evaluation = fields_set(sem, sem.closure(fn, side="eval"), None, side="eval")
    both = fields_set(sem, sem.closure(fn), None)
    assert "reward" not in train.fields and "reward" in evaluation.fields
    assert "reward" in both.fields and [f.name.value for f in sem.closure(fn, side="train")] == [
        "generate_rollout"]
    found = [f for f in lint_source(code, "m.py", LintOptions(),
                                    rules=rules_for_code("VIM036")).findings
             if f.code == "VIM036"]
    assert len(found) == 1 and found[0].line == 11, found
    message = found[0].message
    assert "without `reward` ever being set on the train path (evaluation=False)" in message
    assert "`reward` is set only under `if evaluation:`, which never reaches the train output" \
        in message
    assert found[0].fix_hint is not None and "outside `if evaluation:`" in found[0].fix_hint


def test_instance_class_follows_self_into_a_nested_callback() -> None:
    code = ("class Worker:\n    def __init__(self, data_buffer):\n"
            "        self.data_buffer = data_buffer\n"
            "    def done_cb(self):\n        def _cb(task):\n"
            "            return self\n        return _cb\n")
    ctx = _context(code)
    cls = ctx.module.body[0]
    assert isinstance(cls, cst.ClassDef)
    method = ctx.semantic.facts(cls.body.body[1]).fn  # type: ignore[arg-type]
    assert isinstance(method, cst.FunctionDef)
    cb = ctx.semantic.facts(method).nested["_cb"]
    self_name = cst.Name("self")
    assert ctx.semantic.instance_class(self_name, cb, cls) is None  # not bound in _cb itself
    assert ctx.semantic.instance_class(self_name, cb, cls, [method, cb]) is cls


def test_upstream_packages_slime_and_miles_read_as_vime() -> None:
    ctx = _context("from miles.utils.types import Sample as MS\nimport miles.rollout.base_types as mb\n"
                   "from milestones import Sample\na = MS\nb = mb.RolloutFnTrainOutput\nc = Sample\n")
    a, b, c = (s.body[0].value for s in ctx.module.body[-3:])  # type: ignore[attr-defined]
    sem = ctx.semantic
    assert sem.refers_to(a, "Sample")
    assert sem.refers_to(b, "RolloutFnTrainOutput")
    assert not sem.refers_to(c, "Sample")  # another package whose name starts with "miles"
    assert sem.imported_as("Sample") == "MS"


def _written(code: str, fn: str, name: str) -> bool:
    """Whether the object ``name`` holds in function ``fn`` (its first ``name``) is written."""
    ctx = _context(code)
    target = next(s for s in ctx.module.body if isinstance(s, cst.FunctionDef)
                  and s.name.value == fn)
    found: list[cst.Name] = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and not found:
                found.append(node)

    target.body.visit(_Find())
    return ctx.semantic.writes.object_written(found[0])


@pytest.mark.parametrize(("code", "written"), [
    # Written in place in its own scope.
    ("def f():\n    d = {}\n    d['k'] = 1\n", True),
    ("def f():\n    d = {}\n    d.update(k=1)\n", True),
    ("def f():\n    d = []\n    d += [1]\n", True),
    # Another function's `d` is another object.
    ("def f():\n    d = {}\n    return d\ndef g(d):\n    d['k'] = 1\n", False),
    # An alias, either way round.
    ("def f():\n    d = {}\n    e = d\n    e.pop('k', None)\n", True),
    ("def f(src):\n    d = src\n    src.clear()\n", True),
    # A helper of the module that writes the parameter it is given (position or keyword),
    # through another helper.
    ("def f():\n    d = {}\n    mark(d)\ndef mark(x):\n    x.setdefault('k', 1)\n", True),
    ("def f():\n    d = {}\n    outer(k=1, into=d)\ndef outer(k, into):\n    inner(into)\n"
     "def inner(y):\n    y['k'] = 1\n", True),
    # ... a helper that only reads it, and a local function of another name.
    ("def f():\n    d = {}\n    show(d)\ndef show(x):\n    print(x)\n", False),
    ("def f():\n    d = {}\n    def mark(x):\n        x['k'] = 1\n    return d\n"
     "def mark(x):\n    pass\n", False),
    # A module-level object written by another function.
    ("T = {}\ndef f():\n    return T\ndef g():\n    T['k'] = 1\n", True),
])
def test_in_place_writes_follow_variables_aliases_and_helpers(code: str, written: bool) -> None:
    assert _written(code, "f", "d" if "T =" not in code else "T") is written


def test_upstream_sglang_rollout_reads_as_vimes_vllm_rollout() -> None:
    ctx = _context("from miles.rollout.sglang_rollout import generate as g\n"
                   "import slime.rollout.sglang_rollout as sr\na = g\nb = sr.generate_rollout\n")
    a, b = (s.body[0].value for s in ctx.module.body[-2:])  # type: ignore[attr-defined]
    assert "vime.rollout.vllm_rollout.generate" in ctx.semantic.qualified(a)
    assert "vime.rollout.vllm_rollout.generate_rollout" in ctx.semantic.qualified(b)


@pytest.mark.parametrize("code", [
    "import asyncio as aio\nx = 1\n\ndef f(a, *, b=x):\n    y = [a for a in range(b)]\n"
    "    del y\n    return aio.run(g(a))\n",
    "class C:\n    k: int = 0\n    def m(self):\n        global z\n        z = self.k\n"
    "        return lambda q: (q, z)\n",
    "",
])
def test_resolve_scopes_is_libcsts_resolution_without_its_idle_walks(code: str) -> None:
    from libcst.metadata import ExpressionContextProvider, MetadataWrapper

    from vime_lint.static.analysis._scopes import LinearScopeProvider, resolve_scopes

    module = cst.parse_module(code)
    stock = MetadataWrapper(module, unsafe_skip_copy=True)
    fast = MetadataWrapper(module, unsafe_skip_copy=True)
    want = stock.resolve(LinearScopeProvider)
    got = resolve_scopes(fast)
    assert set(got) == set(want)
    assert {id(n): type(s).__name__ for n, s in got.items()} == \
        {id(n): type(s).__name__ for n, s in want.items()}
    assert dict(fast.resolve(ExpressionContextProvider)) == \
        dict(stock.resolve(ExpressionContextProvider))
    assert fast.resolve(LinearScopeProvider) is got      # stored as resolve stores it
    assert resolve_scopes(fast) is got
    name_reads = lambda scopes: sorted(   # noqa: E731
        (n.value, len(s.accesses[n.value]), len(s.assignments[n.value]))
        for n, s in scopes.items() if isinstance(n, cst.Name) and s is not None)
    assert name_reads(got) == name_reads(want)


def test_a_static_method_or_an_unknown_object_s_method_is_no_hook_target() -> None:
    code = ("class R:\n    @staticmethod\n    def run(args, rollout_id, data_source):\n"
            "        pass\na = R().run\nb = make().run\nc = R().missing\n")
    sem = _context(code).semantic
    assert [sem.target(n) for n in ("a", "b", "c")] == [None, None, None]


def test_origins_follow_the_coroutine_asyncio_run_runs() -> None:
    code = ("import asyncio\nfrom vime.utils.async_utils import run as drive\n"
            "async def _go():\n    return [1]\n"
            "def f():\n    return asyncio.run(_go())\n"
            "def g():\n    return drive(_go())\n"
            "def h():\n    return other.run(_go())\n")
    ctx = _context(code)
    sem = ctx.semantic
    fns = {d.name.value: d for d in ctx.module.body if isinstance(d, cst.FunctionDef)}
    for name in ("f", "g"):
        ret = sem.facts(fns[name]).returns[0].value
        leaves = [leaf for leaf, _ in sem.origins(fns[name], ret)]
        assert len(leaves) == 1 and isinstance(leaves[0], cst.List), name
    ret = sem.facts(fns["h"]).returns[0].value
    assert [leaf for leaf, _ in sem.origins(fns["h"], ret)] == [ret]   # not asyncio's run


def test_coroutine_callee_knows_a_module_instance_s_async_method_and_a_local_alias() -> None:
    code = ("class J:\n    async def score(self):\n        pass\n    def sync(self):\n"
            "        pass\njudge = J()\nasync def _fetch():\n    pass\n"
            "async def f():\n    judge.score()\n    judge.sync()\n    a = _fetch\n    a()\n"
            "    b = len\n    b([])\n")
    ctx = _context(code)
    sem = ctx.semantic
    fn = next(d for d in ctx.module.body if isinstance(d, cst.FunctionDef) and d.name.value == "f")
    calls = [site.node for site in sem.facts(fn).calls]
    got = [sem.coroutine_callee(c, fn, None, frozenset()) for c in calls]
    assert got == ["judge.score", None, "_fetch", None]
