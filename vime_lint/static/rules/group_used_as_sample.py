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
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                for group in groups:
                    for sample in group:
                        sample.reward = 1.0
                return groups
        """),
        Valid("""
            from vime.rollout.base_types import iter_samples
            def f(data_source):
                for sample in iter_samples(data_source.get_samples(2)):
                    sample.reward = 0.0
        """),
        Valid("""
            def f(data_source):
                for group in data_source.get_samples(2):
                    group.append(group[0])
                    n = group.index(group[0])
        """),
        Valid("""
            def f(data_source):
                groups = data_source.get_samples(2)
                groups = [s for g in groups for s in g]
                for s in groups:
                    s.reward = 1.0
        """),
        Valid("""
            def f(groups):
                for g in groups:
                    g.reward = 1
        """),
        Valid("""
            def f(data_source):
                out = [[s for s in g] for g in data_source.get_samples(2)]
                return [s.reward for g in out for s in g]
        """),
        # Flattened groups, a pool that also holds a sample, gather over per-sample calls.
        Valid("""
            def f(ds):
                flat = []
                for g in ds.get_samples(2):
                    flat.extend(g)
                for s in flat:
                    s.reward = 1.0
        """),
        Valid("""
            def f(ds, extra):
                pool = []
                pool += ds.get_samples(2)
                pool.append(extra)
                for s in pool:
                    s.reward = 1.0
        """),
        Valid("""
            import asyncio
            from vime.rollout.vllm.sampling import generate_and_rm
            async def f(args, group, sp):
                done = await asyncio.gather(*[generate_and_rm(args, s, sp) for s in group])
                return [s.reward for s in done]
        """),
        # A helper called with a group and with groups: its parameter is not known to be either.
        Valid("""
            def _score(items):
                return [x.reward for x in items]
            def f(ds, group):
                _score(group)
                _score(ds.get_samples(2))
        """),
        # A helper given groups that iterates them twice; a group's samples.
        Valid("""
            def _score(groups):
                return [s.reward for g in groups for s in g]
            def f(ds):
                return _score(ds.get_samples(2))
        """),
        Valid("""
            from vime.rollout.vllm.sampling import generate_and_rm_group
            async def run(args, group, sp):
                scored = await generate_and_rm_group(args, group, sp)
                return [s.reward for s in scored]
        """),
        # A method the module also calls on another object: its parameter may get anything.
        Valid("""
            class Rollout:
                def _fill(self, batch):
                    for sample in batch:
                        sample.metadata['k'] = 1
                def run(self, ds):
                    self._fill(ds.get_samples(2))
            def other(r, samples):
                r._fill(samples)
        """),
        # An attribute set to groups here and to samples elsewhere; one set to the flat samples.
        Valid("""
            class Holder:
                def load(self, ds):
                    self.items = ds.get_samples(2)
                def tag(self):
                    for s in self.items:
                        s.reward = 1
            def f(h, samples):
                h.items = samples
        """),
        Valid("""
            class Rollout:
                def load(self, ds):
                    self.samples = [s for g in ds.get_samples(2) for s in g]
                def tag(self):
                    for s in self.samples:
                        s.reward = 1.0
        """),
        # A partial that also leaves the function (given other values there).
        Valid("""
            from functools import partial
            def _tag(batch, key):
                for sample in batch:
                    sample.metadata[key] = 1
            def generate_rollout(args, rollout_id, data_source, executor, evaluation=False):
                groups = data_source.get_samples(4)
                tag = partial(_tag, key='k')
                tag(groups)
                executor.submit(tag, [s for g in groups for s in g])
                return groups
        """),
        # Lambdas over the samples of a group; a lambda parameter shadows a group's name.
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                return [sorted(g, key=lambda s: s.reward) for g in groups]
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, samples, evaluation=False):
                for g in data_source.get_samples(4):
                    pass
                return list(map(lambda g: g.reward, samples))
        """),
        # A helper given a group in one call and a sample in another.
        Valid("""
            def _tag(x):
                x.metadata['k'] = 1
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                for g in data_source.get_samples(4):
                    _tag(g[0])
                    _tag(g)
        """),
        # A helper also handed on (to a pool) where the module does not show what it gets.
        Valid("""
            def _tag(sample):
                sample.metadata['k'] = 1
            def generate_rollout(args, rollout_id, data_source, pool, evaluation=False):
                groups = data_source.get_samples(4)
                for g in groups:
                    _tag(g)
                pool.map(_tag, [s for g in groups for s in g])
                return groups
        """),
        # A comprehension target that shadows a group's name of the function.
        Valid("""
            def _score(g):
                return g.reward
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                for g in groups:
                    pass
                return [_score(g) for grp in groups for g in grp]
        """),
        # A class hook's `__call__`: the contract's positions leave `self` out (`args` is args).
        Valid("""
            class Filter:
                def __call__(self, args, groups):
                    key = args.metadata
                    for g in groups:
                        for s in g:
                            s.remove_sample = key is None
            rollout_sample_filter = Filter()
        """),
        # A method of a module-level instance bound as the filter, walking the samples.
        Valid("""
            class Filter:
                def run(self, args, groups):
                    for g in groups:
                        for s in g:
                            s.remove_sample = True
            rollout_sample_filter = Filter().run
        """),
    ]
    INVALID = [
        # A method of a module-level instance bound as the filter: `groups` after `self`;
        # the output's samples through a module alias, in a comprehension.
        Invalid("""
            class Filter:
                def run(self, args, groups):
                    for s in groups:
                        s.remove_sample = True
            rollout_sample_filter = Filter().run
        """, line=4, col=12),
        Invalid("""
            import vime.rollout.base_types as bt
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = bt.RolloutFnTrainOutput(samples=data_source.get_samples(2))
                rewards = [s.reward for s in out.samples]
                return out
        """, line=4, col=15),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                for s in data_source.get_samples(args.rollout_batch_size):
                    s.reward = 0.0
        """, line=3, col=8),
        Invalid("""
            def f(args, data_source):
                groups = data_source.get_samples(8)
                batch = groups[:4]
                for sample in batch:
                    print(sample.tokens)
        """, line=5, col=14),
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput as Out
            def f(groups):
                out = Out(samples=groups)
                return [x.response for x in out.samples]
        """, line=4, col=12),
        Invalid("""
            def f(ds):
                for i, g in enumerate(ds.get_samples(2)):
                    if getattr(g, 'status', None) is None:
                        pass
        """, line=3, col=11),
        Invalid("""
            def rollout_sample_filter(args, data):
                for sample in data:
                    sample.remove_sample = True
        """, line=3, col=8),
        Invalid("""
            def f(args, ds):
                first = ds.get_samples(1)[0]
                first.append_response_tokens(args, tokens=[1])
        """, line=3, col=4),
        # Built up in place: `groups = []` then `+=` (or `.extend`) of get_samples.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = []
                while len(groups) < args.rollout_batch_size:
                    groups += data_source.get_samples(1)
                for sample in groups:
                    sample.metadata['seen'] = True
                return groups
        """, line=6, col=8),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = []
                for _ in range(2):
                    groups.extend(data_source.get_samples(1))
                return [s.reward for s in groups]
        """, line=5, col=12),
        # Passed to a helper of the module (here by keyword): its parameter holds groups.
        Invalid("""
            def _tag(batch, key):
                for sample in batch:
                    sample.metadata[key] = 1
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                _tag(key='k', batch=groups)
                return groups
        """, line=3, col=8),
        # Returned by a helper of the module, then indexed.
        Invalid("""
            def _fetch(ds, n):
                out = ds.get_samples(n)
                return out[:n]
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                todo = _fetch(data_source, 4)
                first = todo[0]
                first.status = None
        """, line=7, col=4),
        # asyncio.gather over generate_and_rm_group tasks gives a list of groups.
        Invalid("""
            import asyncio
            from vime.rollout.vllm.sampling import generate_and_rm_group
            async def run(args, groups, sp):
                tasks = []
                for g in groups:
                    tasks.append(asyncio.create_task(generate_and_rm_group(args, g, sp)))
                done = await asyncio.gather(*tasks)
                return [x.reward for x in done]
        """, line=8, col=12),
        # generate_and_rm_group's value is one group.
        Invalid("""
            from vime.rollout.vllm.sampling import generate_and_rm_group
            async def run(args, group, sp):
                scored = await generate_and_rm_group(args, group, sp)
                if scored.reward is None:
                    return None
                return scored
        """, line=4, col=7),
        # A filter comprehension over get_samples, in a rollout class.
        Invalid("""
            class Rollout:
                def __init__(self, data_source):
                    self.data_source = data_source
                def __call__(self, args, rollout_id, evaluation=False):
                    pending = self.data_source.get_samples(2)
                    picked = [g for g in pending if g]
                    for s in picked:
                        s.response_length = 0
        """, line=8, col=12),
        # An attribute the class's methods set to groups (None first), read in another method.
        Invalid("""
            class Rollout:
                def __init__(self, data_source):
                    self.data_source = data_source
                    self.groups = None
                def __call__(self, args, rollout_id, evaluation=False):
                    self.groups = self.data_source.get_samples(2)
                    for s in self.groups:
                        s.reward = 0.0
        """, line=8, col=12),
        Invalid("""
            class Rollout:
                def __init__(self):
                    self.pending = []
                def fill(self, ds):
                    self.pending += ds.get_samples(1)
                def drain(self):
                    return [s.response for s in self.pending]
        """, line=7, col=16),
        # Groups passed to a method (`self._fill`), and returned by one (`self._fetch`).
        Invalid("""
            class Rollout:
                def _fill(self, batch, key):
                    for sample in batch:
                        sample.metadata[key] = 1
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(4)
                    self._fill(groups, 'k')
                    return groups
        """, line=4, col=12),
        Invalid("""
            class Rollout:
                def _fetch(self, ds):
                    return ds.get_samples(4)
                def run(self, ds):
                    for s in self._fetch(ds):
                        s.status = None
        """, line=6, col=12),
        # Through functools.partial: bound to a name, given to map (each group), returning groups.
        Invalid("""
            import functools
            def _tag(key, batch):
                for sample in batch:
                    sample.metadata[key] = 1
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                tag = functools.partial(_tag, 'k')
                tag(groups)
                return groups
        """, line=4, col=8),
        Invalid("""
            from functools import partial
            def _score(scale, sample):
                sample.reward = scale
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                list(map(partial(_score, 1.0), groups))
                return groups
        """, line=3, col=4),
        Invalid("""
            from functools import partial
            def _fetch(ds, n):
                return ds.get_samples(n)
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                fetch = partial(_fetch, data_source)
                for s in fetch(4):
                    s.reward = 0
        """, line=7, col=8),
        # Lambdas: a key= or filter callback gets each group; a lambda given or returning groups.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                return sorted(groups, key=lambda s: s.reward)
        """, line=3, col=40),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                best = max(groups, key=lambda g: getattr(g, 'reward', 0.0))
                return best
        """, line=3, col=37),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                groups.sort(key=lambda s: s.reward)
                return list(filter(lambda s: s.status is None, groups))
        """, line=4, col=33),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(4)
                total = lambda gs: sum(s.reward for s in gs)
                return total(groups)
        """, line=3, col=27),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                fetch = lambda n: data_source.get_samples(n)
                for s in fetch(2):
                    s.reward = 1
        """, line=4, col=8),
        # A helper every call gives one group (the loop variable named as a sample).
        Invalid("""
            def _tag(sample):
                sample.metadata['k'] = 1
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                for sample in data_source.get_samples(4):
                    _tag(sample)
        """, line=2, col=4),
        # A method given each group of a comprehension (under asyncio.gather).
        Invalid("""
            import asyncio
            class Rollout:
                async def _run(self, sample):
                    sample.status = None
                async def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(4)
                    await asyncio.gather(*[self._run(g) for g in groups])
                    return groups
        """, line=4, col=8),
        # A sample filter bound through functools.partial: `groups` is after the partial's own.
        Invalid("""
            from functools import partial
            def _filter(cfg, args, groups):
                for s in groups:
                    s.remove_sample = cfg
            rollout_sample_filter = partial(_filter, True)
        """, line=4, col=8),
        # A class sample filter: `groups` is the contract's list of groups, after `self`.
        Invalid("""
            class Filter:
                def __call__(self, args, groups):
                    for s in groups:
                        s.remove_sample = True
            rollout_sample_filter = Filter()
        """, line=4, col=12),
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
