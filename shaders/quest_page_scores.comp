#version 460
// Quest's page scores (quest_page_scores.glsl), one dispatch before the top-k:
// the form for rows that are query heads of a GQA group, whose top-ks run a
// workgroup each (quest_page_topk.comp fuses the two where a KV head has one row).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layouts.h"

layout(constant_id = 0) const uint HEAD_DIM = 128;
layout(constant_id = 1) const uint ELEMENT_TYPE = ELEMENT_F16;
layout(constant_id = 2) const uint PARTS = 4u;  // 2, 4 or 8: the engine picks by the dispatch's size (methods/quest.cpp)
const uint SCORE_WORKGROUP = 128u;
layout(local_size_x = 128) in;

#include "common.glsl"
#include "load.glsl"

layout(push_constant) uniform PageScoresPush { PAGE_SCORES_FIELDS } pc;

#include "head_query.glsl"
layout(std430, binding = 2) writeonly buffer Scores { float scores[]; };  // [rows, row_stride]

shared float part_bound[4][SCORE_WORKGROUP];
#define PART_BOUND_STORE(h, i, v) part_bound[h][i] = (v)
#define PART_BOUND_LOAD(h, i) part_bound[h][i]
#include "quest_page_scores.glsl"

void main() { score_pages(gl_WorkGroupID.x, gl_WorkGroupID.y); }
