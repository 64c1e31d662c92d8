#!/usr/bin/env python3
"""The tutorial's OptimizedTrainer in PyTorch: the reference dl-train is benchmarked against.

Fashion-MNIST read from its IDX .gz files (gzip + numpy, offline), a Dataset that yields
ToTensor + Normalize(data mean/std) per sample, a DataLoader (shuffle, workers, pinned memory when
CUDA is there, persistent workers, prefetch factor 2, drop_last), the small CNN of dl-train
(conv1/conv2/fc), AdamW(1e-3, weight decay 0.01), CosineAnnealingLR(T_max=epochs) stepped per
epoch, cross-entropy, clip_grad_norm_(1.0), validation on t10k every epoch.

Settings: the launcher's DL_* variables (DL_WORKERS, DL_BATCH_SIZE, DL_THREADS, DL_DEVICE,
DL_PRECISION, DL_RUN_DIR, DL_EPOCHS) when present; command-line flags override them.

Timing spans match dl-train's (trainer/train/trainer.cpp) so the two compare like with like:
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
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Data


def _read_idx(path, magic, header):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    got = int.from_bytes(raw[0:4], "big")
    if got != magic:
        raise SystemExit(f"{path}: magic number {got:#010x}, expected {magic:#010x}")
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range((header - 4) // 4)]
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def _find(data_dir, prefix, kind, idx):
    for sep in ("-", "."):
        for ext in ("", ".gz"):
            p = os.path.join(data_dir, f"{prefix}-{kind}{sep}{idx}-ubyte{ext}")
            if os.path.isfile(p):
                return p
    raise SystemExit(f"{data_dir}: no {prefix}-{kind}-{idx}-ubyte[.gz] (expected the IDX layout)")


def load_split(data_dir, train):
    prefix = "train" if train else "t10k"
    images = _read_idx(_find(data_dir, prefix, "images", "idx3"), 0x00000803, 16)
    labels = _read_idx(_find(data_dir, prefix, "labels", "idx1"), 0x00000801, 8)
    if len(images) != len(labels):
        raise SystemExit(f"{data_dir}: {len(images)} {prefix} images but {len(labels)} labels")
    return images, labels


class FashionMNISTIdx(Dataset):
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


# ---------------------------------------------------------------------------------------------
# Model: dl-train's `cnn` (trainer/model/cnn.cpp), same parameter names.


class SmallCNN(nn.Module):
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


# ---------------------------------------------------------------------------------------------
# Trainer


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
        if not self.use_cuda and self.precision != "fp32":
            log(f"precision {self.precision}: the reference trains in fp32 on the CPU")
            self.precision = "fp32"

        train_x, train_y = load_split(cfg.data, True)
        val_x, val_y = load_split(cfg.data, False)
        scaled = train_x.astype(np.float64) / 255.0
        mean, std = float(scaled.mean()), float(scaled.std())
        self.mean, self.std = mean, std
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((mean,), (std,))])
        self.train_set = FashionMNISTIdx(train_x, train_y, tf)
        self.val_set = FashionMNISTIdx(val_x, val_y, tf)

        def loader(ds, shuffle, drop_last):
            w = cfg.workers
            return DataLoader(ds, batch_size=cfg.batch_size, shuffle=shuffle, num_workers=w,
                              pin_memory=torch.cuda.is_available(), persistent_workers=w > 0,
                              # 1.13 accepts only the default (2) without workers
                              prefetch_factor=2, drop_last=drop_last)

        self.train_loader = loader(self.train_set, True, True)
        self.val_loader = loader(self.val_set, False, False)

        self.model = SmallCNN(1, int(train_y.max()) + 1, train_x.shape[1]).to(self.device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr,
                                           weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer,
                                                                    T_max=cfg.epochs)
        self.amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(self.precision)
        self.scaler = torch.cuda.amp.GradScaler(enabled=self.precision == "fp16")

    def _autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp_dtype)

    def train_epoch(self):
        cfg = self.cfg
        self.model.train()
        t_iter = time.perf_counter()
        it = TimedIterator(iter(self.train_loader))  # dl-train: Loader::start_epoch()
        loader_start = time.perf_counter() - t_iter
        start = time.perf_counter()
        loss_sum, correct, seen = 0.0, 0, 0
        for index, (images, labels) in enumerate(it):
            images = images.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            with self._autocast():
                logits = self.model(images)
                loss = self.criterion(logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            if self.scaler.is_enabled():
                self.scaler.scale(loss).backward()
                self.scaler.unscale_(self.optimizer)  # clip the true gradients
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                self.optimizer.step()
            n = labels.size(0)
            loss_sum += loss.item() * n
            correct += (logits.argmax(1) == labels).sum().item()
            seen += n
            if cfg.log_every and (index + 1) % cfg.log_every == 0:
                log(f"batch {index + 1} loss {loss_sum / seen:.4f} acc {100 * correct / seen:.2f}% "
                    f"{seen / (time.perf_counter() - start):.0f} samples/s")
            if cfg.limit_batches and index + 1 >= cfg.limit_batches:
                break
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
        log(f"reference: {len(self.train_set)} training, {len(self.val_set)} validation samples, "
            f"mean {self.mean:.4f} std {self.std:.4f}; {self.device}, {self.precision}, "
            f"{torch.get_num_threads()} threads, {cfg.workers} workers, batch {cfg.batch_size}, "
            f"{cfg.epochs} epochs, torch {torch.__version__}")
        best = -1.0
        for epoch in range(cfg.epochs):
            lr = self.optimizer.param_groups[0]["lr"]
            t = self.train_epoch()
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
                self._save(m, best=val_acc > best)
            best = max(best, val_acc)

    def _save(self, m, best):
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
        ckpt = dict(model_state_dict=self.model.state_dict(),
                    optimizer_state_dict=self.optimizer.state_dict(),
                    scaler_state_dict=self.scaler.state_dict(), epoch=m["epoch"],
                    val_acc=m["val_acc"])
        for name in ("last.pt",) + (("best.pt",) if best else ()):
            tmp = os.path.join(self.cfg.run_dir, name + ".tmp")
            torch.save(ckpt, tmp)
            os.replace(tmp, os.path.join(self.cfg.run_dir, name))


def choose_device(asked):
    if asked == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if asked.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"device {asked}: this PyTorch sees no CUDA device; use --device cpu")
    return torch.device(asked)


# ---------------------------------------------------------------------------------------------
# Settings: defaults < DL_* environment < command line.


def _env_int(name, default):
    v = os.environ.get(name, "")
    if v == "" or v == "auto":
        return default
    try:
        return int(v)
    except ValueError:
        raise SystemExit(f"{name}={v!r}: expected a whole number or auto")


def parse_args(argv=None):
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=env.get("DL_DATA") or env.get("DL_DEFAULT_DATA")
                   or DEFAULT_DATA, help="Fashion-MNIST IDX directory (default %(default)s)")
    p.add_argument("--epochs", type=int, default=_env_int("DL_EPOCHS", 10))
    p.add_argument("--workers", type=int, default=_env_int("DL_WORKERS", 2))
    p.add_argument("--threads", type=int, default=_env_int("DL_THREADS", 0),
                   help="torch.set_num_threads; 0 leaves PyTorch's default")
    p.add_argument("--batch-size", type=int, default=_env_int("DL_BATCH_SIZE", 64))
    p.add_argument("--device", default=env.get("DL_DEVICE") or "auto")
    p.add_argument("--precision", default=env.get("DL_PRECISION") or "auto",
                   choices=["auto", "fp32", "fp16", "bf16"])
    p.add_argument("--run-dir", default=env.get("DL_RUN_DIR") or "",
                   help="where metrics.csv and checkpoints go (default: none written)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip-norm", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--limit-batches", type=int, default=0,
                   help="train on at most this many batches per epoch, 0 for all")
    p.add_argument("--log-every", type=int, default=0,
                   help="batches between progress lines on stderr, 0 for none")
    p.add_argument("--json", action="store_true", help="one JSON object per epoch on stdout")
    cfg = p.parse_args(argv)
    if cfg.epochs < 1 or cfg.batch_size < 1 or cfg.workers < 0 or cfg.threads < 0:
        p.error("epochs and batch size must be >= 1, workers and threads >= 0")
    return cfg


def main():
    cfg = parse_args()
    OptimizedTrainer(cfg).fit()


if __name__ == "__main__":
    main()
