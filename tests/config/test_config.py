"""Configs: validation, clear errors with hints, overrides, the shipped configs."""

from pathlib import Path

import pytest

from hybridtree.config import (SCHEMA, ConfigError, load_config, markdown_table,
                               parse_overrides, settings_from_flat, validate)

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "run.toml"
    p.write_text(text)
    return p


def test_defaults_come_from_the_schema():
    s = validate({})
    for section, opts in SCHEMA.items():
        for name, opt in opts.items():
            assert s.values[section][name] == opt.default
    assert s.gravity.theta == 0.5 and s.time.dt == 1 / 128


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    s = load_config(path)
    assert s.ics.n >= 1 and s.time.dt > 0


def test_shipped_configs_exist():
    names = {p.name for p in (ROOT / "configs").glob("*.toml")}
    assert {"plummer_small.toml", "plummer_1m.toml", "cold_collapse.toml",
            "hernquist.toml"} <= names


@pytest.mark.parametrize("text, message", [
    ("[gravity]\nthetaa = 0.5\n", "unknown setting gravity.thetaa; did you mean 'theta'?"),
    ("[gravty]\ntheta = 0.5\n", "unknown section [gravty]; did you mean 'gravity'?"),
    ("[gravity]\ntheta = 0.0\n", "gravity.theta must be 0 < theta <= 1.2, got 0.0"),
    ("[gravity]\ntheta = 1.3\n", "gravity.theta must be 0 < theta <= 1.2, got 1.3"),
    ("[gravity]\ntheta = \"big\"\n", "gravity.theta must be a number, got 'big'"),
    ("[gravity]\neps = -0.1\n", "gravity.eps must be >= 0, got -0.1"),
    ("[gravity]\nn_leaf = 0\n", "gravity.n_leaf must be 1 <= n_leaf <= 1024, got 0"),
    ("[gravity]\nn_leaf = 2.5\n", "gravity.n_leaf must be an integer, got 2.5"),
    ("[gravity]\nmethod = \"treee\"\n", "gravity.method must be one of tree, direct; got "
                                          "'treee'; did you mean 'tree'?"),
    ("[gravity]\nprecise = 1\n", "gravity.precise must be true or false, got 1"),
    ("[ics]\nn = 0\n", "ics.n must be 1 <= n <= 2^40, got 0"),
    ("[ics]\nn = true\n", "ics.n must be an integer, got True"),
    ("[ics]\nkind = \"file\"\n", "ics.kind = 'file' needs ics.file"),
    ("[time]\ndt = 0\n", "time.dt must be > 0, got 0.0"),
    ("[time]\nt_end = -1\n", "time.t_end must be >= 0, got -1.0"),
    ("[time]\ndt = 0.3\nt_end = 1.0\n", "time.t_end (1.0) must be a whole number of steps"),
    ("[output]\nsnapshot_dt = 0.01\n", "output.snapshot_dt (0.01) must be a whole number"),
    ("[output]\ndiag_every = 0\n", "output.diag_every must be >= 1, got 0"),
    ("[units]\nlength_cm = -1.0\n", "units.length_cm must be > 0"),
    ("[gravity]\neps = inf\n", "gravity.eps must be finite"),
    ("gravity = 3\n", "[gravity] must be a table of settings"),
    ("[gravity\n", "not valid TOML"),
])
def test_bad_configs_name_the_mistake(tmp_path, text, message):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, text))
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="config file .*nothere.toml.* not found"):
        load_config(tmp_path / "nothere.toml")


def test_overrides_parse_toml_values_and_bare_strings():
    o = parse_overrides(["gravity.theta=0.6", "output.dir=out2", "gravity.precise=false",
                         "ics.n=100", 'output.dir="a b"'])
    assert o == {"gravity.theta": 0.6, "output.dir": "a b", "gravity.precise": False,
                 "ics.n": 100}
    with pytest.raises(ConfigError, match="did you mean 'gravity.theta'"):
        parse_overrides(["gravity.thet=0.6"])
    with pytest.raises(ConfigError, match="section.name=value"):
        parse_overrides(["theta"])


def test_overrides_win_over_the_file_and_are_validated(tmp_path):
    p = write(tmp_path, "[gravity]\ntheta = 0.7\n")
    assert load_config(p, parse_overrides(["gravity.theta=0.6"])).gravity.theta == 0.6
    with pytest.raises(ConfigError, match="gravity.theta must be"):
        load_config(p, parse_overrides(["gravity.theta=2"]))


def test_relative_ic_file_is_relative_to_the_config(tmp_path):
    p = write(tmp_path, '[ics]\nkind = "file"\nfile = "ics.hdf5"\n')
    assert load_config(p).ics.file == str(tmp_path / "ics.hdf5")


def test_flat_round_trip():
    s = validate({"gravity": {"theta": 0.7}, "ics": {"n": 12}})
    assert settings_from_flat(s.flat()).values == s.values
    with pytest.raises(ConfigError, match="unknown setting"):
        settings_from_flat({"gravity.nonsense": 1})


def test_configuration_doc_matches_the_schema():
    doc = (ROOT / "docs" / "configuration.md").read_text()
    assert markdown_table() in doc, (
        "regenerate: python -c \"from hybridtree.config import markdown_table; "
        "print(markdown_table())\"")
