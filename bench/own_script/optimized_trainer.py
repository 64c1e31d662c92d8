#!/usr/bin/env python3
"""The tutorial's OptimizedTrainer as a user writes it, adapted to dl-launch with dl_plan (the
lines marked `# dl_plan`): an ImageFolder of JPEGs (RandomResizedCrop, flip, normalize), a small
CNN, AdamW, a cosine schedule, autocast with a GradScaler where the plan says fp16, gradient
clipping. One epoch; prints one JSON line: epoch seconds, the time spent waiting for data, the
workers and batch it ran with. bench/own_script_bench.sh runs it.

    dl-launch -- python3 optimized_trainer.py --data DIR
"""

import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

import dl_plan  # dl_plan


class SmallCNN(nn.Module):
    def __init__(self, classes, size):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * (size // 4) ** 2, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    p = argparse.ArgumentParser(allow_abbrev=False)
    p.add_argument("--data", required=True, help="an ImageFolder tree (class folders of JPEGs)")
    p.add_argument("--size", type=int, default=128)
    args = p.parse_args()

    plan = dl_plan.setup()  # threads, seed, device, process group  # dl_plan
    tf = transforms.Compose([transforms.RandomResizedCrop(args.size),
                             transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    train_set = datasets.ImageFolder(args.data, tf)
    loader = dl_plan.loader(  # dl_plan
        DataLoader(train_set, **plan.dataloader_kwargs(train_set)))
    model = dl_plan.wrap(SmallCNN(len(train_set.classes), args.size).to(plan.device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=1)
    scaler = plan.grad_scaler()  # dl_plan
    criterion = nn.CrossEntropyLoss()

    start = time.perf_counter()
    wait = 0.0
    seen = 0
    it = iter(loader)
    while True:
        t0 = time.perf_counter()
        try:
            images, labels = next(it)
        except StopIteration:
            break
        wait += time.perf_counter() - t0
        images = images.to(plan.device, non_blocking=True)
        labels = labels.to(plan.device, non_blocking=True)
        with dl_plan.step(), plan.autocast():  # dl_plan
            loss = criterion(model(images).float(), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        seen += labels.size(0)
    scheduler.step()
    seconds = time.perf_counter() - start
    print(json.dumps(dict(epoch_seconds=seconds, data_wait_seconds=wait,
                          data_wait_percent=100 * wait / seconds, samples=seen,
                          samples_per_second=seen / seconds, workers=plan.workers,
                          threads=torch.get_num_threads(), batch_size=plan.batch_size)),
          flush=True)


if __name__ == "__main__":
    main()
