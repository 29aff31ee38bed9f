"""Config input: TOML from a file, a string or a dict, and `key.path=value` overrides.

Owns turning what a user hands over into the `(text, base_dir, overrides)` triple the
native module takes. Validation itself (keys, ranges, units) is the Rust core's job.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import tomli_w

from pisanet._core import ConfigError

ConfigLike = Mapping[str, Any] | str | os.PathLike[str]

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")


def load(config: ConfigLike) -> tuple[str, Path | None]:
    """Returns the config as TOML text and the directory its relative paths start from.

    A mapping is serialised to TOML (relative paths then start from the working
    directory). A `Path`, or a `str` with no newline and no `=`, names a file;
    any other `str` is TOML text.
    """
    if isinstance(config, Mapping):
        return tomli_w.dumps(dict(config)), None
    if isinstance(config, str) and ("\n" in config or "=" in config):
        return config, None
    path = Path(config)
    try:
        return path.read_text(encoding="utf-8"), path.resolve().parent
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, expected a TOML file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None


def parse_set(items: Iterable[str]) -> list[str]:
    """Checks `key.path=value` overrides (`--set`) and returns them normalised."""
    overrides = []
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not _KEY.fullmatch(key) or not value:
            raise ConfigError(f"--set {item!r}: expected key.path=value, e.g. workload.load=0.5")
        overrides.append(f"{key}={value}")
    return overrides


def keyword_overrides(overrides: Mapping[str, Any]) -> list[str]:
    """Turns keyword overrides (`workload__load=0.5`: `__` for dots) into `key.path=value`."""
    return [f"{key.replace('__', '.')}={toml_value(value)}" for key, value in overrides.items()]


def toml_value(value: Any) -> str:
    """A Python value as an inline TOML value (strings quoted)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{toml_value(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    # NOTE: tomli_w writes `v = <value>` for a scalar; what follows the first `=` is it.
    return tomli_w.dumps({"v": value}).partition("=")[2].strip()
