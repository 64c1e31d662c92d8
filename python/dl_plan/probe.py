"""The probe protocol (version 1; docs/python.md, "The probe protocol"): how dl-launch measures a
user's own script. It starts the script in a fresh process with

    DL_PROBE=loader|step      which probe
    DL_PROBE_RESULT=/abs/file where the answer goes: JSON lines appended to that file, so nothing
                              the script prints (stdout, stderr, a progress bar) can be taken for it
    DL_PROBE_PROTOCOL=1       the version dl-launch speaks
    DL_WORKERS=N              the loader probe's worker count
    DL_BATCH_SIZE=N           the step probe's batch size
    DL_PROBE_BATCHES, DL_PROBE_STEPS, DL_PROBE_SECONDS   how long each measures (defaults below)

and the script's two calls answer it:

    loader = dl_plan.loader(DataLoader(...))   # loader probe: times batches, answers, exits
    for batch in loader:
        with dl_plan.step():                   # step probe: a few steps, answers, exits
            ...the training step...

Outside a probe both calls cost nothing: loader() returns its argument and step() times nothing.
Importing dl_plan in a probe appends the handshake line at once, which is how dl-launch tells a
script that speaks the protocol from one that does not (that one is stopped and gets the rule of
thumb). A probe ends by raising ProbeDone (a SystemExit with code 0), so the script's `finally`
blocks and DataLoader workers end as at any exit; dl-launch points DL_RUN_DIR at a scratch folder
for probes, so a script that saves on exit writes nothing into the run.
"""

import atexit
import json
import multiprocessing
import os
import resource
import sys
import time

PROTOCOL = 1
DEFAULT_BATCHES = 30  # timed loader batches after the warm-up
# The step probe times steps as dl-train's probe mode does (core/step_timing.h): two warm-up
# steps (the optimizer's state, cuDNN's autotuning, the caching allocator settling), then timed
# steps until there are at least 3 and 1 s of them, or 30; the step time is their median.
WARMUP_STEPS = 2
MIN_TIMED_STEPS = 3
MAX_TIMED_STEPS = 30
MIN_TIMED_SECONDS = 1.0
DEFAULT_SECONDS = 30.0  # a loader probe stops timing after this long, with what it has
KINDS = ("loader", "step")


class ProbeDone(SystemExit):
    """The probe has answered: the script ends here, with exit code 0."""

    def __init__(self):
        super().__init__(0)


class ProbeSetupError(SystemExit):
    """DL_PROBE set with a missing or malformed companion variable: one line, exit 64."""

    def __init__(self, message):
        print(f"dl_plan probe error: {message}", file=sys.stderr, flush=True)
        super().__init__(64)


def _positive(name, default):
    raw = os.environ.get(name, "")
    if raw == "":
        return default
    try:
        value = type(default)(raw)
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise ProbeSetupError(f"{name}={raw!r}: expected a positive number")
    return value


class _Probe:
    """The probe this process was started for, or none (kind None)."""

    def __init__(self, env):
        self.kind = env.get("DL_PROBE") or None
        self.answered = False
        self.crash = None  # an uncaught exception (dl_plan's excepthook)
        self.samples = None  # the step probe's data set size, where dl_plan.loader() saw it
        self.steps_done = 0
        self.timed = []  # seconds of each timed step
        self._step_start = None
        self.model = None  # the step probe's model (dl_plan.wrap's, TrainingState's)
        self._inputs = None  # the arguments of its latest forward
        self._validating = False
        if self.kind is None:
            return
        if self.kind not in KINDS:
            raise ProbeSetupError(f"DL_PROBE={self.kind!r}: expected loader or step")
        self.result_path = env.get("DL_PROBE_RESULT", "")
        if not os.path.isabs(self.result_path):
            raise ProbeSetupError(f"DL_PROBE_RESULT={self.result_path!r}: expected an absolute "
                                  "path to the probe's result file")
        self.batches = _positive("DL_PROBE_BATCHES", DEFAULT_BATCHES)
        # DL_PROBE_STEPS caps the steps in all (warm-up included); unset, the timing rule decides.
        self.steps = _positive("DL_PROBE_STEPS", WARMUP_STEPS + MAX_TIMED_STEPS)
        self.warmup = min(WARMUP_STEPS, self.steps - 1)
        self.seconds = _positive("DL_PROBE_SECONDS", DEFAULT_SECONDS)

    def write(self, record):
        """Appends one JSON line. O_APPEND: the line lands whole after whatever is there;
        O_NOFOLLOW: a link planted at that name is refused, not written through."""
        from dl_plan._version import __version__

        torch = sys.modules.get("torch")  # imported by the script before dl_plan, as a rule
        line = json.dumps(dict(dl_probe=PROTOCOL, module="dl_plan", version=__version__,
                               torch=getattr(torch, "__version__", None), **record)) + "\n"
        fd = os.open(self.result_path,
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def hello(self):
        try:
            self.write(dict(event="hello", probe=self.kind, pid=os.getpid()))
        except OSError as e:  # a link planted at the name (ELOOP), a missing folder, ...
            raise ProbeSetupError(f"DL_PROBE_RESULT={self.result_path}: {e.strerror}; expected "
                                  "a writable file that is not a symbolic link") from None

    def answer(self, record):
        self.answered = True
        if self.kind == "step" and self.samples is not None:
            record.setdefault("samples", self.samples)
        self.write(dict(event="result", kind=self.kind, **record))

    # ---- the loader probe

    def time_loader(self, loader):
        workers = getattr(loader, "num_workers", 0)
        prefetch = getattr(loader, "prefetch_factor", None) or 2
        record = dict(workers=workers, batch=getattr(loader, "batch_size", None) or 0,
                      batches=0, samples=0, seconds=0.0, samples_per_second=0.0,
                      host_bytes=0, first_batch_seconds=0.0, error="")
        # The warm-up drains what the workers made while the first batch was on its way (each
        # keeps `prefetch` in flight), so that the timed batches are the steady rate.
        warmup = 1 + workers * prefetch
        started = time.perf_counter()
        timed_from = None
        try:
            seen = 0
            while record["batches"] < self.batches:
                progressed = False
                for batch in loader:
                    progressed = True
                    seen += 1
                    if seen == 1:
                        record["first_batch_seconds"] = time.perf_counter() - started
                    if seen <= warmup:
                        continue
                    if timed_from is None:
                        # The clock starts once the warm-up's last batch is in hand.
                        timed_from = time.perf_counter()
                        continue
                    record["batches"] += 1
                    record["samples"] += batch_length(batch, record["batch"])
                    if (record["batches"] >= self.batches
                            or time.perf_counter() - timed_from > self.seconds):
                        break
                if not progressed:
                    record["error"] = "the DataLoader gave no batch"
                    break
                if timed_from is not None and time.perf_counter() - timed_from > self.seconds:
                    break
            if timed_from is not None:
                record["seconds"] = time.perf_counter() - timed_from
            if record["seconds"] > 0:
                record["samples_per_second"] = record["samples"] / record["seconds"]
            elif not record["error"]:
                record["error"] = (f"the DataLoader gave {seen} batch(es), fewer than the "
                                   f"{warmup + 1} a measurement needs")
            # While the workers are alive: the memory the loader holds, theirs included.
            record["host_bytes"] = tree_pss_bytes(os.getpid())
        except Exception as e:  # the user's Dataset failed: the launcher shows this line
            record["error"] = first_line(e)
        self.answer(record)
        raise ProbeDone()

    # ---- the step probe

    def note_loader(self, loader):
        try:
            self.samples = len(loader.dataset)
            batches = len(loader)
        except TypeError:  # an IterableDataset has no length
            return
        if batches == 0:
            plan = _plan()
            self.answer(dict(batch=plan.batch_size, fits=False, out_of_memory=False,
                             larger_than_data=True, samples=self.samples, peak_bytes=0,
                             step_seconds=0.0, steps=0, device=plan.device,
                             precision=plan.precision, error=""))
            raise ProbeDone()

    def note_model(self, model):
        """The step probe watches `model`'s forward (the bare module: DDP calls it) to run it
        once more in evaluation, as dl-train's probe ends: the arguments of the latest forward
        are kept (references: the batch is in memory anyway)."""
        import torch

        if self.kind != "step" or self.model is not None:
            return
        model = getattr(model, "module", model)  # inside DistributedDataParallel
        if not isinstance(model, torch.nn.Module):
            return
        self.model = model

        def keep(_module, args):
            if not self._validating:
                self._inputs = args

        model.register_forward_pre_hook(keep)

    def _validation_step(self):
        """A validation forward (eval mode, no gradients, the plan's autocast) on the latest
        training batch, so that the peak includes it and a batch that fits training but not its
        validation is not chosen; the exception it raised, or None (also when no model or forward
        was seen: `validated` in the answer says which)."""
        import torch

        if self.model is None or self._inputs is None:
            return None
        plan = _plan()
        training = self.model.training
        self._validating = True
        try:
            self.model.eval()
            with torch.no_grad(), plan.autocast():
                self.model(*self._inputs)
            if plan.is_cuda:
                torch.cuda.synchronize(plan.device)
        except Exception as e:  # noqa: BLE001 - an out-of-memory is this batch's answer
            return e
        finally:
            self.model.train(training)
            self._validating = False
        return None

    def step_begins(self):
        self._step_start = time.perf_counter()

    def step_ends(self, error):
        import torch

        plan = _plan()
        if error is not None:
            oom = is_out_of_memory(error)
            self.answer(dict(batch=plan.batch_size, fits=False, out_of_memory=oom,
                             peak_bytes=0 if oom else peak_bytes(plan),
                             step_seconds=self._median_seconds(), steps=self.steps_done,
                             device=plan.device, precision=plan.precision,
                             error="" if oom else first_line(error)))
            raise ProbeDone()
        if plan.is_cuda:
            torch.cuda.synchronize(plan.device)  # the step's time, not its launch's
        if self.steps_done >= self.warmup:
            self.timed.append(time.perf_counter() - self._step_start)
        self.steps_done += 1
        enough = len(self.timed) >= MAX_TIMED_STEPS or (
            len(self.timed) >= MIN_TIMED_STEPS and sum(self.timed) >= MIN_TIMED_SECONDS)
        if enough or self.steps_done >= self.steps:
            self._finish_steps()
            raise ProbeDone()

    def _finish_steps(self):
        """The answer after the steps: the validation forward, then the step's result, or the
        validation's out-of-memory as this batch's answer."""
        failed = self._validation_step()
        if failed is not None and is_out_of_memory(failed):
            plan = _plan()
            self.answer(dict(batch=plan.batch_size, fits=False, out_of_memory=True,
                             peak_bytes=0, step_seconds=self._median_seconds(),
                             steps=self.steps_done, device=plan.device,
                             precision=plan.precision, validated=True, error=""))
            return
        if failed is not None:
            # A model whose evaluation wants other arguments than its training forward (a
            # detector's targets): the training step's answer stands, unvalidated.
            self._inputs = None
            print(f"dl_plan probe: the validation forward on the training batch failed "
                  f"({first_line(failed)}): the batch is checked for training only",
                  file=sys.stderr, flush=True)
        self._step_result()

    def _median_seconds(self):
        if not self.timed:
            return 0.0
        s = sorted(self.timed)
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

    def _step_result(self, error=""):
        plan = _plan()
        self.answer(dict(batch=plan.batch_size, fits=not error, out_of_memory=False,
                         peak_bytes=peak_bytes(plan), step_seconds=self._median_seconds(),
                         steps=self.steps_done, device=plan.device, precision=plan.precision,
                         validated=self.model is not None and self._inputs is not None,
                         error=error))

    def at_exit(self):
        """A script that ended without answering: what it got to, so that the launcher can
        say more than 'no result'."""
        if self.kind is None or self.answered:
            return
        if self.crash is not None:
            crashed = dict(fits=False, out_of_memory=False, peak_bytes=0, step_seconds=0.0,
                           steps=self.steps_done, workers=0, samples_per_second=0.0,
                           host_bytes=0, error="the script failed: " + first_line(self.crash))
            if self.kind == "step":
                crashed["out_of_memory"] = is_out_of_memory(self.crash)
                if crashed["out_of_memory"]:
                    crashed["error"] = ""
            self.answer(crashed)
            return
        if self.kind == "step" and self.steps_done > 0:
            # Fewer steps than asked (a short data set, a loop that stops early): the memory
            # is measured all the same.
            self._finish_steps()
        elif self.kind == "step":
            self.answer(dict(fits=False, out_of_memory=False, peak_bytes=0, step_seconds=0.0,
                             steps=0, error="the script ended before its first dl_plan.step()"))
        else:
            self.answer(dict(workers=0, samples_per_second=0.0, host_bytes=0,
                             error="the script ended before dl_plan.loader(...)"))


def _plan():
    import dl_plan

    return dl_plan.plan()


def batch_length(batch, default):
    """The samples in a batch: the first dimension of its first tensor (a tuple, list or dict
    of tensors, or one tensor)."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() > 0 else 1
    items = batch.values() if isinstance(batch, dict) else batch
    if isinstance(items, (list, tuple)) or isinstance(batch, dict):
        for item in items:
            n = batch_length(item, None)
            if n is not None:
                return n
    return default


def is_out_of_memory(error):
    """CUDA's out-of-memory (torch.cuda.OutOfMemoryError from 1.13.1, a RuntimeError saying so
    before), the CPU allocator's, and cuDNN finding no algorithm that fits."""
    import torch

    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(error, oom_type):
        return True
    if isinstance(error, MemoryError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and any(
        s in text for s in ("out of memory", "can't allocate memory",
                            "CUDNN_STATUS_NOT_SUPPORTED", "CUDNN_STATUS_ALLOC_FAILED"))


def peak_bytes(plan):
    """CUDA: the caching allocator's peak reserved bytes (what the device had to give);
    CPU: the process's peak resident set (what dl-train's CPU probe reports)."""
    if plan.is_cuda:
        import torch

        return int(torch.cuda.max_memory_reserved(plan.device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _children(pid):
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return kids


def tree_pss_bytes(pid):
    """The proportional set size of `pid` and its descendants: forked workers share the parent's
    pages, which PSS counts once between them where RSS would count them in each."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass  # a worker that just ended
        todo += _children(p)
    return total


def first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def _in_main_process():
    """Not a DataLoader worker or another child started with spawn, which imports the main
    module, and dl_plan with it, again: before the child's parent_process() is set, while its
    current_process() already has the child's name."""
    return (multiprocessing.parent_process() is None
            and multiprocessing.current_process().name == "MainProcess")


PROBE = _Probe(os.environ) if _in_main_process() else _Probe({})
if PROBE.kind is not None:
    PROBE.hello()
    atexit.register(PROBE.at_exit)
