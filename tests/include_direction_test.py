#!/usr/bin/env python3
"""The engine's rooms include only downward: base <- vk <- io, formats <- kernels <- methods <- the
rooms that use them (eval, model, ruler, sweep, reference), which may include one another.
Every engine source must sit in a room. Fails naming each include that runs back up.

  python3 tests/include_direction_test.py [ENGINE_DIR]
"""
import pathlib
import re
import sys

RANKS = {"base": 0, "vk": 1, "io": 2, "formats": 2, "kernels": 3, "methods": 4,
         "eval": 5, "model": 5, "ruler": 5, "sweep": 5, "reference": 5}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(path, engine):
    parts = path.relative_to(engine).parts
    return parts[0] if len(parts) > 1 else None


def main():
    engine = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "engine").resolve()
    problems = []
    sources = [p for p in engine.rglob("*") if p.suffix in (".h", ".cpp")]
    for source in sorted(sources):
        room = room_of(source, engine)
        if room not in RANKS:
            problems.append(f"{source.relative_to(engine)}: not in a room ({', '.join(RANKS)})")
            continue
        for name in INCLUDE.findall(source.read_text()):
            if name.endswith(".spv.h") or name.endswith("shaders/layouts.h"):
                continue  # the embedded kernels and the layouts they share with the host
            target = (source.parent / name).resolve()
            if not target.exists():
                target = (engine / name).resolve()
            if not target.exists() or engine not in target.parents:
                problems.append(f"{source.relative_to(engine)}: includes \"{name}\", not an engine header")
                continue
            included = room_of(target, engine)  # a header outside a room is reported as a source of its own
            if RANKS.get(included, -1) > RANKS[room]:
                problems.append(f"{source.relative_to(engine)} ({room}) includes {target.relative_to(engine)} ({included}): "
                                f"upward")
    for p in problems:
        print("FAIL:", p)
    print(f"include direction: {len(sources)} sources, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
