"""Reward probes: what a reward should compute, as a table of responses and expectations.

Usage::

    rows = [ProbeRow(prompt="What is 2+3?", label="5"), ProbeRow("What is 7-4?", "3")]
    plan = responses_for(rows[0], rows, extra=[])      # {name: (text, status)} for one row
    findings = judge(scores, rows)                     # [(probe id, message)] from the scores

No reward is called here (:mod:`vime_lint.check.probe_run` does that): this module builds the
responses from each label and decides, from the rewards they got, which expectation fails.
Each expectation is one entry of :data:`PROBES` with its contract id (``VIM300``-``VIM310``;
VIM308 and VIM309 probe ``--dynamic-sampling-filter-path`` on the groups of
:data:`FILTER_GROUPS`, judged by :func:`judge_filter`).

The responses of a row (``{answer}`` is the label, ``{wrong}`` another row's label):

- gold, in each rendering of :data:`RENDERINGS` (bare, ``\\boxed{}``, ``#### x``,
  ``<answer>x</answer>``, "The answer is x."); the best-scored one is *gold*, and the others
  are then shown in that rendering;
- wrong: ``{wrong}`` in gold's rendering;
- without the answer: empty, blank, the prompt echoed, gold cut short (status ``TRUNCATED``),
  "I don't know.";
- two answers: wrong then gold, gold then wrong (in gold's rendering);
- decorated gold: surrounding blanks, ``$...$``, upper case;
- wrong answers that hold the label as a substring (VIM311): the label followed by a digit
  (``"41"`` for ``"4"``, when the label ends with a digit) and, for an integer label, a list of
  candidates with the label inside and another number last (``"3, 4, 5 or 6"``), both in
  gold's rendering;
- an unparseable label (``"???"``) with the answer-free responses and gold's text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["FILTER_GROUPS", "FILTER_PROBES", "NO_ANSWER", "PROBES", "Probe", "ProbeRow",
           "RENDERINGS", "SUBSTRING_KINDS", "UNPARSEABLE_LABEL", "judge", "judge_filter", "responses_for",
           "substring_answers", "wrong_label"]

#: How a model may write its final answer; ``{x}`` is the answer.
RENDERINGS: dict[str, str] = {
    "bare": "{x}",
    "boxed": "The result is \\boxed{{{x}}}.",
    "hashes": "Let me compute it.\n#### {x}",
    "answer-tag": "<think>I compute it.</think><answer>{x}</answer>",
    "sentence": "The answer is {x}.",
}
#: Responses that hold no answer (name -> text; ``echo`` and ``truncated`` are built per row).
NO_ANSWER: dict[str, str] = {"empty": "", "blank": "   \n ", "no-answer": "I don't know."}
#: A label no reward can parse.
UNPARSEABLE_LABEL = "???"


@dataclass(frozen=True)
class ProbeRow:
    """One prompt and its label (from ``--prompt-data`` or the synthetic prompts), with the
    row's metadata (``--metadata-key``) as the data source gives it to the sample."""

    prompt: str
    label: str
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Probe:
    """One expectation on a reward: its id, what it checks, and how to decide it."""

    id: str
    description: str


#: Every expectation, in report order (the ids' records are in ``vime.contract.invariants``).
PROBES: tuple[Probe, ...] = (
    Probe("VIM300", "gold scores strictly above a wrong answer"),
    Probe("VIM301", "no response without the answer reaches gold's score"),
    Probe("VIM302", "the same response scores the same twice"),
    Probe("VIM303", "no plausible response makes the reward raise or return NaN / inf"),
    Probe("VIM304", "with two answers, the last one counts"),
    Probe("VIM305", "an unparseable label never gives gold's score"),
    Probe("VIM306", "no answer does not score above a wrong answer"),
    Probe("VIM307", "a group reward follows its samples when the group is permuted"),
    Probe("VIM308", "a dynamic sampling filter keeps groups whose rewards differ"),
    Probe("VIM309", "a filter that drops equal rewards drops them up to float noise too"),
    Probe("VIM310", "the reward reads no field or metadata key unset at reward time"),
    Probe("VIM311", "a wrong answer that holds the label as a substring scores below gold"),
)
#: The ids of the dynamic-sampling filter's probes (the others probe the reward).
FILTER_PROBES = ("VIM308", "VIM309")

#: The groups a dynamic sampling filter is probed with: name -> rewards of one group.
FILTER_GROUPS: dict[str, tuple[float, ...]] = {
    "mixed 0/1": (1.0, 0.0, 1.0, 0.0),
    "distinct continuous": (0.1, 0.4, 0.7, 0.9),
    "all equal": (0.5, 0.5, 0.5, 0.5),
    "equal up to float noise": (0.5, 0.5 + 1e-9, 0.5 - 1e-9, 0.5),
}


def judge_filter(kept: Mapping[str, bool | None]) -> list[tuple[str, str, bool]]:
    """The expectations a dynamic sampling filter breaks, from whether it kept each group of
    :data:`FILTER_GROUPS` (None: it raised or returned no ``DynamicFilterOutput``):
    ``[(probe id, problem in words, is an error)]``."""
    out: list[tuple[str, str, bool]] = []

    def group(name: str) -> str:
        return f"{name} rewards {list(FILTER_GROUPS[name])}"

    if kept.get("mixed 0/1") is False:
        out.append(("VIM308", f"the group with {group('mixed 0/1')} is dropped: the groups "
                              "that carry a learning signal are thrown away", True))
    elif kept.get("distinct continuous") is False:
        out.append(("VIM308", f"the group with {group('distinct continuous')} is dropped: "
                              "every group with continuous rewards would be", False))
    if kept.get("all equal") is False and kept.get("equal up to float noise") is True:
        out.append(("VIM309", f"the group with {group('all equal')} is dropped, the one with "
                              f"{group('equal up to float noise')} is kept: the spread is "
                              "compared exactly", False))
    return out


def wrong_label(row: ProbeRow, rows: Sequence[ProbeRow]) -> str:
    """Another row's label, else a number next to this one, else ``"wrong"``."""
    for other in rows:
        if other.label.strip() != row.label.strip():
            return other.label
    try:
        return str(int(row.label) + 1)
    except ValueError:
        return "wrong"


def render(kind: str, answer: str) -> str:
    """``answer`` written the way :data:`RENDERINGS` ``[kind]`` writes it."""
    return RENDERINGS[kind].format(x=answer)


def responses_for(row: ProbeRow, rows: Sequence[ProbeRow], gold_kind: str,
                  extra: Sequence[tuple[str, str]] = ()) -> dict[str, tuple[str, str]]:
    """The responses of one row once gold's rendering is known: name -> (text, status), status
    ``"completed"`` or ``"truncated"``. ``extra``: ``(name, text)`` pairs of
    ``--probe-responses-path`` (checked like the built-in ones only for raising)."""
    gold = render(gold_kind, row.label) if gold_kind in RENDERINGS else dict(extra)[gold_kind]
    wrong = wrong_label(row, rows)
    out = {"gold": (gold, "completed"),
           "wrong": (gold.replace(row.label, wrong) if row.label in gold
                     else render("sentence", wrong), "completed")}
    out.update({name: (text, "completed") for name, text in NO_ANSWER.items()})
    out["echo"] = (row.prompt, "completed")
    if len(gold) > 1:
        cut = gold[:max(1, gold.find(row.label))] if row.label in gold else gold[:len(gold) // 2]
        if row.label not in cut:
            out["truncated"] = (cut, "truncated")
    out["gold-last"] = (f"{out['wrong'][0]}\nWait, let me recheck.\n{gold}", "completed")
    out["gold-first"] = (f"{gold}\nWait, let me recheck.\n{out['wrong'][0]}", "completed")
    out["gold-blanks"] = (f"  {gold}  \n", "completed")
    out["gold-dollars"] = (gold.replace(row.label, f"${row.label}$"), "completed")
    out["gold-upper"] = (gold.upper(), "completed")
    if row.label in gold:
        for name, text in substring_answers(row.label).items():
            out[name] = (gold.replace(row.label, text), "completed")
    for name, text in extra:
        out.setdefault(f"custom:{name}", (text, "completed"))
    return out


#: What each of :func:`substring_answers`' responses is, for VIM311's message.
SUBSTRING_KINDS = {"label-then-digit": "the label followed by a digit",
                   "candidates": "a list of candidates, the label among them, another last"}


def substring_answers(label: str) -> dict[str, str]:
    """Wrong answers that hold ``label`` as a substring (VIM311): name -> answer text.

    ``label-then-digit`` (``"41"`` for ``"4"``) when the label ends with a digit;
    ``candidates`` (``"3, 4, 5 or 6"``) when it is an integer; an empty dict for other labels
    (a word inside a longer answer may be right)."""
    label = label.strip()
    out: dict[str, str] = {}
    if label[-1:].isdigit():
        out["label-then-digit"] = f"{label}1"
    try:
        n = int(label)
    except ValueError:
        return out
    out["candidates"] = f"{n - 1}, {label}, {n + 1} or {n + 2}"
    return out


#: Responses without the answer (VIM301 compares them with gold).
WITHOUT_ANSWER = ("empty", "blank", "no-answer", "echo", "truncated")


def _short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split()) or repr(text)
    return flat if len(flat) <= width else flat[:width - 3] + "..."


def judge(row: ProbeRow, texts: Mapping[str, tuple[str, str]],
          scores: Mapping[str, float | None], again: Mapping[str, float | None],
          errors: Mapping[str, str], unparseable: Mapping[str, float | None],
          gold_score: float) -> list[tuple[str, str]]:
    """The expectations one row breaks: ``[(probe id, problem in words)]``.

    Args:
        row: the row.
        texts: :func:`responses_for`'s responses.
        scores: reward of each response (None when it raised or gave no number).
        again: reward of a second call on the same responses (for VIM302).
        errors: name -> the exception, for responses whose call raised.
        unparseable: reward of answer-free responses and gold's text under the label
            :data:`UNPARSEABLE_LABEL`.
        gold_score: gold's reward.
    """
    out: list[tuple[str, str]] = []
    label = f"label {row.label!r}"

    def said(name: str) -> str:
        return f"{name} {_short(texts[name][0])!r} scores {scores[name]}"

    wrong = scores.get("wrong")
    if wrong is not None and wrong >= gold_score:
        out.append(("VIM300", f"{label}: gold {_short(texts['gold'][0])!r} scores {gold_score}, "
                              f"{said('wrong')}: a wrong answer is not ranked below the right "
                              "one"))
    for name in WITHOUT_ANSWER:
        value = scores.get(name)
        if name in texts and value is not None and value >= gold_score:
            out.append(("VIM301", f"{label}: {said(name)}, as much as gold "
                                  f"{_short(texts['gold'][0])!r} ({gold_score})"))
            break
    for name, value in scores.items():
        second = again.get(name)
        if value is not None and second is not None and value != second:
            out.append(("VIM302", f"{label}: {name} {_short(texts[name][0])!r} scored {value}, "
                                  f"then {second}"))
            break
    for name, message in errors.items():
        did = (f"{message}, not a finite number (every advantage of its group turns NaN)"
               if message.startswith("returned") else f"raised {message}")
        out.append(("VIM303", f"{label}: {name} {_short(texts[name][0])!r} {did}"))
        break
    first, last = scores.get("gold-first"), scores.get("gold-last")
    if first is not None and last is not None and first > last:
        out.append(("VIM304", f"{label}: gold first then wrong scores {first}, wrong then gold "
                              f"{last}: the first answer is graded, not the last"))
    for name, value in unparseable.items():
        if value is not None and value >= gold_score:
            out.append(("VIM305", f"label {UNPARSEABLE_LABEL!r} (unparseable): {name} "
                                  f"{_short(texts.get(name, ('',))[0])!r} scores {value}, "
                                  f"gold's score ({gold_score}) for a label it cannot read"))
            break
    if not any(pid == "VIM300" for pid, _ in out):
        for name, what in SUBSTRING_KINDS.items():
            value = scores.get(name)
            if name in texts and value is not None and value >= gold_score:
                out.append(("VIM311", f"{label}: the wrong answer {_short(texts[name][0])!r} "
                                      f"({what}) scores {value}, as much as gold "
                                      f"{_short(texts['gold'][0])!r}: the reward finds the "
                                      "label inside a wrong answer and pays for it"))
                break
    no_answer = scores.get("no-answer")
    if wrong is not None and no_answer is not None and no_answer > wrong \
            and not any(pid == "VIM301" for pid, _ in out):
        out.append(("VIM306", f"{label}: {said('no-answer')}, above {said('wrong')}"))
    return out


#: A group reward's probe: the responses of one group, in order.
GROUP_ORDER = ("gold", "wrong", "empty", "gold")


def judge_group(row: ProbeRow, forward: Sequence[float | None],
                backward: Sequence[float | None]) -> list[tuple[str, str]]:
    """VIM307 on a group of :data:`GROUP_ORDER` scored in order (``forward``) and reversed
    (``backward``, as returned for the reversed group)."""
    out: list[tuple[str, str]] = []
    if None in forward or None in backward:
        return out
    if list(reversed(backward)) != list(forward):
        out.append(("VIM307", f"label {row.label!r}: the group {list(GROUP_ORDER)} scores "
                              f"{list(forward)}, reversed it scores {list(backward)}: rewards "
                              "follow positions, not samples"))
    elif forward[0] != forward[3]:
        out.append(("VIM307", f"label {row.label!r}: two equal gold responses in one group "
                              f"score {forward[0]} and {forward[3]}"))
    return out


