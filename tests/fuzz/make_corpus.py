#!/usr/bin/env python3
"""Writes the fuzz harnesses' seed inputs into corpus/<harness>/: small valid files of each format
and a few edge cases (the smallest valid file, each header field at a limit, files a reader must
refuse). Deterministic; rerun after changing it and commit the result. The JPEG seeds need PIL and
the checkpoint seeds torch (Debian's python3-pil and python3-torch); without them those are left.
Inputs kept from crashes (crash-*) are not written here: they are committed as found.

    /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import gzip
import io
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(harness, name, data):
    folder = os.path.join(CORPUS, harness)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def gz(data):
    return gzip.compress(data, mtime=0)


# --- IDX: [labels length, 2 bytes big-endian][labels file][images file] (idx_fuzz.cpp) ---------
def idx_images(count, rows, cols):
    pixels = bytes((i * 7 + 3) % 256 for i in range(count * rows * cols))
    return struct.pack(">IIII", 0x803, count, rows, cols) + pixels


def idx_labels(labels):
    return struct.pack(">II", 0x801, len(labels)) + bytes(labels)


def idx_input(labels, images):
    return struct.pack(">H", len(labels)) + labels + images


def idx():
    write("idx", "valid-3x4x5", idx_input(idx_labels([2, 0, 6]), idx_images(3, 4, 5)))
    write("idx", "valid-1x1x1", idx_input(idx_labels([0]), idx_images(1, 1, 1)))
    write("idx", "valid-gzip", idx_input(gz(idx_labels([1, 9])), gz(idx_images(2, 3, 3))))
    write("idx", "valid-28x28", idx_input(idx_labels([255]), idx_images(1, 28, 28)))
    write("idx", "swapped", idx_input(idx_images(1, 2, 2), idx_labels([1])))
    write("idx", "truncated-images", idx_input(idx_labels([1, 2]), idx_images(2, 4, 4)[:-5]))
    write("idx", "truncated-gzip", idx_input(idx_labels([1]), gz(idx_images(1, 8, 8))[:-9]))
    write("idx", "count-mismatch", idx_input(idx_labels([1, 2, 3]), idx_images(2, 2, 2)))
    write("idx", "huge-header", idx_input(idx_labels([1]),
                                          struct.pack(">IIII", 0x803, 0xFFFFFFFF, 65535, 65535)))


# --- CIFAR-10: test_batch.bin, records of a label and 3x32x32 bytes (cifar_fuzz.cpp) -----------
def cifar_record(label, seed):
    return bytes([label]) + bytes((i * seed + label) % 256 for i in range(3072))


def cifar():
    write("cifar", "valid-1", cifar_record(3, 1))
    write("cifar", "valid-2", cifar_record(0, 5) + cifar_record(9, 11))
    write("cifar", "label-10", cifar_record(10, 2))
    write("cifar", "truncated", cifar_record(1, 3)[:-1])
    write("cifar", "empty", b"")


# --- CSV manifests (csv_manifest_fuzz.cpp) ------------------------------------------------------
def csv():
    write("csv_manifest", "valid-header", "path,label\ncat/1.jpg,0\ndog/2.jpg,1\n")
    write("csv_manifest", "valid-crlf-blank", "a.png,3\r\n\r\n  b.png , 0 \r\n")
    write("csv_manifest", "valid-quoted", '"a,b.jpg",1\n"say ""hi"".jpg",2\nc,d.jpg,0\n')
    write("csv_manifest", "valid-absolute", "/data/x.jpg,2147483646\n")
    write("csv_manifest", "bad-label", "a.jpg,-1\n")
    write("csv_manifest", "no-comma", "path,label\njust-a-path\n")
    write("csv_manifest", "empty-path", ' "" ,4\n')
    write("csv_manifest", "header-only", "Path , Label\n")


# --- JSON (json_fuzz.cpp): what the programs read ------------------------------------------------
def json_seeds():
    write("json", "probe", json.dumps({"ok": True, "batch": 64, "peak_bytes": 2**63 + 5,
                                       "device": "cpu", "seconds": 0.25, "note": None}))
    write("json", "plan", json.dumps({"workers": {"value": 2, "why": "2 usable cores"},
                                      "ranks": [0, 1], "env": {"DL_BATCH_SIZE": "64"}},
                                     indent=2))
    write("json", "cache", '{"entries":[{"key":"cnn|1x28x28|cpu","batch":512,"bytes":1e9}]}')
    write("json", "numbers", "[0, -0, 1.5e308, -9223372036854775808, 18446744073709551615, 1e-400]")
    write("json", "strings", '["\\u00e9\\ud83d\\ude00", "tab\\t", "\\"q\\""]')
    write("json", "nested-64", "[" * 64 + "]" * 64)
    write("json", "nested-65", "[" * 65 + "]" * 65)
    write("json", "truncated", '{"a": [1, 2')
    write("json", "bad-utf8", b'{"name": "\xff\xfe"}')


# --- dl.conf (settings_fuzz.cpp) -----------------------------------------------------------------
def settings():
    with open(os.path.join(HERE, "..", "..", "workspace_template", "dl.conf"), "rb") as f:
        write("settings", "template-dl.conf", f.read())
    write("settings", "values", "workers = auto\nbatch-size=128\nlr = 0.5\nresume\n"
                                "device = cpu\nmemory-budget = 6GiB\n")
    write("settings", "comments-crlf", "# comment\r\nepochs = 3 # trailing\r\n\r\n")
    write("settings", "unknown-key", "no-such-key = 1\n")
    write("settings", "section", "[launch]\nworkers = 2\n")
    write("settings", "twice", "epochs = 1\nepochs = 2\n")
    write("settings", "no-equals", "epochs 3\n")


# --- JPEG (jpeg_region_fuzz.cpp): a file, then 11 bytes the harness reads from the end: the size
# the window must keep (min width, min height: a byte each; 0 decodes at full size), the window
# (width, height, left, top as int16, little-endian, last first) and the channels (odd: 3) -------
def jpeg_tail(top, left, height, width, colour, min_height=0, min_width=0):
    return struct.pack("<BBhhhhB", min_width, min_height, width, height, left, top,
                       1 if colour else 0)


def jpeg():
    try:
        from PIL import Image
    except ImportError:
        print("make_corpus.py: no PIL: JPEG seeds left as they are")
        return
    def encode(image, **options):
        out = io.BytesIO()
        image.save(out, "JPEG", **options)
        return out.getvalue()
    rgb = Image.new("RGB", (40, 24))
    rgb.putdata([((x * 6) % 256, (y * 10) % 256, (x * y) % 256) for y in range(24) for x in range(40)])
    grey = rgb.convert("L")
    cmyk = rgb.convert("CMYK")
    write("jpeg_region", "rgb-420-crop", encode(rgb, quality=80) + jpeg_tail(4, 8, 12, 20, True))
    write("jpeg_region", "rgb-444-whole", encode(rgb, subsampling=0) + jpeg_tail(0, 0, 24, 40, True))
    write("jpeg_region", "rgb-progressive", encode(rgb, progressive=True) +
          jpeg_tail(20, 30, 100, 100, True))
    write("jpeg_region", "rgb-as-grey", encode(rgb) + jpeg_tail(-5, -5, 3, 3, False))
    write("jpeg_region", "grey", encode(grey) + jpeg_tail(10, 0, 1, 40, True))
    write("jpeg_region", "cmyk", encode(cmyk) + jpeg_tail(0, 0, 8, 8, True))
    write("jpeg_region", "truncated", encode(rgb)[:300] + jpeg_tail(16, 16, 8, 8, True))
    write("jpeg_region", "restart-markers", encode(rgb, quality=50) + jpeg_tail(1, 1, 22, 38, True))
    # Decoded at 1/8 (the whole image, to keep 3 x 5) and at 1/2 (a crop, to keep 6 x 10).
    write("jpeg_region", "rgb-scaled-whole", encode(rgb) + jpeg_tail(0, 0, 24, 40, True, 3, 5))
    write("jpeg_region", "rgb-scaled-crop", encode(rgb, quality=80) +
          jpeg_tail(5, 7, 13, 21, True, 6, 10))
    write("jpeg_region", "grey-scaled", encode(grey) + jpeg_tail(2, 3, 20, 30, False, 5, 7))


# --- Checkpoints (checkpoint_fuzz.cpp): what torch.save writes, in the layout dl-train reads ------
def checkpoint():
    try:
        import torch
    except ImportError:
        print("make_corpus.py: no torch: checkpoint seeds left as they are")
        return
    def save(name, obj):
        out = io.BytesIO()
        torch.save(obj, out)
        write("checkpoint", name, out.getvalue())
    model = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(2)}
    save("minimal", {"model_state_dict": model, "epoch": 1, "val_acc": 0.5})
    save("full", {
        "model_state_dict": model,
        "optimizer_state_dict": {
            "state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2, 3),
                          "exp_avg_sq": torch.ones(2, 3)},
                      1: {"step": 3, "exp_avg": torch.ones(2), "exp_avg_sq": torch.ones(2)}},
            "param_groups": [{"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8,
                              "weight_decay": 0.01, "amsgrad": False, "params": [0, 1]},
                             {"lr": 0.1, "betas": [0.8, 0.9], "eps": 1e-6,
                              "weight_decay": 0.0, "amsgrad": True, "params": []}]},
        "scaler_state_dict": {"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 2000, "_growth_tracker": 7},
        "epoch": 4, "val_acc": 0.875, "extra": {"best_acc": 0.9, "global_step": 120}})
    save("wrong-layout", {"model_state_dict": [1, 2], "epoch": "one", "val_acc": None})
    save("not-a-dict", [torch.zeros(1), 3])
    save("int8-step", {"model_state_dict": {},
                       "optimizer_state_dict": {"state": {5: {"step": torch.tensor([7], dtype=torch.int8),
                                                              "exp_avg": torch.zeros(1),
                                                              "exp_avg_sq": torch.zeros(1)},
                                                          6: {"step": 2.5, "exp_avg": torch.zeros(1),
                                                              "exp_avg_sq": torch.zeros(1)}},
                                                "param_groups": []},
                       "epoch": True, "val_acc": 1})


# --- State-dict pickles (state_pickle_fuzz.cpp): the data.pkl of torch.save files that --init-from
# reads: an OrderedDict state_dict() with its _metadata, a checkpoint dict, a parameter, other
# dtypes and a shared storage, and a pickle naming a global the reader refuses.
def state_pickle():
    try:
        import collections
        import zipfile
        import torch
    except ImportError:
        print("make_corpus.py: no torch: state_pickle seeds left as they are")
        return

    def save(name, obj):
        out = io.BytesIO()
        torch.save(obj, out)
        with zipfile.ZipFile(io.BytesIO(out.getvalue())) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            write("state_pickle", name, z.read(pkl))

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                              torch.nn.Linear(4, 3))
    save("ordered-dict", net.state_dict())
    save("checkpoint", {"epoch": 2, "best_acc": 0.5, "state_dict": net.state_dict(),
                        "optimizer": {"lr": 0.1, "params": [0, 1]}})
    base = torch.arange(12, dtype=torch.float32)
    save("shared-storage", collections.OrderedDict(
        [("a", base[:6].view(2, 3)), ("b", base[6:]), ("t", base.view(3, 4).t()),
         ("h", torch.ones(2, dtype=torch.float16)), ("i", torch.arange(3)),
         ("p", torch.nn.Parameter(torch.zeros(2))), ("flag", torch.tensor([True]))]))
    write("state_pickle", "os-system",
          b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00true\x85R.")


# --- Zip archives (zip_scan_fuzz.cpp): what torch.save writes (stored records), the same records
# recompressed by a zip tool (deflated: refused), and zip64 end records (a zip64 writer's).
def zip_scan():
    import zipfile
    try:
        import torch
    except ImportError:
        print("make_corpus.py: no torch: zip_scan seeds left as they are")
        return

    def saved(obj):
        out = io.BytesIO()
        torch.save(obj, out)
        return out.getvalue()

    def rezipped(data, compression, force_zip64=False):
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", compression) as dst:
            for info in src.infolist():
                entry = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
                entry.compress_type = compression
                with dst.open(entry, "w", force_zip64=force_zip64) as f:
                    f.write(src.read(info.filename))
        return out.getvalue()

    state = saved({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(2)})
    write("zip_scan", "torch-save", state)
    write("zip_scan", "deflated", rezipped(state, zipfile.ZIP_DEFLATED))
    write("zip_scan", "stored-zip64-extra", rezipped(state, zipfile.ZIP_STORED, force_zip64=True))
    write("zip_scan", "empty-archive", b"PK\x05\x06" + bytes(18))
    stored = rezipped(state, zipfile.ZIP_STORED)
    write("zip_scan", "stored-zip64-central-sizes", with_zip64_central_sizes(stored))


# --- zip64 sizes in the central directory: a stored entry whose record says 0xFFFFFFFF and whose
# zip64 extra field holds the real sizes (miniz skips its own size check for these) ------------
def with_zip64_central_sizes(data):
    end = data.rindex(b"PK\x05\x06")
    count, cd_size, cd_offset = struct.unpack_from("<HII", data, end + 10)
    at, entries = cd_offset, []
    for _ in range(count):
        (csize, usize, name_len, extra_len, comment_len) = struct.unpack_from("<IIHHH", data, at + 20)
        head = bytearray(data[at:at + 46])
        name = data[at + 46:at + 46 + name_len]
        extra = data[at + 46 + name_len:at + 46 + name_len + extra_len]
        comment = data[at + 46 + name_len + extra_len:at + 46 + name_len + extra_len + comment_len]
        zip64 = struct.pack("<HHQQ", 1, 16, usize, csize)
        struct.pack_into("<IIHH", head, 20, 0xFFFFFFFF, 0xFFFFFFFF, name_len, len(zip64) + len(extra))
        entries.append(bytes(head) + name + zip64 + extra + comment)
        at += 46 + name_len + extra_len + comment_len
    directory = b"".join(entries)
    tail = bytearray(data[end:])
    struct.pack_into("<I", tail, 12, len(directory))
    return data[:cd_offset] + directory + bytes(tail)


# --- tar shards: Python's tarfile in its three formats, and the hostile kinds (tar_listing_fuzz) -
def tar_listing():
    import tarfile

    def shard(fmt, members, links=()):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
            for name, target in links:
                info = tarfile.TarInfo(name)
                info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, 0
                tar.addfile(info)
        return out.getvalue()

    sample = [("000001.jpg", b"\xff\xd8\xff" + bytes(61)), ("000001.cls", b"3\n"),
              ("000002.png", b"\x89PNG\r\n\x1a\n" + bytes(24)), ("000002.cls", b"7\n")]
    long_name = "d/" + "x" * 140 + ".jpg"
    for fmt, tag in ((tarfile.GNU_FORMAT, "gnu"), (tarfile.PAX_FORMAT, "pax"),
                     (tarfile.USTAR_FORMAT, "ustar")):
        write("tar_listing", f"{tag}-samples", shard(fmt, sample))
        if fmt != tarfile.USTAR_FORMAT:  # ustar has no room for a 145-byte name
            write("tar_listing", f"{tag}-long-name", shard(fmt, [(long_name, b"abc")]))
    write("tar_listing", "pax-utf8-name", shard(tarfile.PAX_FORMAT, [("caf\u00e9/1.jpg", b"x")]))
    write("tar_listing", "escaping-names", shard(tarfile.GNU_FORMAT, [("../up.jpg", b"a"),
                                                                     ("/abs.jpg", b"b"),
                                                                     ("img..jpg", b"c")]))
    write("tar_listing", "symlink", shard(tarfile.GNU_FORMAT, sample[:2], [("l.jpg", "/etc/passwd")]))
    whole = shard(tarfile.USTAR_FORMAT, sample)
    write("tar_listing", "cut-in-data", whole[:512 + 20])
    write("tar_listing", "cut-in-header", whole[:300])
    bomb = bytearray(shard(tarfile.USTAR_FORMAT, [("big.jpg", b"z")]))
    bomb[124:136] = b"77777777777\0"  # declares 8 GiB in a file of a few blocks
    bomb[148:156] = b"        "
    bomb[148:155] = b"%06o\0" % sum(bomb[:512]) + b" "
    write("tar_listing", "size-bomb", bytes(bomb))
    bad_sum = bytearray(whole)
    bad_sum[0] ^= 0x20
    write("tar_listing", "bad-checksum", bytes(bad_sum))
    write("tar_listing", "empty", b"")


# --- image headers: each format as a library writes it, and sizes at their limits -------------
def image_header():
    write("image_header", "png-ihdr", b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" +
          struct.pack(">IIBBBBB", 640, 480, 8, 2, 0, 0, 0))
    write("image_header", "bmp-info", b"BM" + bytes(12) + struct.pack("<Iii", 40, 32, -16))
    write("image_header", "bmp-core", b"BM" + bytes(12) + struct.pack("<IHH", 12, 32, 16))
    write("image_header", "webp-vp8x", b"RIFF\0\0\0\0WEBPVP8X" + bytes(8) + bytes([99, 0, 0, 49, 0, 0]))
    write("image_header", "webp-vp8l", b"RIFF\0\0\0\0WEBPVP8L" + bytes(4) + b"\x2f" +
          struct.pack("<I", (63) | (31 << 14)))
    write("image_header", "webp-vp8", b"RIFF\0\0\0\0WEBPVP8 " + bytes(8) + b"\x9d\x01\x2a" +
          struct.pack("<HH", 320, 200))
    tiff = b"II*\0" + struct.pack("<IH", 8, 2)
    tiff += struct.pack("<HHII", 256, 4, 1, 0xFFFFFFFF) + struct.pack("<HHII", 257, 4, 1, 0xFFFFFFFF)
    write("image_header", "tiff-long-max", tiff)
    write("image_header", "tiff-short-mm", b"MM\0*" + struct.pack(">IH", 8, 2) +
          struct.pack(">HHIHH", 256, 3, 1, 20, 0) + struct.pack(">HHIHH", 257, 3, 1, 10, 0))
    write("image_header", "pnm-comments", b"P6\n# made by hand\n 12 \t34\n255\n")
    write("image_header", "pnm-ten-digits", b"P5\n9999999999 9999999999\n255\n")
    write("image_header", "jpeg-app-then-sof", b"\xff\xd8\xff\xe0\x00\x10JFIF\0" + bytes(9) +
          b"\xff\xff\xc0\x00\x11\x08\x01\x00\x02\x00\x03" + bytes(9))
    write("image_header", "jpeg-no-frame", b"\xff\xd8\xff\xda\x00\x02")
    try:
        from PIL import Image
    except ImportError:
        print("make_corpus.py: no PIL: the image_header seeds written by PIL are left as they are")
        return
    picture = Image.new("RGB", (37, 23), (200, 30, 90))
    for fmt, name, options in (("JPEG", "pil-jpeg", {}), ("JPEG", "pil-jpeg-progressive",
                                                        {"progressive": True}),
                               ("PNG", "pil-png", {}), ("BMP", "pil-bmp", {}),
                               ("TIFF", "pil-tiff", {}), ("PPM", "pil-ppm", {}),
                               ("WEBP", "pil-webp", {"lossless": True}), ("WEBP", "pil-webp-lossy", {})):
        out = io.BytesIO()
        try:
            picture.save(out, fmt, **options)
        except (KeyError, OSError):  # a PIL without WebP
            continue
        write("image_header", name, out.getvalue()[:256])


# --- shard patterns and .shards lists: the first line a pattern, the rest a list file ----------
def shard_list():
    write("shard_list", "webdataset-range", "train-{000000..000146}.tar\n")
    write("shard_list", "alternatives-times-range", "{a,b}/part-{0..3}.tar\n# comment\n\n")
    write("shard_list", "list-relative-absolute", "x.tar\nb-001.tar\n/tmp/none.tar\n  c.tar \r\n")
    write("shard_list", "list-remote", "s3://bucket/{0..2}.tar\nhttps://host/a.tar\ns3://b/k.tar\n")
    write("shard_list", "list-file-url", "plain.tar\nfile:///tmp/x.tar\n")
    write("shard_list", "unbalanced", "a{1..\n")
    write("shard_list", "reversed", "a{3..1}\n")
    write("shard_list", "wide-range", "s{0..9999999}\n")


# --- s3:// requests: URL, profile, config file, credentials file, separated by NUL bytes -------
def aws_config():
    config = "[default]\nregion = us-west-2\n\n[profile work]\nregion=ap-south-1\n# a comment\n"
    creds = ("[default]\naws_access_key_id = AKIDEXAMPLE\n"
             "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n"
             "[work]\r\naws_access_key_id=WK\r\naws_secret_access_key=WS\r\naws_session_token=TOK\r\n")
    write("aws_config", "default-profile", "\0".join(["s3://bucket/set/train-000.tar", "", config, creds]))
    write("aws_config", "named-profile", "\0".join(["s3://b/k", "work", config, creds]))
    write("aws_config", "no-files", "\0".join(["s3://my.bucket/a b/c+d.tar", "", "", ""]))
    write("aws_config", "host-in-bucket", "\0".join(["s3://a@evil.example#/k", "", config, creds]))
    write("aws_config", "region-with-dot", "\0".join(["s3://b/k", "", "[default]\nregion = x.evil#\n", ""]))
    write("aws_config", "token-with-cr", "\0".join(["s3://b/k", "", "",
                                                  "[default]\naws_access_key_id=K\naws_secret_access_key=S\n"
                                                  "aws_session_token=T\rX: 1\n"]))


# --- Slurm hostlists: the list on the first line, SLURM_TASKS_PER_NODE after it ----------------
def hostlist():
    write("hostlist", "ranges-and-names", "node[01-04,07],gpu-a1,x[1-2]-ib\n2(x3),1\n")
    write("hostlist", "two-ranges", "rack[1-2]-n[01-02]\n1(x4)\n")
    write("hostlist", "single", "vm\n1\n")
    write("hostlist", "reversed", "n[4-1]\n0\n")
    write("hostlist", "huge", "n[0-999999],m[0-9]\n1(x1000000)\n")
    write("hostlist", "unbalanced", "n[1-2\n2(x\n")


# --- last.json, as dl-train writes it ---------------------------------------------------------
def checkpoint_note():
    write("checkpoint_note", "inside-epoch",
          '{"step":60,"epochs_done":0,"epoch_batches":60,"last_pt_bytes":1234567}')
    write("checkpoint_note", "after-epoch", '{"step":120,"epochs_done":2,"last_pt_bytes":99}')
    write("checkpoint_note", "negative", '{"step":-1,"epochs_done":0,"last_pt_bytes":1}')
    write("checkpoint_note", "max-epochs",
          '{"step":1,"epochs_done":9223372036854775807,"epoch_batches":1,"last_pt_bytes":1}')


# --- metrics.csv: the first byte is the epoch resumed after ------------------------------------
def metrics_csv():
    header = ("epoch,train_loss,train_acc,val_loss,val_acc,lr,epoch_seconds,samples_per_second,"
              "data_wait_seconds,data_wait_percent,skipped_samples,overflow_steps\n")
    rows = "1,0.9,0.7,0.8,0.72,0.001,10.0,1000.0,1.0,10.00,0,0\n2,0.5,0.8,0.6,0.80,0.0009,10.0,1100.0,1.0,9.00,0,0\n"
    write("metrics_csv", "two-epochs", bytes([2]) + (header + rows).encode())
    write("metrics_csv", "redone-epoch-crlf", bytes([3]) + (header + rows + rows).replace("\n", "\r\n").encode())
    write("metrics_csv", "non-finite", bytes([9]) + (header + "nan,1,1,1,1,1,1,1,1,1,0,0\n"
                                                    "1,inf,-inf,1e308,nan,0,0,0,0,0,0,0\n").encode())
    write("metrics_csv", "header-again", bytes([5]) + (header + rows + "epoch,val_acc\n3,0.9\n").encode())
    # The time breakdown's columns and the verdict's text column, as dl-train writes them now.
    timed = (header.rstrip("\n") + ",time_data_s,time_copy_s,time_compute_s,time_optimizer_s,"
             "time_exchange_s,time_checkpoint_s,time_eval_s,time_other_s,bound\n")
    write("metrics_csv", "time-breakdown", bytes([2]) + (
        timed + "1,0.9,0.7,0.8,0.72,0.001,10.0,1000.0,4.1,41.00,0,0,4.1,0.1,4.5,0.2,0,0.1,1.0,0,"
        "data-bound\n2,0.5,0.8,0.6,0.80,0.0009,10.0,1100.0,0,0,0,0,0,0,0,0,0,0,0,0,\n"
        "3,0.5,0.8,0.6,0.80,0.0009,10.0,1100.0,0,0,0,0,-1,nan,1e308,0,0,0,0,0,x\n").encode())


# --- what probed programs print: dl-train's report, dl_plan's protocol lines, a script ---------
def probe_output():
    write("probe_output", "dl-train-report", "[12:00:00] info probing\n" + json.dumps(
        {"batch": 64, "fits": True, "out_of_memory": False, "peak_bytes": 123456789,
         "step_seconds": 0.012, "error": ""}) + "\n")
    write("probe_output", "dl-train-oom", json.dumps({"batch": 64, "out_of_memory": True}) + "\n")
    write("probe_output", "infinite-step", '{"peak_bytes":1,"step_seconds":1e999}\n')
    write("probe_output", "negative-step", '{"peak_bytes":1,"step_seconds":-0.5}\n')
    hello = {"dl_probe": 1, "module": "dl_plan", "version": "1.0", "torch": "1.13.1", "event": "hello"}
    result = dict(hello, event="result", samples_per_second=1234.5, peak_bytes=1 << 30)
    write("probe_output", "dl-plan-records", json.dumps(hello) + "\n" + json.dumps(result) + "\n")
    write("probe_output", "python-traceback", "Traceback (most recent call last):\n"
          '  File "train.py", line 3, in <module>\n'
          "ModuleNotFoundError: No module named 'torch'\n")
    write("probe_output", "script-imports", "import torch\n# import dl_plan\nfrom dl_plan import plan\n"
          "s = 'import dl_plan'\n    import dl_plan as p\n")


if __name__ == "__main__":
    idx()
    cifar()
    csv()
    json_seeds()
    settings()
    jpeg()
    checkpoint()
    state_pickle()
    zip_scan()
    tar_listing()
    image_header()
    shard_list()
    aws_config()
    hostlist()
    checkpoint_note()
    metrics_csv()
    probe_output()
