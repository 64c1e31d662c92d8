#!/usr/bin/env python3
"""Tests of dl_loader (python/dl_loader over trainer/loader_module) against the real torch and
torchvision: tensors' shapes, dtypes and values; determinism and DistributedSampler's exact
shares; the transforms held to torchvision's (same crop box and flip, validation's resize and
centre crop, the crop distribution); bad samples skipped and counted; bad input as Python
exceptions; memory per epoch; threads after a break; the GIL released while batches are made;
Ctrl-C. Every data set is written here.

    dl_loader_test.py --module-dir <build>/python [unittest arguments]

Prints the figures it measured (FIGURE lines). Exit 77 (SKIPPED) without torch and torchvision.
"""

import argparse
import io
import json
import math
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
import zlib

parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--module-dir", required=True)
opts, rest = parser.parse_known_args()
MODULE_DIR = os.path.abspath(opts.module_dir)
sys.path.insert(0, MODULE_DIR)

try:
    import torch
    import torchvision
    from PIL import Image
    from torchvision import transforms
    from torchvision.transforms import functional as F
except ImportError as error:
    print(f"SKIPPED: {sys.executable} lacks torch, torchvision or PIL ({error})")
    sys.exit(77)

import dl_loader  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# JPEGs decoded at a reduced scale against torchvision's full-size decode, in levels of 255:
# bounds over the measured figures (test_jpegs_decoded_at_the_scale_needed_stay_near_torchvisions).
SCALED_MEAN_LEVELS, SCALED_MAX_LEVELS = 1.0, 16.0  # measured: 0.54, 9.0
PLAN_VARS = [v for v in os.environ if v.startswith("DL_")] + [
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"]
for var in PLAN_VARS:  # a dl-launch or torchrun around ctest must not set the plan here
    os.environ.pop(var, None)


def figure(name, value):
    print(f"FIGURE {name}: {value}", flush=True)


def picture(seed, width, height):
    """A smooth picture with detail at every scale (a resize's errors show on it)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.rand((3, 8, 8), generator=g)
    smooth = torch.nn.functional.interpolate(base[None], size=(height, width), mode="bicubic",
                                             align_corners=False)[0]
    noise = torch.rand((3, height, width), generator=g) * 0.2
    x = ((smooth * 0.8 + noise).clamp(0, 1) * 255).round().to(torch.uint8)
    return Image.fromarray(x.permute(1, 2, 0).numpy(), "RGB")


def write_folder(root, classes, per_class, size=(96, 80), fmt="JPEG", seed=0):
    paths = []
    for c, name in enumerate(classes):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(per_class):
            w, h = size if isinstance(size, tuple) else size(c, i)
            path = os.path.join(root, name, f"{i:03d}.{'jpg' if fmt == 'JPEG' else 'png'}")
            picture(seed + 1000 * c + i, w, h).save(path, fmt, quality=90)
            paths.append(path)
    return paths


def write_idx(root, images, labels):
    """An MNIST-format directory (raw files) with the same images as train and test."""
    os.makedirs(root, exist_ok=True)
    n, rows, cols = images.shape
    for prefix in ("train", "t10k"):
        with open(os.path.join(root, f"{prefix}-images-idx3-ubyte"), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, rows, cols) + images.numpy().tobytes())
        with open(os.path.join(root, f"{prefix}-labels-idx1-ubyte"), "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + bytes(labels))


def png_bomb(path, side=60000):
    """A PNG whose header claims side x side pixels, with a few bytes of data."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
                chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def threads():
    return len(os.listdir("/proc/self/task"))


def threads_settled(expected, seconds=10.0):
    """The thread count once it is `expected`, or after `seconds`: a joined thread has ended, but
    the kernel takes it out of /proc/self/task a moment later (a loaded machine shows the gap)."""
    deadline = time.monotonic() + seconds
    while threads() != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return threads()


def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Scratch(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        self._dir.cleanup()


class TensorsTest(Scratch):
    def test_idx_batches_hold_the_files_pixels_and_labels(self):
        g = torch.Generator().manual_seed(1)
        images = torch.randint(0, 256, (10, 6, 6), dtype=torch.uint8, generator=g)
        labels = [i % 4 for i in range(10)]
        write_idx(os.path.join(self.dir, "idx"), images, labels)
        raw = dl_loader.Loader(os.path.join(self.dir, "idx"), batch_size=4, shuffle=False,
                               workers=2, dtype=torch.uint8)
        self.assertEqual(len(raw), 3)
        self.assertEqual(raw.shape, (1, 6, 6))
        self.assertEqual(raw.classes, ["0", "1", "2", "3"])
        got = list(raw)
        self.assertEqual([tuple(x.shape) for x, _ in got], [(4, 1, 6, 6)] * 2 + [(2, 1, 6, 6)])
        self.assertTrue(all(x.dtype == torch.uint8 and y.dtype == torch.int64 for x, y in got))
        self.assertTrue(torch.equal(torch.cat([x for x, _ in got])[:, 0], images))
        self.assertEqual(torch.cat([y for _, y in got]).tolist(), labels)

        norm = dl_loader.Loader(os.path.join(self.dir, "idx"), batch_size=4, shuffle=False,
                                workers=0)
        mean = images.double().div(255).mean().item()
        std = images.double().div(255).std(unbiased=False).item()
        self.assertAlmostEqual(norm.mean[0], mean, places=5)
        self.assertAlmostEqual(norm.std[0], std, places=5)
        x = torch.cat([b for b, _ in norm])
        self.assertEqual(x.dtype, torch.float32)
        expected = (images.float()[:, None] / 255 - norm.mean[0]) / norm.std[0]
        self.assertLess((x - expected).abs().max().item(), 1e-5)

    def test_image_folder_gives_normalised_rgb_224_in_either_memory_format(self):
        write_folder(self.dir, ["cat", "dog"], 3)
        loader = dl_loader.Loader(self.dir, batch_size=4, workers=2, seed=3)
        self.assertEqual(loader.classes, ["cat", "dog"])
        self.assertEqual(loader.class_to_idx, {"cat": 0, "dog": 1})
        self.assertEqual((len(loader), loader.num_samples, loader.dataset_size), (2, 6, 6))
        for ours, imagenet in zip(loader.mean + loader.std, MEAN + STD):
            self.assertAlmostEqual(ours, imagenet, places=6)
        batches = list(loader)
        x, y = batches[0]
        self.assertEqual((tuple(x.shape), x.dtype, tuple(y.shape)), ((4, 3, 224, 224),
                                                                    torch.float32, (4,)))
        self.assertTrue(x.is_contiguous())
        self.assertLess(x.min().item(), -1.5)  # normalised: about -2.1 to 2.6
        self.assertGreater(x.max().item(), 1.5)
        self.assertEqual(sorted(torch.cat([b[1] for b in batches]).tolist()), [0, 0, 0, 1, 1, 1])

        last = dl_loader.Loader(self.dir, batch_size=4, workers=2, seed=3, channels_last=True)
        z = next(iter(last))[0]
        self.assertEqual(tuple(z.shape), (4, 3, 224, 224))
        self.assertTrue(z.is_contiguous(memory_format=torch.channels_last))
        self.assertTrue(torch.equal(z, x))  # the same values, another memory order
        u8 = dl_loader.Loader(self.dir, batch_size=4, workers=0, seed=3, dtype=torch.uint8,
                              channels_last=True)
        b = next(iter(u8))[0]
        self.assertTrue(b.is_contiguous(memory_format=torch.channels_last))
        mean = torch.tensor(MEAN).view(1, 3, 1, 1)
        std = torch.tensor(STD).view(1, 3, 1, 1)
        self.assertLess(((b.float() / 255 - mean) / std - x).abs().max().item(), 1e-5)

    def test_uint8_batches_are_the_loaders_memory_not_a_copy(self):
        write_folder(self.dir, ["a"], 8, size=(40, 40))
        loader = dl_loader.Loader(self.dir, batch_size=2, workers=0, dtype=torch.uint8)
        addresses = set()
        for _ in range(3):
            for x, y in loader:
                addresses.add(x.data_ptr())
                self.assertEqual(x.data_ptr() % 64, 0)  # the pool's 64-byte-aligned block
                self.assertGreaterEqual(y.data_ptr() - x.data_ptr(), x.numel())  # then labels
                del x, y
        # 12 batches, each a view of one of the pool's blocks: the same block again and again.
        self.assertLessEqual(len(addresses), loader._core.pool_buffers)
        self.assertLessEqual(loader._core.pool_buffers, 2)


class OrderTest(Scratch):
    def setUp(self):
        super().setUp()
        images = torch.arange(23 * 4, dtype=torch.int64).remainder(256).to(torch.uint8)
        write_idx(os.path.join(self.dir, "idx"), images.view(23, 2, 2), list(range(23)))
        self.idx = os.path.join(self.dir, "idx")

    def labels(self, loader):
        return [int(v) for _, y in loader for v in y]

    def test_a_seed_gives_the_same_batches_whatever_the_workers(self):
        write_folder(os.path.join(self.dir, "img"), ["a", "b"], 4, size=(60, 50))
        a = dl_loader.Loader(os.path.join(self.dir, "img"), batch_size=3, workers=0, seed=5)
        b = dl_loader.Loader(os.path.join(self.dir, "img"), batch_size=3, workers=2, seed=5)
        for _ in range(2):  # two epochs: each the same on both, and unlike the other
            xa, xb = [torch.cat([x for x, _ in it]) for it in (a, b)]
            self.assertTrue(torch.equal(xa, xb))
        a.set_epoch(0)
        first, second = torch.cat([x for x, _ in a]), torch.cat([x for x, _ in a])
        self.assertFalse(torch.equal(first, second))

    def test_the_jpeg_index_changes_no_pixel_over_epochs(self):
        # Photo-like files (PIL's encoder): later epochs' crops start from the points the earlier
        # ones recorded, and must give the bytes of a loader that records none.
        write_folder(os.path.join(self.dir, "img"), ["a", "b"], 6,
                     size=lambda c, i: (300 + 37 * i, 260 + 23 * c))
        runs = {}
        for mb in (512, 0):
            loader = dl_loader.Loader(os.path.join(self.dir, "img"), batch_size=4, workers=2,
                                      seed=3, jpeg_index_mb=mb, dtype=torch.uint8)
            runs[mb] = [torch.cat([x.clone() for x, _ in loader]) for _ in range(4)]
            if mb:
                held = loader.jpeg_index_bytes
                self.assertGreater(held, 12 * 1000)  # every file's points, a few KiB each
                self.assertLess(held, 12 * 16 * 1024)
                figure("JPEG index after 4 epochs of 12 photos (bytes)", held)
            else:
                self.assertEqual(loader.jpeg_index_bytes, 0)
        for epoch, (a, b) in enumerate(zip(runs[512], runs[0])):
            self.assertTrue(torch.equal(a, b), f"epoch {epoch}")
        self.assertFalse(torch.equal(runs[0][0], runs[0][1]))

    def test_ranks_take_distributed_samplers_exact_shares(self):
        from torch.utils.data import DistributedSampler
        for epoch in (0, 3):
            shares = []
            for rank in range(3):
                loader = dl_loader.Loader(self.idx, batch_size=4, workers=1, seed=7, rank=rank,
                                          world_size=3)
                loader.set_epoch(epoch)
                sampler = DistributedSampler(range(23), num_replicas=3, rank=rank, shuffle=True,
                                             seed=7)
                sampler.set_epoch(epoch)
                got = self.labels(loader)
                self.assertEqual(got, list(sampler))
                shares.append(got)
            self.assertEqual(set().union(*shares), set(range(23)))
            self.assertEqual(sum(len(s) for s in shares), 24)  # padded to 3 x 8, as torch does
        # drop_last: the sampler's tail cut to 3 x 7, as DistributedSampler(drop_last=True)
        # does, then the short batch dropped: 7 // 2 batches of 2 a rank.
        for rank in range(3):
            loader = dl_loader.Loader(self.idx, batch_size=2, seed=7, rank=rank, world_size=3,
                                      drop_last=True)
            sampler = DistributedSampler(range(23), num_replicas=3, rank=rank, seed=7,
                                         drop_last=True)
            self.assertEqual(len(list(sampler)), 7)
            self.assertEqual(self.labels(loader), list(sampler)[:6])
        # Validation: every third sample, no padding, so the shares add up to the whole part.
        vals = [self.labels(dl_loader.Loader(self.idx, batch_size=5, train=False, rank=r,
                                             world_size=3)) for r in range(3)]
        self.assertEqual(sorted(sum(vals, [])), list(range(23)))

    def test_indices_and_a_users_sampler(self):
        loader = dl_loader.Loader(self.idx, batch_size=4, indices=[20, 3, 9], shuffle=False)
        self.assertEqual(self.labels(loader), [20, 3, 9])
        from torch.utils.data import DistributedSampler
        sampler = DistributedSampler(range(23), num_replicas=2, rank=1, seed=2)
        loader = dl_loader.Loader(self.idx, batch_size=5, sampler=sampler)
        loader.set_epoch(4)
        sampler.set_epoch(4)
        expected = list(sampler)
        self.assertEqual(self.labels(loader), expected)

    def test_drop_last_and_a_break_then_a_new_epoch(self):
        loader = dl_loader.Loader(self.idx, batch_size=5, shuffle=False, drop_last=True,
                                  workers=2)
        self.assertEqual(len(loader), 4)
        self.assertEqual(len(self.labels(loader)), 20)
        for i, _ in enumerate(loader):
            if i == 1:
                break
        self.assertEqual(self.labels(loader), list(range(20)))


class TorchvisionTest(Scratch):
    """The transforms against torchvision's: the figures go to the closing note."""

    def test_same_crop_box_and_flip_give_torchvisions_output(self):
        img = picture(11, 500, 375)
        rgb = torch.from_numpy(__import__("numpy").asarray(img).copy())
        to_tensor = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
        mean = torch.tensor(MEAN).view(3, 1, 1)
        std = torch.tensor(STD).view(3, 1, 1)
        worst = {}
        for (top, left, h, w, flip) in [(10, 20, 120, 150, False), (0, 0, 200, 180, True),
                                         (30, 40, 300, 400, False), (100, 5, 260, 350, True),
                                         (0, 0, 375, 500, False), (50, 60, 224, 224, True)]:
            ours = torch.frombuffer(bytearray(dl_loader._core.resized_crop(
                rgb.numpy(), top, left, h, w, flip, 224)), dtype=torch.uint8).view(3, 224, 224)
            ref = F.resized_crop(img, top, left, h, w, [224, 224],
                                 interpolation=transforms.InterpolationMode.BILINEAR)
            if flip:
                ref = F.hflip(ref)
            ref = to_tensor(ref)
            diff = ((ours.float() / 255 - mean) / std - ref).abs()
            regime = "upscale" if h <= 224 and w <= 224 else "downscale"
            levels = (diff * std * 255).max().item()
            worst[regime] = max(worst.get(regime, 0.0), levels)
            mean_levels = (diff * std * 255).mean().item()
            figure(f"crop {h}x{w}{' flipped' if flip else ''} ({regime}) max abs diff",
                   f"{diff.max().item():.4f} normalised, {levels:.1f} of 255; mean "
                   f"{mean_levels:.2f} of 255")
            # Shrinking: Pillow's antialiased bilinear, step for step (data/resample.h): the same
            # bytes. Growing: OpenCV's bilinear, Pillow's up to its rounding (a level).
            if regime == "upscale":
                self.assertLess(levels, 1.01, (top, left, h, w, flip))
                self.assertLess(mean_levels, 0.5, (top, left, h, w, flip))
            else:
                self.assertLess(levels, 0.01, (top, left, h, w, flip))  # float rounding only
        figure("crop equality, worst by regime (levels of 255)",
               ", ".join(f"{k} {v:.1f}" for k, v in sorted(worst.items())))

    def test_validation_resize_and_centre_crop_equal_torchvisions(self):
        paths = write_folder(self.dir, ["a"], 4, size=lambda c, i: [(320, 240), (256, 256),
                                                                    (500, 300), (240, 400)][i],
                             fmt="PNG")
        loader = dl_loader.Loader(self.dir, batch_size=4, train=False, workers=0)
        ours = next(iter(loader))[0]
        ref_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                                     transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
        std = torch.tensor(STD).view(3, 1, 1)
        for i, path in enumerate(sorted(paths)):
            ref = ref_tf(Image.open(path).convert("RGB"))
            diff = (ours[i] - ref).abs()
            levels = (diff * std * 255)
            figure(f"validation {Image.open(path).size} max abs diff",
                   f"{diff.max().item():.4f} normalised, {levels.max().item():.1f} of 255; "
                   f"mean {levels.mean().item():.2f} of 255")
            if min(Image.open(path).size) >= 256:  # shrunk (or kept): Pillow's very bytes
                self.assertLess(levels.max().item(), 0.01, path)  # float rounding only
            else:  # grown: within Pillow's rounding
                self.assertLess(levels.max().item(), 1.01, path)

    def test_jpegs_decoded_at_the_scale_needed_stay_near_torchvisions(self):
        # Photo-sized JPEGs through validation (deterministic: Resize(256) + CenterCrop(224)):
        # at full size the decode is PIL's (the same libjpeg IDCT) and the resize Pillow's, so the
        # bytes are torchvision's; decoded at M/8, the scaled IDCT's smoothing shows, measured
        # here and written into docs/python.md.
        sizes = [(640, 480), (900, 700), (1000, 667), (333, 500), (1000, 1000)]
        paths = write_folder(self.dir, ["a"], len(sizes), size=lambda c, i: sizes[i])
        ref_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224),
                                     transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
        std = torch.tensor(STD).view(3, 1, 1)
        refs = [ref_tf(Image.open(p).convert("RGB")) for p in sorted(paths)]
        for scaled in (False, True):
            loader = dl_loader.Loader(self.dir, batch_size=len(sizes), train=False, workers=0,
                                      scaled_decode=scaled)
            ours = next(iter(loader))[0]
            levels = torch.stack([(ours[i] - refs[i]).abs() * std * 255
                                  for i in range(len(sizes))])
            figure(f"validation of JPEGs {sizes} decoded {'scaled' if scaled else 'at full size'}"
                   f" (scales {loader.decode_scales}) vs torchvision (levels of 255)",
                   f"max {levels.max().item():.1f}, mean {levels.mean().item():.3f}, 99th "
                   f"percentile {levels.flatten().kthvalue(int(levels.numel() * 0.99)).values.item():.1f}")
            if not scaled:
                self.assertEqual(loader.decode_scales, {8: len(sizes)})
                self.assertLess(levels.max().item(), 0.01)  # float rounding only
            else:
                self.assertGreater(sum(n for m, n in loader.decode_scales.items() if m < 8), 0)
                self.assertLess(levels.mean().item(), SCALED_MEAN_LEVELS)
                self.assertLess(levels.max().item(), SCALED_MAX_LEVELS)

    def test_crop_areas_and_ratios_follow_random_resized_crops(self):
        n = 20000
        ours = dl_loader._core.plan_train_crops(375, 500, n, 1234, 0.08, 1.0, 3 / 4, 4 / 3)
        torch.manual_seed(1234)
        img = Image.new("RGB", (500, 375))
        theirs = [transforms.RandomResizedCrop.get_params(img, [0.08, 1.0], [3 / 4, 4 / 3])
                  for _ in range(n)]

        def ks(a, b):
            """The two-sample Kolmogorov-Smirnov statistic (ties stepped over together)."""
            a, b = sorted(a), sorted(b)
            i = j = 0
            d = 0.0
            while i < len(a) and j < len(b):
                v = min(a[i], b[j])
                while i < len(a) and a[i] == v:
                    i += 1
                while j < len(b) and b[j] == v:
                    j += 1
                d = max(d, abs(i / len(a) - j / len(b)))
            return d

        critical = 1.95 * math.sqrt(2 / n)  # alpha 0.001
        area = ks([h * w / (375 * 500) for _, _, h, w, _ in ours],
                  [h * w / (375 * 500) for _, _, h, w in theirs])
        ratio = ks([math.log(w / h) for _, _, h, w, _ in ours],
                   [math.log(w / h) for _, _, h, w in theirs])
        top = ks([t / max(1, 375 - h) for t, _, h, _, _ in ours],
                 [t / max(1, 375 - h) for t, _, h, _ in theirs])
        flips = sum(f for *_, f in ours) / n
        figure("crop distribution (KS statistic, critical at alpha 0.001)",
               f"area {area:.4f}, log aspect ratio {ratio:.4f}, top offset {top:.4f}; critical "
               f"{critical:.4f}; flips {100 * flips:.1f}% over {n} draws")
        self.assertLess(area, critical)
        self.assertLess(ratio, critical)
        self.assertLess(top, critical)
        self.assertLess(abs(flips - 0.5), 0.02)
        # A test that can fail: a narrower scale range is told apart at once.
        narrow = dl_loader._core.plan_train_crops(375, 500, n, 1, 0.2, 1.0, 3 / 4, 4 / 3)
        self.assertGreater(ks([h * w / (375 * 500) for _, _, h, w, _ in narrow],
                              [h * w / (375 * 500) for _, _, h, w in theirs]), critical)


class BadInputTest(Scratch):
    def bad_folder(self):
        write_folder(self.dir, ["a", "b"], 4, size=(64, 48))
        with open(os.path.join(self.dir, "a", "corrupt.jpg"), "wb") as f:
            f.write(b"\xff\xd8\xff\xe0" + os.urandom(300))
        open(os.path.join(self.dir, "a", "empty.jpg"), "wb").close()
        png_bomb(os.path.join(self.dir, "b", "bomb.png"))

    def test_bad_samples_are_skipped_and_counted_by_reason(self):
        self.bad_folder()
        loader = dl_loader.Loader(self.dir, batch_size=4, workers=2, max_bad_fraction=0.5)
        n = sum(len(y) for _, y in loader)
        self.assertEqual(n, 8)
        self.assertEqual({k: v for k, v in loader.skipped.items() if v},
                         {"empty": 1, "too many pixels": 1, "undecodable": 1})
        reasons = sorted((os.path.basename(p), r) for _, p, r, _ in loader.failures())
        self.assertEqual(reasons, [("bomb.png", "too many pixels"), ("corrupt.jpg", "undecodable"),
                                   ("empty.jpg", "empty")])
        rows = [f"| {name} | {reason} |" for name, reason in reasons]
        figure("bad-input table", " ".join(rows))

    def test_files_cut_short_are_skipped_as_cut_short(self):
        """Every format an ImageFolder lists, cut just after its header, in the middle and in its
        last bytes, with training crops and the evaluation transform: each file is skipped as
        "cut short", never returned as a picture; a JPEG with garbage in its scan is
        "undecodable" with libjpeg's warning."""
        write_folder(self.dir, ["a", "b"], 4, size=(64, 48))
        image = picture(5, 160, 120)
        cuts, garbage = [], []
        for name, fmt, ext, options in (("baseline", "JPEG", "jpg", {"quality": 90}),
                                        ("progressive", "JPEG", "jpg", {"progressive": True}),
                                        ("png", "PNG", "png", {}), ("bmp", "BMP", "bmp", {}),
                                        ("webp", "WEBP", "webp", {"quality": 90})):
            buffer = io.BytesIO()
            image.save(buffer, fmt, **options)
            whole = buffer.getvalue()
            if fmt == "JPEG":  # the header ends where the first scan begins
                sos = whole.index(b"\xff\xda")
                header = sos + 2 + int.from_bytes(whole[sos + 2:sos + 4], "big")
            else:  # past the fields that give the size
                header = {"png": 33, "bmp": 54, "webp": 30}[name]
            for where, at in (("header", header + 2), ("middle", len(whole) // 2),
                              ("end-4", len(whole) - 4), ("end-1", len(whole) - 1)):
                path = os.path.join(self.dir, "a", f"cut-{name}-{where}.{ext}")
                with open(path, "wb") as f:
                    f.write(whole[:at])
                cuts.append(os.path.basename(path))
            if fmt == "JPEG":  # stuffed 0xFF bytes: codes no Huffman table has, 15% into the scan
                at = header + (len(whole) - header) * 15 // 100
                path = os.path.join(self.dir, "b", f"garbage-{name}.jpg")
                with open(path, "wb") as f:
                    f.write(whole[:at] + b"\xff\x00" * 6 + whole[at:])
                garbage.append(os.path.basename(path))
        for train in (True, False):
            loader = dl_loader.Loader(self.dir, batch_size=4, workers=2, train=train,
                                      max_bad_fraction=0.9)
            n = sum(len(y) for _, y in loader)
            self.assertEqual(n, 8)
            self.assertEqual({k: v for k, v in loader.skipped.items() if v},
                             {"cut short": len(cuts), "undecodable": len(garbage)})
            reasons = {os.path.basename(p): (r, d) for _, p, r, d in loader.failures()}
            self.assertEqual(sorted(reasons), sorted(cuts + garbage))
            for name in cuts:
                self.assertEqual(reasons[name][0], "cut short", name)
                self.assertIn("data end at byte", reasons[name][1])
            for name in garbage:
                self.assertEqual(reasons[name][0], "undecodable", name)
                self.assertTrue(reasons[name][1].startswith("Corrupt JPEG data"), reasons[name])
            rows = [f"| {name} | {reasons[name][0]} |" for name in sorted(cuts + garbage)]
            figure(f"dl_loader truncation table (train={train})", " ".join(rows))

    def test_above_max_bad_fraction_is_dl_trains_one_line_error(self):
        self.bad_folder()
        loader = dl_loader.Loader(self.dir, batch_size=4, workers=0)  # default 0.01
        with self.assertRaises(dl_loader.DataError) as caught:
            list(loader)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(str(caught.exception),
                         f"data {self.dir}: 3 of 11 samples could not be decoded, above "
                         "max_bad_fraction 0.01 (1 empty, 1 too many pixels, 1 undecodable)")

    def test_bad_locations_and_options_are_python_exceptions_with_one_line(self):
        missing = os.path.join(self.dir, "nothing")
        with self.assertRaises(FileNotFoundError) as caught:
            dl_loader.Loader(missing)
        self.assertEqual(str(caught.exception),
                         f"data {missing}: no such file or directory; expected an IDX or "
                         "CIFAR-10 directory, an ImageFolder tree, a CSV manifest or "
                         "WebDataset shards")
        notes = os.path.join(self.dir, "notes.txt")
        open(notes, "w").write("x")
        with self.assertRaises(dl_loader.DataError) as caught:
            dl_loader.Loader(notes)
        self.assertIn("not a data set", str(caught.exception))
        bad_idx = os.path.join(self.dir, "idx")
        os.makedirs(bad_idx)
        open(os.path.join(bad_idx, "train-images-idx3-ubyte"), "wb").write(b"\0\0\x08\x03")
        with self.assertRaises(dl_loader.DataError) as caught:
            dl_loader.Loader(bad_idx)
        self.assertIn("expected the MNIST IDX layout", str(caught.exception))
        write_folder(os.path.join(self.dir, "img"), ["a"], 1)
        for kwargs in ({"batch_size": 0}, {"workers": -1}, {"split": "test"},
                       {"split": "val"}, {"dtype": torch.float64}, {"rank": 2, "world_size": 2},
                       {"image_size": -3}, {"indices": [5]}, {"max_bad_fraction": 2},
                       {"jpeg_index_mb": -1}):
            with self.assertRaises(ValueError, msg=kwargs) as caught:
                dl_loader.Loader(os.path.join(self.dir, "img"), **kwargs)
            self.assertNotIn("\n", str(caught.exception))

    def test_the_interpreter_survives_every_bad_input(self):
        # Each in a fresh interpreter: an abort or a crash would show as a signal, not a code.
        self.bad_folder()
        code = textwrap.dedent(f"""
            import sys, torch
            sys.path.insert(0, {MODULE_DIR!r})
            import dl_loader
            for kw in ({{}}, {{"workers": 2, "max_bad_fraction": 1.0}}):
                try:
                    for _ in dl_loader.Loader({self.dir!r}, batch_size=3, **kw):
                        pass
                except dl_loader.DataError as e:
                    print("refused:", e)
            for where in ({os.path.join(self.dir, "x")!r}, "/proc/self/status", "/"):
                try:
                    dl_loader.Loader(where)
                except (OSError, ValueError) as e:
                    print(type(e).__name__)
            print("alive")
        """)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertTrue(run.stdout.endswith("alive\n"), run.stdout + run.stderr)


class ResourcesTest(Scratch):
    def test_memory_stays_flat_over_many_epochs(self):
        write_folder(self.dir, ["a", "b"], 16, size=(160, 120))
        loader = dl_loader.Loader(self.dir, batch_size=8, workers=2)
        core = loader._core
        u8_mib = 8 * 3 * 224 * 224 / 2**20  # a batch of the default image_size, uint8
        float_mib = core.float_buffer_bytes / 2**20
        self.assertAlmostEqual(float_mib, 4 * u8_mib, places=3)

        def pooled_mib():
            return core.pool_buffers * u8_mib + core.float_buffers * float_mib

        per_epoch = []
        for epoch in range(40):
            for x, y in loader:
                pass
            per_epoch.append((rss_mib(), pooled_mib()))
        del x, y
        # The pools grow to what the prefetch window and the caller's two batches hold, each block
        # once, in whichever epoch the threads' timing first asks for it (a loaded machine may be
        # late); past them, not a byte of leak a batch (30 epochs x 4 batches).
        rss_growth = per_epoch[-1][0] - per_epoch[9][0]
        pooled_growth = per_epoch[-1][1] - per_epoch[9][1]
        figure("RSS per epoch (MiB, epochs 1, 5, 10, 20, 40)",
               ", ".join(f"{per_epoch[i][0]:.1f}" for i in (0, 4, 9, 19, 39)))
        figure("RSS growth epochs 10 to 40 (MiB), of it the pools' new blocks",
               f"{rss_growth:.2f}, {pooled_growth:.2f}")
        self.assertLess(rss_growth - pooled_growth, 2.0)
        self.assertLessEqual(core.pool_buffers, 2 * 2 + 2)
        self.assertLessEqual(core.float_buffers, 2 * 2 + 2)

    def test_a_break_and_a_new_epoch_leave_no_thread_behind(self):
        write_folder(self.dir, ["a"], 12, size=(64, 64))
        before = threads()
        loader = dl_loader.Loader(self.dir, batch_size=2, workers=3)
        self.assertEqual(threads(), before + 3)
        for _ in range(5):
            for i, _ in enumerate(loader):
                if i == 1:
                    break
            self.assertEqual(threads(), before + 3)
        self.assertEqual(sum(len(y) for _, y in loader), 12)
        del loader
        self.assertEqual(threads_settled(before), before)

    def test_the_gil_is_released_while_batches_are_made(self):
        # Decoding big images on the caller's thread (no workers): a Python thread beside it keeps
        # running; were the GIL held, it could not run at all while a batch is made. Counted as
        # the thread's beats inside each next() call, not as its longest pause, which a loaded
        # machine's scheduler stretches too.
        write_folder(self.dir, ["a"], 6, size=(1600, 1200))
        loader = dl_loader.Loader(self.dir, batch_size=3, workers=0, train=False)
        beats, stop = [], threading.Event()

        def beat():
            while not stop.is_set():
                beats.append(time.perf_counter())
                time.sleep(0.001)

        t = threading.Thread(target=beat)
        t.start()
        calls = []
        for _ in range(2):
            it = iter(loader)
            while True:
                s = time.perf_counter()
                try:
                    next(it)
                except StopIteration:
                    break
                calls.append((s, time.perf_counter()))
            del it
        stop.set()
        t.join()
        inside = sorted(sum(1 for b in beats if s < b < e) for s, e in calls)
        batch = sorted(e - s for s, e in calls)[len(calls) // 2]
        figure("GIL: median batch time, and the Python thread's beats inside each batch",
               f"{1000 * batch:.0f} ms; {inside}")
        self.assertEqual(len(calls), 4)
        self.assertGreaterEqual(inside[len(inside) // 2], 3)

    def test_ctrl_c_stops_iteration(self):
        write_folder(self.dir, ["a"], 8, size=(1600, 1200))
        code = textwrap.dedent(f"""
            import sys, torch
            sys.path.insert(0, {MODULE_DIR!r})
            import dl_loader
            loader = dl_loader.Loader({self.dir!r}, batch_size=8, workers=1, train=False)
            while True:
                for _ in loader:
                    print("ready", flush=True)
        """)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline(), "ready\n")  # inside an epoch
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        figure("Ctrl-C to exit", f"{time.perf_counter() - sent:.2f} s")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("KeyboardInterrupt", err)
        self.assertNotIn("Aborted", err)


TEMPLATE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "workspace_template", "python", "train.py"))


class DlPlanTest(Scratch):
    """dl_plan with the real module: dl_plan.loader() takes a dl_loader.Loader (a loader probe
    measures it at the probe's workers), and TrainingState resumes one inside an epoch with the
    batches of a run that never stopped (order and augmentation are functions of the seed, the
    epoch and the sample)."""

    def setUp(self):
        super().setUp()
        write_folder(os.path.join(self.dir, "img"), ["a", "b"], 12, size=(60, 50))

    def test_a_data_bound_script_over_photos_is_told_what_dl_loader_gives_on_its_files(self):
        # Photo-sized JPEGs, PIL's full decode through torchvision's transforms on the training
        # thread, a step that costs nothing: data-bound, and dl_loader, decoding only the crop at
        # its scale, loads the same files several times faster.
        photos = os.path.join(self.dir, "photos")
        write_folder(photos, ["a", "b"], 10, size=(800, 600))
        script = os.path.join(self.dir, "slow.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import sys, torch, dl_plan
                from torch.utils.data import DataLoader, Subset
                from torchvision import datasets, transforms
                tf = transforms.Compose([transforms.RandomResizedCrop(32), transforms.ToTensor()])
                folder = datasets.ImageFolder({photos!r}, tf)
                data = Subset(folder, list(range(2, 20))) if sys.argv[1] == "subset" else folder
                plan = dl_plan.setup()
                model = torch.nn.Linear(3 * 32 * 32, 2)
                for x, y in dl_plan.loader(DataLoader(data, batch_size=4, num_workers=0)):
                    with dl_plan.step():
                        model(x.flatten(1)).sum().backward()
                print(dl_plan.time_report(), file=sys.stderr)
            """))
        env = dict(os.environ, PYTHONPATH=MODULE_DIR, DL_CORES="2", DL_THREADS="1")
        for kind in ("folder", "subset"):
            proc = subprocess.run([sys.executable, script, kind], env=env, cwd=self.dir,
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("\ndata-bound: ", proc.stderr)
            m = re.search(r"  -> dl_loader \(dl-train's pipeline: only the crop decoded, at its "
                          r"scale\) loads a sample in ([0-9.]+) ms against ([0-9.]+) ms through "
                          r"this DataLoader's dataset \(([0-9.]+)x faster, measured on 16 of your "
                          r"files\): --loader dl in the template's train.py", proc.stderr)
            self.assertIsNotNone(m, proc.stderr)
            self.assertGreater(float(m.group(2)), 2 * float(m.group(1)), proc.stderr)
        # What it cannot compare it leaves alone: a dataset that lists no files.
        from dl_plan import cheaper_loading

        tensors = torch.utils.data.TensorDataset(torch.zeros(8, 3, 4, 4), torch.zeros(8))
        self.assertIsNone(cheaper_loading.measure(tensors))

    def test_a_loader_probe_measures_a_loader_built_from_the_plans_defaults(self):
        script = os.path.join(self.dir, "train.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import dl_loader, dl_plan
                plan = dl_plan.setup(workers=1)  # the script's own value: the probe's wins
                loader = dl_plan.loader(dl_loader.Loader({os.path.join(self.dir, "img")!r},
                                                         image_size=32))
                print("trained to the end")
            """))
        result = os.path.join(self.dir, "probe.jsonl")
        env = dict(os.environ, PYTHONPATH=MODULE_DIR, DL_PROBE="loader", DL_PROBE_RESULT=result,
                   DL_PROBE_PROTOCOL="1", DL_WORKERS="2", DL_BATCH_SIZE="4", DL_PROBE_BATCHES="6")
        proc = subprocess.run([sys.executable, script], env=env, cwd=self.dir,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("trained to the end", proc.stdout)
        with open(result) as f:
            r = [json.loads(line) for line in f][-1]
        self.assertEqual((r["kind"], r["workers"], r["batch"], r["batches"], r["samples"],
                          r["error"]), ("loader", 2, 4, 6, 24, ""))
        self.assertGreater(r["samples_per_second"], 0)

    def test_training_state_resumes_a_fast_loader_inside_an_epoch(self):
        import dl_plan

        def run(stop_at=None, resume=False):
            loader = dl_loader.Loader(os.path.join(self.dir, "img"), batch_size=4, workers=2,
                                      seed=3, image_size=32, drop_last=True)
            model = torch.nn.Linear(1, 1)
            state = dl_plan.TrainingState(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                          loader, run_dir=os.path.join(self.dir, "run"))
            batches = []
            for epoch in range(state.resume(resume, quiet=True), 2):
                for images, labels in state.batches(epoch):
                    batches.append((images.clone(), labels.clone()))
                    if (epoch, state.step) == stop_at:
                        state.save()
                        return batches
                state.save(epoch + 1)
            return batches

        whole = run()
        self.assertEqual(len(whole), 12)
        run(stop_at=(1, 2))
        resumed = run(resume=True)
        self.assertEqual(len(resumed), 4)
        for (xa, ya), (xb, yb) in zip(whole[8:], resumed):
            self.assertTrue(torch.equal(ya, yb))
            self.assertTrue(torch.equal(xa, xb))  # the same crops and flips


class TemplateTest(Scratch):
    """The workspace template's train.py on dl_loader (--loader dl) and on torch's DataLoader."""

    def run_train(self, data, loader, module_dir=MODULE_DIR, *extra):
        env = {k: v for k, v in os.environ.items() if k not in PLAN_VARS}
        env["PYTHONPATH"] = module_dir
        args = [sys.executable, TEMPLATE, "--data", data, "--loader", loader, "--epochs", "3",
                "--batch-size", "8", "--workers", "2", "--threads", "1", "--log-every", "0",
                "--json"] + list(extra)
        return subprocess.run(args, cwd=self.dir, env=env, capture_output=True, text=True,
                              timeout=600)

    def test_both_loaders_train_the_template_to_the_same_accuracy(self):
        # Two classes told apart by which half is bright: both loaders learn it within 3 epochs.
        images = torch.zeros(48, 8, 8, dtype=torch.uint8)
        labels = [i % 2 for i in range(48)]
        for i, label in enumerate(labels):
            images[i, :, (4 if label else 0):(8 if label else 4)] = 255
        write_idx(os.path.join(self.dir, "idx"), images, labels)
        accuracy = {}
        for loader in ("dl", "torch"):
            r = self.run_train(os.path.join(self.dir, "idx"), loader)
            self.assertEqual(r.returncode, 0, r.stderr)
            epochs = [json.loads(line) for line in r.stdout.splitlines()]
            self.assertEqual([e["epoch"] for e in epochs], [1, 2, 3])
            accuracy[loader] = epochs[-1]["val_acc"]
            self.assertEqual("dl_loader" in r.stderr, loader == "dl", r.stderr)
        figure("template on a 2-class IDX set, final validation accuracy",
               f"dl_loader {accuracy['dl']:.3f}, DataLoader {accuracy['torch']:.3f}")
        self.assertGreater(accuracy["dl"], 0.9)
        self.assertGreater(accuracy["torch"], 0.9)

    def test_a_jpeg_folder_without_val_is_held_out_and_trained(self):
        write_folder(os.path.join(self.dir, "photos"), ["a", "b"], 10, size=(70, 50))
        r = self.run_train(os.path.join(self.dir, "photos"), "dl", MODULE_DIR, "--model",
                           "resnet18", "--image-size", "32", "--epochs", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("18 training, 2 validation samples", r.stderr)
        self.assertIn("dl_loader", r.stderr)

    def test_loader_dl_without_the_module_is_one_line_and_69(self):
        source_python = os.path.join(os.path.dirname(TEMPLATE), "..", "..", "python")
        write_folder(os.path.join(self.dir, "photos"), ["a", "b"], 2)
        r = self.run_train(os.path.join(self.dir, "photos"), "dl", source_python)
        self.assertEqual(r.returncode, 69, r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("--loader dl: dl_loader's compiled module (_core) is missing", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
