#!/usr/bin/env python3
"""Shards from a local S3-compatible store (s3rver on 127.0.0.1) against the same shards on the
local disk, through dl_loader at equal workers: the same photo-sized JPEG set packed by
`dl-train pack`, epochs alternated (disk, s3, disk, s3, ...), RandomResizedCrop 224 + flip,
batch 64, the normalised float batch, a shuffle buffer of 64 (--buffer). The read-ahead budget
is half the set (--read-ahead-mb), so every s3 epoch downloads the shards again (the summary line
counts the downloads).

    bench/remote_shards_bench.py --module-dir build/release/python \
        --dl-train build/release/trainer/dl-train [--images 600] [--repeat 3] [--workers 2]

Prints images/s per epoch and the medians' ratio (s3 / disk).
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("--module-dir", required=True)
parser.add_argument("--dl-train", required=True)
parser.add_argument("--images", type=int, default=600)
parser.add_argument("--repeat", type=int, default=3)
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--buffer", type=int, default=64)
parser.add_argument("--read-ahead-mb", type=int, default=0, help="default: half the set")
parser.add_argument("--s3rver", default="/var/cache/dl-tools/s3rver/node_modules/.bin/s3rver")
opts = parser.parse_args()
sys.path.insert(0, os.path.abspath(opts.module_dir))

import torch  # noqa: E402
from PIL import Image  # noqa: E402

import dl_loader  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    work = tempfile.mkdtemp(prefix="remote-bench-")
    procs = []
    try:
        g = torch.Generator().manual_seed(0)
        for i in range(opts.images):
            c = i % 4
            os.makedirs(os.path.join(work, "photos", f"c{c}"), exist_ok=True)
            h = int(torch.randint(300, 1001, (1,), generator=g))
            w = int(torch.randint(300, 1001, (1,), generator=g))
            # Smooth content, as photographs are (noise would make the JPEGs unrealistically big).
            x = torch.rand((1, 3, h // 16 + 1, w // 16 + 1), generator=g)
            x = torch.nn.functional.interpolate(x, size=(h, w), mode="bilinear")[0]
            Image.fromarray((x.permute(1, 2, 0) * 255).to(torch.uint8).numpy()).save(
                os.path.join(work, "photos", f"c{c}", f"{i:05d}.jpg"), quality=90)
        os.makedirs(os.path.join(work, "shards"))
        out = os.path.join(work, "shards", "set")
        r = subprocess.run([opts.dl_train, "pack", "--data", os.path.join(work, "photos"),
                            "--out", out, "--shard-size", "4MB"], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        names = sorted(os.listdir(out))
        total = sum(os.path.getsize(os.path.join(out, n)) for n in names)
        pattern = f"train-{{000000..{len(names) - 1:06d}}}.tar"
        port = free_port()
        procs.append(subprocess.Popen([opts.s3rver, "-d", os.path.join(work, "s3"), "-a",
                                       "127.0.0.1", "-p", str(port), "--configure-bucket",
                                       "bench", "--silent"]))
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        for n in names:
            subprocess.run(["curl", "-sSf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                            "S3RVER:S3RVER", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-T",
                            os.path.join(out, n), f"http://127.0.0.1:{port}/bench/set/{n}"],
                           check=True)
        os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="S3RVER",
                          AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
        budget = opts.read_ahead_mb or max(1, total // 2 >> 20)
        loaders = {
            "disk": dl_loader.Loader(os.path.join(out, pattern), batch_size=64,
                                     workers=opts.workers, image_size=224, pin_memory=False,
                                     read_ahead_mb=budget, shuffle_buffer=opts.buffer),
            "s3": dl_loader.Loader(f"s3://bench/set/{pattern}", batch_size=64,
                                   workers=opts.workers, image_size=224, pin_memory=False,
                                   read_ahead_mb=budget, shuffle_buffer=opts.buffer),
        }
        rates = {k: [] for k in loaders}
        for epoch in range(opts.repeat + 1):  # the first pass warms both up and is not counted
            for name, loader in loaders.items():
                loader.set_epoch(epoch)
                started = time.perf_counter()
                n = sum(len(y) for _, y in loader)
                rate = n / (time.perf_counter() - started)
                if epoch > 0:
                    rates[name].append(rate)
                print(f"epoch {epoch} {name}: {rate:.0f} images/s", flush=True)
        print(f"s3 reads: {loaders['s3']._core.remote_summary} ({len(names)} shards, "
              f"{total / 2**20:.1f} MiB, read-ahead {budget} MiB)")
        disk, s3 = statistics.median(rates["disk"]), statistics.median(rates["s3"])
        print(f"| workers | disk images/s | s3 images/s | s3 / disk |")
        print(f"| {opts.workers} | {disk:.0f} | {s3:.0f} | {s3 / disk:.2f} |")
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
