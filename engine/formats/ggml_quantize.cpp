#include "formats/ggml_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "base/half.h"

namespace kv::formats {
namespace {

// The half nearest v, held to the finite halves: an infinite scale would make
// a zero quant's value NaN.
uint16_t half_nearest(double v) { return float_to_half(float(std::clamp(v, -65504.0, 65504.0))); }
// The largest half at most v >= 0 / the smallest at least v (halves order as
// their bits, negative ones backwards).
uint16_t half_at_most(double v) {
  uint16_t h = half_nearest(v);
  if (half_to_float(h) > v) --h;
  return h;
}
uint16_t half_at_least(double v) {
  uint16_t h = half_nearest(v);
  if (half_to_float(h) < std::min(v, 65504.0)) h = (h & 0x8000) ? uint16_t(h - 1) : uint16_t(h + 1);
  return h;
}
// The half nearest extreme / ends, or the next toward zero where that would
// put `extreme` short of `ends` steps (only among fp16's subnormals, whose
// steps are coarse; not down to zero): the extreme's quant is then `ends`
// again in the output, so that quantize finds the same scale there.
uint16_t half_reaching(double extreme, int ends) {
  uint16_t h = half_nearest(extreme / ends);
  if ((h & 0x7fff) > 1 && std::abs(std::round(extreme / half_to_float(h))) < std::abs(ends)) --h;
  return h;
}
void put_u16(uint8_t* p, uint16_t h) { p[0] = uint8_t(h), p[1] = uint8_t(h >> 8); }

// v / d rounded to the nearest integer of [lo, hi]; 0 where the scale d
// rounded to zero. Clamped before rounding, so that any magnitude converts.
int nearest(double v, double d, int lo, int hi) {
  if (d == 0) return 0;
  return int(std::round(std::clamp(v / d, double(lo), double(hi))));
}

// The value of largest magnitude (the first of equal ones), with its sign.
float extreme(const float* x, int n) {
  float e = 0;
  for (int i = 0; i < n; ++i)
    if (std::abs(x[i]) > std::abs(e)) e = x[i];
  return e;
}

// Q8_0: d, then 32 int8. Quant -128 goes unused: the output's largest
// magnitude is then 127 d again, so that quantizing it keeps d.
void block_q8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::abs(x[j]));
  const uint16_t dh = half_reaching(amax, 127);
  const float d = half_to_float(dh);
  put_u16(b, dh);
  for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(int8_t(nearest(x[j], d, -127, 127)));
}

// Q4_0, Q4_1, Q5_0, Q5_1: d, [m], [qh: value j's fifth bit at bit j], qs: its
// low four bits in nibble j / 16 of qs[j % 16]. The values are rounded against
// d and m as stored (ggml's reference rounds against them before fp16); m is
// the minimum rounded up, so that the minimum's quant is 0 and the output's
// minimum is m again, and d spans the maximum from there.
void block_legacy(const float* x, uint8_t* b, int bits, bool with_min) {
  const int levels = 1 << bits;
  uint16_t dh, mh = 0;
  if (with_min) {
    const auto [lo, hi] = std::minmax_element(x, x + 32);
    mh = half_at_least(*lo);
    dh = half_reaching(std::max(0.0, double(*hi) - half_to_float(mh)), levels - 1);
  } else {
    dh = half_reaching(extreme(x, 32), -levels / 2);  // the extreme on quant -8 or -16
  }
  const float d = half_to_float(dh), m = half_to_float(mh);
  put_u16(b, dh);
  if (with_min) put_u16(b + 2, mh);
  uint8_t* qh = b + (with_min ? 4 : 2);
  uint8_t* qs = qh + (bits == 5 ? 4 : 0);
  uint32_t high = 0;
  for (int j = 0; j < 32; ++j) {
    const int code = with_min ? nearest(double(x[j]) - m, d, 0, levels - 1)
                              : nearest(x[j], d, -levels / 2, levels / 2 - 1) + levels / 2;
    qs[j % 16] |= uint8_t((code & 15) << (j < 16 ? 0 : 4));
    high |= uint32_t(code >> 4) << j;
  }
  if (bits == 5) std::memcpy(qh, &high, 4);  // little-endian, as ggml_blocks.cpp reads it
}

// A sub-block scale's quant against d: the nearest, but never so large that
// the sub-block's extreme value, `ends` steps from the start of its grid,
// stops reaching the grid's end. The output then spans each sub-block's grid,
// and quantize reads the same scales off it.
int scale_quant(double scale, float d, int ends, int scmax) {
  if (d == 0) return 0;
  const double r = std::min(scale / d, scmax + 1.0);
  return std::clamp(int(std::min(std::round(r), std::floor(r * ends / (ends - 0.5)))), 0, scmax);
}

struct KScales {
  uint16_t d = 0, dmin = 0;
  int sc[16] = {}, mn[16] = {};
};

// Q2_K, Q4_K, Q5_K: `groups` sub-blocks, value = d sc q - dmin mn with q in
// 0..qmax and sc, mn in 0..scmax. Each sub-block's grid starts at its minimum
// (at 0 where that is positive: mn has no sign) and spans up to its maximum.
// The quants q go to codes.
KScales k_with_min(const float* x, int groups, int qmax, int scmax, uint8_t* codes) {
  const int n = 256 / groups;
  double low[16], high[16], scale[16], max_min = 0, max_scale = 0;
  for (int g = 0; g < groups; ++g) {
    const auto [lo, hi] = std::minmax_element(x + g * n, x + g * n + n);
    low[g] = std::min(0.0, double(*lo)), high[g] = *hi;
    max_min = std::max(max_min, -low[g]);
  }
  // dmin and the minima rounded down: each grid starts at or above its
  // minimum, which so lands on quant 0 — the same minimum in the output.
  KScales k;
  k.dmin = half_at_most(max_min / scmax);
  const float dmin = half_to_float(k.dmin);
  for (int g = 0; g < groups; ++g) {
    k.mn[g] = dmin > 0 ? int(std::floor(std::min(-low[g] / dmin, double(scmax)))) : 0;
    scale[g] = std::max(0.0, (high[g] + dmin * k.mn[g]) / qmax);  // from where the grid starts
    max_scale = std::max(max_scale, scale[g]);
  }
  k.d = half_reaching(max_scale, scmax);
  const float d = half_to_float(k.d);
  for (int g = 0; g < groups; ++g) {
    k.sc[g] = scale_quant(scale[g], d, qmax, scmax);
    const float s = d * k.sc[g], m = dmin * k.mn[g];  // as ggml_blocks.cpp computes them
    for (int i = g * n; i < g * n + n; ++i) codes[i] = uint8_t(nearest(double(x[i]) + m, s, 0, qmax));
  }
  return k;
}

// Q3_K, Q6_K: 16 sub-blocks of 16, value = d sc q with q in -qext..qext-1 and
// sc in -scmax..scmax (not -scmax - 1, which only one sign could use). Each
// sub-block's extreme on quant -qext, as Q4_0 has it. q + qext goes to codes.
KScales k_symmetric(const float* x, int qext, int scmax, uint8_t* codes) {
  double scale[16], max_scale = 0;
  for (int g = 0; g < 16; ++g) {
    scale[g] = extreme(x + 16 * g, 16) / -double(qext);
    max_scale = std::max(max_scale, std::abs(scale[g]));
  }
  KScales k;
  k.d = half_reaching(max_scale, scmax);
  const float d = half_to_float(k.d);
  for (int g = 0; g < 16; ++g) {
    const int magnitude = scale_quant(std::abs(scale[g]), d, qext, scmax);
    k.sc[g] = scale[g] < 0 ? -magnitude : magnitude;
    const float s = d * k.sc[g];
    for (int i = 16 * g; i < 16 * g + 16; ++i) codes[i] = uint8_t(nearest(x[i], s, -qext, qext - 1) + qext);
  }
  return k;
}

// Q2_K: scales[16] (scale in the low nibble, minimum in the high), qs[64], d, dmin.
// Value 128 h + 32 s + 16 g + l at bits 2 s of qs[32 h + 16 g + l].
void block_q2_k(const float* x, uint8_t* b) {
  uint8_t q[256];
  const KScales k = k_with_min(x, 16, 3, 15, q);
  for (int j = 0; j < 16; ++j) b[j] = uint8_t(k.sc[j] | (k.mn[j] << 4));
  for (int i = 0; i < 256; ++i)
    b[16 + 32 * (i / 128) + 16 * (i % 32 / 16) + i % 16] |= uint8_t(q[i] << (2 * (i % 128 / 32)));
  put_u16(b + 80, k.d), put_u16(b + 82, k.dmin);
}

// Q3_K: hmask[32], qs[64], scales[12], d. Value i's quant plus 4: its low two
// bits where Q2_K has them, its third at bit i / 32 of hmask[i % 32]. Scale j
// plus 32: its low four bits in nibble j / 8 of byte j % 8, its high two at
// bits 2 (j / 4) of byte 8 + j % 4.
void block_q3_k(const float* x, uint8_t* b) {
  uint8_t q[256];
  const KScales k = k_symmetric(x, 4, 31, q);
  for (int i = 0; i < 256; ++i) {
    b[32 + 32 * (i / 128) + 16 * (i % 32 / 16) + i % 16] |= uint8_t((q[i] & 3) << (2 * (i % 128 / 32)));
    b[i % 32] |= uint8_t((q[i] >> 2) << (i / 32));
  }
  for (int j = 0; j < 16; ++j) {
    const int v = k.sc[j] + 32;
    b[96 + j % 8] |= uint8_t((v & 15) << (j < 8 ? 0 : 4));
    b[104 + j % 4] |= uint8_t((v >> 4) << (2 * (j / 4)));
  }
  put_u16(b + 108, k.d);
}

// Q4_K's and Q5_K's 12 bytes of 8 6-bit scales and minima: for j < 4 the low
// six bits of bytes j and j + 4; for j >= 4 the nibbles of byte j + 4, their
// high two bits in bits 6-7 of bytes j - 4 and j.
void put_scales_k4(const KScales& k, uint8_t* q) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] |= uint8_t(k.sc[j]), q[j + 4] |= uint8_t(k.mn[j]);
    } else {
      q[j + 4] = uint8_t((k.sc[j] & 15) | ((k.mn[j] & 15) << 4));
      q[j - 4] |= uint8_t((k.sc[j] >> 4) << 6), q[j] |= uint8_t((k.mn[j] >> 4) << 6);
    }
  }
}

// Q4_K: d, dmin, scales[12], qs[128]: value 64 c + 32 n + l at nibble n of qs[32 c + l].
void block_q4_k(const float* x, uint8_t* b) {
  uint8_t q[256];
  const KScales k = k_with_min(x, 8, 15, 63, q);
  put_u16(b, k.d), put_u16(b + 2, k.dmin);
  put_scales_k4(k, b + 4);
  for (int i = 0; i < 256; ++i) b[16 + 32 * (i / 64) + i % 32] |= uint8_t(q[i] << (4 * (i % 64 / 32)));
}

// Q5_K: Q4_K's fields, with qh[32] (value i's fifth bit at bit i / 32 of qh[i % 32]) before qs.
void block_q5_k(const float* x, uint8_t* b) {
  uint8_t q[256];
  const KScales k = k_with_min(x, 8, 31, 63, q);
  put_u16(b, k.d), put_u16(b + 2, k.dmin);
  put_scales_k4(k, b + 4);
  for (int i = 0; i < 256; ++i) {
    b[48 + 32 * (i / 64) + i % 32] |= uint8_t((q[i] & 15) << (4 * (i % 64 / 32)));
    b[16 + i % 32] |= uint8_t((q[i] >> 4) << (i / 32));
  }
}

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Value 128 h + 32 p + l's quant
// plus 32: its low four bits in nibble p / 2 of ql[64 h + 32 (p % 2) + l], its
// high two at bits 2 p of qh[32 h + l].
void block_q6_k(const float* x, uint8_t* b) {
  uint8_t q[256];
  const KScales k = k_symmetric(x, 32, 127, q);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, p = i % 128 / 32, l = i % 32;
    b[64 * h + 32 * (p % 2) + l] |= uint8_t((q[i] & 15) << (4 * (p / 2)));
    b[128 + 32 * h + l] |= uint8_t((q[i] >> 4) << (2 * p));
  }
  for (int j = 0; j < 16; ++j) b[192 + j] = uint8_t(int8_t(k.sc[j]));
  put_u16(b + 208, k.d);
}

}  // namespace

std::vector<std::byte> quantize(GgmlType type, std::span<const float> values) {
  const auto layout = block_layout(uint32_t(type));
  if (!layout) throw std::invalid_argument("quantize: unknown type");
  if (values.size() % layout->elements)
    throw std::invalid_argument(std::string("quantize: ") + layout->name + " takes whole blocks of " +
                                std::to_string(layout->elements) + " values");
  for (float v : values)
    if (!std::isfinite(v)) throw std::invalid_argument("quantize: a value is not finite");
  std::vector<std::byte> out(values.size() / layout->elements * layout->bytes);  // zeros: fields are or-ed in
  auto* b = reinterpret_cast<uint8_t*>(out.data());
  const float* x = values.data();
  const size_t blocks = values.size() / layout->elements;
  void (*block)(const float*, uint8_t*) = nullptr;
  switch (type) {
    case GgmlType::f32: std::memcpy(b, x, out.size()); return out;
    case GgmlType::f16:
      for (size_t i = 0; i < blocks; ++i) put_u16(b + 2 * i, half_nearest(x[i]));
      return out;
    case GgmlType::bf16:
      for (size_t i = 0; i < blocks; ++i) {
        uint16_t h = float_to_bf16(x[i]);
        if ((h & 0x7fff) == 0x7f80) --h;  // rounded past the largest bf16: held to it, as F16 is
        put_u16(b + 2 * i, h);
      }
      return out;
    case GgmlType::q4_0: block = [](const float* v, uint8_t* o) { block_legacy(v, o, 4, false); }; break;
    case GgmlType::q4_1: block = [](const float* v, uint8_t* o) { block_legacy(v, o, 4, true); }; break;
    case GgmlType::q5_0: block = [](const float* v, uint8_t* o) { block_legacy(v, o, 5, false); }; break;
    case GgmlType::q5_1: block = [](const float* v, uint8_t* o) { block_legacy(v, o, 5, true); }; break;
    case GgmlType::q8_0: block = block_q8_0; break;
    case GgmlType::q2_k: block = block_q2_k; break;
    case GgmlType::q3_k: block = block_q3_k; break;
    case GgmlType::q4_k: block = block_q4_k; break;
    case GgmlType::q5_k: block = block_q5_k; break;
    case GgmlType::q6_k: block = block_q6_k; break;
  }
  for (size_t i = 0; i < blocks; ++i) block(x + i * layout->elements, b + i * layout->bytes);
  return out;
}

}  // namespace kv::formats
