#!/usr/bin/env python3
"""Writes the seed inputs of the format fuzz targets from tests/fuzz/corpus.

    tests/fuzz/make_format_seeds.py

The trace corpus (tests/fuzz/corpus: real traces, payloads and hand-made
hostile files, see make_corpus.cc) is turned into each target's input form:

  corpus-header/  the header (and first block header) of every trace, and
                  the hostile header files as they are
  corpus-block/   every trace's blocks as block_fuzzer records of kind 0
                  (header and payload verbatim)
  corpus-column/  every payload with the hostile-payload mode byte, and a
                  few round-trip descriptions (column_fuzzer.cc)
  corpus-varint/  the first KiB of every payload

Existing files are kept: what fuzzing added (scripts/fuzz.sh merges it in)
stays. Seeds are named seed-*; run once, when a target is new.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
MAGIC = b"DLPROF\r\n"
BLOCK = struct.Struct("<IIIIIIQQII")


def write(target, name, data):
    d = os.path.join(HERE, "corpus-" + target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def blocks(data):
    """(header bytes, payload bytes) of each block, in file order."""
    at = struct.unpack_from("<I", data, 12)[0]
    while at + BLOCK.size <= len(data):
        zsize = BLOCK.unpack_from(data, at)[2]
        yield data[at:at + BLOCK.size], data[at + BLOCK.size:at + BLOCK.size + zsize]
        at += BLOCK.size + zsize


def main():
    for name in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, name), "rb") as f:
            data = f.read()
        if name.startswith("real-"):
            header_size = struct.unpack_from("<I", data, 12)[0]
            write("header", name, data[:header_size + BLOCK.size])
            records = b"".join(b"\x00" + h + p for h, p in blocks(data))
            write("block", name, records[:64 * 1024])
        elif name.startswith(("adv-header", "adv-version", "adv-magic", "adv-string")):
            write("header", name, data)
        elif name.startswith(("payload-", "pl-")) and not data.startswith(MAGIC):
            write("column", name, b"\x01" + data)
            write("varint", name, data[4:1028])
    # Round trips: one event repeated 64 times; a mix of small steps and
    # any-value fields over two threads.
    write("column", "roundtrip-repeat", b"\x00" + bytes(33) + b"\x3f" + bytes(11))
    step = bytes([0xb9] * 11)
    write("column", "roundtrip-steps",
          b"\x00" + bytes(33) + (b"\x05" + step) * 8 + b"\x81\x07\x00\x00\x00" + step * 4)
    write("varint", "lengths", bytes(range(0x7f, 0x100)) + b"\x00" * 10 + b"\xff" * 12)


if __name__ == "__main__":
    main()
