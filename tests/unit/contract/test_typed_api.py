"""What user hooks receive and call is fully annotated, so mypy (and `vime-lint types`) sees real
types, not `Any`: Sample, the rollout outputs, DataSource, DynamicFilterOutput, the rm-hub and
the async/HTTP helpers, the built-in generate functions."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

#: module -> public names a hook receives or calls.
API = {
    "vime.utils.types": ["Sample"],
    "vime.rollout.base_types": ["RolloutFnTrainOutput", "RolloutFnEvalOutput", "iter_samples"],
    "vime.rollout.data_source": ["DataSource"],
    "vime.rollout.filter_hub.base_types": ["DynamicFilterOutput"],
    "vime.rollout.rm_hub": ["async_rm", "batched_async_rm", "remote_rm"],
    "vime.utils.async_utils": ["run", "get_loop"],
    "vime.utils.http_utils": ["post", "get", "get_client"],
    "vime.rollout.vllm_rollout": ["generate", "generate_and_rm", "generate_and_rm_group"],
}


def _callables(obj: object) -> list[tuple[str, object]]:
    if not inspect.isclass(obj):
        return [(getattr(obj, "__qualname__", repr(obj)), obj)]
    out = []
    for name, member in vars(obj).items():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
            out.append((f"{obj.__qualname__}.{name}", member))
        elif inspect.isclass(member) and not name.startswith("_"):
            out += _callables(member)
    return out


@pytest.mark.parametrize("module", sorted(API))
def test_every_parameter_and_return_is_annotated(module: str) -> None:
    mod = importlib.import_module(module)
    missing = []
    for name in API[module]:
        obj = getattr(mod, name)
        if dataclasses.is_dataclass(obj):
            assert all(f.type not in ("", None) for f in dataclasses.fields(obj)), name
        for qual, fn in _callables(obj):
            sig = inspect.signature(fn)  # type: ignore[arg-type]
            for p in sig.parameters.values():
                if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty:
                    missing.append(f"{qual}({p.name})")
            if sig.return_annotation is inspect.Signature.empty:
                missing.append(f"{qual} -> ?")
    assert not missing, f"{module}: unannotated: {', '.join(missing)}"


def test_vime_ships_py_typed() -> None:
    import vime

    assert (Path(vime.__file__).parent / "py.typed").is_file()
