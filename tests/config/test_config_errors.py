"""Rough edges (issue): --set mistakes name --set, output.snapshot_dt below time.dt is a
config error, and a full disk names the snapshot (not its temporary file)."""

from pathlib import Path

import pytest

from tests.helpers import one_error_line, run_config
from hybridtree.cli import main
from hybridtree.config import ConfigError, load_config

DT = 1 / 64
SMALL = run_config(300, 4, 0.6, 8, 2, 2, DT)
CONFIG_FILES = {"small.toml": SMALL}


# --- 1. a --set mistake is reported as one of --set, not of the file -------------------

def test_a_bad_set_value_names_set_not_the_file(here, capsys):
    assert main(["run", "small.toml", "--quiet", "--set", "gravity.theta=-0.5"]) == 2
    msg = one_error_line(capsys)
    assert msg.startswith("--set gravity.theta=-0.5: gravity.theta must be 0 < theta <= 1.2"), msg
    assert "small.toml" not in msg
    assert not (here / "out").exists()


def test_a_bad_value_in_the_file_keeps_the_files_path(here, capsys):
    (here / "bad.toml").write_text(SMALL.replace("theta = 0.6", "theta = -0.5"))
    assert main(["run", "bad.toml", "--quiet"]) == 2
    assert one_error_line(capsys).startswith("bad.toml: gravity.theta must be")
    assert not (here / "out").exists()


def test_set_errors_across_settings_and_unknown_keys_name_set(here, capsys):
    # t_end of the file is no whole number of the new dt: the --set is the culprit
    assert main(["run", "small.toml", "--quiet", "--set", "time.dt=0.01"]) == 2
    msg = one_error_line(capsys)
    assert msg.startswith("--set time.dt=0.01: time.t_end"), msg
    assert main(["run", "small.toml", "--quiet", "--set", "gravity.thetaa=0.5"]) == 2
    msg = one_error_line(capsys)
    assert msg.startswith("--set gravity.thetaa=0.5: unknown setting"), msg
    assert "did you mean 'gravity.theta'" in msg
    with pytest.raises(ConfigError, match=r"^--set output\.dir=: output\.dir must not"):
        load_config(here / "small.toml", {"output.dir": ""})
    assert not (here / "out").exists()


# --- 2. output.snapshot_dt below time.dt -----------------------------------------------

@pytest.mark.parametrize("snap_dt", [1e-12, DT / 2, 0.0])
def test_snapshot_dt_below_dt_is_a_config_error(here, capsys, snap_dt):
    assert main(["run", "small.toml", "--quiet", "--set", f"output.snapshot_dt={snap_dt!r}"]) == 2
    msg = one_error_line(capsys)
    assert msg.startswith(f"--set output.snapshot_dt={snap_dt!r}: output.snapshot_dt"), msg
    assert "ZeroDivision" not in msg and "modulo" not in msg
    assert ("smaller than time.dt" in msg) or ("> 0" in msg), msg
    assert not (here / "out").exists()


def test_snapshot_dt_in_the_file_below_dt_and_not_whole_steps(here):
    (here / "a.toml").write_text(SMALL.replace(f"snapshot_dt = {2 * DT}", "snapshot_dt = 1e-12"))
    with pytest.raises(ConfigError, match=r"a\.toml: output\.snapshot_dt \(1e-12\) must be at "
                                          r"least one step: it is smaller than time\.dt"):
        load_config(here / "a.toml")
    with pytest.raises(ConfigError, match="must be a whole number of steps of time.dt"):
        load_config(here / "small.toml", {"output.snapshot_dt": 1.5 * DT})
    s = load_config(here / "small.toml", {"output.snapshot_dt": DT})       # one step is fine
    assert s.output.snapshot_dt == DT


# --- 3. a full disk while writing a snapshot -------------------------------------------

@pytest.mark.parametrize("kind", [OSError, RuntimeError])
def test_a_full_disk_names_the_snapshot_and_leaves_no_temporary_file(here, capsys,
                                                                     monkeypatch, kind):
    """HDF5's own report of ENOSPC names the temporary file (OSError while writing,
    RuntimeError while closing); the user must see the snapshot's name."""
    import hybridtree.io.hdf5_write as snapshot
    real = snapshot.unit_dataset

    def dataset(group, name, *a, **k):
        fname = group.file.filename
        if "snapshot_0001" in Path(fname).name:
            text = (f"Can't synchronously write data (file write failed: time = now, "
                    f"filename = '{fname}', file descriptor = 6, errno = 28, error message = "
                    f"'No space left on device', total write size = 9600)")
            raise OSError(28, text) if kind is OSError else RuntimeError(text)
        return real(group, name, *a, **k)

    monkeypatch.setattr(snapshot, "unit_dataset", dataset)
    assert main(["run", "small.toml", "--quiet"]) == 2
    msg = one_error_line(capsys)
    assert "snapshot_0001.hdf5" in msg and ".tmp" not in msg, msg
    assert "disk is full" in msg and "No space left on device" in msg, msg
    names = sorted(p.name for p in (here / "out").iterdir())
    assert "snapshot_0000.hdf5" in names and "snapshot_0001.hdf5" not in names, names
    assert not any(n.endswith(".tmp") for n in names), names


def test_write_snapshot_error_names_the_file(tmp_path, monkeypatch):
    import numpy as np
    import hybridtree.io.hdf5_write as snapshot
    from hybridtree.config.units import Units

    def broken(*a, **k):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(snapshot, "unit_dataset", broken)
    p = snapshot.Particles(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2),
                           np.arange(1, 3, dtype=np.uint64))
    with pytest.raises(snapshot.SnapshotWriteError) as info:
        snapshot.write_snapshot(tmp_path / "x.hdf5", p, 0.0, Units(1.0, 1.0))
    assert str(info.value) == (f"writing {tmp_path / 'x.hdf5'}: the write failed "
                               f"(Input/output error); the snapshot was not written")
    assert list(tmp_path.iterdir()) == []
