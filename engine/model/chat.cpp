#include "model/chat.h"

#include "base/error.h"

namespace kv::model {

ChatFormat chat_format_of_template(std::string_view t) {
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatFormat::llama3;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatFormat::chatml;
  if (t.find("[INST]") != std::string_view::npos) return ChatFormat::inst;
  if (t.find("USER:") != std::string_view::npos && t.find("ASSISTANT:") != std::string_view::npos) return ChatFormat::vicuna;
  throw InputError("the model's chat template matches none of the formats kvscope applies (llama3, chatml, inst, vicuna); "
                   "--chat-format NAME applies one",
                   "chat");
}

ChatFormat chat_format_named(const std::string& name) {
  for (ChatFormat f : {ChatFormat::llama3, ChatFormat::chatml, ChatFormat::inst, ChatFormat::vicuna})
    if (name == chat_format_name(f)) return f;
  throw InputError("'" + name + "' is not a chat format (llama3, chatml, inst, vicuna)", "chat-format");
}

const char* chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::none: return "none";
    case ChatFormat::llama3: return "llama3";
    case ChatFormat::chatml: return "chatml";
    case ChatFormat::inst: return "inst";
    case ChatFormat::vicuna: return "vicuna";
  }
  return "none";
}

std::string wrap_chat(ChatFormat format, std::string_view text) {
  const std::string t(text);
  switch (format) {
    case ChatFormat::none:
      return t;
    case ChatFormat::llama3: {
      // Llama 3's template trims the turn (jinja's trim).
      const size_t first = t.find_first_not_of(" \t\n\r\v\f"), last = t.find_last_not_of(" \t\n\r\v\f");
      const std::string trimmed = first == std::string::npos ? "" : t.substr(first, last - first + 1);
      return "<|start_header_id|>user<|end_header_id|>\n\n" + trimmed + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    }
    case ChatFormat::chatml:
      return "<|im_start|>user\n" + t + "<|im_end|>\n<|im_start|>assistant\n";
    case ChatFormat::inst:
      return "[INST] " + t + " [/INST]";
    case ChatFormat::vicuna:
      // FastChat's vicuna_v1.1 template, which LongChat-7B-v1.5 was trained on.
      return "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
             "detailed, and polite answers to the user's questions. USER: " +
             t + " ASSISTANT:";
  }
  return t;
}

namespace {

class ChatTokenizer final : public Tokenizer {
 public:
  ChatTokenizer(std::unique_ptr<Tokenizer> inner, ChatFormat format) : inner_(std::move(inner)), format_(format) {}
  std::vector<int32_t> encode(std::string_view text) const override { return inner_->encode(wrap_chat(format_, text)); }
  std::string decode(int32_t previous, int32_t token) const override { return inner_->decode(previous, token); }
  uint32_t vocab_size() const override { return inner_->vocab_size(); }
  const Tokenizer& inner() const { return *inner_; }

 private:
  std::unique_ptr<Tokenizer> inner_;
  ChatFormat format_;
};

}  // namespace

std::unique_ptr<Tokenizer> chat_tokenizer(std::unique_ptr<Tokenizer> inner, ChatFormat format) {
  require_text_tokenizer(*inner, "a chat format");
  return std::make_unique<ChatTokenizer>(std::move(inner), format);
}

const Tokenizer& unwrapped_tokenizer(const Tokenizer& tokenizer) {
  const auto* chat = dynamic_cast<const ChatTokenizer*>(&tokenizer);
  return chat ? chat->inner() : tokenizer;
}

}  // namespace kv::model
