// parallel_for: run fn(begin, end) over contiguous chunks of [0, n) on up to
// thread_count() threads (the caller's thread included), each chunk at least
// kMinWorkPerThread units of `work_per_item` so small calls stay on one
// thread. Chunks are disjoint, so callers that write only outputs owned by
// their items are deterministic whatever the thread count.
#pragma once
#include <cstdint>
#include <functional>

namespace trellis::cpu {

// Below this many units (≈ weight-activation products) per thread, a thread
// costs more to start than it saves.
inline constexpr int64_t kMinWorkPerThread = int64_t(1) << 16;

void parallel_for(int64_t n, int64_t work_per_item,
                  const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace trellis::cpu
