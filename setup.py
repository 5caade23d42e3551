"""The wheel's build step that pyproject.toml cannot declare: copy the repository's
``pyproject.toml`` and ``examples/`` into the built package as ``vime/demo/_bundle/``.

``python -m vime.demo`` reads its configs and hook modules from ``examples/`` and lints that
folder; run from an installed wheel, it finds them there (vime/demo/config.py: ``ROOT``). The
repository keeps the one copy, ``examples/``; the wheel's is made at build time. The copied
``pyproject.toml`` is the bundle's project root for ``vime-lint`` (the nearest
``pyproject.toml`` above the linted files) and its ``[tool.vime_lint]`` settings, as in the
checkout. Everything else about the package (metadata, packages, extras) is in pyproject.toml;
the sdist carries ``examples/`` by MANIFEST.in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: Where the copy goes inside the built package (vime/demo/config.py: ``BUNDLE``).
BUNDLE = ("vime", "demo", "_bundle")


def bundle_files() -> Iterator[tuple[Path, str]]:
    """``(source file, path inside the bundle)``: ``pyproject.toml`` and every file under
    ``examples/`` except caches and hidden files."""
    yield HERE / "pyproject.toml", "pyproject.toml"
    for path in sorted((HERE / "examples").rglob("*")):
        rel = path.relative_to(HERE)
        if path.is_file() and path.suffix not in (".pyc", ".pyo") and not any(
                part.startswith(".") or part == "__pycache__" for part in rel.parts):
            yield path, rel.as_posix()


class BuildPyWithBundle(build_py):
    """``build_py``, then the bundle into the build folder (not for an editable install,
    whose ``vime`` is the checkout's: the demo reads the checkout's ``examples/`` then)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for source, rel in bundle_files():
            target = Path(self.build_lib, *BUNDLE, rel)
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildPyWithBundle})
