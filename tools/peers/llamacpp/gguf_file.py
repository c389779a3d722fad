"""A GGUF file's metadata and tensors in plain Python (struct), for the tools
and tests that check what write_gguf.py and llama.cpp's quantizer wrote:

  metadata, tensors = read_gguf(data)   # tensors: {name: (type, dims, bytes)}
  tensor_types(data)                    # {name: "Q4_K", ...}, sorted by name

Versions 2 and 3; each tensor's bytes run to the next one's offset (or the
file's end). kvscope's own reader is engine/formats/gguf.h.
"""
import struct

GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K",
              12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 30: "BF16"}
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(data):
    at = 0

    def take(fmt):
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values

    def text():
        nonlocal at
        (n,) = take("Q")
        at += n
        return data[at - n:at].decode("utf-8")

    def value(kind):
        if kind == 8:
            return text()
        if kind == 9:
            inner, n = take("IQ")
            return [value(inner) for _ in range(n)]
        return take(_SCALARS[kind])[0]

    magic, version, n_tensors, n_kv = take("4sIQQ")
    if magic != b"GGUF" or version not in (2, 3):
        raise ValueError(f"not a GGUF file of version 2 or 3 ({magic!r}, {version})")
    metadata = {}
    for _ in range(n_kv):
        key = text()
        metadata[key] = value(take("I")[0])
    infos = []
    for _ in range(n_tensors):
        name = text()
        (n_dims,) = take("I")
        dims = take(f"{n_dims}Q")
        kind, offset = take("IQ")
        infos.append((name, kind, dims, offset))
    alignment = metadata.get("general.alignment", 32)
    start = (at + alignment - 1) // alignment * alignment
    ends = [offset for _, _, _, offset in infos[1:]] + [len(data) - start]
    tensors = {name: (kind, dims, data[start + offset:start + end])
               for (name, kind, dims, offset), end in zip(infos, ends)}
    return metadata, tensors


def tensor_types(data):
    _, tensors = read_gguf(data)
    return {name: GGML_TYPES.get(kind, str(kind)) for name, (kind, _, _) in sorted(tensors.items())}
