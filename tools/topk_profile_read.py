#!/usr/bin/env python3
"""Reads the SM-cycle phases that tools/topk_clock_profile.patch makes the
top-k kernels write over each row's first indices, from `kvscope select`
output files, and prints the median cycles of each phase (docs/perf.md,
session 16). Plain Python, no numpy.

    git apply tools/topk_clock_profile.patch && cmake --build build
    kvscope synth --out s.safetensors --tokens 32768
    kvscope select --capture s.safetensors --layer 0 --method fier --budget 2048 \
        --decode --probes 8 --out fier.st
    python3 tools/topk_profile_read.py fier.st

Row layout: [0] the number of marks n, [1 .. n-1] the cycles between
consecutive marks, [30] the keys topk_finish staged (0 for topk_row). Rows are
grouped by n (how many radix levels ran); the most common group is printed.
"""
import collections
import json
import statistics
import struct
import sys


def rows_of(path):
    data = open(path, "rb").read()
    header_bytes = struct.unpack("<Q", data[:8])[0]
    tensor = json.loads(data[8:8 + header_bytes])["indices"]
    begin, end = tensor["data_offsets"]
    raw = data[8 + header_bytes + begin:8 + header_bytes + end]
    values = struct.unpack("<%di" % (len(raw) // 4), raw)
    width = tensor["shape"][-1]
    return [values[i:i + width] for i in range(0, len(values), width)]


for path in sys.argv[1:]:
    rows = rows_of(path)
    marks = collections.Counter(row[0] for row in rows)
    common = marks.most_common(1)[0][0]
    print(f"{path}: rows by marks {dict(marks)}, staged keys {sorted(set(r[30] for r in rows))[:8]}")
    group = [row for row in rows if row[0] == common]
    phases = [statistics.median(row[j] for row in group) for j in range(1, common)]
    print("  median cycles per phase:", " ".join(str(int(p)) for p in phases), " sum", int(sum(phases)))
