"""Tests of tools/peers/bench_linear.py's shapes: each linear layer of a config as
kvscope's forward pass runs it, and their FLOPs. Plain python3 (no PyTorch,
no GPU): run by ctest as `bench_linear_shapes`, or

    python3 tools/peers/test_bench_linear.py
"""
import json
import os
import sys
import unittest

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
import bench_linear  # noqa: E402

SHAPES = os.path.join(TOOLS, "..", "..", "assets", "shapes")


class Shapes(unittest.TestCase):
    def test_llama_31_8b(self):
        config = json.load(open(os.path.join(SHAPES, "llama-3.1-8b.json")))
        per_layer, layers, lm_head = bench_linear.shapes(config)
        self.assertEqual(layers, 32)
        self.assertEqual(per_layer, {"q": (4096, 4096), "k": (1024, 4096), "v": (1024, 4096), "o": (4096, 4096),
                                     "gate": (14336, 4096), "up": (14336, 4096), "down": (4096, 14336)})
        self.assertEqual(lm_head, (128256, 4096))
        # Every weight but the embedding and the norms, twice a token.
        matrices = 8030261248 - 128256 * 4096 - (2 * 32 + 1) * 4096
        self.assertEqual(bench_linear.linear_flops(config, 1), 2 * matrices)

    def test_head_dim_apart_from_hidden(self):
        config = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
                  "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 101}
        per_layer, _, _ = bench_linear.shapes(config)
        self.assertEqual(per_layer["q"], (128, 64))
        self.assertEqual(per_layer["k"], (64, 64))
        self.assertEqual(per_layer["o"], (64, 128))


if __name__ == "__main__":
    unittest.main()
