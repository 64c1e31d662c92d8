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
