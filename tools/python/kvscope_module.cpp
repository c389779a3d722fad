// `import kvscope`: the engine from Python, over the same API as the CLI
// (tools/kvscope) and the viewer. numpy arrays in and out; engine InputError
// becomes ValueError, anything else from the device RuntimeError; the GIL is
// released while the GPU works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>

#include "io/bundled.h"
#include "io/capture.h"
#include "base/error.h"
#include "eval/evaluator.h"
#include "methods/method_options.h"
#include "methods/table.h"
#include "model/checkpoint.h"
#include "model/files.h"
#include "model/chat.h"
#include "model/generate.h"
#include "model/needle.h"
#include "model/perplexity.h"
#include "model/prompts.h"
#include "ruler/ruler.h"
#include "sweep/reports.h"
#include "sweep/results.h"
#include "vk/device.h"

namespace py = pybind11;

namespace kv::python {
namespace {

// A device the calls share (pipelines are built once per device).
struct PyDevice {
  std::shared_ptr<vk::Device> device;
};

PyDevice open_device(const py::object& name_or_index) {
  vk::DeviceOptions options;
  if (!name_or_index.is_none()) options.selector = py::str(name_or_index);
  return {std::make_shared<vk::Device>(options)};
}

// The device of calls that name none: the best one, opened on first use.
const PyDevice& default_device() {
  static std::mutex mutex;
  static std::unique_ptr<PyDevice> device;
  std::lock_guard<std::mutex> lock(mutex);
  if (!device) device = std::make_unique<PyDevice>(open_device(py::none()));
  return *device;
}

const vk::Device& device_or_default(const py::object& device) {
  return device.is_none() ? *default_device().device : *device.cast<const PyDevice&>().device;
}

// A capture and its file; one made from arrays also owns the temporary
// folder its file lives in, removed with the last copy of this capture.
struct PyCapture {
  std::shared_ptr<Capture> capture;
  std::filesystem::path path;
  std::shared_ptr<void> remove_folder;
};

PyCapture open_capture(const std::string& path) {
  PyCapture c;
  c.capture = std::make_shared<Capture>(path);
  c.path = path;
  return c;
}

DType parse_dtype(const std::string& name) {
  if (name == "f16" || name == "float16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "f32" || name == "float32") return DType::f32;
  throw InputError("dtype is f16, bf16 or f32, not '" + name + "'");
}

// A [heads, T, d] float32 array (converted, made contiguous) and its shape.
py::array_t<float, py::array::c_style | py::array::forcecast> heads_tokens_dim(const py::handle& array, const char* what) {
  auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!a) throw InputError(std::string(what) + " is not an array of numbers");
  if (a.ndim() != 3) throw InputError(std::string(what) + " must be [heads, tokens, dim], not of rank " + std::to_string(a.ndim()));
  return a;
}

PyCapture capture_from_arrays(const py::handle& q, const py::handle& k, const py::handle& v, const py::object& tokens,
                              const py::object& text, const std::string& dtype_name, const py::object& scale) {
  const DType dtype = parse_dtype(dtype_name);
  auto qa = heads_tokens_dim(q, "q"), ka = heads_tokens_dim(k, "k"), va = heads_tokens_dim(v, "v");
  AttentionShape shape{uint32_t(qa.shape(0)), uint32_t(ka.shape(0)), uint32_t(qa.shape(1)), uint32_t(qa.shape(2))};
  if (ka.shape(1) != qa.shape(1) || va.shape(1) != qa.shape(1) || ka.shape(2) != qa.shape(2) || va.shape(2) != qa.shape(2) ||
      va.shape(0) != ka.shape(0))
    throw InputError("q [H, T, d], k and v [G, T, d] must agree in T and d, and k and v in G");
  if (shape.tokens == 0 || shape.dim == 0 || shape.kv_heads == 0 || shape.heads % shape.kv_heads != 0)
    throw InputError("a capture needs T, d and G of at least 1, and H a multiple of G");
  auto stored = [&](const py::array_t<float, py::array::c_style | py::array::forcecast>& a) {
    return from_float(dtype, std::span<const float>(a.data(), size_t(a.size())));
  };
  const std::vector<std::byte> qb = stored(qa), kb = stored(ka), vb = stored(va);
  CaptureData data;
  data.model = "numpy arrays";
  data.source = "kvscope.Capture.from_arrays";
  if (!scale.is_none()) data.scale = scale.cast<double>();
  data.layers.push_back({0, shape, dtype, qb, kb, vb});
  if (!tokens.is_none()) data.token_ids = tokens.cast<std::vector<int32_t>>();
  if (!text.is_none()) data.token_text = text.cast<std::vector<std::string>>();

  PyCapture c;
  std::random_device random;
  const std::filesystem::path folder = std::filesystem::temp_directory_path() / ("kvscope-capture-" + std::to_string(random()));
  std::filesystem::create_directories(folder);
  c.remove_folder = std::shared_ptr<void>(nullptr, [folder](void*) {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  });
  c.path = folder / "capture.safetensors";
  write_capture(c.path, data);
  c.capture = std::make_shared<Capture>(c.path);
  require_finite(*c.capture, false);
  return c;
}

// Method options from keyword arguments: page_size=8, gqa_agg="max", ...
// (OptionSpec::keyword); ValueError naming the valid ones.
MethodOptions options_from(const py::kwargs& kwargs) {
  MethodOptions options;
  for (const auto& [key, value] : kwargs) {
    const std::string keyword = py::str(key);
    const OptionSpec* spec = nullptr;
    std::string valid;
    for (const OptionSpec& o : option_table()) {
      if (keyword == o.keyword()) spec = &o;
      valid.append(valid.empty() ? "" : ", ").append(o.keyword());
    }
    if (!spec) throw InputError("unknown option '" + keyword + "': the method options are " + valid);
    spec->parse(options, py::str(value));
  }
  return options;
}

Mode parse_regime(const std::string& regime) {
  if (regime == "decode") return Mode::decode;
  if (regime == "prefill") return Mode::prefill;
  throw InputError("regime is decode or prefill, not '" + regime + "'");
}

uint32_t budget_of(const py::handle& budget, uint32_t tokens) {
  return parse_budget(py::str(budget), tokens, "budget");
}

uint32_t count_of(int64_t value, const char* what) {
  if (value < 0 || value > int64_t(UINT32_MAX)) throw InputError(std::string(what) + " must be a count, not " + std::to_string(value));
  return uint32_t(value);
}

// A result as the CLI's --json writes it (a model's text cut inside a
// character has U+FFFD there, tools/kvscope/output_files.h), as Python objects.
py::object from_json(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// GPU milliseconds by stage, summed where a stage recurs.
py::dict stage_ms(const std::vector<vk::StageTime>& times) {
  py::dict out;
  for (const vk::StageTime& t : times) {
    const py::str stage(t.stage);
    out[stage] = (out.contains(stage) ? out[stage].cast<double>() : 0.0) + t.milliseconds;
  }
  return out;
}

// A chunk, as the CLI's --chunk takes it: 1 to 2^20 tokens.
uint32_t chunk_of(int64_t chunk) {
  if (chunk < 1 || chunk > (int64_t(1) << 20)) throw InputError("chunk must be between 1 and 1048576 tokens, not " + std::to_string(chunk));
  return uint32_t(chunk);
}

py::dict select_keys(const PyCapture& c, int layer_index, const std::string& method, const py::handle& budget,
                const std::string& regime, int64_t probes, int64_t chunk, int64_t chunks, const py::object& device,
                const py::kwargs& kwargs) {
  const MethodOptions options = options_from(kwargs);
  const Mode mode = parse_regime(regime);
  const uint32_t k = budget_of(budget, c.capture->tokens());
  const CaptureLayer& layer = c.capture->layer(layer_index);
  const vk::Device& d = device_or_default(device);
  SelectionResult r;
  {
    py::gil_scoped_release release;
    r = select_layer(d, *c.capture, layer, method, options, mode, k, count_of(probes, "probes"), chunk_of(chunk),
                     count_of(chunks, "chunks"));
  }
  const size_t blocks = r.block_positions.size();
  py::array_t<int32_t> indices({blocks, size_t(r.rows), size_t(r.width)});
  std::copy(r.indices.begin(), r.indices.end(), indices.mutable_data());
  py::array_t<int32_t> block_pos(blocks);
  std::copy(r.block_positions.begin(), r.block_positions.end(), block_pos.mutable_data());
  py::dict out;
  out["indices"] = indices;
  out["block_pos"] = block_pos;
  out["method"] = method;
  out["regime"] = regime;
  out["budget"] = k;
  out["layer"] = layer.index;
  out["granularity"] = granularity_name(r.granularity);
  out["params"] = from_json(r.params);
  out["gpu_ms"] = stage_ms(r.timings);
  return out;
}

py::list evaluate_methods(const PyCapture& c, const std::vector<std::string>& methods, const py::list& budgets,
                  const std::string& regime, const py::object& layers, int64_t probes, int64_t chunk, int64_t chunks,
                  const py::object& device, const py::kwargs& kwargs) {
  EvalConfig config;
  config.mode = parse_regime(regime);
  config.options = options_from(kwargs);
  config.methods = methods;
  for (const py::handle& b : budgets) config.budgets.push_back(budget_of(b, c.capture->tokens()));
  config.probes = count_of(probes, "probes");
  config.chunk = chunk_of(chunk);
  config.last_chunks = count_of(chunks, "chunks");
  std::vector<const CaptureLayer*> chosen;
  if (layers.is_none()) {
    for (const CaptureLayer& l : c.capture->layers()) chosen.push_back(&l);
  } else {
    for (int index : layers.cast<std::vector<int>>()) chosen.push_back(&c.capture->layer(index));
  }
  const vk::Device& d = device_or_default(device);
  std::vector<EvalRow> rows;
  {
    py::gil_scoped_release release;
    for (const CaptureLayer* layer : chosen) {
      std::vector<EvalRow> more = evaluate_layer(d, *c.capture, *layer, config);
      rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
  }
  py::list records;
  for (const EvalRow& row : rows) {
    py::dict r;
    r["layer"] = row.layer;
    r["method"] = row.method;
    r["budget"] = row.budget;
    r["regime"] = mode_name(row.mode);
    r["coverage"] = row.mean.coverage;
    r["recall"] = row.mean.recall;
    r["output_error"] = row.mean.output_error;
    r["needle_recall"] = row.needle_recall >= 0 ? py::object(py::float_(row.needle_recall)) : py::none();
    r["gpu_ms"] = stage_ms(row.timings);
    records.append(r);
  }
  return records;
}

// A model's weights and tokenizer, opened once; each call sizes its own run
// (as each CLI command does).
struct PyModel {
  std::string path;
  std::string tokenizer_path;  // "" for the model's own
  std::shared_ptr<model::Checkpoint> checkpoint;
  std::shared_ptr<model::Tokenizer> tokenizer;  // wrapped in the chat format the model was opened with
  py::object device;  // a kvscope.Device, or None for the default
};

// chat=True: the format the model's template holds; chat="NAME": that one
// (the CLI's --chat, --chat-format); None or False: none.
model::ChatFormat chat_format_of(const std::string& path, const model::Checkpoint& checkpoint,
                                 const std::string& tokenizer_path, const py::object& chat) {
  if (py::isinstance<py::str>(chat)) return model::model_chat_format(path, checkpoint, tokenizer_path, chat.cast<std::string>());
  if (!chat.is_none() && !py::isinstance<py::bool_>(chat))
    throw InputError("chat is True, False, None or a format's name, not a " + std::string(Py_TYPE(chat.ptr())->tp_name), "chat");
  if (chat.is_none() || !chat.cast<bool>()) return model::ChatFormat::none;
  return model::model_chat_format(path, checkpoint, tokenizer_path, "");
}

PyModel open_model(const std::string& path, bool random_weights, int64_t seed, const std::string& weight_type,
                   const py::object& tokenizer, const py::object& device, const py::object& chat) {
  PyModel m;
  m.path = path;
  const std::optional<model::WeightType> type = model::parse_weight_type(weight_type);
  m.checkpoint = std::make_shared<model::Checkpoint>(random_weights ? model::Checkpoint::random(path, count_of(seed, "seed"), type)
                                                                    : model::Checkpoint::open(path));
  if (type && !random_weights) m.checkpoint->quantize(*type);
  m.tokenizer_path = tokenizer.is_none() ? "" : py::str(tokenizer).cast<std::string>();
  std::unique_ptr<model::Tokenizer> t = model::model_tokenizer(path, *m.checkpoint, m.tokenizer_path);
  const model::ChatFormat format = chat_format_of(path, *m.checkpoint, m.tokenizer_path, chat);
  if (format != model::ChatFormat::none) t = model::chat_tokenizer(std::move(t), format);
  m.tokenizer = std::move(t);
  m.device = device;
  return m;
}

// The ids the model reads for `text`, as generate's prompt_ids and the CLI's
// --logits tokens: chat None wraps the text as the model was opened to,
// False not at all, True or a name in that format; add_special puts the
// model's BOS first where it has one.
std::vector<int32_t> model_tokenize(const PyModel& m, const std::string& text, const py::object& chat, bool add_special) {
  const model::Tokenizer* tokenizer = m.tokenizer.get();
  std::string wrapped = text;
  if (!chat.is_none()) {
    tokenizer = &model::unwrapped_tokenizer(*m.tokenizer);
    const model::ChatFormat format = chat_format_of(m.path, *m.checkpoint, m.tokenizer_path, chat);
    if (format != model::ChatFormat::none) {
      model::require_text_tokenizer(*tokenizer, "a chat format");
      wrapped = model::wrap_chat(format, text);
    }
  }
  return add_special ? model::prompt_tokens(*tokenizer, m.checkpoint->config(), wrapped) : tokenizer->encode(wrapped);
}

// Token ids from any iterable of ints (a list, a numpy array of integers);
// ValueError for anything else, or an id outside the model's vocabulary.
std::vector<int32_t> ids_of(const py::object& ids, uint32_t vocab) {
  if (py::isinstance<py::str>(ids) || py::isinstance<py::bytes>(ids) || !py::isinstance<py::iterable>(ids))
    throw InputError("a sequence of token ids (ints), not a " + std::string(Py_TYPE(ids.ptr())->tp_name), "ids");
  std::vector<int32_t> out;
  for (const py::handle& id : ids) {
    // bool is an int to Python, and a float may hold one: neither is an id.
    PyObject* index = py::isinstance<py::bool_>(id) || !PyIndex_Check(id.ptr()) ? nullptr : PyNumber_Index(id.ptr());
    if (!index) {
      PyErr_Clear();
      throw InputError("token ids are ints, not a " + std::string(Py_TYPE(id.ptr())->tp_name), "ids");
    }
    const py::int_ value = py::reinterpret_steal<py::int_>(index);
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow || v < 0 || v >= vocab)
      throw InputError("token id " + py::repr(value).cast<std::string>() + " is outside the model's vocabulary (0 to " +
                           std::to_string(vocab - 1) + ")",
                       "ids");
    out.push_back(int32_t(v));
  }
  return out;
}

std::string model_detokenize(const PyModel& m, const py::object& ids) {
  const model::ModelConfig& config = m.checkpoint->config();
  return model::ids_text(*m.tokenizer, config, ids_of(ids, config.vocab));
}

std::vector<uint32_t> counts_of(const py::object& values, const char* what) {
  std::vector<uint32_t> out;
  if (values.is_none()) return out;
  for (const py::handle& v : values) out.push_back(count_of(v.cast<int64_t>(), what));
  return out;
}

std::vector<std::string> names_of(const py::object& values) {
  if (py::isinstance<py::str>(values)) return {values.cast<std::string>()};
  return values.cast<std::vector<std::string>>();
}

model::SelectionPlan plan_from(const py::object& method, int64_t budget, const py::object& prefill_method,
                               int64_t prefill_budget, const py::object& dense_layers, const py::kwargs& kwargs) {
  model::SelectionPlan plan;
  plan.options = options_from(kwargs);
  auto block = [](const py::object& name, int64_t budget, const char* budget_name, std::string& method, uint32_t& out) {
    method = name.is_none() ? "" : name.cast<std::string>();
    if (method == "dense") method.clear();
    if (!method.empty()) {
      find_method(method);
      if (budget <= 0) throw InputError(std::string("a method needs a positive ") + budget_name);
      out = count_of(budget, budget_name);
    } else if (budget) {
      throw InputError(std::string(budget_name) + " without its method");
    }
  };
  block(method, budget, "budget", plan.decode_method, plan.decode_budget);
  block(prefill_method, prefill_budget, "prefill_budget", plan.prefill_method, plan.prefill_budget);
  plan.dense_layers = counts_of(dense_layers, "dense_layers");
  return plan;
}

model::MethodSweep sweep_from(const py::object& methods, const py::object& budgets, const std::string& regime,
                              int64_t prefill_budget, const py::object& dense_layers, const py::kwargs& kwargs) {
  model::MethodSweep sweep;
  sweep.methods = names_of(methods);
  sweep.budgets = counts_of(budgets, "budgets");
  sweep.regime = model::parse_regime(regime);
  sweep.prefill_budget = count_of(prefill_budget, "prefill_budget");
  sweep.dense_layers = counts_of(dense_layers, "dense_layers");
  sweep.options = options_from(kwargs);
  model::check_sweep(sweep);
  return sweep;
}

py::dict model_generate(const PyModel& m, const std::string& prompt, int64_t steps, const py::object& method, int64_t budget,
                        const py::object& prefill_method, int64_t prefill_budget, const py::object& dense_layers,
                        double temperature, double top_p, int64_t seed, int64_t chunk, const py::kwargs& kwargs) {
  model::GenerateConfig config;
  config.steps = count_of(steps, "steps");
  config.chunk = chunk_of(chunk);
  config.temperature = temperature;
  config.top_p = top_p;
  config.seed = count_of(seed, "seed");
  config.plan = plan_from(method, budget, prefill_method, prefill_budget, dense_layers, kwargs);
  const vk::Device& d = device_or_default(m.device);
  model::Generation g;
  {
    py::gil_scoped_release release;
    g = model::generate(d, *m.checkpoint, *m.tokenizer, prompt, config);
  }
  py::dict out;
  out["text"] = g.text;
  out["ids"] = g.ids;
  out["prompt_ids"] = g.prompt;
  out["selection"] = from_json(model::plan_json(config.plan));
  out["time_to_first_token_ms"] = g.prefill_seconds * 1e3;
  out["decode_ms_per_token"] = g.decode_ms;
  out["gpu_ms_by_stage"] = stage_ms(g.stage_times);
  out["gpu_ms_by_part"] = g.ms_by_part;
  return out;
}

py::object model_needle(const PyModel& m, const std::string& task, const py::object& lengths, const py::object& depths,
                        int64_t samples, const py::object& methods, const py::object& budgets, const std::string& regime,
                        int64_t prefill_budget, const py::object& dense_layers, const py::object& haystack, int64_t chunk,
                        int64_t seed, const py::kwargs& kwargs) {
  model::NeedleConfig config;
  model::NeedlePrompts& p = config.prompts;
  p.task = model::parse_needle_task(task);
  p.lengths = counts_of(lengths, "lengths");
  p.depths = depths.cast<std::vector<double>>();
  p.samples = count_of(samples, "samples");
  p.seed = count_of(seed, "seed");
  if (p.task == model::NeedleTask::kv)
    p.haystack = haystack.is_none() ? model::read_text_file(bundled_asset("text/licenses.txt")) : haystack.cast<std::string>();
  config.sweep = sweep_from(methods, budgets, regime, prefill_budget, dense_layers, kwargs);
  config.chunk = chunk_of(chunk);
  const vk::Device& d = device_or_default(m.device);
  std::vector<model::NeedleResult> results;
  {
    py::gil_scoped_release release;
    results = model::run_needle(d, *m.checkpoint, *m.tokenizer, config);
  }
  nlohmann::json j = model::needle_json(config, results);
  j["model"] = m.path;
  j["device"] = d.info().name;
  return from_json(j);
}

py::object model_ruler(const PyModel& m, const py::object& data, const py::object& tasks, const py::object& lengths,
                       const py::object& samples, const py::object& methods, const py::object& budgets,
                       const std::string& regime, int64_t prefill_budget, const py::object& dense_layers,
                       const py::object& words, const py::object& haystack, int64_t tokens_to_generate, int64_t chunk,
                       const py::object& seed, const py::kwargs& kwargs) {
  ruler::RulerConfig config;
  if (!data.is_none()) {  // RULER's own files, as `kvscope ruler --data`
    for (const auto& [name, given] : {std::pair{"lengths", &lengths}, {"seed", &seed}, {"words", &words}, {"haystack", &haystack}})
      if (!given->is_none())
        throw InputError(std::string("ruler: ") + name + " is for generated prompts; data's files are RULER's own");
    ruler::read_ruler_files(config, data.cast<std::string>(),
                            tasks.is_none() ? std::vector<std::string>{} : tasks.cast<std::vector<std::string>>(),
                            samples.is_none() ? 0 : count_of(samples.cast<int64_t>(), "samples"));
  } else {
    if (tasks.is_none()) {
      for (const ruler::TaskSpec& t : ruler::task_table()) config.tasks.push_back(t.name);
    } else {
      config.tasks = tasks.cast<std::vector<std::string>>();
      for (const std::string& t : config.tasks) ruler::find_task(t);
    }
    config.lengths = lengths.is_none() ? std::vector<uint32_t>{4096} : counts_of(lengths, "lengths");
    config.samples = samples.is_none() ? 4 : count_of(samples.cast<int64_t>(), "samples");
    config.seed = seed.is_none() ? 0 : count_of(seed.cast<int64_t>(), "seed");
    config.texts.words = ruler::read_word_list(words.is_none() ? ruler::kDefaultWordList : words.cast<std::string>());
    config.texts.essay =
        haystack.is_none() ? model::read_text_file(bundled_asset("text/licenses.txt")) : haystack.cast<std::string>();
  }
  config.sweep = sweep_from(methods, budgets, regime, prefill_budget, dense_layers, kwargs);
  config.chunk = chunk_of(chunk);
  config.max_generate = count_of(tokens_to_generate, "tokens_to_generate");
  const vk::Device& d = device_or_default(m.device);
  std::vector<ruler::RulerResult> results;
  {
    py::gil_scoped_release release;
    results = ruler::run_ruler(d, *m.checkpoint, *m.tokenizer, config);
  }
  nlohmann::json j = ruler::ruler_settings_json(config), all = nlohmann::json::array();
  for (const ruler::RulerResult& r : results) all.push_back(ruler::ruler_result_json(r));
  j["results"] = all;
  j["model"] = m.path;
  j["device"] = d.info().name;
  return from_json(j);
}

py::object model_perplexity(const PyModel& m, const py::object& text, int64_t length, int64_t scored,
                            const py::object& methods, const py::object& budgets, const std::string& regime,
                            const py::object& dense_layers, int64_t chunk, const py::kwargs& kwargs) {
  model::PerplexityConfig config;
  config.scored = count_of(scored, "scored");
  config.chunk = chunk_of(chunk);
  config.sweep = sweep_from(methods, budgets, regime, 0, dense_layers, kwargs);
  const std::string source_name = text.is_none() ? bundled_asset("text/licenses.txt").string() : "(the text given)";
  const std::string source = text.is_none() ? model::read_text_file(source_name) : text.cast<std::string>();
  const uint32_t want = count_of(length, "length");
  const std::vector<int32_t> tokens =
      model::perplexity_tokens(*m.tokenizer, m.checkpoint->config(), source, want, source_name);
  const vk::Device& d = device_or_default(m.device);
  std::vector<model::PerplexityResult> results;
  {
    py::gil_scoped_release release;
    results = model::run_perplexity(d, *m.checkpoint, tokens, config);
  }
  nlohmann::json j = model::perplexity_json(config, results);
  j["model"] = m.path;
  j["device"] = d.info().name;
  j["length"] = want;
  j["text"] = source_name;
  return from_json(j);
}

// The methods and their options, from the method table, for the docstrings.
std::string methods_doc() {
  std::string doc = "\n\nMethods: ";
  for (size_t i = 0; i < method_table().size(); ++i) doc += (i ? ", " : "") + std::string(method_table()[i].name);
  doc += ".\nMethod options (keyword=default):\n";
  const MethodOptions defaults;
  for (const OptionSpec& o : option_table()) doc += "    " + o.keyword() + "=" + o.text(defaults) + "  " + o.help + "\n";
  return doc;
}

}  // namespace
}  // namespace kv::python

PYBIND11_MODULE(kvscope, m) {
  using namespace kv::python;
  m.doc() = "kvscope: query-aware KV-cache selection and sparse attention on any Vulkan GPU";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kv::InputError& e) {
      const std::string where = e.setting.empty() ? "" : e.setting + ": ";
      PyErr_SetString(PyExc_ValueError, (where + e.what()).c_str());
    } catch (const kv::DeviceError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def("devices", [] {
    py::list out;
    for (const kv::vk::DeviceInfo& d : kv::vk::list_devices()) {
      py::dict info;
      info["index"] = d.index;
      info["name"] = d.name;
      info["type"] = d.type;
      info["driver"] = d.driver;
      info["supported"] = d.supported;
      info["device_local_bytes"] = d.device_local_bytes;
      out.append(info);
    }
    return out;
  }, "The Vulkan devices the loader sees, a dict each.");

  m.def("methods", [] {
    py::list out;
    const kv::MethodOptions defaults;
    for (const kv::MethodSpec& spec : kv::method_table()) {
      py::dict options;
      for (const char* flag : spec.options) {
        const kv::OptionSpec& option = kv::find_option(flag);
        options[py::str(option.keyword())] = option.text(defaults);
      }
      py::dict method;
      method["name"] = spec.name;
      method["summary"] = spec.summary;
      method["options"] = options;
      method["model_runs_it"] = !spec.reads_past_queries && !spec.builds_from_whole_cache;
      out.append(method);
    }
    return out;
  }, "The method table: each method's name, one-line summary and options (keyword: default), and whether a "
     "model run can feed it.");

  m.def("options", [] {
    py::list out;
    const kv::MethodOptions defaults;
    for (const kv::OptionSpec& o : kv::option_table()) {
      py::dict option;
      option["keyword"] = o.keyword();
      option["flag"] = std::string("--") + o.flag;
      option["help"] = o.help;
      option["default"] = o.text(defaults);
      std::vector<std::string> choices(o.names.begin(), o.names.end());
      option["choices"] = choices;
      option["lowest"] = o.lowest;
      option["highest"] = o.highest;
      std::vector<std::string> readers;
      for (const kv::MethodSpec& spec : kv::method_table())
        for (const char* flag : spec.options)
          if (std::string(flag) == o.flag) readers.push_back(spec.name);
      option["methods"] = readers;
      out.append(option);
    }
    return out;
  }, "The option table: each method option's keyword, CLI flag, help, default, named choices (empty for a count), "
     "range and the methods that read it.");

  py::class_<PyDevice>(m, "Device", "A Vulkan device: the best one, or one named by index or by part of its name.")
      .def(py::init(&open_device), py::arg("name_or_index") = py::none())
      .def_property_readonly("name", [](const PyDevice& d) { return d.device->info().name; })
      .def("__repr__", [](const PyDevice& d) { return "kvscope.Device('" + d.device->info().name + "')"; });

  py::class_<PyCapture>(m, "Capture", "Captured queries, keys and values of one or more layers (docs/capture.md).")
      .def_static("open", &open_capture, py::arg("path"), "Opens a capture file, checked in full.")
      .def_static("from_arrays", &capture_from_arrays, py::arg("q"), py::arg("k"), py::arg("v"),
                  py::arg("tokens") = py::none(), py::arg("text") = py::none(), py::arg("dtype") = "f16",
                  py::arg("scale") = py::none(),
                  "A one-layer capture from q [H, T, d] and k, v [G, T, d] (any float array; stored as dtype).")
      .def("save", [](const PyCapture& c, const std::string& path) {
        std::filesystem::copy_file(c.path, path, std::filesystem::copy_options::overwrite_existing);
      }, py::arg("path"), "Writes the capture to a file.")
      .def_property_readonly("tokens", [](const PyCapture& c) { return c.capture->tokens(); })
      .def_property_readonly("layers", [](const PyCapture& c) {
        std::vector<int> indices;
        for (const kv::CaptureLayer& l : c.capture->layers()) indices.push_back(l.index);
        return indices;
      })
      .def("shape", [](const PyCapture& c, int layer) {
        const kv::AttentionShape& s = c.capture->layer(layer).shape;
        py::dict d;
        d["heads"] = s.heads;
        d["kv_heads"] = s.kv_heads;
        d["tokens"] = s.tokens;
        d["dim"] = s.dim;
        return d;
      }, py::arg("layer"));

  const std::string methods_doc = kv::python::methods_doc();
  static std::deque<std::string> docs;  // pybind11 keeps the pointers: they must not move
  auto doc = [&](const std::string& text) { return docs.emplace_back(text + methods_doc).c_str(); };

  py::class_<PyModel>(m, "Model",
                      "A Llama-family model (Hugging Face directory, llama2.c .bin or GGUF file), or with "
                      "random_weights=True a config.json (or its folder) with random weights drawn on the device: "
                      "speed at a model's real size. weight_type='q4_k' (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k .. q6_k, "
                      "q4_k_m, q5_k_m) holds the matrices as ggml blocks of that type: drawn so, or quantized as "
                      "llama.cpp's quantizer would (a GGUF file keeps its own). "
                      "The tokenizer is the model's own unless one is given. "
                      "chat=True wraps every prompt as the model's chat template wraps one user turn (chat='llama3', "
                      "'chatml', 'inst' or 'vicuna' forces a format).")
      .def(py::init(&open_model), py::arg("path"), py::kw_only(), py::arg("random_weights") = false, py::arg("seed") = 0,
           py::arg("weight_type") = "f16", py::arg("tokenizer") = py::none(), py::arg("device") = py::none(), py::arg("chat") = py::none())
      .def_property_readonly("config", [](const PyModel& m) {
        const kv::model::ModelConfig& c = m.checkpoint->config();
        py::dict d;
        d["architecture"] = c.architecture;
        d["layers"] = c.layers;
        d["hidden"] = c.hidden;
        d["heads"] = c.heads;
        d["kv_heads"] = c.kv_heads;
        d["head_dim"] = c.head_dim;
        d["weight_types"] = m.checkpoint->matrix_types();  // "F16", "Q4_K x 161, Q6_K x 33"
        d["weight_bytes"] = m.checkpoint->matrix_bytes();
        d["vocab"] = c.vocab;
        d["max_positions"] = c.max_positions;
        return d;
      })
      .def("__repr__", [](const PyModel& m) { return "kvscope.Model('" + m.path + "')"; })
      .def("tokenize", &model_tokenize, py::arg("text"), py::arg("chat") = py::none(), py::arg("add_special") = true,
           "The token ids the model reads for `text` (a str, or bytes taken as they are, as the CLI's --prompt), as "
           "generate's prompt_ids and `kvscope generate --logits`'s tokens: the model's BOS first where it has one "
           "(add_special=False: none), the text wrapped in the chat format the model was opened with (chat=False: "
           "not wrapped; True: the format of the model's chat template; a name: that format).")
      .def("detokenize", &model_detokenize, py::arg("ids"),
           "The text of `ids` as one sequence (each token decoded after the one before it, special tokens as their "
           "text); bytes that are not UTF-8, as where the ids stop inside a character, are U+FFFD, as Python's "
           "bytes.decode('utf-8', errors='replace') has them. Where the prompt's text ends on a whole character, "
           "generate's text is detokenize(prompt_ids + ids) after detokenize(prompt_ids). ValueError for an id "
           "outside the model's vocabulary or one that is not an int.")
      .def("generate", &model_generate, py::arg("prompt"), py::arg("steps") = 256, py::kw_only(),
           py::arg("method") = py::none(), py::arg("budget") = 0, py::arg("prefill_method") = py::none(),
           py::arg("prefill_budget") = 0, py::arg("dense_layers") = py::none(), py::arg("temperature") = 0.0,
           py::arg("top_p") = 0.9, py::arg("seed") = 0, py::arg("chunk") = 128,
           doc("Generates up to `steps` tokens after `prompt` (BOS first where the model has one), as "
               "`kvscope generate` does: method/budget inside each decode step's attention, prefill_method/"
               "prefill_budget inside each prefill chunk's, dense_layers kept dense. Returns text (as the CLI "
               "prints it: bytes that are not UTF-8, as where the tokens stop inside a character, are U+FFFD), ids "
               "(the generated tokens), prompt_ids, selection, time_to_first_token_ms, decode_ms_per_token, "
               "gpu_ms_by_stage and gpu_ms_by_part."))
      .def("needle", &model_needle, py::kw_only(), py::arg("task") = "passkey",
           py::arg("lengths") = std::vector<uint32_t>{2048}, py::arg("depths") = std::vector<double>{0.1, 0.3, 0.5, 0.7, 0.9},
           py::arg("samples") = 1, py::arg("methods") = std::vector<std::string>{"dense", "quest", "fier", "streaming"},
           py::arg("budgets") = std::vector<uint32_t>{64, 256, 1024}, py::arg("regime") = "decode",
           py::arg("prefill_budget") = 0, py::arg("dense_layers") = py::none(), py::arg("haystack") = py::none(),
           py::arg("chunk") = 128, py::arg("seed") = 0,
           doc("Retrieval accuracy with each method and budget inside the model, as `kvscope needle --json` "
               "writes it (a dict; its results one per length, depth, method and budget). task passkey or kv "
               "(kv hides its fact in `haystack`, default the bundled licence texts); regime decode, prefill "
               "or both."))
      .def("ruler", &model_ruler, py::kw_only(), py::arg("data") = py::none(), py::arg("tasks") = py::none(),
           py::arg("lengths") = py::none(), py::arg("samples") = py::none(),
           py::arg("methods") = std::vector<std::string>{"dense", "quest", "fier", "streaming"},
           py::arg("budgets") = std::vector<uint32_t>{256, 1024}, py::arg("regime") = "decode",
           py::arg("prefill_budget") = 0, py::arg("dense_layers") = py::none(), py::arg("words") = py::none(),
           py::arg("haystack") = py::none(), py::arg("tokens_to_generate") = 0, py::arg("chunk") = 128,
           py::arg("seed") = py::none(),
           doc("RULER's synthetic tasks (all 11 by default, or `tasks`) with each method and budget inside the "
               "model, as `kvscope ruler --json` writes it (a dict; a result per task, length, method and budget "
               "with its score 0-100, predictions and references). lengths default [4096], samples 4, seed 0; "
               "words: a word list file (default Debian's wamerican); haystack: the essay haystack's text (default "
               "the bundled licence texts). data: a folder of RULER's own generated files "
               "(<task>/validation.jsonl), scored as `kvscope ruler --data` scores them (every record unless "
               "samples; lengths, seed, words and haystack refused)."))
      .def("perplexity", &model_perplexity, py::kw_only(), py::arg("text") = py::none(), py::arg("length") = 4096,
           py::arg("scored") = 512, py::arg("methods") = std::vector<std::string>{"dense", "quest", "fier", "streaming"},
           py::arg("budgets") = std::vector<uint32_t>{64, 256, 1024}, py::arg("regime") = "decode",
           py::arg("dense_layers") = py::none(), py::arg("chunk") = 128,
           doc("Perplexity of the first `length` tokens of `text` (default the bundled licence texts) on its "
               "last `scored` predictions with each method and budget inside the model, as `kvscope ppl --json` "
               "writes it (a dict; mean_nll and perplexity per result)."));

  m.def(
      "merge",
      [](const std::string& out, const std::vector<std::string>& inputs, const std::string& json, const std::string& csv,
         const std::string& plot) {
        const kv::sweep::ResultsFileContents merged = kv::sweep::merge_results(inputs);
        kv::sweep::write_reports(merged.header, merged.results, {json, csv, plot});
        kv::sweep::write_results_file(out, merged.header, merged.results);
        return from_json(kv::sweep::report_json(merged.header, merged.results));
      },
      py::arg("out"), py::arg("inputs"), py::kw_only(), py::arg("json") = "", py::arg("csv") = "", py::arg("plot") = "",
      doc("Joins the results files of a sweep's shards (`kvscope needle|ppl|speed|eval --results F --shard I/N`) "
          "into `out`, the whole sweep's results file, as `kvscope merge` does; writes the reports asked for "
          "(json, csv for needle and eval, plot for needle) and returns the report as one run's --json holds it. "
          "ValueError when the inputs are not every shard of one sweep."));
  m.def("select", &select_keys, py::arg("capture"), py::arg("layer"), py::arg("method"), py::arg("budget"), py::arg("regime"),
        py::kw_only(), py::arg("probes") = 64, py::arg("chunk") = 128, py::arg("chunks") = 0,
        py::arg("device") = py::none(),
        doc("One method's selection for every decode probe or prefill chunk of a layer, as `kvscope select` "
            "writes it: indices [blocks, rows, width] (ascending, -1 padded) and block_pos [blocks]. Method "
            "options as keywords."));
  m.def("evaluate", &evaluate_methods, py::arg("capture"), py::arg("methods"), py::arg("budgets"), py::arg("regime"),
        py::arg("layers") = py::none(), py::kw_only(), py::arg("probes") = 64, py::arg("chunk") = 128,
        py::arg("chunks") = 0, py::arg("device") = py::none(),
        doc("Methods x budgets (key counts or '3%' of T) on each layer, as `kvscope eval` runs them: a record "
            "each (coverage, recall, output_error, needle_recall, gpu_ms by stage), ready for pandas.DataFrame."));
}
