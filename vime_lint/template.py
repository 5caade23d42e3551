"""``vime-lint template MODEL_DIR``: how a model's chat template behaves over several turns.

Renders conversations of 1 to 4 turns (a system message, user and assistant turns, and, where
the template supports them, ``<think>`` reasoning and a tool call with its result) and checks,
for every message ``k`` of each (``R(k)``: the first ``k`` messages rendered, ``H(k)``: the
same with the generation prompt):

- ``R(k)`` is a prefix of ``R(k+1)`` in text (VIM350; VIM351 when what changed is an earlier
  turn's reasoning) and in token ids (VIM352);
- before an assistant message, ``H(k)``, encoded as vime's engines receive it (the text
  encoded once with ``add_special_tokens=False``: the built-in generate through
  ``vime.utils.data.render_chat_prompt``, the agent endpoint through
  ``vime.agent.render.chat_prompt_ids``), is the start of ``R(k+1)`` in text and ids (VIM353);
- the template writes ``bos_token`` once, at the start (VIM354), and writes it at all when the
  tokenizer would add one (VIM356);
- each rendered assistant turn holds a token the engine stops on (EOS or the folder's
  ``generation_config.json`` eos ids), where its loss mask ends (VIM355); what follows that
  token inside the turn (ChatML's newline) is reported as a note.

Each finding says where (conversation, message, character or token position, both renderings)
and what vime's built-in generate and the agent endpoint do about it. Nothing is downloaded:
``MODEL_DIR`` is a prepared model folder (``vime model prepare``) or a tokenizer folder.
transformers is imported when the command runs, never by ``import vime_lint``.

Usage::

    vime-lint template runs/models/smollm2
    vime-lint template TOKENIZER_DIR --output-format json
    vime-lint template TOKENIZER_DIR --chat-template my_template.jinja

Exit codes as ``vime-lint rollout``: 0 clean (notes only), 1 findings, 2 a folder without a
tokenizer or chat template, or a template that fails on a one-turn conversation.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Conversation", "Finding", "Report", "add_parser", "check_template", "conversations",
           "run_command"]

#: What a BOS written by the template is replaced with while counting how often it is written.
_BOS_SENTINEL = "\x00VIME-BOS\x00"
_REASONING = "First add the units, then the tens."
_SNIPPET = 40

# What vime's own paths do about each finding (printed under it).
_VIME_DOES: dict[str, str] = {
    "VIM350": "built-in generate: renders each prompt once (single turn), so it is unaffected; "
              "a custom multi-turn generate that continues from sample.tokens trains on the "
              "engine's tokens, not on this rendering. Agent endpoint: cannot splice the call "
              "onto the previous one, renders it from scratch and starts a new segment (a "
              "context rewrite, counted in rollout/agent/context_rewrites); each segment is "
              "trained as the model saw it. --loss-mask-type (SFT) refuses the conversation "
              "(ValueError: not prefix-stable).",
    "VIM351": "built-in generate: unaffected (single turn). Agent endpoint: every call after "
              "a reasoning turn renders from scratch and becomes a new segment (one sample per "
              "turn, the earlier reasoning not in its prompt); VIM194 at run time reports "
              "trajectories that kept it.",
    "VIM352": "agent endpoint: keeps the engine's tokens and encodes only the text after "
              "them, so its trajectory differs from a fresh encoding at this boundary; the "
              "run-time comparator (--check-token-boundaries, VIM194) reports it. Built-in "
              "generate: unaffected (one encoding per prompt).",
    "VIM353": "built-in generate and agent endpoint send exactly the generation prompt "
              "shown (text encoded once, add_special_tokens=False) and train on the engine's "
              "tokens after it; a re-rendered conversation (SFT, the loss mask's prefix "
              "method, a later agent call) differs from it here.",
    "VIM354": "both encode the rendered text with add_special_tokens=False, so the BOS tokens "
              "are the template's own: each one written here is in every prompt and "
              "training sequence.",
    "VIM355": "built-in generate stops on EOS and --rollout-stop-token-ids only; without the "
              "turn's end token among them every response runs to --rollout-max-response-len. "
              "The agent endpoint stops on the same ids.",
    "VIM356": "both encode the rendered text with add_special_tokens=False (the template is "
              "trusted to write special tokens), so no BOS is added for it.",
}


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation to render: a name for messages, the messages, the tools."""

    name: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] | None = None


@dataclass(slots=True)
class Finding:
    """One way the template breaks, or a note (``code`` empty)."""

    code: str
    severity: str
    conversation: str
    message: str
    vime: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"code": self.code or None, "severity": self.severity,
                "conversation": self.conversation, "message": self.message, "vime": self.vime}


@dataclass(slots=True)
class Report:
    """What ``vime-lint template`` found for one folder."""

    model_dir: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    conversations: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    renders: int = 0
    seconds: float = 0.0
    supports: dict[str, bool] = field(default_factory=dict)

    def add(self, code: str, conversation: str, message: str) -> None:
        """Record a finding of invariant ``code`` (its severity from the contract); at most
        one per code and conversation (the first place it breaks)."""
        from vime.contract.invariants import INVARIANTS

        if any(f.code == code and f.conversation == conversation for f in self.findings):
            return
        self.findings.append(Finding(code, INVARIANTS[code].severity, conversation, message,
                                     _VIME_DOES.get(code, "")))

    def note(self, conversation: str, message: str) -> None:
        """Record a note (not a finding), once per text."""
        if not any(n.message == message for n in self.notes):
            self.notes.append(Finding("", "note", conversation, message))


class TemplateUnusable(Exception):
    """The folder has no tokenizer or chat template, or the template fails on one turn."""


def _user(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"What is {12 + i} + {30 + i}?"}


def _assistant(i: int, think: str | None) -> dict[str, Any]:
    answer = f"The answer is {42 + 2 * i}."
    if think == "field":
        return {"role": "assistant", "content": answer, "reasoning_content": _REASONING}
    if think == "inline":
        return {"role": "assistant", "content": f"<think>\n{_REASONING}\n</think>\n\n{answer}"}
    return {"role": "assistant", "content": answer}


def conversations(template: str) -> list[Conversation]:
    """The conversations to render for ``template`` (its source): 1 to 4 turns with a system
    message, one without it, one with reasoning in every assistant turn when the template
    mentions ``<think>`` or ``reasoning_content``, one with a tool call when it renders
    ``tool_calls``."""
    system = {"role": "system", "content": "You are a careful assistant."}
    out = [Conversation("1 turn", (_user(0), _assistant(0, None)))]
    for n in range(1, 5):
        msgs: list[dict[str, Any]] = [system]
        for i in range(n):
            msgs += [_user(i), _assistant(i, None)]
        out.append(Conversation(f"system + {n} turn{'s' if n > 1 else ''}", tuple(msgs)))
    think = "field" if "reasoning_content" in template else (
        "inline" if "<think>" in template else None)
    if think:
        msgs = [system]
        for i in range(3):
            msgs += [_user(i), _assistant(i, think)]
        out.append(Conversation("system + 3 turns with <think>", tuple(msgs)))
    if "tool_calls" in template:
        tool = {"type": "function", "function": {
            "name": "add", "description": "Add two integers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                            "b": {"type": "integer"}},
                           "required": ["a", "b"]}}}
        call = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "add", "arguments": {"a": 12, "b": 30}}}]}
        msgs = [system, _user(0), call,
                {"role": "tool", "content": "42", "tool_call_id": "call_0", "name": "add"},
                _assistant(0, None), _user(1), _assistant(1, None)]
        out.append(Conversation("system + tool call", tuple(msgs), (tool,)))
    return out


def _short(text: str, width: int = _SNIPPET) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")


def _first_difference(a: Sequence[Any], b: Sequence[Any]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


class _Renderer:
    """Renders and encodes as vime does, counting renders; caches by (messages, flags)."""

    def __init__(self, tokenizer: Any, template_kwargs: Mapping[str, Any]) -> None:
        self.tok = tokenizer
        self.kwargs = dict(template_kwargs)
        self.count = 0

    def text(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None,
             generation: bool, **extra: Any) -> str:
        self.count += 1
        return str(self.tok.apply_chat_template(
            [dict(m) for m in messages], tools=list(tools) if tools else None, tokenize=False,
            add_generation_prompt=generation, **{**self.kwargs, **extra}))

    def ids(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False)) if text else []

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))


def _stop_ids(tokenizer: Any, model_dir: Path) -> dict[int, str]:
    """Token ids the engine stops on by default: the tokenizer's EOS and the folder's
    ``generation_config.json`` ``eos_token_id`` (an int or a list)."""
    ids: set[int] = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen = model_dir / "generation_config.json"
    if gen.is_file():
        try:
            value = json.loads(gen.read_text(encoding="utf-8")).get("eos_token_id")
        except (OSError, ValueError):
            value = None
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, int):
                ids.add(v)
    return {i: str(tokenizer.decode([i], skip_special_tokens=False)) for i in sorted(ids)}


def _moved(prev: str, cur: str, messages: Sequence[Mapping[str, Any]], k: int) -> str:
    """Which earlier message the longer rendering changes: the first whose content is found
    in ``prev`` but at another place (or not at all) in ``cur``."""
    for j, m in enumerate(messages[:k]):
        content = str(m.get("content") or "")
        if not content:
            continue
        p, q = prev.find(content), cur.find(content)
        if p >= 0 and p != q:
            role = m.get("role")
            if q < 0:
                return f"; messages[{j}] ({role}) is no longer rendered as it was"
            return f"; messages[{j}] ({role}) moved from character {p} to {q}"
    return ""


def _check_conversation(r: _Renderer, conv: Conversation, stops: Mapping[int, str],
                        report: Report) -> None:
    msgs, tools, name = conv.messages, conv.tools, conv.name
    prev_text, prev_ids = "", list[int]()
    for k, message in enumerate(msgs):
        role = message.get("role")
        cur_text = r.text(msgs[:k + 1], tools, False)
        cur_ids = r.ids(cur_text)
        if not cur_text.startswith(prev_text):
            at = _first_difference(prev_text, cur_text)
            dropped = any("<think>" in str(m.get("content") or "") or m.get("reasoning_content")
                          for m in msgs[:k] if m.get("role") == "assistant") \
                and _REASONING in prev_text[at:] and _REASONING not in cur_text[at:]
            code = "VIM351" if dropped else "VIM350"
            what = ("the reasoning of an earlier assistant turn is dropped once "
                    f"messages[{k}] ({role}) is added" if dropped else
                    f"rendering messages[:{k}] is not a prefix of rendering messages[:{k + 1}] "
                    f"(adding a {role} message)")
            report.add(code, name, f"{what}: first difference at character {at}: "
                       f"{_short(prev_text[at:])} before, {_short(cur_text[at:])} after"
                       f"{_moved(prev_text, cur_text, msgs, k) if not dropped else ''}")
        elif prev_ids != cur_ids[:len(prev_ids)]:
            at = _first_difference(prev_ids, cur_ids)
            report.add("VIM352", name, f"adding messages[{k}] ({role}) re-tokenises the turn "
                       f"before it: the text is a prefix but token {at} is "
                       f"{prev_ids[at:at + 3]} {_short(r.decode(prev_ids[at:at + 3]))} alone "
                       f"and {cur_ids[at:at + 3]} {_short(r.decode(cur_ids[at:at + 3]))} "
                       "in the longer conversation (a BPE merge across the boundary)")
        if role == "assistant":
            _check_turn(r, conv, k, cur_text, cur_ids, stops, report)
        prev_text, prev_ids = cur_text, cur_ids


def _check_turn(r: _Renderer, conv: Conversation, k: int, cur_text: str, cur_ids: list[int],
                stops: Mapping[int, str], report: Report) -> None:
    msgs, tools, name = conv.messages, conv.tools, conv.name
    head_text = r.text(msgs[:k], tools, True)
    head_ids = r.ids(head_text)
    if not cur_text.startswith(head_text):
        at = _first_difference(head_text, cur_text)
        report.add("VIM353", name, f"the generation prompt before messages[{k}] (assistant) is "
                   f"not the start of the turn the template renders: first difference at "
                   f"character {at}: the engine receives {_short(head_text[at:])}, the "
                   f"rendered turn has {_short(cur_text[at:])}")
        return
    if head_ids != cur_ids[:len(head_ids)]:
        at = _first_difference(head_ids, cur_ids)
        report.add("VIM353", name, f"the generation prompt before messages[{k}] (assistant) "
                   f"ends in other tokens than the rendered turn: token {at} is "
                   f"{head_ids[at:at + 3]} {_short(r.decode(head_ids[at:at + 3]))} in the "
                   f"prompt the engine receives and {cur_ids[at:at + 3]} "
                   f"{_short(r.decode(cur_ids[at:at + 3]))} in the rendered conversation")
        return
    span = cur_ids[len(head_ids):]
    ends = [i for i, t in enumerate(span) if t in stops]
    if not ends:
        known = ", ".join(f"{i} {t!r}" for i, t in stops.items()) or "no EOS is known"
        report.add("VIM355", name, f"the assistant turn messages[{k}] renders as "
                   f"{_short(r.decode(span), 60)} ({len(span)} tokens) with no token the "
                   f"engine stops on ({known}): generation would not end where the turn ends")
        return
    after = span[ends[-1] + 1:]
    if after:
        report.note(name, f"an assistant turn ends with {stops[span[ends[-1]]]!r} followed by "
                    f"{len(after)} token(s) {_short(r.decode(after))} the engine never "
                    "generates: the agent endpoint adds them to the trajectory with loss mask "
                    "0; the prefix loss mask (--loss-mask-type, SFT) trains them")


def _check_bos(r: _Renderer, conv: Conversation, report: Report) -> None:
    tok = r.tok
    bos_id = getattr(tok, "bos_token_id", None)
    text = r.text(conv.messages, conv.tools, False, bos_token=_BOS_SENTINEL)
    count = text.count(_BOS_SENTINEL)
    if count > 1 or (count == 1 and not text.startswith(_BOS_SENTINEL)):
        where = [i for i in range(len(text)) if text.startswith(_BOS_SENTINEL, i)]
        report.add("VIM354", conv.name, f"the template writes bos_token {count} time(s) in a "
                   f"conversation of {len(conv.messages)} messages, at characters "
                   f"{where[:6]}{' ...' if len(where) > 6 else ''} (expected once, at 0)")
    if bos_id is None:
        return
    with_special = list(tok.encode("x", add_special_tokens=True))
    adds_bos = bool(with_special) and with_special[0] == bos_id
    if adds_bos and count == 0:
        report.add("VIM356", conv.name, f"the tokenizer adds BOS {tok.bos_token!r} when "
                   "encoding with special tokens, but the template never writes bos_token: "
                   "the prompt vime sends starts without it")
    if adds_bos and count >= 1:
        report.note(conv.name, f"the template writes BOS {tok.bos_token!r} and the tokenizer "
                    "adds another when encoding with special tokens: encoding a rendered "
                    "prompt with add_special_tokens=True doubles it (VIM176 at run time); "
                    "vime's generate and agent endpoint encode with add_special_tokens=False")


def _tokenizer_class(model_dir: Path) -> Any:
    """The class ``tokenizer_config.json`` names (what ``AutoTokenizer`` would pick), taken
    from ``transformers`` directly: ``AutoTokenizer``'s own import loads torch (seconds), a
    tokenizer class does not. ``AutoTokenizer`` when the folder names none or an unknown one."""
    import transformers

    try:
        config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    name = config.get("tokenizer_class") if isinstance(config, dict) else None
    if isinstance(name, str) and not config.get("auto_map"):
        try:
            return getattr(transformers, name)
        except (AttributeError, ImportError):
            pass
    return transformers.AutoTokenizer


def load_tokenizer(model_dir: Path, chat_template: str | None = None) -> Any:
    """The tokenizer of ``model_dir`` (local files only), with ``chat_template`` in place of
    its own when given.

    Raises:
        TemplateUnusable: no tokenizer can be loaded, or it has no chat template.
    """
    if not model_dir.is_dir():
        raise TemplateUnusable(f"{model_dir} is not a folder (give a prepared model or "
                               "tokenizer folder)")
    try:
        tok = _tokenizer_class(model_dir).from_pretrained(str(model_dir), local_files_only=True)
    except ImportError as exc:
        raise TemplateUnusable(f"transformers is not installed ({exc})") from None
    except (OSError, ValueError) as exc:
        raise TemplateUnusable(f"{model_dir}: no tokenizer could be loaded: {exc}") from None
    if chat_template is not None:
        tok.chat_template = chat_template
    if not getattr(tok, "chat_template", None):
        raise TemplateUnusable(f"{model_dir}: the tokenizer has no chat_template (vime's "
                               "--apply-chat-template and the agent endpoint need one)")
    return tok


def check_template(tokenizer: Any, model_dir: Path | str = ".", *,
                   template_kwargs: Mapping[str, Any] | None = None) -> Report:
    """Render :func:`conversations` with ``tokenizer``'s chat template and check them (see the
    module docstring).

    Raises:
        TemplateUnusable: the template fails on a one-turn conversation.
    """
    start = time.perf_counter()
    model_dir = Path(model_dir)
    template = str(tokenizer.chat_template)
    report = Report(str(model_dir))
    report.supports = {"system": "system" in template,
                       "reasoning": "reasoning_content" in template or "<think>" in template,
                       "tool calls": "tool_calls" in template}
    r = _Renderer(tokenizer, template_kwargs or {})
    stops = _stop_ids(tokenizer, model_dir)
    for conv in conversations(template):
        try:
            _check_conversation(r, conv, stops, report)
            _check_bos(r, conv, report)
        except Exception as exc:  # jinja2 errors, raise_exception(...) in the template
            if conv.name == "1 turn":
                raise TemplateUnusable(f"the chat template fails on a one-turn conversation: "
                                       f"{type(exc).__name__}: {exc}") from exc
            report.skipped.append(f"{conv.name}: the template refuses it ({exc})")
            continue
        report.conversations.append(conv.name)
    report.renders = r.count
    report.seconds = time.perf_counter() - start
    return report


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``template`` subcommand to ``vime-lint``'s subparsers."""
    p = sub.add_parser("template", help="check a model's chat template over several turns "
                                        "(prefixes, generation prompt, BOS, end token)",
                       epilog="exit status: 0 clean (or --exit-zero); 1 findings; 2 a folder "
                              "without a tokenizer or chat template, or a template that fails "
                              "on one turn.")
    p.add_argument("model_dir", type=Path, metavar="MODEL_DIR",
                   help="a prepared model folder or a tokenizer folder (local files only)")
    p.add_argument("--chat-template", type=Path, default=None, metavar="FILE",
                   help="a Jinja file to check in place of the folder's chat template")
    p.add_argument("--apply-chat-template-kwargs", type=json.loads, default={},
                   metavar="JSON", help="template keywords, as for vime train")
    p.add_argument("--output-format", choices=("concise", "json"), default="concise")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")


def render_report(report: Report, out: TextIO, output_format: str = "concise") -> None:
    """Print ``report`` as text (findings, then what vime does, then notes) or JSON."""
    if output_format == "json":
        out.write(json.dumps({
            "model_dir": report.model_dir, "findings": [f.to_dict() for f in report.findings],
            "notes": [n.to_dict() for n in report.notes], "conversations": report.conversations,
            "skipped": report.skipped, "supports": report.supports,
            "renders": report.renders, "seconds": round(report.seconds, 3)}, indent=2) + "\n")
        return
    for f in report.findings:
        out.write(f"{report.model_dir}: {f.code} {f.severity}: [{f.conversation}] {f.message}\n")
        if f.vime:
            out.write(f"  vime: {f.vime}\n")
    for n in report.notes:
        out.write(f"{report.model_dir}: note: [{n.conversation}] {n.message}\n")
    for s in report.skipped:
        out.write(f"{report.model_dir}: skipped: {s}\n")
    supports = ", ".join(k for k, v in report.supports.items() if v) or "none of system, " \
        "reasoning, tool calls"
    errors = sum(f.severity == "error" for f in report.findings)
    out.write(f"{len(report.conversations)} conversation(s) rendered ({report.renders} renders, "
              f"{report.seconds:.2f} s; the template mentions {supports}): "
              f"{errors} error(s), {len(report.findings) - errors} warning(s)"
              f"{'' if report.findings else ', the template is prefix-stable'}\n")


def run_command(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``vime-lint template``: 0 clean, 1 findings, 2 an unusable folder or template."""
    try:
        template = None
        if ns.chat_template is not None:
            template = ns.chat_template.read_text(encoding="utf-8")
        tok = load_tokenizer(ns.model_dir, template)
        report = check_template(tok, ns.model_dir,
                                template_kwargs=ns.apply_chat_template_kwargs)
    except (TemplateUnusable, OSError) as exc:
        print(f"vime-lint template: {exc}", file=err)
        return 2
    render_report(report, out, ns.output_format)
    return 1 if report.findings and not ns.exit_zero else 0
