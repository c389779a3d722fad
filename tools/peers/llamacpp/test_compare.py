"""Tests of tools/peers/llamacpp/compare.py: its rows, ratios and the other
peers' column, from hand-made JSON in the shapes llamacpp_peer, kvscope and
the CUDA peers write. Plain python3 (no GPU): run by ctest as
`llamacpp_compare`, or

    python3 tools/peers/llamacpp/test_compare.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

PEER_MODEL = {"source": "node-llama-cpp 3.22.1", "device": "NVIDIA H100", "model": "/tmp/x.gguf",
              "runs": [{"context": 32735, "ttft_ms": 3300.0, "decode_ms_per_token": 10.0}]}
PEER_KERNELS = {"kernel_tokens": 2048, "shape": {"layers": 32},
                "ops": [{"op": "MUL_MAT", "activations": "f32", "name": "q", "gpu_us": 1000.0, "us": 1100.0},
                        {"op": "MUL_MAT", "activations": "f32", "name": "down", "gpu_us": 2000.0, "us": 2100.0},
                        {"op": "MUL_MAT", "activations": "f16", "name": "q", "gpu_us": 9000.0, "us": 9100.0},
                        {"op": "FLASH_ATTN_EXT", "tokens": 2048, "context": 32768, "gpu_us": 8000.0, "us": 8100.0}]}
# 16 chunks of a 32,735-token prompt: the linear stages' ms over the whole prefill.
KVSCOPE = {"prefill": {"prompt_tokens": 32768, "chunk": 2048,
                       "results": [{"time_to_first_token_ms": 3000.0,
                                    "gpu_ms_by_stage": {"qkv": 512.0, "output_projection": 512.0, "mlp_up": 512.0,
                                                        "mlp_down": 512.0, "attention": 999.0}}]},
           "decode": {"prompt_tokens": 32768, "chunk": 2048, "results": [{"ms_per_token": 8.0}]}}
BENCH = {"rows": [{"step": "dense prefill", "stage": "total", "length": 32768, "time_us": 4000.0}]}
OTHERS = [{"mode": "eager", "prompt_tokens": 32768, "time_to_first_token_ms": 1440.0, "decode_ms_per_token": 32.0},
          {"peer": "torch.matmul", "tokens": 2048, "ms_by_layer_kind": {"q": 16.0, "down": 16.0}},
          {"peer": "torch.matmul", "tokens": 1, "ms_by_layer_kind": {"q": 1.0}},
          {"what": "sdpa_prefill_chunk_lower_right", "tokens": 32768, "chunk": 2048, "graph_us": 900.0},
          {"what": "sdpa_prefill_chunk_lower_right", "tokens": 131000, "chunk": 2048, "graph_us": 5000.0}]


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.peer_model = dict(PEER_MODEL, runs=[dict(PEER_MODEL["runs"][0], context=32768)])

    def rows(self, others=()):
        return {name: rest for name, *rest in compare.rows([self.peer_model, PEER_KERNELS], [KVSCOPE], BENCH, others)}

    def test_each_engine_side_by_side(self):
        rows = self.rows()
        self.assertEqual(rows["time to first token, 32,768 tokens, 2,048-token chunks (ms)"][:2], [3300.0, 3000.0])
        self.assertEqual(rows["decode at 32,768 tokens (ms/token)"][:2], [10.0, 8.0])
        # llama.cpp: its F32-activation products summed; kvscope: 2,048 ms over 16 chunks and 32 layers.
        self.assertEqual(rows["linear layers of a layer, 2,048 tokens (us)"][:2], [3000.0, 4000.0])
        self.assertEqual(rows["dense attention, 2,048 queries ending 32,768 keys, a layer (us)"][:2], [8000.0, 4000.0])
        self.assertTrue(all(other is None for _, _, other in rows.values()))

    def test_other_peers_of_the_same_call(self):
        rows = self.rows(OTHERS)
        self.assertEqual(rows["time to first token, 32,768 tokens, 2,048-token chunks (ms)"][2], "transformers eager: 1,440")
        self.assertEqual(rows["decode at 32,768 tokens (ms/token)"][2], "transformers eager: 32.00")
        self.assertEqual(rows["linear layers of a layer, 2,048 tokens (us)"][2], "cuBLAS (torch.matmul, fp16): 1,000")
        self.assertEqual(rows["dense attention, 2,048 queries ending 32,768 keys, a layer (us)"][2],
                         "SDPA (causal_lower_right, graphed): 900")

    def test_table_columns(self):
        lines = compare.table([self.peer_model, PEER_KERNELS], [KVSCOPE], BENCH, OTHERS).splitlines()
        self.assertTrue(lines[2].endswith("| other peers, same call |"))
        self.assertEqual(lines[3], "| --- | --- | --- | --- | --- |")
        self.assertIn("| 3,300 | 3,000 | 1.10x | transformers eager: 1,440 |", "\n".join(lines))
        plain = compare.table([self.peer_model, PEER_KERNELS], [KVSCOPE], BENCH).splitlines()
        self.assertEqual(plain[3], "| --- | --- | --- | --- |")


if __name__ == "__main__":
    unittest.main()
