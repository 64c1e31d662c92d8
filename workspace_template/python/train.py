#!/usr/bin/env python3
"""The tutorial's OptimizedTrainer in PyTorch, taking its settings from dl-launch's plan.

    dl-launch -- python3 python/train.py           # in the workspace: the plan's workers,
                                                    # threads, batch size, precision, device
    python3 python/train.py --epochs 1 --run-dir runs/try  # alone: these defaults and flags

What it does: a DataLoader (shuffle, num_workers, pin_memory on CUDA, persistent_workers,
prefetch_factor, drop_last); the small CNN of dl-train (conv1/conv2/fc) for 28x28 data, a
torchvision ResNet for photos, or a TorchScript file; AdamW (lr 1e-3, weight decay 0.01);
CosineAnnealingLR over the epochs; cross-entropy; gradient clipping (max norm 1.0), after
unscaling under fp16; autocast with a GradScaler for fp16 on CUDA, autocast without one for bf16
(CUDA or CPU); validation every epoch; best.pt and last.pt in the run directory as dicts
(model_state_dict, optimizer_state_dict, scaler_state_dict, epoch, val_acc), written atomically;
metrics.csv; a log line per epoch with the share of time spent waiting for data. A stop signal
(Ctrl-C, docker stop: dl-launch forwards it) ends the epoch early and saves last.pt.

Data: an MNIST/Fashion-MNIST IDX directory (raw or .gz files) or an ImageFolder tree (train/ and
val/ of class folders, or class folders with a held-out fraction). Default: the workspace's data/
when it holds a data set, else Fashion-MNIST ($DL_DEFAULT_DATA, /opt/dl/data/fashion-mnist,
/usr/share/datasets/fashion-mnist).

Settings, a later source winning: defaults < the config file < DL_* variables (DL_WORKERS,
DL_THREADS, DL_BATCH_SIZE, DL_PRECISION, DL_DEVICE, DL_RUN_DIR from the plan; DL_EPOCHS, DL_DATA,
DL_LR, DL_LIMIT_BATCHES, ... as dl-launch forwards them) < flags, spelled out in full (--epochs,
not --epoch). The config file is $DL_CONFIG (dl-launch passes the one it read; a relative path is
the working directory's), which must be readable; without it, the workspace's dl.conf
($DL_WORKSPACE, else the working directory), when there is one.

Timing spans match dl-train's (trainer/train/trainer.cpp), so bench/epoch_bench.sh compares like
with like:
  train_seconds  from just after the epoch's iterator exists (dl-train: Loader::start_epoch) to
                 the end of the last optimizer step; samples_per_second = samples / train_seconds
  data_wait      time blocked in the iterator's __next__ (dl-train: Loader::next())
  epoch_seconds  train_seconds plus validation (dl-train's epoch_seconds column)
With --json, one JSON object per epoch goes to stdout (and nothing else does).
"""

import argparse
import contextlib
import gzip
import json
import os
import signal
import stat
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


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fail(msg, code=64):
    """Bad input: one line naming what was wrong, an exit code as dl-launch's (64 usage,
    65 bad data, 66 missing), no traceback."""
    log(f"train.py error: {msg}")
    raise SystemExit(code)


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


def default_data_dir():
    for d in (os.environ.get("DL_DEFAULT_DATA", ""),) + DEFAULT_DATA_DIRS:
        if d and os.path.isdir(d):
            return d
    return ""


def holds_data_set(d):
    return os.path.isdir(d) and any(not n.startswith(".") and not n.startswith("README")
                                    for n in os.listdir(d))


def resolve_data(cfg):
    """The `data` setting, else the workspace's data/ when it holds a data set, else the default
    data set (dl-train's rule, launcher/data_location.h)."""
    if cfg.data:
        path = cfg.data if os.path.isabs(cfg.data) else os.path.join(cfg.workspace, cfg.data)
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


def load_data(cfg):
    path = resolve_data(cfg)
    if not os.path.isdir(path):
        fail(f"data {path}: train.py reads IDX and ImageFolder directories (dl-train also reads "
             "CIFAR-10 and CSV manifests)", 64)
    if is_idx_dir(path):
        return (path,) + idx_data(path)
    if is_image_folder(path):
        return (path,) + image_folder_data(path, cfg.image_size, cfg.val_fraction, cfg.seed)
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


def own_process_group(_worker_id):
    """In each DataLoader worker: a process group of its own, so that the stop signal dl-launch
    (or the terminal's Ctrl-C) sends to the training's group reaches the main process only. The
    main process finishes its batch, saves, and ends its workers itself; a worker killed by the
    signal would instead fail it at any point with a RuntimeError. (Workers still exit when the
    main process dies: PyTorch's workers watch their parent.)"""
    os.setpgid(0, 0)


class TimedIterator:
    """Wraps a DataLoader iterator; accumulates the seconds spent blocked in __next__."""

    def __init__(self, it):
        self.it = it
        self.wait = 0.0

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        try:
            return next(self.it)
        finally:
            self.wait += time.perf_counter() - t0


class OptimizedTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.stop_signal = 0
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.device = choose_device(cfg.device)
        self.use_cuda = self.device.type == "cuda"
        if self.use_cuda:
            torch.backends.cudnn.benchmark = True
        self.precision = cfg.precision
        if self.precision == "auto":
            self.precision = "fp32"
            if self.use_cuda:
                self.precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        if not self.use_cuda and self.precision == "fp16":
            log("precision fp16: CPU autocast is bf16 only; training in fp32")
            self.precision = "fp32"

        self.data_dir, self.train_set, self.val_set, self.info = load_data(cfg)

        def loader(ds, shuffle, drop_last):
            w = cfg.workers
            return DataLoader(ds, batch_size=cfg.batch_size, shuffle=shuffle, num_workers=w,
                              pin_memory=self.use_cuda, persistent_workers=w > 0,
                              # 1.13 accepts only the default (2) without workers
                              prefetch_factor=cfg.prefetch_factor if w > 0 else 2,
                              drop_last=drop_last, worker_init_fn=own_process_group)

        self.train_loader = loader(self.train_set, True, True)
        self.val_loader = loader(self.val_set, False, False)
        if len(self.train_loader) == 0:
            fail(f"data {self.data_dir}: {len(self.train_set)} training samples, fewer than one "
                 f"batch of {cfg.batch_size}", 65)

        self.model = make_model(cfg.model, self.info, cfg.workspace).to(self.device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer,
                                                                    T_max=cfg.epochs)
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(self.precision)
        # Loss scaling is for fp16's narrow range only; bf16 has fp32's.
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.precision == "fp16")

    def _autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    def _on_stop(self, signum, _frame):
        first = not self.stop_signal
        self.stop_signal = signum  # first: the log below may be interrupted in turn
        if first:
            log(f"{signal.Signals(signum).name} received: stopping after this batch, saving "
                "last.pt")

    def train_epoch(self):
        cfg = self.cfg
        self.model.train()
        t_iter = time.perf_counter()
        it = TimedIterator(iter(self.train_loader))  # dl-train: Loader::start_epoch()
        loader_start = time.perf_counter() - t_iter
        start = time.perf_counter()
        loss_sum, correct, seen = 0.0, 0, 0
        try:
            for index, (images, labels) in enumerate(it):
                images = images.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                with self._autocast():
                    logits = self.model(images)
                    loss = self.criterion(logits.float(), labels)
                self.optimizer.zero_grad(set_to_none=True)
                if self.scaler.is_enabled():
                    self.scaler.scale(loss).backward()
                    self.scaler.unscale_(self.optimizer)  # clip the true gradients
                    if cfg.clip_norm > 0:
                        nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                    self.scaler.step(self.optimizer)  # skipped when a gradient is inf/NaN
                    self.scaler.update()
                else:
                    loss.backward()
                    if cfg.clip_norm > 0:
                        nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                    self.optimizer.step()
                n = labels.size(0)
                loss_sum += loss.item() * n
                correct += (logits.argmax(1) == labels).sum().item()
                seen += n
                if cfg.log_every and (index + 1) % cfg.log_every == 0:
                    log(f"batch {index + 1}/{len(self.train_loader)} loss {loss_sum / seen:.4f} "
                        f"acc {100 * correct / seen:.2f}% "
                        f"{seen / (time.perf_counter() - start):.0f} samples/s")
                if (cfg.limit_batches and index + 1 >= cfg.limit_batches) or self.stop_signal:
                    break
        except RuntimeError:
            # A worker that was starting when the stop signal came died of it: expected then.
            if not self.stop_signal:
                raise
        if self.use_cuda:
            torch.cuda.synchronize()
        train_seconds = time.perf_counter() - start
        return dict(train_loss=loss_sum / max(1, seen), train_acc=correct / max(1, seen),
                    samples=seen, train_seconds=train_seconds, data_wait_seconds=it.wait,
                    loader_start_seconds=loader_start, start=start)

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        loss_sum, correct, seen = 0.0, 0, 0
        for images, labels in self.val_loader:
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            with self._autocast():
                logits = self.model(images)
            loss_sum += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            correct += (logits.argmax(1) == labels).sum().item()
            seen += labels.size(0)
        return loss_sum / max(1, seen), correct / max(1, seen)

    def fit(self):
        cfg = self.cfg
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self._on_stop)
        log(f"train.py: {self.data_dir} ({self.info['what']}): {len(self.train_set)} training, "
            f"{len(self.val_set)} validation samples; {self.device}, {self.precision}, "
            f"{torch.get_num_threads()} threads, {cfg.workers} workers, batch {cfg.batch_size}, "
            f"{cfg.epochs} epochs, torch {torch.__version__}")
        if not cfg.run_dir:
            log("no run directory (DL_RUN_DIR is unset): nothing is saved; --run-dir DIR saves")
        best, last_acc = -1.0, 0.0
        for epoch in range(cfg.epochs):
            lr = self.optimizer.param_groups[0]["lr"]
            t = self.train_epoch()
            if self.stop_signal:
                # The epoch is incomplete: last.pt holds its weights under the last whole epoch.
                if cfg.run_dir:
                    self._checkpoint(epoch, last_acc, ("last.pt",))
                    log(f"saved {os.path.join(cfg.run_dir, 'last.pt')}")
                raise SystemExit(128 + self.stop_signal)
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
                     workers=cfg.workers, threads=torch.get_num_threads(),
                     batch_size=cfg.batch_size, device=str(self.device),
                     precision=self.precision)
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
                self._checkpoint(m["epoch"], val_acc,
                                 ("last.pt",) + (("best.pt",) if val_acc > best else ()))
            best, last_acc = max(best, val_acc), val_acc
        if cfg.run_dir:
            log(f"done: validation accuracy {100 * last_acc:.2f}% (best {100 * best:.2f}%); "
                f"checkpoints {os.path.join(cfg.run_dir, 'last.pt')} and best.pt")

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

    def _checkpoint(self, epoch, val_acc, names):
        """The layout dl-train writes, so either trainer's checkpoints load the same way."""
        os.makedirs(self.cfg.run_dir, exist_ok=True)
        ckpt = dict(model_state_dict=self.model.state_dict(),
                    optimizer_state_dict=self.optimizer.state_dict(),
                    scaler_state_dict=self.scaler.state_dict(), epoch=epoch,
                    val_acc=float(val_acc))
        for name in names:
            # Temporary file, fsync, rename: a crash never leaves half a checkpoint.
            path = os.path.join(self.cfg.run_dir, name)
            tmp = f"{path}.tmp.{os.getpid()}"
            with open(tmp, "wb") as f:
                torch.save(ckpt, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)


def choose_device(asked):
    if asked == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if asked.startswith("cuda") and not torch.cuda.is_available():
        fail(f"device {asked}: this PyTorch sees no CUDA device; use --device cpu", 69)
    try:
        return torch.device(asked)
    except RuntimeError:
        fail(f"device {asked!r}: expected auto, cpu, cuda or cuda:N")


# ---------------------------------------------------------------------------------------------
# Settings: defaults < dl.conf < DL_* environment < command line.

# key: (type, default). Keys are dl.conf's and dl-launch's; DL_<KEY> upper-cased, '-' as '_'.
SETTINGS = {
    "data": (str, ""),
    "model": (str, "auto"),
    "epochs": (int, 10),
    "workers": (int, -1),  # -1: auto, dl-launch's rule (usable_cores)
    "threads": (int, -1),
    "batch-size": (int, 64),
    "device": (str, "auto"),
    "precision": (str, "auto"),
    "lr": (float, 1e-3),
    "weight-decay": (float, 0.01),
    "clip-norm": (float, 1.0),
    "image-size": (int, 0),
    "val-fraction": (float, 0.1),
    "seed": (int, 42),
    "limit-batches": (int, 0),
    "log-every": (int, 100),
}


def config_file(env, workspace):
    """The config file to read, and what named it: $DL_CONFIG, else the workspace's dl.conf
    (named by nobody: it may be absent)."""
    if env.get("DL_CONFIG", "") != "":
        return env["DL_CONFIG"], "DL_CONFIG"
    return os.path.join(workspace, "dl.conf"), None


def read_conf(path, named_by=None):
    """dl.conf's `key = value` lines ('#' starts a comment); only the keys train.py uses. A file
    that is not there is no settings when nobody named it; one named (DL_CONFIG) must be read:
    skipping it would train on other settings than asked. Exit codes as dl-launch's: 66 missing
    or not a file, 77 not readable, 65 not key = value text."""
    where = path
    if named_by:
        where += f" ({named_by}" + ("" if os.path.isabs(path) else f", from {os.getcwd()}") + ")"
    expected = "; expected a readable file of key = value lines"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            fail(f"config file {where}: not a regular file{expected}", 66)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError) as e:
        if not named_by:
            return {}
        fail(f"config file {where}: {e.strerror}{expected}", 66)
    except PermissionError as e:
        fail(f"config file {where}: {e.strerror}{expected}", 77)
    except OSError as e:
        fail(f"config file {where}: {e.strerror or e}{expected}", 66)
    except UnicodeDecodeError:
        fail(f"config file {where}: not UTF-8 text{expected}", 65)
    values = {}
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, eq, value = (s.strip() for s in line.partition("="))
        if not eq:
            fail(f"config file {path}:{number}: expected key = value", 65)
        if key in SETTINGS:
            values[key] = (value, f"{path}: {key}")
    return values


def _typed(key, value, source):
    kind, default = SETTINGS[key]
    if value in ("", "auto") and kind is not str:
        return default
    try:
        return kind(value)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        fail(f"{source}: expected {what} or auto, got {value!r}")


def layered_defaults(env, workspace):
    """The value of each setting from the defaults, dl.conf and the environment."""
    raw = read_conf(*config_file(env, workspace))
    for key in SETTINGS:
        var = "DL_" + key.upper().replace("-", "_")
        if env.get(var, "") != "":
            raw[key] = (env[var], var)
    return {key: _typed(key, *raw[key]) if key in raw else SETTINGS[key][1] for key in SETTINGS}


def usable_cores(env):
    """DL_CORES from dl-launch (affinity and cgroup quota), else the affinity mask."""
    try:
        return max(1, int(env.get("DL_CORES", "")))
    except ValueError:
        return max(1, len(os.sched_getaffinity(0)))


class ArgumentParser(argparse.ArgumentParser):
    """argparse's errors as the script's other bad input: one line, exit 64 (argparse's own is
    the usage and exit 2)."""

    def error(self, message):
        fail(f"{message}; see --help")


def parse_args(argv=None):
    env = os.environ
    workspace = env.get("DL_WORKSPACE") or os.getcwd()
    d = layered_defaults(env, workspace)
    # No abbreviations: `--epoch 3` is an error, not --epochs, and a flag added later cannot
    # change what an abbreviation in someone's script means.
    p = ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--data", default=d["data"],
                   help="IDX or ImageFolder directory (default: data/, else Fashion-MNIST)")
    p.add_argument("--model", default=d["model"],
                   help="cnn, resnet18, resnet34, resnet50 or a TorchScript .pt (default: cnn "
                        "for small grey images, else resnet18)")
    p.add_argument("--epochs", type=int, default=d["epochs"])
    p.add_argument("--workers", type=int, default=d["workers"],
                   help="DataLoader num_workers (default: usable cores - 2, at least 1)")
    p.add_argument("--prefetch-factor", type=int, default=2,
                   help="batches each worker keeps ready (DataLoader prefetch_factor)")
    p.add_argument("--threads", type=int, default=d["threads"],
                   help="torch.set_num_threads; 0 leaves PyTorch's default (default: the cores "
                        "the workers leave)")
    p.add_argument("--batch-size", type=int, default=d["batch-size"])
    p.add_argument("--device", default=d["device"], help="auto, cpu, cuda or cuda:N")
    p.add_argument("--precision", default=d["precision"],
                   choices=["auto", "fp32", "fp16", "bf16"])
    p.add_argument("--run-dir", default=env.get("DL_RUN_DIR") or "",
                   help="where metrics.csv and checkpoints go (default: $DL_RUN_DIR; none alone)")
    p.add_argument("--lr", type=float, default=d["lr"])
    p.add_argument("--weight-decay", type=float, default=d["weight-decay"])
    p.add_argument("--clip-norm", type=float, default=d["clip-norm"], help="0 for none")
    p.add_argument("--image-size", type=int, default=d["image-size"],
                   help="ImageFolder training size (default 224)")
    p.add_argument("--val-fraction", type=float, default=d["val-fraction"],
                   help="held out when an ImageFolder has no val/")
    p.add_argument("--seed", type=int, default=d["seed"])
    p.add_argument("--limit-batches", type=int, default=d["limit-batches"],
                   help="train on at most this many batches per epoch, 0 for all")
    p.add_argument("--log-every", type=int, default=d["log-every"],
                   help="batches between progress lines on stderr, 0 for none")
    p.add_argument("--json", action="store_true", help="one JSON object per epoch on stdout")
    cfg = p.parse_args(argv)
    cfg.workspace = workspace
    # auto, or run alone: dl-launch's rule, as plan.cpp applies it.
    cores = usable_cores(env)
    if cfg.workers == -1:
        cfg.workers = max(1, cores - 2)
    if cfg.threads == -1:
        cfg.threads = max(1, cores - cfg.workers)
    if cfg.epochs < 1 or cfg.batch_size < 1 or cfg.workers < 0 or cfg.threads < 0:
        p.error("epochs and batch size must be >= 1, workers and threads >= 0")
    if cfg.prefetch_factor < 1 or not 0.0 < cfg.val_fraction < 1.0:
        p.error("prefetch factor must be >= 1 and the validation fraction between 0 and 1")
    return cfg


def show_plan(path):
    """What dl-launch decided and why, from its plan.json (DL_PLAN)."""
    try:
        with open(path) as f:
            plan = json.load(f)["plan"]
    except (OSError, ValueError, KeyError):
        return
    for key in ("device", "precision", "workers", "threads", "batch_size"):
        if key in plan:
            log(f"plan: {key} {plan[key]['value']} ({plan[key]['reason']})")


def main():
    cfg = parse_args()
    if os.environ.get("DL_PLAN"):
        show_plan(os.environ["DL_PLAN"])
    OptimizedTrainer(cfg).fit()


if __name__ == "__main__":
    main()
