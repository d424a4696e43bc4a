"""A run's settings: read ``configs/*.toml``, validate, report mistakes clearly.

Every setting, its type, its default and its allowed range is in :data:`SCHEMA`
(:mod:`hybridtree.config.schema`, the one place where defaults live); the rules relating
settings to each other are in :mod:`hybridtree.config.rules`.  Units: lengths, masses and times are in the
run's internal units (G = 1); ``[units]`` says what those are in cgs.
"""

from __future__ import annotations

import difflib
import errno
import math
import numbers
import os
import stat
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .rules import check_settings
from .schema import SCHEMA, ConfigError, Option, markdown_table, redshift_list
from .units import KPC_CM, MSUN_1E10_G

# the schema's names are re-exported: callers read them from here or hybridtree.config
__all__ = ["ConfigError", "Option", "SCHEMA", "Settings", "ics_file_error", "load_config",
           "parse_overrides", "settings_from_flat", "markdown_table", "redshift_list",
           "validate", "KPC_CM", "MSUN_1E10_G"]


class _Section:
    """Attribute access to one section's validated values."""

    def __init__(self, values: dict[str, Any]):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__dict__})"


@dataclass(frozen=True)
class Settings:
    """Validated settings; ``settings.gravity.theta`` etc.  ``source`` is the config path."""

    values: dict[str, dict[str, Any]]
    source: str = ""
    #: a relative ics.file as the config or --set gave it, and the folder it is read from
    #: (the config's, absolute); "" where ics.file was absolute or came from elsewhere
    ics_file_given: str = ""
    ics_file_base: str = ""

    def __getattr__(self, section: str) -> _Section:
        try:
            return _Section(self.values[section])
        except KeyError:
            raise AttributeError(section) from None

    def flat(self) -> dict[str, Any]:
        """``{"gravity.theta": 0.5, ...}``: every setting, defaults included."""
        return {f"{s}.{k}": v for s, opts in self.values.items() for k, v in opts.items()}

    def with_overrides(self, overrides: dict[str, Any]) -> "Settings":
        raw = {s: dict(opts) for s, opts in self.values.items()}
        for key, value in overrides.items():
            try:
                s, k = _split_key(key)
            except ConfigError as exc:
                raise ConfigError(f"{_set_text(key, value)}: {exc}") from None
            raw[s][k] = value
        try:
            return validate(raw, self.source)
        except ConfigError as exc:
            raise _located(exc, overrides, "") from None


def _set_text(key: str, value: Any) -> str:
    """How the user wrote an override: ``--set gravity.theta=-0.5``."""
    text = (str(value).lower() if isinstance(value, bool) else
            value if isinstance(value, str) else repr(value))
    return f"--set {key}={text}"


def _located(exc: ConfigError, overrides: dict[str, Any], source: str) -> ConfigError:
    """``exc`` prefixed with where the mistake is: the ``--set`` overrides it is about,
    else ``source`` (the config file or snapshot the other settings came from)."""
    named = [_set_text(k, overrides[k]) for k in exc.keys if k in overrides]
    where = ", ".join(named) or source
    return ConfigError(f"{where}: {exc}" if where else str(exc), exc.keys)


def _suggest(word: str, candidates) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _split_key(key: str) -> tuple[str, str]:
    section, _, name = key.partition(".")
    if not name or "." in name:
        raise ConfigError(f"setting {key!r} must look like section.name, e.g. gravity.theta")
    if section not in SCHEMA:
        raise ConfigError(f"unknown section {section!r}{_suggest(section, SCHEMA)}")
    if name not in SCHEMA[section]:
        raise ConfigError(f"unknown setting {key!r}"
                          f"{_suggest(key, [f'{section}.{n}' for n in SCHEMA[section]])}")
    return section, name


def _coerce(key: str, opt: Option, value: Any) -> Any:
    """Check the type of ``value`` (ints are accepted for floats, bools never for numbers;
    an option's ``convert`` may take other spellings first)."""
    if opt.convert is not None:
        value = opt.convert(value)
    # numpy's scalars (np.float32, np.int64) are numbers too; bools never are
    ok = {bool: isinstance(value, bool),
          int: isinstance(value, numbers.Integral) and not isinstance(value, bool),
          float: isinstance(value, numbers.Real) and not isinstance(value, bool),
          str: isinstance(value, str)}[opt.kind]
    if not ok:
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        raise ConfigError(f"{key} must be {names[opt.kind]}, got {value!r}", (key,))
    if opt.kind is int:
        value = int(value)
    if opt.kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{key} must be finite, got {value!r}", (key,))
    if opt.choices and value not in opt.choices:
        raise ConfigError(f"{key} must be one of {', '.join(opt.choices)}; got {value!r}"
                          f"{_suggest(value, opt.choices)}", (key,))
    if opt.check is not None and not opt.check(value):
        raise ConfigError(f"{key} must be {opt.rule}, got {value!r}", (key,))
    return value


def validate(raw: dict[str, Any], source: str = "") -> Settings:
    """Check a parsed TOML table against :data:`SCHEMA`; fill in defaults."""
    values: dict[str, dict[str, Any]] = {}
    for section in raw:
        if section not in SCHEMA:
            raise ConfigError(f"unknown section [{section}]{_suggest(section, SCHEMA)}")
        if not isinstance(raw[section], dict):
            raise ConfigError(f"[{section}] must be a table of settings, got {raw[section]!r}")
    for section, opts in SCHEMA.items():
        given = raw.get(section, {})
        for name in given:
            if name not in opts:
                raise ConfigError(f"unknown setting {section}.{name}{_suggest(name, opts)}",
                                  (f"{section}.{name}",))
        values[section] = {name: _coerce(f"{section}.{name}", opt, given[name])
                           if name in given else opt.default for name, opt in opts.items()}
    check_settings(values)
    return Settings(values, source)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["gravity.theta=0.6", "output.dir=out2"]`` -> ``{"gravity.theta": 0.6, ...}``.

    Values are read as TOML values (numbers, true/false, "strings"); anything that is
    not valid TOML is taken as a bare string, so ``output.dir=out2`` works.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set needs section.name=value, got {item!r}")
        try:
            _split_key(key)
        except ConfigError as exc:
            raise ConfigError(f"--set {item.strip()}: {exc}") from None
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        out[key] = value
    return out


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read, merge ``overrides`` (flat ``section.name`` keys) and validate a TOML config."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} not found") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    overrides = overrides or {}
    for key, value in overrides.items():
        try:
            s, k = _split_key(key)
        except ConfigError as exc:
            raise ConfigError(f"{_set_text(key, value)}: {exc}") from None
        section = raw.setdefault(s, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: [{s}] must be a table of settings")
        section[k] = value
    try:
        settings = validate(raw, str(path))
    except ConfigError as exc:
        raise _located(exc, overrides, str(path)) from None
    if settings.ics.kind == "file":
        # a relative IC path is relative to the config file, so configs can travel with data
        given = settings.ics.file
        if not Path(given).is_absolute():
            settings.values["ics"]["file"] = str(path.parent / given)
            settings = replace(settings, ics_file_given=given,
                               ics_file_base=str(path.parent.resolve()))
    return settings


def ics_file_error(settings: Settings, exc: Exception) -> str:
    """The line that says why ics.file cannot be read (``exc``: the reader's error): how
    the user gave the path (a relative one: the config's folder it is read from) and, where
    the path is there but no file, what it is instead (a folder, a symbolic link loop, a
    link to nothing)."""
    path = settings.ics.file
    given = (f"ics.file = {settings.ics_file_given!r} (relative to the config's folder "
             f"{settings.ics_file_base})" if settings.ics_file_given else
             f"ics.file = {path!r}")
    what = _not_a_file(Path(path))
    return f"{given}: {path} is {what}" if what else f"{given}: {exc}"


def _not_a_file(path: Path) -> str:
    """What ``path`` is where it is there but not a file to read ("" otherwise)."""
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (or a link into one)"
        if path.is_symlink():
            return f"a symbolic link to {os.readlink(path)!r}, which does not exist"
        return ""
    if stat.S_ISDIR(st.st_mode):
        return "a folder, not a snapshot file"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a device, pipe or socket)"
    return ""


def settings_from_flat(flat: dict[str, Any], source: str = "") -> Settings:
    """Inverse of :meth:`Settings.flat` (e.g. from a snapshot's ``Parameters`` group).

    Keys this version does not know are errors, so a restart never silently drops one.
    """
    raw: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        s, k = _split_key(key)
        raw.setdefault(s, {})[k] = value
    return validate(raw, source)


if __name__ == "__main__":
    print(markdown_table(), end="")
