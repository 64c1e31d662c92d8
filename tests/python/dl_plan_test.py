#!/usr/bin/env python3
"""Tests of the companion module dl_plan (python/dl_plan) against the real torch: the plan from
the environment and alone, the DataLoader keyword arguments with one and two ranks, precision as
code, and the probe protocol as dl-launch drives it (scripts in fresh processes, the result file,
the script's own output, out-of-memory, crashes, a script that never reaches its probe call).

    dl_plan_test.py --module-dir <checkout>/python [unittest arguments]

Exit 77 (SKIPPED) where this Python has no torch.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

args, rest = argparse.ArgumentParser(add_help=False), None
args.add_argument("--module-dir", required=True)
opts, rest = args.parse_known_args()
MODULE_DIR = os.path.abspath(opts.module_dir)
sys.path.insert(0, MODULE_DIR)

try:
    import torch
except ImportError:
    print(f"SKIPPED: {sys.executable} has no torch (apt-get install python3-torch)")
    sys.exit(77)

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dl_plan import loading, plan_env as plan_mod, precision  # noqa: E402

# Variables a test's environment must not inherit from a dl-launch or torchrun around ctest.
PLAN_VARS = [v for v in os.environ if v.startswith("DL_")] + [
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in PLAN_VARS}
    env["PYTHONPATH"] = MODULE_DIR
    env.update({k: str(v) for k, v in extra.items()})
    return env


class PlanTest(unittest.TestCase):
    def test_alone_gets_dl_launch_defaults_and_says_so(self):
        p = plan_mod.read_plan({"DL_CORES": "6"})
        self.assertEqual((p.workers, p.threads, p.batch_size), (4, 2, 64))
        self.assertEqual(p.source("workers"), "default: 6 usable cores - 2, at least 1")
        self.assertEqual(p.source("threads"), "default: 6 usable cores - 4 worker(s), at least 1")
        self.assertEqual((p.rank, p.local_rank, p.world_size), (0, 0, 1))
        self.assertFalse(p.distributed)
        self.assertTrue(p.is_main)
        self.assertIsNone(p.run_dir)
        self.assertEqual(p.source("run_dir"), "default: DL_RUN_DIR unset")
        if not torch.cuda.is_available():
            self.assertEqual((p.device, p.precision), ("cpu", "fp32"))
        # One usable core: still one worker, one thread.
        one = plan_mod.read_plan({"DL_CORES": "1"})
        self.assertEqual((one.workers, one.threads), (1, 1))

    def test_no_environment_at_all_never_fails(self):
        p = plan_mod.read_plan({})
        self.assertEqual(p.cores, len(os.sched_getaffinity(0)))
        self.assertEqual(p.source("cores"), "affinity mask")
        self.assertGreaterEqual(p.workers, 1)

    def test_the_plan_dl_launch_hands_over(self):
        env = {"DL_WORKERS": "3", "DL_THREADS": "2", "DL_BATCH_SIZE": "128", "DL_DEVICE": "cpu",
               "DL_PRECISION": "bf16", "DL_RUN_DIR": "/w/runs/a", "DL_DATA": "/d", "RANK": "1",
               "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "DL_CORES": "4"}
        p = plan_mod.read_plan(env)
        self.assertEqual((p.workers, p.threads, p.batch_size, p.device, p.precision),
                         (3, 2, 128, "cpu", "bf16"))
        self.assertEqual((p.rank, p.local_rank, p.world_size, p.run_dir, p.data),
                         (1, 1, 2, "/w/runs/a", "/d"))
        for name, var in (("workers", "DL_WORKERS"), ("batch_size", "DL_BATCH_SIZE"),
                          ("rank", "RANK"), ("world_size", "WORLD_SIZE")):
            self.assertEqual(p.source(name), var)
        self.assertTrue(p.distributed)
        self.assertFalse(p.is_main)
        self.assertIn("workers          3            (DL_WORKERS)", p.describe())
        # A value as long as its column keeps a space before its source (a trial read
        # "run_dir /tmp/trial48/myws/runs/s1(DL_RUN_DIR)").
        long = plan_mod.read_plan({"DL_RUN_DIR": "/tmp/trial48/myws/runs/s1"})
        self.assertIn("/tmp/trial48/myws/runs/s1 (DL_RUN_DIR)", long.describe())

    def test_auto_values_are_the_rule_of_thumb(self):
        p = plan_mod.read_plan({"DL_WORKERS": "auto", "DL_THREADS": "auto", "DL_CORES": "8"})
        self.assertEqual((p.workers, p.threads), (6, 2))
        zero = plan_mod.read_plan({"DL_WORKERS": "0", "DL_CORES": "8"})
        self.assertEqual(zero.threads, 8)
        self.assertEqual(zero.source("threads"), "default: 8 usable cores, no workers")

    def test_fp16_on_the_cpu_is_fp32_with_the_reason(self):
        p = plan_mod.read_plan({"DL_PRECISION": "fp16", "DL_DEVICE": "cpu"})
        self.assertEqual(p.precision, "fp32")
        self.assertIn("CPU autocast is bf16", p.source("precision"))

    def test_malformed_variables_name_themselves(self):
        for env, words in (({"DL_WORKERS": "many"}, "DL_WORKERS='many': expected a whole number"),
                           ({"DL_BATCH_SIZE": "0"}, "DL_BATCH_SIZE='0'"),
                           ({"DL_PRECISION": "fp8"}, "DL_PRECISION='fp8'"),
                           ({"DL_DEVICE": "tpu"}, "DL_DEVICE='tpu'"),
                           ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not below WORLD_SIZE=2")):
            with self.subTest(env=env):
                with self.assertRaises(plan_mod.PlanError) as raised:
                    plan_mod.read_plan(env)
                self.assertIn(words, str(raised.exception))


class MicroBatchTest(unittest.TestCase):
    def test_pieces_and_steps_follow_dl_micro_batch(self):
        p = plan_mod.read_plan({"DL_BATCH_SIZE": "10", "DL_MICRO_BATCH": "4"})
        self.assertEqual((p.batch_size, p.micro_batch, p.accumulation_steps), (10, 4, 3))
        self.assertEqual(p.source("micro_batch"), "DL_MICRO_BATCH")
        x = torch.arange(10.0)
        pieces = list(p.micro_batches(x, x * 2))
        self.assertEqual([len(a) for a, _, _ in pieces], [4, 4, 2])
        self.assertEqual([w for _, _, w in pieces], [0.4, 0.4, 0.2])
        self.assertTrue(all(torch.equal(b, a * 2) for a, b, _ in pieces))
        whole = plan_mod.read_plan({"DL_BATCH_SIZE": "10"})
        self.assertEqual((whole.micro_batch, whole.accumulation_steps), (10, 1))
        self.assertEqual([w for *_, w in whole.micro_batches(x)], [1.0])
        with self.assertRaises(plan_mod.PlanError):
            list(p.micro_batches(x, x[:3]))

    def test_accumulated_gradients_are_the_whole_batchs(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3))
        x, y = torch.randn(10, 5), torch.randint(0, 3, (10,))
        loss_fn = torch.nn.CrossEntropyLoss()
        loss_fn(model(x), y).backward()
        whole = [q.grad.clone() for q in model.parameters()]
        model.zero_grad()
        p = plan_mod.read_plan({"DL_BATCH_SIZE": "10", "DL_MICRO_BATCH": "3"})
        for xb, yb, weight in p.micro_batches(x, y, model=model):
            (loss_fn(model(xb), yb) * weight).backward()
        for a, b in zip(whole, (q.grad for q in model.parameters())):
            torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)

    def test_a_ddp_model_syncs_on_the_last_piece_only(self):
        entered = []

        class FakeDdp:
            def no_sync(self):
                import contextlib

                entered.append(True)
                return contextlib.nullcontext()

        p = plan_mod.read_plan({"DL_BATCH_SIZE": "8", "DL_MICRO_BATCH": "3"})
        self.assertEqual(len(list(p.micro_batches(torch.zeros(8), model=FakeDdp()))), 3)
        self.assertEqual(len(entered), 2)


class LearningRateTest(unittest.TestCase):
    """plan.scaled_lr: the rule of core/lr_scaling.h, the cases of tests/unit/core/lr_scaling_test."""

    def lr(self, **env):
        return plan_mod.read_plan({k: str(v) for k, v in env.items()}).scaled_lr(0.001)

    def test_against_a_reference_batch_the_rule_follows_the_global_batch(self):
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=344, DL_LR_SCALING="linear",
                                       DL_REFERENCE_BATCH=64), 0.001 * 344 / 64)
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=128, WORLD_SIZE=2, DL_LR_SCALING="sqrt",
                                       DL_REFERENCE_BATCH=64), 0.002)
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=32, DL_LR_SCALING="linear",
                                       DL_REFERENCE_BATCH=128), 0.00025)
        # dl-launch --global-batch 256 over 2 ranks, tuned at 128.
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=128, WORLD_SIZE=2, DL_GLOBAL_BATCH=256,
                                       DL_MICRO_BATCH=64, DL_LR_SCALING="linear",
                                       DL_REFERENCE_BATCH=128), 0.002)

    def test_without_a_reference_the_rules_scale_with_the_ranks(self):
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=64, WORLD_SIZE=4, DL_LR_SCALING="linear"),
                               0.004)
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=64, WORLD_SIZE=4, DL_LR_SCALING="sqrt"),
                               0.002)
        # --global-batch keeps each step's batch: nothing grew.
        self.assertAlmostEqual(self.lr(DL_BATCH_SIZE=128, WORLD_SIZE=2, DL_GLOBAL_BATCH=256,
                                       DL_LR_SCALING="linear"), 0.001)

    def test_none_keeps_it_and_bad_values_name_themselves(self):
        self.assertEqual(self.lr(DL_BATCH_SIZE=1024, DL_REFERENCE_BATCH=64), 0.001)
        p = plan_mod.read_plan({"DL_BATCH_SIZE": "96"})
        self.assertEqual((p.lr_scaling, p.reference_batch, p.global_batch), ("none", None, 96))
        # dl-launch's bounds: a dl.conf dl_plan accepts, dl-launch accepts too.
        for env, words in (({"DL_LR_SCALING": "square"}, "DL_LR_SCALING='square': expected none"),
                           ({"DL_REFERENCE_BATCH": "0"}, "DL_REFERENCE_BATCH='0'"),
                           ({"DL_REFERENCE_BATCH": "auto"}, "from 1 to 16777216"),
                           ({"DL_REFERENCE_BATCH": "16777217"}, "from 1 to 16777216")):
            with self.subTest(env=env):
                with self.assertRaises(plan_mod.PlanError) as raised:
                    plan_mod.read_plan(env)
                self.assertIn(words, str(raised.exception))
        for lr in (0, -1, float("nan"), "0.1", True):
            with self.subTest(lr=lr), self.assertRaises(plan_mod.PlanError):
                plan_mod.read_plan({"DL_LR_SCALING": "linear"}).scaled_lr(lr)

    def test_a_reference_without_a_rule_is_warned_about(self):
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            plan_mod.read_plan({"DL_REFERENCE_BATCH": "32"})
        self.assertIn("DL_REFERENCE_BATCH 32 is not used: --lr-scaling none", err.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            plan_mod.read_plan({"DL_REFERENCE_BATCH": "32", "DL_LR_SCALING": "sqrt"})
        self.assertEqual(err.getvalue(), "")


class TimingTest(unittest.TestCase):
    """Where a script's time goes: steps, the gaps between them, marked phases; dl-train's rule."""

    def test_steps_gaps_and_marks_add_up_to_the_run(self):
        from dl_plan import timing

        ticks = iter([0.0, 1.0,        # step: 1 s of compute
                      3.0, 4.0,        # 2 s waiting, then a step
                      4.0, 6.0, 6.0,   # eval 2 s (its end read twice: the gap restarts there)
                      6.5, 7.0,        # 0.5 s waiting for the next epoch's batch, a step
                      8.0])            # the report: 1 s nothing holds
        clock = timing.Clock(now=lambda: next(ticks))
        clock.step_begins(); clock.step_ends()
        clock.step_begins(); clock.step_ends()
        began = clock.phase_begins("eval"); clock.phase_ends("eval", began)
        clock.step_begins(); clock.step_ends()
        seconds = clock.breakdown()
        self.assertEqual((seconds["compute"], seconds["data"], seconds["eval"], seconds["other"]),
                         (2.5, 2.5, 2.0, 1.0))
        self.assertEqual(sum(seconds.values()), 8.0)
        with self.assertRaises(plan_mod.PlanError):
            clock.phase_begins("lunch")

    def test_the_verdict_is_dl_trains(self):
        from dl_plan import timing

        self.assertEqual(timing.verdict({"data": 41, "compute": 59})[1],
                         "data-bound: 41% of the time waiting for data")
        self.assertEqual(timing.verdict({"data": 14, "compute": 80, "optimizer": 6})[1],
                         "compute-bound: 86% of the time in forward, backward and the optimizer")
        self.assertEqual(timing.verdict({"data": 20, "compute": 40, "checkpoint": 30,
                                         "eval": 10})[0], "checkpoint-bound")

    def test_the_prescriptions_are_dl_trains_from_what_the_run_counted(self):
        from dl_plan import timing

        data = {"data": 4.0, "compute": 6.0}
        self.assertEqual(timing.prescribe(data, "data-bound", cores=2, workers=0, threads=1), [
            "waiting for data took 4.00 s of 10.00 s: fed as fast as its steps ran, the run "
            "would take up to 40% less time",
            "1 of the 2 core(s) are idle (0 worker(s), 1 thread(s)): --workers 1 gives the "
            "loader those cores"])
        self.assertIn("all in use", timing.prescribe(data, "data-bound", 2, 0, 2)[1])
        self.assertEqual(len(timing.prescribe(data, "data-bound")), 1)  # cores unknown
        # No workers: loading is the training thread's, so a worker helps even with every core
        # taken by threads; from the measured load (4.00 s / 20) and step (6.00 s / 20).
        self.assertEqual(timing.prescribe(data, "data-bound", 2, 0, 2, steps=20)[1],
                         "the batches load on the training thread between the steps (0 "
                         "workers): 0.200 s a batch against 0.300 s a step; --workers 1 "
                         "--threads 1 loads them beside the steps (1 keep(s) up with the steps; "
                         "about 40% less time if the steps keep their speed)")
        # With validation beside the batches, the promise is of the whole run's time, as the
        # bound's line is: never more than that line's "up to" (a new user's trial saw 49%
        # promised under an "up to 34%").
        evaluated = timing.prescribe({"data": 4.0, "compute": 6.0, "eval": 10.0}, "data-bound",
                                     2, 0, 2, steps=20)
        self.assertIn("up to 20% less time", evaluated[0])
        self.assertIn("about 20% less time if the steps keep their speed", evaluated[1])
        slow = {"data": 9.0, "compute": 1.0}
        self.assertIn("--workers 3 --threads 1 loads them beside the steps (9 would keep up: "
                      "with 3 the loader stays the bound, at about 0.150 s a batch; about 70% "
                      "less time if the steps keep their speed)",
                      timing.prescribe(slow, "data-bound", 4, 0, 4, steps=20)[1])
        # Hiding a 0.008 s step behind a 0.321 s load promises 2%: below 5%, not prescribed.
        tiny = {"data": 0.321 * 20, "compute": 0.008 * 20}
        self.assertEqual(len(timing.prescribe(tiny, "data-bound", 2, 0, 2, steps=20)), 1)
        # One worker, one thread, all cores counted as taken, but the step runs 2% of each
        # batch's time: its thread idles, and a second worker halves the wait.
        self.assertEqual(timing.prescribe(tiny, "data-bound", 2, 1, 1, steps=20)[1],
                         "the steps run 2% of the time (0.008 s a step, a batch every 0.329 s "
                         "from 1 worker(s)), so their thread(s) idle the rest: --workers 2 uses "
                         "them (about 50% less time if each worker keeps its rate)")
        busy = {"data": 0.2 * 20, "compute": 0.3 * 20}
        self.assertIn("all in use", timing.prescribe(busy, "data-bound", 2, 1, 1, steps=20)[1])
        compute = {"data": 0.1, "compute": 9.9}
        self.assertEqual(timing.prescribe(compute, "compute-bound", 4, 0, 1),
                         ["3 of the 4 core(s) are idle (0 worker(s), 1 thread(s)): --threads 4 "
                          "gives the steps those cores"])
        self.assertEqual(timing.prescribe(compute, "compute-bound", 2, 0, 2), [])
        ckpt = {"checkpoint": 4.4, "compute": 5.6}
        self.assertEqual(timing.prescribe(ckpt, "checkpoint-bound", checkpoints=8),
                         ["8 checkpoint(s) inside the epochs took 0.55 s each: saving every "
                          "11s or less often "
                          "(checkpoint-every = 11s: --checkpoint-every 11s, "
                          'TrainingState(checkpoint_every="11s")) keeps them near 5% of the '
                          "time"])
        self.assertEqual(timing.prescribe(ckpt, "checkpoint-bound"), [])  # none marked
        # Only the writes inside the epochs set the interval: no interval removes the epoch
        # ends' saves, so a run bound by those alone gets no interval to set.
        self.assertIn("2 checkpoint(s) inside the epochs took 0.50 s each",
                      timing.prescribe(ckpt, "checkpoint-bound", checkpoints=2,
                                       checkpoint_seconds=1.0)[0])
        t = [0.0]
        clock = timing.Clock(now=lambda: t[0])
        for _ in range(4):
            clock.step_begins()
            t[0] += 1.0
            clock.step_ends()
        began = clock.phase_begins("checkpoint")  # an epoch end's save(epoch + 1)
        t[0] += 3.0
        clock.phase_ends("checkpoint", began)
        self.assertIn("\ncheckpoint-bound: ", clock.report(2, 0, 2))
        self.assertNotIn("->", clock.report(2, 0, 2))
        clock.saved_inside_epoch(0.5)
        self.assertIn("-> 1 checkpoint(s) inside the epochs took 0.50 s each", clock.report(2, 0, 2))
        self.assertEqual(timing.checkpoint_interval_for(6.0), "2m")
        self.assertEqual(timing.checkpoint_interval_for(6.1), "3m")
        ev = {"eval": 6.0, "compute": 3.0, "checkpoint": 1.0}
        self.assertIn("validation took 3.00 s a pass against 1.50 s of training steps",
                      timing.prescribe(ev, "evaluation-bound", evals=2)[0])

    def test_a_script_with_a_slow_dataset_is_told_it_is_data_bound(self):
        script = textwrap.dedent("""
            import sys, time, torch, dl_plan
            from torch.utils.data import DataLoader, Dataset
            class Slow(Dataset):
                def __len__(self): return 24
                def __getitem__(self, i):
                    time.sleep(0.01)
                    return torch.zeros(4), 0
            plan = dl_plan.setup()
            model = torch.nn.Linear(4, 2)
            for x, y in dl_plan.loader(DataLoader(Slow(), batch_size=4)):
                with dl_plan.step():
                    model(x).sum().backward()
                    time.sleep(0.03)  # a step worth hiding the 40 ms load behind
            with dl_plan.phase("eval"):
                time.sleep(0.005)
            print(dl_plan.time_report(), file=sys.stderr)
        """)
        r = subprocess.run([sys.executable, "-c", script],
                           env=clean_env(DL_CORES="2", DL_THREADS="1"), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("where the time went (6 steps timed by dl_plan):", r.stderr)
        self.assertRegex(r.stderr, r"\ndata-bound: [0-9]+% of the time waiting for data")
        # Its DataLoader's 0 workers and torch's threads against the usable cores (DL_CORES).
        self.assertIn("  -> waiting for data took ", r.stderr)
        self.assertRegex(r.stderr, r"  -> the batches load on the training thread between the "
                         r"steps \(0 workers\): 0\.0[0-9]+ s a batch against 0\.[0-9]+ s a step; "
                         r"--workers 1 --threads 1 loads them beside the steps")
        self.assertIn("  eval ", r.stderr)
        off = subprocess.run([sys.executable, "-c", script],
                             env=clean_env(DL_TIME_BREAKDOWN="false"), capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(off.returncode, 0, off.stderr)
        self.assertNotIn("where the time went", off.stderr)


class ConfigTest(unittest.TestCase):
    """dl.conf < DL_* < what the script was given < a probe's own value, as dl-launch layers."""

    def setUp(self):
        self.ws = tempfile.mkdtemp(prefix="dl-plan-conf-")
        self.addCleanup(shutil.rmtree, self.ws, ignore_errors=True)

    def conf(self, text, name="dl.conf"):
        path = os.path.join(self.ws, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_the_workspace_dl_conf_then_the_environment_then_the_script(self):
        path = self.conf("# a comment\nworkers = 3\nbatch-size = 32  # trailing\nepochs = 7\n")
        env = {"DL_WORKSPACE": self.ws, "DL_CORES": "8"}
        p = plan_mod.read_plan(env)
        self.assertEqual((p.workers, p.batch_size, p.threads), (3, 32, 5))
        self.assertEqual(p.source("workers"), f"{path}:2: workers")
        self.assertEqual(p.source("batch_size"), f"{path}:3: batch-size")
        p = plan_mod.read_plan(dict(env, DL_WORKERS="2"))
        self.assertEqual((p.workers, p.source("workers")), (2, "DL_WORKERS"))
        p = plan_mod.read_plan(dict(env, DL_WORKERS="2"), {"workers": (0, "--workers")})
        self.assertEqual((p.workers, p.source("workers"), p.batch_size), (0, "--workers", 32))
        # Not given (None): the lower layers'.
        p = plan_mod.read_plan(env, {"workers": (None, "--workers")})
        self.assertEqual(p.workers, 3)

    def test_a_probe_measures_what_it_asked_for_whatever_the_script_was_given(self):
        given = {"workers": (5, "--workers"), "batch_size": (16, "--batch-size")}
        env = {"DL_WORKSPACE": self.ws, "DL_PROBE": "loader", "DL_WORKERS": "2",
               "DL_BATCH_SIZE": "8"}
        p = plan_mod.read_plan(env, given)
        self.assertEqual((p.workers, p.source("workers")), (2, "DL_WORKERS"))
        self.assertEqual(p.batch_size, 16)  # a loader probe times the script's own batch
        p = plan_mod.read_plan(dict(env, DL_PROBE="step"), given)
        self.assertEqual((p.workers, p.batch_size, p.source("batch_size")),
                         (5, 8, "DL_BATCH_SIZE"))

    def test_dl_config_names_the_file_and_must_be_read(self):
        other = self.conf("workers = 1\n", "other.conf")
        self.conf("workers = 3\n")
        p = plan_mod.read_plan({"DL_WORKSPACE": self.ws, "DL_CONFIG": other})
        self.assertEqual(p.workers, 1)
        for env, code, words in (
                ({"DL_CONFIG": os.path.join(self.ws, "missing.conf")}, 66, "missing.conf"),
                ({"DL_CONFIG": self.ws}, 66, "not a regular file"),
                ({"DL_CONFIG": self.conf("workers\n", "bad.conf")}, 65, "bad.conf:1"),
                ({"DL_CONFIG": self.conf("workers = many\n", "many.conf")}, 64,
                 "many.conf:1: workers='many'")):
            with self.subTest(env=env):
                with self.assertRaises(plan_mod.PlanError) as raised:
                    plan_mod.read_plan(env)
                self.assertEqual(raised.exception.code, code)
                self.assertIn(words, str(raised.exception))
        # No dl.conf where nobody named one: no settings, no error.
        os.remove(os.path.join(self.ws, "dl.conf"))
        self.assertEqual(plan_mod.read_plan({"DL_WORKSPACE": self.ws, "DL_CORES": "4"}).workers, 2)

    def test_the_scripts_own_settings_typed_and_layered(self):
        self.conf("epochs = 3\nlr = 0.01\nresume = true\nmodel = resnet18\n"
                  "weight-decay = auto\n")
        script = textwrap.dedent("""
            import json, dl_plan
            print(json.dumps([dl_plan.setting("epochs", 10), dl_plan.setting("lr", 1e-3),
                              dl_plan.setting("resume", False), dl_plan.setting("model", "cnn"),
                              dl_plan.setting("weight-decay", 0.05), dl_plan.setting("seed", 1),
                              dl_plan.setting("epochs", 10, given=2)]))
        """)
        run = lambda **env: subprocess.run(  # noqa: E731
            [sys.executable, "-c", script], env=clean_env(DL_WORKSPACE=self.ws, **env),
            capture_output=True, text=True, timeout=120)
        r = run()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [3, 0.01, True, "resnet18", 0.05, 1, 2])
        r = run(DL_EPOCHS="5", DL_RESUME="false")
        self.assertEqual(json.loads(r.stdout)[:3], [5, 0.01, False])
        r = run(DL_EPOCHS="five")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("PlanError: DL_EPOCHS='five': expected a whole number or auto", r.stderr)

    def test_an_argparse_namespace_gives_its_flags(self):
        script = textwrap.dedent("""
            import argparse, dl_plan
            p = argparse.ArgumentParser()
            p.add_argument("--workers", type=int)
            p.add_argument("--batch-size", type=int)
            plan = dl_plan.plan(p.parse_args(["--batch-size", "24"]))
            print(plan.workers, plan.source("workers"), plan.batch_size, plan.source("batch_size"))
        """)
        r = subprocess.run([sys.executable, "-c", script],
                           env=clean_env(DL_WORKSPACE=self.ws, DL_WORKERS="3"),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["3", "DL_WORKERS", "24", "--batch-size"])


def data_set(n=100):
    return TensorDataset(torch.arange(n, dtype=torch.float32).unsqueeze(1), torch.arange(n))


class LoaderTest(unittest.TestCase):
    def test_training_and_validation_kwargs(self):
        p = plan_mod.read_plan({"DL_WORKERS": "2", "DL_BATCH_SIZE": "16", "DL_DEVICE": "cpu"})
        kw = loading.dataloader_kwargs(p, data_set())
        self.assertEqual({k: kw[k] for k in ("batch_size", "num_workers", "pin_memory",
                                             "prefetch_factor", "persistent_workers",
                                             "drop_last", "shuffle")},
                         dict(batch_size=16, num_workers=2, pin_memory=False, prefetch_factor=2,
                              persistent_workers=True, drop_last=True, shuffle=True))
        self.assertNotIn("sampler", kw)
        val = loading.dataloader_kwargs(p, data_set(), train=False)
        self.assertEqual((val["drop_last"], val["shuffle"]), (False, False))
        # Overrides win; PyTorch 1.13 refuses prefetch_factor without workers, so none is given.
        none = loading.dataloader_kwargs(p, data_set(), num_workers=0)
        self.assertEqual(none["num_workers"], 0)
        self.assertNotIn("prefetch_factor", none)
        self.assertNotIn("persistent_workers", none)
        self.assertEqual(len(list(DataLoader(data_set(), **none))), 100 // 16)
        zero = plan_mod.read_plan({"DL_WORKERS": "0"})
        kw0 = loading.dataloader_kwargs(zero, data_set())
        self.assertNotIn("prefetch_factor", kw0)
        self.assertNotIn("persistent_workers", kw0)
        self.assertEqual(len(list(DataLoader(data_set(), **kw0))), 100 // 64)

    def test_same_seed_same_order_and_worker_randomness(self):
        import numpy

        class Noisy(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                return torch.tensor([i, int(numpy.random.randint(1 << 30))])

        p = plan_mod.read_plan({"DL_WORKERS": "2", "DL_BATCH_SIZE": "2"})

        def run():
            return torch.cat(list(DataLoader(Noisy(), **p.dataloader_kwargs(Noisy())))).tolist()

        first, second = run(), run()
        self.assertEqual(first, second)  # the order and numpy's numbers repeat
        self.assertNotEqual([r[0] for r in first], list(range(8)))  # shuffled
        # Each worker its own numpy stream (forked workers would otherwise repeat the parent's).
        self.assertEqual(len({r[1] for r in first}), 8)

    def test_two_ranks_split_the_samples(self):
        seen = []
        for rank in (0, 1):
            p = plan_mod.read_plan({"RANK": str(rank), "WORLD_SIZE": "2", "DL_WORKERS": "0",
                                    "DL_BATCH_SIZE": "5"})
            kw = p.dataloader_kwargs(data_set(20))
            self.assertNotIn("shuffle", kw)
            self.assertEqual(kw["sampler"].rank, rank)
            loader = DataLoader(data_set(20), **kw)
            loading.set_epoch(loader, 3)
            self.assertEqual(kw["sampler"].epoch, 3)
            seen.append(sorted(int(y) for _, ys in loader for y in ys))
        self.assertEqual(len(seen[0]), 10)
        self.assertEqual(sorted(seen[0] + seen[1]), list(range(20)))  # disjoint, complete


class PrecisionTest(unittest.TestCase):
    def test_fp32_no_autocast_and_a_pass_through_scaler(self):
        p = plan_mod.read_plan({"DL_DEVICE": "cpu", "DL_PRECISION": "fp32"})
        with precision.autocast(p):
            self.assertEqual((torch.ones(2, 2) @ torch.ones(2, 2)).dtype, torch.float32)
        scaler = precision.grad_scaler(p)
        self.assertFalse(scaler.is_enabled())
        loss = torch.tensor(3.0)
        self.assertIs(scaler.scale(loss), loss)

    def test_bf16_autocasts_without_a_scaler(self):
        p = plan_mod.read_plan({"DL_DEVICE": "cpu", "DL_PRECISION": "bf16"})
        with p.autocast():
            self.assertEqual((torch.ones(2, 2) @ torch.ones(2, 2)).dtype, torch.bfloat16)
        self.assertFalse(p.grad_scaler().is_enabled())


PROBE_SCRIPT = textwrap.dedent("""\
    import os, sys, time, json, torch
    from torch.utils.data import DataLoader, Dataset
    import dl_plan

    MIB_PER_SAMPLE = int(os.environ.get("TEST_MIB_PER_SAMPLE", "4"))
    WHAT = os.environ.get("TEST_WHAT", "")

    class Costly(Dataset):
        # Each sample costs a known CPU time.
        def __len__(self):
            return int(os.environ.get("TEST_SAMPLES", "256"))
        def __getitem__(self, i):
            t = time.perf_counter()
            while time.perf_counter() - t < 0.001:
                pass
            return torch.full((4,), float(i)), i % 3

    def main():
        plan = dl_plan.setup()
        # The script's own output, some of it JSON that looks like a result: never taken for one.
        print(json.dumps({"event": "result", "kind": "step", "fits": True, "batch": 999999}))
        print('{"dl_probe": 1, "event": "result"}', file=sys.stderr)
        if WHAT == "crash-before":
            raise ValueError("the user's own bug")
        if WHAT == "end-before":
            sys.exit(0)
        ds = Costly()
        loader = dl_plan.loader(DataLoader(ds, **plan.dataloader_kwargs(ds, **json.loads(
            os.environ.get("TEST_LOADER_KW", "{}")))))
        model = torch.nn.Linear(4, 3)
        opt = torch.optim.AdamW(model.parameters())
        scaler = plan.grad_scaler()
        for epoch in range(int(os.environ.get("TEST_EPOCHS", "2"))):
            for x, y in loader:
                with dl_plan.step(), plan.autocast():
                    # Memory that grows with the batch, held across the step as activations are.
                    held = torch.ones(x.shape[0], MIB_PER_SAMPLE << 18)
                    if WHAT == "oom":
                        torch.empty(1 << 60, dtype=torch.uint8)
                    if WHAT == "crash-in-step":
                        raise KeyError("no such column")
                    loss = torch.nn.functional.cross_entropy(model(x), y) + held.sum() * 0
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
                    del held
        print("trained to the end")

    if __name__ == "__main__":  # spawned workers import this file again
        main()
""")


class ProbeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="dl_plan_test.")
        cls.script = os.path.join(cls.dir, "train.py")
        with open(cls.script, "w") as f:
            f.write(PROBE_SCRIPT)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def probe(self, kind, result_name=None, **env):
        """Runs the script as dl-launch would for a probe; returns (process, result records)."""
        result = os.path.join(self.dir, result_name or f"{kind}-{len(os.listdir(self.dir))}.jsonl")
        e = clean_env(DL_PROBE=kind, DL_PROBE_RESULT=result, DL_PROBE_PROTOCOL=1,
                      DL_DEVICE="cpu", **env)
        # Run from another directory, as dl-launch runs it from the workspace.
        proc = subprocess.run([sys.executable, self.script], env=e, cwd=self.dir,
                              capture_output=True, text=True, timeout=300)
        records = []
        if os.path.exists(result):
            with open(result) as f:
                records = [json.loads(line) for line in f]
        return proc, records

    def assert_handshake(self, records, kind):
        self.assertGreaterEqual(len(records), 1)
        hello = records[0]
        self.assertEqual((hello["dl_probe"], hello["event"], hello["probe"], hello["module"]),
                         (1, "hello", kind, "dl_plan"))

    def test_loader_probe_times_the_users_loader_and_ends_the_script(self):
        proc, records = self.probe("loader", DL_WORKERS=2, DL_BATCH_SIZE=8, DL_PROBE_BATCHES=10)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("trained to the end", proc.stdout)
        self.assertEqual(len(records), 2, records)  # hello and the result, nothing else
        self.assert_handshake(records, "loader")
        r = records[1]
        self.assertEqual((r["event"], r["kind"], r["workers"], r["batch"], r["batches"],
                          r["samples"], r["error"]), ("result", "loader", 2, 8, 10, 80, ""))
        self.assertGreater(r["samples_per_second"], 0)
        # The workers' memory is counted: more than the main process's share alone is unlikely
        # to be under 10 MiB with torch imported.
        self.assertGreater(r["host_bytes"], 10 << 20)

    def test_loader_probe_with_spawned_workers_shakes_hands_once(self):
        proc, records = self.probe("loader", DL_WORKERS=1, DL_BATCH_SIZE=8, DL_PROBE_BATCHES=3,
                                   TEST_LOADER_KW='{"multiprocessing_context": "spawn"}')
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual([r["event"] for r in records], ["hello", "result"])
        self.assertEqual(records[1]["error"], "")

    def test_step_probe_reports_memory_that_grows_with_the_batch(self):
        peaks = {}
        for batch in (8, 40):
            # Enough batches for the timing rule's most steps (2 warm-up and up to 32 timed, more
            # under load) at batch 40: 256 samples were 12 steps, and a loaded machine's probe
            # ran out of them and trained to the end.
            proc, records = self.probe("step", DL_WORKERS=0, DL_BATCH_SIZE=batch,
                                       TEST_MIB_PER_SAMPLE=4, TEST_SAMPLES=2048)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertNotIn("trained to the end", proc.stdout)
            self.assert_handshake(records, "step")
            r = records[-1]
            self.assertEqual((r["kind"], r["batch"], r["fits"], r["out_of_memory"],
                              r["device"], r["precision"], r["error"]),
                             ("step", batch, True, False, "cpu", "fp32", ""))
            # Two warm-up steps, then at least 3 timed ones and a second of them, at most 30.
            self.assertGreaterEqual(r["steps"], 2 + 3)
            self.assertLessEqual(r["steps"], 2 + 30)
            self.assertGreater(r["step_seconds"], 0)
            peaks[batch] = r["peak_bytes"]
        # 32 more samples at 4 MiB each: the peak RSS grows by about 128 MiB.
        grown = (peaks[40] - peaks[8]) / (1 << 20)
        self.assertGreater(grown, 128 * 0.8, peaks)
        self.assertLess(grown, 128 * 1.5, peaks)

    def test_out_of_memory_in_the_step_is_an_answer(self):
        proc, records = self.probe("step", DL_WORKERS=0, DL_BATCH_SIZE=8, TEST_WHAT="oom")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r = records[-1]
        self.assertEqual((r["fits"], r["out_of_memory"], r["error"], r["steps"]),
                         (False, True, "", 0))

    def test_a_crash_in_the_step_is_named(self):
        proc, records = self.probe("step", DL_WORKERS=0, DL_BATCH_SIZE=8, TEST_WHAT="crash-in-step")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r = records[-1]
        self.assertEqual((r["fits"], r["out_of_memory"]), (False, False))
        self.assertEqual(r["error"], "KeyError: 'no such column'")

    def test_a_crash_before_the_probe_call_is_named_and_fails(self):
        proc, records = self.probe("step", DL_WORKERS=0, TEST_WHAT="crash-before")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("ValueError: the user's own bug", proc.stderr)
        self.assertEqual(records[-1]["error"], "the script failed: ValueError: the user's own bug")

    def test_a_script_that_ends_before_its_probe_call_says_so(self):
        for kind, words in (("step", "before its first dl_plan.step()"),
                            ("loader", "before dl_plan.loader(...)")):
            with self.subTest(kind=kind):
                proc, records = self.probe(kind, TEST_WHAT="end-before")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn(words, records[-1]["error"])

    def test_fewer_batches_than_steps_still_measures(self):
        # 16 samples at batch 8, one epoch: two steps of the three asked.
        proc, records = self.probe("step", DL_WORKERS=0, DL_BATCH_SIZE=8, TEST_SAMPLES=16,
                                   TEST_EPOCHS=1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("trained to the end", proc.stdout)
        r = records[-1]
        self.assertEqual((r["fits"], r["steps"], r["error"]), (True, 2, ""))
        self.assertGreater(r["peak_bytes"], 0)

    def test_bad_probe_settings_are_one_line_and_64(self):
        link = os.path.join(self.dir, "planted")
        os.symlink(os.path.join(self.dir, "elsewhere"), link)
        for env, words in (({"DL_PROBE": "both"}, "DL_PROBE='both': expected loader or step"),
                           ({"DL_PROBE_RESULT": "relative.jsonl"}, "expected an absolute path"),
                           ({"DL_PROBE_STEPS": "-1"}, "DL_PROBE_STEPS='-1'"),
                           ({"DL_PROBE_RESULT": link}, "not a symbolic link")):
            with self.subTest(env=env):
                e = clean_env(DL_PROBE="step", DL_PROBE_RESULT=os.path.join(self.dir, "x.jsonl"))
                e.update(env)
                proc = subprocess.run([sys.executable, self.script], env=e, cwd=self.dir,
                                      capture_output=True, text=True, timeout=300)
                self.assertEqual(proc.returncode, 64, proc.stderr)
                self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)  # no traceback
                self.assertIn(words, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "elsewhere")))

    def test_a_fast_loader_from_the_plans_defaults_is_measured_at_the_probes_workers(self):
        # dl_loader.Loader's surface (FakeFastLoader: workers, batch size and seed default to the
        # plan's, as dl_loader's do); Python.DlLoader runs the same probe on the real module.
        script = os.path.join(self.dir, "fast.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import sys
                sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
                sys.argv[1:] = ["--module-dir", {MODULE_DIR!r}]
                import dl_plan
                from dl_plan_test import FakeFastLoader
                dl_plan.setup(workers=1)  # the script's own --workers: the probe's value wins
                loader = dl_plan.loader(FakeFastLoader(size=48))
                print("trained to the end")
            """))
        result = os.path.join(self.dir, "fast.jsonl")
        e = clean_env(DL_PROBE="loader", DL_PROBE_RESULT=result, DL_PROBE_PROTOCOL=1,
                      DL_DEVICE="cpu", DL_WORKERS=3, DL_BATCH_SIZE=4, DL_PROBE_BATCHES=5)
        proc = subprocess.run([sys.executable, script], env=e, cwd=self.dir,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("trained to the end", proc.stdout)
        with open(result) as f:
            r = [json.loads(line) for line in f][-1]
        # 12 batches an epoch: the warm-up (1 + 3 workers x 2) and 5 timed run into a 2nd epoch.
        self.assertEqual((r["kind"], r["workers"], r["batch"], r["batches"], r["samples"],
                          r["error"]), ("loader", 3, 4, 5, 20, ""))
        self.assertGreater(r["samples_per_second"], 0)

    def test_outside_a_probe_both_calls_cost_nothing(self):
        e = clean_env(DL_WORKERS=0, DL_BATCH_SIZE=64, TEST_EPOCHS=1, DL_DEVICE="cpu")
        proc = subprocess.run([sys.executable, self.script], env=e, cwd=self.dir,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("trained to the end", proc.stdout)


RESUME_SCRIPT = textwrap.dedent("""\
    # A training loop on dl_plan.TrainingState: the samples each batch loads are printed, and
    # TEST_SIGNAL_AT=epoch:batch sends this process SIGTERM inside that batch's step, and
    # TEST_KILL_AT=epoch:batch SIGKILL after it.
    import os, signal, sys, torch
    from torch.utils.data import DataLoader, Dataset
    import dl_plan

    class Recorded(Dataset):
        def __len__(self):
            return 48
        def __getitem__(self, i):
            print(f"loaded {i}", flush=True)
            return torch.full((4,), float(i)) + torch.rand(4), i % 3

    plan = dl_plan.setup()
    data = Recorded()
    loader = dl_plan.loader(DataLoader(data, **plan.dataloader_kwargs(data)))
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5),
                                torch.nn.Linear(8, 3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
    state = dl_plan.TrainingState(model, optimizer, loader, scaler=plan.grad_scaler(),
                                  scheduler=scheduler)
    for epoch in range(state.resume(), 3):
        for x, y in state.batches(epoch):
            with dl_plan.step():
                loss = torch.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"trained {epoch} {state.step} {state.global_step} {loss.item():.8f}",
                  flush=True)
            if os.environ.get("TEST_SIGNAL_AT") == f"{epoch}:{state.step}":
                os.kill(os.getpid(), signal.SIGTERM)
            if os.environ.get("TEST_KILL_AT") == f"{epoch}:{state.step}":
                os.kill(os.getpid(), signal.SIGKILL)
        scheduler.step()
        state.save(epoch + 1)
    torch.save(model.state_dict(), os.path.join(plan.run_dir, "final.pt"))
""")


def lines_of(out, word):
    return [line.split()[1:] for line in out.splitlines() if line.startswith(word + " ")]


class ResumeTest(unittest.TestCase):
    """dl_plan.TrainingState: the file it writes, who writes it, how, and where a resumed run
    goes on."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dl_plan_resume.")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.script = os.path.join(self.dir, "train.py")
        with open(self.script, "w") as f:
            f.write(RESUME_SCRIPT)

    def run_script(self, run_dir, **env):
        e = clean_env(DL_RUN_DIR=run_dir, DL_WORKERS=0, DL_THREADS=1, DL_BATCH_SIZE=8,
                      DL_DEVICE="cpu", **env)
        return subprocess.run([sys.executable, self.script], env=e, cwd=self.dir,
                              capture_output=True, text=True, timeout=300)

    def small_state(self, run_dir, loader=None, **kw):
        import dl_plan

        model = torch.nn.Linear(4, 3)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
        return dl_plan.TrainingState(model, optimizer, loader, scheduler=scheduler,
                                     run_dir=run_dir, **kw)

    def test_a_stopped_run_resumes_at_the_next_batch_and_ends_bitwise_equal(self):
        whole = self.run_script(os.path.join(self.dir, "whole"))
        self.assertEqual(whole.returncode, 0, whole.stderr)
        run = os.path.join(self.dir, "stopped")
        first = self.run_script(run, TEST_SIGNAL_AT="1:2")
        self.assertEqual(first.returncode, 128 + 15, first.stderr)  # dl-train's: 128 + SIGTERM
        self.assertIn("dl_plan: SIGTERM received in epoch 2 after 2 of 6 batches (step 8): saved "
                      + os.path.join(run, "last.pt"), first.stderr)
        self.assertEqual(lines_of(first.stdout, "trained")[-1][:3], ["1", "2", "8"])
        saved = torch.load(os.path.join(run, "last.pt"))
        self.assertEqual((saved["epoch"], saved["epoch_step"], saved["global_step"]), (1, 2, 8))
        second = self.run_script(run, DL_RESUME="true")
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertIn("going on at epoch 2, batch 3", second.stderr)
        # The steps after the stop are the uninterrupted run's, loss for loss, and the samples
        # loaded are only those of the batches not yet trained.
        trained = lines_of(whole.stdout, "trained")
        self.assertEqual(lines_of(first.stdout, "trained") + lines_of(second.stdout, "trained"),
                         trained)
        loaded = [int(i[0]) for i in lines_of(whole.stdout, "loaded")]
        self.assertEqual([int(i[0]) for i in lines_of(second.stdout, "loaded")], loaded[8 * 8:])
        a = torch.load(os.path.join(self.dir, "whole", "final.pt"))
        b = torch.load(os.path.join(run, "final.pt"))
        self.assertTrue(all(torch.equal(a[k], b[k]) for k in a))

    def test_checkpoint_every_saves_between_epoch_ends_so_a_kill_9_loses_only_that_much(self):
        whole = self.run_script(os.path.join(self.dir, "whole"))
        self.assertEqual(whole.returncode, 0, whole.stderr)
        run = os.path.join(self.dir, "killed")
        # Every 4 steps (global steps 4 and 8); killed after step 10 (epoch 2, its 4th batch).
        first = self.run_script(run, DL_CHECKPOINT_EVERY="4", TEST_KILL_AT="1:4")
        self.assertEqual(first.returncode, -signal.SIGKILL, first.stderr)
        saved = torch.load(os.path.join(run, "last.pt"))
        self.assertEqual((saved["epoch"], saved["epoch_step"], saved["global_step"]), (1, 2, 8))
        second = self.run_script(run, DL_RESUME="true", DL_CHECKPOINT_EVERY="4")
        self.assertEqual(second.returncode, 0, second.stderr)
        self.assertIn("going on at epoch 2, batch 3", second.stderr)
        trained = lines_of(whole.stdout, "trained")
        self.assertEqual(lines_of(second.stdout, "trained"), trained[8:])
        a = torch.load(os.path.join(self.dir, "whole", "final.pt"))
        b = torch.load(os.path.join(run, "final.pt"))
        self.assertTrue(all(torch.equal(a[k], b[k]) for k in a))
        # By time: due once the seconds since the last write have passed; a bad value names
        # where it came from and is dl-launch's usage error.
        from dl_plan import checkpoint_every as every
        self.assertTrue(every.parse("30s").due(7, 30.0))
        self.assertFalse(every.parse("30s").due(7, 29.9))
        self.assertFalse(every.parse("0").due(4, 1e9))
        self.assertEqual((every.parse("1.5h").seconds, every.parse("500").steps), (5400.0, 500))
        for bad in ("x", "1e9s", ".m", "30 s", "-5", "400d"):
            with self.assertRaises(plan_mod.PlanError) as e:
                every.parse(bad, "dl.conf:3: checkpoint-every")
            self.assertEqual(e.exception.code, 64)
            self.assertTrue(str(e.exception).startswith(
                f"dl.conf:3: checkpoint-every: {bad!r} is not an interval; expected"), e.exception)
        bad = self.run_script(os.path.join(self.dir, "bad"), DL_CHECKPOINT_EVERY="2x")
        self.assertIn("PlanError: DL_CHECKPOINT_EVERY: '2x' is not an interval", bad.stderr)

    def test_a_stop_signal_is_a_flag_and_a_second_ctrl_c_interrupts(self):
        script = textwrap.dedent("""\
            import os, signal, dl_plan
            print(dl_plan.stop_requested())
            dl_plan.catch_stop()
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            print(dl_plan.stop_requested())  # the first one received
            try:
                os.kill(os.getpid(), signal.SIGINT)
            except KeyboardInterrupt:
                print("interrupted")
        """)
        r = subprocess.run([sys.executable, "-c", script], env=clean_env(), cwd=self.dir,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["0", str(int(signal.SIGHUP)), "interrupted"])

    def test_resume_without_last_pt_is_66_and_a_probe_never_resumes(self):
        r = self.run_script(os.path.join(self.dir, "none"), DL_RESUME="true")
        self.assertEqual(r.returncode, 1)
        self.assertIn("PlanError: --resume: " + os.path.join(self.dir, "none", "last.pt")
                      + " does not exist", r.stderr)
        # dl-launch hands a probe the run's DL_RESUME, with a scratch run directory: no resume.
        result = os.path.join(self.dir, "probe.jsonl")
        r = self.run_script(os.path.join(self.dir, "scratch"), DL_RESUME="true", DL_PROBE="step",
                            DL_PROBE_RESULT=result, DL_PROBE_PROTOCOL=1, DL_PROBE_STEPS=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "scratch")), "a probe saved")

    def test_the_file_is_plain_data_that_torch_load_reads_without_dl_plan(self):
        run = os.path.join(self.dir, "run")
        state = self.small_state(run)
        state.optimizer.zero_grad()
        state.model(torch.ones(2, 4)).sum().backward()
        state.optimizer.step()
        state.global_step = 1
        path = state.save(3, 1, best_acc=0.5)
        self.assertEqual(path, os.path.join(run, "last.pt"))
        # Another Python without dl_plan on its path: no class of the module is pickled.
        env = {k: v for k, v in os.environ.items() if k not in PLAN_VARS and k != "PYTHONPATH"}
        r = subprocess.run([sys.executable, "-c", textwrap.dedent("""\
            import sys, torch
            c = torch.load(sys.argv[1])
            assert "dl_plan" not in sys.modules
            def kinds(v):
                if isinstance(v, dict):
                    return set().union(*(kinds(x) for x in v.values())) | {"dict"}
                if isinstance(v, (list, tuple)):
                    return set().union(set(), *(kinds(x) for x in v)) | {"list"}
                return {type(v).__name__}
            print(sorted(kinds(c)), c["epoch"], c["epoch_step"], c["global_step"], c["best_acc"])
            """), path], env=env, cwd=self.dir, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        kinds, rest = r.stdout.split("]", 1)
        self.assertLessEqual(set(eval(kinds + "]")),  # noqa: S307 - the test's own output
                             {"Tensor", "dict", "list", "int", "float", "bool", "str",
                              "NoneType"})
        self.assertEqual(rest.split(), ["3", "1", "1", "0.5"])
        # Loaded into a fresh model and optimizer: the same state, bit for bit.
        fresh = self.small_state(run)
        self.assertEqual(fresh.resume(True, quiet=True), 3)
        self.assertEqual((fresh.epoch, fresh.step, fresh.global_step), (3, 1, 1))
        for k, v in state.model.state_dict().items():
            self.assertTrue(torch.equal(v, fresh.model.state_dict()[k]), k)
        moments = lambda o: [t for s in o.state_dict()["state"].values()  # noqa: E731
                             for t in s.values()]
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(moments(state.optimizer),
                                                              moments(fresh.optimizer))))
        self.assertEqual(fresh.loaded["best_acc"], 0.5)
        with self.assertRaises(ValueError):
            state.save(epoch_step=2)  # the state's own key

    def test_the_model_inside_ddp_is_saved_bare(self):
        import dl_plan.resume as resume

        class Wrapped(torch.nn.DataParallel):  # DDP needs a process group; the same unwrapping
            pass

        net = torch.nn.Linear(4, 3)
        self.assertIs(resume._bare(Wrapped(net)), net)
        state = self.small_state(os.path.join(self.dir, "run"))
        state.model = torch.nn.DataParallel(state.model)
        state.save()
        keys = torch.load(os.path.join(self.dir, "run", "last.pt"))["model_state_dict"].keys()
        self.assertEqual(sorted(keys), ["bias", "weight"])

    def test_only_rank_0_writes(self):
        run = os.path.join(self.dir, "ranks")
        script = textwrap.dedent("""\
            import sys, torch, dl_plan
            m = torch.nn.Linear(2, 2)
            s = dl_plan.TrainingState(m, torch.optim.SGD(m.parameters(), lr=0.1))
            print(s.save(1))
        """)
        for rank in (1, 0):
            r = subprocess.run([sys.executable, "-c", script], cwd=self.dir, timeout=120,
                               env=clean_env(RANK=rank, WORLD_SIZE=2, DL_RUN_DIR=run),
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            if rank == 1:
                self.assertEqual(r.stdout.strip(), "None")
                self.assertFalse(os.path.exists(run), "rank 1 wrote")
        self.assertEqual(os.listdir(run), ["last.pt"])

    def test_a_failed_write_leaves_the_old_last_pt_whole(self):
        import dl_plan.resume as resume

        run = os.path.join(self.dir, "run")
        state = self.small_state(run)
        state.save(1)
        path = os.path.join(run, "last.pt")
        with open(path, "rb") as f:
            before = f.read()
        real = os.replace

        def refuse(src, dst):
            raise OSError(28, "No space left on device")

        resume.os.replace = refuse
        try:
            with torch.no_grad():
                state.model.weight.add_(1.0)
            with self.assertRaises(OSError):
                state.save(2)
        finally:
            resume.os.replace = real
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(os.listdir(run), ["last.pt"], "the temporary file is left")

    def test_a_kill_during_the_write_leaves_the_old_last_pt_whole(self):
        # The writer is killed (SIGKILL: no handler, no cleanup) once the new file's bytes are
        # written, before the rename: last.pt is the earlier one, whole; the next save removes
        # the dead writer's temporary file.
        run = os.path.join(self.dir, "run")
        script = textwrap.dedent("""\
            import os, signal, sys, torch, dl_plan
            m = torch.nn.Linear(64, 64)
            s = dl_plan.TrainingState(m, torch.optim.SGD(m.parameters(), lr=0.1))
            s.save(1)
            if sys.argv[1] == "kill":
                os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
                s.save(2)
            print("saved")
        """)
        run_it = lambda what: subprocess.run(  # noqa: E731
            [sys.executable, "-c", script, what], cwd=self.dir, timeout=120,
            env=clean_env(DL_RUN_DIR=run), capture_output=True, text=True)
        killed = run_it("kill")
        self.assertEqual(killed.returncode, -9, killed.stderr)
        names = sorted(os.listdir(run))
        self.assertEqual(len(names), 2, names)
        self.assertEqual(names[0], "last.pt")
        self.assertTrue(names[1].startswith("last.pt.tmp."), names)
        self.assertEqual(torch.load(os.path.join(run, "last.pt"))["epoch"], 1)
        again = run_it("save")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(os.listdir(run), ["last.pt"])

    def resumed_order(self, make_loader, stop_at, epochs=3):
        """(the batches of an uninterrupted run, those of a run stopped after batch `stop_at` of
        epoch 1 and resumed, the samples the resumed run loaded)."""
        def run(resume_at):
            loaded = []
            loader = make_loader(loaded)
            state = self.small_state(os.path.join(self.dir, "order"), loader)
            batches = []
            start = state.resume(True, quiet=True) if resume_at else 0
            if resume_at:
                loaded.clear()
            for epoch in range(start, epochs):
                for _, y in state.batches(epoch):
                    batches.append((epoch, y.tolist()))
                    if not resume_at and epoch == 1 and state.step == stop_at:
                        state.save()
                state.save(epoch + 1, name="end.pt")
            return batches, loaded

        whole, _ = run(False)
        resumed, loaded = run(True)
        return whole, resumed, loaded

    def test_the_resumed_epoch_keeps_its_order_and_loads_only_what_is_left(self):
        class Recorded(torch.utils.data.Dataset):
            def __init__(self, loaded):
                self.loaded = loaded

            def __len__(self):
                return 40

            def __getitem__(self, i):
                self.loaded.append(i)
                return torch.zeros(1), i

        p = plan_mod.read_plan({"DL_WORKERS": "0", "DL_BATCH_SIZE": "4"})
        for name, kw in (("shuffled", {}),
                         ("distributed rank 1 of 2", dict(sampler=torch.utils.data.distributed.
                                                          DistributedSampler(range(40), 2, 1))),
                         ("no generator", dict(generator=None))):
            with self.subTest(loader=name):
                def make(loaded):
                    ds = Recorded(loaded)
                    args = p.dataloader_kwargs(ds, **kw)
                    if "sampler" in kw:
                        del args["shuffle"]
                    return DataLoader(ds, **args)

                whole, resumed, loaded = self.resumed_order(make, stop_at=3)
                # Epoch 1 after its third batch, then epoch 2: the same batches.
                self.assertEqual(resumed, whole[len(whole) // 3 + 3:])
                orders = [sum((y for e, y in whole if e == k), []) for k in range(3)]
                self.assertNotEqual(orders[0], orders[1], "the epochs are not reshuffled")
                # Only the samples of the batches left were read.
                self.assertEqual(loaded, sum((y for _, y in resumed), []))

    def test_workers_and_a_loader_of_another_kind_resume_in_order(self):
        p = plan_mod.read_plan({"DL_WORKERS": "2", "DL_BATCH_SIZE": "4"})
        ds = data_set(40)
        whole, resumed, _ = self.resumed_order(
            lambda _: DataLoader(ds, **p.dataloader_kwargs(ds)), stop_at=2)
        self.assertEqual(resumed, whole[len(whole) // 3 + 2:])
        # A loader that is not torch's (dl_loader.Loader's surface): read and dropped up to the
        # position, the same batches after it.
        whole, resumed, _ = self.resumed_order(lambda _: FakeFastLoader(batch_size=4), stop_at=4)
        self.assertEqual(resumed, whole[len(whole) // 3 + 4:])


class FakeFastLoader:
    """dl_loader.Loader's surface, as dl_plan sees it: workers, seed and batch size default to the
    plan's; num_workers, prefetch_factor, batch_size, dataset (with a length), len(), set_epoch,
    and each iteration the next epoch, in an order that is a function of (seed, epoch)."""

    def __init__(self, batch_size=None, workers=None, size=40):
        import dl_plan

        plan = dl_plan.plan()
        self.batch_size = batch_size or plan.batch_size
        self.workers = plan.workers if workers is None else workers
        self.seed, self.size, self._epoch = plan.seed, size, 0

    num_workers = property(lambda self: self.workers)
    prefetch_factor = property(lambda self: 2)
    dataset = property(lambda self: range(self.size))

    def __len__(self):
        return self.size // self.batch_size

    def set_epoch(self, epoch):
        self._epoch = epoch

    def __iter__(self):
        epoch, self._epoch = self._epoch, self._epoch + 1
        order = torch.randperm(self.size,
                               generator=torch.Generator().manual_seed(self.seed + epoch))
        for b in range(len(self)):
            index = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield index.float().unsqueeze(1), index


class InstallTest(unittest.TestCase):
    def test_pip_installs_the_folder(self):
        """`pip install ./python`, as docs/python.md says, offline (no build isolation), from a
        copy: the checkout is not written to."""
        import importlib.util

        for name in ("pip", "setuptools"):  # found, not imported: torch has imported distutils
            if importlib.util.find_spec(name) is None:
                self.skipTest(f"{name} is missing (apt-get install python3-pip python3-setuptools)")
        with tempfile.TemporaryDirectory() as tmp:
            src = shutil.copytree(MODULE_DIR, os.path.join(tmp, "src"),
                                  ignore=shutil.ignore_patterns("__pycache__"))
            target = os.path.join(tmp, "site")
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                            "--no-deps", "--no-warn-script-location", "--target", target, src],
                           check=True, capture_output=True, timeout=300)
            env = {k: v for k, v in os.environ.items() if k not in PLAN_VARS}
            env["PYTHONPATH"] = target
            out = subprocess.run([sys.executable, "-c", "import dl_plan; print(dl_plan.__file__, "
                                  "dl_plan.__version__, dl_plan.plan().batch_size)"],
                                 env=env, cwd=tmp, capture_output=True, text=True, check=True)
            self.assertTrue(out.stdout.startswith(target), out.stdout)
            self.assertTrue(out.stdout.strip().endswith("0.1.0 64"), out.stdout)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
