#!/usr/bin/env python3
"""A user's own script made preemptible with dl_plan.TrainingState, under the real dl-launch: a
run stopped by SIGTERM to dl-launch in the middle of an epoch and resumed with --resume ends with
the weights and optimizer state of a run that never stopped, bit for bit (CPU, one thread, no
loader workers); --resume of a run that saved nothing is refused before the script starts.

    script_resume_test.py --dl-launch <build>/launcher/dl-launch [--python PY] [unittest args]

--python is the interpreter the script runs under (CMake passes DL_TEST_PYTHON, which has torch).
The script and its data (160 samples of 8 features, 3 classes: 20 batches of 8 an epoch) are
written here. The stop waits for the line the script prints after batch 7 of epoch 2, where the
script then waits for the signal (TEST_PAUSE_AT), so the stop falls after that step exactly.
Prints the figures it measured (FIGURE lines).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

PYTHON = "/usr/bin/python3"
DL_LAUNCH = ""

SCRIPT = textwrap.dedent("""\
    import os, random, sys, time
    import numpy as np
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset
    import dl_plan


    class Noisy(Dataset):
        # An augmentation that draws from torch's, numpy's and random's streams.
        def __init__(self, path):
            data = torch.load(path)
            self.x, self.y = data["x"], data["y"]

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            noise = 0.1 * torch.randn(self.x.shape[1]) + 0.01 * (np.random.rand() + random.random())
            return self.x[i] + noise, self.y[i]


    def main():
        plan = dl_plan.setup()
        random.seed(plan.seed)  # setup() seeds torch; the augmentation draws from these too
        np.random.seed(plan.seed)
        epochs = dl_plan.setting("epochs", 3)
        data = Noisy(os.environ["TEST_DATA"])
        loader = dl_plan.loader(DataLoader(data, **plan.dataloader_kwargs(data)))
        model = dl_plan.wrap(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.3),
                                           nn.Linear(32, 3)).to(plan.device))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        scaler = plan.grad_scaler()
        state = dl_plan.TrainingState(model, optimizer, loader, scaler=scaler, scheduler=scheduler)
        pause = os.environ.get("TEST_PAUSE_AT", "")  # epoch:batch: wait there for a stop signal
        for epoch in range(state.resume(), epochs):
            for x, y in state.batches(epoch):
                with dl_plan.step(), plan.autocast():
                    loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                print(f"trained epoch {epoch} batch {state.step} step {state.global_step} "
                      f"loss {loss.item():.9f}", flush=True)
                if pause == f"{epoch}:{state.step}":
                    waited = time.monotonic()
                    while not dl_plan.stop_requested() and time.monotonic() - waited < 120:
                        time.sleep(0.02)
            scheduler.step()
            state.save(epoch + 1)
        torch.save(model.state_dict(), os.path.join(plan.run_dir, "final.pt"))
        print("done", flush=True)


    if __name__ == "__main__":
        main()
""")


def figure(name, value):
    print(f"FIGURE {name}: {value}", flush=True)


def trained(text):
    return [line for line in text.splitlines() if line.startswith("trained ")]


class ScriptResume(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="script-resume-")
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.ws = os.path.join(self.root, "ws")
        os.makedirs(self.ws)
        with open(os.path.join(self.ws, "train_script.py"), "w") as f:
            f.write(SCRIPT)
        self.data = os.path.join(self.root, "data.pt")
        subprocess.run([PYTHON, "-c", textwrap.dedent("""\
            import sys, torch
            g = torch.Generator().manual_seed(0)
            x = torch.randn(160, 8, generator=g)
            y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
            torch.save({"x": x, "y": y}, sys.argv[1])
            """), self.data], check=True, timeout=120)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("DL_") and k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                             "LOCAL_WORLD_SIZE", "PYTHONPATH")}
        self.env["TEST_DATA"] = self.data

    def launch(self, name, *extra):
        """dl-launch's command line for run `name`: the plan given (no probes), the script."""
        return [DL_LAUNCH, "--workspace", self.ws, "--name", name, "--workers", "0",
                "--threads", "1", "--batch-size", "8", "--device", "cpu", "--epochs", "3",
                *extra, "--", PYTHON, "train_script.py"]

    def load(self, name, file):
        import torch

        return torch.load(os.path.join(self.ws, "runs", name, file), map_location="cpu")

    def test_stopped_mid_epoch_and_resumed_ends_bitwise_equal(self):
        start = time.monotonic()
        whole = subprocess.run(self.launch("whole"), env=self.env, capture_output=True,
                               text=True, timeout=600)
        figure("uninterrupted run, seconds", f"{time.monotonic() - start:.1f}")
        self.assertEqual(whole.returncode, 0, whole.stderr)
        self.assertEqual(len(trained(whole.stdout)), 60)

        # Stopped: SIGTERM to dl-launch once the script has trained batch 7 of epoch 2.
        start = time.monotonic()
        proc = subprocess.Popen(self.launch("r"), env=dict(self.env, TEST_PAUSE_AT="1:7"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = []
        try:
            for line in proc.stdout:
                first.append(line)
                if line.startswith("trained epoch 1 batch 7 "):
                    proc.send_signal(signal.SIGTERM)
                    break
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        first_out = "".join(first) + out
        figure("stopped run, seconds", f"{time.monotonic() - start:.1f}")
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("SIGTERM received in epoch 2 after 7 of 20 batches (step 27): saved "
                      + os.path.join(self.ws, "runs", "r", "last.pt"), err)
        saved = self.load("r", "last.pt")
        self.assertEqual((saved["epoch"], saved["epoch_step"], saved["global_step"]), (1, 7, 27))
        figure("stopped after step", saved["global_step"])

        start = time.monotonic()
        second = subprocess.run(self.launch("r", "--resume"), env=self.env, capture_output=True,
                                text=True, timeout=600)
        figure("resumed run, seconds", f"{time.monotonic() - start:.1f}")
        self.assertEqual(second.returncode, 0, second.stderr)
        resumed = trained(second.stdout)
        self.assertTrue(resumed[0].startswith("trained epoch 1 batch 8 step 28 "), resumed[0])
        figure("resumed at step", resumed[0].split()[6])
        # Step for step the uninterrupted run's losses, then the same weights and moments.
        self.assertEqual(trained(first_out) + resumed, trained(whole.stdout))
        a, b = self.load("whole", "final.pt"), self.load("r", "final.pt")
        self.assertEqual(sorted(a), sorted(b))
        equal = all(torch_equal(a[k], b[k]) for k in a)
        figure("final weights bitwise equal", equal)
        self.assertTrue(equal)
        oa = self.load("whole", "last.pt")["optimizer_state_dict"]["state"]
        ob = self.load("r", "last.pt")["optimizer_state_dict"]["state"]
        self.assertTrue(all(torch_equal(oa[p][k], ob[p][k]) for p in oa for k in oa[p]))

    def test_resume_of_a_run_that_saved_nothing_is_66_before_the_script_starts(self):
        r = subprocess.run(self.launch("never", "--resume"), env=self.env, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(r.returncode, 66, r.stderr)
        self.assertEqual(r.stderr.splitlines(), [
            f"dl-launch error: --resume: {self.ws}/runs/never/last.pt does not exist; expected "
            "the last checkpoint of an earlier run under this --name (a script saves it with "
            "dl_plan's TrainingState, docs/python.md)"])
        self.assertNotIn("trained", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.ws, "runs", "never")))


def torch_equal(a, b):
    import torch

    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


def main():
    global PYTHON, DL_LAUNCH
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--dl-launch", required=True)
    p.add_argument("--python", default=PYTHON)
    args, rest = p.parse_known_args()
    PYTHON, DL_LAUNCH = args.python, os.path.abspath(args.dl_launch)
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIPPED: {PYTHON} has no torch (apt-get install python3-torch)")
        return 77
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
