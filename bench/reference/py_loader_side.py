#!/usr/bin/env python3
"""One side of the Python loader comparison (bench/py_loader_bench.sh): an ImageFolder of JPEGs
to normalised float32 batches of 64 x 3 x 224 x 224 in a Python process, either through
dl_loader (dl-train's C++ pipeline, worker threads) or through torch's DataLoader with
torchvision's RandomResizedCrop(224), RandomHorizontalFlip, ToTensor and Normalize (worker
processes). Both shuffle, drop the last short batch and pin memory where CUDA is. The main
process gets one intra-op thread, so "workers 0" is one thread doing all the work on both sides.
Times the last of --epochs epochs (the first starts the workers and warms the page cache) and
prints one line: ``images_per_second <value>``.

    py_loader_side.py --side dl|dl-full|torchvision --data DIR [--workers N] [--epochs N]
                      [--batch N] [--module-dir DIR]

dl-full is dl_loader with scaled_decode=False (every JPEG decoded at full size, as PIL does); the
dl sides also print ``decode_scales {M: JPEGs decoded at M/8}`` over all epochs.
"""
import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=["dl", "dl-full", "torchvision"], required=True)
    parser.add_argument("--data", required=True, help="ImageFolder root (one folder per class)")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--module-dir", help="where dl_loader is (<build>/python)")
    args = parser.parse_args()
    if args.workers < 0 or args.epochs < 1 or args.batch < 1:
        print("py_loader_side: --workers >= 0, --epochs >= 1 and --batch >= 1 expected",
              file=sys.stderr)
        return 64
    if args.module_dir:
        sys.path.insert(0, args.module_dir)

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(1)
    if args.side in ("dl", "dl-full"):
        import dl_loader

        loader = dl_loader.Loader(args.data, batch_size=args.batch, workers=args.workers,
                                  shuffle=True, drop_last=True, seed=1,
                                  scaled_decode=args.side == "dl")
    else:
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms

        transform = transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ])
        dataset = datasets.ImageFolder(args.data, transform=transform)
        loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, drop_last=True,
                            num_workers=args.workers, pin_memory=torch.cuda.is_available(),
                            persistent_workers=args.workers > 0)
    rate = 0.0
    for _ in range(args.epochs):
        images = 0
        start = time.perf_counter()
        for data, _target in loader:
            assert data.dtype == torch.float32 and data.shape[1:] == (3, 224, 224)
            images += data.shape[0]
        rate = images / (time.perf_counter() - start)
    print(f"images_per_second {rate:.1f}")
    if args.side != "torchvision":
        print(f"decode_scales {dict(sorted(loader.decode_scales.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
