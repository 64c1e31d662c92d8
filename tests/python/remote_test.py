#!/usr/bin/env python3
"""Shards read from real servers on 127.0.0.1: an HTTP server (tests/helpers/fault_http_server.py,
with Range requests) and an S3-compatible store (s3rver, from the npm registry, installed into
/var/cache/dl-tools/s3rver), directly and through the fault server relaying to it. Checks that
http://, s3:// and the local path give the same batches; that a connection dropped mid-shard, a
slow server and a 503 burst are retried to the same batches, a line a retry; that 403, 404, a
server that stays down and a port nobody listens on are one line naming the URL and a distinct
exit code; that a remote list may not name local files; and that dl-train trains two ranks from
s3:// to the same loss and accuracy as from the same shards on the local disk. s3rver checks no
signatures, so a private bucket in front of it (tests/helpers/s3_auth_proxy.py, which checks
SigV4 with botocore) shows that our signed reads are accepted and unsigned or wrongly signed ones
refused.

    remote_test.py --module-dir <build>/python --dl-train <build>/trainer/dl-train
                   --dl-launch <build>/launcher/dl-launch [unittest args]

Prints the fault table (FIGURE lines). Exit 77 (SKIPPED) without torch, PIL or node; the private
bucket's tests skip without botocore (python3-botocore).
"""

import argparse
import importlib.util
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

parser = argparse.ArgumentParser(add_help=False)
parser.add_argument("--module-dir", required=True)
parser.add_argument("--dl-train", required=True)
parser.add_argument("--dl-launch", required=True)
opts, rest = parser.parse_known_args()
sys.path.insert(0, os.path.abspath(opts.module_dir))
DL_TRAIN = os.path.abspath(opts.dl_train)
DL_LAUNCH = os.path.abspath(opts.dl_launch)
HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_SERVER = os.path.join(HERE, "..", "helpers", "fault_http_server.py")
AUTH_PROXY = os.path.join(HERE, "..", "helpers", "s3_auth_proxy.py")
S3RVER_DIR = os.environ.get("DL_S3RVER_DIR", "/var/cache/dl-tools/s3rver")
S3RVER_VERSION = "3.7.1"

try:
    import torch
    from PIL import Image
except ImportError as error:
    print(f"SKIPPED: {sys.executable} lacks torch or PIL ({error})")
    sys.exit(77)

import dl_loader  # noqa: E402


def figure(name, value):
    print(f"FIGURE {name}: {value}", flush=True)


def s3rver_program():
    """s3rver's command, installed from the npm registry at the pinned version where missing."""
    program = os.path.join(S3RVER_DIR, "node_modules", ".bin", "s3rver")
    if os.path.exists(program):
        return program
    if shutil.which("npm") is None:
        return None
    os.makedirs(S3RVER_DIR, exist_ok=True)
    r = subprocess.run(["npm", "install", "--prefix", S3RVER_DIR, "--no-audit", "--no-fund",
                        "--silent", f"s3rver@{S3RVER_VERSION}"], capture_output=True, text=True,
                       timeout=600)
    return program if r.returncode == 0 and os.path.exists(program) else None


def wait_for_port_file(path, process, what):
    for _ in range(600):
        if os.path.exists(path):
            with open(path) as f:
                return int(f.read())
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_listen(port, process, what):
    for _ in range(600):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def write_folder(root, classes=3, per_class=8):
    g = torch.Generator().manual_seed(0)
    for c in range(classes):
        os.makedirs(os.path.join(root, f"c{c}"), exist_ok=True)
        for i in range(per_class):
            x = (torch.rand((40 + 7 * i, 50 + 5 * c, 3), generator=g) * 255).to(torch.uint8)
            Image.fromarray(x.numpy(), "RGB").save(os.path.join(root, f"c{c}", f"{i:03d}.jpg"),
                                                   "JPEG", quality=90)


def batches(loader, epochs=2):
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        out.extend((x.clone(), y.clone()) for x, y in loader)
    return out


class Servers(unittest.TestCase):
    """One temporary folder: a JPEG folder packed into shards, served over HTTP and from s3rver."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="remote-test-")
        cls.procs = []
        write_folder(os.path.join(cls.dir, "folder"))
        cls.shards = os.path.join(cls.dir, "www", "set")
        os.makedirs(os.path.dirname(cls.shards))
        r = subprocess.run([DL_TRAIN, "pack", "--data", os.path.join(cls.dir, "folder"), "--out",
                            cls.shards, "--shard-size", "12kB"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        cls.names = sorted(n for n in os.listdir(cls.shards) if n.endswith(".tar"))
        cls.pattern = f"train-{{000000..{len(cls.names) - 1:06d}}}.tar"
        assert cls.names[0] == "train-000000.tar", cls.names
        with open(os.path.join(cls.shards, "set.shards"), "w") as f:
            f.write("# relative to this list\n" + "\n".join(cls.names) + "\n")
        with open(os.path.join(cls.shards, "evil.shards"), "w") as f:
            f.write(os.path.join(cls.shards, cls.names[0]) + "\n")
        cls.http = cls.start_fault_server(["--root", os.path.join(cls.dir, "www")])
        cls.s3 = None
        cls.s3_private = None
        program = s3rver_program()
        if program is not None and shutil.which("curl") is not None:
            port = free_port()
            proc = subprocess.Popen([program, "-d", os.path.join(cls.dir, "s3"), "-a",
                                     "127.0.0.1", "-p", str(port), "--configure-bucket",
                                     "shards", "--silent"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cls.procs.append(proc)
            wait_for_listen(port, proc, "s3rver")
            cls.s3 = port
            for name in cls.names + ["set.shards"]:
                subprocess.run(["curl", "-sSf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                                "S3RVER:S3RVER", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                                "-T", os.path.join(cls.shards, name),
                                f"http://127.0.0.1:{port}/shards/set/{name}"],
                               check=True, capture_output=True, timeout=60)
            cls.s3_relay = cls.start_fault_server(["--upstream", f"http://127.0.0.1:{port}"])
            # The same bucket made private: only requests signed with S3RVER/S3RVER for
            # us-east-1 get through.
            if importlib.util.find_spec("botocore") is not None:
                cls.s3_private = cls.start_helper(
                    AUTH_PROXY, ["--upstream", f"http://127.0.0.1:{port}", "--access-key",
                                 "S3RVER", "--secret-key", "S3RVER", "--region", "us-east-1"])

    @classmethod
    def start_fault_server(cls, args):
        return cls.start_helper(FAULT_SERVER, args)

    @classmethod
    def start_helper(cls, script, args):
        """A helper server (tests/helpers) on a free port, which it writes to a port file."""
        port_file = os.path.join(cls.dir, f"port-{len(cls.procs)}")
        proc = subprocess.Popen([sys.executable, script, *args, "--port-file", port_file],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.procs.append(proc)
        return wait_for_port_file(port_file, proc, os.path.basename(script))

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            p.terminate()
        for p in cls.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.s3}" if self.s3 else "",
                    "AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER",
                    "AWS_REGION": "us-east-1", "HOME": self.dir}
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def need_s3(self):
        if self.s3 is None:
            self.skipTest(f"s3rver {S3RVER_VERSION} could not be installed from the npm registry")

    def need_private_bucket(self):
        self.need_s3()
        if self.s3_private is None:
            self.skipTest(f"{sys.executable} lacks botocore (python3-botocore), which the private "
                          "bucket (tests/helpers/s3_auth_proxy.py) checks signatures with")
        os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{self.s3_private}"

    def url(self, fault="", what=None):
        prefix = f"http://127.0.0.1:{self.http}" + (f"/{fault}" if fault else "")
        return f"{prefix}/set/{self.pattern if what is None else what}"

    def loader(self, data, **kw):
        return dl_loader.Loader(data, batch_size=4, workers=2, seed=5, image_size=32, **kw)

    def assert_same_batches(self, data, reference=None):
        want = batches(self.loader(reference or os.path.join(self.shards, self.pattern)))
        got = batches(self.loader(data))
        self.assertEqual(len(got), len(want))
        for (xa, ya), (xb, yb) in zip(want, got):
            self.assertTrue(torch.equal(ya, yb))
            self.assertTrue(torch.equal(xa, xb))
        return got

    def retries_logged(self, data):
        """The same batches as the local shards, and the retry lines the loader logged."""
        with self.assertLogs("dl_loader", level="WARNING") as logs:
            self.assert_same_batches(data)
        return [r.getMessage() for r in logs.records if "try " in r.getMessage()]


class HttpTest(Servers):
    def test_http_file_url_and_local_path_give_the_same_batches(self):
        self.assert_same_batches(self.url())
        self.assert_same_batches(self.url(what="set.shards"))
        self.assert_same_batches("file://" + os.path.join(self.shards, self.pattern))
        loader = self.loader(self.url(), read_ahead_mb=1)
        batches(loader, epochs=3)
        figure("http:// shards, 3 epochs, 1 MiB read-ahead", loader._core.remote_summary)

    def test_a_dropped_connection_a_slow_server_and_a_503_burst_are_retried(self):
        dropped = self.retries_logged(self.url("drop"))
        self.assertTrue(dropped and all("try 2 of 7" in m for m in dropped), dropped)
        burst = self.retries_logged(self.url("burst"))
        self.assertTrue(any("HTTP 503 (service unavailable), try 4 of 7" in m for m in burst),
                        burst)
        started = time.monotonic()
        self.assert_same_batches(self.url("slow"))
        figure("connection dropped mid-shard", f"resumed with a Range request, same batches: "
               f"{dropped[0]}")
        figure("503 burst (3 a shard)", f"retried, same batches: {burst[-1]}")
        figure("slow server (16 KiB / 10 ms)",
               f"same batches, {time.monotonic() - started:.1f} s for 2 epochs")

    def test_bad_remote_data_is_one_line_and_a_distinct_error(self):
        os.environ["AWS_MAX_ATTEMPTS"] = "2"
        try:
            cases = [
                ("403", self.url("deny"), dl_loader.DataError, "HTTP 403 (access denied)"),
                ("404", self.url(what="train-999999.tar"), FileNotFoundError,
                 "HTTP 404 (not found)"),
                ("server down (503)", self.url("down"), dl_loader.DataError,
                 "HTTP 503 (service unavailable) (after 2 tries)"),
                ("nobody listening", f"http://127.0.0.1:{free_port()}/set/{self.pattern}",
                 dl_loader.DataError, "(after 2 tries)"),
                ("remote list naming a local file", self.url(what="evil.shards"),
                 dl_loader.DataError, "a remote list may name only http(s):// and s3:// shards"),
                ("remote folder", self.url(what=""), dl_loader.DataError,
                 "a remote folder cannot be listed"),
            ]
            for name, data, error, said in cases:
                with self.subTest(case=name):
                    with self.assertRaises(error) as caught:
                        self.loader(data)
                    message = str(caught.exception)
                    self.assertIn(said, message)
                    self.assertNotIn("\n", message)
                    figure(f"remote bad input: {name}", message)
        finally:
            os.environ.pop("AWS_MAX_ATTEMPTS", None)
        with self.assertRaises(dl_loader.DataError) as caught:
            os.environ["AWS_MAX_ATTEMPTS"] = "zero"
            try:
                self.loader(self.url())
            finally:
                os.environ.pop("AWS_MAX_ATTEMPTS", None)
        self.assertIn("AWS_MAX_ATTEMPTS=zero", str(caught.exception))

    def test_dl_train_exit_codes_name_the_url(self):
        env = dict(os.environ, AWS_MAX_ATTEMPTS="2", DL_RUN_DIR=os.path.join(self.dir, "bad"))
        for data, code, said in [(self.url("deny"), 65, "HTTP 403"),
                                 (self.url(what="train-999999.tar"), 66, "HTTP 404")]:
            r = subprocess.run([DL_TRAIN, "--data", data, "--epochs", "1", "--monitor-every",
                                "0"], capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, code, r.stderr)
            lines = [line for line in (r.stdout + r.stderr).splitlines() if said in line]
            self.assertEqual(len(lines), 1, r.stdout + r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            self.assertNotIn("terminate called", r.stderr)


class S3Test(Servers):
    def test_s3_gives_the_local_batches_directly_from_a_list_and_through_faults(self):
        self.need_s3()
        self.assert_same_batches(f"s3://shards/set/{self.pattern}")
        self.assert_same_batches("s3://shards/set/set.shards")
        os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{self.s3_relay}/drop"
        dropped = self.retries_logged(f"s3://shards/set/{self.pattern}")
        self.assertTrue(dropped, "no retry was logged for the dropped connections")
        os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{self.s3_relay}/burst"
        burst = self.retries_logged(f"s3://shards/set/{self.pattern}")
        self.assertTrue(any("HTTP 503" in m for m in burst), burst)
        figure("s3:// through a dropping relay", f"same batches: {dropped[0]}")
        figure("s3:// through a 503 burst", f"same batches: {burst[-1]}")

    def test_s3_refusals_name_the_object(self):
        self.need_s3()
        os.environ["AWS_MAX_ATTEMPTS"] = "2"
        try:
            with self.assertRaises(FileNotFoundError) as caught:
                self.loader("s3://shards/set/nothing-{0..1}.tar")
            self.assertIn("s3://shards/set/nothing-0.tar: HTTP 404", str(caught.exception))
            os.environ["AWS_ACCESS_KEY_ID"] = "NOSUCHKEY"
            with self.assertRaises(dl_loader.DataError) as caught:
                self.loader(f"s3://shards/set/{self.pattern}")
            self.assertIn("HTTP 403 (access denied): check the AWS credentials",
                          str(caught.exception))
            figure("s3:// unknown access key", str(caught.exception))
        finally:
            os.environ.pop("AWS_MAX_ATTEMPTS", None)

    def test_a_private_bucket_gives_signed_reads_the_local_batches(self):
        self.need_private_bucket()
        self.assert_same_batches(f"s3://shards/set/{self.pattern}")
        self.assert_same_batches("s3://shards/set/set.shards")
        figure("s3:// private bucket, signed", "accepted (botocore's SigV4 agrees), same batches")

    def assert_refused_by_the_private_bucket(self, name):
        """dl_loader and dl-train both refused: one line naming a shard and HTTP 403."""
        # Whichever shard a worker asked for first.
        said = r"s3://shards/set/train-[0-9]{6}\.tar: HTTP 403 \(access denied\): check the AWS"
        os.environ["AWS_MAX_ATTEMPTS"] = "2"
        try:
            with self.assertRaises(dl_loader.DataError) as caught:
                self.loader(f"s3://shards/set/{self.pattern}")
            message = str(caught.exception)
            self.assertRegex(message, said)
            self.assertNotIn("\n", message)
            env = dict(os.environ, DL_RUN_DIR=os.path.join(self.dir, "private-" + name))
            r = subprocess.run([DL_TRAIN, "--data", f"s3://shards/set/{self.pattern}", "--epochs",
                                "1", "--monitor-every", "0"], capture_output=True, text=True,
                               env=env, timeout=120)
        finally:
            os.environ.pop("AWS_MAX_ATTEMPTS", None)
        self.assertEqual(r.returncode, 65, r.stdout + r.stderr)
        lines = [line for line in (r.stdout + r.stderr).splitlines() if "HTTP 403" in line]
        self.assertEqual(len(lines), 1, r.stdout + r.stderr)
        self.assertRegex(lines[0], said)
        self.assertNotIn("Traceback", r.stderr)
        figure(f"s3:// private bucket, {name}", message)

    def test_a_private_bucket_refuses_an_unsigned_read(self):
        self.need_private_bucket()
        # No keys in the environment (and HOME has no ~/.aws): the reader sends no signature.
        os.environ.pop("AWS_ACCESS_KEY_ID", None)
        os.environ.pop("AWS_SECRET_ACCESS_KEY", None)
        self.assert_refused_by_the_private_bucket("unsigned")

    def test_a_private_bucket_refuses_a_wrong_secret(self):
        self.need_private_bucket()
        os.environ["AWS_SECRET_ACCESS_KEY"] = "NOT-S3RVER"  # the right key id, signed wrongly
        self.assert_refused_by_the_private_bucket("wrong secret")

    def test_two_ranks_train_from_s3_as_from_the_local_shards(self):
        self.need_s3()

        def train(data, name):
            ws = os.path.join(self.dir, "ws-" + name)
            os.makedirs(ws, exist_ok=True)
            r = subprocess.run([DL_LAUNCH, "--workspace", ws, "--name", name, "--device", "cpu",
                                "--nproc-per-node", "2", "--data", data, "--epochs", "2",
                                "--batch-size", "4", "--image-size", "32", "--workers", "1",
                                "--threads", "1", "--monitor-every", "0", "--seed", "5",
                                "--shuffle-buffer", "8"],
                               capture_output=True, text=True, timeout=900)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            done = re.findall(r"done: validation accuracy [0-9.]+%[^/]*", r.stdout + r.stderr)
            self.assertTrue(done, r.stdout + r.stderr)
            # The plan knows the data's size (dl-train --data-facts): local shards listed, remote
            # ones estimated from the first shard (listing them all would download the set).
            planned = re.search(r"data +([0-9]+) +\(samples from dl-train --data-facts: "
                                r"(estimated from the first of )?([0-9]+) shards", r.stdout)
            self.assertTrue(planned, r.stdout)
            return done[-1], planned

        local, local_plan = train(os.path.join(self.shards, self.pattern), "local")
        remote, remote_plan = train(f"s3://shards/set/{self.pattern}", "s3")
        self.assertEqual(remote, local)
        self.assertIsNone(local_plan.group(2), local_plan.group(0))
        self.assertIsNotNone(remote_plan.group(2), remote_plan.group(0))
        self.assertEqual(remote_plan.group(3), str(len(self.names)))
        self.assertEqual(local_plan.group(3), str(len(self.names)))
        # The first shard's samples times the shards less the held-out shard(s).
        first = len([n for n in subprocess.run(["tar", "tf", os.path.join(self.shards,
                                                                          self.names[0])],
                                               capture_output=True, text=True,
                                               check=True).stdout.split() if n.endswith(".cls")])
        self.assertEqual(int(remote_plan.group(1)) % first, 0, (first, remote_plan.group(0)))
        self.assertGreater(int(remote_plan.group(1)), 0)
        figure("the plan's data, local shards", local_plan.group(0))
        figure("the plan's data, s3://", remote_plan.group(0))
        figure("2 ranks from the local shards", local)
        figure("2 ranks from s3://", remote)


if __name__ == "__main__":
    logging.basicConfig(level=logging.ERROR)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
