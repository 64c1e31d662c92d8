#!/usr/bin/env python3
"""The workspace template's python/train.py as a user types it: relative paths, from the
workspace and from another directory, with DL_CONFIG and the workspace's dl.conf.

    python3 tests/integration/template_cli_test.py [--python PY] [--template DIR]
                                                   [--have-torchvision 0|1] [unittest args]

--python is the interpreter train.py runs under (CMake passes DL_TEST_PYTHON, /usr/bin/python3);
--have-torchvision is what CMake found it imports (DL_TEST_PYTHON_TORCHVISION): with 0 the test
says SKIPPED and exits 77, so that a train.py that fails to import torch where the build found it
fails here instead of reading as a skip. Run by hand without it, the import is tried once.

Each case copies the template into a fresh directory with a tiny IDX data set (40 training and
16 validation images of 8x8), and runs one batch per epoch (--limit-batches 1): the number of
epochs that reaches the run is read from the --json lines, one per epoch.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
TEMPLATE = os.path.normpath(os.path.join(HERE, "..", "..", "workspace_template"))
# The cheapest run: no loader workers, one thread, one batch per epoch, no progress lines.
CHEAP = ["--data", "data", "--batch-size", "8", "--workers", "0", "--threads", "1",
         "--limit-batches", "1", "--log-every", "0", "--json"]


def write_idx(directory, prefix, count, side=8):
    """An MNIST-layout split: images (magic 0x803) and labels (0x801), two classes."""
    images = bytearray((0x803).to_bytes(4, "big") + count.to_bytes(4, "big")
                       + side.to_bytes(4, "big") + side.to_bytes(4, "big"))
    labels = bytearray((0x801).to_bytes(4, "big") + count.to_bytes(4, "big"))
    for i in range(count):
        label = i % 2  # class 0 bright on the right half, class 1 on the left
        images += bytes(255 if (p % side < side // 2) == bool(label) else 0
                        for p in range(side * side))
        labels.append(label)
    with open(os.path.join(directory, f"{prefix}-images-idx3-ubyte"), "wb") as f:
        f.write(images)
    with open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
        f.write(labels)


class TrainPyCommandLine(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="template-cli-")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.ws = os.path.join(self.root, "ws")
        shutil.copytree(TEMPLATE, self.ws)
        write_idx(os.path.join(self.ws, "data"), "train", 40)
        write_idx(os.path.join(self.ws, "data"), "t10k", 16)
        self.write("dl.conf", "epochs = 3\n")
        # Two levels down, so that a path relative to it means nothing from the workspace.
        self.elsewhere = os.path.join(self.root, "projects", "other")
        os.makedirs(self.elsewhere)

    def write(self, name, text):
        path = os.path.join(self.ws, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_train(self, args, cwd=None, env=None, script="python/train.py"):
        """train.py as typed in a shell: `python3 python/train.py ARGS` in the workspace (or
        `python3 SCRIPT ARGS` in cwd), with the caller's DL_* variables only."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DL_")}
        clean.update(env or {})
        return subprocess.run([PYTHON, script] + args, cwd=cwd or self.ws, env=clean,
                              capture_output=True, text=True, timeout=300)

    def epochs_run(self, r):
        """The epochs the run went through, from its --json lines (and it must have ended well)."""
        self.assertEqual(r.returncode, 0, f"stderr:\n{r.stderr}")
        return [json.loads(line)["epoch"] for line in r.stdout.splitlines()]

    def assertRefused(self, r, code, *named):
        """One line on stderr, the exit code, no traceback, and the line names each of `named`."""
        lines = r.stderr.splitlines()
        self.assertEqual(r.returncode, code, f"stderr:\n{r.stderr}")
        self.assertEqual(len(lines), 1, f"expected one line, got:\n{r.stderr}")
        self.assertTrue(lines[0].startswith("train.py error: "), lines[0])
        self.assertNotIn("Traceback", r.stderr)
        for what in named:
            self.assertIn(what, lines[0])
        self.assertEqual(r.stdout, "")

    # -- the command line ---------------------------------------------------------------------

    def test_abbreviations_are_refused(self):
        for args, named in ((["--epoch", "1"], "--epoch"), (["--limit", "1"], "--limit"),
                            (["--epoch=1"], "--epoch=1"), (["--batch", "8"], "--batch")):
            with self.subTest(args=args):
                self.assertRefused(self.run_train(CHEAP + args), 64, named, "unrecognized")

    def test_a_bad_value_is_one_line_and_exit_64(self):
        self.assertRefused(self.run_train(CHEAP + ["--epochs", "two"]), 64, "--epochs", "two")
        self.assertRefused(self.run_train(CHEAP + ["--epochs", "0"]), 64, "epochs")

    def test_full_option_names_work(self):
        self.assertEqual(self.epochs_run(self.run_train(CHEAP + ["--epochs", "1"])), [1])

    # -- the config file ----------------------------------------------------------------------

    def test_the_workspace_dl_conf_is_read(self):
        self.assertEqual(self.epochs_run(self.run_train(CHEAP)), [1, 2, 3])

    def test_no_dl_conf_in_the_workspace_is_no_settings(self):
        os.remove(os.path.join(self.ws, "dl.conf"))
        self.assertEqual(self.epochs_run(self.run_train(CHEAP + ["--epochs", "2"])), [1, 2])

    def test_precedence_dl_conf_then_environment_then_flags(self):
        self.assertEqual(self.epochs_run(self.run_train(CHEAP, env={"DL_EPOCHS": "2"})), [1, 2])
        self.assertEqual(self.epochs_run(self.run_train(CHEAP + ["--epochs", "1"],
                                                        env={"DL_EPOCHS": "2"})), [1])

    def test_dl_config_relative_to_the_working_directory(self):
        self.write("two.conf", "epochs = 2\n")
        r = self.run_train(CHEAP, env={"DL_CONFIG": "two.conf"})
        self.assertEqual(self.epochs_run(r), [1, 2])

    def test_dl_config_absolute(self):
        path = self.write("two.conf", "epochs = 2\n")
        r = self.run_train(CHEAP, env={"DL_CONFIG": path})
        self.assertEqual(self.epochs_run(r), [1, 2])

    def test_dl_config_replaces_the_workspace_dl_conf(self):
        self.write("other.conf", "lr = 0.01\n")  # no epochs: the default's, not dl.conf's 3
        r = self.run_train(CHEAP, env={"DL_CONFIG": "other.conf"})
        self.assertEqual(len(self.epochs_run(r)), 10)

    def test_from_another_directory_with_relative_paths(self):
        # cd projects/other && DL_CONFIG=../../ws/two.conf python3 ../../ws/python/train.py
        #   --data ../../ws/data
        self.write("two.conf", "epochs = 2\n")
        args = CHEAP[:]
        args[args.index("data")] = "../../ws/data"
        r = self.run_train(args, cwd=self.elsewhere, env={"DL_CONFIG": "../../ws/two.conf"},
                           script="../../ws/python/train.py")
        self.assertEqual(self.epochs_run(r), [1, 2])

    def test_a_missing_dl_config_is_refused(self):
        for named in ("missing.conf", os.path.join(self.ws, "missing.conf")):
            with self.subTest(DL_CONFIG=named):
                self.assertRefused(self.run_train(CHEAP, env={"DL_CONFIG": named}), 66, named,
                                   "DL_CONFIG")

    def test_a_dl_config_relative_to_another_directory_is_refused(self):
        # The workspace's own path from its parent, run in the workspace: not silently skipped
        # for the defaults (10 epochs instead of dl.conf's 3), but named with where it was looked.
        r = self.run_train(CHEAP, env={"DL_CONFIG": "ws/dl.conf"})
        self.assertRefused(r, 66, "ws/dl.conf", self.ws)

    def test_a_dl_config_that_is_a_directory_is_refused(self):
        self.assertRefused(self.run_train(CHEAP, env={"DL_CONFIG": "data"}), 66, "data",
                           "not a regular file")

    def test_an_unreadable_dl_config_is_refused(self):
        path = self.write("secret.conf", "epochs = 2\n")
        os.chmod(path, 0)
        run_as = {}
        if os.geteuid() == 0:  # root reads it anyway: as nobody, who owns nothing here
            os.chmod(self.root, 0o755)
            def nobody():  # (subprocess's user= and group= need Python 3.9; 20.04 has 3.8)
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            run_as = dict(preexec_fn=nobody)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DL_")}
        clean.update(DL_CONFIG=path, HOME=self.root)
        r = subprocess.run([PYTHON, "python/train.py"] + CHEAP, cwd=self.ws, env=clean,
                           capture_output=True, text=True, timeout=300, **run_as)
        self.assertRefused(r, 77, path, "ermission denied")


def main():
    global PYTHON, TEMPLATE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--python", default=PYTHON)
    p.add_argument("--template", default=TEMPLATE)
    p.add_argument("--have-torchvision", choices=["0", "1"])
    args, rest = p.parse_known_args()
    PYTHON, TEMPLATE = args.python, os.path.abspath(args.template)
    if args.have_torchvision is None:
        found = subprocess.run([PYTHON, "-c", "import torch, torchvision"],
                               capture_output=True).returncode == 0
    else:
        found = args.have_torchvision == "1"
    if not found:
        print(f"SKIPPED: {PYTHON} has no torch and torchvision (the build found none; "
              "apt-get install python3-torch python3-torchvision, then reconfigure)")
        return 77
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
