"""Findings grouped per (invariant, field, hook), for `vime-lint check` and `vime train`.

A rollout that forgets ``reward`` on a 64 x 8 batch breaks VIM110 on 512 samples; the report
prints that as one finding with the count, the first few locations and one fix::

    VIM110 error: samples[0][0].reward (index=0) is None; every sample needs a reward ...
      512 findings at samples[*][*].reward: also samples[0][1].reward (index=1), samples[0][2].reward (index=2) and 509 more
      in rollout `my_rollout.generate_rollout` (--rollout-function-path) step 0 (vime-lint check dry run)
      fix: set sample.reward to a float on every sample before it is returned (...)

Usage::

    groups = group_findings(report.findings)          # list[FindingGroup], first-seen order
    print("\\n".join(g.format() for g in groups))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from vime.contract.errors import Violation

__all__ = ["SHOWN_LOCATIONS", "FindingGroup", "field_pattern", "group_findings"]

#: Locations a group names besides its first finding.
SHOWN_LOCATIONS = 2

_INDEX_RE = re.compile(r"\[\d+\]")
_SAMPLE_INDEX_RE = re.compile(r" \(index=[^)]*\)")


def field_pattern(where: str) -> str:
    """``samples[3][1].loss_mask (index=13)`` -> ``samples[*][*].loss_mask``: the location with
    its positions (``[N]``) and sample index left out, which names the field."""
    return _INDEX_RE.sub("[*]", _SAMPLE_INDEX_RE.sub("", where))


@dataclass
class FindingGroup:
    """Findings of one invariant, severity, field and hook (``context``), in the order seen."""

    findings: list[Violation] = field(default_factory=list)

    @property
    def first(self) -> Violation:
        return self.findings[0]

    def format(self) -> str:
        """The first finding as ``Violation.format`` prints it, with the count and the next
        :data:`SHOWN_LOCATIONS` locations when there is more than one."""
        first = self.first
        if len(self.distinct()) == 1:
            return first.format()
        count = len(self.distinct())
        lines = [f"{first.id} {first.severity}: {first.where} {first.message}".rstrip()]
        lines.append(f"  {count} findings at {self._others()}")
        if first.context:
            lines.append(f"  in {first.context}")
        if first.fix:
            lines.append(f"  fix: {first.fix}")
        return "\n".join(lines)


    def distinct(self) -> list[Violation]:
        """The group's findings with repeats (same place and text) left out: what the count
        and the locations name."""
        seen: set[tuple[str, str]] = set()
        out = []
        for v in self.findings:
            if (v.where, v.message) not in seen:
                seen.add((v.where, v.message))
                out.append(v)
        return out

    def _others(self) -> str:
        """The group's site and the next locations, each named once: ``samples[*][*].reward:
        also samples[0][1].reward (index=1), ... and N more`` where positions differ;
        ``generate input: also index=0, ...`` where only the sample differs; the site alone
        where the locations are the same."""
        site = field_pattern(self.first.where)
        rest = [v for v in self.distinct() if v is not self.first]
        if "[*]" in site:
            names = [v.where for v in rest]
        else:   # one site: the sample indices are what differs
            found = _SAMPLE_INDEX_RE.search(self.first.where)
            first = found.group(0) if found else None
            names = list(dict.fromkeys(m.group(0).strip(" ()") for v in rest
                                       if (m := _SAMPLE_INDEX_RE.search(v.where))
                                       and m.group(0) != first))
        if not names:
            return (f"{site}: the first is shown, --max-violations {len(self.distinct())} "
                    "lists each")
        shown = names[:SHOWN_LOCATIONS]
        more = len(names) - len(shown)
        return f"{site}: also {', '.join(shown)}" + (f" and {more} more" if more else "")


def group_findings(findings: Sequence[Violation]) -> list[FindingGroup]:
    """``findings`` grouped by (id, severity, :func:`field_pattern` of ``where``, context), in
    first-seen order (``list[FindingGroup]``)."""
    groups: dict[tuple[str, str, str, str], FindingGroup] = {}
    for v in findings:
        key = (v.id, v.severity, field_pattern(v.where), v.context)
        groups.setdefault(key, FindingGroup()).findings.append(v)
    return list(groups.values())
