"""Whether a data-bound script's samples would load cheaper through dl_loader (dl-train's
pipeline: each JPEG decoded only over its crop, at the crop's scale), measured on the script's
own files: a few samples through its dataset's __getitem__ (PIL and torchvision's transforms, as
its DataLoader loads them) against the same folder through dl_loader on the calling thread
(workers=0), each after a warm-up, so both read from the page cache. For a dataset that lists
its files (torchvision's ImageFolder and DatasetFolder: .root and .samples; a Subset of one) and
outputs square images; anything else, or no dl_loader to import, measures nothing.
"""

import time

FILES = 16  # timed per side, after WARM_UP: about 0.1 s each on 900 px photos
WARM_UP = 2


class Measured:
    """Milliseconds a sample: `own` through the dataset, `dl` through dl_loader, on `files`."""

    def __init__(self, own_ms, dl_ms, files):
        self.own_ms, self.dl_ms, self.files = own_ms, dl_ms, files


def _per_sample(load, n):
    for i in range(WARM_UP):
        load(i)
    start = time.perf_counter()
    for i in range(WARM_UP, WARM_UP + n):
        load(i)
    return 1000.0 * (time.perf_counter() - start) / n


def measure(dataset, files=FILES):
    """Measured for `dataset`, or None where it cannot be compared."""
    from torch.utils.data import Subset

    # A held-out split (torch's Subset, nested or not): its samples' indices in the folder.
    base, index = dataset, None
    while isinstance(base, Subset):
        outer = list(base.indices)
        index = outer if index is None else [outer[i] for i in index]
        base = base.dataset
    samples = getattr(base, "samples", None)
    root = getattr(base, "root", None)
    if not isinstance(samples, list) or not isinstance(root, str):
        return None
    size = len(samples) if index is None else len(index)
    if size < 4:
        return None
    n = min(files, size - WARM_UP)
    files_used = list(range(WARM_UP + n)) if index is None else index[:WARM_UP + n]
    try:
        import dl_loader

        shape = tuple(dataset[0][0].shape)
        if len(shape) != 3 or shape[1] != shape[2]:
            return None
        own = _per_sample(lambda i: dataset[i], n)
        # The same files in the same (sorted) order; a batch of one, so each is one decode.
        loader = dl_loader.Loader(root, 1, train=True, shuffle=False, workers=0,
                                  image_size=shape[1], indices=files_used,
                                  pin_memory=False)
        it = iter(loader)
        dl = _per_sample(lambda i: next(it), n)
        del it, loader
    except Exception:  # noqa: BLE001 - no dl_loader, a folder it reads otherwise: no figure
        return None
    return Measured(own, dl, n)
