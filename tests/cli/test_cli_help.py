"""``--help``: every sub-command has a description and every option a help text.

Walks the parser itself, so an option or sub-command added later without help fails
here instead of showing up bare in ``--help``.
"""

import argparse

import pytest

from hybridtree.cli import build_parser, main


def commands() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def one_line_helps() -> dict[str, str]:
    """The sub-commands' ``help=``: their line in ``hybridtree --help``."""
    [sub] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {a.dest: a.help for a in sub._choices_actions}


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    return ["/".join(a.option_strings) or a.dest for a in parser._actions
            if not a.help or a.help == argparse.SUPPRESS or not a.help.strip()]


def test_the_commands_are_the_known_ones():
    # a new command is welcome; this only makes sure the walk below sees them all
    assert {"run", "ic", "devices", "info", "plot", "bench"} <= set(commands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_is_described(name):
    parser = commands()[name]
    assert parser.description and len(parser.description.split()) >= 5, name
    assert one_line_helps().get(name, "").strip(), name


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_has_help(name):
    assert undocumented(commands()[name]) == []


def test_top_level_options_have_help():
    assert undocumented(build_parser()) == []


def test_the_checks_catch_a_bare_option():
    parser = commands()["bench"]
    parser.add_argument("--new-option")
    assert undocumented(parser) == ["--new-option"]


@pytest.mark.parametrize("name", ["info", "bench", "devices", "ic"])
def test_help_output_shows_description_and_option_help(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    # argparse re-wraps the text (also after hyphens): compare without whitespace
    out = "".join(capsys.readouterr().out.split())
    parser = commands()[name]
    assert "".join(parser.description.split()) in out
    for action in parser._actions:
        # argparse fills in %(default)s; the first words survive intact
        first = "".join(action.help.split()[:3])
        assert first in out, (name, action.dest)


def test_bench_help_says_units(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Hénon units" in out and "dimensionless" in out and "times in s" in out
