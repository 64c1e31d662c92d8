# Writes a small 3-class ImageFolder (train/ and val/) of JPEGs for the newcomer test
# (tests/newcomer/newcomer_test.py): random sizes between 300 and 900 px, each class with its own
# colour and pattern (horizontal stripes, vertical stripes, a checkerboard) so accuracy can rise.
# Usage: make_images.py OUT_DIR [--train N] [--val N] [--seed S]
import argparse
import os
import random

from PIL import Image, ImageDraw

CLASSES = {
    "stripes_h": ((200, 40, 40), "h"),
    "stripes_v": ((40, 160, 40), "v"),
    "checks": ((40, 60, 200), "c"),
}


def draw(rng, colour, pattern):
    w, h = rng.randint(300, 900), rng.randint(300, 900)
    bg = tuple(min(255, max(0, c // 4 + rng.randint(-20, 20))) for c in colour)
    fg = tuple(min(255, max(0, c + rng.randint(-30, 30))) for c in colour)
    img = Image.new("RGB", (w, h), bg)
    d = ImageDraw.Draw(img)
    step = rng.randint(20, 60)
    if pattern == "h":
        for y in range(0, h, 2 * step):
            d.rectangle([0, y, w, y + step], fill=fg)
    elif pattern == "v":
        for x in range(0, w, 2 * step):
            d.rectangle([x, 0, x + step, h], fill=fg)
    else:
        for y in range(0, h, step):
            for x in range((y // step % 2) * step, w, 2 * step):
                d.rectangle([x, y, x + step, y + step], fill=fg)
    return img


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--train", type=int, default=60, help="training images per class")
    p.add_argument("--val", type=int, default=15, help="validation images per class")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    for split, n in (("train", args.train), ("val", args.val)):
        for name, (colour, pattern) in CLASSES.items():
            folder = os.path.join(args.out, split, name)
            os.makedirs(folder, exist_ok=True)
            for i in range(n):
                draw(rng, colour, pattern).save(os.path.join(folder, f"{i:04d}.jpg"), quality=85)
    print(f"wrote {args.out}: {len(CLASSES)} classes, {args.train}+{args.val} images each")


if __name__ == "__main__":
    main()
