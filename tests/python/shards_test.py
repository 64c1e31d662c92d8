#!/usr/bin/env python3
"""WebDataset shards written by others, read by dl_loader and dl-train: shards from Python's
tarfile (GNU, pax and ustar formats) and from the `tar` program give the same batches as the
image folder they were packed from; dl-train trains from a brace pattern; bad shards (a member
named ../, an absolute name, a symbolic link, a truncated shard, a tar bomb, a sample without a
class, a class that is not a number) are counted in one line a shard and training goes on with the
rest; a missing shard, and shards without a sample, are one line and a distinct exit code. Every
data set is written here.

    shards_test.py --module-dir <build>/python --dl-train <build>/trainer/dl-train [unittest args]

Prints the bad-input table (FIGURE lines). Exit 77 (SKIPPED) without torch, PIL or tar.
"""

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--module-dir", required=True)
parser.add_argument("--dl-train", required=True)
opts, rest = parser.parse_known_args()
sys.path.insert(0, os.path.abspath(opts.module_dir))
DL_TRAIN = os.path.abspath(opts.dl_train)

try:
    import torch
    from PIL import Image
except ImportError as error:
    print(f"SKIPPED: {sys.executable} lacks torch or PIL ({error})")
    sys.exit(77)
if shutil.which("tar") is None:
    print("SKIPPED: no tar program")
    sys.exit(77)

import dl_loader  # noqa: E402


def figure(name, value):
    print(f"FIGURE {name}: {value}", flush=True)


def write_folder(root, classes=3, per_class=6):
    """An ImageFolder of small JPEGs; returns [(path, label)] in ImageFolder's order."""
    files = []
    g = torch.Generator().manual_seed(0)
    for c in range(classes):
        os.makedirs(os.path.join(root, f"c{c}"), exist_ok=True)
        for i in range(per_class):
            x = (torch.rand((40 + 7 * i, 50 + 5 * c, 3), generator=g) * 255).to(torch.uint8)
            path = os.path.join(root, f"c{c}", f"{i:03d}.jpg")
            Image.fromarray(x.numpy(), "RGB").save(path, "JPEG", quality=90)
            files.append((path, c))
    return files


def pack_tarfile(files, out_dir, per_shard, fmt, prefix="", nested=False):
    """WebDataset shards written with Python's tarfile: key.jpg and key.cls for each sample."""
    os.makedirs(out_dir, exist_ok=True)
    shards = []
    for s in range(0, len(files), per_shard):
        path = os.path.join(out_dir, f"{prefix}{s // per_shard:06d}.tar")
        with tarfile.open(path, "w", format=fmt) as t:
            for k, (image, label) in enumerate(files[s:s + per_shard]):
                key = f"{s + k:06d}"
                if nested:  # a long directory part: ustar's prefix field, or a pax path record
                    key = "deep/" + "d" * 120 + "/" + key
                t.add(image, arcname=f"{key}.jpg")
                data = f"{label}\n".encode()
                info = tarfile.TarInfo(f"{key}.cls")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        shards.append(path)
    return shards


def batches(loader):
    return [(x.clone(), y.clone()) for x, y in loader]


class Scratch(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name
        self.files = write_folder(os.path.join(self.dir, "folder"))

    def tearDown(self):
        self._dir.cleanup()

    def assert_same_batches(self, shards, train):
        # Shards are read shard by shard by default (shard_order.h), a folder in
        # DistributedSampler's order: training compares the two over one given order.
        order = (torch.randperm(len(self.files), generator=torch.Generator().manual_seed(3))
                 .tolist() if train else None)
        a = dl_loader.Loader(os.path.join(self.dir, "folder"), batch_size=4, workers=2, seed=3,
                             train=train, image_size=32, sampler=order)
        b = dl_loader.Loader(shards, batch_size=4, workers=2, seed=3, train=train, image_size=32,
                             sampler=order)
        self.assertEqual(len(b), len(a))
        for (xa, ya), (xb, yb) in zip(batches(a), batches(b)):
            self.assertTrue(torch.equal(ya, yb))
            self.assertTrue(torch.equal(xa, xb))


class InteropTest(Scratch):
    def test_tarfile_shards_of_every_format_give_the_folders_batches(self):
        for name, fmt, nested in [("gnu", tarfile.GNU_FORMAT, False),
                                  ("pax", tarfile.PAX_FORMAT, True),
                                  ("ustar", tarfile.USTAR_FORMAT, True)]:
            out = os.path.join(self.dir, name)
            shards = pack_tarfile(self.files, out, 5, fmt, "train-", nested)
            pattern = os.path.join(out, f"train-{{000000..{len(shards) - 1:06d}}}.tar")
            with self.subTest(format=name):
                for train in (True, False):
                    self.assert_same_batches(pattern, train)
        figure("tarfile formats read (GNU, pax, ustar with long keys)", "3 of 3")

    def test_tar_program_shards_and_a_shard_list_give_the_folders_batches(self):
        staging = os.path.join(self.dir, "staging")
        os.makedirs(staging)
        names = []
        for k, (image, label) in enumerate(self.files):
            shutil.copy(image, os.path.join(staging, f"{k:06d}.jpg"))
            with open(os.path.join(staging, f"{k:06d}.cls"), "w") as f:
                f.write(str(label))
            names += [f"{k:06d}.cls", f"{k:06d}.jpg"]
        out = os.path.join(self.dir, "tar")
        os.makedirs(out)
        for fmt in ("gnu", "posix", "ustar"):
            shard = os.path.join(out, f"all-{fmt}.tar")
            subprocess.run(["tar", f"--format={fmt}", "-cf", shard, "-C", staging] + names,
                           check=True)
            with self.subTest(format=fmt):
                self.assert_same_batches(shard, True)
        # A list of shards, relative to the list's folder.
        with open(os.path.join(out, "train.shards"), "w") as f:
            f.write("# one shard\nall-gnu.tar\n")
        self.assert_same_batches(os.path.join(out, "train.shards"), False)
        self.assertEqual(dl_loader.Loader(out, batch_size=4).num_samples, 3 * len(self.files))


    def test_dl_train_pack_shards_list_with_tar_and_give_the_folders_batches(self):
        out = os.path.join(self.dir, "packed")
        r = subprocess.run([DL_TRAIN, "pack", "--data", os.path.join(self.dir, "folder"),
                            "--out", out, "--shard-size", "20kB"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"packed {len(self.files)} samples (3 classes) into", r.stdout)
        shards = sorted(os.listdir(out))
        self.assertGreater(len(shards), 1)
        listed = subprocess.run(["tar", "tf", os.path.join(out, shards[0])], check=True,
                                capture_output=True, text=True).stdout.split()
        self.assertEqual(listed[:2], ["000000000.jpg", "000000000.cls"])
        with tarfile.open(os.path.join(out, shards[0])) as t:  # Python's reader agrees
            self.assertEqual(t.getnames(), listed)
        figure("dl-train pack's shards", f"{len(shards)} listed by tar tf and tarfile: "
               f"{r.stdout.strip()}")
        for train in (True, False):
            self.assert_same_batches(out, train)
        # Packing again writes the same bytes; shards there already are refused without
        # --overwrite (78).
        again = subprocess.run([DL_TRAIN, "pack", "--data", os.path.join(self.dir, "folder"),
                                "--out", out, "--shard-size", "20kB"],
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(again.returncode, 78, again.stderr)
        def contents():
            result = {}
            for n in shards:
                with open(os.path.join(out, n), "rb") as f:
                    result[n] = f.read()
            return result

        before = contents()
        subprocess.run([DL_TRAIN, "pack", "--data", os.path.join(self.dir, "folder"), "--out", out,
                        "--shard-size", "20kB", "--overwrite"], check=True, capture_output=True)
        self.assertEqual(before, contents())


class TrainTest(Scratch):
    def train(self, data, *extra):
        env = dict(os.environ, DL_RUN_DIR=os.path.join(self.dir, "run"))
        shutil.rmtree(env["DL_RUN_DIR"], ignore_errors=True)
        return subprocess.run([DL_TRAIN, "--data", data, "--epochs", "1", "--workers", "1",
                               "--threads", "1", "--batch-size", "4", "--image-size", "32",
                               "--monitor-every", "0", *extra],
                              capture_output=True, text=True, env=env, timeout=600)

    def test_dl_train_trains_from_a_brace_pattern_and_names_what_is_missing(self):
        shards = pack_tarfile(self.files, os.path.join(self.dir, "s"), 4, tarfile.GNU_FORMAT,
                              "train-")
        pattern = os.path.join(self.dir, "s", f"train-{{000000..{len(shards) - 1:06d}}}.tar")
        r = self.train(pattern)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("16 training, 2 validation samples", r.stdout + r.stderr)
        self.assertIn("done: validation accuracy", r.stdout + r.stderr)
        # One shard past the last: 66, one line naming it.
        r = self.train(os.path.join(self.dir, "s", f"train-{{000000..{len(shards):06d}}}.tar"))
        self.assertEqual(r.returncode, 66, r.stderr)
        said = [line for line in (r.stdout + r.stderr).splitlines() if "error" in line]
        self.assertEqual(len(said), 1, r.stdout + r.stderr)
        self.assertIn(f"train-{len(shards):06d}.tar", said[0])
        self.assertNotIn("Traceback", r.stdout + r.stderr)
        figure("bad input: a shard of the pattern missing", "exit 66, one line naming it")
        # Shards without a sample: 65.
        empty = os.path.join(self.dir, "empty.tar")
        with tarfile.open(empty, "w") as t:
            info = tarfile.TarInfo("readme.txt")
            t.addfile(info, io.BytesIO(b""))
        r = self.train(empty)
        self.assertEqual(r.returncode, 65, r.stderr)
        self.assertIn("no sample with an image", r.stdout + r.stderr)
        figure("bad input: shards without a sample", "exit 65, one line")

    def test_bad_shards_are_counted_in_one_line_and_training_goes_on(self):
        out = os.path.join(self.dir, "bad")
        good = pack_tarfile(self.files[:12], out, 12, tarfile.GNU_FORMAT, "good-")
        image = self.files[0][0]

        def add(t, name, data, kind=tarfile.REGTYPE):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            if kind == tarfile.SYMTYPE:
                info.linkname = "/etc/passwd"
            t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        with open(image, "rb") as f:
            jpeg = f.read()
        hostile = os.path.join(out, "hostile-000000.tar")
        with tarfile.open(hostile, "w", format=tarfile.GNU_FORMAT) as t:
            add(t, "../escape.jpg", jpeg)
            add(t, "/abs/x.jpg", jpeg)
            add(t, "link.jpg", b"", tarfile.SYMTYPE)
            add(t, "nocls.jpg", jpeg)
            add(t, "word.jpg", jpeg)
            add(t, "word.cls", b"cat")
            add(t, "fine.jpg", jpeg)
            add(t, "fine.cls", b"2")
        # A truncated shard: cut inside the data of its third sample's image.
        with tarfile.open(good[0]) as t:
            third = t.getmembers()[4]
        truncated = os.path.join(out, "truncated-000000.tar")
        with open(good[0], "rb") as f:
            whole = f.read()
        with open(truncated, "wb") as f:
            f.write(whole[:third.offset_data + third.size // 2])
        # A tar bomb: after a good sample, a header declaring 4 GiB in a file of a few KB.
        bomb = os.path.join(out, "bomb-000000.tar")
        with tarfile.open(bomb, "w", format=tarfile.GNU_FORMAT) as t:
            add(t, "ok.jpg", jpeg)
            add(t, "ok.cls", b"1")
        with tarfile.open(bomb) as t:
            last = t.getmembers()[-1]
        with open(bomb, "rb") as f:
            data = f.read()
        huge = tarfile.TarInfo("huge.jpg")
        huge.size = 1 << 32
        with open(bomb, "wb") as f:
            f.write(data[:last.offset_data + (last.size + 511) // 512 * 512] +
                    huge.tobuf(tarfile.GNU_FORMAT) + b"x" * 100)
        with open(os.path.join(out, "all.shards"), "w") as f:
            f.write("\n".join(os.path.basename(p) for p in good + [hostile, truncated, bomb]))
        r = self.train(os.path.join(out, "all.shards"))
        self.assertEqual(r.returncode, 0, r.stderr)
        text = r.stdout + r.stderr
        lines = {
            "a member named ../ or absolute, a symbolic link, no class, a class not a number":
                ("hostile-000000.tar", "2 sample(s) left out (0 without an image, 1 without a "
                 "class, 1 with a class that is not a whole number"),
            "a shard cut short": ("truncated-000000.tar", "truncated"),
            "a tar bomb (a member declaring 4 GiB)": ("bomb-000000.tar", "declaring 4294967296"),
        }
        for case, (shard, said) in lines.items():
            line = next((l for l in text.splitlines() if shard in l and "warn" in l), "")
            self.assertIn(said, line, text)
            figure(f"bad input: {case}", line.split("] ", 2)[-1])
        self.assertIn("'../escape.jpg'", text)
        # good 12 + hostile's fine + truncated's 2 whole samples before the cut + bomb's ok: 16,
        # the held-out part whole shards from the end of the list
        self.assertIn("13 training, 3 validation samples", text)
        self.assertNotIn("passwd", text.replace("/etc/passwd", ""))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
