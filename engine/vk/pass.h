#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "vk/buffer.h"
#include "vk/device.h"
#include "vk/handle.h"
#include "vk/kernel.h"

namespace kv::vk {

// What a stage's GPU time is spent on, so that a report can split a model
// step's time without reading stage names: the model's own layers, attention
// over the cache, or a selection method's work (scoring, top-k, metadata).
enum class Part { model, attention, selection };
const char* part_name(Part part);
inline constexpr Part kParts[] = {Part::model, Part::attention, Part::selection};

struct StageTime {
  std::string stage;
  Part part = Part::model;
  double milliseconds = 0;
};

// A recorded sequence of dispatches, each tagged with a stage name and timed
// with GPU timestamps. Record once, run as often as needed (benchmarks re-run
// the same commands). Every dispatch is followed by a full compute barrier, so
// a stage may read what any earlier stage wrote, and the pass opens with one,
// so it may read what an earlier pass wrote, even one still running. A
// dispatch counts toward the Part of the innermost PartScope alive when it is
// recorded (Part::model outside any): the code that hands recording to
// attention or a method knows which it is, whatever the stages are called.
class Pass {
 public:
  class PartScope {
   public:
    PartScope(Pass& pass, Part part) : pass_(pass), outer_(pass.part_) { pass.part_ = part; }
    ~PartScope() { pass_.part_ = outer_; }
    PartScope(const PartScope&) = delete;
    PartScope& operator=(const PartScope&) = delete;

   private:
    Pass& pass_;
    Part outer_;
  };

  // per_stage: a timestamp after every dispatch (stage_times()). whole: one
  // before the first and one after the last, so the pass runs as a user's
  // would; a timestamp between dependent dispatches costs time of its own.
  enum class Timing { per_stage, whole };

  explicit Pass(const Device& device, uint32_t max_dispatches = 256, Timing timing = Timing::per_stage);
  // Waits for a pass still running: its command buffer is freed with it.
  ~Pass();
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  void dispatch(const Kernel& kernel, std::initializer_list<const Buffer*> bindings,
                const void* push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                const std::string& stage);
  template <typename Push>
  void dispatch(const Kernel& kernel, std::initializer_list<const Buffer*> bindings,
                const Push& push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z,
                const std::string& stage) {
    static_assert(sizeof(Push) % 4 == 0);
    check_push_size(kernel, sizeof(Push));
    dispatch(kernel, bindings, static_cast<const void*>(&push), groups_x, groups_y, groups_z, stage);
  }

  // Submits the recorded commands and waits; stage_times() then holds this run's times.
  void run();
  // run() in two halves, so that the host can record the next pass while this
  // one runs: submit() returns at once, wait() returns when it is done.
  void submit();
  void wait();
  // Forgets what was recorded (waiting if it still runs), to record anew into
  // the same command buffer, timestamps and fence: what a model step reuses.
  void clear();
  // GPU time per (stage name, part) in first-recorded order, summed over the
  // stage's dispatches; empty for Timing::whole.
  std::vector<StageTime> stage_times() const;
  // From before the first dispatch to after the last.
  double total_milliseconds() const;

 private:
  void begin_if_needed();
  void check_push_size(const Kernel& kernel, size_t bytes) const;
  void barrier_and_timestamp();
  // Timestamps the query pool holds: one per dispatch and the start, or start and end.
  uint32_t timestamp_slots() const;
  double ticks_to_milliseconds(uint64_t from, uint64_t to) const;

  const Device* device_;
  uint32_t max_dispatches_;
  Timing timing_;
  bool timed_;
  UniqueCommandBuffer command_buffer_;
  UniqueQueryPool queries_;
  UniqueFence fence_;
  Part part_ = Part::model;
  struct DispatchStage {
    std::string stage;
    Part part;
  };
  std::vector<DispatchStage> dispatch_stages_;
  std::vector<uint64_t> timestamps_;
  bool recording_ = false;
  bool ended_ = false;
  bool submitted_ = false;
};

}  // namespace kv::vk
