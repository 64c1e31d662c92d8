#!/usr/bin/env python3
"""The GPU check's user script (gpu_check.sh): a user's own training loop written with dl_plan,
which dl-launch's batch-size search measures through its step probes on CUDA. The model is a
ResNet-style convolutional network at 224x224 (torchvision's resnet50 where it is installed); the
images are made on the GPU from each batch's indices, so the loader costs nothing and the step's
memory is the model's.

    DL_BATCH_SIZE=N python3 step_probe_script.py --steps 30   # a run at that batch, validation too
"""

import argparse
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import dl_plan


class Indices(Dataset):
    def __len__(self):
        return 16384

    def __getitem__(self, i):
        return i


def model():
    try:
        import torchvision

        return torchvision.models.resnet50(num_classes=100)
    except ImportError:
        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        return nn.Sequential(block(3, 64), block(64, 128), block(128, 256), block(256, 512),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 100))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: epoch)")
    args = p.parse_args()
    plan = dl_plan.setup()
    data = Indices()
    loader = dl_plan.loader(DataLoader(data, **plan.dataloader_kwargs(data)))
    net = dl_plan.wrap(model().to(plan.device).to(memory_format=torch.channels_last))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    scaler = plan.grad_scaler()
    crit = nn.CrossEntropyLoss()
    steps = 0
    for idx in loader:
        n = idx.shape[0]
        x = torch.randn(n, 3, 224, 224, device=plan.device).to(memory_format=torch.channels_last)
        y = (idx % 100).to(plan.device)
        with dl_plan.step():
            with plan.autocast():
                loss = crit(net(x).float(), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        steps += 1
        if args.steps and steps >= args.steps:
            break
    # Validation at the training batch, as a trainer's evaluate() would run it.
    net.eval()
    with torch.no_grad(), plan.autocast():
        x = torch.randn(plan.batch_size, 3, 224, 224, device=plan.device)
        net(x.to(memory_format=torch.channels_last)).float().sum().item()
    peak = torch.cuda.max_memory_reserved(plan.device) if plan.is_cuda else 0
    print(f"trained {steps} steps at batch {plan.batch_size} ({plan.precision}), validated; "
          f"peak reserved {peak / 2**30:.2f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
