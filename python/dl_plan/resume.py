"""Resuming a script where it stopped, as dl-train does: the training state saved to the run's
last.pt (atomically, by rank 0 alone), a stop signal caught so that the step in progress ends and
the state is saved, and under --resume the run going on at the next batch of the same epoch, with
the sample order and random numbers of a run that never stopped.

    state = dl_plan.TrainingState(model, optimizer, loader, scaler=scaler, scheduler=scheduler)
    for epoch in range(state.resume(), epochs):   # DL_RESUME=true: last.pt's epoch, else 0
        for images, labels in state.batches(epoch):
            ...the training step...               # a stop signal: saved after it, exit 128+N
        scheduler.step()
        state.save(epoch + 1)                     # rank 0 writes <run_dir>/last.pt

What makes a resumed epoch the uninterrupted one: its order is a function of (seed, epoch) (a
DistributedSampler's set_epoch, or a generator of the state's own, reseeded each epoch, for a
RandomSampler), so the resumed process lists the same batches of indices and loads only those
after the position; the RNG states (torch's, CUDA's, numpy's, random's, the loader's generator)
saved after the step are put back before the next batch is loaded. The file is a dict of tensors,
state_dicts and plain numbers (no pickled class of this module): `torch.load` reads it anywhere.
"""

import os
import random
import signal
import sys
import threading
import time

LAST = "last.pt"
FORMAT = 1  # the layout below; a later one adds keys, never changes these
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# The keys the state owns; a script's own values (save(best_acc=...)) may not take them.
KEYS = ("dl_plan_state", "model_state_dict", "optimizer_state_dict", "scaler_state_dict",
        "scheduler_state_dict", "epoch", "epoch_step", "global_step", "global_batch",
        "order_seed", "rng_state")

_stop_signal = 0


def _on_stop(signum, _frame):
    # Only a flag: printing here could interrupt a print of the script's (a reentrant write to
    # the same buffered stream raises). The line comes when the state is saved.
    global _stop_signal
    if not _stop_signal:
        _stop_signal = signum
    elif signum == signal.SIGINT:
        # A second Ctrl-C at a terminal: the user will not wait for the step (dl-launch's own
        # second signal is a kill after its grace period).
        raise KeyboardInterrupt


def catch_stop():
    """From now on SIGTERM, SIGINT and SIGHUP (what dl-launch forwards: docker stop, scancel,
    Ctrl-C) set a flag instead of ending the process: stop_requested() says which came (a second
    Ctrl-C raises KeyboardInterrupt). Only the main thread may install handlers; elsewhere this
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in STOP_SIGNALS:
        if signal.getsignal(s) is not _on_stop:
            signal.signal(s, _on_stop)


def stop_requested():
    """The stop signal received since catch_stop() (a TrainingState calls it), or 0."""
    return _stop_signal


def _log(line):
    print(f"dl_plan: {line}", file=sys.stderr, flush=True)


def _bare(model):
    """The model inside DistributedDataParallel (or DataParallel): its state_dict has no
    `module.` prefix, so the file loads into the bare model with any number of ranks."""
    import torch.nn as nn

    if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        return model.module
    return model


def _rng_state(loader_generator):
    """Every random stream the next batch and step may draw from, as tensors and numbers."""
    import torch

    state = {"torch": torch.get_rng_state(), "cuda": None, "numpy": None,
             "random": None, "loader": None}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()  # the current device's: this rank's
    try:
        import numpy

        kind, keys, pos, has_gauss, gauss = numpy.random.get_state()
        state["numpy"] = {"kind": kind, "keys": torch.from_numpy(keys.astype("int64")),
                          "pos": int(pos), "has_gauss": int(has_gauss), "gauss": float(gauss)}
    except ImportError:
        pass
    version, internal, gauss_next = random.getstate()
    state["random"] = {"version": version, "state": torch.tensor(internal, dtype=torch.int64),
                       "gauss_next": gauss_next}
    if loader_generator is not None:
        state["loader"] = loader_generator.get_state()
    return state


def _set_rng_state(state, loader_generator):
    import torch

    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])
    if state.get("numpy") is not None:
        try:
            import numpy

            n = state["numpy"]
            numpy.random.set_state((n["kind"], n["keys"].numpy().astype("uint32"), n["pos"],
                                    n["has_gauss"], n["gauss"]))
        except ImportError:
            pass
    if state.get("random") is not None:
        r = state["random"]
        random.setstate((r["version"], tuple(r["state"].tolist()), r["gauss_next"]))
    if state.get("loader") is not None and loader_generator is not None:
        loader_generator.set_state(state["loader"])


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale(path):
    """`<path>.tmp.<pid>` left by a writer that was killed (kill -9, a lost node) mid-write."""
    folder, prefix = os.path.dirname(path), os.path.basename(path) + ".tmp."
    for name in os.listdir(folder):
        if not name.startswith(prefix) or not name[len(prefix):].isdigit():
            continue
        pid = int(name[len(prefix):])
        if pid == os.getpid():
            alive = False  # this process writes one file at a time: an earlier failure's
        else:
            try:
                os.kill(pid, 0)
                alive = True
            except ProcessLookupError:
                alive = False
            except PermissionError:  # another user's live process
                alive = True
        if not alive:
            try:
                os.remove(os.path.join(folder, name))
            except FileNotFoundError:
                pass


def write_atomically(obj, path):
    """torch.save to a temporary file beside `path`, fsync, rename over `path`, fsync the
    folder: a reader (or a crash at any point) sees the old file whole or the new one whole."""
    import torch

    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    _remove_stale(path)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(folder)


def load(path, map_location="cpu"):
    """torch.load of a checkpoint: from torch 2.0 with weights_only (a checkpoint is data, never
    code); 1.13's weights-only unpickler refuses an optimizer's float settings, so there it is
    torch.load's pickle, of a file the run's own user wrote."""
    import torch

    safe = {"weights_only": True} if int(torch.__version__.split(".")[0]) >= 2 else {}
    return torch.load(path, map_location=map_location, **safe)


def _owns_order(sampler):
    """A sampler that shuffles with a `generator` attribute and has no set_epoch of its own
    (RandomSampler, SubsetRandomSampler, WeightedRandomSampler)."""
    return hasattr(sampler, "generator") and not callable(getattr(sampler, "set_epoch", None))


class TrainingState:
    """What a run needs to go on where it stopped: the model (the bare one under DDP), the
    optimizer, the GradScaler and LR scheduler where given, the position (epoch, batches of it
    done, global step), the epoch order's seed and the RNG states. `loader` is the training
    loader whose epochs batches() runs (torch's DataLoader, dl_loader.Loader, or any iterable
    with len()). `run_dir` defaults to the plan's (DL_RUN_DIR: runs/<name>/ under dl-launch);
    without one, save() writes nothing.

    Creating it catches the stop signals (catch_stop()), and for a loader whose sampler shuffles
    with a generator (shuffle=True) gives that sampler a generator of its own, seeded with
    `order_seed + epoch` at each epoch (order_seed: the loader generator's seed, else the
    plan's), so that an epoch's order does not depend on what ran before it.

    `checkpoint_every` ("500" steps, "30s", "10m", "0"; default: the checkpoint-every setting,
    else "0"): batches() also saves last.pt after the step where one is due, as dl-train's
    --checkpoint-every does, so a kill -9 loses at most that much."""

    def __init__(self, model, optimizer, loader=None, *, scaler=None, scheduler=None,
                 run_dir=None, checkpoint_every=None):
        import torch

        from dl_plan import checkpoint_every as _every
        from dl_plan import config as _config
        from dl_plan import plan as _plan

        from dl_plan import probe as _probe

        self.plan = _plan()
        self.model, self.optimizer, self.loader = model, optimizer, loader
        _probe.PROBE.note_model(model)  # a step probe validates it too
        self.scaler, self.scheduler = scaler, scheduler
        self.run_dir = run_dir if run_dir is not None else self.plan.run_dir
        # last.pt between epoch ends too (dl-train's --checkpoint-every): given, else the
        # setting (DL_CHECKPOINT_EVERY, the config file's line), else epoch ends only.
        source = "TrainingState(checkpoint_every=...)"
        if checkpoint_every is None:
            checkpoint_every, source = _config().raw("checkpoint-every", os.environ) or ("0", "")
        self.checkpoint_every = _every.parse(checkpoint_every, source)
        self._last_save = time.perf_counter()
        self.save_seconds = 0.0  # spent in save() so far: a loop's timing can leave it out
        self.epoch = 0  # the epoch in progress (or next), 0-based: whole epochs done
        self.step = 0  # batches of it done
        self.global_step = 0  # batches trained in all, across epochs and restarts
        self.loaded = None  # the dict resume() read, for the script's own values
        self.extra = {}  # the script's own plain values, saved with every save (a stop's too)
        self._resume_at = None  # (epoch, batches to skip) until batches() gets there
        self._rng_pending = None  # RNG states to put back before the resumed batch
        self._epoch_generator_state = None
        self._order = None
        generator = getattr(loader, "generator", None)
        self.order_seed = generator.initial_seed() if generator is not None else self.plan.seed
        if isinstance(loader, torch.utils.data.DataLoader):
            if _owns_order(loader.sampler):
                self._order = torch.Generator()
                loader.sampler.generator = self._order
            if loader.generator is None:
                # Each new iterator draws a seed for its workers from the loader's generator, or,
                # without one, from torch's global stream, which the model draws from too: the
                # number of iterators made would then shift dropout's numbers after a resume.
                loader.generator = torch.Generator().manual_seed(self.order_seed)
        catch_stop()

    @property
    def path(self):
        """<run_dir>/last.pt, or None without a run directory."""
        return os.path.join(self.run_dir, LAST) if self.run_dir else None

    # ---- saving

    def state_dict(self, epoch=None, step=None, **extra):
        """The dict save() writes: plain tensors, state_dicts and numbers."""
        for key in list(self.extra) + list(extra):
            if key in KEYS:
                raise ValueError(f"save({key}=...): {key!r} is the state's own key; give the "
                                 "value another name")
        epoch = self.epoch if epoch is None else int(epoch)
        step = (self.step if epoch == self.epoch else 0) if step is None else int(step)
        out = {"dl_plan_state": FORMAT,
               "model_state_dict": _bare(self.model).state_dict(),
               "optimizer_state_dict": self.optimizer.state_dict(),
               "scaler_state_dict": self.scaler.state_dict() if self.scaler is not None else None,
               "scheduler_state_dict": (self.scheduler.state_dict()
                                        if self.scheduler is not None else None),
               "epoch": epoch, "epoch_step": step, "global_step": self.global_step,
               "global_batch": self._global_batch(), "order_seed": self.order_seed,
               "rng_state": _rng_state(getattr(self.loader, "generator", None))}
        out.update(self.extra)
        out.update(extra)
        return out

    def save(self, epoch=None, step=None, *, name=LAST, barrier=False, **extra):
        """Writes the state to <run_dir>/<name> atomically, on rank 0 (other ranks, a probe and a
        run without a run directory write nothing); returns the path written, else None.
        `epoch`, `step`: where a resumed run goes on, epoch `epoch` after `step` of its batches;
        by default where batches() stands (after the batch being trained). At an epoch's end,
        save(epoch + 1). `extra`: the script's own plain values (best_acc=0.91), in the dict
        beside the state. `barrier`: every rank waits until rank 0 has written."""
        from dl_plan import probe as _probe

        from dl_plan import timing as _timing

        written = None
        if self.plan.is_main and self.run_dir and _probe.PROBE.kind is None:
            written = os.path.join(self.run_dir, name)
            began = _timing.CLOCK.phase_begins("checkpoint")
            try:
                write_atomically(self.state_dict(epoch, step, **extra), written)
            finally:
                _timing.CLOCK.phase_ends("checkpoint", began)
                self.save_seconds += _timing.CLOCK.now() - began
        self._last_save = time.perf_counter()
        if barrier:
            self._barrier()
        return written

    def _save_inside_epoch(self):
        """checkpoint_every's write after a step (a resume goes on at the next batch), counted
        apart for the checkpoint-bound prescription."""
        from dl_plan import timing as _timing

        began = time.perf_counter()
        if self.save() is not None:
            _timing.CLOCK.saved_inside_epoch(time.perf_counter() - began)

    # ---- resuming

    def resume(self, resume=None, *, quiet=False):
        """Under --resume (`resume` None: the setting, DL_RESUME=true as dl-launch sets it, or
        `resume = true` in dl.conf), loads <run_dir>/last.pt into the model, optimizer, scaler
        and scheduler and returns the epoch to start at; batches() of that epoch then goes on at
        the next batch. Otherwise (and in a probe) returns 0. A missing last.pt raises PlanError
        (code 66), an unreadable one PlanError (65), each one line naming the file."""
        from dl_plan import probe as _probe
        from dl_plan import setting
        from dl_plan.errors import PlanError

        if resume is None:
            resume = setting("resume", False)
        if not resume or _probe.PROBE.kind is not None:
            return 0
        if not self.run_dir:
            raise PlanError("--resume: no run directory to resume from (DL_RUN_DIR is unset; "
                            "dl-launch sets it to runs/<name>/)", 66)
        path = self.path
        if not os.path.isfile(path):
            raise PlanError(f"--resume: {path} does not exist; expected the last.pt of an earlier "
                            "run, which TrainingState.save() writes (docs/python.md)", 66)
        try:
            ckpt = load(path)
            _bare(self.model).load_state_dict(ckpt["model_state_dict"])
            self.optimizer.load_state_dict(ckpt["optimizer_state_dict"])
            if self.scaler is not None and ckpt.get("scaler_state_dict"):
                self.scaler.load_state_dict(ckpt["scaler_state_dict"])
            if self.scheduler is not None and ckpt.get("scheduler_state_dict"):
                self.scheduler.load_state_dict(ckpt["scheduler_state_dict"])
            epoch = int(ckpt["epoch"])
            # dl-train's last.pt says where it stands under "extra".
            position = ckpt.get("extra") or {}
            step = int(ckpt.get("epoch_step", position.get("position_batches", 0)))
            saved_batch = int(ckpt.get("global_batch", position.get("position_global_batch", 0))
                              or 0)
        except Exception as e:  # noqa: B902 - any unreadable checkpoint is one line
            text = str(e).splitlines()[0] if str(e) else ""
            raise PlanError(f"--resume: {path}: {type(e).__name__}: {text}; expected a last.pt "
                            "written by TrainingState.save() for this model and optimizer",
                            65) from None
        self.loaded = ckpt
        self.global_step = int(ckpt.get("global_step", 0))
        self.order_seed = int(ckpt.get("order_seed", self.order_seed))
        note = ""
        batch = self._global_batch()
        if step and saved_batch and batch and saved_batch != batch:
            # Another global batch (batch size x ranks): the last whole batch of the new size
            # before the position (dl-train's rule); the samples between are trained again.
            samples = step * saved_batch
            step = samples // batch
            note = (f"; another global batch ({batch}, saved with {saved_batch}): "
                    f"{samples - step * batch} sample(s) are trained again")
        self.epoch, self.step = epoch, step
        self._resume_at = (epoch, step)
        # Rank 0's streams: the other ranks keep the ones their seed gave them.
        rng = ckpt.get("rng_state")
        if rng is not None and self.plan.is_main:
            self._rng_pending = rng
            _set_rng_state(rng, getattr(self.loader, "generator", None))
        if self.plan.is_main and not quiet:
            within = f", {step} batch(es) of epoch {epoch + 1} done" if step else ""
            _log(f"resumed {path}: {epoch} epoch(s){within}, step {self.global_step}; going on "
                 f"at epoch {epoch + 1}" + (f", batch {step + 1}" if step else "") + note)
        return epoch

    # ---- the epoch's batches

    def batches(self, epoch, limit=None):
        """The batches of epoch `epoch` of the loader (set_epoch called): the resumed epoch's from
        the position on, the batches before it never loaded; `limit`: at most that many of the
        epoch (counted from its start, the resumed ones included). After each batch's step, a
        stop signal (on any rank) saves the state after that step and ends the process with exit
        code 128 + the signal's number, as dl-train does (check_stop()); when `checkpoint_every`
        says one is due, the state is saved after that step. The loader's iterator is
        made here, not at the first batch (its workers start now, as with iter(loader))."""
        skip = 0
        if self._resume_at is not None and self._resume_at[0] == epoch:
            skip = self._resume_at[1]
        self._resume_at = None
        self.epoch, self.step = epoch, skip
        self.check_stop()  # a signal between epochs (in validation, say): saved here
        if limit and skip >= limit:
            it = iter(())
        else:
            it = self._epoch_iterator(epoch, skip)
        if self._rng_pending is not None:
            # After the iterator exists (which draws from no global stream), before its first
            # batch is loaded: the streams as the interrupted run had them at this point.
            _set_rng_state(self._rng_pending, getattr(self.loader, "generator", None))
            self._rng_pending = None
        return self._steps(epoch, it, limit)

    def _steps(self, epoch, it, limit):
        for batch in it:
            self.step += 1
            self.global_step += 1
            yield batch
            self.check_stop()
            if self.checkpoint_every.due(self.global_step, time.perf_counter() - self._last_save):
                self._save_inside_epoch()
            if limit and self.step >= limit:
                break  # before the next batch is loaded
        self.epoch, self.step = epoch + 1, 0

    def _epoch_iterator(self, epoch, skip):
        import torch
        from torch.utils.data import DataLoader, IterableDataset

        from dl_plan.loading import set_epoch

        loader = self.loader
        set_epoch(loader, epoch)
        if self._order is not None:
            self._order.manual_seed(self.order_seed + epoch)
        generator = getattr(loader, "generator", None)
        if generator is not None:
            self._epoch_generator_state = generator.get_state()
        if skip == 0:
            return iter(loader)
        if isinstance(loader, DataLoader) and not isinstance(loader.dataset, IterableDataset):
            # The epoch's batches of indices, listed as the loader would draw them, and a loader
            # over those after the position: the skipped samples are never read.
            index = loader.batch_sampler if loader.batch_sampler is not None else loader.sampler
            rest = list(index)[skip:]
            kw = dict(num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                      pin_memory=loader.pin_memory, timeout=loader.timeout,
                      worker_init_fn=loader.worker_init_fn,
                      multiprocessing_context=loader.multiprocessing_context,
                      pin_memory_device=getattr(loader, "pin_memory_device", ""))
            if loader.num_workers > 0:
                kw["prefetch_factor"] = loader.prefetch_factor
            if generator is not None:
                # The workers' seeds as the uninterrupted epoch's iterator drew them, from a copy:
                # the loader's own generator goes on as it would have.
                kw["generator"] = torch.Generator().set_state(self._epoch_generator_state)
            if loader.batch_sampler is not None:
                return iter(DataLoader(loader.dataset, batch_sampler=rest, **kw))
            return iter(DataLoader(loader.dataset, sampler=rest, batch_size=None, **kw))
        # Another loader (dl_loader.Loader, an IterableDataset): its batches before the position
        # are read and dropped; the same batches when its order and augmentation are functions of
        # the seed, the epoch and the sample, as dl_loader's are.
        if self.plan.is_main:
            _log(f"epoch {epoch + 1} resumes at batch {skip + 1}: this loader cannot start inside "
                 f"an epoch, so the {skip} batch(es) before are read and dropped")
        it = iter(loader)
        for _ in range(skip):
            if next(it, None) is None:
                break
        return it

    # ---- stopping

    def check_stop(self):
        """Where a stop signal came (on any rank: they agree), saves the state as it stands and
        ends the process with exit code 128 + the signal's number; otherwise returns. batches()
        calls it after each batch; a script with its own loop calls it after each step."""
        signum = self._agree(stop_requested())
        if not signum:
            return
        start = time.perf_counter()
        written = self.save(barrier=True)
        if self.plan.is_main:
            name = signal.Signals(signum).name
            try:
                of = f" of {len(self.loader)}"
            except TypeError:
                of = ""
            where = (f"in epoch {self.epoch + 1} after {self.step}{of} batches "
                     f"(step {self.global_step})")
            _log(f"{name} received {where}: " + (
                f"saved {written} in {time.perf_counter() - start:.2f} s; --resume goes on at "
                "the next batch" if written else "no run directory, nothing saved"))
        raise SystemExit(128 + signum)

    def _agree(self, signum):
        """The largest stop signal any rank has, on every rank: a signal reaches the ranks at
        different steps, and a rank that left alone would leave the others in DDP's all-reduce."""
        if not self.plan.distributed:
            return signum
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            return signum
        device = self.plan.device if dist.get_backend() == "nccl" else "cpu"
        flag = torch.tensor([signum], dtype=torch.int32, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return int(flag.item())

    def _barrier(self):
        if self.plan.distributed:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.barrier()

    def _global_batch(self):
        size = getattr(self.loader, "batch_size", None)
        return int(size) * self.plan.world_size if size else 0
