"""VIM025: a dict or list bound outside a loop is not given, without a copy, to a Sample field of
each sample the loop builds. The fields come from ``vime.contract.SAMPLE_FIELDS``: the list and
dict fields conversion reads or that hold one entry per response token.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vime.contract import INVARIANTS, SAMPLE_FIELDS
from vime.contract.sample import RESPONSE_LENGTH_FIELDS, WRITTEN_IN_PLACE_FIELDS
from vime_lint.static._cst import code_of, reads_any
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.analysis import Semantic
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["PER_SAMPLE_FIELDS", "SharedSampleObject"]


#: Sample fields that hold a list or dict of one sample's own: what conversion reads, and the
#: per-token lists (``tokens``, ``loss_mask``, ``rollout_log_probs``, ``metadata``, ...).
PER_SAMPLE_FIELDS: dict[str, str] = {
    f.name: "dict" if f.hint.startswith("dict[") else "list" for f in SAMPLE_FIELDS
    if f.hint.startswith(("list[", "dict[")) and (f.read_by_conversion
                                                  or f.name in RESPONSE_LENGTH_FIELDS)}
#: Fields only a Sample has: the receiver need not be known as a sample.
_DISTINCTIVE = frozenset(PER_SAMPLE_FIELDS) - {"tokens", "metadata"}
#: Fan-out siblings (segments of one rollout) may share these (VIM123).
_FAN_OUT_SHARED = frozenset({"metadata"})
_GENERATE = "custom_generate_function_path"
_CONSTANTS = frozenset({"None", "True", "False"})


@dataclass(frozen=True, slots=True)
class _Frame:
    """What a loop binds on each pass (from the semantic model's block facts)."""

    names: frozenset[str]
    sets_rollout_id: bool


def _frame(node: cst.CSTNode, semantic: Semantic) -> _Frame:
    facts = semantic.block(node)
    return _Frame(frozenset(facts.values) | frozenset(facts.nested),
                  any(s.attr == "rollout_id" for s in facts.attr_stores))


def _target_names(target: cst.BaseExpression) -> set[str]:
    """The names a ``for`` target binds: ``x``, ``i, (p, lp)``, ``*rest``."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for el in target.elements for n in _target_names(el.value)}
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _root(value: cst.BaseExpression, per_iteration: frozenset[str]) -> cst.Name | None:
    """``meta`` for ``meta``, ``template.meta`` or ``group[0].tokens``: the name a shared
    object is read from (None when an index changes per iteration: ``masks[i]``)."""
    if isinstance(value, cst.Subscript) and any(isinstance(el.slice, cst.Slice)
                                                for el in value.slice):
        return None   # mask[:], self.mask[1:]: a new list
    cur = value
    while isinstance(cur, (cst.Attribute, cst.Subscript)):
        if isinstance(cur, cst.Subscript) and reads_any(cur.slice[0] if len(cur.slice) == 1
                                                       else cur, per_iteration):
            return None
        cur = cur.value
    if isinstance(cur, cst.Name) and cur.value not in _CONSTANTS:
        return cur
    return None


class SharedSampleObject(SampleTracker):
    """A dict or list bound outside a loop is not given to every sample of the loop.

    ## What it does
    Reports ``x.<field> = name`` inside a ``for``/``while`` loop (and ``Sample(<field>=name)``
    inside a loop or comprehension) when the loop builds or visits a different sample on each
    iteration (``x`` is bound by the loop), ``<field>`` is a list or dict field of the sample
    (``metadata``, ``train_metadata``, ``tokens``, ``loss_mask``, ``rollout_log_probs``,
    ``teacher_log_probs``) and ``name`` (or ``name.attr``) is bound outside the loop and never
    rebound in it. A copy (``dict(meta)``, ``copy.deepcopy(meta)``, ``{**meta}``,
    ``list(mask)``, ``mask[:]``) or an object built inside the loop is fine. ``metadata``
    shared by the segments of one rollout (a custom generate function, or a loop that sets
    ``rollout_id``) is allowed, as at run time. An error when something writes into the shared
    object: vime does for ``tokens``, ``loss_mask``, ``rollout_log_probs`` (extended by
    ``append_response_tokens``) and ``metadata``; for the other fields (``train_metadata``,
    ``teacher_log_probs``, ...) only a write in the module counts: into the shared variable
    itself (``meta["k"] = v``, ``meta.pop(...)``, ``meta |= ...``; matched by scope, so
    another function's ``meta`` is another object), through a name bound to it (``view =
    meta``), through a function of the module given it that writes that parameter, or into
    the field of any sample (``s.train_metadata.update(...)``, through a name bound to the
    field). With none it is a warning, since samples that only read one object do not
    corrupt each other (calls into other libraries are not followed). Runtime
    twin: VIM123.

    ## Why is this bad?
    Every sample then holds the same object: a write through one sample (a metadata key, a
    response token: ``append_response_tokens`` extends ``tokens``, ``loss_mask`` and
    ``rollout_log_probs`` in place) lands in all of them, silently corrupting rewards, masks
    and logs (NovaSky-AI/SkyRL#1189; failure kind: "template object shared between
    samples").

    ## Example
    ```python
    meta = {"source": "gsm8k", "turns": []}
    for sample in group:
        sample.metadata = meta
    ```

    ## Use instead
    ```python
    meta = {"source": "gsm8k", "turns": []}
    for sample in group:
        sample.metadata = copy.deepcopy(meta)
    ```

    ## Fix safety
    No fix: a shallow or a deep copy is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM025"]
    VALID = [
        Valid("""
            import copy
            def f(group, template):
                for sample in group:
                    sample.metadata = copy.deepcopy(template)
        """),
        Valid("""
            def f(group, template):
                for sample in group:
                    sample.metadata = dict(template)
                    sample.metadata = {**template}
        """),
        Valid("""
            def f(group):
                for sample in group:
                    meta = {'turns': []}
                    sample.metadata = meta
        """),
        Valid("""
            def f(sample, mask):
                for turn in range(3):
                    sample.loss_mask = mask
        """),
        Valid("""
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                meta = {'id': 1}
                segments = []
                for part in sample.metadata['parts']:
                    seg = Sample(prompt=part)
                    seg.metadata = meta
                    segments.append(seg)
                return segments
        """),
        Valid("""
            from vime.utils.types import Sample
            def f(prompts):
                return [Sample(prompt=p, metadata={'p': p}) for p in prompts]
        """),
        Valid("""
            def f(group):
                for s in group:
                    s.loss_mask = None
                    s.tokens = s.tokens + [1]
        """),
        Valid("""
            def f(group, masks):
                for i, s in enumerate(group):
                    s.loss_mask = masks[i]
        """),
        # a comprehension's own targets are new on each pass, however they are unpacked
        Valid("""
            from vime.utils.types import Sample
            def f(lps):
                return [Sample(rollout_log_probs=lp) for lp in lps]
        """),
        Valid("""
            from vime.utils.types import Sample
            def f(rows):
                return [Sample(tokens=p + r, rollout_log_probs=lp)
                        for i, (p, r, lp) in enumerate(rows)]
        """),
        Valid("""
            from vime.utils.types import Sample
            def f(groups):
                return {k: Sample(metadata=m) for k, *_, m in groups}
        """),
        Valid("""
            from vime.utils.types import Sample
            def f(rows):
                return [Sample(loss_mask=m) for r in rows for m in r.masks]
        """),
        # A slice of a shared list is a new list (was a false finding).
        Valid("""
            def f(group, mask):
                for s in group:
                    s.loss_mask = mask[:]
        """),
        # A rollout function's comprehension copying the mask (aliased import); a class
        # rollout copying its template attribute on each pass.
        Valid("""
            from vime.utils.types import Sample as S
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                mask = [1, 1]
                return [[S(prompt=p, tokens=[1, 2], loss_mask=list(mask))] for p in ['a', 'b']]
        """),
        Valid("""
            from vime.utils.types import Sample as S
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    out = []
                    for p in ['a', 'b']:
                        s = S(prompt=p)
                        s.loss_mask = self.mask[:]
                        out.append([s])
                    return out
            generate_rollout = Rollout()
        """),
    ]
    INVALID = [
        # A rollout function's comprehension (aliased import) sharing a mask vime extends; a
        # class rollout sharing its own attribute.
        Invalid("""
            from vime.utils.types import Sample as S
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                mask = [1, 1]
                return [[S(prompt=p, tokens=[1, 2], loss_mask=mask)] for p in ['a', 'b']]
        """, line=4, col=40, severity="error"),
        Invalid("""
            from vime.utils.types import Sample as S
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    out = []
                    for p in ['a', 'b']:
                        s = S(prompt=p)
                        s.loss_mask = self.mask
                        out.append([s])
                    return out
            generate_rollout = Rollout()
        """, line=7, col=12, severity="error"),
        Invalid("""
            def f(group):
                meta = {'source': 'gsm8k'}
                for sample in group:
                    sample.metadata = meta
        """, line=4, col=8),
        Invalid("""
            def f(groups, n):
                mask = [1] * n
                for group in groups:
                    for s in group:
                        s.loss_mask = mask
        """, line=5, col=12),
        Invalid("""
            from vime.utils.types import Sample as S
            def f(prompts, template):
                return [S(prompt=p, metadata=template) for p in prompts]
        """, line=3, col=24),
        Invalid("""
            from vime.utils.types import Sample
            def f(rows, lp):
                return [Sample(rollout_log_probs=lp) for i, (p, r) in enumerate(rows)]
        """, line=3, col=19),
        Invalid("""
            from vime.utils.types import Sample
            def f(sample, n):
                out = []
                for i in range(n):
                    new = Sample(prompt=sample.prompt)
                    new.tokens = sample.tokens
                    out.append(new)
                return out
        """, line=6, col=8),
        Invalid("""
            def f(group):
                for i, sample in enumerate(group):
                    sample.tokens = group[0].tokens
        """, line=3, col=8),
        Invalid("""
            def f(groups):
                for group in groups:
                    meta = {}
                    for sample in group:
                        sample.metadata = meta
        """, line=5, col=12),
        # A train_metadata dict shared by siblings that nothing writes: read-only, a warning.
        Invalid("""
            def f(group, task):
                shared = {'task': task}
                for s in group:
                    s.train_metadata = shared
        """, line=4, col=8, severity="warning"),
        # ... written through one sample afterwards: an error.
        Invalid("""
            def f(group):
                shared = {}
                for s in group:
                    s.train_metadata = shared
                group[0].train_metadata['best'] = True
        """, line=4, col=8, severity="error"),
        # ... written through a name bound to the field, in another function: an error.
        Invalid("""
            def tag(sample):
                tm = sample.train_metadata
                tm.update(seen=1)
            def f(group):
                shared = {}
                for s in group:
                    s.train_metadata = shared
        """, line=7, col=8, severity="error"),
        # ... the shared dict itself written after the loop, in a method: an error.
        Invalid("""
            class R:
                def run(self, group):
                    info = {'n': 0}
                    for s in group:
                        s.train_metadata = info
                    info['n'] = len(group)
        """, line=5, col=12, severity="error"),
        # Writes are matched to the variable, not the spelling: another function's `shared`
        # is another object, so this one stays read-only (a warning).
        Invalid("""
            def other(shared):
                shared['x'] = 1
            def f(group, task):
                shared = {'task': task}
                for s in group:
                    s.train_metadata = shared
        """, line=6, col=8, severity="warning"),
        # ... passed to a helper that only reads it: still read-only.
        Invalid("""
            def show(d):
                print(sorted(d))
            def f(group, task):
                shared = {'task': task}
                for s in group:
                    s.train_metadata = shared
                show(shared)
        """, line=6, col=8, severity="warning"),
        # ... written through an alias: an error.
        Invalid("""
            def f(group, task):
                shared = {'task': task}
                for s in group:
                    s.train_metadata = shared
                view = shared
                view.pop('task')
        """, line=4, col=8, severity="error"),
        # ... passed to a helper that writes its parameter (by position or keyword): an error.
        Invalid("""
            def mark(d, key):
                d[key] = True
            def f(group, task):
                shared = {'task': task}
                for s in group:
                    s.train_metadata = shared
                mark(key='seen', d=shared)
        """, line=6, col=8, severity="error"),
        # ... a module-level template that another function updates: an error.
        Invalid("""
            from vime.utils.types import Sample
            TEMPLATE = {'task': 'qa'}
            def bump():
                TEMPLATE.setdefault('n', 0)
            def f(prompts):
                return [Sample(prompt=p, train_metadata=TEMPLATE) for p in prompts]
        """, line=6, col=29, severity="error"),
        # metadata is written by vime itself (failure records): an error even when read-only.
        Invalid("""
            def f(group):
                meta = {'source': 'gsm8k'}
                for sample in group:
                    sample.metadata = meta
        """, line=4, col=8, severity="error"),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: Per function: the enclosing loops (innermost last) and their bindings.
        self.loops: list[list[_Frame]] = [[]]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.loops.append([])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.loops.pop()
        super().leave_FunctionDef(original_node)

    def visit_For(self, node: cst.For) -> None:
        super().visit_For(node)
        self.loops[-1].append(_frame(node, self.context.semantic))

    def leave_For(self, original_node: cst.For) -> None:
        self.loops[-1].pop()

    def visit_While(self, node: cst.While) -> None:
        self.loops[-1].append(_frame(node, self.context.semantic))

    def leave_While(self, original_node: cst.While) -> None:
        self.loops[-1].pop()

    def _comp(self, node: cst.CSTNode, for_in: cst.CompFor) -> None:
        self._comprehension(for_in)
        frame = _frame(node, self.context.semantic)
        # the comprehension's own targets (``for i, (p, lp) in ...``) are bound on each pass
        targets: set[str] = set()
        cur: cst.CompFor | None = for_in
        while cur is not None:
            targets |= _target_names(cur.target)
            cur = cur.inner_for_in
        self.loops[-1].append(_Frame(frame.names | targets, frame.sets_rollout_id))

    def _leave_comp(self) -> None:
        self.loops[-1].pop()

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comp(node, node.for_in)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._leave_comp()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comp(node, node.for_in)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._leave_comp()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comp(node, node.for_in)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._leave_comp()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comp(node, node.for_in)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self._leave_comp()

    def _in_generate(self) -> bool:
        fn = self.functions[0] if self.functions else None
        binding = self.context.binding(fn.name.value) if fn is not None and not self.class_depth \
            else None
        return binding is not None and binding.spec.dest == _GENERATE

    def _check(self, node: cst.CSTNode, field: str, value: cst.BaseExpression,
               frame: _Frame, target: str) -> None:
        root = _root(value, frame.names)
        if root is None or root.value in frame.names:
            return
        if field in _FAN_OUT_SHARED and (frame.sets_rollout_id or self._in_generate()):
            return
        text = code_of(value)
        writes = self.context.semantic.writes
        written = field in WRITTEN_IN_PLACE_FIELDS or writes.object_written(root) \
            or writes.attribute_written(field)
        self.report(node, self.INVARIANT.render(target=target, value=text,
                                                kind=PER_SAMPLE_FIELDS[field]),
                    severity=None if written else "warning")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        frames = self.loops[-1]
        if not frames:
            return
        for t in node.targets:
            tgt = t.target
            if not (isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name)
                    and tgt.attr.value in PER_SAMPLE_FIELDS):
                continue
            field, receiver = tgt.attr.value, tgt.value
            if field not in _DISTINCTIVE and not self.is_sample(receiver):
                continue
            frame = next((f for f in reversed(frames) if receiver.value in f.names), None)
            if frame is not None:
                self._check(node, field, node.value, frame, code_of(tgt))

    def visit_Call(self, node: cst.Call) -> None:
        frames = self.loops[-1]
        if not frames or not self.context.semantic.refers_to(node.func, "Sample"):
            return
        if not any(q.endswith(".Sample") for q in self.qualified(node.func)):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value in PER_SAMPLE_FIELDS:
                self._check(a, a.keyword.value, a.value, frames[-1],
                            f"Sample({a.keyword.value}=...)")
