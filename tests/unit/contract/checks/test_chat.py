"""vime.contract.checks.chat on exact results: VIM194's two comparators (``check_vim194`` on a
trajectory and its rendering, ``check_generated_turns`` on a custom generate's sample), their
messages, the batch and one-by-one encodings, the turn-framing test ``_frames``, and tokenizers
whose defaults add a BOS token on encoding and drop special tokens on decoding."""

from __future__ import annotations

from typing import Any

import pytest

from vime.agent.render import chat_prompt_ids, render_text
from vime.contract.checks.chat import (
    TurnFraming,
    _encode_all,
    _frames,
    check_generated_turns,
    check_vim194,
    turn_framing,
)
from vime.utils.tiny_model import build_tokenizer

pytestmark = pytest.mark.unit

END, START = "<|im_end|>", "<|im_start|>"
USER = "<|im_start|>user\n"
GEN = "<|im_start|>assistant\n"
#: ChatML's framing of a user turn after a reply whose end token the engine generated.
BEFORE, AFTER = f"{END}\n{USER}", f"{END}\n{GEN}"


@pytest.fixture(scope="module")
def tok() -> Any:
    """The tiny tokenizer with a BOS (``<|pad|>``) added on encoding unless
    ``add_special_tokens=False``, as Llama-style tokenizers add theirs."""
    from tokenizers import processors

    t = build_tokenizer()
    t.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<|pad|> $A", special_tokens=[("<|pad|>", t.pad_token_id)])
    assert t.encode("ab") == [t.pad_token_id, 97, 98]
    return t


class _Plain:
    """A tokenizer with ``encode`` and ``decode`` only (not callable: no batch encoding) over
    ``tok``, whose ``decode`` drops special tokens unless ``skip_special_tokens=False``."""

    def __init__(self, tok: Any) -> None:
        self._tok = tok
        self.eos_token_id = tok.eos_token_id

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=add_special_tokens))

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return str(self._tok.decode(ids, skip_special_tokens=skip_special_tokens))


def enc(tok: Any, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False))


def test_encode_all_encodes_without_special_tokens_batched_and_one_by_one(tok: Any) -> None:
    pieces = ["ab", "", f"{END}\n{USER}x"]
    expected = [[97, 98], [], [tok.eos_token_id, 10, *enc(tok, USER), 120]]
    assert _encode_all(tok, pieces) == expected
    assert _encode_all(_Plain(tok), pieces) == expected


def _trajectory(tok: Any, replies: list[str], users: list[str], last: str = "ok"
                ) -> tuple[list[int], list[tuple[int, int]], str]:
    """``(tokens, spans, text)`` of a clean ChatML agent trajectory: the first user turn, then
    per reply the engine's tokens (reply and EOS) and the next user turn, then the last reply;
    ``text`` the rendering the last call answered."""
    messages: list[dict[str, str]] = [{"role": "user", "content": "What is 2+3?"}]
    tokens, _ = chat_prompt_ids(tok, messages)
    tokens = list(tokens)
    spans = []
    for reply, user in zip(replies, users, strict=True):
        generated = [*enc(tok, reply), tok.eos_token_id]
        spans.append((len(tokens), len(tokens) + len(generated)))
        tokens += [*generated, *enc(tok, f"\n{USER}{user}{END}\n{GEN}")]
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": user}]
    generated = [*enc(tok, last), tok.eos_token_id]
    spans.append((len(tokens), len(tokens) + len(generated)))
    return [*tokens, *generated], spans, render_text(tok, messages)


def test_vim194_finds_each_reply_after_the_previous_one(tok: Any) -> None:
    # the same reply twice: the second is looked up after the first, not at it
    tokens, spans, text = _trajectory(tok, ["5", "5"], ["Sure?", "Really?"])
    assert check_vim194(tok, tokens, spans=spans, text=text, where="t") is None
    # a reply that is repeated in the next user turn is the one before it
    tokens, spans, text = _trajectory(tok, ["5"], ["Is it 5?"])
    assert check_vim194(tok, tokens, spans=spans, text=text, where="t") is None
    # a template that renders nothing before the first reply: found at text position 0
    first = [*enc(tok, "5"), tok.eos_token_id]
    added = enc(tok, f"\n{USER}And 4+4?{END}\n{GEN}")
    tokens = [*first, *added, *enc(tok, "8"), tok.eos_token_id]
    text = f"5{END}\n{USER}And 4+4?{END}\n{GEN}"
    spans = [(0, 2), (2 + len(added), len(tokens))]
    assert check_vim194(tok, tokens, spans=spans, text=text, where="t") is None


def test_vim194_with_a_tokenizer_that_drops_special_tokens_by_default(tok: Any) -> None:
    tokens, spans, text = _trajectory(tok, ["5", "8"], ["And 4+4?", "And 1+1?"])
    assert check_vim194(_Plain(tok), tokens, spans=spans, text=text, where="t") is None


def test_vim194_exact_message_of_a_token_difference(tok: Any) -> None:
    tokens, spans, _ = _trajectory(tok, ["5"], ["And 4+5?"])
    _, _, text = _trajectory(tok, ["5"], ["And 4+4?"])
    v = check_vim194(_Plain(tok), tokens, spans=spans, text=text, where="agent trajectory (i=3)")
    assert v is not None and v.where == "agent trajectory (i=3)"
    at = spans[0][1] + 13            # "\n", "<|im_start|>", "user\n" and "And 4+" before it
    assert tokens[at] == ord("5")
    assert v.message == (
        f"differs from the chat template's rendering of its messages at token {at} (before "
        "turn 2's reply): the trajectory has '5?<|im_end|>\\n<|im_start|>a' ([53, 63, 258, 10, "
        "257, 97]), the template renders '4?<|im_end|>\\n<|im_start|>a' ([52, 63, 258, 10, 257, "
        "97]); the "
        "policy is trained on a sequence it will not see when the conversation is rendered "
        "at once")


DROPS = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' and "
         "not loop.last %}{{ m.content.split('</think>')[-1].lstrip() }}{% else %}"
         "{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
LONG = "Now add seven, then double it, and tell me the result in words please."


def _dropped_second(tok: Any, second_user: str) -> tuple[Any, list[int], Any, str]:
    """A trajectory whose second reply's reasoning the template drops; its second user turn
    is ``second_user`` in the tokens and "And 4+4?" in the rendering."""
    import copy

    t = copy.deepcopy(tok)
    t.chat_template = DROPS
    reply = "<think>\nx\n</think>\n\n8"
    tokens, spans, _ = _trajectory(t, ["5", reply], [second_user, LONG])
    _, _, text = _trajectory(t, ["5", reply], ["And 4+4?", LONG])
    return t, tokens, spans, text


def test_vim194_exact_message_of_a_reply_missing_from_the_rendering(tok: Any) -> None:
    t, tokens, spans, text = _dropped_second(tok, "And 4+4?")
    (s2, e2) = spans[1]
    expected = (
        f"differs from the chat template's rendering of its messages at token {s2}: the "
        f"engine's reply of turn 2 (tokens {s2}-{e2 - 1}, '<think>\\nx\\n</'...) is not in "
        "the rendering, which has '8<|im_end|>\\n<|im_start|>user\\nNow add seven, then double "
        "it, ' there: the template renders that turn another way (dropped reasoning, a "
        "re-rendered tool call, another end token)")
    for tokenizer in (t, _Plain(t)):
        v = check_vim194(tokenizer, tokens, spans=spans, text=text, where="agent trajectory")
        assert v is not None and v.where == "agent trajectory"
        assert v.message == expected
        # the engine's own reply is missing from the rendering: the template is at fault
        assert v.fix.startswith("the chat template is at fault, not the trajectory: it "
                                "renders the engine's reply another way"), v.fix


def test_vim194_a_differing_turn_before_a_missing_reply_is_reported_first(
        tok: Any) -> None:
    t, tokens, spans, text = _dropped_second(tok, "And 4+5?")
    v = check_vim194(t, tokens, spans=spans, text=text, where="agent trajectory")
    # the token difference in the user turn comes first
    assert v is not None and "(before turn 2's reply): the trajectory has '5?" in v.message


# ---- custom multi-turn generate samples -----------------------------------------------------

def _sample(tok: Any, *parts: tuple[str, int]) -> tuple[list[int], list[int], int]:
    """``(tokens, loss_mask, response_length)``: a ChatML prompt, then each ``(text, mask)``."""
    prompt = enc(tok, f"{USER}What is 2+3?{END}\n{GEN}")
    response: list[int] = []
    mask: list[int] = []
    for text, m in parts:
        ids = enc(tok, text)
        response += ids
        mask += [m] * len(ids)
    return [*prompt, *response], mask, len(response)


def _framing(tok: Any) -> TurnFraming:
    framing = turn_framing(tok)
    assert framing is not None
    return framing


def _turns(tokenizer: Any, tok: Any, sample: tuple[list[int], list[int], int]) -> Any:
    tokens, mask, length = sample
    return check_generated_turns(tokenizer, tokens, loss_mask=mask, response_length=length,
                                 framing=_framing(tok), where="custom sample (index=2)")


def test_generated_turns_with_a_tokenizer_that_drops_special_tokens_by_default(
        tok: Any) -> None:
    good = _sample(tok, (f"5{END}", 1), (f"\n{USER}And 4+4?{END}\n{GEN}", 0), (f"8{END}", 1))
    assert _turns(_Plain(tok), tok, good) is None
    bad = _sample(tok, (f"5{END}", 1), (f"{USER}And 4+4?{END}\n{GEN}", 0), (f"8{END}", 1))
    v = _turns(_Plain(tok), tok, bad)
    assert v is not None and v.message.startswith("inserts a turn the chat template does not")


def test_generated_turns_exact_message_of_an_unframed_turn_after_an_in_reply_result(
        tok: Any) -> None:
    question = "And what is " + "4+4 and then " * 6 + "?"
    sample = _sample(tok, ("<search>4+4</search>", 1), ("\n<information>8</information>\n", 0),
                     ("ok", 1), (f"{USER}{question}{END}\n{GEN}", 0), (f"8{END}", 1))
    v = _turns(tok, tok, sample)
    assert v is not None and v.where == "custom sample (index=2)"
    tokens, mask, length = sample
    start = len(tokens) - length
    s0 = start + len(enc(tok, "<search>4+4</search>\n<information>8</information>\n"))
    e0 = s0 + 2
    inserted = f"{USER}{question}{END}\n{GEN}"
    assert v.message == (
        f"inserts a turn the chat template does not render at token {e0} (after reply 2, "
        f"tokens {s0}-{e0 - 1}): the sample has {inserted[:80]!r} there, the template renders "
        f"{BEFORE!r} after a reply, then the user turn, then {AFTER!r} (tried: user, tool); "
        "the policy is trained on turn boundaries it will not see when the conversation is "
        "rendered at once")
    assert len(inserted) > 81


def test_generated_turns_exact_message_of_an_encoding_difference(tok: Any) -> None:
    text = f"\n{USER}And 4+4?{END}\n{GEN}"
    as_bytes = list(tok(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
    tokens, mask, length = _sample(tok, (f"5{END}", 1))
    tokens += [*as_bytes, *enc(tok, f"8{END}")]
    mask += [0] * len(as_bytes) + [1, 1]
    length += len(as_bytes) + 2
    v = check_generated_turns(_Plain(tok), tokens, loss_mask=mask, response_length=length,
                              framing=_framing(tok), where="custom sample (index=2)")
    assert v is not None and v.where == "custom sample (index=2)"
    at = len(tokens) - length + 2 + 1
    assert v.message == (
        f"differs from the tokenizer's encoding of its own text at token {at} (the turn "
        "inserted after reply 1): the sample has '<|im_s' ([60, 124, 105, 109, 95, 115]), "
        "encoding that text gives '<|im_start|>user\\n' ([257, 117, 115, 101, 114, 10]); the policy is trained on a sequence it will not see when the conversation is "
        "rendered at once")


def test_a_reply_that_is_only_the_end_token_is_framed(tok: Any) -> None:
    good = _sample(tok, (END, 1), (f"\n{USER}And 4+4?{END}\n{GEN}", 0), (f"8{END}", 1))
    assert _turns(tok, tok, good) is None


def test_frames_exact() -> None:
    assert _frames("5", f"\n{USER}q{AFTER}", BEFORE, AFTER) is False     # no end token
    assert _frames(f"5{END}", f"\n{USER}q{AFTER}", BEFORE, AFTER) is True
    assert _frames("", f"{BEFORE}q{AFTER}", BEFORE, AFTER) is True       # an empty reply
    assert _frames("5", f"{BEFORE}{AFTER}", BEFORE, AFTER) is True       # an empty turn
    assert _frames("5", f"x{BEFORE}q{AFTER}", BEFORE, AFTER) is False    # a stray character
    # the framing's text quoted early in a long reply does not frame the turn after it
    assert _frames(f"{BEFORE}{'z' * 40}", f"junk{AFTER}", BEFORE, AFTER) is False
    # a turn's opening and closing texts may not overlap
    assert _frames("5", "|x|<A>", "|x|", "x|<A>") is False
    assert _frames("5", "|x|x|<A>", "|x|", "x|<A>") is True


# ---- the framing learnt from templates of other shapes --------------------------------------

_BODY = "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
_PROMPT = "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"


def _framing_of(tok: Any, template: str, kwargs: dict[str, Any] | None = None) -> Any:
    import copy

    t = copy.deepcopy(tok)
    t.chat_template = template
    return turn_framing(t, kwargs)


def test_turn_framing_of_a_template_that_rejects_unknown_roles(tok: Any) -> None:
    strict = ("{% for m in messages %}{% if m.role not in ['user', 'assistant', 'tool'] %}"
              "{{ raise_exception('unknown role ' + m.role) }}{% endif %}" + _BODY
              + "{% endfor %}" + _PROMPT)
    framing = _framing_of(tok, strict)
    assert framing is not None
    assert dict(framing.between) == {"user": (BEFORE, AFTER), "tool": (f"{END}\n{START}tool\n",
                                                                       AFTER)}


def test_turn_framing_renders_with_the_template_kwargs(tok: Any) -> None:
    thinks = ("{% for m in messages %}" + _BODY + "{% endfor %}{% if add_generation_prompt %}"
              "<|im_start|>assistant\n{% if think %}<think>\n{% endif %}{% endif %}")
    framing = _framing_of(tok, thinks, {"think": True})
    assert framing is not None and framing.generation_prompt == f"{GEN}<think>\n"
    assert framing.between["user"] == (BEFORE, f"{AFTER}<think>\n")
    plain = _framing_of(tok, thinks)
    assert plain is not None and plain.generation_prompt == GEN


def test_turn_framing_is_none_where_the_generation_prompt_cannot_be_learnt(tok: Any) -> None:
    loop = "{% for m in messages %}" + _BODY + "{% endfor %}"
    only_with = "{% if not add_generation_prompt %}{{ raise_exception('x') }}{% endif %}"
    never_with = "{% if add_generation_prompt %}{{ raise_exception('x') }}{% endif %}"
    other_start = "{% if add_generation_prompt %}<s>{% endif %}"
    for template in (only_with + loop + _PROMPT, never_with + loop + _PROMPT,
                     other_start + loop + _PROMPT):
        assert _framing_of(tok, template) is None, template


def test_turn_framing_skips_roles_it_cannot_see_rendered_after_a_reply(tok: Any) -> None:
    # earlier assistant messages rendered without their content: no role is framed
    drops = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if not (m.role == 'assistant' "
             "and not loop.last) %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}" + _PROMPT)
    assert _framing_of(tok, drops) is None
    # one question per conversation: a second user turn is refused, tool turns are framed
    one_question = ("{% set ns = namespace(users=0) %}{% for m in messages %}"
                    "{% if m.role == 'user' %}{% set ns.users = ns.users + 1 %}{% endif %}"
                    "{% if ns.users > 1 %}{{ raise_exception('one question only') }}{% endif %}"
                    + _BODY + "{% endfor %}" + _PROMPT)
    framing = _framing_of(tok, one_question)
    assert framing is not None and list(framing.between) == ["tool"]
    # tool results rendered first, as a documents block: no tool turn after a reply
    docs_first = ("{% for m in messages if m.role == 'tool' %}<docs>{{ m.content }}</docs>\n"
                  "{% endfor %}{% for m in messages if m.role != 'tool' %}" + _BODY
                  + "{% endfor %}" + _PROMPT)
    framing = _framing_of(tok, docs_first)
    assert framing is not None and list(framing.between) == ["user"]
