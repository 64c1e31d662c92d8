#!/usr/bin/env python3
"""Runs the shell commands of README.md and docs/*.md as a user types them.

    tests/docs/doc_commands.py --repo REPO --dl-launch PATH [--dl-train PATH] [--python PATH]

Every fenced block whose language is a shell's (sh, bash, shell, console, ...) carries a marker,
an HTML comment on the line directly before its fence, which says what the test does with it:

    <!-- doc-test: run -->                 run on this (CPU) machine, as written
    <!-- doc-test: gpu -->                 needs a GPU: the program and its options are checked,
                                           and a dl-launch command's --dry-run must parse
    <!-- doc-test: docker -->              Docker: compose file, service, Dockerfile checked
    <!-- doc-test: skip: REASON -->        not run, for the reason given

After the kind come the block's attributes, and, one a line, what each command must show:

    <!-- doc-test: run setup=empty timeout=120
      1: expect="created  dl.conf"
      2: exit=0 expect=/done: validation accuracy [0-9.]+%/
      3: silent
      4: skip: serves until stopped
    -->

  N: ...        the block's Nth command (a `$ ` line in a console block, else a command line
                with its `\\` continuations; comment lines do not count): `exit=CODE` (default
                0), `expect="TEXT"` (a line of its output holds TEXT) or `expect=/REGEX/` (a
                line matches), `silent` (no output at all), or another kind for this command
                alone (`skip: REASON`, `docker`, `gpu`). In a one-command block the first
                line may carry `exit=` and `expect=` itself.
  setup=        workspace (default): a fresh directory outside the checkout, made HOME, holding
                `workspace/` from `dl-launch init workspace`; empty: the same without it;
                continue: the directory (and working directory) the file's previous run block
                left.
  cwd=DIR       the working directory, relative to that directory (default: itself).
  prepare="SH"  a command run first in the working directory (DOC_TEST_REPO is the checkout):
                what the user has and the doc assumes (photos to predict), never the command
                under test.
  needs=A,B     dl-train, torch (python3 on PATH imports it), dl_loader (it imports the fast
                loader from dl-launch's companion folder, <dl-launch>/../python, which a build
                without LibTorch or without DL_BUILD_PY_LOADER lacks): skipped, with the reason,
                without.
  timeout=S     seconds each command may take (default 300).

A `run` command needs an expectation (`expect`, `silent`), or, in a console block, the output
shown under it: one of the shown lines must appear. `cd DIR` changes the working directory of the
commands after it. env/'s scripts (install, build, the test suite) are never run: a `run` block
naming one fails. Commands run with `bash -c`, exactly as written; the build's dl-launch and
dl-train come first on PATH, then the directory of --python.

A fenced block without a language, a shell block without a marker, an unknown kind or attribute,
an indented code block, or a marker not followed by a fence fails. The last line is
`N passed, N failed, N skipped`; the exit code is 1 on any failure, 77 when nothing ran.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

SHELL_LANGUAGES = {"sh", "bash", "shell", "console", "shell-session", "zsh"}
KINDS = {"run", "gpu", "docker", "skip"}
BLOCK_ATTRIBUTES = {"setup", "cwd", "prepare", "needs", "timeout", "exit", "expect"}
SETUPS = {"workspace", "empty", "continue"}
NEEDS = {"dl-train", "torch", "dl_loader"}
DEFAULT_TIMEOUT = 300
# What a scheduler or an earlier run would leave in the environment and a user's shell lacks.
SCRUBBED_PREFIXES = ("DL_", "SLURM_", "PET_", "TORCHELASTIC_", "OMPI_", "PMI_")
SCRUBBED_NAMES = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                  "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
                  "OMP_NUM_THREADS", "MKL_NUM_THREADS"}

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
MARKER_START = re.compile(r"^\s*<!--\s*doc-test:")
TOKEN = re.compile(r'([A-Za-z][\w-]*)=("(?:[^"\\]|\\.)*"|/(?:[^/\\]|\\.)*/|\S+)|(\S+)')


class MarkerError(Exception):
    pass


@dataclass
class Expectation:
    kind: str = ""            # "" (the block's), run, gpu, docker, skip
    reason: str = ""          # for skip
    exit: int = 0
    text: str = ""            # substring
    regex: str = ""           # regular expression
    silent: bool = False
    given: bool = False       # an expectation of the output was written
    needs: list = field(default_factory=list)


@dataclass
class Command:
    line: int                 # 1-based line in the file
    text: str
    shown: list = field(default_factory=list)   # a console block's output lines


@dataclass
class Block:
    path: str                 # relative to the checkout
    line: int                 # the fence's line
    language: str
    kind: str = ""
    reason: str = ""
    attributes: dict = field(default_factory=dict)
    expectations: dict = field(default_factory=dict)   # command index (1-based) -> Expectation
    commands: list = field(default_factory=list)


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    # Printed again at the end: a log shown by its head and tail (CI's) still holds them.
    failures: list = field(default_factory=list)

    def report(self, where, kind, verdict, why):
        print(f"{where}: {kind} {verdict}: {why}", flush=True)
        if verdict == "PASS":
            self.passed += 1
        elif verdict == "FAIL":
            self.failed += 1
            self.failures.append(f"{where}: {kind} {verdict}: {why}")
        else:
            self.skipped += 1


# ---------------------------------------------------------------------------------------------
# Reading the Markdown


def tokens(text):
    """key=value pairs (value "quoted", /regex/ or bare) and bare words, in order."""
    out = []
    for key, value, word in TOKEN.findall(text):
        if word:
            out.append((word, None))
            continue
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        elif value.startswith("/") and len(value) > 1:
            value = ("/", value[1:-1].replace("\\/", "/"))
        out.append((key, value))
    return out


def parse_needs(value):
    if not isinstance(value, str):
        raise MarkerError("needs=/.../: expected names")
    needs = [need for need in value.split(",") if need]
    for need in needs:
        if need not in NEEDS:
            raise MarkerError(f"needs={need}: expected {', '.join(sorted(NEEDS))}")
    return needs


def parse_expectation(text):
    """One command's line: `exit=N expect=... silent`, or a kind (`skip: REASON`)."""
    e = Expectation()
    stripped = text.strip()
    m = re.match(r"(skip)\s*:\s*(.*)$", stripped)
    if m:
        e.kind, e.reason = "skip", m.group(2).strip()
        if not e.reason:
            raise MarkerError("skip needs a reason: `skip: REASON`")
        return e
    for key, value in tokens(stripped):
        if value is None:
            if key == "silent":
                e.silent = e.given = True
            elif key in KINDS - {"skip"}:
                e.kind = key
            else:
                raise MarkerError(f"unknown word '{key}' (expected exit=, expect=, silent, "
                                  "or a kind: run, gpu, docker, skip: REASON)")
        elif key == "needs":
            e.needs = parse_needs(value)
        elif key == "exit":
            if not re.fullmatch(r"\d+", value if isinstance(value, str) else ""):
                raise MarkerError(f"exit={value}: expected a number")
            e.exit = int(value)
        elif key == "expect":
            if isinstance(value, tuple):
                try:
                    re.compile(value[1])
                except re.error as err:
                    raise MarkerError(f"expect=/{value[1]}/: {err}") from None
                e.regex = value[1]
            else:
                e.text = value
            e.given = True
        else:
            raise MarkerError(f"unknown attribute '{key}=' for a command (expected exit=, "
                              "expect=, needs=)")
    return e


def parse_marker(text, block):
    """The comment's text between `doc-test:` and `-->` into the block."""
    lines = text.split("\n")
    head = lines[0].strip()
    m = re.match(r"([A-Za-z-]+)\s*(.*)$", head)
    if not m:
        raise MarkerError("no kind after `doc-test:` (expected run, gpu, docker or skip: REASON)")
    kind, rest = m.group(1), m.group(2)
    if kind not in KINDS:
        raise MarkerError(f"unknown kind '{kind}' (expected run, gpu, docker or skip: REASON)")
    block.kind = kind
    if kind == "skip":
        reason = rest[1:].strip() if rest.startswith(":") else ""
        if not reason:
            raise MarkerError("skip needs a reason: `<!-- doc-test: skip: REASON -->`")
        block.reason = " ".join([reason] + [line.strip() for line in lines[1:] if line.strip()])
        return
    for key, value in tokens(rest):
        if value is None or key not in BLOCK_ATTRIBUTES:
            raise MarkerError(f"unknown attribute '{key}' (expected one of: "
                              f"{', '.join(sorted(BLOCK_ATTRIBUTES))})")
        if isinstance(value, tuple) and key != "expect":
            raise MarkerError(f"{key}=/.../: a regular expression only for expect=")
        block.attributes[key] = value
    setup = block.attributes.get("setup", "workspace")
    if setup not in SETUPS:
        raise MarkerError(f"setup={setup}: expected one of {', '.join(sorted(SETUPS))}")
    parse_needs(block.attributes.get("needs", ""))
    if "timeout" in block.attributes and not block.attributes["timeout"].isdigit():
        raise MarkerError(f"timeout={block.attributes['timeout']}: expected seconds")
    for line in lines[1:]:
        if not line.strip():
            continue
        m = re.match(r"\s*(\d+)\s*:(.*)$", line)
        if not m:
            raise MarkerError(f"'{line.strip()}': expected `N: ...` for the block's Nth command")
        index = int(m.group(1))
        if index in block.expectations:
            raise MarkerError(f"command {index} is described twice")
        block.expectations[index] = parse_expectation(m.group(2))


def block_commands(body, first_line, console):
    """The commands of a block's lines, with their line numbers."""
    commands = []
    pending = None
    for offset, raw in enumerate(body):
        line_no = first_line + offset
        if pending is not None:
            # A line continued with a trailing backslash, in either kind of block.
            pending.text += "\n" + raw
            if not raw.rstrip().endswith("\\"):
                commands.append(pending)
                pending = None
            continue
        if console:
            if raw.lstrip().startswith("$ "):
                pending = Command(line_no, raw.lstrip()[2:])
                if not raw.rstrip().endswith("\\"):
                    commands.append(pending)
                    pending = None
            elif commands and raw.strip() and raw.strip() not in ("...", "…"):
                commands[-1].shown.append(raw.strip())
            continue
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        pending = Command(line_no, raw.strip())
        if not raw.rstrip().endswith("\\"):
            commands.append(pending)
            pending = None
    if pending is not None:
        commands.append(pending)
    return commands


def read_blocks(repo, relpath, tally):
    """The shell blocks of one file; its structural faults reported as failures."""
    with open(os.path.join(repo, relpath), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    previous_blank = True
    last_text_indent = 0
    last_text_is_list = False
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if not m:
            if MARKER_START.match(line):
                end = i
                while end < len(lines) and "-->" not in lines[end]:
                    end += 1
                following = lines[end + 1] if end + 1 < len(lines) else ""
                if not FENCE.match(following):
                    tally.report(f"{relpath}:{i + 1}", "marker", "FAIL",
                                 "a doc-test marker must be on the line directly before a fence")
                i = end + 1
                previous_blank = False
                continue
            # An indented code block: four spaces after a blank line, outside a list.
            if (previous_blank and line.startswith("    ") and line.strip()
                    and last_text_indent == 0 and not last_text_is_list):
                tally.report(f"{relpath}:{i + 1}", "block", "FAIL",
                             "an indented code block: fence it (```sh with a doc-test marker, "
                             "or ```text)")
                while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                    i += 1
                previous_blank = False
                continue
            if line.strip():
                indent = len(line) - len(line.lstrip())
                if indent == 0 or not previous_blank:
                    if indent == 0:
                        last_text_is_list = bool(re.match(r"([*+-]|\d+[.)])\s", line))
                    last_text_indent = indent
            previous_blank = not line.strip()
            i += 1
            continue
        indent, fence, language = m.group(1), m.group(2), m.group(3).lower()
        start = i
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if closing and closing.group(2).startswith(fence) and not closing.group(3):
                break
            i += 1
        body = [b[len(indent):] if b.startswith(indent) else b.lstrip() for b in lines[start + 1:i]]
        i += 1
        previous_blank = False
        where = f"{relpath}:{start + 1}"
        # The marker: a comment that ends on the line directly before the fence.
        marker_text = None
        if start > 0 and lines[start - 1].rstrip().endswith("-->"):
            first = start - 1
            while first >= 0 and "<!--" not in lines[first]:
                first -= 1
            if first >= 0 and MARKER_START.match(lines[first]):
                comment = "\n".join(lines[first:start])
                marker_text = comment.split("doc-test:", 1)[1].rsplit("-->", 1)[0]
        if not language:
            tally.report(where, "block", "FAIL", "a fence without a language: ```text for "
                         "output and listings, ```sh or ```console (with a doc-test marker) "
                         "for commands")
            continue
        if language not in SHELL_LANGUAGES:
            if marker_text is not None:
                tally.report(where, "marker", "FAIL",
                             f"a doc-test marker on a ```{language} block, not a shell block")
            continue
        if marker_text is None:
            tally.report(where, "block", "FAIL", f"a ```{language} block without a doc-test "
                         "marker (<!-- doc-test: run|gpu|docker|skip: REASON --> on the line "
                         "before the fence)")
            continue
        block = Block(relpath, start + 1, language)
        try:
            parse_marker(marker_text, block)
        except MarkerError as err:
            tally.report(where, "marker", "FAIL", str(err))
            continue
        block.commands = block_commands(body, start + 2, language in ("console", "shell-session"))
        if not block.commands:
            tally.report(where, block.kind, "FAIL", "a marked block without a command")
            continue
        extra = [n for n in block.expectations if not 1 <= n <= len(block.commands)]
        if extra:
            tally.report(where, "marker", "FAIL", f"the marker describes command {extra[0]}, "
                         f"but the block has {len(block.commands)}")
            continue
        if ("exit" in block.attributes or "expect" in block.attributes):
            if len(block.commands) != 1:
                tally.report(where, "marker", "FAIL", "exit= and expect= on the marker's first "
                             "line are for a one-command block; use `N: ...` lines")
                continue
            e = block.expectations.setdefault(1, Expectation())
            try:
                text = " ".join(f'{k}="{v}"' if k == "expect" and isinstance(v, str)
                                else f"{k}=/{v[1]}/" if isinstance(v, tuple) else f"{k}={v}"
                                for k, v in block.attributes.items() if k in ("exit", "expect"))
                first = parse_expectation(text)
            except MarkerError as err:
                tally.report(where, "marker", "FAIL", str(err))
                continue
            e.exit, e.text, e.regex, e.given = first.exit, first.text, first.regex, first.given
        blocks.append(block)
    return blocks


# ---------------------------------------------------------------------------------------------
# Running


class Runner:
    def __init__(self, args, tally):
        self.repo = os.path.realpath(args.repo)
        self.tally = tally
        self.keep = args.keep
        self.programs = {"dl-launch": os.path.realpath(args.dl_launch)}
        if args.dl_train:
            self.programs["dl-train"] = os.path.realpath(args.dl_train)
        path = []
        for program in self.programs.values():
            if os.path.dirname(program) not in path:
                path.append(os.path.dirname(program))
        if args.python:
            path.append(os.path.dirname(os.path.abspath(args.python)))
        self.base_env = {k: v for k, v in os.environ.items()
                         if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED_NAMES}
        self.base_env["PATH"] = os.pathsep.join(path + [os.environ.get("PATH", "/usr/bin:/bin")])
        self.temp_dirs = []
        self.state = {}           # file -> (temp dir, cwd) of its last run block
        self.help_cache = {}
        self.compose_cache = {}
        self.built_images = set()
        self.need_cache = {}

    def env(self, home):
        env = dict(self.base_env)
        env["HOME"] = home
        env["DOC_TEST_REPO"] = self.repo
        return env

    # --- processes

    def shell(self, text, cwd, env, timeout):
        """(exit code, output); 124 and a note on timeout. The whole process group ends."""
        proc = subprocess.Popen(["bash", "-c", text], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            # What was still running, for the report: which process of the command hung.
            ps = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,args", "-s", str(proc.pid)],
                                capture_output=True, text=True).stdout
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                out, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
            return 124, (out.decode(errors="replace") + f"\n[timed out after {timeout} s; "
                         f"then running:]\n{ps}")
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # nothing it started outlives it
        except ProcessLookupError:
            pass
        return (128 - code if code < 0 else code), out.decode(errors="replace")

    def which(self, program):
        return shutil.which(program, path=self.base_env["PATH"])

    def known_options(self, words, env):
        """The --options that `PROG [SUB] --help` prints, or None when PROG is not found."""
        program = words[0]
        sub = words[1] if len(words) > 1 and re.fullmatch(r"[a-z]+", words[1]) else None
        key = (program, sub)
        if key not in self.help_cache:
            if not self.which(program):
                self.help_cache[key] = None
            else:
                text = ""
                for call in ([program, "--help"], [program, sub, "--help"] if sub else None):
                    if call:
                        run = subprocess.run(call, env=env, stdin=subprocess.DEVNULL,
                                             capture_output=True, text=True, timeout=60)
                        text += run.stdout + run.stderr
                self.help_cache[key] = set(re.findall(r"--[a-z][a-z0-9-]*", text))
        return self.help_cache[key]

    def check_options(self, words, env):
        """None when PROG exists and knows every --option before `--`; else what is wrong."""
        known = self.known_options(words, env)
        if known is None:
            return f"{words[0]} is not on PATH"
        for word in words[1:]:
            if word == "--":
                break
            if word.startswith("--"):
                option = word.split("=", 1)[0]
                if option not in known:
                    return f"{option} is not among `{words[0]} --help`'s options"
        return None

    # --- setup

    def setup(self, block):
        """(temp dir, cwd) for the block, or raises RuntimeError with the reason."""
        setup = block.attributes.get("setup", "workspace")
        if setup == "continue":
            if block.path not in self.state:
                raise RuntimeError("setup=continue, but no run block before it in this file ran")
            top, cwd = self.state[block.path]
        else:
            top = os.path.realpath(tempfile.mkdtemp(prefix="dl-doc-test-"))
            if os.path.commonpath([top, self.repo]) == self.repo:
                raise RuntimeError(f"the temporary directory {top} is inside the checkout")
            self.temp_dirs.append(top)
            cwd = top
            if setup == "workspace":
                code, out = self.shell("dl-launch init workspace", top, self.env(top), 60)
                if code != 0:
                    raise RuntimeError(f"dl-launch init workspace exited {code}: {last(out)}")
        if "cwd" in block.attributes:
            cwd = os.path.join(cwd, block.attributes["cwd"])
            if not os.path.isdir(cwd):
                raise RuntimeError(f"cwd={block.attributes['cwd']}: no such directory")
        if "prepare" in block.attributes:
            code, out = self.shell("set -euo pipefail\n" + block.attributes["prepare"], cwd,
                                   self.env(top), 120)
            if code != 0:
                raise RuntimeError(f"prepare exited {code}: {last(out)}")
        return top, cwd

    def missing_need(self, needs, env):
        """Why a command with these needs cannot run here, or None."""
        for need in needs:
            if need not in self.need_cache:
                self.need_cache[need] = None
                # The build's dl-train, not one found further down PATH: a dl-train installed
                # by an earlier run (/usr/local/bin) would otherwise run under a build without
                # LibTorch (the ASan suite's), and the result would depend on the machine.
                if need == "dl-train" and "dl-train" not in self.programs:
                    self.need_cache[need] = "needs dl-train, which this build lacks (no LibTorch)"
                if need == "torch":
                    python = self.which("python3")
                    check = subprocess.run([python or "python3", "-c", "import torch"], env=env,
                                           capture_output=True, timeout=120) if python else None
                    if check is None or check.returncode != 0:
                        self.need_cache[need] = (f"needs python3 with torch: {python or 'python3'}"
                                                 " has none (apt-get install python3-torch "
                                                 "python3-torchvision)")
                if need == "dl_loader":
                    self.need_cache[need] = self.missing_loader(env)
            if self.need_cache[need]:
                return self.need_cache[need]
        return None

    def missing_loader(self, env):
        """Why python3 cannot import dl_loader's compiled core from dl-launch's companion folder
        (the one dl-launch puts first on the command's PYTHONPATH), or None."""
        python = self.which("python3")
        companion = os.path.join(os.path.dirname(self.programs["dl-launch"]), os.pardir, "python")
        if not python or not os.path.isdir(os.path.join(companion, "dl_loader")):
            return (f"needs the dl_loader module, which this build lacks ({companion} has no "
                    "dl_loader: built with LibTorch and DL_BUILD_PY_LOADER)")
        check = subprocess.run([python, "-c", "import dl_loader._core"],
                               env=dict(env, PYTHONPATH=os.path.realpath(companion)),
                               capture_output=True, timeout=120)
        if check.returncode != 0:
            return (f"needs the dl_loader module: {python} cannot import it from {companion}: "
                    f"{last(check.stderr.decode(errors='replace'))}")
        return None

    # --- the kinds

    def run_block(self, block):
        if block.kind == "skip":
            for command in block.commands:
                self.tally.report(f"{block.path}:{command.line}", "skip", "SKIP", block.reason)
            return
        described = [block.expectations.get(n, Expectation())
                     for n in range(1, len(block.commands) + 1)]
        kinds = [e.kind or block.kind for e in described]
        top = cwd = None
        env = self.env(tempfile.gettempdir())
        block_needs = parse_needs(block.attributes.get("needs", ""))
        why_not = [self.missing_need(block_needs + e.needs, env) if kind == "run" else None
                   for e, kind in zip(described, kinds)]
        if any(k in ("docker", "gpu") or (k == "run" and not w) for k, w in zip(kinds, why_not)):
            try:
                top, cwd = self.setup(block)
                env = self.env(top)
            except RuntimeError as err:
                for command in block.commands:
                    self.tally.report(f"{block.path}:{command.line}", block.kind, "FAIL",
                                      f"setup: {err}")
                return
        timeout = int(block.attributes.get("timeout", DEFAULT_TIMEOUT))
        for n, command in enumerate(block.commands, start=1):
            where = f"{block.path}:{command.line}"
            e = block.expectations.get(n, Expectation())
            kind = kinds[n - 1]
            shown = one_line(command.text)
            if kind == "skip":
                self.tally.report(where, "skip", "SKIP", f"{e.reason}: {shown}")
            elif kind == "gpu":
                self.gpu(where, command, cwd, env)
            elif kind == "docker":
                self.docker(where, command, e, cwd, env, timeout)
            elif why_not[n - 1]:
                self.tally.report(where, "run", "SKIP", f"{why_not[n - 1]}: {shown}")
            else:
                cwd = self.run(where, command, e, cwd, env, timeout)
        if top is not None and cwd is not None:
            self.state[block.path] = (top, cwd)

    def run(self, where, command, e, cwd, env, timeout, kind="run"):
        """Runs one command; returns the working directory for the next."""
        shown = one_line(command.text)
        words = split(command.text)
        if words and words[0] == "cd" and len(words) <= 2:
            code, out = self.shell(command.text + " && pwd", cwd, env, 30)
            if code != 0:
                self.tally.report(where, kind, "FAIL", f"{shown}: exit {code}: {last(out)}")
                return cwd
            self.tally.report(where, kind, "PASS", f"{shown}: now in {out.strip()}")
            return out.strip().splitlines()[-1]
        if kind == "run" and re.match(r"(sudo\s+)?(bash\s+|sh\s+)?(\./)?env/", command.text):
            self.tally.report(where, kind, "FAIL", f"{shown}: env/'s scripts install, build or run "
                              "the suite: mark the block `skip: REASON`")
            return cwd
        if kind == "run" and not e.given and not command.shown:
            self.tally.report(where, kind, "FAIL", f"{shown}: no expected output given "
                              "(add `N: expect=\"...\"` or `N: silent` to the marker)")
            return cwd
        started = time.monotonic()
        code, out = self.shell(command.text, cwd, env, timeout)
        seconds = time.monotonic() - started
        lines = [line.strip() for line in out.splitlines()]
        problems = []
        if code != e.exit:
            problems.append(f"exit {code}, expected {e.exit}")
        if e.silent and out.strip():
            problems.append("output where none was expected")
        if e.text and not any(e.text in line for line in out.splitlines()):
            problems.append(f'no line holds "{e.text}"')
        if e.regex and not any(re.search(e.regex, line) for line in out.splitlines()):
            problems.append(f"no line matches /{e.regex}/")
        if command.shown and not e.given:
            seen = [s for s in command.shown if s in lines]
            if not seen:
                problems.append(f"none of the {len(command.shown)} output lines the doc shows "
                                f"appears (first: \"{command.shown[0]}\")")
        if problems:
            tail = "\n".join("    | " + line for line in out.rstrip().splitlines()[-12:])
            self.tally.report(where, kind, "FAIL", f"{shown}: {'; '.join(problems)} "
                              f"({seconds:.1f} s)\n{tail}")
        else:
            if command.shown and not e.given:
                seen = [s for s in command.shown if s in lines]
                what = f"{len(seen)} of {len(command.shown)} shown lines appear"
            elif e.silent:
                what = "no output"
            else:
                what = f'shows "{e.text}"' if e.text else f"matches /{e.regex}/" if e.regex \
                    else "exit only"
            self.tally.report(where, kind, "PASS",
                              f"{shown}: exit {code}, {what} ({seconds:.1f} s)")
        return cwd

    def gpu(self, where, command, cwd, env):
        """The program and its options; for dl-launch also a dry run of the same command line,
        which must get past its options (64, 65, 66 are the command's fault; 69 the CPU's)."""
        shown = one_line(command.text)
        words = split(command.text)
        assignments, words = split_assignments(words)
        if not words:
            self.tally.report(where, "gpu", "FAIL", f"{shown}: no program")
            return
        problem = self.check_options(words, env)
        if problem:
            self.tally.report(where, "gpu", "FAIL", f"{shown}: {problem}")
            return
        what = f"{words[0]} and its options are real"
        if words[0] == "dl-launch" and cwd is not None:
            cut = words.index("--") if "--" in words else len(words)
            dry = words[:cut] + ["--dry-run"] + words[cut:]
            code, out = self.shell(" ".join(shlex.quote(w) for w in dry), cwd,
                                   dict(env, **assignments), 120)
            if code in (64, 65, 66):
                self.tally.report(where, "gpu", "FAIL", f"{shown}: its --dry-run exits {code}: "
                                  f"{last(out)}")
                return
            what += f", its --dry-run exits {code} here"
        self.tally.report(where, "gpu", "PASS", f"{shown}: {what} (not run: needs a GPU)")

    def docker(self, where, command, e, cwd, env, timeout):
        shown = one_line(command.text)
        words = split(command.text)
        assignments, words = split_assignments(words)
        if not words or words[0] != "docker":
            self.run(where, command, e, cwd, env, timeout, kind="docker")
            return
        sub = words[1] if len(words) > 1 else ""
        if sub == "compose":
            self.compose(where, shown, words[2:], assignments, env)
        elif sub == "build":
            self.docker_build(where, shown, words[2:])
        elif sub in ("run", "push"):
            image = docker_run_image(words[2:]) if sub == "run" else (words[2:] or [""])[-1]
            if image in self.built_images:
                self.tally.report(where, "docker", "SKIP", f"{shown}: needs a Docker engine"
                                  f"{' and a registry' if sub == 'push' else ''} (the image "
                                  f"{image} is the one `docker build` above makes)")
            else:
                self.tally.report(where, "docker", "FAIL", f"{shown}: the image '{image}' is "
                                  "not built by a `docker build -t` before it in this file")
        else:
            self.tally.report(where, "docker", "FAIL", f"{shown}: docker {sub}: not a command "
                              "this test knows how to check")

    def compose_services(self, assignments, env):
        key = tuple(sorted(assignments.items()))
        if key not in self.compose_cache:
            compose = ["docker-compose", "--project-directory", self.repo, "-f",
                       os.path.join(self.repo, "docker-compose.yml")]
            run_env = dict(env, **assignments)
            check = subprocess.run(compose + ["config", "-q"], env=run_env, capture_output=True,
                                   text=True, timeout=120)
            if check.returncode != 0:
                self.compose_cache[key] = (None, last(check.stderr + check.stdout))
            else:
                services = subprocess.run(compose + ["config", "--services"], env=run_env,
                                          capture_output=True, text=True, timeout=120)
                self.compose_cache[key] = (set(services.stdout.split()), "")
        return self.compose_cache[key]

    def compose(self, where, shown, args, assignments, env):
        sub, service, rest = compose_service(args)
        if not sub:
            self.tally.report(where, "docker", "FAIL", f"{shown}: no compose subcommand")
            return
        if not shutil.which("docker-compose"):
            self.tally.report(where, "docker", "SKIP", f"{shown}: docker-compose is not installed "
                              "(apt-get install docker-compose), so the compose file is unchecked")
            return
        services, error = self.compose_services(assignments, env)
        if services is None:
            self.tally.report(where, "docker", "FAIL", f"{shown}: docker-compose.yml is not valid "
                              f"(docker-compose config -q): {error}")
            return
        if service is not None and service not in services:
            self.tally.report(where, "docker", "FAIL", f"{shown}: no service '{service}' in "
                              f"docker-compose.yml (it has {', '.join(sorted(services))})")
            return
        if rest and rest[0] in ("dl-launch", "dl-train"):
            problem = self.check_options(rest, env)
            if problem:
                self.tally.report(where, "docker", "FAIL", f"{shown}: {problem}")
                return
        what = f"service '{service}' exists" if service else "no service named"
        if rest and rest[0] in ("dl-launch", "dl-train"):
            what += f", {rest[0]}'s options are real"
        self.tally.report(where, "docker", "PASS", f"{shown}: the compose file is valid, {what} "
                          "(not run: needs a Docker engine)")

    def docker_build(self, where, shown, args):
        tags, target, context, build_args, dockerfile = [], None, None, [], "Dockerfile"
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-t", "--tag"):
                tags.append(args[i + 1])
                i += 2
            elif a == "--target":
                target = args[i + 1]
                i += 2
            elif a == "--build-arg":
                build_args.append(args[i + 1].split("=", 1)[0])
                i += 2
            elif a in ("-f", "--file"):
                dockerfile = args[i + 1]
                i += 2
            elif a.startswith("-"):
                i += 1
            else:
                context = a
                i += 1
        path = os.path.join(self.repo, context or ".", dockerfile)
        if not os.path.isfile(path):
            self.tally.report(where, "docker", "FAIL", f"{shown}: no {dockerfile} in the "
                              f"build context {context} (relative to the checkout)")
            return
        with open(path, encoding="utf-8") as f:
            text = f.read()
        stages = set(re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", text))
        declared = set(re.findall(r"(?m)^ARG\s+([A-Za-z_][A-Za-z0-9_]*)", text))
        if target and target not in stages:
            self.tally.report(where, "docker", "FAIL", f"{shown}: no stage '{target}' in "
                              f"{dockerfile} (it has {', '.join(sorted(stages))})")
            return
        unknown = [a for a in build_args if a not in declared]
        if unknown:
            self.tally.report(where, "docker", "FAIL", f"{shown}: build argument {unknown[0]} "
                              f"is not an ARG of {dockerfile}")
            return
        self.built_images.update(tags)
        self.tally.report(where, "docker", "PASS", f"{shown}: {dockerfile} is there"
                          f"{', stage ' + target + ' too' if target else ''} (not built: needs "
                          "a Docker engine)")

    def cleanup(self):
        for top in self.temp_dirs:
            if self.keep:
                print(f"kept {top}")
            else:
                shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Small helpers


def split(text):
    text = re.sub(r"\\\n", " ", text)
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


def split_assignments(words):
    assignments = {}
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        key, value = words[0].split("=", 1)
        assignments[key] = value
        words = words[1:]
    return assignments, words


COMPOSE_VALUE_OPTIONS = {"-e", "--env", "-v", "--volume", "-u", "--user", "-w", "--workdir",
                         "--name", "--entrypoint", "-p", "--publish", "-l", "--label",
                         "--scale", "-t", "--timeout"}
DOCKER_RUN_VALUE_OPTIONS = {"-v", "--volume", "-e", "--env", "--gpus", "--shm-size", "--ulimit",
                            "-u", "--user", "-w", "--workdir", "--name", "--entrypoint", "-p",
                            "--publish", "--ipc", "--network", "--cpus", "--memory",
                            "--cpuset-cpus", "--mount", "--env-file", "-l", "--label"}


def compose_service(args):
    """(subcommand, service or None, the command after the service)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):     # compose's own options
        i += 2 if args[i] in ("-f", "--file", "-p", "--project-name", "--project-directory",
                              "--env-file", "--profile") else 1
    if i >= len(args):
        return None, None, []
    sub = args[i]
    i += 1
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in COMPOSE_VALUE_OPTIONS and "=" not in args[i] else 1
    if i >= len(args):
        return sub, None, []
    return sub, args[i], args[i + 1:]


def docker_run_image(args):
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in DOCKER_RUN_VALUE_OPTIONS and "=" not in args[i] else 1
    return args[i] if i < len(args) else ""


def one_line(text):
    """The command as one line, without its trailing comment (two spaces and a #)."""
    text = re.sub(r"\s*\\\n\s*", " ", text).strip()
    return re.split(r"\s{2,}#", text, maxsplit=1)[0]


def last(out):
    lines = [line for line in out.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def doc_files(repo):
    files = ["README.md"] if os.path.isfile(os.path.join(repo, "README.md")) else []
    docs = os.path.join(repo, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join("docs", name) for name in os.listdir(docs)
                        if name.endswith(".md"))
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, help="the checkout (README.md, docs/)")
    parser.add_argument("--dl-launch", required=True, help="the built dl-launch")
    parser.add_argument("--dl-train", default="", help="the built dl-train, when there is one")
    parser.add_argument("--python", default="", help="a python3 whose directory goes on PATH "
                        "after the programs' (the python3 a doc's command finds)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    parser.add_argument("files", nargs="*", help="only these files (relative to --repo)")
    args = parser.parse_args()
    if not os.access(args.dl_launch, os.X_OK):
        print(f"doc_commands.py: --dl-launch {args.dl_launch} is not an executable")
        print("0 passed, 0 failed, 0 skipped")
        return 77
    if args.dl_train and not os.access(args.dl_train, os.X_OK):
        print(f"doc_commands.py: --dl-train {args.dl_train} is not an executable")
        return 2
    started = time.monotonic()
    tally = Tally()
    runner = Runner(args, tally)
    blocks = []
    for relpath in args.files or doc_files(args.repo):
        blocks += read_blocks(args.repo, relpath, tally)
    counts = {}
    for block in blocks:
        counts[block.kind] = counts.get(block.kind, 0) + 1
    print("marked blocks: " + ", ".join(f"{counts[k]} {k}" for k in sorted(counts)), flush=True)
    try:
        for block in blocks:
            runner.run_block(block)
    finally:
        runner.cleanup()
    print(f"wall time {time.monotonic() - started:.0f} s")
    if tally.failures:
        print("failed, again:")
        for failure in tally.failures:
            print(failure)
    print(f"{tally.passed} passed, {tally.failed} failed, {tally.skipped} skipped")
    if tally.failed:
        return 1
    return 77 if tally.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
