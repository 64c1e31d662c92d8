#!/usr/bin/env python3
"""The tutorial's OptimizedTrainer in PyTorch, on dl-launch's plan through the dl_plan module.

    dl-launch -- python3 python/train.py           # in the workspace: the plan's workers,
                                                    # threads, batch size, precision, device
    dl-launch --nproc-per-node 2 -- python3 python/train.py   # data-parallel, one process a rank
    dl-launch --name x --resume -- python3 python/train.py    # continue run x from its last.pt
    python3 python/train.py --epochs 1 --run-dir runs/try  # alone: dl-launch's defaults, dl.conf

What it does: a DataLoader (shuffle, num_workers, pin_memory on CUDA, persistent_workers,
prefetch_factor, drop_last, a seeded generator) from dl_plan.dataloader_kwargs; the small CNN of
dl-train (conv1/conv2/fc) for 28x28 data, a torchvision ResNet for photos, or a TorchScript file;
AdamW (lr 1e-3, weight decay 0.01); CosineAnnealingLR over the epochs; cross-entropy; gradient
clipping (max norm 1.0), after unscaling under fp16; autocast with a GradScaler for fp16 on CUDA,
autocast without one for bf16 (CUDA or CPU); validation every epoch; best.pt and last.pt in the
run directory, written atomically by dl_plan.TrainingState as dicts (model_state_dict,
optimizer_state_dict, scaler_state_dict, scheduler_state_dict, epoch, epoch_step, global_step,
the RNG states, val_acc, best_val_acc); metrics.csv; a log line per epoch with the share of time
spent waiting for data. A stop signal (Ctrl-C, docker stop: dl-launch forwards it) ends the step
in progress, saves last.pt with the position in the epoch, and exits 128 + the signal's number.

Several ranks (WORLD_SIZE above 1, as dl-launch and torchrun set it): DistributedDataParallel on
NCCL (CUDA) or Gloo (CPU); each rank trains its DistributedSampler share of every epoch, and
validates its own share of the validation set (summed over the ranks); rank 0 alone logs and
writes metrics.csv and the checkpoints, which hold the bare model (no DDP prefix), so a run
resumes with any number of ranks. The batch size is per rank.

--checkpoint-every N|30s|10m also saves last.pt between epoch ends (dl-train's option), so a kill -9
loses at most that much.

--resume continues from last.pt: weights, optimizer (AdamW's moments and step), GradScaler,
schedule and RNG states, at the next batch of the epoch it was saved in (its order is the
uninterrupted run's; the batches before are not loaded again), as dl-train does. A fresh start in
a run directory that holds checkpoints stops (exit 78) unless --overwrite; --resume without
last.pt stops (exit 66).

Measured by dl-launch: the DataLoader goes through dl_plan.loader() and the training step runs in
dl_plan.step(), so `dl-launch -- python3 python/train.py` measures the workers (loader probes)
and, on a GPU or with --memory-budget, the largest batch that fits (step probes) for this script.

Data: an MNIST/Fashion-MNIST IDX directory (raw or .gz files) or an ImageFolder tree (train/ and
val/ of class folders, or class folders with a held-out fraction). Default: the workspace's data/
when it holds a data set, else Fashion-MNIST ($DL_DEFAULT_DATA, /opt/dl/data/fashion-mnist,
/usr/share/datasets/fashion-mnist). Loaded by dl_loader, dl-train's C++ pipeline as a Python
module, where it imports (it reads CIFAR-10 and CSV manifests too), else (or with --loader torch)
by torch's DataLoader over torchvision's transforms: the same crops, flips and normalisation.

Settings, a later source winning: defaults < the config file < DL_* variables < flags, spelled
out in full (--epochs, not --epoch). The config file is $DL_CONFIG (dl-launch passes the one it
read; a relative path is the working directory's), which must be readable; without it, the
workspace's dl.conf ($DL_WORKSPACE, else the working directory), when there is one. dl_plan reads
them (dl_plan.plan for the plan's values, dl_plan.setting for the rest).

Timing spans match dl-train's (trainer/train/run/trainer.cpp), so bench/epoch_bench.sh compares like
with like:
  train_seconds  from just after the epoch's iterator exists (dl-train: Loader::start_epoch) to
                 the end of the last optimizer step; samples_per_second = samples / train_seconds
  data_wait      time blocked in the iterator's __next__ (dl-train: Loader::next())
  epoch_seconds  train_seconds plus validation (dl-train's epoch_seconds column)
With --json, one JSON object per epoch goes to stdout (and nothing else does).
"""

import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset

DEFAULT_DATA_DIRS = ("/opt/dl/data/fashion-mnist", "/usr/share/datasets/fashion-mnist")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
CHECKPOINTS = ("last.pt", "best.pt")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fail(msg, code=64):
    """Bad input: one line naming what was wrong, an exit code as dl-launch's (64 usage,
    65 bad data, 66 missing, 69 unavailable, 77 not permitted, 78 would overwrite), no
    traceback."""
    log(f"train.py error: {msg}")
    raise SystemExit(code)


try:
    import dl_plan
except ImportError as e:
    fail(f"the companion module dl_plan cannot be imported ({e}); dl-launch puts it on "
         "PYTHONPATH, the image and a checkout's env/demo.sh or env/test.sh install it; alone, "
         "from a checkout: PYTHONPATH=<checkout>/python or pip install <checkout>/python "
         "(docs/python.md)", 69)


# ---------------------------------------------------------------------------------------------
# Data: IDX files


def _read_idx(path, magic, header):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    got = int.from_bytes(raw[0:4], "big")
    if got != magic:
        fail(f"{path}: magic number {got:#010x}, expected {magic:#010x}", 65)
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range((header - 4) // 4)]
    count = int(np.prod(dims))
    if len(raw) - header != count:
        fail(f"{path}: {len(raw) - header} bytes of data, the header says {count}", 65)
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _find_idx(data_dir, prefix, kind, idx):
    for sep in ("-", "."):
        for ext in ("", ".gz"):
            p = os.path.join(data_dir, f"{prefix}-{kind}{sep}{idx}-ubyte{ext}")
            if os.path.isfile(p):
                return p
    return None


def is_idx_dir(data_dir):
    return _find_idx(data_dir, "train", "images", "idx3") is not None


def load_split(data_dir, train):
    prefix = "train" if train else "t10k"
    paths = [_find_idx(data_dir, prefix, "images", "idx3"),
             _find_idx(data_dir, prefix, "labels", "idx1")]
    if None in paths:
        fail(f"{data_dir}: no {prefix}-images-idx3-ubyte[.gz] and {prefix}-labels-idx1-ubyte[.gz]"
             " (expected the MNIST IDX layout)", 66)
    images = _read_idx(paths[0], 0x00000803, 16)
    labels = _read_idx(paths[1], 0x00000801, 8)
    if len(images) != len(labels):
        fail(f"{data_dir}: {len(images)} {prefix} images but {len(labels)} labels", 65)
    return images, labels


class IdxDataset(Dataset):
    """As torchvision's FashionMNIST: a PIL image per sample, then the transform."""

    def __init__(self, images, labels, transform):
        self.images = images
        self.labels = labels.astype(np.int64)
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        img = Image.fromarray(self.images[index], mode="L")
        return self.transform(img), int(self.labels[index])


def idx_data(data_dir):
    from torchvision import transforms

    train_x, train_y = load_split(data_dir, True)
    val_x, val_y = load_split(data_dir, False)
    scaled = train_x.astype(np.float64) / 255.0
    mean, std = float(scaled.mean()), float(scaled.std())
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((mean,), (std,))])
    info = dict(channels=1, size=train_x.shape[1], classes=int(train_y.max()) + 1,
                what=f"IDX, mean {mean:.4f} std {std:.4f}")
    return IdxDataset(train_x, train_y, tf), IdxDataset(val_x, val_y, tf), info


# ---------------------------------------------------------------------------------------------
# Data: ImageFolder (torchvision)


def _class_dirs(path):
    return sorted(d for d in os.listdir(path)
                  if not d.startswith(".") and os.path.isdir(os.path.join(path, d)))


def is_image_folder(data_dir):
    return bool(_class_dirs(data_dir))


def image_folder_data(data_dir, image_size, val_fraction, seed):
    from torchvision import datasets, transforms

    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet's, as torchvision's
    size = image_size or 224
    train_tf = transforms.Compose([transforms.RandomResizedCrop(size),
                                   transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                                   transforms.Normalize(mean, std)])
    eval_tf = transforms.Compose([transforms.Resize(size * 256 // 224),
                                  transforms.CenterCrop(size), transforms.ToTensor(),
                                  transforms.Normalize(mean, std)])
    kw = dict(is_valid_file=lambda p: p.lower().endswith(IMAGE_EXTENSIONS))
    train_dir, val_dir = os.path.join(data_dir, "train"), os.path.join(data_dir, "val")
    try:
        if os.path.isdir(train_dir):
            train_set = datasets.ImageFolder(train_dir, train_tf, **kw)
            val_set = (datasets.ImageFolder(val_dir, eval_tf, **kw) if os.path.isdir(val_dir)
                       else None)
            classes = train_set.classes
        else:
            val_set = None
        if not os.path.isdir(train_dir) or val_set is None:
            # Class folders with a held-out fraction: the same files, two transforms.
            root = train_dir if os.path.isdir(train_dir) else data_dir
            full_train = datasets.ImageFolder(root, train_tf, **kw)
            full_eval = datasets.ImageFolder(root, eval_tf, **kw)
            classes = full_train.classes
            order = torch.randperm(len(full_train), generator=torch.Generator().manual_seed(seed))
            n_val = max(1, int(len(order) * val_fraction))
            train_set = torch.utils.data.Subset(full_train, order[n_val:].tolist())
            val_set = torch.utils.data.Subset(full_eval, order[:n_val].tolist())
    except (FileNotFoundError, RuntimeError) as e:  # an empty class folder, no images
        fail(f"{data_dir}: {str(e).splitlines()[0]}", 65)
    info = dict(channels=3, size=size, classes=len(classes),
                what=f"ImageFolder, {len(classes)} classes, {size}x{size}")
    return train_set, val_set, info


# ---------------------------------------------------------------------------------------------
# Data: dl_loader, dl-train's C++ pipeline (threads, crop-only JPEG decoding, batches without a
# copy; python/dl_loader). Used where it imports, unless --loader torch.


def fast_loader(cfg):
    """The dl_loader module where --loader allows it and it imports, else None (then torch's
    DataLoader over the datasets above)."""
    if cfg.loader == "torch":
        return None
    try:
        import dl_loader
    except ImportError as e:
        if cfg.loader == "dl":
            fail(f"--loader dl: {str(e).splitlines()[0]}", 69)
        return None
    return dl_loader


def dl_loader_data(dl_loader, cfg, path):
    """Training and validation loaders over what dl-train reads at `path`: the data set's own
    validation part (the IDX or CIFAR test files, an ImageFolder's val/), else a held-out
    fraction drawn as the DataLoader path draws it."""
    plan = cfg.plan
    common = dict(batch_size=plan.batch_size, workers=plan.workers, seed=plan.seed,
                  rank=plan.rank, world_size=plan.world_size, image_size=cfg.image_size or None,
                  prefetch=cfg.prefetch_factor)
    held = {}

    def hold_out(n):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(plan.seed)).tolist()
        n_val = max(1, int(n * cfg.val_fraction))
        held["val"] = order[:n_val]
        return order[n_val:]

    try:
        try:
            val = dl_loader.Loader(path, split="val", train=False, **common)
            train = dl_loader.Loader(path, train=True, drop_last=True, **common)
        except dl_loader.SplitError:  # class folders or a manifest: no validation part
            train = dl_loader.Loader(path, train=True, drop_last=True, indices=hold_out,
                                     **common)
            val = dl_loader.Loader(path, train=False, indices=held["val"], **common)
    except FileNotFoundError as e:
        fail(str(e), 66)
    except dl_loader.DataError as e:
        fail(str(e), 65)
    channels, size, _ = train.shape
    info = dict(channels=channels, size=size, classes=len(train.classes),
                what=f"{len(train.classes)} classes, {size}x{size}, dl_loader")
    return train, val, info


def default_data_dir():
    for d in (os.environ.get("DL_DEFAULT_DATA", ""),) + DEFAULT_DATA_DIRS:
        if d and os.path.isdir(d):
            return d
    return ""


def holds_data_set(d):
    return os.path.isdir(d) and any(not n.startswith(".") and not n.startswith("README")
                                    for n in os.listdir(d))


def resolve_data(cfg):
    """The `data` setting (made absolute by parse_args), else the workspace's data/ when it holds
    a data set, else the default data set (dl-train's rule, launcher/data_location.h)."""
    if cfg.data:
        path = cfg.data
        if not os.path.exists(path):
            fail(f"data {path}: no such directory", 66)
        return path
    local = os.path.join(cfg.workspace, "data")
    if holds_data_set(local):
        return local
    d = default_data_dir()
    if not d:
        fail("no data: data/ is empty and Fashion-MNIST is not installed; set data = DIR in "
             "dl.conf or --data DIR", 66)
    return d


def load_data(cfg, path):
    if not os.path.isdir(path):
        fail(f"data {path}: train.py with torch's DataLoader reads IDX and ImageFolder "
             "directories (with dl_loader, --loader dl, also CIFAR-10 and CSV manifests)", 64)
    if is_idx_dir(path):
        return (path,) + idx_data(path)
    if is_image_folder(path):
        return (path,) + image_folder_data(path, cfg.image_size, cfg.val_fraction, cfg.plan.seed)
    fail(f"data {path}: neither MNIST IDX files nor class folders of images", 65)


# ---------------------------------------------------------------------------------------------
# Models


class SmallCNN(nn.Module):
    """dl-train's `cnn` (trainer/model/cnn.cpp), same parameter names."""

    def __init__(self, in_channels=1, num_classes=10, input_size=28):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        side = input_size // 4
        self.fc = nn.Linear(64 * side * side, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def make_model(name, info, workspace):
    if name in ("", "auto"):
        name = "cnn" if info["channels"] == 1 and info["size"] <= 64 else "resnet18"
    if name == "cnn":
        return SmallCNN(info["channels"], info["classes"], info["size"])
    if name in ("resnet18", "resnet34", "resnet50"):
        import torchvision

        model = getattr(torchvision.models, name)(num_classes=info["classes"])
        if info["channels"] != 3:
            model.conv1 = nn.Conv2d(info["channels"], 64, 7, 2, 3, bias=False)
        return model
    if name.endswith(".pt"):  # a TorchScript file (python/export_torchscript.py writes one)
        path = name if os.path.isabs(name) else os.path.join(workspace, name)
        if not os.path.isfile(path):
            fail(f"model {path}: no such file", 66)
        return torch.jit.load(path, map_location="cpu")
    fail(f"model {name!r}: expected cnn, resnet18, resnet34, resnet50 or a TorchScript .pt file")


# ---------------------------------------------------------------------------------------------
# Trainer


class TimedIterator:
    """Wraps a DataLoader iterator; accumulates the seconds spent blocked in __next__, less those
    `excluded()` grew by meanwhile (TrainingState's saves after a step: checkpoint-every's)."""

    def __init__(self, it, excluded=lambda: 0.0):
        self.it = it
        self.wait = 0.0
        self.excluded = excluded

    def __iter__(self):
        return self

    def __next__(self):
        t0, x0 = time.perf_counter(), self.excluded()
        try:
            return next(self.it)
        finally:
            self.wait += time.perf_counter() - t0 - (self.excluded() - x0)


class Ranks:
    """The collective calls the trainer makes, as no-ops for one process."""

    def __init__(self, plan, device):
        self.device = device
        self.on = plan.distributed
        if self.on:
            import torch.distributed as dist

            self.dist = dist

    def sum(self, *values):
        """Each value summed over the ranks (floats)."""
        if not self.on:
            return values
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        self.dist.all_reduce(t)
        return tuple(t.tolist())

    def barrier(self):
        if self.on:
            self.dist.barrier()

    def end(self, ok=True):
        if self.on and self.dist.is_initialized():
            # PyTorch 1.13's gloo can hang in destroy_process_group once every rank is done
            # (pytorch#75097): by now every file is written, so a rank still here after 60 s
            # leaves with the run's status (`ok`: it trained to the end) instead of waiting.
            import threading

            watchdog = threading.Timer(60, lambda: os._exit(0 if ok else 1))
            watchdog.daemon = True
            watchdog.start()
            self.dist.destroy_process_group()
            watchdog.cancel()


def shard(dataset, plan):
    """Validation's share of this rank: every world_size-th sample from its rank, without the
    padding DistributedSampler adds, so that the summed counts are the data set's."""
    return list(range(plan.rank, len(dataset), plan.world_size))


class OptimizedTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        plan = self.plan = cfg.plan
        self.main = plan.is_main
        self.device = torch.device(plan.device)
        self.use_cuda = self.device.type == "cuda"
        self.precision = plan.precision
        self.ranks = Ranks(plan, self.device)

        self.data_dir = resolve_data(cfg)
        dl_loader = fast_loader(cfg)
        if dl_loader is not None:
            train_loader, self.val_loader, self.info = dl_loader_data(dl_loader, cfg,
                                                                      self.data_dir)
            self.train_set, self.val_set = train_loader.dataset, self.val_loader.dataset
        else:
            _, self.train_set, self.val_set, self.info = load_data(cfg, self.data_dir)
            extra = dict(prefetch_factor=cfg.prefetch_factor) if plan.workers > 0 else {}
            train_loader = DataLoader(self.train_set,
                                      **plan.dataloader_kwargs(self.train_set, **extra))
            val_kw = plan.dataloader_kwargs(self.val_set, train=False, **extra)
            if plan.distributed:
                val_kw["sampler"] = shard(self.val_set, plan)
            self.val_loader = DataLoader(self.val_set, **val_kw)
        # dl_plan.loader: in a loader probe, dl-launch times this loader and the script ends.
        self.train_loader = dl_plan.loader(train_loader)
        if len(self.train_loader) == 0:
            fail(f"data {self.data_dir}: {len(self.train_set)} training samples, fewer than one "
                 f"batch of {plan.batch_size} for each of {plan.world_size} rank(s)", 65)

        self.net = make_model(cfg.model, self.info, cfg.workspace).to(self.device)
        self.model = dl_plan.wrap(self.net)  # DistributedDataParallel with several ranks
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(self.net.parameters(), lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer,
                                                                    T_max=cfg.epochs)
        self.scaler = plan.grad_scaler()  # fp16 only; bf16 has fp32's range
        # last.pt and best.pt, the position in the epoch, the RNG states; from here a stop signal
        # ends the step in progress and saves (dl_plan.TrainingState: rank 0 writes, atomically).
        self.state = dl_plan.TrainingState(self.model, self.optimizer, self.train_loader,
                                           scaler=self.scaler, scheduler=self.scheduler,
                                           run_dir=cfg.run_dir,
                                           checkpoint_every=cfg.checkpoint_every)
        self.start_epoch, self.best, self.last_acc = 0, -1.0, 0.0
        if cfg.resume_from:
            self._resume(cfg.resume_from)

    def _resume(self, path):
        """Weights, optimizer, scaler, schedule, RNG states and the position in the epoch from
        last.pt, on every rank (each loads the same file: no broadcast needed); dl_plan reads it
        with weights_only from torch 2.0."""
        try:
            epoch = self.state.resume(True, quiet=True)
        except dl_plan.PlanError as e:
            fail(f"{e}; or a last.pt of dl-train's for this model", e.code)
        ckpt = self.state.loaded
        if not ckpt.get("scheduler_state_dict"):
            for _ in range(epoch):  # dl-train's checkpoint: the schedule by its epoch count
                self.scheduler.step()
        # The schedule spans the epochs asked for now (--epochs may have grown). The scheduler
        # makes each rate from the one before (a chained formula), so the current rate is set
        # from the closed form first: an ended schedule's 0 would otherwise stay 0.
        sched = self.scheduler
        sched.T_max = self.cfg.epochs
        at = (1 + math.cos(math.pi * sched.last_epoch / sched.T_max)) / 2
        for group, base in zip(self.optimizer.param_groups, sched.base_lrs):
            group["lr"] = sched.eta_min + (base - sched.eta_min) * at
        self.start_epoch = epoch
        self.last_acc = float(ckpt.get("val_acc", 0.0))
        self.best = float(ckpt.get("best_val_acc", self.last_acc))
        self.state.extra.update(val_acc=self.last_acc, best_val_acc=max(self.best, 0.0))
        if self.main:
            steps = {int(s["step"]) for s in ckpt["optimizer_state_dict"]["state"].values()
                     if "step" in s}
            within = self.state.step
            then = (f"continuing with epoch {epoch + 1} of {self.cfg.epochs}"
                    + (f" at batch {within + 1} ({within} trained before the stop)"
                       if within else "")
                    if epoch < self.cfg.epochs else "no epoch left to train")
            log(f"resumed {path}: {epoch} epoch(s) done, optimizer step "
                f"{max(steps) if steps else 0}, validation accuracy {100 * self.last_acc:.2f}%; "
                f"{then}")

    def _step(self, images, labels):
        cfg = self.cfg
        self.optimizer.zero_grad(set_to_none=True)
        # dl-launch --global-batch: the batch in the plan's micro-batches, their weighted losses'
        # gradients accumulated (one piece of weight 1 otherwise). A disabled scaler (bf16, fp32)
        # passes everything through: one step for all.
        outputs, loss = [], 0.0
        for x, y, weight in self.plan.micro_batches(images, labels, model=self.model):
            with self.plan.autocast():
                out = self.model(x)
                piece = self.criterion(out.float(), y) * weight
            self.scaler.scale(piece).backward()
            outputs.append(out.detach())
            loss = loss + piece.detach()
        logits = outputs[0] if len(outputs) == 1 else torch.cat(outputs)
        self.scaler.unscale_(self.optimizer)  # clip the true gradients
        if cfg.clip_norm > 0:
            nn.utils.clip_grad_norm_(self.net.parameters(), cfg.clip_norm)
        self.scaler.step(self.optimizer)  # skipped when a gradient is inf/NaN
        self.scaler.update()
        return logits, loss

    def train_epoch(self, epoch):
        cfg = self.cfg
        self.model.train()
        t_iter = time.perf_counter()
        # The epoch's batches (set_epoch: DistributedSampler's shuffle), a resumed epoch's from
        # the next one on; after each step, a stop signal saves last.pt and ends the process.
        it = TimedIterator(iter(self.state.batches(epoch, limit=cfg.limit_batches or None)),
                           lambda: self.state.save_seconds)
        loader_start = time.perf_counter() - t_iter
        start = time.perf_counter()
        loss_sum, correct, seen = 0.0, 0, 0
        batches = len(self.train_loader)
        try:
            for images, labels in it:
                images = images.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                # dl_plan.step: in a step probe, dl-launch measures this step's memory and time.
                with dl_plan.step():
                    logits, loss = self._step(images, labels)
                n = labels.size(0)
                loss_sum += loss.item() * n
                correct += (logits.argmax(1) == labels).sum().item()
                seen += n
                if self.main and cfg.log_every and self.state.step % cfg.log_every == 0:
                    log(f"batch {self.state.step}/{batches} loss {loss_sum / seen:.4f} "
                        f"acc {100 * correct / seen:.2f}% "
                        f"{seen * self.plan.world_size / (time.perf_counter() - start):.0f} "
                        "samples/s")
        except RuntimeError:
            # A worker that was starting when the stop signal came died of it: expected then,
            # and the state after the last whole step is saved.
            if not dl_plan.stop_requested():
                raise
            self.state.check_stop()
        if self.use_cuda:
            torch.cuda.synchronize()
        train_seconds = time.perf_counter() - start
        loss_sum, correct, seen = self.ranks.sum(loss_sum, correct, seen)
        return dict(train_loss=loss_sum / max(1, seen), train_acc=correct / max(1, seen),
                    samples=int(seen), train_seconds=train_seconds, data_wait_seconds=it.wait,
                    loader_start_seconds=loader_start, start=start)

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        loss_sum, correct, seen = 0.0, 0, 0
        for images, labels in self.val_loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            with self.plan.autocast():
                logits = self.net(images)  # the bare model: no DDP synchronisation here
            loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
            seen += labels.size(0)
        loss_sum, correct, seen = self.ranks.sum(loss_sum, correct, seen)
        return loss_sum / max(1, seen), correct / max(1, seen)

    def fit(self):
        cfg, plan = self.cfg, self.plan
        if self.main:
            ranks = (f", {plan.world_size} ranks (DDP, {plan.batch_size} a rank)"
                     if plan.distributed else "")
            log(f"train.py: {self.data_dir} ({self.info['what']}): {len(self.train_set)} "
                f"training, {len(self.val_set)} validation samples; {self.device}, "
                f"{self.precision}, {torch.get_num_threads()} threads, {plan.workers} workers, "
                f"batch {plan.batch_size}, {cfg.epochs} epochs{ranks}, torch {torch.__version__}")
            if not cfg.run_dir:
                log("no run directory (DL_RUN_DIR is unset): nothing is saved; --run-dir DIR "
                    "saves")
        ok = False
        try:
            self._epochs()
            ok = True
        finally:
            self.ranks.end(ok)

    def _epochs(self):
        cfg, plan = self.cfg, self.plan
        for epoch in range(self.start_epoch, cfg.epochs):
            lr = self.optimizer.param_groups[0]["lr"]
            t = self.train_epoch(epoch)  # a stop signal inside it saves last.pt and exits
            with dl_plan.phase("eval"):  # for the breakdown of where the time goes
                val_loss, val_acc = self.evaluate()
            epoch_seconds = time.perf_counter() - t["start"]
            self.scheduler.step()
            m = dict(epoch=epoch + 1, train_loss=t["train_loss"], train_acc=t["train_acc"],
                     val_loss=val_loss, val_acc=val_acc, lr=lr, epoch_seconds=epoch_seconds,
                     train_seconds=t["train_seconds"], samples=t["samples"],
                     samples_per_second=t["samples"] / t["train_seconds"],
                     data_wait_seconds=t["data_wait_seconds"],
                     data_wait_percent=100.0 * t["data_wait_seconds"] / t["train_seconds"],
                     loader_start_seconds=t["loader_start_seconds"],
                     workers=plan.workers, threads=torch.get_num_threads(),
                     batch_size=plan.batch_size, world_size=plan.world_size,
                     device=str(self.device), precision=self.precision)
            is_best = val_acc > self.best
            self.best, self.last_acc = max(self.best, val_acc), val_acc
            self.state.extra.update(val_acc=float(val_acc), best_val_acc=float(self.best))
            if self.main:
                if cfg.json:
                    print(json.dumps(m), flush=True)
                log(f"epoch {m['epoch']}/{cfg.epochs}: train loss {m['train_loss']:.4f} "
                    f"acc {100 * m['train_acc']:.2f}% | val loss {val_loss:.4f} "
                    f"acc {100 * val_acc:.2f}% | train {m['train_seconds']:.2f} s, "
                    f"{m['samples_per_second']:.0f} samples/s, data wait "
                    f"{m['data_wait_seconds']:.2f} s ({m['data_wait_percent']:.1f}%) | "
                    f"epoch {epoch_seconds:.2f} s | lr {lr:.3g}")
                if cfg.run_dir:
                    self._metrics(m)
            # best.pt first: a kill between the two leaves last.pt a whole epoch behind, never a
            # best.pt older than the last.pt that claims it. Rank 0 writes (dl_plan).
            if is_best:
                self.state.save(epoch + 1, name="best.pt")
            self.state.save(epoch + 1)
        if self.main and dl_plan.time_report():
            log(dl_plan.time_report())  # where the time went: the table and the verdict
        if cfg.run_dir and self.main:
            log(f"done: validation accuracy {100 * self.last_acc:.2f}% (best "
                f"{100 * self.best:.2f}%); checkpoints {os.path.join(cfg.run_dir, 'last.pt')} "
                "and best.pt")
        self.ranks.barrier()

    def _metrics(self, m):
        os.makedirs(self.cfg.run_dir, exist_ok=True)
        path = os.path.join(self.cfg.run_dir, "metrics.csv")
        fresh = not os.path.exists(path) or os.path.getsize(path) == 0
        with open(path, "a") as f:
            if fresh:
                f.write("epoch,train_loss,train_acc,val_loss,val_acc,lr,epoch_seconds,"
                        "samples_per_second,data_wait_seconds,data_wait_percent,skipped_samples\n")
            f.write(f"{m['epoch']},{m['train_loss']:.6f},{m['train_acc']:.6f},"
                    f"{m['val_loss']:.6f},{m['val_acc']:.6f},{m['lr']:.8g},"
                    f"{m['epoch_seconds']:.3f},{m['samples_per_second']:.1f},"
                    f"{m['data_wait_seconds']:.3f},{m['data_wait_percent']:.2f},0\n")



# ---------------------------------------------------------------------------------------------
# Settings: defaults < dl.conf < DL_* environment < command line, read by dl_plan.


class ArgumentParser(argparse.ArgumentParser):
    """argparse's errors as the script's other bad input: one line, exit 64 (argparse's own is
    the usage and exit 2)."""

    def error(self, message):
        fail(f"{message}; see --help")


def absolute(path, source, workspace):
    """A path setting made absolute: a config file's is the workspace's (as dl-launch reads
    it), a flag's or a variable's the working directory's (where it was typed)."""
    if not path or os.path.isabs(path):
        return path
    if source and source.endswith(": data"):  # "<file>:<line>: data"
        return os.path.join(workspace, path)
    return os.path.abspath(path)


def parse_args(argv=None):
    env = os.environ
    workspace = env.get("DL_WORKSPACE") or os.getcwd()
    s = dl_plan.setting
    # No abbreviations: `--epoch 3` is an error, not --epochs, and a flag added later cannot
    # change what an abbreviation in someone's script means.
    p = ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    # The plan's values: None leaves them to dl_plan (dl.conf < DL_* < these flags).
    p.add_argument("--data", help="IDX or ImageFolder directory (default: data/, else "
                                  "Fashion-MNIST)")
    p.add_argument("--workers", type=int,
                   help="DataLoader num_workers (default: the plan's, alone usable cores - 2, "
                        "at least 1)")
    p.add_argument("--threads", type=int,
                   help="torch.set_num_threads (default: the plan's, alone the cores the "
                        "workers leave)")
    p.add_argument("--batch-size", type=int, help="per rank (default: the plan's, alone 64)")
    p.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: the plan's)")
    p.add_argument("--precision", choices=["auto", "fp32", "fp16", "bf16"])
    p.add_argument("--seed", type=int)
    p.add_argument("--run-dir",
                   help="where metrics.csv and checkpoints go (default: $DL_RUN_DIR; none alone)")
    # The script's own settings.
    p.add_argument("--model", default=s("model", "auto"),
                   help="cnn, resnet18, resnet34, resnet50 or a TorchScript .pt (default: cnn "
                        "for small grey images, else resnet18)")
    p.add_argument("--epochs", type=int, default=s("epochs", 10))
    p.add_argument("--loader", choices=["auto", "dl", "torch"], default=s("loader", "auto"),
                   help="dl: dl_loader, dl-train's C++ pipeline; torch: DataLoader over "
                        "torchvision; auto: dl_loader where it imports (default)")
    p.add_argument("--prefetch-factor", type=int, default=s("prefetch-factor", 2),
                   help="batches each worker keeps ready (DataLoader prefetch_factor)")
    p.add_argument("--lr", type=float, default=s("lr", 1e-3))
    p.add_argument("--weight-decay", type=float, default=s("weight-decay", 0.01))
    p.add_argument("--clip-norm", type=float, default=s("clip-norm", 1.0), help="0 for none")
    p.add_argument("--image-size", type=int, default=s("image-size", 0),
                   help="ImageFolder training size (default 224)")
    p.add_argument("--val-fraction", type=float, default=s("val-fraction", 0.1),
                   help="held out when an ImageFolder has no val/")
    p.add_argument("--limit-batches", type=int, default=s("limit-batches", 0),
                   help="train on at most this many batches per epoch, 0 for all")
    p.add_argument("--log-every", type=int, default=s("log-every", 100),
                   help="batches between progress lines on stderr, 0 for none")
    p.add_argument("--checkpoint-every",
                   help="last.pt between epoch ends too: every N steps (500) or a time (30s, 10m, "
                        "2h); default: checkpoint-every in dl.conf or DL_CHECKPOINT_EVERY, else "
                        "epoch ends only")
    p.add_argument("--resume", action="store_true", default=s("resume", False),
                   help="continue from the run directory's last.pt")
    p.add_argument("--overwrite", action="store_true", default=s("overwrite", False),
                   help="start afresh in a run directory that holds checkpoints, replacing them")
    p.add_argument("--json", action="store_true", help="one JSON object per epoch on stdout")
    cfg = p.parse_args(argv)
    if cfg.epochs < 1 or (cfg.batch_size is not None and cfg.batch_size < 1):
        p.error("epochs and batch size must be >= 1")
    if (cfg.workers is not None and cfg.workers < 0) or (cfg.threads is not None
                                                         and cfg.threads < 1):
        p.error("workers must be >= 0 and threads >= 1")
    if cfg.prefetch_factor < 1 or not 0.0 < cfg.val_fraction < 1.0:
        p.error("prefetch factor must be >= 1 and the validation fraction between 0 and 1")
    if cfg.resume and cfg.overwrite:
        p.error("--resume continues the run's checkpoints and --overwrite replaces them: give "
                "one")
    if cfg.checkpoint_every is not None:  # dl-train's values; PlanError (64) names the flag
        dl_plan.checkpoint_every.parse(cfg.checkpoint_every, "--checkpoint-every")
    cfg.workspace = workspace
    # The plan: dl-launch's (DL_*), else its defaults; threads, seed, device and the process
    # group applied. Flags win, but not over what a probe measures.
    cfg.plan = dl_plan.setup(cfg)
    cfg.data = absolute(cfg.plan.data or "", cfg.plan.source("data"), workspace)
    cfg.run_dir = absolute(cfg.plan.run_dir or "", cfg.plan.source("run_dir"), workspace)
    return cfg


def run_state(cfg):
    """What this start does with the run directory: the last.pt to resume from, or None. A
    fresh start does not replace an earlier run's checkpoints (dl-launch's rule; it checks
    before starting, this is for the script run alone): --resume or --overwrite. A probe trains
    in dl-launch's scratch directory and neither resumes nor refuses."""
    if not cfg.run_dir or dl_plan.probing():
        return None
    saved = [n for n in CHECKPOINTS if os.path.isfile(os.path.join(cfg.run_dir, n))]
    last = os.path.join(cfg.run_dir, "last.pt")
    if cfg.resume:
        if "last.pt" not in saved:
            fail(f"--resume: {last} does not exist; expected the last checkpoint of an earlier "
                 "run in this run directory", 66)
        return last
    if saved and not cfg.overwrite:
        fail(f"run directory {cfg.run_dir} already holds checkpoints ({', '.join(saved)}) of an "
             "earlier run: continue it with --resume, start it over with --overwrite, or give "
             "another run directory", 78)
    return None


def show_plan(plan):
    """What the run trains with and why: dl-launch's reasons from its plan.json (DL_PLAN), else
    where dl_plan found each value."""
    reasons = {}
    try:
        with open(os.environ.get("DL_PLAN", "")) as f:
            reasons = {k: v.get("reason") for k, v in json.load(f)["plan"].items()
                       if isinstance(v, dict)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    for key in ("device", "precision", "workers", "threads", "batch_size"):
        log(f"plan: {key} {getattr(plan, key)} ({reasons.get(key) or plan.source(key)})")
    if plan.accumulation_steps > 1:
        log(f"plan: batch {plan.batch_size} in {plan.accumulation_steps} micro-batches of at most "
            f"{plan.micro_batch} (gradient accumulation, {plan.source('micro_batch')})")


def main():
    try:
        cfg = parse_args()
    except dl_plan.PlanError as e:
        fail(str(e), e.code)
    except RuntimeError as e:  # init_process_group: no rendezvous; a device that is not there
        fail(f"setting up the plan: {str(e).splitlines()[0]}", 69)
    cfg.resume_from = run_state(cfg)
    try:
        trainer = OptimizedTrainer(cfg)
    except dl_plan.PlanError as e:  # checkpoint-every in dl.conf or DL_CHECKPOINT_EVERY
        fail(str(e), e.code)
    if cfg.plan.is_main:  # once the data and the checkpoint are read: bad input is one line
        show_plan(cfg.plan)
    if trainer.start_epoch >= cfg.epochs:
        if cfg.plan.is_main:
            log(f"done: {cfg.resume_from} already holds {trainer.start_epoch} of the {cfg.epochs} "
                "epochs asked for; nothing to train (a larger --epochs continues it)")
        trainer.ranks.end()
        return
    trainer.fit()


if __name__ == "__main__":
    main()
