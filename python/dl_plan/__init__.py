"""dl_plan: dl-launch's plan for your own PyTorch script, and the probes that let dl-launch measure
it (the data workers, the largest batch that fits). Pure Python over torch.

    import dl_plan
    plan = dl_plan.setup()                   # threads, seed, device, process group if several
    loader = dl_plan.loader(DataLoader(train_set, **plan.dataloader_kwargs(train_set)))
    model = dl_plan.wrap(model.to(plan.device))  # DistributedDataParallel when several ranks
    scaler = plan.grad_scaler()              # enabled for fp16 only
    for batch in loader:
        with dl_plan.step(), plan.autocast():
            ...

Under dl-launch the values are the plan's (DL_* variables, torchrun's RANK family); run alone,
the script gets the defaults dl-launch would apply. docs/python.md says more.
"""

import contextlib
import sys

from dl_plan.loading import dataloader_kwargs, set_epoch
from dl_plan.plan_env import Plan, PlanError, Setting, read_plan, usable_cores
from dl_plan.precision import autocast, grad_scaler
from dl_plan import probe as _probe
from dl_plan._version import __version__
PROTOCOL = _probe.PROTOCOL

__all__ = ["Plan", "PlanError", "Setting", "autocast", "dataloader_kwargs", "grad_scaler",
           "is_main", "loader", "plan", "probing", "set_epoch", "setup", "step", "usable_cores",
           "wrap"]

_plan_cache = None


def plan():
    """The plan, read once from the environment."""
    global _plan_cache
    if _plan_cache is None:
        _plan_cache = read_plan()
    return _plan_cache


def is_main():
    """Rank 0: the process that writes checkpoints, metrics and logs."""
    return plan().is_main


def probing():
    """'loader' or 'step' while dl-launch measures this script, else None."""
    return _probe.PROBE.kind


def setup():
    """Applies the plan to this process and returns it: torch's intra-op threads, the seed, the
    CUDA device and cuDNN's autotuner, and with several ranks the default process group (c10d:
    NCCL on CUDA, Gloo on the CPU; torchrun's MASTER_ADDR/MASTER_PORT rendezvous)."""
    import torch

    p = plan()
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
    """DistributedDataParallel around `model` when several ranks train, else `model`."""
    p = plan()
    if not p.distributed:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[p.device] if p.is_cuda else None)


def loader(data_loader):
    """Returns `data_loader`; in a loader probe, times its batches, answers and ends the script;
    in a step probe, notes its data set's size (and answers at once when the batch asked for is
    larger than the data set: no batch to step on)."""
    if _probe.PROBE.kind == "loader":
        _probe.PROBE.time_loader(data_loader)
    elif _probe.PROBE.kind == "step":
        _probe.PROBE.note_loader(data_loader)
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


def step():
    """Around one training step. In a step probe: times it and measures peak memory, and after a
    few steps (or an out-of-memory) answers and ends the script; otherwise a null context."""
    if _probe.PROBE.kind == "step":
        return _probed_step()
    return contextlib.nullcontext()


def _remember_crash(kind, value, traceback):
    _probe.PROBE.crash = value
    _previous_hook(kind, value, traceback)


_previous_hook = sys.excepthook
if _probe.PROBE.kind is not None:
    sys.excepthook = _remember_crash
