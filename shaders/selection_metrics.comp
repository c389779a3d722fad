#version 460
// Metrics of a selection for one query head: coverage exp(lse_A - lse) and
// output error |o_A - o| / |o| (means over the block's queries), and recall of
// the selection against the oracle's set. A row of either list serves
// `*_heads_per_row` consecutive heads; lists are ascending and -1 padded.
#extension GL_GOOGLE_include_directive : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer DenseOutput { float dense_output[]; };    // [H, n, d]
layout(std430, binding = 1) readonly buffer DenseLse { float dense_lse[]; };          // [H, n]
layout(std430, binding = 2) readonly buffer SparseOutput { float sparse_output[]; };  // [H, n, d]
layout(std430, binding = 3) readonly buffer SparseLse { float sparse_lse[]; };        // [H, n]
layout(std430, binding = 4) readonly buffer Selection { int selection[]; };
layout(std430, binding = 5) readonly buffer Oracle { int oracle[]; };
layout(std430, binding = 6) writeonly buffer Metrics { vec4 metrics[]; };  // [H]: coverage, recall, output error, needle recall

layout(push_constant) uniform MetricsPush { METRICS_FIELDS } pc;

shared float coverage_sums[64];
shared float error_sums[64];
shared uint hits[64];
shared uint needle_hits[64];
shared uint oracle_count;

void main() {
  const uint head = gl_WorkGroupID.x, tid = gl_LocalInvocationIndex;
  float coverage = 0.0, error = 0.0;
  for (uint i = tid; i < pc.n_queries; i += 64u) {
    uint row = head * pc.n_queries + i;
    coverage += exp(sparse_lse[row] - dense_lse[row]);
    float difference = 0.0, norm = 0.0;
    for (uint c = 0u; c < HEAD_DIM; ++c) {
      float o = dense_output[row * HEAD_DIM + c], delta = sparse_output[row * HEAD_DIM + c] - o;
      difference += delta * delta;
      norm += o * o;
    }
    error += norm > 0.0 ? sqrt(difference / norm) : 0.0;
  }
  coverage_sums[tid] = coverage;
  error_sums[tid] = error;

  const uint oracle_base = (head / pc.oracle_heads_per_row) * pc.oracle_stride;
  const uint selection_base = (head / pc.selection_heads_per_row) * pc.selection_stride;
  if (tid == 0u) {  // the -1 padding ends the list: a binary search for where it starts
    uint low = 0u, high = pc.oracle_stride;  // (a walk could outrun lavapipe's loop limit: vk::DeviceInfo::loop_limit)
    while (low < high) {
      uint middle = (low + high) / 2u;
      if (oracle[oracle_base + middle] >= 0) low = middle + 1u; else high = middle;
    }
    oracle_count = low;
  }
  barrier();
  uint found = 0u, found_needle = 0u;
  for (uint s = tid; s < pc.selection_stride; s += 64u) {
    int key = selection[selection_base + s];
    if (key < 0) continue;
    if (uint(key) >= pc.needle_first && uint(key) < pc.needle_end) ++found_needle;
    uint low = 0u, high = oracle_count;  // binary search in the ascending oracle list
    while (low < high) {
      uint middle = (low + high) / 2u;
      if (oracle[oracle_base + middle] < key) low = middle + 1u; else high = middle;
    }
    if (low < oracle_count && oracle[oracle_base + low] == key) ++found;
  }
  hits[tid] = found;
  needle_hits[tid] = found_needle;
  barrier();
  if (tid == 0u) {
    float coverage_total = 0.0, error_total = 0.0;
    uint hit_total = 0u, needle_total = 0u;
    for (uint t = 0u; t < 64u; ++t) {
      coverage_total += coverage_sums[t];
      error_total += error_sums[t];
      hit_total += hits[t];
      needle_total += needle_hits[t];
    }
    float recall = oracle_count > 0u ? float(hit_total) / float(oracle_count) : 1.0;
    uint needle_candidates = min(pc.needle_end, pc.n_candidates) - min(pc.needle_first, min(pc.needle_end, pc.n_candidates));
    float needle = needle_candidates > 0u ? float(needle_total) / float(needle_candidates) : -1.0;
    metrics[head] = vec4(coverage_total / float(pc.n_queries), recall, error_total / float(pc.n_queries), needle);
  }
}
