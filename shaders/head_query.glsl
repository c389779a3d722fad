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
