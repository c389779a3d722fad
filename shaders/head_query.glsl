// Each head's query for the scoring kernels of Quest, Fier, SparQ and Loki,
// from binding 0: for a chunk, the queries' means as fp32 [H, d]
// (mean_query.comp); for one query (decode), the step's queries in place, in
// the storage type (pc.raw_query != 0), so that decode pays no stage to convert
// them. Expects HEAD_DIM, ELEMENT_TYPE, load.glsl and a push block `pc` with
// `raw_query`.
layout(std430, binding = 0) readonly buffer HeadQueries { uint head_query_words[]; };

float head_query(uint head, uint channel) {
  const uint e = head * HEAD_DIM + channel;
  if (pc.raw_query == 0u || ELEMENT_TYPE == ELEMENT_F32) return uintBitsToFloat(head_query_words[e]);
  return element_in_word(head_query_words[e / 2u], e);
}

// Channel `channel` of heads [first_head, first_head + 4) as one vec4, 0 for
// heads from end_head on: how the kernels that score four heads at once stage
// a group's queries.
vec4 four_head_queries(uint first_head, uint end_head, uint channel) {
  vec4 q = vec4(0.0);
  for (uint j = 0u; j < 4u && first_head + j < end_head; ++j) q[j] = head_query(first_head + j, channel);
  return q;
}
