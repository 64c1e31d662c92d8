"""The first TRAIN training and VAL test images of Fashion-MNIST as raw IDX files, for the bench
scripts that need a small data set that loads at once (kill_bench.sh, soak.sh).

    python3 bench/fashion_subset.py SRC_DIR OUT_DIR TRAIN VAL   (SRC_DIR holds the published .gz files)
"""
import gzip
import struct
import sys

src, out, train, val = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for name, count, header, item in (("train-images-idx3-ubyte", train, 16, 784),
                                  ("train-labels-idx1-ubyte", train, 8, 1),
                                  ("t10k-images-idx3-ubyte", val, 16, 784),
                                  ("t10k-labels-idx1-ubyte", val, 8, 1)):
    with gzip.open(f"{src}/{name}.gz") as f:
        data = f.read(header + count * item)
    head = bytearray(data[:header])
    struct.pack_into(">I", head, 4, count)  # the item count: the subset's, not the full set's
    with open(f"{out}/{name}", "wb") as f:
        f.write(bytes(head) + data[header:])
