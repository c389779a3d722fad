#!/usr/bin/env python3
"""The SASS the NVIDIA Vulkan driver compiled for each kvscope kernel.

Runs a kvscope command with --kernel-stats and a private shader disk cache,
then takes each cached pipeline apart: the cache's entries are zstd frames
holding an "NVDANVVMNVuc" container whose code section (its size is the
kernel's "Binary Size" statistic) is raw SASS, disassembled with CUDA's
nvdisasm. Files are named after the kernel whose Binary Size matches (ties get
a suffix). NVIDIA's driver returns no internal representations through
VK_KHR_pipeline_executable_properties, hence this.

  python3 tools/dev/dump_sass.py OUT_DIR -- kvscope bench --lengths 8192 --steps fier-decode --repeat 2

Needs zstd (in PATH or $ZSTD; the GPU machine has none, so carry Debian's
/usr/bin/zstd) and CUDA's nvdisasm (in PATH or /usr/local/cuda/bin). The
container layout was read off driver 580.159.04's cache; others may differ.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
CONTAINER_MAGIC = b"NVDANVVMNVuc"
ZSTD = os.environ.get("ZSTD", "zstd")


def frames(blob):
    """Every decompressible zstd frame in a cache file."""
    at = 0
    while (at := blob.find(ZSTD_MAGIC, at)) >= 0:
        result = subprocess.run([ZSTD, "-d", "-c", "-q"], input=blob[at:], capture_output=True)
        if result.stdout:
            yield result.stdout
        at += 4


def code_section(container):
    """The raw SASS of a container: words 19 and 20 hold the code section's size
    and offset; the code starts 8 bytes in."""
    words = struct.unpack_from("<21I", container, 0)
    size, offset = words[19], words[20]
    code = container[offset + 8:offset + size]
    return size, code[:len(code) // 16 * 16]


def main():
    if "--" not in sys.argv or sys.argv.index("--") != 2:
        sys.exit("usage: dump_sass.py OUT_DIR -- KVSCOPE_COMMAND... (with --kernel-stats added)")
    out_dir, command = sys.argv[1], sys.argv[3:] + ["--kernel-stats"]
    nvdisasm = shutil.which("nvdisasm") or "/usr/local/cuda/bin/nvdisasm"
    os.makedirs(out_dir, exist_ok=True)
    cache = tempfile.mkdtemp(prefix="kvscope_cache_")
    env = dict(os.environ, __GL_SHADER_DISK_CACHE_PATH=cache, __GL_SHADER_DISK_CACHE_SKIP_CLEANUP="1")
    run = subprocess.run(command, env=env, capture_output=True, text=True)
    by_size = {}
    for name, spec, size in re.findall(r"^\s*(\S+) \[([^\]]*)\]: .*?Binary Size=(\d+)", run.stdout + run.stderr, re.M):
        by_size.setdefault(int(size), []).append(name + "." + spec.replace(",", "_"))
    written = 0
    for root, _, files in os.walk(cache):
        for file in files:
            for container in frames(open(os.path.join(root, file), "rb").read()):
                if not container.startswith(CONTAINER_MAGIC):
                    continue
                size, code = code_section(container)
                names = by_size.get(size) or [f"unknown_{size}"]
                name = names[0] if len(set(names)) == 1 else "_or_".join(sorted(set(names)))
                path = os.path.join(out_dir, name)
                while os.path.exists(path + ".sass"):
                    path += "_"
                raw = path + ".bin"
                open(raw, "wb").write(code)
                with open(path + ".sass", "w") as sass:
                    subprocess.run([nvdisasm, "-b", "SM90", raw], stdout=sass, stderr=subprocess.STDOUT)
                os.remove(raw)
                written += 1
    shutil.rmtree(cache)
    print(f"{written} kernels disassembled into {out_dir}")


if __name__ == "__main__":
    main()
