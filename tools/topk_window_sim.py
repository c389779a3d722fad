#!/usr/bin/env python3
"""How many keys a long row's top-k gathers for topk_finish, with level 0's
window as topk_histogram.comp made it before session 11 (from the sample's
smallest key to its largest, aligned to the highest bit where they differ)
and as it makes it now (from near the sample's r-th largest key). Rows of
normal scores at several scales and means; plain Python, no GPU.

    python3 tools/topk_window_sim.py [--n 131072] [--k 2048] [--capacity 4733]

A row whose gathered keys exceed the capacity (topk_finish's shared memory;
4733 on the H100) is read again by one workgroup, a pass per level.
"""
import argparse
import random
import struct

BINS, SAMPLE = 2048, 1024


def key(x):  # topk_common.glsl's orderable()
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    return (~u) & 0xFFFFFFFF if u & 0x80000000 else u | 0x80000000


def msb(v):
    return v.bit_length() - 1


def window_before(sample, k, n):
    hi, lo = max(sample), min(sample)
    shift = max(msb(hi ^ lo) - 10, 0)
    return lo & ~((1 << shift) - 1), shift


def window_now(sample, k, n):
    hi, lo = max(sample), min(sample)
    r = min(2 * (k // (n // SAMPLE)) + 16, SAMPLE)
    lowest = max(sorted((s >> 21 for s in sample), reverse=True)[r - 1] << 21, lo)
    shift = max(msb(hi - lowest) - 10, 0)
    return lowest & ~((1 << shift) - 1), shift


def gathered(keys, window, k):
    base, shift = window
    histogram = [0] * BINS
    for v in keys:
        histogram[0 if v < base else min((v - base) >> shift, BINS - 1)] += 1
    above = 0
    for b in range(BINS - 1, -1, -1):
        if above + histogram[b] >= k:
            return above + histogram[b]
        above += histogram[b]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=131072)
    parser.add_argument("--k", type=int, default=2048)
    parser.add_argument("--capacity", type=int, default=4733)
    args = parser.parse_args()
    random.seed(1)
    print("scale  mean  gathered_before  gathered_now")
    for scale in (0.3, 0.7, 1.0, 1.3, 1.9, 2.6, 3.7, 5.1):
        for mean in (0.0, 5.0):
            keys = [key(random.gauss(mean, scale)) for _ in range(args.n)]
            sample = [keys[i * (args.n // SAMPLE)] for i in range(SAMPLE)]
            cells = []
            for window in (window_before, window_now):
                count = gathered(keys, window(sample, args.k, args.n), args.k)
                cells.append(f"{count}{' (does not fit)' if count > args.capacity else ''}")
            print(f"{scale:<6} {mean:<5} {cells[0]:<16} {cells[1]}")


if __name__ == "__main__":
    main()
