"""The contract's records are complete and consistent with each other."""

from __future__ import annotations

import re

import pytest

from vime.contract import (
    BOUNDARIES,
    HOOKS,
    INVARIANTS,
    OPTIONAL_COLUMNS,
    SAMPLE_FIELD_NAMES,
    protocols,
)

pytestmark = pytest.mark.unit


def test_invariant_ids_are_keyed_ordered_and_unique() -> None:
    ids = list(INVARIANTS)
    assert ids == sorted(ids)
    for key, inv in INVARIANTS.items():
        assert key == inv.id and re.fullmatch(r"VIM\d{3}", key)
        assert inv.severity in ("error", "warning")
        assert inv.title and inv.rationale and inv.fix and inv.message_template


def test_scopes_match_id_ranges_and_runtime_ids_name_boundaries() -> None:
    for inv in INVARIANTS.values():
        number = int(inv.id[3:])
        if number < 100 or 200 <= number < 250:  # VIM2xx: `vime-lint types` (mypy)
            assert inv.scope == "static" and not inv.boundaries, inv.id
        elif 300 <= number < 350:                 # VIM30x: reward probes of `vime-lint check`
            assert inv.scope == "probe" and not inv.boundaries, inv.id
        elif 350 <= number < 370:                 # VIM35x: `vime-lint template MODEL_DIR`
            assert inv.scope == "template" and not inv.boundaries, inv.id
        else:
            assert inv.scope in ("load", "runtime") and inv.boundaries, inv.id
            assert set(inv.boundaries) <= set(BOUNDARIES), inv.id


def test_twins_point_at_existing_ids() -> None:
    for inv in INVARIANTS.values():
        for twin in inv.twins:
            assert twin in INVARIANTS, f"{inv.id} names unknown twin {twin}"


def test_contract_section_6_ids_are_all_present() -> None:
    section_6a = {f"VIM{n:03d}" for n in range(1, 20)}
    section_6b = {f"VIM{n}" for n in (*range(100, 121), 130, 140, 141, 150, 160, 161, 162, 165)}
    assert section_6a | section_6b <= set(INVARIANTS)


def test_render_keeps_unknown_fields() -> None:
    from vime.contract.invariants import Invariant

    inv = Invariant("VIM999", "runtime", "error", "x", "t", "r", "k",
                    "has {actual} samples, expected {expected}", "fix")
    assert inv.render(actual=3) == "has 3 samples, expected {expected}"


def test_every_hook_has_its_protocol_and_arg_matches_dest() -> None:
    for dest, spec in HOOKS.items():
        assert spec.dest == dest
        assert spec.arg == "--" + dest.replace("_", "-"), dest
        assert spec.arg.endswith("-path")
        assert hasattr(protocols, spec.protocol), f"{dest}: no Protocol {spec.protocol}"
        assert spec.protocol in protocols.__all__


def test_hook_protocol_parameters_follow_the_spec() -> None:
    import inspect

    for spec in HOOKS.values():
        if spec.kind == "class":
            continue
        call = getattr(protocols, spec.protocol).__call__
        names = [p for p in inspect.signature(call).parameters if p != "self"]
        assert names == list(spec.params), spec.dest


def test_optional_columns_are_sample_fields_or_metadata_keys() -> None:
    for col in OPTIONAL_COLUMNS:
        assert col.split(".")[0] in SAMPLE_FIELD_NAMES
