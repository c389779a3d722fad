#include "method_args.h"

#include "error.h"
#include "methods/registry.h"

namespace kv::cli {

MethodOptions parse_method_options(const Args& args) {
  MethodOptions o;
  o.page_size = args.count("page-size", o.page_size, 1, 65536);
  o.group_size = args.count("group-size", o.group_size, 1, 65536);
  o.n_q = args.count("n-q", o.n_q, 1, 4096);
  o.n_sink = args.count("n-sink", o.n_sink, 0, 1u << 24);
  o.sparq_r = args.count("sparq-r", o.sparq_r, 1, 4096);
  o.loki_r = args.count("loki-r", o.loki_r, 1, 1024);
  o.sample_queries = args.count("sample-queries", o.sample_queries, 1, 1u << 20);
  o.sample_stride = args.count("sample-stride", o.sample_stride, 1, 1u << 20);
  o.snap_window = args.count("snap-window", o.snap_window, 1, 1u << 20);
  o.snap_pool = args.count("snap-pool", o.snap_pool, 1, 1023);
  if (o.snap_pool % 2 == 0) throw InputError("--snap-pool must be odd, not " + std::to_string(o.snap_pool));
  const std::string group = args.text("quoka-group", "mean");
  if (group != "mean" && group != "max") throw InputError("--quoka-group must be mean or max, not '" + group + "'");
  o.quoka_max = group == "max";
  const std::string agg = args.text("gqa-agg", "head");
  bool known = false;
  for (HeadAggregate aggregate : {HeadAggregate::head, HeadAggregate::max, HeadAggregate::mean})
    if (agg == aggregate_name(aggregate)) {
      o.gqa_agg = aggregate;
      known = true;
    }
  if (!known) throw InputError("--gqa-agg must be head, max or mean, not '" + agg + "'");
  return o;
}

Mode parse_mode(const Args& args, const std::string& command) {
  if (args.flag("decode") == args.flag("prefill"))
    throw InputError(command + ": give exactly one of --decode and --prefill");
  return args.flag("decode") ? Mode::decode : Mode::prefill;
}

}  // namespace kv::cli
