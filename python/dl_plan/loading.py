"""The plan as DataLoader keyword arguments: workers, pinned memory on CUDA, prefetching,
persistent workers, a seeded generator and worker_init_fn, and a DistributedSampler when several
processes train (each rank its own share of the samples).

    loader = DataLoader(train_set, **plan.dataloader_kwargs(train_set))
    for epoch in range(epochs):
        dl_plan.set_epoch(loader, epoch)   # a new shuffle each epoch under DistributedSampler
"""

import functools
import os
import random

PREFETCH_FACTOR = 2  # PyTorch's default: two batches a worker in flight


def seed_worker(base_seed, own_process_group, worker_id):
    """In each DataLoader worker: numpy's and random's generators seeded from the worker's torch
    seed (which PyTorch derives from the loader's generator and the worker id), as PyTorch's
    reproducibility notes do; and, under dl-launch, a process group of its own, so that the stop
    signal dl-launch forwards to the program's group reaches the main process only (it finishes
    its step and saves; a worker killed by the signal would fail it at a random point). Workers
    still end with their parent: PyTorch's workers watch it. A probe's workers stay in its group:
    a probe saves nothing, and dl-launch stopped kills the probe's group at once."""
    import torch

    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass
    if own_process_group:
        os.setpgid(0, 0)
    del base_seed, worker_id  # in the partial for the record; torch's seed already holds them


def dataloader_kwargs(plan, dataset, train=True, **overrides):
    """batch_size, num_workers, pin_memory, prefetch_factor, persistent_workers, drop_last,
    shuffle or sampler, generator and worker_init_fn for `dataset`, as the plan says. A training
    loader shuffles and drops the last partial batch (a steady batch size for batch norm and the
    step the batch search measured); a validation loader keeps every sample in order. `overrides`
    replace any of them; a num_workers given there decides what comes with workers
    (prefetch_factor, persistent_workers, worker_init_fn), as the plan's would."""
    import torch

    workers = overrides.get("num_workers", plan.workers)
    kw = dict(batch_size=plan.batch_size, num_workers=workers, pin_memory=plan.is_cuda,
              drop_last=train)
    if workers > 0:
        # PyTorch 1.13 refuses a prefetch_factor without workers, even the default.
        kw["prefetch_factor"] = PREFETCH_FACTOR
        kw["persistent_workers"] = True
        own_group = bool(os.environ.get("DL_RUN_DIR")) and not os.environ.get("DL_PROBE")
        kw["worker_init_fn"] = functools.partial(seed_worker, plan.seed, own_group)
    # Per rank: the workers' seeds differ between ranks; the shuffle (below) does not.
    kw["generator"] = torch.Generator().manual_seed(plan.seed + plan.rank)
    if plan.distributed:
        from torch.utils.data.distributed import DistributedSampler

        kw["sampler"] = DistributedSampler(dataset, num_replicas=plan.world_size, rank=plan.rank,
                                           shuffle=train, seed=plan.seed, drop_last=train)
    else:
        kw["shuffle"] = train
    kw.update(overrides)
    return kw


def set_epoch(loader, epoch):
    """The epoch's shuffle under a DistributedSampler (every rank the same permutation, each its
    own slice), or of a loader that keeps its own epoch (dl_loader.Loader); nothing for other
    samplers."""
    if callable(getattr(loader, "set_epoch", None)):
        loader.set_epoch(epoch)
        return
    sampler = getattr(loader, "sampler", None)
    if hasattr(sampler, "set_epoch"):
        sampler.set_epoch(epoch)
