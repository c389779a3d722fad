#!/usr/bin/env python3
"""The pipelines a run built and what each cost the driver, from the log that
KVSCOPE_PIPELINE_LOG=FILE makes kvscope (and its tests) write: a line a
pipeline, "device<TAB>kernel [specialization]<TAB>create ms<TAB>first
dispatch ms". On lavapipe the first dispatch is the LLVM compile.

  MESA_SHADER_CACHE_DIR=$(mktemp -d) KVSCOPE_PIPELINE_LOG=/tmp/p.tsv \\
      build/tests/kvscope_tests
  python3 tools/dev/pipeline_compiles.py /tmp/p.tsv [--top 20] [--kinds]

A kind built by several processes sharing a shader cache counts once, at its
first line (later ones read the cache, or compiled it again beside the first).
--kinds prints every kind, one a line, sorted: the list of kernel variants a
run exercised, to compare between two trees.
"""
import argparse
import collections
import sys


def read_log(path):
    first = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 4:
                sys.exit(f"pipeline_compiles: {path}:{number}: not a pipeline log line")
            kind = fields[1]
            try:
                ms = float(fields[2]) + float(fields[3])
            except ValueError:
                sys.exit(f"pipeline_compiles: {path}:{number}: its milliseconds are not numbers")
            first.setdefault(kind, ms)
    return first


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=20, help="the slowest kinds to list (default 20)")
    parser.add_argument("--kinds", action="store_true", help="list every kind instead")
    args = parser.parse_args()
    try:
        first = read_log(args.log)
    except OSError as e:
        sys.exit(f"pipeline_compiles: {e}")
    if args.kinds:
        print("\n".join(sorted(first)))
        return
    by_kernel = collections.defaultdict(lambda: [0, 0.0])
    for kind, ms in first.items():
        entry = by_kernel[kind.split(" ")[0]]
        entry[0] += 1
        entry[1] += ms
    print(f"{len(first)} kinds, {sum(first.values()) / 1000:.1f} s to build and first dispatch\n")
    print("| kernel | kinds | seconds |\n| --- | ---: | ---: |")
    for kernel, (count, ms) in sorted(by_kernel.items(), key=lambda item: -item[1][1])[: args.top]:
        print(f"| `{kernel}` | {count} | {ms / 1000:.1f} |")
    print(f"\n| slowest kind | seconds |\n| --- | ---: |")
    for kind, ms in sorted(first.items(), key=lambda item: -item[1])[: args.top]:
        print(f"| `{kind}` | {ms / 1000:.1f} |")


if __name__ == "__main__":
    main()
