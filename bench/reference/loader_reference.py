#!/usr/bin/env python3
"""torchvision's loader on an ImageFolder of JPEGs: the Python half of the loader comparison.

The pipeline the tutorial (and torchvision's ImageNet reference) uses: ImageFolder, then
RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize with ImageNet statistics, in a
DataLoader with batch 64, shuffle, drop_last, pin_memory where CUDA is available and persistent
workers. Like loader_bench's --mode loader, each run times its last epoch (the first ones start
the workers and warm the page cache) and prints one line: ``images_per_second <value>``.

The main process gets one intra-op thread, so "workers 0" is one thread doing all the work, as on
the C++ side.

    loader_reference.py --data DIR [--workers N] [--epochs N] [--batch N]
"""
import argparse
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="ImageFolder root (one folder per class)")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    if args.workers < 0 or args.epochs < 1 or args.batch < 1:
        print("loader_reference: --workers >= 0, --epochs >= 1 and --batch >= 1 expected",
              file=sys.stderr)
        return 64

    torch.set_num_threads(1)
    torch.manual_seed(1)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    try:
        dataset = datasets.ImageFolder(args.data, transform=transform)
    except (FileNotFoundError, RuntimeError) as e:
        print(f"loader_reference: {args.data}: {e}", file=sys.stderr)
        return 66
    loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, drop_last=True,
                        num_workers=args.workers, pin_memory=torch.cuda.is_available(),
                        persistent_workers=args.workers > 0)
    rate = 0.0
    for _ in range(args.epochs):
        images = 0
        start = time.perf_counter()
        for data, _target in loader:
            images += data.shape[0]
        rate = images / (time.perf_counter() - start)
    print(f"images_per_second {rate:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
