#!/usr/bin/env python3
"""A model written in Python, scripted with TorchScript, for dl-train to train.

    python3 python/export_torchscript.py              # writes model.pt in the workspace
    dl-launch --model model.pt                       # dl-train trains it (or model = model.pt
                                                     # in dl.conf)

dl-train loads the file with torch::jit::load and trains its parameters with AdamW, like its
own models; its checkpoints (runs/<name>/best.pt) hold a model_state_dict with this module's
parameter names, so they load back here:

    model = Net(); model.load_state_dict(torch.load("runs/x/best.pt")["model_state_dict"])

Edit Net (layers, widths) as you like. What dl-train needs of it: forward takes one float tensor
of images, N x C x H x W (normalised), and returns one tensor of N x classes logits.
TorchScript reads the class's source, so the model must live in a file like this one, not in
`python -c`.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    """A small CNN with batch normalisation and dropout for 28x28 grey images (Fashion-MNIST)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, size: int = 28):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(64)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(64 * (size // 4) * (size // 4), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.dropout(torch.flatten(x, 1)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    workspace = os.environ.get("DL_WORKSPACE") or os.path.dirname(here)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(workspace, "model.pt"),
                   help="where to write the scripted model (default: %(default)s)")
    p.add_argument("--channels", type=int, default=1, help="image channels (default 1)")
    p.add_argument("--classes", type=int, default=10, help="classes (default 10)")
    p.add_argument("--size", type=int, default=28, help="image height and width (default 28)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.channels < 1 or args.classes < 2 or args.size < 4 or args.size % 4:
        p.error("expected channels >= 1, classes >= 2 and a size that is a multiple of 4")

    torch.manual_seed(args.seed)
    model = Net(args.channels, args.classes, args.size)
    scripted = torch.jit.script(model)
    # A forward pass here catches a shape mistake now rather than in dl-train.
    with torch.no_grad():
        out = scripted.eval()(torch.zeros(2, args.channels, args.size, args.size))
    if tuple(out.shape) != (2, args.classes):
        sys.exit(f"export_torchscript: forward gave {tuple(out.shape)}, expected (2, {args.classes})")
    scripted.train()
    out_path = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    scripted.save(out_path)

    params = sum(t.numel() for t in model.parameters())
    rel = os.path.relpath(out_path, workspace)
    model_arg = rel if not rel.startswith("..") else out_path
    print(f"saved {out_path}: TorchScript Net, {args.channels}x{args.size}x{args.size} -> "
          f"{args.classes} classes, {params} parameters")
    print("train it with dl-train:")
    print(f"  dl-launch --workspace {workspace} --model {model_arg}")
    print(f"  (or put `model = {model_arg}` in {os.path.join(workspace, 'dl.conf')}; "
          f"dl-train --model {out_path} alone)")


if __name__ == "__main__":
    main()
