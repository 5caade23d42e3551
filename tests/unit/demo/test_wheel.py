"""``vime.demo`` from an installed wheel: the wheel is built offline from this checkout
(``pip wheel --no-build-isolation --no-index``), installed with ``pip install --no-deps
--target`` onto a temporary ``PYTHONPATH``, and run from a folder outside the repository.
The demo must find every file it reads in the wheel's copy of ``examples/``
(``vime/demo/_bundle/``, setup.py), its hook modules must import in the processes it starts,
and its lint stage must give the checkout's result without writing into the installed
package. Nothing is downloaded: the build uses the setuptools of the running interpreter.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
#: What the build reads: the metadata, the build step, the packages, the bundle's sources.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "vime", "vime_lint",
                "examples")


def _tracked(*names: str) -> list[str]:
    """The files git tracks under ``names`` (the checkout's, not caches or run outputs)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", *names], cwd=REPO, capture_output=True,
                         check=True)
    return [n for n in out.stdout.decode().split("\0") if n and (REPO / n).is_file()]

#: Run from a folder outside the repository with only the installed wheel's vime: what the
#: demo finds, and its lint stage (json on the last line).
INSTALLED = textwrap.dedent("""
    import json, os, subprocess, sys
    import yaml
    import vime
    from vime.demo import config
    from vime.demo.children import _env
    from vime.demo.stages import CONTROL_HOOK, stage_lint

    real = yaml.safe_load((config.REAL_CONFIGS / "grpo.yaml").read_text())
    real_eval = yaml.safe_load((config.REAL_CONFIGS / "eval.yaml").read_text())
    hooks = [CONTROL_HOOK, real["custom-rm-path"], real_eval["eval"]["defaults"]["custom_rm_path"]]
    files = [config.CONFIGS / f for f in ("sft.yaml", "grpo.yaml", "eval.yaml")]
    files += [config.REAL_CONFIGS / f for f in ("grpo.yaml", "eval.yaml")]
    files += [config.ROOT / "pyproject.toml", config.EXAMPLES / "broken" / "README.md"]
    imported = {}
    for hook in hooks:   # in a process like the demo's children, from this folder
        module, _, attr = hook.rpartition(".")
        proc = subprocess.run([sys.executable, "-c",
                               f"import {module} as m; assert callable(m.{attr}); print(m.__file__)"],
                              env=_env(), capture_output=True, text=True)
        imported[hook] = proc.stdout.strip() if proc.returncode == 0 else proc.stderr
    lint = stage_lint()
    print(json.dumps({"vime": vime.__file__, "root": str(config.ROOT),
                      "installed": config.INSTALLED,
                      "missing": [str(f) for f in files if not f.is_file()],
                      "imported": imported, "lint": [lint.ok, lint.detail]}))
""")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The wheel built from a copy of the tracked build inputs (the checkout gets no
    ``build/``), and its install folder."""
    tmp = tmp_path_factory.mktemp("wheel").resolve()
    src = tmp / "src"
    for name in _tracked(*BUILD_INPUTS):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    build = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-w", str(tmp / "dist"), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp / "dist").glob("vime-*.whl")
    site = tmp / "site"
    install = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site),
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stdout + install.stderr
    return {"wheel": wheel, "site": site, "work": tmp}


def test_the_wheel_carries_examples_once_under_the_package(installed: dict[str, Path]) -> None:
    prefix = "vime/demo/_bundle/"
    with zipfile.ZipFile(installed["wheel"]) as whl:
        names = whl.namelist()
        bundle = {n[len(prefix):]: whl.read(n) for n in names if n.startswith(prefix)}
    expected = {n: (REPO / n).read_bytes() for n in _tracked("pyproject.toml", "examples")}
    assert sorted(bundle) == sorted(expected)
    assert [n for n, data in bundle.items() if data != expected[n]] == []
    assert {"examples/demo/grpo.yaml", "examples/real_model/reward.py",
            "examples/broken/README.md"} <= set(bundle)
    # no top-level examples package in site-packages, and the linter and CLI are there
    assert not [n for n in names if n.startswith("examples/")]
    assert {"vime/demo/config.py", "vime_lint/cli.py", "vime/py.typed"} <= set(names)


def test_the_installed_demo_finds_its_files_hooks_and_lints_as_the_checkout(
        installed: dict[str, Path]) -> None:
    from vime.demo.stages import stage_lint

    site, work = installed["site"], installed["work"] / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # the venv activated (PATH leads to its console scripts), as after `pip install vime`
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    proc = subprocess.run([sys.executable, "-c", INSTALLED], cwd=work,
                          env={**env, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    bundle = site / "vime" / "demo" / "_bundle"
    assert Path(got["vime"]).is_relative_to(site) and got["installed"] is True
    assert Path(got["root"]) == bundle and got["missing"] == []
    for hook, where in got["imported"].items():
        assert Path(where).is_relative_to(bundle / "examples"), (hook, where)
    # the lint stage: the checkout's numbers (22 findings in 4/4 files when this was written)
    checkout = stage_lint()
    assert checkout.ok and got["lint"] == [True, checkout.detail]
    # its printed commands paste into a shell anywhere, and it wrote no cache into the wheel
    assert (f"$ cd {bundle} && vime-lint rollout examples --extend-exclude examples/broken "
            "--no-cache\n") in proc.stdout
    assert f"$ cd {bundle} && vime-lint rollout examples/broken --no-cache\n" in proc.stdout
    assert not (bundle / ".vime_lint_cache").exists()
    assert sorted(p.name for p in work.iterdir()) == []
