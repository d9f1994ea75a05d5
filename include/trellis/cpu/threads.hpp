// Worker-thread count of the CPU kernels. 0 (the default) means
// std::thread::hardware_concurrency(). Results never depend on it: the CPU
// kernels split work only across outputs, never across a reduction.
#pragma once

namespace trellis::cpu {

void set_thread_count(int n);
int thread_count();

}  // namespace trellis::cpu
