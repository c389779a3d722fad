#include "model/generate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"
#include "model/files.h"
#include "model/model.h"
#include "model/prompts.h"

namespace kv::model {

std::unique_ptr<Tokenizer> model_tokenizer(const std::filesystem::path& model_path, const Checkpoint& checkpoint,
                                           const std::filesystem::path& tokenizer) {
  const uint32_t vocab = checkpoint.config().vocab;
  if (!tokenizer.empty()) return open_tokenizer(tokenizer, vocab);
  if (checkpoint.gguf()) {
    if (checkpoint.embedded_tokenizer().empty())
      throw InputError(model_path.string() + ": the GGUF file holds no tokenizer: give its tokenizer.json", "tokenizer");
    return parse_hf_tokenizer(checkpoint.embedded_tokenizer(), model_path.string() + " (its tokenizer)");
  }
  if (!checkpoint.random()) return open_tokenizer(default_tokenizer(model_path), vocab);
  std::filesystem::path folder = std::filesystem::is_directory(model_path) ? model_path : model_path.parent_path();
  if (folder.empty()) folder = ".";
  if (std::filesystem::exists(folder / "tokenizer.json")) return open_tokenizer(folder / "tokenizer.json", vocab);
  return token_id_tokenizer(vocab);
}

ChatFormat model_chat_format(const std::filesystem::path& model_path, const Checkpoint& checkpoint,
                             const std::filesystem::path& tokenizer, const std::string& forced) {
  if (!forced.empty()) return chat_format_named(forced);
  if (checkpoint.gguf()) {
    if (checkpoint.embedded_chat_template().empty())
      throw InputError(model_path.string() + ": the GGUF file holds no tokenizer.chat_template: --chat-format NAME applies one", "chat");
    return chat_format_of_template(checkpoint.embedded_chat_template());
  }
  const std::filesystem::path beside = tokenizer.empty() ? model_path : tokenizer;
  std::filesystem::path folder = std::filesystem::is_directory(beside) ? beside : beside.parent_path();
  if (folder.empty()) folder = ".";
  const std::filesystem::path config = folder / "tokenizer_config.json";
  nlohmann::json j;
  if (std::filesystem::exists(config)) {
    try {
      j = nlohmann::json::parse(read_text_file(config));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(config.string() + ": not JSON (" + e.what() + ")", "chat");
    }
  }
  // A template, or a list of named ones (the default among them).
  nlohmann::json chat_template = j.is_object() && j.contains("chat_template") ? j["chat_template"] : nlohmann::json();
  if (chat_template.is_array())
    for (const nlohmann::json& t : chat_template)
      if (t.is_object() && t.value("name", "") == "default" && t.contains("template")) chat_template = t["template"];
  if (!chat_template.is_string())
    throw InputError(config.string() + " holds no chat_template: --chat-format NAME applies one", "chat");
  return chat_format_of_template(chat_template.get<std::string>());
}

namespace {

// A token from softmax(logits / temperature), within the smallest set of the
// most likely tokens whose probabilities reach top_p.
int32_t sample(const std::vector<float>& logits, double temperature, double top_p, Random& random) {
  const float largest = *std::max_element(logits.begin(), logits.end());
  std::vector<std::pair<double, int32_t>> p;
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double e = std::exp((double(logits[i]) - largest) / temperature);
    p.push_back({e, int32_t(i)});
    total += e;
  }
  std::sort(p.begin(), p.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  double kept = 0;
  size_t n = 0;
  while (n < p.size() && (n == 0 || kept < top_p * total)) kept += p[n++].first;
  double r = random.uniform() * kept;
  for (size_t i = 0; i < n; ++i)
    if ((r -= p[i].first) < 0) return p[i].second;
  return p[n - 1].second;
}

}  // namespace

Generation generate(const vk::Device& device, const Checkpoint& checkpoint, const Tokenizer& tokenizer,
                    const std::string& prompt, const GenerateConfig& config, const PieceCallback& on_piece,
                    const PrefillProgress& progress) {
  if (!(config.temperature >= 0) || !std::isfinite(config.temperature) || !(config.top_p > 0 && config.top_p <= 1))
    throw InputError("the temperature must be at least 0 and top_p in (0, 1]");
  if (config.steps == 0) throw InputError("generate at least one token", "steps");
  const ModelConfig& model_config = checkpoint.config();
  Generation g;
  g.prompt = prompt_tokens(tokenizer, model_config, prompt);
  if (g.prompt.empty()) throw InputError("an empty prompt needs a model with a BOS token", "prompt");
  check_sequence_length(model_config, uint64_t(g.prompt.size()) + config.steps);

  Model runner(device, checkpoint, uint32_t(g.prompt.size() + config.steps), config.chunk);
  runner.select(config.plan);
  Random random(config.seed);
  const auto start = std::chrono::steady_clock::now();
  runner.prefill(g.prompt, config.prompt_logits, [&](uint32_t done) {
    if (config.prompt_logits) {
      const std::vector<float> chunk_logits = runner.logits();
      g.prompt_logits.insert(g.prompt_logits.end(), chunk_logits.begin(), chunk_logits.end());
    }
    if (progress) progress(done, uint32_t(g.prompt.size()));
  });
  auto choose = [&] { return config.temperature == 0 ? runner.greedy() : sample(runner.logits(), config.temperature, config.top_p, random); };
  int32_t previous = g.prompt.back(), next = choose();
  const auto first_token = std::chrono::steady_clock::now();
  // The text is valid_utf8 of the tokens' bytes, streamed: a character split
  // over tokens is passed on whole, once its last byte has come.
  Utf8Stream text;
  auto pass_on = [&](const std::string& piece) {
    if (on_piece && !piece.empty()) on_piece(piece);
    g.text += piece;
  };
  // Takes a chosen token; false at an end of sequence or the last step.
  auto emit = [&](int32_t token) {
    const auto& eos = model_config.eos_tokens;
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) return false;
    pass_on(text.push(tokenizer.decode(previous, token)));
    g.ids.push_back(token);
    previous = token;
    return g.ids.size() < config.steps;
  };
  if (config.temperature == 0) {  // greedy: the GPU passes each choice to the next step
    if (emit(next)) runner.append_greedy(next, config.steps - 1, emit);
  } else {
    while (emit(next)) {
      runner.append(std::span(&next, 1));
      next = choose();
    }
  }
  pass_on(text.finish());
  const auto end = std::chrono::steady_clock::now();
  g.prefill_seconds = std::chrono::duration<double>(first_token - start).count();
  g.decode_ms = g.ids.size() > 1 ? std::chrono::duration<double, std::milli>(end - first_token).count() / double(g.ids.size() - 1) : 0;
  g.stage_times = runner.stage_times();
  g.ms_by_part = runner.ms_by_part();
  return g;
}

}  // namespace kv::model
