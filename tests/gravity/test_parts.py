"""The typed force parts (hybridtree.gravity.parts) and opening criterion
(hybridtree.gravity.criterion): what each knows against the kernels' defines and a
reference by hand, and no branching on a part's name elsewhere in the package."""

import re
from pathlib import Path

import numpy as np
import pytest

from hybridtree.gravity.criterion import Geometric, Relative, opening_criterion
from hybridtree.gravity.parts import (FULL, HARD, LONG, PARTS, SHORT, SOFT, as_part, as_parts,
                                      column_parts, whole_part)
from hybridtree.gravity.settings import GravitySettings
from hybridtree.gravity.splitting import Changeover

PACKAGE = Path(__file__).resolve().parents[2] / "hybridtree"


def test_no_branch_on_a_part_name_outside_the_parts_module():
    """Every difference between parts is a property of the part (issue 55): no part
    or tuple of parts compared with a name (``part == "hard"``, ``parts != ("full",)``,
    ``part in ("soft", ...)``) anywhere else in the package (the run state's module,
    moving elsewhere, aside)."""
    pattern = re.compile(r"""\bparts? *(==|!=|in|not in) *\(?["']""")
    found = [f"{path.relative_to(PACKAGE)}:{k}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name != "parts.py"
             for k, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line) and "integrate/" not in str(path)]
    assert not found, "\n".join(found)


def test_each_part_knows_its_walk_potential_and_mesh():
    co = Changeover(0.01, 0.1, "poly7")
    assert FULL.defines(co) == SHORT.defines(co) == LONG.defines(co) == {}
    assert SOFT.defines(co)["SPLIT"] == 1 and HARD.defines(co)["SPLIT"] == 2
    assert SOFT.defines(co)["CHANGEOVER"] == HARD.defines(co)["CHANGEOVER"] == 2
    with pytest.raises(ValueError, match="needs a changeover"):
        HARD.defines(None)
    assert [p.name for p in PARTS.values() if not p.potential] == ["hard"]
    assert [p.name for p in PARTS.values() if not p.walked] == ["long"]
    assert [p.name for p in PARTS.values() if not p.mesh] == ["short"]
    assert [p.name for p in PARTS.values() if p.near_only] == ["hard"]
    assert whole_part(True) is SHORT and whole_part(False) is FULL
    assert [p.name for p in column_parts("soft")] == ["soft", "full"]
    assert as_parts(("hard", SOFT)) == (HARD, SOFT) and f"{LONG}" == "long"
    with pytest.raises(ValueError, match="part must be one of"):
        as_part("medium")


def test_the_criterion_owns_its_angles_defines_and_group_bounds():
    g = GravitySettings(opening="relative", alpha=0.004, theta=0.6, theta_max=0.9,
                        theta_min=0.3)
    first = opening_criterion(g, known=False)       # no a_old yet: geometric with theta
    assert isinstance(first, Geometric) and not first.relative
    assert first.build_theta == first.let_theta == 0.6 and first.defines() == {}
    assert first.opening == 0
    a_old = np.random.default_rng(3).normal(size=(10, 3))
    rel = opening_criterion(g, known=True, a_old=a_old)
    assert isinstance(rel, Relative) and rel.relative and rel.opening == 1
    assert (rel.build_theta, rel.let_theta) == (0.9, 0.3)
    assert rel.defines() == {"INV_THETA_MIN": f"{float(np.float32(1 / 0.3))!r}f"}
    assert isinstance(opening_criterion(GravitySettings(opening="geometric"), True), Geometric)
    # alpha times each group's smallest |a_old|, sinks in group order
    sorder, gstart = np.array([3, 1, 4, 0, 9, 2, 6, 5, 8, 7]), np.array([0, 4, 7])
    norms = np.sqrt((a_old ** 2).sum(axis=1))[sorder]
    want = 0.004 * np.array([norms[0:4].min(), norms[4:7].min(), norms[7:].min()])
    assert np.allclose(rel.group_bounds(sorder, gstart), want, rtol=1e-15, atol=0)
    assert np.array_equal(rel.rows(np.array([2, 5])).a_old, a_old[[2, 5]])
