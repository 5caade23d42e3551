"""VIM028: elements of ``get_samples(...)`` are groups, not Samples: Sample attributes read
or set on a group, found by the group flow of :mod:`vime_lint.static.rules._groups`
(``get_samples`` -> ``for group in groups``).

See ``docs/contract.md`` §3 (nested groups), §7 (``get_samples``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.rules._groups import SAMPLE_ATTRIBUTES, GroupTracker, getattr_read

__all__ = ["GroupUsedAsSample"]


class GroupUsedAsSample(GroupTracker):
    """Elements of ``get_samples(...)`` are groups, not Samples.

    ## What it does
    Follows the semantic model's group value flow: ``data_source.get_samples(...)``,
    ``RolloutFnTrainOutput(...).samples`` (resolved by qualified name, aliases included;
    slime's and miles' read as vime's), ``asyncio.gather`` over ``generate_and_rm_group(...)``
    and the hook parameters the contract's Protocols type ``list[list[Sample]]`` (by position,
    whatever they are called: the sample filter's ``groups``, ``all_groups``, the buffer
    filter's ``buffer``) through local names (also built up with ``+=``, ``.extend`` and
    ``.append`` of groups), ``self`` attributes that only the class's methods set,
    ``await``, slices, filters and comprehensions, helpers and methods of the module that
    return one and their parameters that every call gives one (also through
    ``functools.partial``, ``map`` and ``key=`` callbacks), lambdas (``sorted(groups,
    key=lambda g: ...)``, a name bound to a lambda), to their elements (``for x in ...``,
    ``enumerate``, comprehensions, ``groups[i]``, a callback's parameter) and to
    ``generate_and_rm_group(...)``'s own value (one group), and reports a Sample attribute
    read or set on such an element (``x.reward = ...``,
    ``x.tokens``, ``x.append_response_tokens(...)``, ``getattr(x, "status", None)``), whatever
    the loop variable is called. List methods (``group.append``, ``group.index(...)``) are
    fine, and so is an element rebound to a sample (``(sample,) = sample``). A ``getattr``
    with a default on a known group is reported here, as an error, instead of by VIM013.
    Runtime twin: VIM128.

    ## Why is this bad?
    ``get_samples`` returns ``list[list[Sample]]``: iterating it yields groups. Setting or
    reading a Sample attribute on a group raises ``AttributeError`` at the first rollout
    step; through ``getattr`` with a default it quietly answers the default, so a check such
    as "is it aborted" is always false (radixark/miles#1056; failure kind: "group treated as
    a sample").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        for sample in data_source.get_samples(args.rollout_batch_size):
            sample.reward = 0.0
    ```

    ## Use instead
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        for group in data_source.get_samples(args.rollout_batch_size):
            for sample in group:
                sample.reward = 0.0
    ```

    ## Fix safety
    No fix: the loop needs a second level.
    """

    INVARIANT = INVARIANTS["VIM028"]
    VALID = [
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    groups = data_source.get_samples(4)\n    for group in groups:\n"
              "        for sample in group:\n            sample.reward = 1.0\n"
              "    return groups\n"),
        Valid("from vime.rollout.base_types import iter_samples\ndef f(data_source):\n"
              "    for sample in iter_samples(data_source.get_samples(2)):\n"
              "        sample.reward = 0.0\n"),
        Valid("def f(data_source):\n    for group in data_source.get_samples(2):\n"
              "        group.append(group[0])\n        n = group.index(group[0])\n"),
        Valid("def f(data_source):\n    groups = data_source.get_samples(2)\n"
              "    groups = [s for g in groups for s in g]\n    for s in groups:\n"
              "        s.reward = 1.0\n"),
        Valid("def f(groups):\n    for g in groups:\n        g.reward = 1\n"),
        Valid("def f(data_source):\n    out = [[s for s in g] for g in data_source.get_samples(2)]\n"
              "    return [s.reward for g in out for s in g]\n"),
        # Flattened groups, a pool that also holds a sample, gather over per-sample calls.
        Valid('def f(ds):\n'
              '    flat = []\n'
              '    for g in ds.get_samples(2):\n'
              '        flat.extend(g)\n'
              '    for s in flat:\n'
              '        s.reward = 1.0\n'),
        Valid('def f(ds, extra):\n'
              '    pool = []\n'
              '    pool += ds.get_samples(2)\n'
              '    pool.append(extra)\n'
              '    for s in pool:\n'
              '        s.reward = 1.0\n'),
        Valid('import asyncio\n'
              'from vime.rollout.vllm.sampling import generate_and_rm\n'
              'async def f(args, group, sp):\n'
              '    done = await asyncio.gather(*[generate_and_rm(args, s, sp) for s in group])\n'
              '    return [s.reward for s in done]\n'),
        # A helper called with a group and with groups: its parameter is not known to be either.
        Valid('def _score(items):\n'
              '    return [x.reward for x in items]\n'
              'def f(ds, group):\n'
              '    _score(group)\n'
              '    _score(ds.get_samples(2))\n'),
        # A helper given groups that iterates them twice; a group's samples.
        Valid('def _score(groups):\n'
              '    return [s.reward for g in groups for s in g]\n'
              'def f(ds):\n'
              '    return _score(ds.get_samples(2))\n'),
        Valid('from vime.rollout.vllm.sampling import generate_and_rm_group\n'
              'async def run(args, group, sp):\n'
              '    scored = await generate_and_rm_group(args, group, sp)\n'
              '    return [s.reward for s in scored]\n'),
        # A method the module also calls on another object: its parameter may get anything.
        Valid('class Rollout:\n'
              '    def _fill(self, batch):\n'
              '        for sample in batch:\n'
              "            sample.metadata['k'] = 1\n"
              '    def run(self, ds):\n'
              '        self._fill(ds.get_samples(2))\n'
              'def other(r, samples):\n'
              '    r._fill(samples)\n'),
        # An attribute set to groups here and to samples elsewhere; one set to the flat samples.
        Valid('class Holder:\n'
              '    def load(self, ds):\n'
              '        self.items = ds.get_samples(2)\n'
              '    def tag(self):\n'
              '        for s in self.items:\n'
              '            s.reward = 1\n'
              'def f(h, samples):\n'
              '    h.items = samples\n'),
        Valid('class Rollout:\n'
              '    def load(self, ds):\n'
              '        self.samples = [s for g in ds.get_samples(2) for s in g]\n'
              '    def tag(self):\n'
              '        for s in self.samples:\n'
              '            s.reward = 1.0\n'),
        # A partial that also leaves the function (given other values there).
        Valid('from functools import partial\n'
              'def _tag(batch, key):\n'
              '    for sample in batch:\n'
              "        sample.metadata[key] = 1\n"
              'def generate_rollout(args, rollout_id, data_source, executor, evaluation=False):\n'
              '    groups = data_source.get_samples(4)\n'
              "    tag = partial(_tag, key='k')\n"
              '    tag(groups)\n'
              '    executor.submit(tag, [s for g in groups for s in g])\n'
              '    return groups\n'),
        # Lambdas over the samples of a group; a lambda parameter shadows a group's name.
        Valid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
              '    groups = data_source.get_samples(4)\n'
              '    return [sorted(g, key=lambda s: s.reward) for g in groups]\n'),
        Valid('def generate_rollout(args, rollout_id, data_source, samples, evaluation=False):\n'
              '    for g in data_source.get_samples(4):\n'
              '        pass\n'
              '    return list(map(lambda g: g.reward, samples))\n'),
        # A helper given a group in one call and a sample in another.
        Valid('def _tag(x):\n'
              "    x.metadata['k'] = 1\n"
              'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
              '    for g in data_source.get_samples(4):\n'
              '        _tag(g[0])\n'
              '        _tag(g)\n'),
        # A helper also handed on (to a pool) where the module does not show what it gets.
        Valid('def _tag(sample):\n'
              "    sample.metadata['k'] = 1\n"
              'def generate_rollout(args, rollout_id, data_source, pool, evaluation=False):\n'
              '    groups = data_source.get_samples(4)\n'
              '    for g in groups:\n'
              '        _tag(g)\n'
              '    pool.map(_tag, [s for g in groups for s in g])\n'
              '    return groups\n'),
        # A comprehension target that shadows a group's name of the function.
        Valid('def _score(g):\n'
              '    return g.reward\n'
              'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
              '    groups = data_source.get_samples(4)\n'
              '    for g in groups:\n'
              '        pass\n'
              '    return [_score(g) for grp in groups for g in grp]\n'),
        # A class hook's `__call__`: the contract's positions leave `self` out (`args` is args).
        Valid('class Filter:\n'
              '    def __call__(self, args, groups):\n'
              '        key = args.metadata\n'
              '        for g in groups:\n'
              '            for s in g:\n'
              '                s.remove_sample = key is None\n'
              'rollout_sample_filter = Filter()\n'),
        # A method of a module-level instance bound as the filter, walking the samples.
        Valid("class Filter:\n    def run(self, args, groups):\n        for g in groups:\n"
              "            for s in g:\n                s.remove_sample = True\n"
              "rollout_sample_filter = Filter().run\n"),
    ]
    INVALID = [
        # A method of a module-level instance bound as the filter: `groups` after `self`;
        # the output's samples through a module alias, in a comprehension.
        Invalid("class Filter:\n    def run(self, args, groups):\n        for s in groups:\n"
                "            s.remove_sample = True\nrollout_sample_filter = Filter().run\n",
                line=4, col=12),
        Invalid("import vime.rollout.base_types as bt\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    out = bt.RolloutFnTrainOutput(samples=data_source.get_samples(2))\n"
                "    rewards = [s.reward for s in out.samples]\n    return out\n",
                line=4, col=15),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    for s in data_source.get_samples(args.rollout_batch_size):\n"
                "        s.reward = 0.0\n", line=3, col=8),
        Invalid("def f(args, data_source):\n    groups = data_source.get_samples(8)\n"
                "    batch = groups[:4]\n    for sample in batch:\n"
                "        print(sample.tokens)\n", line=5, col=14),
        Invalid("from vime.rollout.base_types import RolloutFnTrainOutput as Out\n"
                "def f(groups):\n    out = Out(samples=groups)\n"
                "    return [x.response for x in out.samples]\n", line=4, col=12),
        Invalid("def f(ds):\n    for i, g in enumerate(ds.get_samples(2)):\n"
                "        if getattr(g, 'status', None) is None:\n            pass\n",
                line=3, col=11),
        Invalid("def rollout_sample_filter(args, data):\n    for sample in data:\n"
                "        sample.remove_sample = True\n", line=3, col=8),
        Invalid("def f(args, ds):\n    first = ds.get_samples(1)[0]\n"
                "    first.append_response_tokens(args, tokens=[1])\n", line=3, col=4),
        # Built up in place: `groups = []` then `+=` (or `.extend`) of get_samples.
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = []\n'
                '    while len(groups) < args.rollout_batch_size:\n'
                '        groups += data_source.get_samples(1)\n'
                '    for sample in groups:\n'
                "        sample.metadata['seen'] = True\n"
                '    return groups\n',
                line=6, col=8),
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = []\n'
                '    for _ in range(2):\n'
                '        groups.extend(data_source.get_samples(1))\n'
                '    return [s.reward for s in groups]\n',
                line=5, col=12),
        # Passed to a helper of the module (here by keyword): its parameter holds groups.
        Invalid('def _tag(batch, key):\n'
                '    for sample in batch:\n'
                '        sample.metadata[key] = 1\n'
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                "    _tag(key='k', batch=groups)\n"
                '    return groups\n',
                line=3, col=8),
        # Returned by a helper of the module, then indexed.
        Invalid('def _fetch(ds, n):\n'
                '    out = ds.get_samples(n)\n'
                '    return out[:n]\n'
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    todo = _fetch(data_source, 4)\n'
                '    first = todo[0]\n'
                '    first.status = None\n',
                line=7, col=4),
        # asyncio.gather over generate_and_rm_group tasks gives a list of groups.
        Invalid('import asyncio\n'
                'from vime.rollout.vllm.sampling import generate_and_rm_group\n'
                'async def run(args, groups, sp):\n'
                '    tasks = []\n'
                '    for g in groups:\n'
                '        tasks.append(asyncio.create_task(generate_and_rm_group(args, g, sp)))\n'
                '    done = await asyncio.gather(*tasks)\n'
                '    return [x.reward for x in done]\n',
                line=8, col=12),
        # generate_and_rm_group's value is one group.
        Invalid('from vime.rollout.vllm.sampling import generate_and_rm_group\n'
                'async def run(args, group, sp):\n'
                '    scored = await generate_and_rm_group(args, group, sp)\n'
                '    if scored.reward is None:\n'
                '        return None\n'
                '    return scored\n',
                line=4, col=7),
        # A filter comprehension over get_samples, in a rollout class.
        Invalid('class Rollout:\n'
                '    def __init__(self, data_source):\n'
                '        self.data_source = data_source\n'
                '    def __call__(self, args, rollout_id, evaluation=False):\n'
                '        pending = self.data_source.get_samples(2)\n'
                '        picked = [g for g in pending if g]\n'
                '        for s in picked:\n'
                '            s.response_length = 0\n',
                line=8, col=12),
        # An attribute the class's methods set to groups (None first), read in another method.
        Invalid('class Rollout:\n'
                '    def __init__(self, data_source):\n'
                '        self.data_source = data_source\n'
                '        self.groups = None\n'
                '    def __call__(self, args, rollout_id, evaluation=False):\n'
                '        self.groups = self.data_source.get_samples(2)\n'
                '        for s in self.groups:\n'
                '            s.reward = 0.0\n',
                line=8, col=12),
        Invalid('class Rollout:\n'
                '    def __init__(self):\n'
                '        self.pending = []\n'
                '    def fill(self, ds):\n'
                '        self.pending += ds.get_samples(1)\n'
                '    def drain(self):\n'
                '        return [s.response for s in self.pending]\n',
                line=7, col=16),
        # Groups passed to a method (`self._fill`), and returned by one (`self._fetch`).
        Invalid('class Rollout:\n'
                '    def _fill(self, batch, key):\n'
                '        for sample in batch:\n'
                '            sample.metadata[key] = 1\n'
                '    def __call__(self, args, rollout_id, data_source, evaluation=False):\n'
                '        groups = data_source.get_samples(4)\n'
                "        self._fill(groups, 'k')\n"
                '        return groups\n',
                line=4, col=12),
        Invalid('class Rollout:\n'
                '    def _fetch(self, ds):\n'
                '        return ds.get_samples(4)\n'
                '    def run(self, ds):\n'
                '        for s in self._fetch(ds):\n'
                '            s.status = None\n',
                line=6, col=12),
        # Through functools.partial: bound to a name, given to map (each group), returning groups.
        Invalid('import functools\n'
                'def _tag(key, batch):\n'
                '    for sample in batch:\n'
                '        sample.metadata[key] = 1\n'
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                "    tag = functools.partial(_tag, 'k')\n"
                '    tag(groups)\n'
                '    return groups\n',
                line=4, col=8),
        Invalid('from functools import partial\n'
                'def _score(scale, sample):\n'
                '    sample.reward = scale\n'
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                '    list(map(partial(_score, 1.0), groups))\n'
                '    return groups\n',
                line=3, col=4),
        Invalid('from functools import partial\n'
                'def _fetch(ds, n):\n'
                '    return ds.get_samples(n)\n'
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    fetch = partial(_fetch, data_source)\n'
                '    for s in fetch(4):\n'
                '        s.reward = 0\n',
                line=7, col=8),
        # Lambdas: a key= or filter callback gets each group; a lambda given or returning groups.
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                '    return sorted(groups, key=lambda s: s.reward)\n',
                line=3, col=40),
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                "    best = max(groups, key=lambda g: getattr(g, 'reward', 0.0))\n"
                '    return best\n',
                line=3, col=37),
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                '    groups.sort(key=lambda s: s.reward)\n'
                '    return list(filter(lambda s: s.status is None, groups))\n',
                line=4, col=33),
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    groups = data_source.get_samples(4)\n'
                '    total = lambda gs: sum(s.reward for s in gs)\n'
                '    return total(groups)\n',
                line=3, col=27),
        Invalid('def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    fetch = lambda n: data_source.get_samples(n)\n'
                '    for s in fetch(2):\n'
                '        s.reward = 1\n',
                line=4, col=8),
        # A helper every call gives one group (the loop variable named as a sample).
        Invalid('def _tag(sample):\n'
                "    sample.metadata['k'] = 1\n"
                'def generate_rollout(args, rollout_id, data_source, evaluation=False):\n'
                '    for sample in data_source.get_samples(4):\n'
                '        _tag(sample)\n',
                line=2, col=4),
        # A method given each group of a comprehension (under asyncio.gather).
        Invalid('import asyncio\n'
                'class Rollout:\n'
                '    async def _run(self, sample):\n'
                '        sample.status = None\n'
                '    async def __call__(self, args, rollout_id, data_source, evaluation=False):\n'
                '        groups = data_source.get_samples(4)\n'
                '        await asyncio.gather(*[self._run(g) for g in groups])\n'
                '        return groups\n',
                line=4, col=8),
        # A sample filter bound through functools.partial: `groups` is after the partial's own.
        Invalid('from functools import partial\n'
                'def _filter(cfg, args, groups):\n'
                '    for s in groups:\n'
                '        s.remove_sample = cfg\n'
                'rollout_sample_filter = partial(_filter, True)\n',
                line=4, col=8),
        # A class sample filter: `groups` is the contract's list of groups, after `self`.
        Invalid('class Filter:\n'
                '    def __call__(self, args, groups):\n'
                '        for s in groups:\n'
                '            s.remove_sample = True\n'
                'rollout_sample_filter = Filter()\n',
                line=4, col=12),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.targets: set[int] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        self.targets |= {id(t.target) for t in node.targets}

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.targets.add(id(node.target))

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, attr: str,
               written: bool) -> None:
        if attr not in SAMPLE_ATTRIBUTES and not (written and attr == "index"):
            return
        source = self.group_of(receiver)
        if source is not None:
            self.report(node, self.INVARIANT.render(
                expr=code_of(node), name=code_of(receiver), source=source))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node, node.value, node.attr.value, id(node) in self.targets)

    def visit_Call(self, node: cst.Call) -> None:
        read = getattr_read(self, node)
        if read is not None:
            self._check(node, read[0], read[1], False)
