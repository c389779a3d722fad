#!/usr/bin/env python3
"""Tiny random models of the families kvscope reads beyond Llama, written by
transformers itself: Qwen3 (per-head q/k norms, head_dim apart from
hidden/heads; GQA and MHA, tied and untied, bf16 and fp16) and a YaRN-scaled
Llama (prompts past its original context), each in a folder of its own with
the tokenizer of TOKENIZER_DIR beside it.

  python3 tools/dev/tiny_families.py --tokenizer assets/models/llama-debian-5m --out /tmp/families

Prints the folders' names, one a line. tools/dev/device_families.sh then runs
`kvscope generate --logits` on each and compares with transformers
(compare_logits.py).
"""
import argparse
import os
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

COMMON = dict(vocab_size=4096, hidden_size=128, intermediate_size=256, num_hidden_layers=2, rms_norm_eps=1e-6,
              bos_token_id=0, eos_token_id=0, pad_token_id=None, initializer_range=0.25)

MODELS = {
    # name: (model class, config class, fields, dtype)
    "qwen3_gqa_untied_bf16": (Qwen3ForCausalLM, Qwen3Config,
                              dict(num_attention_heads=4, num_key_value_heads=2, head_dim=64, tie_word_embeddings=False,
                                   max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
                              torch.bfloat16),
    "qwen3_mha_tied_fp16": (Qwen3ForCausalLM, Qwen3Config,
                            dict(num_attention_heads=4, num_key_value_heads=4, head_dim=32, tie_word_embeddings=True,
                                 max_position_embeddings=4096, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
                            torch.float16),
    "llama_yarn_fp32": (LlamaForCausalLM, LlamaConfig,
                        dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32, tie_word_embeddings=True,
                             max_position_embeddings=2048,
                             rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                              "original_max_position_embeddings": 256}),
                        torch.float32),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", required=True, help="a folder with tokenizer.json (vocabulary of 4096)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name, (model_class, config_class, fields, dtype) in MODELS.items():
        torch.manual_seed(args.seed)
        config = config_class(**COMMON, **fields)
        model = model_class(config).to(dtype)
        folder = os.path.join(args.out, name)
        model.save_pretrained(folder)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(args.tokenizer, f), folder)
        print(folder)


if __name__ == "__main__":
    main()
