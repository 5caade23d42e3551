"""Every bad input `vime train` finds after parsing ends with one line naming the argument and
the fix, and exit status 2 (vime.config.inputs, run by vime.train.main before Ray starts)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vime.train import main
from vime.utils.quiet_env import QUIET_ENV

pytestmark = pytest.mark.unit

# (extra arguments, the argument named, words of the reason); {d} is a scratch folder
CASES = [
    (["--prompt-data", "{d}/missing.jsonl"], "--prompt-data", "does not exist"),
    (["--prompt-data", "{d}/data.csv"], "--prompt-data", "unsupported format '.csv'"),
    (["--prompt-data", "{d}/data"], "--prompt-data", "no suffix"),
    (["--prompt-data", "{d}/folder.jsonl"], "--prompt-data", "is a folder"),
    (["--prompt-data", "{d}/ok.jsonl@[a:b]"], "--prompt-data", "malformed row slice"),
    (["--eval-prompt-data", "held_out", "{d}/missing.parquet", "--eval-interval", "5"],
     "--eval-prompt-data", "eval dataset 'held_out': dataset"),
    (["--hf-checkpoint", "{d}/empty_model"], "--hf-checkpoint", "has no config.json"),
    (["--hf-checkpoint", "{d}/no/such/model"], "--hf-checkpoint", "does not exist"),
    (["--hf-checkpoint", "{d}/ok.jsonl"], "--hf-checkpoint", "is a file"),
    (["--custom-rm-path", "no_such_module_h18.reward"], "--custom-rm-path",
     "'no_such_module_h18.reward': module 'no_such_module_h18' not found"),
    # the package is found, its submodule is not: the missing part and the package's modules
    # (it said "module 'h18pkg.nope' not found (did you mean 'h18pkg'?)", the package itself)
    (["--rollout-function-path", "h18pkg.nope.generate_rollout"], "--rollout-function-path",
     "'h18pkg.nope.generate_rollout': package 'h18pkg' ({d}/h18pkg) has no module 'nope'; "
     "its modules: rewards"),
    (["--custom-rm-path", "h18pkg.reward.reward"], "--custom-rm-path",
     "package 'h18pkg' ({d}/h18pkg) has no module 'reward' (did you mean "
     "'h18pkg.rewards.reward'?); its modules: rewards"),
    (["--custom-rm-path", "h18pkg.rewards.inner.reward"], "--custom-rm-path",
     "'h18pkg.rewards' ({d}/h18pkg/rewards.py) is a module, not a package, so it has no module "
     "'inner'"),
    (["--custom-config-path", "{d}/missing.yaml"], "--custom-config-path", "does not exist"),
    (["--config", "{d}/missing.yaml"], "--config", "does not exist"),
    (["--rollout-function-path", "h18pkk.generate_rollout"], "--rollout-function-path",
     "(did you mean 'h18pkg'?)"),
    (["--rollout-function-path", "generate_rollout"], "--rollout-function-path",
     "is not a dotted path"),
    # the folders a run writes and the checkpoint it resumes from (vime.config.paths)
    (["--save", "{d}/ok.jsonl"], "--save", "is a file, not a folder"),
    (["--run-dir", "{d}/ok.jsonl"], "--run-dir", "is a file, not a folder"),
    (["--run-dir", "{d}/ok.jsonl/run"], "--run-dir", "is a file, not a folder; give a path under"),
    (["--save", "{d}/dangling"], "--save", "is a dangling symbolic link"),
    (["--tensorboard-dir", "{d}/ok.jsonl"], "--tensorboard-dir", "is a file, not a folder"),
    (["--save-debug-rollout-data", "{d}/ok.jsonl/dump_{rollout_id}.pt"],
     "--save-debug-rollout-data", "is a file, not a folder"),
    (["--load", "{d}/ok.jsonl"], "--load", "is a file; give the checkpoint folder"),
    (["--load", "{d}/garbage_ckpt"], "--load", "holds 'abc', not a rollout id"),
    (["--load", "{d}/dangling_ckpt"], "--load",
     "points at iter_0000007, which does not exist; the folder holds iter_0000003"),
    (["--load", "{d}/partial_ckpt"], "--load",
     "iter_0000002 is incomplete: model/model.safetensors is missing"),
    (["--load-debug-rollout-data", "{d}/dump_{rollout_id}.pt"], "--load-debug-rollout-data",
     "dump_0.pt' (the file of rollout 0) does not exist"),
    # YAML files (vime.config.yaml_file.read_yaml)
    (["--config", "{d}/binary.yaml"], "--config", "binary.yaml: is a binary file"),
    (["--config", "{d}/latin1.yaml"], "--config", "latin1.yaml:2: not UTF-8 text (byte 38"),
    (["--config", "{d}/deep.yaml"], "--config", "deep.yaml: nested too deeply"),
    (["--config", "{d}/broken.yaml"], "--config",
     "broken.yaml:2: not valid YAML: expected ',' or ']', but got ':'"),
    (["--config", "{d}/folder.jsonl"], "--config", "is a folder, not a YAML file"),
    (["--custom-config-path", "{d}/latin1.yaml"], "--custom-config-path", "latin1.yaml:2: not UTF-8"),
    (["--eval-config", "{d}/binary.yaml", "--eval-interval", "1"], "--eval-config",
     "binary.yaml: is a binary file"),
    # dataset rows (vime.utils.data.dataset_rows_problem)
    (["--label-key", "label", "--prompt-data", "{d}/nolabel.jsonl"], "--prompt-data",
     "nolabel.jsonl:2: record has no label key 'label' (--label-key); it has ['input']"),
    (["--prompt-data", "{d}/latin1.jsonl"], "--prompt-data",
     "latin1.jsonl:2: not UTF-8 text (invalid continuation byte at byte 14 of the line)"),
    (["--prompt-data", "{d}/noinput.jsonl"], "--prompt-data",
     "noinput.jsonl:1: record has no input key 'input' (--input-key); it has ['question']"),
    # a hook name missing from a module that exists: no PYTHONPATH hint, the close names
    (["--custom-rm-path", "h18pkg.rewards.rewad"], "--custom-rm-path",
     "module 'h18pkg.rewards' ({d}/h18pkg/rewards.py) has no attribute 'rewad'; close names: "
     "reward, reward_v2"),


    # the engines' key (vime.ray.engine_guard.engine_auth_problem)
    (["--vllm-host", "0.0.0.0", "--engine-auth", "disabled"], "--vllm-host",
     "0.0.0.0 listens beyond the loopback, and --engine-auth disabled"),
    (["--rollout-host", "0.0.0.0", "--engine-auth", "disabled"], "--rollout-host",
     "drop --engine-auth disabled"),
    (["--vllm-host", "10.1.2.3"], "--vllm-host", "10.1.2.3: give 127.0.0.1 or 0.0.0.0"),
    (["--vllm-api-key", "s3cret"], "--vllm-api-key", "set VIME_ENGINE_API_KEY=<key>"),
]


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ok.jsonl").write_text(json.dumps({"input": "1+1", "label": "2"}) + "\n")
    (tmp_path / "data.csv").write_text("input,label\n")
    (tmp_path / "data").write_text("")
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "empty_model").mkdir()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "h18pkg").mkdir()
    (tmp_path / "h18pkg" / "__init__.py").write_text("")
    (tmp_path / "h18pkg" / "rewards.py").write_text(
        "import math\n\nSCALE = 2\n\n\nasync def reward(args, sample):\n    return 1.0\n\n\n"
        "def reward_v2(args, sample):\n    return math.pi\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x7fELF\x02\x01\x00\x00rollout-batch-size: 2\n")
    (tmp_path / "latin1.yaml").write_bytes(b"rollout-batch-size: 2\nwandb-group: caf\xe9\n")
    (tmp_path / "deep.yaml").write_text("wandb-group: " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "broken.yaml").write_text("wandb-group: [a, b\nseed: 3\n")
    (tmp_path / "nolabel.jsonl").write_text('{"input": "1+1", "label": "2"}\n{"input": "2+2"}\n')
    (tmp_path / "latin1.jsonl").write_bytes(b'{"input": "a"}\n{"input": "caf\xe9"}\n')
    (tmp_path / "noinput.jsonl").write_text('{"question": "1+1"}\n')
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for name, pointer in (("garbage_ckpt", "abc"), ("dangling_ckpt", "7"), ("partial_ckpt", "2")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "latest_checkpointed_iteration.txt").write_text(pointer + "\n")
    (tmp_path / "dangling_ckpt" / "iter_0000003").mkdir()
    (tmp_path / "partial_ckpt" / "iter_0000002").mkdir()
    (tmp_path / "partial_ckpt" / "iter_0000002" / "manager_state.pt").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "h18pkg" or m.startswith("h18pkg.")]:
        monkeypatch.delitem(sys.modules, name)   # found again under this test's folder
    for key in (*QUIET_ENV, "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.setenv(key, os.environ.get(key, "1"))
    return tmp_path


def _argv(d: Path, extra: list[str]) -> list[str]:
    base = {"--hf-checkpoint": str(d / "model"), "--prompt-data": str(d / "ok.jsonl"),
            "--rollout-batch-size": "2", "--num-rollout": "1", "--run-dir": str(d / "run")}
    extra = [a.replace("{d}", str(d)) for a in extra]
    for flag in [a for a in extra if a in base]:
        del base[flag]
    return [*(x for kv in base.items() for x in kv), *extra]


@pytest.mark.parametrize(("extra", "argument", "reason"), CASES,
                         ids=[f"{c[1]}:{c[2][:24]}" for c in CASES])
def test_bad_input_is_one_line_and_exit_2(scratch: Path, capsys: pytest.CaptureFixture[str],
                                          extra: list[str], argument: str,
                                          reason: str) -> None:
    status = main(_argv(scratch, extra))
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2, err
    assert len(lines) == 2 and lines[0].startswith("usage: vime train "), err
    assert lines[1].startswith(f"vime train: error: argument {argument}: "), err
    assert reason.replace("{d}", str(scratch)) in lines[1], err
    assert "Traceback" not in err
    assert not (scratch / "run").exists()   # nothing started


def test_a_missing_submodule_never_suggests_its_own_package(scratch: Path) -> None:
    from vime.config.inputs import hook_module_problem

    said = str(hook_module_problem("h18pkg.nope.reward", "--custom-rm-path"))
    assert "did you mean" not in said and "has no module 'nope'" in said, said
    (scratch / "h18pkg" / "sub").mkdir()
    (scratch / "h18pkg" / "sub" / "__init__.py").write_text("")
    said = str(hook_module_problem("h18pkg.sub.rewards.reward", "--custom-rm-path"))
    assert said.endswith("package 'h18pkg.sub' (" + str(scratch / "h18pkg" / "sub")
                         + ") has no module 'rewards'; it holds no modules"), said


def test_a_missing_hook_name_gives_no_pythonpath_hint(scratch: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(scratch, ["--custom-rm-path", "h18pkg.rewards.rewad"])) == 2
    assert "PYTHONPATH" not in capsys.readouterr().err
    # a name the module does bind (a function, an import, an assignment) passes
    from vime.config.inputs import hook_module_problem

    for name in ("reward", "reward_v2", "math", "SCALE"):
        assert hook_module_problem(f"h18pkg.rewards.{name}", "--custom-rm-path") is None


def test_a_module_whose_names_cannot_be_read_is_left_to_the_loader(scratch: Path) -> None:
    from vime.config.inputs import hook_module_problem

    (scratch / "h18pkg" / "star.py").write_text("from math import *\n")
    (scratch / "h18pkg" / "lazy.py").write_text("def __getattr__(name):\n    return len\n")
    assert hook_module_problem("h18pkg.star.anything", "--custom-rm-path") is None
    assert hook_module_problem("h18pkg.lazy.anything", "--custom-rm-path") is None
    (scratch / "h18pkg" / "guarded.py").write_text(
        "try:\n    import fastjson\nexcept ImportError:\n    def reward(args, sample):\n"
        "        return 0.0\n")
    assert hook_module_problem("h18pkg.guarded.reward", "--custom-rm-path") is None
    assert "no attribute 'rewards'" in str(hook_module_problem("h18pkg.guarded.rewards", ""))


def test_an_unreadable_yaml_file_is_one_line(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from vime.config.yaml_file import YamlFileError, read_yaml

    path = tmp_path / "run.yaml"
    path.write_text("seed: 1\n")

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(YamlFileError, match=r"run.yaml: cannot read it: Permission denied$"):
        read_yaml(path)


def test_skipped_dataset_lines_are_named_with_file_and_line(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from vime.utils.data import Dataset

    path = tmp_path / "d.jsonl"
    path.write_text('{"input": "a"}\nnot json\n[1, 2]\n{"input": "b"}\n')
    with caplog.at_level("WARNING"):
        ds = Dataset(str(path))
    assert len(ds) == 2 and ds.num_bad_records == 2
    assert (f"skipped 2 undecodable record(s): {path}:2 (invalid JSON (Expecting value at "
            f"column 1)); {path}:3 (expected a JSON object, got list)") in caplog.text


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_unreadable_prompt_data(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A regular file that fails to read for every user, root included: /proc/self/mem at
    offset 0 (unmapped) answers EIO."""
    (scratch / "ok.jsonl").unlink()
    (scratch / "ok.jsonl").symlink_to("/proc/self/mem")
    assert main(_argv(scratch, [])) == 2
    err = capsys.readouterr().err
    assert "--prompt-data" in err and "ok.jsonl' is not readable (Input/output error" in err
    assert not (scratch / "run").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_prompt_data_without_read_permission(scratch: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (scratch / "ok.jsonl").chmod(0)
    assert main(_argv(scratch, [])) == 2
    assert "is not readable (Permission denied" in capsys.readouterr().err


def test_hub_id_is_left_to_the_loader() -> None:
    from vime.config.inputs import hf_checkpoint_problem

    assert hf_checkpoint_problem("Qwen/Qwen2.5-0.5B") is None
    assert hf_checkpoint_problem("./Qwen/Qwen2.5-0.5B") is not None


# Ray's authentication (vime.ray.auth.auth_problem), set by the environment: (variables, words)
AUTH_CASES = [
    ({"RAY_AUTH_MODE": "disabled"}, "unset RAY_AUTH_MODE, or pass --ray-auth disabled"),
    ({"RAY_AUTH_TOKEN_PATH": "{d}/no_token"}, "RAY_AUTH_TOKEN_PATH={d}/no_token: cannot read"),
    ({"RAY_AUTH_TOKEN_PATH": "{d}/data"}, "the file is empty"),
    ({"RAY_ADDRESS": "127.0.0.1:1", "RAY_AUTH_TOKEN_PATH": None, "HOME": "{d}"},
     "joining a Ray cluster needs its token"),
]


@pytest.mark.parametrize(("env", "reason"), AUTH_CASES, ids=[c[1][:24] for c in AUTH_CASES])
def test_bad_ray_auth_is_one_line_and_exit_2(scratch: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch,
                                             env: dict[str, str | None], reason: str) -> None:
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value.replace("{d}", str(scratch)))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    status = main(_argv(scratch, []))
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.strip().splitlines()[1].startswith("vime train: error: argument --ray-auth: "), err
    assert reason.replace("{d}", str(scratch)) in err, err
    assert not (scratch / "run").exists()   # nothing started


def test_ray_auth_disabled_passes_the_input_check(scratch: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from vime.config.command_line import parse_args
    from vime.config.inputs import input_problem

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    args = parse_args(_argv(scratch, ["--ray-auth", "disabled"]))
    assert input_problem(args) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into folders without write permission")
def test_a_read_only_save_parent_is_one_line(scratch: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (scratch / "locked").mkdir(mode=0o500)
    assert main(_argv(scratch, ["--save", str(scratch / "locked" / "ckpt")])) == 2
    assert "argument --save: " in capsys.readouterr().err


def test_a_read_only_folder_is_refused_by_its_access(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from vime.config import paths

    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    assert paths.output_dir_problem(str(tmp_path / "ckpt")) == (
        f"{str(tmp_path / 'ckpt')!r} cannot be written: its parent folder {str(tmp_path)!r} "
        "is not writable")
    assert paths.output_dir_problem(str(tmp_path / "sub")) is not None


@pytest.mark.parametrize("state", ["absent", "empty", "complete"])
def test_a_load_folder_that_resumes_or_starts_fresh_passes(tmp_path: Path, state: str) -> None:
    from vime.config.paths import RESUME_FILES, load_problem

    root = tmp_path / "ckpt"
    if state != "absent":
        root.mkdir()
    if state == "complete":
        (root / "latest_checkpointed_iteration.txt").write_text("4\n")
        for name in (*RESUME_FILES["trainer"], *RESUME_FILES["manager"]):
            (root / "iter_0000004" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "iter_0000004" / name).write_bytes(b"x")
    assert load_problem(str(root)) is None
    if state == "complete":
        (root / "iter_0000004" / "trainer_state.pt").unlink()
        assert "trainer_state.pt is missing" in str(load_problem(str(root)))
        assert load_problem(str(root), trainer=False) is None   # --debug-rollout-only


def test_yaml_nesting_is_measured_outside_quotes_and_comments(tmp_path: Path) -> None:
    from vime.config.yaml_file import MAX_DEPTH, YamlFileError, read_yaml

    path = tmp_path / "run.yaml"
    path.write_text("wandb-group: '" + "[" * 500 + "'  # " + "{" * 500 + "\nseed: [1, [2]]\n")
    assert read_yaml(path) == {"wandb-group": "[" * 500, "seed": [1, [2]]}
    path.write_text("x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n")
    with pytest.raises(YamlFileError, match=rf"{MAX_DEPTH + 1} levels of brackets"):
        read_yaml(path)
    path.write_text("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 1500)))
    with pytest.raises(YamlFileError, match="nested too deeply to read"):   # block style
        read_yaml(path)


def test_help_usage_does_not_point_at_itself(capsys: pytest.CaptureFixture[str]) -> None:
    from vime.config.parser import get_parser

    help_text = get_parser().format_help()
    assert help_text.startswith("usage: vime train [--config FILE.yaml] [options]\n"), help_text
    assert "see `vime train --help`" not in help_text.splitlines()[0]
    with pytest.raises(SystemExit) as exc:      # an error's usage line does point at --help
        get_parser().parse_args(["--lr", "fast"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith(
        "usage: vime train [--config FILE.yaml] [options]  (see `vime train --help`)\n")
