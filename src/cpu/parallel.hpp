// parallel_for: run fn(begin, end) over contiguous chunks of [0, n) on up to
// thread_count() threads (the caller's thread included), each thread getting
// at least kMinWorkPerThread units of `work_per_item` so small calls stay on
// one thread. The extra threads are persistent workers (started on first use,
// kept for the process), which claim chunks from a shared counter with the
// caller, so a worker slow to wake costs nothing: the caller takes its chunks.
// Chunks are disjoint, so callers that write only outputs owned by their
// items are deterministic whatever the thread count. A call made while
// another thread's call is running runs on its own thread. fn must not throw.
#pragma once
#include <cstdint>
#include <functional>

namespace trellis::cpu {

// Below this many units (≈ weight-activation products) per thread, handing
// work to a second thread costs more than it saves.
inline constexpr int64_t kMinWorkPerThread = int64_t(1) << 15;

void parallel_for(int64_t n, int64_t work_per_item,
                  const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace trellis::cpu
