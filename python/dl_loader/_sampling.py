"""Which samples an epoch goes through on one rank: torch.utils.data.DistributedSampler's exact
rule (the permutation torch.randperm draws from a generator seeded with seed + epoch, padded from
its head to a multiple of the world size, or with drop_last cut to one, every world_size-th index
from the rank), or, where the shares must add up to the whole part (validation, even=False),
every world_size-th index without padding.
One process (world_size 1) gets the permutation itself, as dl-train does."""

import torch


def epoch_indices(n, epoch, *, seed=0, shuffle=True, rank=0, world_size=1, even=True,
                  drop_last=False):
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        order = torch.randperm(n, generator=g).tolist()
    else:
        order = list(range(n))
    if not even:
        return order[rank::world_size]
    if drop_last:
        total = n // world_size * world_size
        return order[rank:total:world_size]
    total = -(-n // world_size) * world_size
    missing = total - n
    if missing and order:
        order += (order * -(-missing // len(order)))[:missing]
    return order[rank:total:world_size]
