"""``vime-lint template``: the SmolLM2 tokenizer's own template (clean), and templates written
here that break each check: one that drops earlier reasoning, one that re-orders system
messages, one that writes a BOS before every message, one whose turns end on a token the engine
does not stop on, one whose generation prompt is not the rendered turn's start, one that
merges tokens across turns, and a BOS the tokenizer adds but the template never writes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from vime_lint.cli import main
from vime_lint.template import TemplateUnusable, check_template, load_tokenizer

pytestmark = pytest.mark.unit

# ChatML that keeps reasoning (`reasoning_content` rendered as a <think> block in every turn).
CHATML_KEEPS_REASONING = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}"
    "{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# Qwen3-like: reasoning is rendered only for assistant turns after the last user message.
DROPS_REASONING = (
    "{% set ns = namespace(last=0) %}{% for m in messages %}{% if m.role == 'user' %}"
    "{% set ns.last = loop.index0 %}{% endif %}{% endfor %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content and loop.index0 > ns.last %}<think>\n{{ m.reasoning_content }}"
    "\n</think>\n\n{% endif %}{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# ChatML with hermes-style tool calls and tool results.
CHATML_TOOLS = (
    "{% if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>"
    "{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# Every non-system message first, the system message(s) last.
SYSTEM_LAST = (
    "{% for m in messages if m.role != 'system' %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}{% for m in messages if m.role == 'system' %}<|im_start|>system\n"
    "{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# A BOS before every message.
BOS_EVERY_MESSAGE = (
    "{% for m in messages %}{{ bos_token }}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}{{ bos_token }}<|im_start|>assistant"
    "\n{% endif %}")

# One BOS at the start: the valid form.
BOS_ONCE = "{{ bos_token }}" + CHATML_KEEPS_REASONING

# Turns closed with <|endoftext|>, which is not SmolLM2's EOS (<|im_end|>).
ENDS_ON_ENDOFTEXT = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|endoftext|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# The generation prompt opens a <think> block that a rendered assistant turn does not have.
THINK_IN_PROMPT_ONLY = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")

# Plain text turns separated by a space: the space that ends a message and the role that starts
# the next one are one token (" assistant") once both are there.
PLAIN_TEXT = (
    "{% for m in messages %}{{ m.role }}: {{ m.content }}{% if m.role == 'assistant' %}"
    "<|im_end|>{% endif %} {% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")

# Refuses any conversation (a template that fails on one turn cannot be checked).
ALWAYS_FAILS = "{{ raise_exception('no conversation is supported') }}"


@pytest.fixture(scope="module")
def smol(smollm2_tokenizer_dir: Path) -> Any:
    return load_tokenizer(smollm2_tokenizer_dir)


def _with(tok: Any, template: str) -> Any:
    other = copy.deepcopy(tok)
    other.chat_template = template
    return other


def _codes(tok: Any, model_dir: Path | str = ".") -> dict[str, list[str]]:
    report = check_template(tok, model_dir)
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f.message)
    return out


def test_smollm2_template_is_clean_with_a_note_on_the_closing_newline(
        smollm2_tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["template", str(smollm2_tokenizer_dir)]) == 0
    out = capsys.readouterr().out
    assert "0 error(s), 0 warning(s), the template is prefix-stable" in out
    assert "5 conversation(s) rendered" in out
    # ChatML's newline after <|im_end|> is inside the rendered turn but never generated
    assert "ends with '<|im_end|>' followed by 1 token(s) '\\n'" in out


def test_keeping_reasoning_is_clean_and_its_conversation_is_rendered(smol: Any) -> None:
    report = check_template(_with(smol, CHATML_KEEPS_REASONING))
    assert report.findings == []
    assert "system + 3 turns with <think>" in report.conversations
    assert report.supports["reasoning"] is True


def test_a_template_with_tool_calls_renders_the_tool_conversation_cleanly(smol: Any) -> None:
    report = check_template(_with(smol, CHATML_TOOLS))
    assert report.findings == [] and report.supports["tool calls"] is True
    assert "system + tool call" in report.conversations and report.skipped == []


def test_vim350_a_template_that_re_renders_earlier_tool_calls(smol: Any) -> None:
    # tool calls of earlier turns are rendered only while they are the last assistant turn
    rewrites = ("{% set n = messages | length %}" + CHATML_TOOLS.replace(
        "{% for c in m.tool_calls or [] %}",
        "{% for c in (m.tool_calls if loop.index == n else []) or [] %}"))
    found = _codes(_with(smol, rewrites))
    assert set(found) == {"VIM350"}
    assert found["VIM350"][0].startswith(
        "rendering messages[:3] is not a prefix of rendering messages[:4] (adding a tool "
        "message): first difference at character")
    # the shorter rendering had the call (after the "<" both share), the longer one does not
    assert "\'tool_call>{\"name\": \"add\", \"arguments\"" in found["VIM350"][0]
    assert "' before, '|im_end|>\\n<|im_start|>tool\\n42" in found["VIM350"][0]


def test_vim351_a_template_that_drops_earlier_reasoning(smol: Any) -> None:
    found = _codes(_with(smol, DROPS_REASONING))
    assert set(found) == {"VIM351"}
    (message,) = found["VIM351"]
    assert "the reasoning of an earlier assistant turn is dropped once messages[3] (user)" \
        in message
    assert "'<think>\\nFirst add the units" in message     # what the shorter rendering had


def test_vim350_a_template_that_reorders_system_messages(smol: Any) -> None:
    found = _codes(_with(smol, SYSTEM_LAST))
    # the generation prompt is not the rendered turn's start either (the system message
    # follows the assistant turn)
    assert set(found) == {"VIM350", "VIM353"}
    message = found["VIM350"][0]
    assert "rendering messages[:1] is not a prefix of rendering messages[:2] (adding a user " \
           "message): first difference at character 12" in message   # after the common <|im_start|>
    assert "messages[0] (system) moved from character 19 to 63" in message


def test_vim354_a_template_that_writes_bos_before_every_message(
        smol: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _codes(_with(smol, BOS_EVERY_MESSAGE))
    assert set(found) == {"VIM354"}
    assert "writes bos_token 3 time(s) in a conversation of 3 messages" in found["VIM354"][1]
    # from the command line: exit 1, the finding and what vime does about it
    (tmp_path / "t.jinja").write_text(BOS_EVERY_MESSAGE)
    smol.save_pretrained(tmp_path / "tok")
    assert main(["template", str(tmp_path / "tok"), "--chat-template",
                 str(tmp_path / "t.jinja")]) == 1
    out = capsys.readouterr().out
    assert "VIM354 warning: [1 turn] the template writes bos_token 2 time(s)" in out
    assert "  vime: both encode the rendered text with add_special_tokens=False" in out


def test_vim354_one_bos_at_the_start_is_valid(smol: Any) -> None:
    assert "VIM354" not in _codes(_with(smol, BOS_ONCE))


def test_vim355_turns_that_end_on_a_token_the_engine_does_not_stop_on(smol: Any) -> None:
    found = _codes(_with(smol, ENDS_ON_ENDOFTEXT))
    assert set(found) == {"VIM355"}
    assert "with no token the engine stops on (2 '<|im_end|>')" in found["VIM355"][0]


def test_vim355_generation_config_eos_ids_count_as_stop_tokens(smol: Any,
                                                               tmp_path: Path) -> None:
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, 0]}))
    assert "VIM355" not in _codes(_with(smol, ENDS_ON_ENDOFTEXT), tmp_path)


def test_vim353_a_generation_prompt_the_rendered_turn_does_not_start_with(smol: Any) -> None:
    found = _codes(_with(smol, THINK_IN_PROMPT_ONLY))
    assert set(found) == {"VIM353"}
    assert "the engine receives '<think>\\n', the rendered turn has 'The answer is 42." \
        in found["VIM353"][0]


def test_vim352_tokens_merged_across_a_turn_boundary(smol: Any) -> None:
    found = _codes(_with(smol, PLAIN_TEXT))
    assert "VIM352" in found
    assert "re-tokenises the turn before it: the text is a prefix but token" in \
        found["VIM352"][0]
    assert "VIM350" not in found and "VIM351" not in found


def test_vim356_bos_added_by_the_tokenizer_but_not_by_the_template(smol: Any) -> None:
    from tokenizers.processors import TemplateProcessing

    adds = copy.deepcopy(smol)
    adds.bos_token = "<|endoftext|>"
    adds._tokenizer.post_processor = TemplateProcessing(
        single="<|endoftext|> $A", pair="<|endoftext|> $A $B", special_tokens=[
            ("<|endoftext|>", 0)])
    assert adds.encode("x", add_special_tokens=True)[0] == 0
    found = _codes(_with(adds, CHATML_KEEPS_REASONING))
    assert set(found) == {"VIM356"}
    assert "the template never writes bos_token" in found["VIM356"][0]
    report = check_template(_with(adds, BOS_ONCE))
    assert report.findings == []
    assert any("doubles it (VIM176 at run time)" in n.message for n in report.notes)


def test_exit_2_for_a_folder_without_a_tokenizer(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["template", str(tmp_path)]) == 2
    assert "no tokenizer could be loaded" in capsys.readouterr().err
    assert main(["template", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_exit_2_for_a_template_that_fails_on_one_turn(smol: Any) -> None:
    with pytest.raises(TemplateUnusable, match="fails on a one-turn conversation: .*no "
                                               "conversation is supported"):
        check_template(_with(smol, ALWAYS_FAILS))


def test_json_output(smollm2_tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["template", str(smollm2_tokenizer_dir), "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["findings"] == [] and data["renders"] > 20
    assert data["notes"][0]["code"] is None and data["supports"]["system"] is True


def test_import_vime_lint_template_is_light() -> None:
    import subprocess
    import sys

    code = ("import sys, vime_lint.cli, vime_lint.template; "
            "print(sorted(m for m in ('transformers', 'torch', 'jinja2') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
