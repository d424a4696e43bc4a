"""A run whose energy error passes ``output.energy_warning`` says so (a warning line once,
a mark on each report line beyond the limit, the ``end:`` line) and still ends with
status 0; a run that conserves its energy says nothing."""

import json

from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.cli import main
from tests.helpers import run_config

# 256 particles; 8 steps of 1/4 (a Plummer sphere's crossing time is ~2.8): E drifts by
# tens of per cent.  The same sphere with steps of 1/128 keeps |dE/E| near 1e-5.
CONFIG_FILES = {"coarse.toml": run_config(256, 2, 0.6, 8, 4, 1, dt=0.25),
                "fine.toml": run_config(256, 2, 0.6, 8, 4, 1, dt=1 / 128)}


def end_fields(log: str) -> dict[str, str]:
    [line] = [x for x in log.splitlines() if x.startswith("end:")]
    return dict(kv.split("=", 1) for kv in line[len("end: "):].split())


def test_a_growing_energy_error_is_said_once_and_at_the_end(here, capsys):
    assert main(["run", "coarse.toml"]) == 0                # a warning, not an error
    stdout = capsys.readouterr().out
    log = (here / "out" / "run.log").read_text()
    errors = [float(r["rel_energy_error"]) for r in read_diagnostics(here / "out" / "diagnostics.csv")]
    assert max(abs(e) for e in errors) > 0.05               # the run does go wrong
    first = next(i for i, e in enumerate(errors) if abs(e) > 0.01)     # report = step here
    for text in (log, stdout):
        warnings = [x for x in text.splitlines() if x.startswith("warning:")]
        assert len(warnings) == 1, warnings                 # said once, when first crossed
        assert f"at step {first} " in warnings[0] and "output.energy_warning = 0.01" in warnings[0]
        steps = [x for x in text.splitlines() if x.startswith("step ")]
        # the report lines beyond the limit carry it; those before do not
        assert [("(> 0.01)" in x) for x in steps] == [abs(e) > 0.01 for e in errors]
        # the warning follows the report line that crossed
        lines = text.splitlines()
        assert lines[lines.index(warnings[0]) - 1] == steps[first]
    end = end_fields(log)
    assert float(end["energy_warning"]) == 0.01 and int(end["energy_warning_step"]) == first
    assert float(end["energy_error_max"]) == float(f"{max(abs(e) for e in errors):.3g}")


def test_the_limit_is_a_setting_and_json_carries_it(here, capsys):
    assert main(["run", "coarse.toml", "--log-json", "--set", "output.energy_warning=0.1"]) == 0
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    [warning] = [e for e in events if e["event"] == "warning"]
    assert "output.energy_warning = 0.1:" in warning["message"]
    diag = [e for e in events if e["event"] == "diagnostics"]
    assert [e.get("energy_warning") for e in diag] == [
        0.1 if abs(e["rel_energy_error"]) > 0.1 else None for e in diag]
    assert events[-1]["event"] == "end" and events[-1]["energy_warning"] == 0.1
    assert events[-1]["energy_error_max"] == float(f"{max(abs(e['rel_energy_error']) for e in diag):.3g}")
    # 0: never
    assert main(["run", "coarse.toml", "--set", "output.energy_warning=0",
                 "--set", "output.dir=out0"]) == 0
    log = (here / "out0" / "run.log").read_text()
    assert "warning" not in log and "(>" not in log


def test_a_run_that_conserves_energy_says_nothing(here, capsys):
    assert main(["run", "fine.toml"]) == 0
    stdout = capsys.readouterr().out
    log = (here / "out" / "run.log").read_text()
    errors = [float(r["rel_energy_error"]) for r in read_diagnostics(here / "out" / "diagnostics.csv")]
    assert max(abs(e) for e in errors) < 1e-3
    for text in (log, stdout):
        assert "warning" not in text and "(>" not in text
    assert "energy_warning" not in end_fields(log)


def test_the_progress_bar_says_it_from_then_on():
    from hybridtree.analysis.diagnostics import Reporter
    rep = Reporter(None, progress=True, echo=False)
    rep.begin(3)
    rec = {"step": 1, "time": 0.25, "total": -0.2, "rel_energy_error": 0.02, "px": 0.0,
           "py": 0.0, "pz": 0.0, "virial_ratio": 1.0, "r10": 0.3, "r50": 0.8, "r90": 2.0,
           "interactions_per_s": 1e6}
    rep.tick(0.25)
    assert rep._bar.postfix == "t=0.25"
    rep.report(rec, 0.01, first=True)
    rep.tick(0.5)
    assert rep._bar.postfix == "t=0.5 energy error > 0.01"
    rep.report({**rec, "rel_energy_error": 0.005})      # it stays said
    rep.tick(0.75)
    assert rep._bar.postfix.endswith("energy error > 0.01")
    rep.close()
