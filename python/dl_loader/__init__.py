"""dl_loader: dl-train's C++ data pipeline as the loader of your own PyTorch script.

    import dl_loader
    train = dl_loader.Loader("data/train", batch_size=64, shuffle=True, workers=4)
    for images, labels in train:      # float32 NCHW, normalised; int64 labels
        ...

It reads what dl-train reads (an ImageFolder tree, a CSV manifest, an MNIST/Fashion-MNIST IDX or
CIFAR-10 directory), decodes JPEGs crop-only in threads (no worker processes, no pickling),
augments as torchvision's RandomResizedCrop + RandomHorizontalFlip (train=True) or resizes and
centre-crops (train=False), and hands batches over without a copy. Bad samples are skipped and
counted by reason, as dl-train does. Under dl-launch the workers, seed, rank and world size are
the plan's (dl_plan), run alone the defaults dl-launch would apply. docs/python.md says more.
"""

import collections
import logging
import os

import torch

try:
    from dl_loader import _core
except ImportError as error:  # the Python files without the compiled module
    raise ImportError(
        "dl_loader's compiled module (_core) is missing beside these files: install it "
        "(bash env/demo.sh or env/test.sh build and install it for /usr/bin/python3), use "
        "the build's copy (PYTHONPATH=build/<preset>/python after env/build.sh <preset>) or "
        f"the image's dl environment ({error})") from None

from dl_loader._sampling import epoch_indices

__all__ = ["DataError", "Loader", "SKIP_REASONS", "SplitError"]
__version__ = "0.1.0"

DataError = _core.DataError  # the data is there but malformed (dl-train's exit 65)
SplitError = _core.SplitError  # the data set has no such part (split="val" without val/)
DataError.__module__ = SplitError.__module__ = __name__
# Why a sample is skipped, as dl-train counts them.
SKIP_REASONS = ("unreadable", "empty", "not an image", "too many pixels", "undecodable",
                "cut short")
# dl-train's --max-image-pixels default: larger images are refused from their header.
DEFAULT_MAX_PIXELS = 178_956_970

_log = logging.getLogger("dl_loader")


def _plan():
    """dl-launch's plan where dl_plan is importable (it applies dl-launch's defaults when run
    alone), else None."""
    try:
        import dl_plan
    except ImportError:
        return None
    return dl_plan.plan()


def _default_workers():
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, cores - 2)  # dl-launch's rule of thumb where nothing was measured


def _cuda_runtime():
    """The path of the CUDA runtime library torch loaded, or "" (then no pinned pool)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith("libcudart.so"):
                    return path
    except OSError:
        pass
    return ""


class Loader:
    """Batches of (images, labels) from a data set dl-train reads.

    data: an ImageFolder tree (class folders, or train/ and val/ of them), a .csv manifest, an
    IDX or CIFAR-10 directory, or WebDataset shards (a brace pattern, a folder of .tar files, a
    .shards list; local, file://, http(s):// or s3://). split: "train" or "val" (a folder's val/, the IDX or CIFAR test
    files). train: augment (RandomResizedCrop(scale, ratio) + flip, image files only) and shuffle;
    False resizes to image_size / crop_fraction and centre-crops. indices: the samples to use (a
    held-out part, a Subset's indices), or a function of the part's size that returns them.
    sampler: anything iterable over sample indices with the
    same length every epoch (torch's DistributedSampler, say; its set_epoch is called); by default
    rank r of world_size takes DistributedSampler(shuffle=shuffle, seed=seed,
    drop_last=drop_last)'s share (train) or every world_size-th sample (train=False, no padding,
    so the ranks' shares add up to the whole part). drop_last also drops the short last batch.
    Shards without indices or a sampler are read as WebDataset reads them: the shards' order
    shuffled per epoch, each rank a contiguous run of that stream, mixed in a shuffle buffer of
    shuffle_buffer samples (0: none); read_ahead_mb bounds the memory remote shards are
    downloaded ahead into.

    dtype: torch.float32 (normalised with mean/std: ImageNet's for image files, measured for IDX
    and CIFAR) or torch.uint8 (the decoded bytes, without a copy). channels_last: NHWC memory.
    pin_memory: page-locked batches for non_blocking copies (default: where CUDA is available).
    scaled_decode: JPEGs decoded at the smallest scale M/8 that keeps the crop (validation: the
    resize) at least image_size, as DALI and FFCV decode; False decodes at full size, as PIL does
    (torchvision's pixels exactly, slower on large photos). decode_scales counts them by M.
    jpeg_index_mb: memory for where each JPEG's Huffman decoding can resume, recorded by the
    first epoch, so that later epochs' crops skip the rows above and the columns beside them (the
    same pixels, about 40% less decoding on photos; jpeg_index_bytes is what it holds); 0 for none.
    """

    def __init__(self, data, batch_size=None, *, split="train", train=True, shuffle=None,
                 workers=None, seed=None, drop_last=False, image_size=None, indices=None,
                 sampler=None, rank=None, world_size=None, dtype=torch.float32, mean=None,
                 std=None, channels_last=False, pin_memory=None, prefetch=2,
                 max_bad_fraction=0.01, max_pixels=DEFAULT_MAX_PIXELS, scale=(0.08, 1.0),
                 ratio=(3.0 / 4.0, 4.0 / 3.0), flip=0.5, crop_fraction=0.875,
                 scaled_decode=True, shuffle_buffer=2000, read_ahead_mb=1024,
                 jpeg_index_mb=512):
        plan = _plan()
        self.data = os.fspath(data)
        self.batch_size = _positive("batch_size", batch_size if batch_size is not None
                                    else (plan.batch_size if plan else 64))
        self.workers = _at_least("workers", workers if workers is not None
                                 else (plan.workers if plan else _default_workers()), 0)
        self.seed = _at_least("seed", seed if seed is not None else (plan.seed if plan else 0), 0)
        self.rank = _at_least("rank", rank if rank is not None else (plan.rank if plan else 0), 0)
        self.world_size = _positive("world_size", world_size if world_size is not None
                                    else (plan.world_size if plan else 1))
        if self.rank >= self.world_size:
            raise ValueError(f"rank {self.rank}: expected a rank below world_size "
                             f"{self.world_size}")
        if dtype not in (torch.float32, torch.uint8):
            raise ValueError(f"dtype {dtype}: expected torch.float32 or torch.uint8")
        if not 0.0 <= max_bad_fraction <= 1.0:
            raise ValueError(f"max_bad_fraction {max_bad_fraction}: expected a fraction in "
                             "[0, 1]")
        self.train = bool(train)
        self.shuffle = self.train if shuffle is None else bool(shuffle)
        self.drop_last = bool(drop_last)
        self.dtype = dtype
        self.channels_last = bool(channels_last)
        self.max_bad_fraction = float(max_bad_fraction)
        self.indices = None
        self.sampler = sampler
        self.shuffle_buffer = _at_least("shuffle_buffer", shuffle_buffer, 0)
        self._prefetch = prefetch
        self._epoch = 0
        self._generation = 0
        self.skipped = dict.fromkeys(SKIP_REASONS, 0)  # the last epoch's, by reason
        self.samples_seen = 0  # the last epoch's samples returned

        if pin_memory is None:
            pin_memory = torch.cuda.is_available()
        self.pin_memory = bool(pin_memory)
        cudart = ""
        if self.pin_memory:
            torch.cuda.init()  # loads the CUDA runtime whose allocator the pool uses
            cudart = _cuda_runtime()
        # "pool": the loader's buffers are page-locked; "copy": each batch is pinned by torch
        # (a copy: no CUDA runtime library to take cudaHostAlloc from); "off".
        self.pinning = "pool" if cudart else ("copy" if self.pin_memory else "off")
        # A pinned block goes back to the pool when the last tensor over it is gone, and a worker
        # may refill it at once, while a non_blocking copy from it may still be in flight (torch
        # records no event for memory it did not allocate): the last batches are kept until two
        # more have been handed out, by when the step that copied them has run.
        self._in_flight = collections.deque(maxlen=2 if cudart else 0)

        self._core = _core.Loader(
            location=self.data, split=split, augment=self.train,
            image_size=_at_least("image_size", image_size or 0, 0),
            batch_size=self.batch_size, workers=self.workers,
            prefetch=_positive("prefetch", prefetch), drop_last=self.drop_last, seed=self.seed,
            max_pixels=_positive("max_pixels", max_pixels),
            read_ahead_mb=_positive("read_ahead_mb", read_ahead_mb),
            jpeg_index_mb=_at_least("jpeg_index_mb", jpeg_index_mb, 0), scale_min=scale[0],
            scale_max=scale[1], ratio_min=ratio[0], ratio_max=ratio[1], flip=flip,
            crop_fraction=crop_fraction, scaled_decode=bool(scaled_decode), cudart=cudart,
            warn=lambda line: _log.warning("%s", line))
        if callable(indices):  # a split of the part, once its size is known
            indices = indices(self._core.size)
        self.indices = None if indices is None else [int(i) for i in indices]
        self._shard_counts = list(self._core.shard_counts)
        self.classes = list(self._core.classes)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.shape = tuple(self._core.shape)  # (channels, height, width)
        self.augments = bool(self._core.augments)
        if dtype == torch.float32:
            measured = self._core.stats() if mean is None or std is None else None
            self.mean = tuple(mean) if mean is not None else tuple(measured[0])
            self.std = tuple(std) if std is not None else tuple(measured[1])
        else:
            self.mean = self.std = None

        self._core.prepare(self._order(0), floats=dtype == torch.float32,
                           mean=self.mean or (0.0,) * 3, std=self.std or (1.0,) * 3,
                           channels_last=self.channels_last)

    # -- the epoch's samples ------------------------------------------------------------------
    def _order(self, epoch):
        """The epoch's sample indices: the sampler's, or DistributedSampler's rule (train) or the
        strided share (not train), through `indices`."""
        if self.sampler is not None:
            if hasattr(self.sampler, "set_epoch"):
                self.sampler.set_epoch(epoch)
            order = [int(i) for i in self.sampler]
        elif self._shard_counts and self.indices is None:
            # Shards are read shard by shard, their order shuffled, through a shuffle buffer.
            order = _core.shard_epoch_indices(
                self._shard_counts, epoch, world_size=self.world_size, rank=self.rank,
                shuffle=self.shuffle, seed=self.seed, buffer=self.shuffle_buffer,
                equal_shares=self.train)
        else:
            n = len(self.indices) if self.indices is not None else self._core.size
            order = epoch_indices(n, epoch, seed=self.seed, shuffle=self.shuffle,
                                  rank=self.rank, world_size=self.world_size,
                                  even=self.train, drop_last=self.drop_last)
        if self.indices is not None and self.sampler is None:
            order = [self.indices[i] for i in order]
        return order

    # -- PyTorch's DataLoader surface ---------------------------------------------------------
    @property
    def num_workers(self):  # DataLoader's names, which dl_plan's probes read
        return self.workers

    @property
    def prefetch_factor(self):
        return self._prefetch

    @property
    def dataset(self):
        """The samples this loader draws from, as len() counts them (DataLoader.dataset)."""
        return _Part(len(self.indices) if self.indices is not None else self._core.size,
                     self.classes)

    def __len__(self):
        return self._core.batches_per_epoch

    def set_epoch(self, epoch):
        """The epoch the next iteration runs (its shuffle and augmentation), as
        DistributedSampler.set_epoch; without it each iteration runs the next epoch."""
        self._epoch = _at_least("epoch", epoch, 0)

    @property
    def num_samples(self):
        """Samples an epoch goes through on this rank (before any skipped)."""
        return self._core.samples_per_epoch

    @property
    def dataset_size(self):
        """Samples in the data set's part (all ranks)."""
        return self._core.size

    def describe(self):
        return self._core.describe()

    @property
    def decode_scales(self):
        """{M: JPEGs decoded at scale M/8 so far}, the scales used (8 is full size)."""
        return dict(self._core.decode_scales)

    @property
    def jpeg_index_bytes(self):
        """Bytes the JPEG entropy index holds now (bounded by jpeg_index_mb)."""
        return self._core.jpeg_index_bytes

    def failures(self):
        """The samples that could not be loaded so far: (index, path, reason, detail)."""
        return self._core.failures()

    def __iter__(self):
        epoch = self._epoch
        self._epoch = epoch + 1
        self._generation += 1
        generation = self._generation
        order = self._order(epoch)
        self._core.start_epoch(epoch, order)
        self.skipped = dict.fromkeys(SKIP_REASONS, 0)
        self.samples_seen = 0
        while True:
            if generation != self._generation:  # a later iteration took over the loader
                return
            item = self._core.next()
            if item is None:
                break
            images, labels, n, shape, _index, skipped, floats = item
            for reason, count in skipped.items():
                self.skipped[reason] += count
            self.samples_seen += n
            yield self._tensors(images, labels, floats, n, shape)
        self._end_of_epoch()

    # -- batches as tensors -------------------------------------------------------------------
    def _tensors(self, images, labels, floats, n, shape):
        c, h, w = shape
        if n == 0:
            return torch.empty((0, c, h, w), dtype=self.dtype), torch.empty(0, dtype=torch.int64)
        label_tensor = torch.frombuffer(labels, dtype=torch.int64)
        memory = (n, h, w, c) if self.channels_last else (n, c, h, w)
        if self.dtype == torch.float32:  # normalised by the worker, in its own pooled block
            out = torch.frombuffer(floats, dtype=torch.float32).view(memory)
            self._in_flight.append(floats)
        elif not self.channels_last:
            out = torch.frombuffer(images, dtype=torch.uint8).view(memory)
            self._in_flight.append(images)
        else:
            out = torch.empty(memory, dtype=torch.uint8, pin_memory=self.pin_memory)
            _core.channels_last_into(images, n, shape, out.data_ptr())
        if self.pinning == "copy":
            out, label_tensor = out.pin_memory(), label_tensor.pin_memory()
        return (out.permute(0, 3, 1, 2) if self.channels_last else out), label_tensor

    def _end_of_epoch(self):
        skipped = sum(self.skipped.values())
        if skipped == 0:
            return
        seen = self.samples_seen + skipped
        fraction = skipped / seen
        _log.warning("%d sample(s) could not be decoded and were skipped this epoch (%.2f%%): %s",
                     skipped, 100.0 * fraction, self._core.describe_skips(self.skipped, True))
        if fraction > self.max_bad_fraction:
            raise DataError(
                f"data {self.data}: {skipped} of {seen} samples could not be decoded, above "
                f"max_bad_fraction {self.max_bad_fraction:g} "
                f"({self._core.describe_skips(self.skipped, False)})")


class _Part:
    def __init__(self, size, classes):
        self.size, self.classes = size, classes

    def __len__(self):
        return self.size


def _positive(name, value):
    return _at_least(name, value, 1)


def _at_least(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} {value!r}: expected an integer of at least {minimum}")
    return value
