# The tutorial's "OptimizedTrainer" as a plain PyTorch user writes it, before any dl-tools
# adaptation: torchvision ImageFolder + DataLoader workers, a small CNN, AdamW, a cosine schedule,
# autocast + GradScaler on CUDA, gradient clipping after unscale_, validation and a checkpoint.
# This copy: adapted to dl_plan as docs/python.md shows, so that dl-launch measures it. Each start
# appends "start <pid>" to starts.log in the working directory, so a test can count its starts.
# tests/newcomer/newcomer_test.py runs it (and its two adapted copies) under dl-launch.
import argparse
import os
import time

import torch
import torch.nn as nn
import dl_plan
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def parse_args():
    p = argparse.ArgumentParser(description="OptimizedTrainer: an image classifier")
    p.add_argument("--data", default="data", help="ImageFolder root with train/ and val/")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--limit-batches", type=int, default=0, help="stop each epoch after N batches")
    p.add_argument("--checkpoint", default="checkpoint.pt")
    return p.parse_args()


class SmallCNN(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def main():
    with open("starts.log", "a") as f:
        f.write(f"start {os.getpid()}\n")
    args = parse_args()
    plan = dl_plan.setup(args)
    device = plan.device

    normalize = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_tf = transforms.Compose([transforms.RandomResizedCrop(224),
                                   transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), normalize])
    val_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                                 transforms.ToTensor(), normalize])
    train_set = datasets.ImageFolder(os.path.join(args.data, "train"), transform=train_tf)
    val_set = datasets.ImageFolder(os.path.join(args.data, "val"), transform=val_tf)

    train_loader = dl_plan.loader(DataLoader(train_set, **plan.dataloader_kwargs(train_set)))
    val_loader = DataLoader(val_set, **plan.dataloader_kwargs(val_set, train=False))

    model = SmallCNN(len(train_set.classes)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = plan.grad_scaler()

    for epoch in range(args.epochs):
        start = time.time()
        model.train()
        seen, loss_sum = 0, 0.0
        for i, (images, labels) in enumerate(train_loader):
            if args.limit_batches and i >= args.limit_batches:
                break
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            with dl_plan.step(), plan.autocast():
                loss = criterion(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            seen += labels.size(0)
            loss_sum += loss.item() * labels.size(0)
        scheduler.step()

        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for images, labels in val_loader:
                images = images.to(device, non_blocking=True)
                labels = labels.to(device, non_blocking=True)
                with plan.autocast():
                    correct += (model(images).argmax(1) == labels).sum().item()
                total += labels.size(0)
        acc = 100.0 * correct / max(total, 1)
        print(f"epoch {epoch + 1}/{args.epochs}: loss {loss_sum / max(seen, 1):.4f}, "
              f"{seen} samples, {time.time() - start:.1f} s, validation accuracy {acc:.2f}%")
        torch.save({"epoch": epoch + 1, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(),
                    "scaler_state_dict": scaler.state_dict(),
                    "scheduler_state_dict": scheduler.state_dict(),
                    "classes": train_set.classes}, args.checkpoint)
    print(f"done: validation accuracy {acc:.2f}%; checkpoint {args.checkpoint}")


if __name__ == "__main__":
    main()
