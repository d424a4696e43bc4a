"""Every ``HYBRIDTREE_*`` environment variable the package reads is documented in
docs/configuration.md's "Environment variables" section, and that section names none the
package no longer reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bHYBRIDTREE_[A-Z][A-Z_]*[A-Z]\b")


def test_every_environment_variable_is_documented():
    read = {name for path in (ROOT / "hybridtree").rglob("*.py")
            for name in NAME.findall(path.read_text())}
    doc = (ROOT / "docs" / "configuration.md").read_text()
    section = doc[doc.index("\n## Environment variables\n"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    documented = set(NAME.findall(section))
    assert {"HYBRIDTREE_DEVICE", "HYBRIDTREE_STATE", "HYBRIDTREE_FAULT"} <= read
    assert read - documented == set(), "document these in docs/configuration.md"
    assert documented - read == set(), "no longer read by the package"
