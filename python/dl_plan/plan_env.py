"""The plan a PyTorch script trains with: dl-launch's DL_* variables and torchrun's RANK family,
or, for a script run on its own, the defaults dl-launch would apply (never an error for a missing
variable). Each value says where it came from.

A malformed variable (DL_WORKERS=many) is the caller's mistake, not something to guess around:
it raises PlanError naming the variable and what was expected.
"""

import os
from dataclasses import dataclass, field

PRECISIONS = ("fp32", "fp16", "bf16")
DEFAULT_BATCH_SIZE = 64  # dl-launch's default where nothing was searched or given
DEFAULT_SEED = 42


class PlanError(ValueError):
    """A DL_* or torchrun variable that cannot be read; the message names it."""


@dataclass(frozen=True)
class Setting:
    value: object
    source: str  # "DL_WORKERS", "RANK", "default: usable cores - 2, at least 1", ...


def _int(env, name, minimum):
    raw = env.get(name, "")
    if raw in ("", "auto"):
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise PlanError(f"{name}={raw!r}: expected a whole number >= {minimum} or auto")
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


def _device(env, local_rank):
    raw = env.get("DL_DEVICE", "")
    if raw not in ("", "auto"):
        if not (raw == "cpu" or raw == "cuda" or raw.startswith("cuda:")):
            raise PlanError(f"DL_DEVICE={raw!r}: expected auto, cpu, cuda or cuda:N")
        if raw == "cuda":
            raw = f"cuda:{local_rank}"
        return Setting(raw, "DL_DEVICE")
    if _cuda_available():
        return Setting(f"cuda:{local_rank}", "default: CUDA is available, the LOCAL_RANK-th device")
    return Setting("cpu", "default: no CUDA device visible")


def _precision(env, device):
    raw = env.get("DL_PRECISION", "")
    if raw not in ("", "auto"):
        if raw not in PRECISIONS:
            raise PlanError(f"DL_PRECISION={raw!r}: expected auto, fp32, fp16 or bf16")
        if raw == "fp16" and not device.startswith("cuda"):
            # CPU autocast has bf16 only (PyTorch 1.13), and fp16's loss scaling needs CUDA.
            return Setting("fp32", "DL_PRECISION=fp16 on the CPU: fp32 (CPU autocast is bf16)")
        return Setting(raw, "DL_PRECISION")
    if not device.startswith("cuda"):
        return Setting("fp32", "default: fp32 on the CPU unless asked")
    import torch

    major, _ = torch.cuda.get_device_capability(device)
    if major >= 8:
        return Setting("bf16", f"default: compute capability {major}.x has bf16")
    return Setting("fp16", f"default: compute capability {major}.x: fp16 with a GradScaler")


def _workers(env, cores):
    given = _int(env, "DL_WORKERS", 0)
    if given is not None:
        return Setting(given, "DL_WORKERS")
    # dl-launch's rule of thumb (launcher/plan.cpp) where nothing was measured.
    return Setting(max(1, cores - 2), f"default: {cores} usable cores - 2, at least 1")


def _threads(env, cores, workers):
    given = _int(env, "DL_THREADS", 1)
    if given is not None:
        return Setting(given, "DL_THREADS")
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

    def describe(self):
        """One line a setting, as dl-launch prints its plan: name, value, where it came from."""
        return "\n".join(f"{name:<17}{str(s.value):<12}({s.source})"
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


def read_plan(env=None):
    """The plan from `env` (default: os.environ)."""
    env = os.environ if env is None else env
    s = {}
    s["rank"] = _rank_setting(env, "RANK", 0, 0)
    s["local_rank"] = _rank_setting(env, "LOCAL_RANK", 0, 0)
    s["world_size"] = _rank_setting(env, "WORLD_SIZE", 1, 1)
    s["local_world_size"] = _rank_setting(env, "LOCAL_WORLD_SIZE", 1, 1)
    if s["rank"].value >= s["world_size"].value:
        raise PlanError(f"RANK={s['rank'].value} is not below WORLD_SIZE={s['world_size'].value}")
    s["cores"] = usable_cores(env)
    s["device"] = _device(env, s["local_rank"].value)
    s["precision"] = _precision(env, s["device"].value)
    s["workers"] = _workers(env, s["cores"].value)
    s["threads"] = _threads(env, s["cores"].value, s["workers"].value)
    batch = _int(env, "DL_BATCH_SIZE", 1)
    s["batch_size"] = (Setting(batch, "DL_BATCH_SIZE") if batch is not None else
                       Setting(DEFAULT_BATCH_SIZE, "default: dl-launch's where nothing was searched"))
    seed = _int(env, "DL_SEED", 0)
    s["seed"] = Setting(seed, "DL_SEED") if seed is not None else Setting(DEFAULT_SEED, "default")
    for key, var in (("run_dir", "DL_RUN_DIR"), ("data", "DL_DATA"), ("workspace", "DL_WORKSPACE")):
        raw = env.get(var, "")
        s[key] = Setting(raw, var) if raw else Setting(None, f"default: {var} unset")
    return Plan(s)
