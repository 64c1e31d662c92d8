"""Where a script's time goes, as dl-train reports its own (docs/training.md, "Where the time
goes"): `dl_plan.step()` times each step ("compute": the copy, forward, backward and optimizer
as the script's host sees them), the gap from one step's end to the next step's start is the
wait for the next batch ("data"), and a script marks the rest a line each:

    with dl_plan.phase("eval"):        # validation
        ...
    state.save(epoch + 1)              # TrainingState marks its writes "checkpoint"

A marked phase's time is its own. `dl_plan.time_report()` returns a table and the verdict by
dl-train's rule (the largest of the overheads at or above 15% of the time, else compute-bound)
for the script to print at its end (the template's train.py does, on rank 0): printed by the
module at exit, it would follow a refusal's one line. On a GPU the step's time is the
host's: work it queued lands where the host next waits (an .item(), the next step).

After the verdict come dl-train's prescriptions for its bound (trainer/train/monitor/
prescription.h), each from what this run measured or counted: what the data wait cost and
whether a core is left for the loader's workers, a compute-bound run's idle cores, the
checkpoint interval the writes' own durations allow, validation against the training steps,
and for a data-bound script over an image folder what dl_loader would give on its files
(cheaper_loading.py).
"""

import math
import time

from dl_plan.errors import PlanError

# dl-train's phases (trainer/train/monitor/time_breakdown.h), in its order.
PHASES = ("data", "copy", "compute", "optimizer", "exchange", "checkpoint", "eval", "other")
MARKABLE = ("copy", "optimizer", "exchange", "checkpoint", "eval")
BOUND_SHARE = 0.15
WORTH_IT = 0.05  # dl-train's kWorthIt: a checkpoint interval keeps the writes near this share
_OVERHEADS = ("data", "exchange", "checkpoint", "copy", "eval")  # the order ties are broken
_LABELS = {"data": "waiting for data", "copy": "copying batches to the device",
           "compute": "in the steps", "optimizer": "in the optimizer",
           "exchange": "waiting on the gradient exchange", "checkpoint": "on checkpoints",
           "eval": "in validation", "other": "elsewhere"}
_NAMES = {"data": "data-bound", "copy": "copy-bound", "exchange": "exchange-bound",
          "checkpoint": "checkpoint-bound", "eval": "evaluation-bound"}


def verdict(seconds):
    """(name, line) for {phase: seconds}: dl-train's rule."""
    total = sum(seconds.values())
    if total <= 0:
        return "compute-bound", "no time measured"
    bound, best = None, 0.0
    for p in _OVERHEADS:
        s = seconds.get(p, 0.0)
        if s / total >= BOUND_SHARE and s > best:
            bound, best = p, s
    if bound is not None:
        share = 100.0 * best / total
        return _NAMES[bound], f"{_NAMES[bound]}: {share:.0f}% of the time {_LABELS[bound]}"
    share = 100.0 * (seconds.get("compute", 0.0) + seconds.get("optimizer", 0.0)) / total
    return "compute-bound", (f"compute-bound: {share:.0f}% of the time in forward, backward and "
                             "the optimizer")


def checkpoint_interval_for(write_seconds):
    """dl-train's: seconds below two minutes ("11s"), else whole minutes ("3m")."""
    seconds = max(1.0, math.ceil(write_seconds / WORTH_IT))
    return f"{int(seconds)}s" if seconds < 120 else f"{int(math.ceil(seconds / 60.0))}m"


def prescribe(seconds, bound, cores=0, workers=0, threads=1, checkpoints=0, evals=0, steps=0,
              cheaper=None, checkpoint_seconds=None):
    """dl-train's prescription lines for `bound` (verdict()'s name) from {phase: seconds}, the
    usable cores (0: unknown), the DataLoader's workers, torch's threads, how many checkpoints
    were written inside the epochs (`checkpoint_seconds` their time, else all of the phase's),
    how many eval phases were marked and how many steps were timed; `cheaper`: what dl_loader
    would give (cheaper_loading.Measured), for a data-bound run. As dl-train's, the checkpoint
    interval is prescribed from the writes inside the epochs only: no interval removes the
    epoch ends' saves."""
    total = sum(seconds.values())
    out = []
    if total <= 0:
        return out
    idle = cores - workers - threads if cores > 0 else 0
    if bound == "data-bound":
        waited = seconds.get("data", 0.0)
        out.append(f"waiting for data took {waited:.2f} s of {total:.2f} s: fed as fast as its "
                   f"steps ran, the run would take up to {100.0 * waited / total:.0f}% less time")
        step = seconds.get("compute", 0.0) / steps if steps > 0 else 0.0
        if workers == 0 and step > 0 and cores > 1:
            # No workers: each batch loads on the training thread while the steps wait, whatever
            # the cores. Measured: a batch's load (the wait) against a step; the workers that
            # would keep up, with a core each, the threads that leaves the steps, and the time a
            # batch would then take (the slower of the two) if the steps kept their speed.
            load = waited / steps
            need = max(1, math.ceil(load / step))
            k = min(cores - 1, need)
            t = min(threads, cores - k)
            # As a share of the whole run (validation and checkpoints included), like the line
            # above: the time saved is at most the wait, so the promise never exceeds that bound.
            gain = steps * (load + step - max(load / k, step)) / total
            keeps = (f"{k} keep(s) up with the steps" if k == need else
                     f"{need} would keep up: with {k} the loader stays the bound, at about "
                     f"{load / k:.3f} s a batch")
            if gain >= WORTH_IT:
                out.append(f"the batches load on the training thread between the steps (0 "
                           f"workers): {load:.3f} s a batch against {step:.3f} s a step; "
                           f"--workers {k} --threads {t} loads them beside the steps ({keeps}; "
                           f"about {100.0 * gain:.0f}% less time if the steps keep their speed)")
        elif cores > 0 and idle > 0:
            out.append(f"{idle} of the {cores} core(s) are idle ({workers} worker(s), {threads} "
                       f"thread(s)): --workers {workers + idle} gives the loader those cores")
        elif cores > 0:
            # Every core is counted as taken, but a step that runs a small share of each batch's
            # time leaves its thread(s) idle the rest: one more worker would use them. Measured:
            # a batch every `period` from `workers` workers, against the step.
            period = (waited + seconds.get("compute", 0.0)) / steps if steps > 0 else 0.0
            gain = (steps * (period - max(period * workers / (workers + 1), step)) / total
                    if workers > 0 and step > 0 and period > 0 else 0.0)
            if step < 0.5 * period and gain >= WORTH_IT:
                out.append(f"the steps run {100.0 * step / period:.0f}% of the time ({step:.3f} s "
                           f"a step, a batch every {period:.3f} s from {workers} worker(s)), so "
                           f"their thread(s) idle the rest: --workers {workers + 1} uses them "
                           f"(about {100.0 * gain:.0f}% less time if each worker keeps its rate)")
            else:
                out.append(f"the {cores} core(s) are all in use ({workers} worker(s), {threads} "
                           "thread(s)): more workers would take cores from the steps; make each "
                           "sample cheaper to load")
        if cheaper is not None and cheaper.dl_ms < (1.0 - WORTH_IT) * cheaper.own_ms:
            out.append(f"dl_loader (dl-train's pipeline: only the crop decoded, at its scale) "
                       f"loads a sample in {cheaper.dl_ms:.2f} ms against {cheaper.own_ms:.2f} ms "
                       f"through this DataLoader's dataset ({cheaper.own_ms / cheaper.dl_ms:.1f}x "
                       f"faster, measured on {cheaper.files} of your files): --loader dl in the "
                       "template's train.py, dl_loader.Loader(folder) in a script")
    elif bound == "compute-bound" and idle > 0:
        out.append(f"{idle} of the {cores} core(s) are idle ({workers} worker(s), {threads} "
                   f"thread(s)): --threads {threads + idle} gives the steps those cores")
    elif bound == "checkpoint-bound" and checkpoints > 0:
        spent = seconds.get("checkpoint", 0.0) if checkpoint_seconds is None else checkpoint_seconds
        each = spent / checkpoints
        every = checkpoint_interval_for(each)
        out.append(f"{checkpoints} checkpoint(s) inside the epochs took {each:.2f} s each: saving "
                   f"every {every} "
                   f"or less often (checkpoint-every = {every}: --checkpoint-every {every}, "
                   f"TrainingState(checkpoint_every=\"{every}\")) keeps them near "
                   f"{100.0 * WORTH_IT:.0f}% of the time")
    elif bound == "evaluation-bound" and evals > 0:
        steps = sum(seconds.get(p, 0.0) for p in ("data", "copy", "compute", "optimizer",
                                                  "exchange"))
        out.append(f"validation took {seconds.get('eval', 0.0) / evals:.2f} s a pass against "
                   f"{steps / evals:.2f} s of training steps between passes: a smaller "
                   "validation set, or more training between passes, shifts the balance")
    return out


class Clock:
    """The seconds of each phase since the first step; `now` is a clock (for tests)."""

    def __init__(self, now=time.perf_counter):
        self.now = now
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.started = None   # the first step's start
        self.steps = 0
        self._step_start = None
        self._last_end = None  # the previous step's end, while the gap after it is data's
        self.marks = dict.fromkeys(MARKABLE, 0)  # how many times each phase was marked
        self.inside_saves, self.inside_save_seconds = 0, 0.0  # checkpoint_every's writes

    def step_begins(self):
        t = self.now()
        if self.started is None:
            self.started = t
        if self._last_end is not None:
            self.seconds["data"] += t - self._last_end
        self._step_start = t

    def step_ends(self):
        t = self.now()
        if self._step_start is not None:
            self.seconds["compute"] += t - self._step_start
            self.steps += 1
        self._step_start = None
        self._last_end = t

    def phase_begins(self, name):
        if name not in MARKABLE:
            raise PlanError(f"dl_plan.phase({name!r}): expected one of {', '.join(MARKABLE)}")
        self._last_end = None  # the wait after a marked phase is not the loader's
        return self.now()

    def phase_ends(self, name, began):
        self.seconds[name] += self.now() - began
        self.marks[name] += 1
        self._last_end = self.now() if self.steps else None

    def saved_inside_epoch(self, seconds):
        """A write checkpoint_every made between two steps (TrainingState.batches)."""
        self.inside_saves += 1
        self.inside_save_seconds += seconds

    def breakdown(self):
        """{phase: seconds} since the first step, "other" what no phase holds."""
        out = dict(self.seconds)
        if self.started is None:
            return out
        out["other"] = max(0.0, self.now() - self.started - sum(self.seconds.values()))
        return out

    def report(self, cores=0, workers=0, threads=1, cheaper=None):
        """The table, the verdict line and its prescriptions (prescribe()), as dl-train ends a
        run; "" before any step. `cheaper`: called for a data-bound run, what dl_loader would
        give (cheaper_loading.measure's) or None."""
        if not self.steps:
            return ""
        seconds = self.breakdown()
        total = sum(seconds.values())
        rows = [f"where the time went ({self.steps} steps timed by dl_plan):",
                f"  {'phase':<12}{'seconds':>10}{'share':>8}"]
        for p in PHASES:
            if seconds[p] > 0 or p in ("data", "compute"):
                rows.append(f"  {p:<12}{seconds[p]:>10.2f}{100.0 * seconds[p] / total:>7.1f}%  "
                            f"{_LABELS[p]}")
        rows.append(f"  {'total':<12}{total:>10.2f}")
        name, line = verdict(seconds)
        rows.append(line)
        measured = cheaper() if cheaper is not None and name == "data-bound" else None
        rows += [f"  -> {p}" for p in prescribe(seconds, name, cores, workers, threads,
                                                 self.inside_saves, self.marks["eval"],
                                                 self.steps, measured, self.inside_save_seconds)]
        return "\n".join(rows)


CLOCK = Clock()
