"""The plan a PyTorch script trains with: dl-launch's DL_* variables and torchrun's RANK family,
or, for a script run on its own, the defaults dl-launch would apply (never an error for a missing
variable). Each value says where it came from.

Sources, a later one winning: the config file (dl.conf, dl_plan.config) < DL_* variables < what
the script was given (its own flags, `dl_plan.setup(args)`) < in a probe, the value dl-launch is
measuring (a loader probe's DL_WORKERS, a step probe's DL_BATCH_SIZE), so that a script's
`--workers 2` cannot make a probe measure another count than the one asked for.

A malformed value (DL_WORKERS=many) is the caller's mistake, not something to guess around:
it raises PlanError naming where it came from and what was expected.
"""

import os
from dataclasses import dataclass, field

from dl_plan.config import read_config
from dl_plan.errors import PlanError

PRECISIONS = ("fp32", "fp16", "bf16")
MAX_BATCH = 1 << 24  # dl-launch's bound on a batch setting (core/setting_rules.cpp)
DEFAULT_BATCH_SIZE = 64  # dl-launch's default where nothing was searched or given
DEFAULT_SEED = 42
# The plan's values a script may be given, their variables and config keys.
GIVEN = {"workers": "DL_WORKERS", "threads": "DL_THREADS", "batch_size": "DL_BATCH_SIZE",
         "micro_batch": "DL_MICRO_BATCH",
         "device": "DL_DEVICE", "precision": "DL_PRECISION", "seed": "DL_SEED",
         "data": "DL_DATA", "run_dir": "DL_RUN_DIR", "lr_scaling": "DL_LR_SCALING",
         "reference_batch": "DL_REFERENCE_BATCH"}
CONFIG_KEYS = {"DL_WORKERS": "workers", "DL_THREADS": "threads", "DL_BATCH_SIZE": "batch-size",
               "DL_MICRO_BATCH": "micro-batch",
               "DL_DEVICE": "device", "DL_PRECISION": "precision", "DL_SEED": "seed",
               "DL_DATA": "data", "DL_LR_SCALING": "lr-scaling",
               "DL_REFERENCE_BATCH": "reference-batch"}
PROBED = {"loader": "DL_WORKERS", "step": "DL_BATCH_SIZE"}


@dataclass(frozen=True)
class Setting:
    value: object
    source: str  # "DL_WORKERS", "RANK", "default: usable cores - 2, at least 1", ...


class _Sources:
    """Where a variable's raw value comes from: `get(var)` is (raw, source), ("", None) unset."""

    def __init__(self, env, given=None, config=None):
        self.env = env
        self.config = config
        self.given = {}
        probed = PROBED.get(env.get("DL_PROBE", ""))
        for name, (raw, source) in (given or {}).items():
            if name not in GIVEN:
                raise PlanError(f"{source}: {name!r} is not a setting of the plan; expected one "
                                f"of {', '.join(GIVEN)}")
            if raw is not None and GIVEN[name] != probed:
                self.given[GIVEN[name]] = (str(raw), source)

    def get(self, var):
        if var in self.given:
            return self.given[var]
        raw = self.env.get(var, "")
        if raw != "":
            return raw, var
        key = CONFIG_KEYS.get(var)
        if key is not None and self.config is not None and key in self.config.values:
            return self.config.values[key]
        return "", None


def _int(src, name, minimum):
    raw, source = src.get(name) if isinstance(src, _Sources) else (src.get(name, ""), name)
    if raw in ("", "auto"):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise PlanError(f"{source}={raw!r}: expected a whole number >= {minimum} or auto")
    return value


def usable_cores(env=None):
    """DL_CORES (dl-launch: this process's share of the affinity mask and cgroup quota), else the
    affinity mask."""
    env = os.environ if env is None else env
    given = _int(env, "DL_CORES", 1)
    if given is not None:
        return Setting(given, "DL_CORES")
    return Setting(max(1, len(os.sched_getaffinity(0))), "affinity mask")


def _cuda_available():
    import torch

    return torch.cuda.is_available()


def _device(src, local_rank):
    raw, source = src.get("DL_DEVICE")
    if raw not in ("", "auto"):
        if not (raw == "cpu" or raw == "cuda" or raw.startswith("cuda:")):
            raise PlanError(f"{source}={raw!r}: expected auto, cpu, cuda or cuda:N")
        if raw == "cuda":
            raw = f"cuda:{local_rank}"
        if raw != "cpu" and not _cuda_available():
            raise PlanError(f"{source}={raw}: this PyTorch sees no CUDA device; expected cpu or "
                            "auto", 69)
        return Setting(raw, source)
    if _cuda_available():
        return Setting(f"cuda:{local_rank}", "default: CUDA is available, the LOCAL_RANK-th device")
    return Setting("cpu", "default: no CUDA device visible")


def _precision(src, device):
    raw, source = src.get("DL_PRECISION")
    if raw not in ("", "auto"):
        if raw not in PRECISIONS:
            raise PlanError(f"{source}={raw!r}: expected auto, fp32, fp16 or bf16")
        if raw == "fp16" and not device.startswith("cuda"):
            # CPU autocast has bf16 only (PyTorch 1.13), and fp16's loss scaling needs CUDA.
            return Setting("fp32", f"{source}=fp16 on the CPU: fp32 (CPU autocast is bf16)")
        return Setting(raw, source)
    if not device.startswith("cuda"):
        return Setting("fp32", "default: fp32 on the CPU unless asked")
    import torch

    major, _ = torch.cuda.get_device_capability(device)
    if major >= 8:
        return Setting("bf16", f"default: compute capability {major}.x has bf16")
    return Setting("fp16", f"default: compute capability {major}.x: fp16 with a GradScaler")


def _workers(src, cores):
    given = _int(src, "DL_WORKERS", 0)
    if given is not None:
        return Setting(given, src.get("DL_WORKERS")[1])
    # dl-launch's rule of thumb (launcher/plan.cpp) where nothing was measured.
    return Setting(max(1, cores - 2), f"default: {cores} usable cores - 2, at least 1")


def _threads(src, cores, workers):
    given = _int(src, "DL_THREADS", 1)
    if given is not None:
        return Setting(given, src.get("DL_THREADS")[1])
    if workers == 0:
        return Setting(cores, f"default: {cores} usable cores, no workers")
    return Setting(max(1, cores - workers),
                   f"default: {cores} usable cores - {workers} worker(s), at least 1")


def _rank_setting(env, name, default, minimum):
    value = _int(env, name, minimum)
    if value is None:
        return Setting(default, f"default: {name} unset, one process")
    return Setting(value, name)


@dataclass(frozen=True)
class Plan:
    """What the script trains with. `settings` holds every value with its source."""

    settings: dict = field(repr=False)

    def __getattr__(self, name):
        if name == "settings":  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        try:
            return self.settings[name].value
        except KeyError:
            raise AttributeError(name) from None

    def source(self, name):
        return self.settings[name].source

    @property
    def is_cuda(self):
        return self.device.startswith("cuda")

    @property
    def distributed(self):
        return self.world_size > 1

    @property
    def is_main(self):
        """Rank 0: the one process that writes checkpoints, metrics and logs."""
        return self.rank == 0

    @property
    def accumulation_steps(self):
        """Micro-batches per optimizer step (1: the batch runs whole)."""
        return -(-self.batch_size // self.micro_batch)

    def micro_batches(self, *tensors, model=None):
        """Splits a batch (tensors sharing their first dimension) into the plan's micro-batches:
        yields (*pieces, weight), weight being the piece's share of the batch, so that the
        weighted losses' gradients, accumulated by backward(), are the whole batch's mean:

            for x, y, weight in plan.micro_batches(images, labels, model=model):
                loss = criterion(model(x), y) * weight
                scaler.scale(loss).backward()
            scaler.step(optimizer)

        With a DistributedDataParallel `model`, the pieces before the last run under its
        no_sync(): the ranks average their gradients once a step, not once a piece."""
        import contextlib

        if not tensors:
            raise PlanError("micro_batches: expected at least one tensor")
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise PlanError("micro_batches: expected tensors of the same length, got "
                            + ", ".join(str(len(t)) for t in tensors))
        size = max(1, self.micro_batch)
        starts = list(range(0, n, size))
        for i, start in enumerate(starts):
            last = i == len(starts) - 1
            quiet = (model.no_sync() if model is not None and not last and hasattr(model, "no_sync")
                     else contextlib.nullcontext())
            with quiet:
                pieces = tuple(t[start:start + size] for t in tensors)
                yield (*pieces, len(pieces[0]) / n)

    def scaled_lr(self, lr):
        """`lr`, tuned for `reference_batch` samples a step, at the batch each optimizer step
        averages over here (`global_batch`), by `lr_scaling`: linear multiplies it by
        global/reference, sqrt by that ratio's square root, none keeps it. Without a reference
        batch, `lr` is one rank's batch's rate (the rules scale with the world size), or, under
        dl-launch --global-batch, the kept batch's (nothing scales). dl-launch and dl-train
        apply the same rule (core/lr_scaling.h)."""
        import math

        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) \
                or lr <= 0:
            raise PlanError(f"scaled_lr: expected a learning rate above 0, got {lr!r}")
        rule = self.lr_scaling
        if rule == "none":
            return lr
        reference = self.reference_batch
        if reference is None:
            reference = self.global_batch if self.source("global_batch") == "DL_GLOBAL_BATCH" \
                else self.batch_size
        ratio = self.global_batch / reference
        return lr * (ratio if rule == "linear" else ratio ** 0.5)

    def describe(self):
        """One line a setting, as dl-launch prints its plan: name, value, where it came from."""
        return "\n".join(f"{name:<17}{str(s.value):<12} ({s.source})"
                         for name, s in self.settings.items())

    # The recipes (dl_plan.loading, dl_plan.precision) as methods, for the fewest lines.
    def dataloader_kwargs(self, dataset, train=True, **overrides):
        from dl_plan.loading import dataloader_kwargs

        return dataloader_kwargs(self, dataset, train=train, **overrides)

    def autocast(self):
        from dl_plan.precision import autocast

        return autocast(self)

    def grad_scaler(self, **options):
        from dl_plan.precision import grad_scaler

        return grad_scaler(self, **options)


def read_plan(env=None, given=None):
    """The plan from `env` (default: os.environ), the config file it points to, and `given`:
    {name: (value or None, source)} for what the script was given (None: not given)."""
    env = os.environ if env is None else env
    src = _Sources(env, given, read_config(env))
    s = {}
    s["rank"] = _rank_setting(env, "RANK", 0, 0)
    s["local_rank"] = _rank_setting(env, "LOCAL_RANK", 0, 0)
    s["world_size"] = _rank_setting(env, "WORLD_SIZE", 1, 1)
    s["local_world_size"] = _rank_setting(env, "LOCAL_WORLD_SIZE", 1, 1)
    if s["rank"].value >= s["world_size"].value:
        raise PlanError(f"RANK={s['rank'].value} is not below WORLD_SIZE={s['world_size'].value}")
    s["cores"] = usable_cores(env)
    s["device"] = _device(src, s["local_rank"].value)
    s["precision"] = _precision(src, s["device"].value)
    s["workers"] = _workers(src, s["cores"].value)
    s["threads"] = _threads(src, s["cores"].value, s["workers"].value)
    batch = _int(src, "DL_BATCH_SIZE", 1)
    s["batch_size"] = (
        Setting(batch, src.get("DL_BATCH_SIZE")[1]) if batch is not None
        else Setting(DEFAULT_BATCH_SIZE, "default: dl-launch's where nothing was searched"))
    # dl-launch --global-batch: a batch runs in pieces of at most DL_MICRO_BATCH samples.
    micro = _int(src, "DL_MICRO_BATCH", 0)
    s["micro_batch"] = (
        Setting(min(micro, s["batch_size"].value), src.get("DL_MICRO_BATCH")[1]) if micro
        else Setting(s["batch_size"].value, "default: the whole batch at once"))
    # The batch each optimizer step averages over, and the learning-rate rule for it.
    kept = _int(env, "DL_GLOBAL_BATCH", 1)
    world = s["world_size"].value
    s["global_batch"] = (
        Setting(kept, "DL_GLOBAL_BATCH") if kept is not None
        else Setting(s["batch_size"].value * world,
                     f"batch_size x {world} rank(s)" if world > 1 else "batch_size, one rank"))
    rule, source = src.get("DL_LR_SCALING")
    if rule not in ("", "none", "linear", "sqrt"):
        raise PlanError(f"{source}={rule!r}: expected none, linear or sqrt")
    s["lr_scaling"] = Setting(rule, source) if rule else Setting("none", "default")
    raw, source = src.get("DL_REFERENCE_BATCH")
    if raw == "":
        s["reference_batch"] = Setting(None, "default: one rank's batch")
    else:
        try:
            reference = int(raw)
        except ValueError:
            reference = 0
        if not 1 <= reference <= MAX_BATCH:
            raise PlanError(f"{source}={raw!r}: expected a whole number from 1 to {MAX_BATCH}")
        s["reference_batch"] = Setting(reference, source)
        if s["lr_scaling"].value == "none":
            # As dl-launch and dl-train say it: a reference without a rule changes nothing.
            import sys

            print(f"dl_plan: warning: {source} {reference} is not used: --lr-scaling none keeps "
                  "the learning rate whatever the batch; expected --lr-scaling linear or sqrt "
                  "with it", file=sys.stderr)
    seed = _int(src, "DL_SEED", 0)
    s["seed"] = (Setting(seed, src.get("DL_SEED")[1]) if seed is not None
                 else Setting(DEFAULT_SEED, "default"))
    for key, var in (("run_dir", "DL_RUN_DIR"), ("data", "DL_DATA")):
        raw, source = src.get(var)
        s[key] = Setting(raw, source) if raw else Setting(None, f"default: {var} unset")
    raw = env.get("DL_WORKSPACE", "")
    s["workspace"] = (Setting(raw, "DL_WORKSPACE") if raw
                      else Setting(None, "default: DL_WORKSPACE unset"))
    return Plan(s)
