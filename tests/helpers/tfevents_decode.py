#!/usr/bin/python3
"""Decodes a TensorBoard events file with tools that are not dl-train's: checks each record's
framing (uint64 length, masked CRC-32C of the length, data, masked CRC-32C of the data) with
crcmod's CRC-32C (Debian's python3-crcmod), and prints each record's payload as
`protoc --decode_raw` (Debian's protobuf-compiler) reads it.

    tfevents_decode.py FILE
Exit codes: 0 every record intact, 1 a bad or truncated record (named), 77 crcmod or protoc absent.
"""
import shutil
import struct
import subprocess
import sys

try:
    import crcmod.predefined
except ImportError:
    print("tfevents_decode: python3-crcmod is not installed", file=sys.stderr)
    sys.exit(77)
if shutil.which("protoc") is None:
    print("tfevents_decode: protoc (protobuf-compiler) is not installed", file=sys.stderr)
    sys.exit(77)

crc32c = crcmod.predefined.mkCrcFun("crc-32c")


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def main(path):
    with open(path, "rb") as f:
        blob = f.read()
    pos, index = 0, 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            sys.exit(f"record {index} at byte {pos}: truncated header")
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if length_crc != masked(header):
            sys.exit(f"record {index} at byte {pos}: length CRC {length_crc:#010x}, "
                     f"expected {masked(header):#010x}")
        data = blob[pos + 12:pos + 12 + length]
        if len(data) != length or len(blob) < pos + 16 + length:
            sys.exit(f"record {index} at byte {pos}: truncated data")
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        if data_crc != masked(data):
            sys.exit(f"record {index} at byte {pos}: data CRC {data_crc:#010x}, "
                     f"expected {masked(data):#010x}")
        decoded = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True)
        if decoded.returncode != 0:
            sys.exit(f"record {index}: protoc --decode_raw failed: "
                     f"{decoded.stderr.decode(errors='replace').strip()}")
        print(f"record {index} ({length} bytes, CRCs ok)")
        print(decoded.stdout.decode(), end="")
        pos += 16 + length
        index += 1
    print(f"{index} records")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tfevents_decode.py FILE")
    main(sys.argv[1])
