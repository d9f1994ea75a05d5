// A CUDA injection library (load it with CUDA_INJECTION64_PATH; no change to
// the traced program): CUPTI's concurrent-kernel activity records every
// kernel's GPU start and end, CUDA-graph replays included, and at exit the
// records go to $TRELLIS_KERNEL_TRACE (default kernel_trace.csv) as
//   start_ns,end_ns,graph_id,graph_node_id,grid_x,grid_y,grid_z,block_x,name
// sorted by start. Times are CUPTI's (ns, one clock for all kernels), so a
// kernel launched programmatically starts when its first block does, while
// its predecessor may still run. bench/timeline/step_timeline.py reads it.
// Build on the GPU machine against its CUPTI (bench/timeline/run.sh).
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelSpan {
  uint64_t start, end;
  uint32_t graph;
  uint64_t node;
  int32_t grid_x, grid_y, grid_z, block_x;
  std::string name;
};

std::mutex spans_mutex;
std::vector<KernelSpan> spans;
constexpr size_t kBufferBytes = size_t(8) << 20;

void report(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "kernel_trace: %s: %s\n", what, text ? text : "unknown CUPTI error");
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(spans_mutex);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      spans.push_back({k->start, k->end, k->graphId, k->graphNodeId, k->gridX, k->gridY, k->gridZ, k->blockX,
                       k->name ? k->name : "?"});
    }
  }
  std::free(buffer);
}

void write_trace() {
  report(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  const char* path = std::getenv("TRELLIS_KERNEL_TRACE");
  if (!path) path = "kernel_trace.csv";
  const std::string tmp = std::string(path) + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "kernel_trace: cannot write %s\n", tmp.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(spans_mutex);
  std::sort(spans.begin(), spans.end(), [](const KernelSpan& a, const KernelSpan& b) { return a.start < b.start; });
  std::fprintf(f, "start_ns,end_ns,graph_id,graph_node_id,grid_x,grid_y,grid_z,block_x,name\n");
  for (const KernelSpan& s : spans)
    std::fprintf(f, "%llu,%llu,%u,%llu,%d,%d,%d,%d,%s\n", (unsigned long long)s.start, (unsigned long long)s.end,
                 s.graph, (unsigned long long)s.node, s.grid_x, s.grid_y, s.grid_z, s.block_x, s.name.c_str());
  const bool ok = std::fclose(f) == 0 && std::rename(tmp.c_str(), path) == 0;
  std::fprintf(stderr, "kernel_trace: %zu kernels %s %s\n", spans.size(), ok ? "written to" : "NOT written to", path);
}

}  // namespace

extern "C" int InitializeInjection() {
  report(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  report(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
  std::atexit(write_trace);
  return 1;
}
