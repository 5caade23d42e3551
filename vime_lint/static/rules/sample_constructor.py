"""VIM006: ``Sample(...)`` is built with keywords and known fields only. Field names come from
``vime.contract.SAMPLE_FIELDS``; nothing is copied here.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS, SAMPLE_FIELD_NAMES, SAMPLE_FIELDS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Fix, Rule
from vime_lint.static.rules._samples import suggest_field

__all__ = ["SampleConstructor"]


_EQ = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


class SampleConstructor(Rule):
    """``Sample(...)`` is built with keywords and known fields only.

    ## What it does
    Reports positional arguments to ``Sample(...)`` (a warning) and keywords that are not
    fields of ``Sample`` (an error, with the closest field name).

    ## Why is this bad?
    Positional arguments bind to whatever field sits at that position, and the field order
    follows upstream's newest release: ``Sample("prompt")`` sets ``group_index``. An unknown
    keyword raises ``TypeError`` when the rollout runs (failure kind: "field order changes").

    ## Example
    ```python
    Sample(0, 1, None, "What is 2+2?")
    Sample(prompt="What is 2+2?", lable="4")
    ```

    ## Use instead
    ```python
    Sample(group_index=0, index=1, rollout_id=None, prompt="What is 2+2?")
    Sample(prompt="What is 2+2?", label="4")
    ```

    ## Fix safety
    Turning positional arguments into keywords in ``SAMPLE_FIELDS`` order is safe: it binds
    each value to the same field as before.
    """

    INVARIANT = INVARIANTS["VIM006"]
    VALID = [
        Valid("""
            from vime.utils.types import Sample
            s = Sample(prompt='hi', label='1')
        """),
        Valid("""
            class Sample:
                pass
            Sample(1, 2)
        """),
        Valid("""
            from vime.utils.types import Sample
            s = Sample(**fields)
        """),
        # Built in a comprehension under an aliased import, keywords only.
        Valid("from vime.utils.types import Sample as S\n"
              "def load(rows):\n"
              "    return [S(prompt=p, label=lab, metadata={'i': i}) for i, (p, lab) in enumerate(rows)]\n",
              ),
    ]
    INVALID = [
        Invalid("""
            from vime.utils.types import Sample
            s = Sample(0, 1, prompt='hi')
        """, line=2, col=4, severity="warning", fixed="""
            from vime.utils.types import Sample
            s = Sample(group_index=0, index=1, prompt='hi')
        """),
        Invalid("""
            from vime.utils.types import Sample
            s = Sample(prompt='hi', lable='1')
        """, line=2, col=4, severity="error"),
        Invalid("""
            import vime.utils.types as t
            s = t.Sample(prompt='x', tokenz=[1])
        """, line=2, col=4, severity="error"),
        Invalid("""
            from vime.utils.types import Sample as S
            s = S('x')
        """, line=2, col=4, fixed="""
            from vime.utils.types import Sample as S
            s = S(group_index='x')
        """),
        # The misspelt field inside a comprehension under an aliased import.
        Invalid("from vime.utils.types import Sample as S\n"
                "def load(rows):\n"
                "    return [S(prompt=p, lable=lab, metadata={'i': i}) for i, (p, lab) in enumerate(rows)]\n",
                line=3, col=12, severity="error"),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.semantic.refers_to(node.func, "Sample"):
            return
        positional = [a for a in node.args if a.keyword is None and not a.star]
        starred = any(a.star == "*" for a in node.args)
        for a in node.args:
            if a.keyword is not None and a.keyword.value not in SAMPLE_FIELD_NAMES:
                kw = a.keyword.value
                self.report(node, self.INVARIANT.render(
                    problem=f"has no field `{kw}`{suggest_field(kw)}"), severity="error")
        if positional:
            if len(positional) > len(SAMPLE_FIELDS):
                self.report(node, self.INVARIANT.render(
                    problem=f"takes {len(positional)} positional arguments; Sample has "
                    f"{len(SAMPLE_FIELDS)} fields"), severity="error")
                return
            fix = None
            if not starred:
                repl = []
                for a, spec in zip(positional, SAMPLE_FIELDS, strict=False):
                    repl.append((a, a.with_changes(keyword=cst.Name(spec.name), equal=_EQ)))
                fix = Fix("Pass the fields by keyword", True, tuple(repl))
            names = ", ".join(f.name for f in SAMPLE_FIELDS[:len(positional)])
            self.report(node, self.INVARIANT.render(
                problem=f"passes {len(positional)} positional argument(s), bound by field "
                f"order to {names}"), severity="warning", fix=fix)
