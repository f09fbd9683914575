"""Compares the tensors two safetensors checkpoints share, for the
data-parallel tests: prints the largest absolute and relative difference
and exits non-zero when one exceeds the tolerance or the names differ.

  compare_checkpoints.py A B [--atol X] [--rtol Y] [--prefix P]
"""
import argparse
import json
import struct
import sys

# safetensors dtype -> struct format (standard sizes, little-endian).
FORMATS = {"F32": "f", "F64": "d", "F16": "e", "I64": "q", "I32": "i",
           "U8": "B"}


def read(path, prefix):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not name.startswith(prefix):
            continue
        begin, end = info["data_offsets"]
        fmt = FORMATS[info["dtype"]]
        n = (end - begin) // struct.calcsize(fmt)
        out[name] = (tuple(info["shape"]),
                     struct.unpack(f"<{n}{fmt}", data[begin:end]))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--prefix", default="")
    args = p.parse_args()
    a, b = read(args.a, args.prefix), read(args.b, args.prefix)
    if sorted(a) != sorted(b) or not a:
        print(f"different tensors: {sorted(a)} and {sorted(b)}")
        return 1
    worst = 0.0
    for name in sorted(a):
        (sa, va), (sb, vb) = a[name], b[name]
        if sa != sb:
            print(f"{name}: shapes {sa} and {sb}")
            return 1
        diff = [abs(x - y) for x, y in zip(va, vb)]
        ratio = max((d / (args.atol + args.rtol * abs(y))
                     for d, y in zip(diff, vb)), default=0.0)
        worst = max(worst, ratio)
        print(f"{name}: max |a-b| {max(diff, default=0.0):.3g}, "
              f"{ratio:.3g} of the tolerance")
    print(f"worst: {worst:.3g} of atol {args.atol} + rtol {args.rtol}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
