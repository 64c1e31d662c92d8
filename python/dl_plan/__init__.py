"""dl_plan: dl-launch's plan for your own PyTorch script, and the probes that let dl-launch measure
it (the data workers, the largest batch that fits). Pure Python over torch.

    import dl_plan
    plan = dl_plan.setup()                   # threads, seed, device, process group if several
                                             # (setup(args): the script's --workers, ... win)
    loader = dl_plan.loader(DataLoader(train_set, **plan.dataloader_kwargs(train_set)))
    model = dl_plan.wrap(model.to(plan.device))  # DistributedDataParallel when several ranks
    scaler = plan.grad_scaler()              # enabled for fp16 only
    for batch in loader:
        with dl_plan.step(), plan.autocast():
            ...

To be stopped and resumed (dl_plan.resume): a TrainingState saves last.pt, goes on at the next
batch under --resume, and ends after the step in progress on a stop signal:

    state = dl_plan.TrainingState(model, optimizer, loader, scaler=scaler, scheduler=scheduler)
    for epoch in range(state.resume(), epochs):
        for batch in state.batches(epoch):
            ...
        state.save(epoch + 1)

Under dl-launch the values are the plan's (DL_* variables, torchrun's RANK family); run alone,
the script gets the defaults dl-launch would apply, and the workspace's dl.conf as dl-launch
reads it (`dl_plan.setting("epochs", 10)` for the script's own settings). docs/python.md says
more.
"""

import contextlib
import sys

from dl_plan.config import read_config, typed
from dl_plan.errors import PlanError
from dl_plan.loading import dataloader_kwargs, set_epoch
from dl_plan.plan_env import GIVEN, Plan, Setting, read_plan, usable_cores
from dl_plan.precision import autocast, grad_scaler
from dl_plan.resume import TrainingState, catch_stop, stop_requested
from dl_plan import checkpoint_every  # noqa: F401 - dl_plan.checkpoint_every.parse
from dl_plan import probe as _probe
from dl_plan import timing as _timing
from dl_plan._version import __version__
PROTOCOL = _probe.PROTOCOL

__all__ = ["Plan", "PlanError", "Setting", "TrainingState", "autocast", "catch_stop", "config",
           "dataloader_kwargs", "grad_scaler", "is_main", "loader", "phase", "plan", "probing",
           "set_epoch", "setting", "setup", "step", "stop_requested", "time_report",
           "usable_cores", "wrap"]

_plan_cache = None
_config_cache = None


def _given(args, given):
    """{name: (value, source)} from an argparse Namespace (its --workers, --batch-size, ... that
    are not None) and keyword arguments (source "given by the script")."""
    out = {}
    for name in GIVEN:
        value = getattr(args, name, None) if args is not None else None
        if value is not None:
            out[name] = (value, "--" + name.replace("_", "-"))
    for name, value in given.items():
        if value is not None:
            out[name] = (value, f"{name} given by the script")
        elif name not in GIVEN:
            out[name] = (None, name)  # read_plan names the unknown one
    return out


def plan(args=None, **given):
    """The plan, read once from the environment and the config file. The first call may give
    values that win over both: an argparse Namespace whose workers, threads, batch_size, device,
    precision, seed, data or run_dir are not None (its flags), or those names as keywords. A
    later call that gives values reads the plan again with them."""
    global _plan_cache
    chosen = _given(args, given)
    if _plan_cache is None or chosen:
        _plan_cache = read_plan(given=chosen)
    return _plan_cache


def config():
    """The config file (dl_plan.config.Config: `path`, `values`), read once."""
    global _config_cache
    if _config_cache is None:
        _config_cache = read_config()
    return _config_cache


def setting(key, default, given=None):
    """The script's own setting `key` (dl-launch's spelling: "epochs", "weight-decay"): `given`
    when not None (its flag), else DL_<KEY>, else the config file's line, else `default`; typed
    as `default` (int, float, bool, str). A value that is not of that type raises PlanError
    naming where it came from."""
    if given is not None:
        return given
    import os

    found = config().raw(key, os.environ)
    if found is None:
        return default
    return typed(found[0], found[1], default)


def is_main():
    """Rank 0: the process that writes checkpoints, metrics and logs."""
    return plan().is_main


def probing():
    """'loader' or 'step' while dl-launch measures this script, else None."""
    return _probe.PROBE.kind


def setup(args=None, **given):
    """Applies the plan (plan(args, **given)) to this process and returns it: torch's intra-op
    threads, the seed, the CUDA device and cuDNN's autotuner, and with several ranks the default
    process group (c10d: NCCL on CUDA, Gloo on the CPU; torchrun's MASTER_ADDR/MASTER_PORT
    rendezvous)."""
    import torch

    p = plan(args, **given)
    torch.set_num_threads(p.threads)
    torch.manual_seed(p.seed)
    if p.is_cuda:
        torch.cuda.set_device(torch.device(p.device))
        torch.backends.cudnn.benchmark = True
    if p.distributed:
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if p.is_cuda else "gloo", init_method="env://",
                                    rank=p.rank, world_size=p.world_size)
    return p


def wrap(model):
    """DistributedDataParallel around `model` when several ranks train, else `model`. In a step
    probe the model is also run once in evaluation after the timed steps (probe.py)."""
    _probe.PROBE.note_model(model)
    p = plan()
    if not p.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[p.device] if p.is_cuda else None)


def loader(data_loader):
    """Returns `data_loader`; in a loader probe, times its batches, answers and ends the script;
    in a step probe, notes its data set's size (and answers at once when the batch asked for is
    larger than the data set: no batch to step on)."""
    global _loader_workers, _loader_dataset
    if _probe.PROBE.kind == "loader":
        _probe.PROBE.time_loader(data_loader)
    elif _probe.PROBE.kind == "step":
        _probe.PROBE.note_loader(data_loader)
    _loader_workers = getattr(data_loader, "num_workers", _loader_workers)
    _loader_dataset = getattr(data_loader, "dataset", None)
    return data_loader


@contextlib.contextmanager
def _probed_step():
    _probe.PROBE.step_begins()
    try:
        yield
    except BaseException as e:  # noqa: B902 - an out-of-memory is the step probe's answer
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        _probe.PROBE.step_ends(e)
        raise
    _probe.PROBE.step_ends(None)


_timed = None  # whether steps are timed: the time-breakdown setting, read at the first step


@contextlib.contextmanager
def _timed_step():
    _timing.CLOCK.step_begins()
    try:
        yield
    finally:
        _timing.CLOCK.step_ends()


def step():
    """Around one training step. In a step probe: times it and measures peak memory, and after a
    few steps (or an out-of-memory) answers and ends the script; otherwise it times the step for
    the breakdown of where the time goes (dl_plan.timing; off with time-breakdown = false)."""
    global _timed
    if _probe.PROBE.kind == "step":
        return _probed_step()
    if _timed is None:
        _timed = bool(setting("time-breakdown", True))
    return _timed_step() if _timed else contextlib.nullcontext()


@contextlib.contextmanager
def phase(name):
    """Marks a part of the run that is not a training step, for the time breakdown: "eval",
    "checkpoint", "copy", "optimizer" or "exchange" (another name raises PlanError)."""
    began = _timing.CLOCK.phase_begins(name)
    try:
        yield
    finally:
        _timing.CLOCK.phase_ends(name, began)


_loader_workers = None  # the last DataLoader given to loader(): its num_workers
_loader_dataset = None  # and its dataset
_cheaper = []  # what dl_loader would give on that dataset, measured once: [Measured or None]


def _measure_cheaper():
    if not _cheaper:
        from dl_plan import cheaper_loading

        _cheaper.append(cheaper_loading.measure(_loader_dataset)
                        if _loader_dataset is not None else None)
    return _cheaper[0]


def time_report():
    """The table, verdict and prescriptions of where the time went so far ("" before any step
    timed), for the script to print at its end: `print(dl_plan.time_report(), file=sys.stderr)`.
    The cores are the usable ones, the workers the DataLoader's given to loader() (else the
    plan's), the threads torch's; a data-bound run over an image folder also times a few of its
    files through dl_loader (dl_plan.cheaper_loading), once."""
    import torch

    workers = _loader_workers if isinstance(_loader_workers, int) else plan().workers
    return _timing.CLOCK.report(usable_cores().value, workers, torch.get_num_threads(),
                                _measure_cheaper)


def _remember_crash(kind, value, traceback):
    _probe.PROBE.crash = value
    _previous_hook(kind, value, traceback)


_previous_hook = sys.excepthook
if _probe.PROBE.kind is not None:
    sys.excepthook = _remember_crash
