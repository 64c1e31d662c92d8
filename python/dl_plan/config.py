"""The config file a script shares with dl-launch: $DL_CONFIG (dl-launch passes the one it read),
else the workspace's dl.conf ($DL_WORKSPACE, else the working directory) when there is one.
`key = value` lines, '#' starts a comment, keys as dl-launch's (batch-size, not batch_size).

Layered as dl-launch layers them: the file < DL_<KEY> variables < what the script was given
(its own flags). A script run on its own thus reads the same dl.conf dl-launch would; under
dl-launch the plan's values arrive as DL_* and win.

    epochs = dl_plan.setting("epochs", 10)   # dl.conf's epochs, DL_EPOCHS, else 10

A file named by DL_CONFIG must be read (skipping it would train on other settings than asked):
one that is missing, unreadable or not text raises PlanError with dl-launch's exit code (66, 77,
65); a dl.conf nobody named may be absent.
"""

import os
import stat

from dl_plan.errors import PlanError

EXPECTED_FILE = "; expected a readable file of key = value lines"
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def key_to_env(key):
    """dl-launch's naming: batch-size -> DL_BATCH_SIZE."""
    return "DL_" + key.upper().replace("-", "_")


class Config:
    """The file's `key = value` lines: `values[key] = (raw, "path:line: key")`."""

    def __init__(self, path, values):
        self.path = path  # None: no file
        self.values = values

    def raw(self, key, env):
        """(raw text, source) of `key`: DL_<KEY> when set, else the file's line, else None."""
        var = key_to_env(key)
        if env.get(var, "") != "":
            return env[var], var
        return self.values.get(key)


def locate(env):
    """The file to read and whether somebody named it (DL_CONFIG)."""
    if env.get("DL_CONFIG", "") != "":
        return env["DL_CONFIG"], True
    workspace = env.get("DL_WORKSPACE") or os.getcwd()
    return os.path.join(workspace, "dl.conf"), False


def read_config(env=None):
    env = os.environ if env is None else env
    path, named = locate(env)
    where = path
    if named:
        where += " (DL_CONFIG" + ("" if os.path.isabs(path) else f", from {os.getcwd()}") + ")"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise PlanError(f"config file {where}: not a regular file{EXPECTED_FILE}", 66)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError) as e:
        if not named:
            return Config(None, {})
        raise PlanError(f"config file {where}: {e.strerror}{EXPECTED_FILE}", 66) from None
    except PermissionError as e:
        raise PlanError(f"config file {where}: {e.strerror}{EXPECTED_FILE}", 77) from None
    except UnicodeDecodeError:
        raise PlanError(f"config file {where}: not UTF-8 text{EXPECTED_FILE}", 65) from None
    except OSError as e:
        raise PlanError(f"config file {where}: {e.strerror or e}{EXPECTED_FILE}", 66) from None
    values = {}
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, eq, value = (s.strip() for s in line.partition("="))
        if not eq or not key:
            raise PlanError(f"config file {path}:{number}: expected key = value", 65)
        values[key] = (value, f"{path}:{number}: {key}")
    return Config(path, values)


def typed(raw, source, default):
    """`raw` as the type of `default`; '' and auto are the default (for a str default, only '')."""
    kind = type(default)
    if raw == "" or (raw == "auto" and kind is not str):
        return default
    if kind is bool:
        word = str(raw).strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        raise PlanError(f"{source}={raw!r}: expected true or false")
    try:
        return kind(raw)
    except (TypeError, ValueError):
        what = {int: "a whole number", float: "a number"}.get(kind, kind.__name__)
        raise PlanError(f"{source}={raw!r}: expected {what} or auto") from None
