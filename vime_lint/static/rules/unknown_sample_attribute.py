"""VIM031: code sets only fields that ``Sample`` has: assignments to attributes of names holding
a sample. Field names come from ``vime.contract.SAMPLE_FIELDS``; nothing is copied here.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import difflib

import libcst as cst

from vime.contract import INVARIANTS, SAMPLE_FIELD_NAMES
from vime.contract.errors import Severity
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.rules._samples import SampleTracker, suggest_field

__all__ = ["UnknownSampleAttribute", "unknown_store"]


#: How close an unknown attribute must be to a field's name to be read as a typo of it (an
#: error): ``loss_masks`` (0.95), ``tokenz`` (0.83), not ``reason_content`` (0.62 to
#: ``response_length``).
_TYPO_RATIO = 0.8


def unknown_store(target: str, attr: str) -> tuple[str, Severity]:
    """VIM031's ``(problem, severity)`` for the store ``target = ...`` of ``attr``, not a
    ``Sample`` field: an error for a near miss of a field's name, else a warning. One
    definition for ``vime-lint rollout`` and ``vime-lint types``."""
    close = difflib.get_close_matches(attr, sorted(SAMPLE_FIELD_NAMES), n=1)
    typo = bool(close) and difflib.SequenceMatcher(None, attr, close[0]).ratio() >= _TYPO_RATIO
    return (f"the attribute store `{target} = ...` sets `{attr}`, which is not a Sample field"
            f"{suggest_field(attr) if typo else ''}; nothing reads it",
            "error" if typo else "warning")


def read_by_name(node: cst.Call) -> str | None:
    """The attribute ``getattr(x, "name", ...)`` / ``hasattr(x, "name")`` reads, else None."""
    if not isinstance(node.func, cst.Name) or node.func.value not in ("getattr", "hasattr") \
            or len(node.args) < 2 or not isinstance(node.args[1].value, cst.SimpleString):
        return None
    value = node.args[1].value.evaluated_value
    return value if isinstance(value, str) else None


class UnknownSampleAttribute(SampleTracker):
    """Code sets only fields that ``Sample`` has.

    ## What it does
    Reports an assignment to an attribute that is not a ``Sample`` field, on a name known to
    hold a sample (a hook's ``sample`` parameter, a parameter annotated ``Sample``,
    ``x = Sample(...)`` or a local alias of a sample, a loop over a group or over a list of
    ``Sample(...)`` the function built).
    A near miss of a field name (``loss_masks``) is an error, any other name a warning; an
    attribute the module reads back (``sample.response_content`` stored in one function and
    read in another) is the module's own and is not reported (``Sample`` keeps it).

    Also a read by ``getattr(sample, "name", default)`` of a name that is no field and that
    the module never stores (``sample.name = ...`` or ``setattr(sample, "name", ...)``): a
    warning, since the default then always wins (another module may store it), an error for a
    near miss of a field's name or a ``getattr`` without a default (it raises AttributeError).

    ## Why is this bad?
    ``Sample`` accepts any attribute, so a typo such as ``sample.loss_masks = mask`` raises
    nothing: the real field stays None and training uses a mask of all ones. A
    ``getattr(sample, "tool_call_count", 0)`` of a field ``Sample`` does not have returns 0 for
    every sample: the reward shaping built on it never happens.

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        sample.loss_masks = [1, 1, 0]
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        sample.loss_mask = [1, 1, 0]
    ```

    ## Fix safety
    No fix: the intended field is a guess.
    """

    INVARIANT = INVARIANTS["VIM031"]
    ALIASES = ("VIM006",)
    VALID = [
        Valid("""
            async def generate(args, sample, sampling_params):
                sample.loss_mask = [1]
                sample.metadata['x'] = 1
                return sample
        """),
        Valid("""
            def f(thing):
                thing.loss_masks = 1
        """),
        Valid("""
            def f(sample):
                sample._cache = 1
        """),
        # Stored and read back by the module: its own attribute (upstream slime's multi-agent
        # example keeps `response_content` on the sample this way).
        Valid("""
            def f(sample, text):
                sample.response_content = text
            def g(sample):
                return sample.response_content
        """),
        # Read back by name in another hook (a reward post-process reading what the reward
        # stored): the module's own attribute too.
        Valid("""
            async def rm(args, sample):
                sample.math_ok = True
                return 1.0
            def post(args, samples):
                return [float(getattr(s, 'math_ok', False)) for s in samples]
        """),
        # getattr of a field, of a name the module stores, of a non-constant name, of a
        # non-sample.
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return float(getattr(sample, 'reward', 0) or 0)
        """),
        Valid("""
            async def generate(args, sample, sampling_params):
                sample.tool_calls = 2
                return sample
            async def reward_func(args, sample, **kwargs):
                return 0.1 * getattr(sample, 'tool_calls', 0)
        """),
        Valid("""
            def f(sample, n):
                setattr(sample, 'turns', n)
            def g(sample):
                return getattr(sample, 'turns', 0)
        """),
        Valid("""
            def f(sample, name):
                return getattr(sample, name, None)
        """),
        Valid("""
            def f(tool):
                return getattr(tool, 'call_count', 0)
        """),
        # A class hook's own attribute; an annotated helper setting a real field; samples
        # built in a comprehension given real fields.
        Valid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    self.loss_masks = [1]
                    return sample
            generate = Gen()
        """),
        Valid("""
            from vime.utils.types import Sample as S
            def _fill(s: S, mask):
                s.loss_mask = mask
        """),
        Valid("""
            from vime.utils.types import Sample as S
            def f(prompts):
                out = [S(prompt=p) for p in prompts]
                for s in out:
                    s.loss_mask = [1]
                return out
        """),
    ]
    INVALID = [
        Invalid("""
            async def generate(args, sample, sampling_params):
                sample.loss_masks = [1]
                return sample
        """, line=2, col=4, severity="error"),
        Invalid("""
            def f(group):
                for s in group:
                    s.my_score = 1
        """, line=3, col=8, severity="warning"),
        # A class hook's __call__; a helper whose parameter is annotated with the aliased
        # Sample; a local alias of the sample; a loop over samples built by a comprehension;
        # a batch reward's comprehension reading a misspelt field.
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample.loss_masks = [1]
                    return sample
            generate = Gen()
        """, line=3, col=8, severity="error"),
        Invalid("""
            from vime.utils.types import Sample as S
            def _fill(s: S, mask):
                s.loss_masks = mask
        """, line=3, col=4, severity="error"),
        Invalid("""
            async def generate(args, sample, sampling_params):
                cur = sample
                cur.rewrd = 1.0
                return sample
        """, line=3, col=4, severity="error"),
        Invalid("""
            from vime.utils.types import Sample as S
            def f(prompts):
                out = [S(prompt=p) for p in prompts]
                for s in out:
                    s.lossmask = [1]
                return out
        """, line=5, col=8, severity="error"),
        Invalid("""
            async def reward_func(args, samples, **kwargs):
                return [getattr(s, 'respons', '') for s in samples]
        """, line=2, col=12, severity="error"),
        # Loosely like a field (`response_length`) but no typo of it: a warning.
        Invalid("""
            def f(sample, text):
                sample.reason_content = text
        """, line=2, col=4, severity="warning"),
        # getattr of another name does not read this one.
        Invalid("""
            def f(sample):
                sample.my_score = 1
                return getattr(sample, 'score', 0)
        """, line=2, col=4, severity="warning"),
        # getattr with a default of a name nothing stores: the default always wins.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                n = getattr(sample, 'tool_call_count', 0)
                return 0.1 * n
        """, line=2, col=8, severity="warning"),
        Invalid("""
            def reward_post_process(args, samples):
                return [getattr(s, 'num_turns', 1) for s in samples]
        """, line=2, col=12, severity="warning"),
        # A near miss of a field, or no default (AttributeError): an error.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                return len(getattr(sample, 'respons', ''))
        """, line=2, col=15, severity="error"),
        Invalid("""
            def f(group):
                for s in group:
                    print(getattr(s, 'score'))
        """, line=3, col=14, severity="error"),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: Stores to report once the module is read: (target, attribute).
        self.stores: list[tuple[cst.Attribute, str]] = []
        self.store_ids: set[int] = set()
        #: Attribute names the module reads (``x.attr`` that is not an assignment target).
        self.read: set[str] = set()
        #: ``getattr(sample, "attr"[, default])`` reads to report once the module is read:
        #: (call, attribute, has a default).
        self.getattrs: list[tuple[cst.Call, str, bool]] = []
        #: Attribute names the module stores on samples (``setattr`` included).
        self.stored: set[str] = set()

    def _check_target(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute) or not self.is_sample(target.value):
            return
        attr = target.attr.value
        if attr in SAMPLE_FIELD_NAMES or attr.startswith("_") or attr in ("truncated", "aborted"):
            return  # stale flags are VIM032's
        self.stores.append((target, attr))
        self.store_ids.add(id(target))
        self.stored.add(attr)

    def visit_Call(self, node: cst.Call) -> None:
        read = read_by_name(node)     # getattr/hasattr of any object reads the name back
        if read is not None:
            self.read.add(read)
        if not isinstance(node.func, cst.Name) or node.func.value not in ("getattr", "setattr"):
            return
        if f"builtins.{node.func.value}" not in self.context.semantic.qualified(node.func):
            return
        args = node.args
        if len(args) < 2 or any(a.keyword is not None or a.star for a in args[:2]):
            return
        name = args[1].value
        if not isinstance(name, cst.SimpleString) or not self.is_sample(args[0].value):
            return
        attr = name.evaluated_value
        if not isinstance(attr, str):
            return
        if node.func.value == "setattr":
            self.stored.add(attr)
            return
        self.read.add(attr)
        if attr in SAMPLE_FIELD_NAMES or attr.startswith("_") or attr in ("truncated", "aborted"):
            return
        self.getattrs.append((node, attr, len(args) >= 3))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self.store_ids:
            self.read.add(node.attr.value)

    def leave_Module(self, original_node: cst.Module) -> None:
        for target, attr in self.stores:
            if attr in self.read:
                continue  # the module's own attribute: stored and read back (it works)
            problem, severity = unknown_store(code_of(target), attr)
            self.report(target, self.INVARIANT.render(problem=problem), severity=severity)
        for call, attr, default in self.getattrs:
            if attr in self.stored:
                continue  # the module stores it: its own attribute
            close = difflib.get_close_matches(attr, sorted(SAMPLE_FIELD_NAMES), n=1)
            typo = bool(close) and \
                difflib.SequenceMatcher(None, attr, close[0]).ratio() >= _TYPO_RATIO
            if default:
                problem = (f"`{code_of(call)}` reads `{attr}`, which is not a Sample field and "
                           f"which this module never stores{suggest_field(attr) if typo else ''}: "
                           "the default is returned for every sample")
            else:
                problem = (f"`{code_of(call)}` reads `{attr}`, which is not a Sample field and "
                           f"which this module never stores{suggest_field(attr) if typo else ''}: "
                           "it raises AttributeError")
            self.report(call, self.INVARIANT.render(problem=problem),
                        severity="error" if typo or not default else "warning")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        for t in node.targets:
            self._check_target(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)
