#include "method_args.h"

#include "error.h"
#include "methods/table.h"

namespace kv::cli {

std::set<std::string> method_value_options() {
  std::set<std::string> options{"probes", "chunk", "chunks"};
  for (const OptionSpec& o : option_table()) options.insert(o.flag);
  return options;
}

MethodOptions parse_method_options(const Args& args) {
  MethodOptions options;
  for (const OptionSpec& o : option_table())
    if (args.has(o.flag)) o.parse(options, args.text(o.flag));
  return options;
}

Mode parse_mode(const Args& args, const std::string& command) {
  if (args.flag("decode") == args.flag("prefill"))
    throw InputError(command + ": give exactly one of --decode and --prefill");
  return args.flag("decode") ? Mode::decode : Mode::prefill;
}

std::string methods_help() {
  std::string help = "\nmethods (docs/methods.md):\n  dense            every key (the reference for coverage and error)\n";
  for (const MethodSpec& m : method_table()) {
    std::string line = "  " + std::string(m.name);
    line.resize(std::max<size_t>(line.size() + 1, 19), ' ');
    help += line + m.summary + "\n";
  }
  help += "\nmethod options (each read only by the methods named):\n";
  const MethodOptions defaults;
  for (const OptionSpec& o : option_table()) {
    std::string values;
    for (const char* name : o.names) values += (values.empty() ? "" : "|") + std::string(name);
    std::string line = "  --" + std::string(o.flag) + " " + (values.empty() ? "N" : values);
    line.resize(std::max<size_t>(line.size() + 1, 31), ' ');
    help += line + o.help + "; default " + o.text(defaults) + "\n";
  }
  return help;
}

}  // namespace kv::cli
