#include <cstdio>

#include "args.h"
#include "commands.h"
#include "base/error.h"
#include "io/synth.h"

namespace kv::cli {

const char* const kSynthHelp =
    "usage: kvscope synth --out FILE [--heads H] [--kv-heads G] [--dim d] [--tokens T]\n"
    "                     [--layers N] [--seed S] [--dtype F16|BF16|F32]\n\n"
    "Writes a deterministic synthetic capture with the structure real attention\n"
    "shows: sinks at the first tokens, recency (through RoPE), a few needle keys\n"
    "that late queries match, outlier key channels. For tests and benchmarks; it\n"
    "is not evidence about real models.\n"
    "Defaults: --heads 32 --kv-heads 8 --dim 128 --tokens 4096 --layers 1 --seed 0 --dtype F16\n";

int run_synth(const GlobalOptions&, const std::vector<std::string>& argv) {
  Args args("synth", argv, {"out", "heads", "kv-heads", "dim", "tokens", "layers", "seed", "dtype"}, {});
  if (!args.positional().empty()) throw InputError("synth: unexpected argument '" + args.positional()[0] + "'");
  SynthOptions o;
  const std::string out = args.required("out");
  o.heads = args.count("heads", o.heads, 1, 1024);
  o.kv_heads = args.count("kv-heads", o.kv_heads, 1, 1024);
  o.dim = args.count("dim", o.dim, 8, 512);
  o.tokens = args.count("tokens", o.tokens, 1, 1u << 24);
  o.layers = args.count("layers", o.layers, 1, 1024);
  o.seed = args.count("seed", 0);
  const std::string dtype = args.text("dtype", "F16");
  if (dtype == "F16") o.dtype = DType::f16;
  else if (dtype == "BF16") o.dtype = DType::bf16;
  else if (dtype == "F32") o.dtype = DType::f32;
  else throw InputError("synth: --dtype must be F16, BF16 or F32, not '" + dtype + "'");
  write_synthetic_capture(out, o);
  std::printf("wrote %s: %u layer(s), H=%u G=%u d=%u T=%u %s, seed %llu\n", out.c_str(), o.layers, o.heads, o.kv_heads,
              o.dim, o.tokens, dtype.c_str(), (unsigned long long)o.seed);
  return 0;
}

}  // namespace kv::cli
