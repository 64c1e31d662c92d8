#!/usr/bin/env python3
"""The workspace template's python/train.py as a user types it: relative paths, from the
workspace and from another directory, with DL_CONFIG and the workspace's dl.conf.

    python3 tests/integration/template_cli_test.py [--python PY] [--template DIR]
                                                   [--module-dir DIR] [--have-torchvision 0|1]
                                                   [unittest args]

--python is the interpreter train.py runs under (CMake passes DL_TEST_PYTHON, /usr/bin/python3);
--module-dir is the folder holding the companion module dl_plan (the checkout's python/), put on
PYTHONPATH as docs/python.md tells a user running train.py on its own;
--have-torchvision is what CMake found it imports (DL_TEST_PYTHON_TORCHVISION): with 0 the test
says SKIPPED and exits 77, so that a train.py that fails to import torch where the build found it
fails here instead of reading as a skip. Run by hand without it, the import is tried once.

Each case copies the template into a fresh directory with a tiny IDX data set (40 training and
16 validation images of 8x8), and runs one batch per epoch (--limit-batches 1): the number of
epochs that reaches the run is read from the --json lines, one per epoch.
"""

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
TEMPLATE = os.path.normpath(os.path.join(HERE, "..", "..", "workspace_template"))
MODULE_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
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



def communicate_all(procs, timeout):
    """Each process's (stdout, stderr) once all have ended. Past `timeout` seconds, every process
    still running gets SIGABRT (with PYTHONFAULTHANDLER set, Python prints each thread's stack),
    then SIGKILL; the test fails with what each printed, rather than leaving them running."""
    deadline = time.monotonic() + timeout
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for q in procs:
                if q.poll() is None:
                    q.send_signal(signal.SIGABRT)
            time.sleep(2)
            for q in procs:
                if q.poll() is None:
                    q.kill()
            ends = [q.communicate() for q in procs[len(outs):]]
            shown = "\n".join(f"--- process {i} (exit {q.returncode}):\n{err[-6000:]}"
                              for i, (q, (_, err)) in enumerate(zip(procs, outs + ends)))
            raise AssertionError(f"not ended after {timeout} s:\n{shown}") from None
    return outs


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
        clean["PYTHONPATH"] = MODULE_DIR
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
        clean.update(DL_CONFIG=path, HOME=self.root, PYTHONPATH=MODULE_DIR)
        r = subprocess.run([PYTHON, "python/train.py"] + CHEAP, cwd=self.ws, env=clean,
                           capture_output=True, text=True, timeout=300, **run_as)
        self.assertRefused(r, 77, path, "ermission denied")


    # -- the companion module -----------------------------------------------------------------

    def test_without_dl_plan_one_line_says_how_to_get_it(self):
        # A dl_plan that fails to import as an absent one does: the machine may have the real one
        # installed (env/install.sh puts it in the system's site folder), which an empty
        # PYTHONPATH would not hide.
        absent = os.path.join(self.root, "absent")
        os.makedirs(os.path.join(absent, "dl_plan"), exist_ok=True)
        with open(os.path.join(absent, "dl_plan", "__init__.py"), "w") as f:
            f.write("raise ModuleNotFoundError(\"No module named 'dl_plan'\", name='dl_plan')\n")
        r = self.run_train(CHEAP, env={"PYTHONPATH": absent})
        self.assertRefused(r, 69, "dl_plan", "PYTHONPATH", "pip install")

    def test_a_bad_plan_value_names_its_source(self):
        self.write("dl.conf", "epochs = 3\nworkers = many\n")
        r = self.run_train(["--data", "data", "--limit-batches", "1", "--json"])
        self.assertRefused(r, 64, os.path.join(self.ws, "dl.conf") + ":2: workers", "many")
        self.assertRefused(self.run_train(CHEAP, env={"DL_DEVICE": "cuda:7"}
                                          if not self.has_cuda() else {"DL_DEVICE": "tpu"}),
                           69 if not self.has_cuda() else 64, "DL_DEVICE")

    def has_cuda(self):
        return subprocess.run([PYTHON, "-c", "import torch, sys; "
                               "sys.exit(0 if torch.cuda.is_available() else 1)"]).returncode == 0

    def test_the_plan_from_dl_conf_alone(self):
        self.write("dl.conf", "epochs = 1\nbatch-size = 4\nworkers = 0\n")
        r = self.run_train(["--data", "data", "--limit-batches", "3", "--log-every", "0",
                            "--json"], env={"DL_CORES": "2"})
        self.assertEqual(self.epochs_run(r), [1])
        line = json.loads(r.stdout.splitlines()[0])
        self.assertEqual((line["batch_size"], line["workers"], line["samples"]), (4, 0, 12))
        self.assertIn(f"plan: batch_size 4 ({os.path.join(self.ws, 'dl.conf')}:2: batch-size)",
                      r.stderr)
        self.assertIn("plan: threads 2 (default: 2 usable cores, no workers)", r.stderr)

    # -- checkpoints: --resume, --overwrite ---------------------------------------------------

    def checkpoint(self, name="last.pt"):
        r = subprocess.run(
            [PYTHON, "-c",
             "import json, sys, torch\n"
             "c = torch.load(sys.argv[1], map_location='cpu')\n"
             "steps = {int(s['step']) for s in c['optimizer_state_dict']['state'].values()}\n"
             "print(json.dumps(dict(epoch=c['epoch'], steps=sorted(steps),"
             " last_epoch=c['scheduler_state_dict']['last_epoch'],"
             " keys=sorted(k for k in c['model_state_dict']))))\n",
             os.path.join(self.ws, "runs", "r", name)],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_resume_continues_with_the_optimizer_and_schedule(self):
        run = CHEAP + ["--run-dir", "runs/r", "--limit-batches", "2"]
        self.assertEqual(self.epochs_run(self.run_train(run + ["--epochs", "2"])), [1, 2])
        first = self.checkpoint()
        self.assertEqual((first["epoch"], first["steps"], first["last_epoch"]), (2, [4], 2))
        with open(os.path.join(self.ws, "runs/r/metrics.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 3)
        # --resume, the flag and the variable dl-launch sets: epochs 3 and 4, steps on from 4.
        r = self.run_train(run + ["--epochs", "3", "--resume"])
        self.assertEqual(self.epochs_run(r), [3])
        self.assertIn("2 epoch(s) done, optimizer step 4", r.stderr)
        r = self.run_train(run + ["--epochs", "4"], env={"DL_RESUME": "true"})
        self.assertEqual(self.epochs_run(r), [4])
        after = self.checkpoint()
        self.assertEqual((after["epoch"], after["steps"], after["last_epoch"]), (4, [8], 4))
        with open(os.path.join(self.ws, "runs/r/metrics.csv")) as f:
            rows = [l.split(",") for l in f.read().splitlines()[1:]]
        self.assertEqual([row[0] for row in rows], ["1", "2", "3", "4"])
        # Each epoch's rate is the cosine over the epochs asked for at that start (2, 2, 3, 4), as
        # dl-train's: a resume with more epochs does not keep the ended schedule's 0.
        base = float(rows[0][5])
        cosine = [base * (1 + math.cos(math.pi * e / t)) / 2 for e, t in ((0, 2), (1, 2), (2, 3),
                                                                          (3, 4))]
        for row, want in zip(rows, cosine):
            self.assertAlmostEqual(float(row[5]) / base, want / base, places=6, msg=row)
        # Resumed past the epochs asked for: nothing to train, said so, exit 0.
        r = self.run_train(run + ["--epochs", "4", "--resume"])
        self.assertEqual(self.epochs_run(r), [])
        self.assertIn("nothing to train", r.stderr)

    def test_a_fresh_start_over_checkpoints_is_78_and_changes_nothing(self):
        run = CHEAP + ["--run-dir", "runs/r", "--epochs", "1"]
        self.assertEqual(self.epochs_run(self.run_train(run)), [1])
        before = os.stat(os.path.join(self.ws, "runs/r/last.pt")).st_mtime_ns
        r = self.run_train(run)
        self.assertRefused(r, 78, os.path.join(self.ws, "runs/r"), "best.pt", "--resume",
                           "--overwrite")
        self.assertEqual(os.stat(os.path.join(self.ws, "runs/r/last.pt")).st_mtime_ns, before)
        self.assertEqual(self.epochs_run(self.run_train(run + ["--overwrite"])), [1])
        self.assertEqual(self.checkpoint()["steps"], [1])  # started over: one step, not two
        self.assertRefused(self.run_train(run + ["--overwrite", "--resume"]), 64, "--resume",
                           "--overwrite")

    def test_a_stop_mid_epoch_resumes_at_the_next_batch_with_the_same_weights(self):
        # 40 samples, batch 4: 10 batches an epoch. SIGTERM once a progress line of epoch 2 is
        # out: last.pt holds the position, and --resume trains only the batches left.
        run = ["--data", "data", "--batch-size", "4", "--workers", "0", "--threads", "1",
               "--log-every", "1", "--json", "--epochs", "3"]
        whole = self.run_train(run + ["--run-dir", "runs/whole"])
        self.assertEqual(self.epochs_run(whole), [1, 2, 3])
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DL_")}
        clean["PYTHONPATH"] = MODULE_DIR
        proc = subprocess.Popen([PYTHON, "python/train.py"] + run + ["--run-dir", "runs/r"],
                                cwd=self.ws, env=clean, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            epoch_lines = 0
            for line in proc.stderr:
                epoch_lines += line.startswith("epoch 1/3")
                if epoch_lines and line.startswith("batch 2/10"):
                    proc.send_signal(15)
                    break
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 143, err)
        self.assertIn("SIGTERM received in epoch 2 after ", err)
        saved = self.checkpoint()
        self.assertEqual(saved["epoch"], 1)
        step = int(subprocess.run(
            [PYTHON, "-c", "import sys, torch; print(torch.load(sys.argv[1])['epoch_step'])",
             os.path.join(self.ws, "runs/r/last.pt")], capture_output=True, text=True,
            check=True).stdout)
        self.assertGreaterEqual(step, 2)
        r = self.run_train(run + ["--run-dir", "runs/r", "--resume"])
        self.assertEqual(self.epochs_run(r), [2, 3])
        if step < 10:
            self.assertIn(f"continuing with epoch 2 of 3 at batch {step + 1}", r.stderr)
        self.assertEqual(json.loads(r.stdout.splitlines()[0])["samples"], 4 * (10 - step))
        check = subprocess.run(
            [PYTHON, "-c", "import sys, torch\n"
             "a, b = (torch.load(p)['model_state_dict'] for p in sys.argv[1:])\n"
             "print(all(torch.equal(a[k], b[k]) for k in a))",
             os.path.join(self.ws, "runs/whole/last.pt"), os.path.join(self.ws, "runs/r/last.pt")],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(check.stdout.strip(), "True", check.stderr)

    def test_resume_without_last_pt_is_66(self):
        r = self.run_train(CHEAP + ["--run-dir", "runs/none", "--resume"])
        self.assertRefused(r, 66, os.path.join(self.ws, "runs/none/last.pt"))
        self.assertFalse(os.path.exists(os.path.join(self.ws, "runs/none")))

    def test_a_corrupt_last_pt_is_one_line(self):
        os.makedirs(os.path.join(self.ws, "runs/r"))
        self.write("runs/r/last.pt", "not a checkpoint")
        self.assertRefused(self.run_train(CHEAP + ["--run-dir", "runs/r", "--resume"]), 65,
                           "last.pt", "--resume")

    # -- several ranks ------------------------------------------------------------------------

    def test_two_ranks_train_data_parallel_and_rank_0_alone_writes(self):
        import socket

        # Rank 0's port, held (bound with SO_REUSEADDR, never listened on) while the ranks run:
        # TCPStore binds it all the same, and no other job on the machine is handed it meanwhile,
        # as dl-launch holds the port it picks (core/ports.h).
        hold = socket.socket()
        self.addCleanup(hold.close)
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.bind(("0.0.0.0", 0))
        port = hold.getsockname()[1]
        args = ["--data", "data", "--batch-size", "8", "--workers", "0", "--threads", "1",
                "--log-every", "0", "--json", "--epochs", "2", "--run-dir", "runs/r"]
        clean = {k: v for k, v in os.environ.items() if not k.startswith("DL_")}
        clean.update(PYTHONPATH=MODULE_DIR, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                     WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", PYTHONFAULTHANDLER="1")
        procs = [subprocess.Popen([PYTHON, "python/train.py"] + args, cwd=self.ws,
                                  env=dict(clean, RANK=str(r), LOCAL_RANK=str(r)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in range(2)]
        outs = communicate_all(procs, 300)
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
        lines = [json.loads(l) for l in outs[0][0].splitlines()]
        self.assertEqual([l["epoch"] for l in lines], [1, 2])
        # 40 samples, 20 a rank: 2 batches of 8 each, 32 samples an epoch over both ranks (one
        # process would take 5 batches).
        self.assertEqual([(l["samples"], l["world_size"]) for l in lines], [(32, 2), (32, 2)])
        self.assertEqual(outs[1][0], "", "rank 1 writes nothing on stdout")
        self.assertNotIn("epoch 1/2", outs[1][1], "rank 1 logs no epochs")
        ckpt = self.checkpoint()
        self.assertEqual((ckpt["epoch"], ckpt["steps"]), (2, [4]))
        self.assertFalse(any(k.startswith("module.") for k in ckpt["keys"]), ckpt["keys"])
        with open(os.path.join(self.ws, "runs/r/metrics.csv")) as f:
            self.assertEqual(len(f.read().splitlines()), 3, "one line an epoch, rank 0's")
        # Validation is the whole set split over the ranks: 16 samples, accuracy in sixteenths.
        for l in lines:
            self.assertAlmostEqual(l["val_acc"] * 16, round(l["val_acc"] * 16), places=6)
        # One process resumes the two ranks' run.
        r = self.run_train(CHEAP + ["--run-dir", "runs/r", "--epochs", "3", "--resume"])
        self.assertEqual(self.epochs_run(r), [3])
        self.assertEqual(self.checkpoint()["steps"], [5])

def main():
    global PYTHON, TEMPLATE, MODULE_DIR
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--python", default=PYTHON)
    p.add_argument("--template", default=TEMPLATE)
    p.add_argument("--module-dir", default=MODULE_DIR)
    p.add_argument("--have-torchvision", choices=["0", "1"])
    args, rest = p.parse_known_args()
    PYTHON, TEMPLATE = args.python, os.path.abspath(args.template)
    MODULE_DIR = os.path.abspath(args.module_dir)
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
