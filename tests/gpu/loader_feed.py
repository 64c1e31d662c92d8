#!/usr/bin/env python3
"""The GPU check's loader part (tests/gpu/gpu_check.sh): a ResNet-50 training step at 224 px under
fp16 autocast with a GradScaler on CUDA, fed by dl_loader (pinned buffers, non_blocking copies)
and by torch's DataLoader with torchvision's transforms (pin_memory, the same workers), on the
same JPEG ImageFolder, alternated, the median of --repeat runs of --steps steps each after a
warm-up. Checks that dl_loader's batches are pinned (its buffers from CUDA's allocator) and
prints `row: | ... |` lines for the check's table.

    loader_feed.py --data DIR --module-dir <build>/python [--workers N] [--batch N]
                   [--steps N] [--repeat N]
"""
import argparse
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--module-dir", required=True)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    sys.path.insert(0, a.module_dir)
    import torch
    import torchvision
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    import dl_loader

    if not torch.cuda.is_available():
        print("row: | dl_loader feeding ResNet-50 (CUDA) | FAIL | no CUDA device |")
        return 1
    dev = torch.device("cuda")
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(num_classes=2).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()

    def step(images, labels):
        images = images.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        labels = labels.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    ours = dl_loader.Loader(a.data, batch_size=a.batch, workers=a.workers, shuffle=True,
                            drop_last=True, pin_memory=True, channels_last=True)
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    theirs = DataLoader(datasets.ImageFolder(a.data, tf), batch_size=a.batch, shuffle=True,
                        drop_last=True, num_workers=a.workers, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4)
    first = next(iter(ours))[0]
    pinned = first.is_pinned()
    print(f"row: | dl_loader batches pinned (its buffers from cudaHostAlloc) | "
          f"{'ok' if pinned and ours.pinning == 'pool' else 'FAIL'} | pinning {ours.pinning}, "
          f"is_pinned {pinned} |")

    def timed(loader):
        it = iter(loader)
        for _ in range(5):  # warm-up: workers started, cuDNN's autotuner settled
            step(*next(it))
        torch.cuda.synchronize()
        start = time.perf_counter()
        n = 0
        for _ in range(a.steps):
            try:
                images, labels = next(it)
            except StopIteration:
                it = iter(loader)
                images, labels = next(it)
            step(images, labels)
            n += labels.numel()
        torch.cuda.synchronize()
        return n / (time.perf_counter() - start)

    rates = {"dl": [], "torch": []}
    for rep in range(a.repeat):
        for name in (("dl", "torch") if rep % 2 == 0 else ("torch", "dl")):
            rates[name].append(timed(ours if name == "dl" else theirs))
            print(f"loader_feed: {name} {rates[name][-1]:.0f} images/s", flush=True)
    # The GPU step alone, on one batch kept on the device: the ceiling a loader can reach.
    images, labels = next(iter(ours))
    images, labels = images.to(dev), labels.to(dev)
    for _ in range(5):
        step(images, labels)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(a.steps):
        step(images, labels)
    torch.cuda.synchronize()
    ceiling = a.steps * a.batch / (time.perf_counter() - start)
    d, t = statistics.median(rates["dl"]), statistics.median(rates["torch"])
    print(f"row: | ResNet-50 fp16 step fed by dl_loader vs DataLoader+torchvision "
          f"({a.workers} workers, batch {a.batch}) | ok | {d:.0f} vs {t:.0f} images/s "
          f"({d / t:.2f}x); the step alone {ceiling:.0f} images/s |")
    return 0 if pinned else 1


if __name__ == "__main__":
    sys.exit(main())
