"""Config fuzzing (issue 8): random TOML documents, random values and random override
strings either load or raise the project's ConfigError -- never another exception."""

import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybridtree.config import SCHEMA, ConfigError, Settings, load_config, parse_overrides

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = (st.booleans() | st.integers(-2**70, 2**70) | st.integers(-3, 3)
           | st.floats(allow_nan=True, allow_infinity=True) | TEXT
           | st.sampled_from(["plummer", "file", "tree", "direct", "dll", "single", "2x2x1",
                              "", "gpu", "per_process", "3x0x1"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)
SECTIONS = st.sampled_from(list(SCHEMA) + ["bogus"]) | TEXT
NAMES = st.sampled_from(sorted({n for s in SCHEMA.values() for n in s})) | TEXT
DOCS = st.dictionaries(SECTIONS, st.dictionaries(NAMES, VALUES, max_size=6) | SCALARS,
                       max_size=5)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) \
            else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_doc(doc: dict) -> str:
    lines = []
    for section, body in doc.items():
        if isinstance(body, dict):
            lines.append(f"[{json.dumps(section)}]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in body.items()]
        else:
            lines.insert(0, f"{json.dumps(section)} = {toml_value(body)}")
    return "\n".join(lines) + "\n"


def loads_or_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.toml"
        path.write_text(text, encoding="utf-8")
        try:
            s = load_config(path)
        except ConfigError:
            return
        assert isinstance(s, Settings)
        assert s.time.dt > 0 and 0 < s.gravity.theta <= 1.2


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS)
def test_random_toml_documents(doc):
    loads_or_config_error(toml_doc(doc))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([f"{s}.{n}" for s in SCHEMA for n in SCHEMA[s]]), VALUES)
def test_random_values_for_every_setting(key, value):
    section, name = key.split(".")
    loads_or_config_error(toml_doc({section: {name: value}}))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_text(text):
    text = text.encode("utf-8", "replace").decode("utf-8")
    loads_or_config_error(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=40) | st.builds(lambda k, v: f"{k}={v}", NAMES, TEXT),
                max_size=4))
def test_random_overrides(items):
    try:
        parse_overrides(items)
    except ConfigError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.floats(), st.floats(), st.floats())
def test_random_step_and_end_times(dt, t_end, snapshot_dt):
    """Extreme ratios (found by this test: t_end / dt overflowing to inf)."""
    loads_or_config_error(toml_doc({"time": {"dt": dt, "t_end": t_end},
                                    "output": {"snapshot_dt": snapshot_dt}}))
