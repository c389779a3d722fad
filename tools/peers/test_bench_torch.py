"""Tests of tools/peers/bench_torch.py's comparison with a kvscope bench report: the
shape checks, the matching of steps and the ratios. Plain python3 (no PyTorch,
no GPU): run by ctest as `bench_torch_compare`, or

    python3 tools/peers/test_bench_torch.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
import bench_torch  # noqa: E402


def report(**changes):
    config = {"heads": 32, "kv_heads": 8, "dim": 128, "dtype": "F16", "budget": 2048, "prefill_budget": 1024,
              "chunk": 128, "repeat": 50, "page_size": 16, "group_size": 32, "n_q": 16, "quoka_group": "mean",
              "gqa_agg": "head"}
    config.update(changes)
    rows = [
        {"length": 8192, "step": "dense decode", "stage": "dense_partial", "time_us": 15.0},
        {"length": 8192, "step": "dense decode", "stage": "total", "time_us": 20.0},
        {"length": 8192, "step": "quest decode", "stage": "total", "time_us": 25.0},
        {"length": 32768, "step": "dense decode", "stage": "total", "time_us": 60.0},
    ]
    return {"config": config, "rows": rows}


class BenchTorchCompare(unittest.TestCase):
    def setUp(self):
        self.args = bench_torch.parse_arguments([])

    def test_totals_of_a_matching_report(self):
        totals = bench_torch.kvscope_totals(report(), self.args)
        self.assertEqual(totals, {("dense decode", 8192): 20.0, ("quest decode", 8192): 25.0,
                                  ("dense decode", 32768): 60.0})

    def test_a_different_shape_is_refused(self):
        for change in ({"heads": 16}, {"prefill_budget": 512}, {"page_size": 32}, {"dtype": "BF16"},
                       {"gqa_agg": "max"}, {"quoka_group": "max"}):
            with self.subTest(change=change), self.assertRaises(bench_torch.InputError):
                bench_torch.kvscope_totals(report(**change), self.args)

    def test_a_report_without_config_is_refused(self):
        with self.assertRaises(bench_torch.InputError):
            bench_torch.kvscope_totals({"rows": []}, self.args)
        with self.assertRaises(bench_torch.InputError):
            bench_torch.kvscope_totals([], self.args)

    def test_ratios_of_the_matching_step_and_length(self):
        totals = bench_torch.kvscope_totals(report(), self.args)
        measurements = [
            {"what": "sdpa_decode", "tokens": 8192, "median_us": 50.0, "graph_us": 30.0},
            {"what": "sdpa_decode", "tokens": 32768, "median_us": 90.0},                # no graph
            {"what": "quest_decode_lean", "tokens": 8192, "median_us": 100.0, "graph_us": 75.0},
            {"what": "fier_decode", "tokens": 8192, "median_us": 10.0},                 # kvscope did not time it
            {"what": "sdpa_prefill_chunk_lower_right", "tokens": 8192, "error": "no kernel"},
        ]
        rows = bench_torch.comparison(measurements, totals)
        self.assertEqual(rows, [
            ("sdpa_decode", 8192, 50.0, 30.0, "dense decode", 20.0, 2.5, 1.5),
            ("sdpa_decode", 32768, 90.0, None, "dense decode", 60.0, 1.5, None),
            ("quest_decode_lean", 8192, 100.0, 75.0, "quest decode", 25.0, 4.0, 3.0),
        ])
        table = bench_torch.format_comparison(rows).splitlines()
        self.assertEqual(len(table), 4)
        self.assertIn("2.50", table[1])
        self.assertIn("1.50", table[1])
        self.assertTrue(table[2].rstrip().endswith("-"))

    def test_every_measurement_names_a_kvscope_step(self):
        steps = {"dense decode", "dense prefill", "quest decode", "fier decode", "quoka prefill"}
        self.assertEqual(set(bench_torch.KVSCOPE_STEP.values()), steps)

    def test_bad_arguments_are_refused(self):
        for argv in (["--tokens", "8192,x"], ["--tokens", "8200"], ["--tokens", "1024"], ["--heads", "30"]):
            with self.subTest(argv=argv), self.assertRaises(bench_torch.InputError):
                bench_torch.parse_arguments(argv)

    def run_script(self, *argv):
        return subprocess.run([sys.executable, os.path.join(TOOLS, "bench_torch.py"), *argv],
                              capture_output=True, text=True, timeout=60)

    def test_an_unreadable_report_is_one_line_before_any_timing(self):
        with tempfile.TemporaryDirectory() as work:
            bad = os.path.join(work, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            other = os.path.join(work, "other.json")
            with open(other, "w") as f:
                json.dump(report(heads=16), f)
            for path in (os.path.join(work, "missing.json"), bad, other):
                with self.subTest(path=os.path.basename(path)):
                    result = self.run_script("--kvscope", path)
                    self.assertEqual(result.returncode, 2)
                    self.assertEqual(result.stdout, "")
                    self.assertEqual(len(result.stderr.strip().splitlines()), 1)
                    self.assertTrue(result.stderr.startswith("bench_torch: "))


if __name__ == "__main__":
    unittest.main()
