"""vime.contract.checks.locations on exact strings: a sample's location with a field, an item
(an int index or a quoted key) and its ``index``; the prefix of a leaf."""

from __future__ import annotations

import pytest

from vime.contract.checks.locations import Loc, leaf_prefix

pytestmark = pytest.mark.unit


def test_loc_at():
    loc = Loc("samples[3][1]", index=13)
    assert loc.at() == "samples[3][1] (index=13)"
    assert loc.at("loss_mask") == "samples[3][1].loss_mask (index=13)"
    assert loc.at("tokens", 5) == "samples[3][1].tokens[5] (index=13)"
    assert loc.at("tokens", 0) == "samples[3][1].tokens[0] (index=13)"
    assert loc.at("metadata", "k") == "samples[3][1].metadata['k'] (index=13)"
    assert loc.at("", 2) == "samples[3][1][2] (index=13)"


def test_loc_without_index():
    assert Loc("samples[0][0]").at("reward") == "samples[0][0].reward"
    assert Loc("out", index=0).at() == "out (index=0)"


def test_leaf_prefix():
    assert leaf_prefix(3, 1) == "samples[3][1]"
    assert leaf_prefix(3, 1, 0) == "samples[3][1][0]"
    assert leaf_prefix(0, 2, root="buf") == "buf[0][2]"
    assert leaf_prefix(0, 2, 4, "buf") == "buf[0][2][4]"
