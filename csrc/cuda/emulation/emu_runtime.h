// The emulated CUDA runtime of host_emulation_test.cc: a block's threads as fibers (or OS
// threads under the sanitizers), the grid walked block by block, and the few runtime calls the
// launchers make (device attributes, occupancy, stream-ordered scratch, kernel launches), which
// also record what was planned for the test to print. Included once, by the test.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

using linbench::cuda_detail::KernelArgs;
// ---- Emulated runtime ----
namespace {
int g_sm_count = 108;
int g_smem_per_block = 166912;  // A100 opt-in
int g_smem_per_sm = 167936;
int g_last_tile_cols[3];
int g_last_segs[3];
int g_launches = 0;
int g_scratch_allocs = 0;
size_t g_scratch_bytes = 0;
bool g_fail_malloc = false;
int g_cc_major = 9;
int g_ptx_version = 0;  // the kernels' virtual architecture (cudaFuncGetAttributes); 0: the device's own

// A block's dynamic shared memory: exactly the launch's size (so ASan flags an overrun), filled
// with NaN bytes so that reading shared memory before writing it shows up in the results.
unsigned char* shared_memory(size_t smem_bytes) {
  if (smem_bytes == 0) return nullptr;
  auto* smem = static_cast<unsigned char*>(aligned_alloc(128, smem_bytes));
  memset(smem, 0xff, smem_bytes);
  return smem;
}

// A kernel must wait for every cp.async it issued: a copy still queued at the end was useless
// work at best, a read of a chunk it never used at worst.
void check_copies_done(const emu::Block& block, unsigned threads) {
  for (unsigned t = 0; t < threads; ++t)
    if (!block.copies[t].open.empty() || !block.copies[t].committed.empty()) {
      std::fprintf(stderr, "emulation: thread %u ended with cp.async copies never waited for\n", t);
      std::abort();
    }
}

#ifndef EMU_OS_THREADS
// A switch between fibers: GCC's __builtin_setjmp/__builtin_longjmp keep only the frame
// pointer, the stack pointer and where to resume (the compiler spills the rest around the
// setjmp), and make no system call. swapcontext also saves and restores the signal mask, a
// sigprocmask call each way at every barrier of every thread: the quick suite took 22 s with it
// (8 s of that in the kernel) and takes 9 s without. ucontext is kept for what it alone can do,
// starting a fiber on a stack of its own (makecontext, then setcontext once per fiber).
using Jump = std::array<void*, 5>;

// The fibers of the block being run, and where its scheduler waits for them.
struct Fibers {
  Jump scheduler;
  std::vector<ucontext_t> contexts = std::vector<ucontext_t>(emu::kMaxThreads);
  std::vector<Jump> resume = std::vector<Jump>(emu::kMaxThreads);
  std::vector<char> started = std::vector<char>(emu::kMaxThreads);
  std::vector<char> done = std::vector<char>(emu::kMaxThreads);
  // 256 KiB of stack each (a wmma fragment is 1 KiB, a few of them in one frame), made once.
  std::vector<char> stacks = std::vector<char>(size_t{emu::kMaxThreads} << 18);
  unsigned current = 0;
  unsigned long progress = 0;  // barrier arrivals and finished fibers: what a pass must change
  std::function<void()> body;  // the kernel call each fiber makes
};
Fibers g_fibers;

// Resumes what a __builtin_setjmp of `to` saved; never returns. Its own function: GCC forbids
// the longjmp in the function that made the setjmp. The switching functions are noipa: their
// callers must assume a call changed anything (the other fibers run in it), which GCC's
// analysis of their bodies would otherwise deny, and -O2 then kept stale counters.
[[noreturn]] __attribute__((noipa)) void jump(void** to) { __builtin_longjmp(to, 1); }

void fiber_main() {
  g_fibers.body();
  g_fibers.done[g_fibers.current] = 1;
  ++g_fibers.progress;
  jump(g_fibers.scheduler.data());  // a finished fiber's stack is never resumed
}

// Runs fiber t until it waits at a barrier or ends: from its start the first time, else from
// where it yielded.
__attribute__((noipa)) void enter_fiber(unsigned t) {
  Fibers& f = g_fibers;
  if (__builtin_setjmp(f.scheduler.data()) != 0) return;  // the fiber jumped back
  if (!f.started[t]) {
    f.started[t] = 1;
    setcontext(&f.contexts[t]);
  }
  jump(f.resume[t].data());
}
}  // namespace

__attribute__((noipa)) void emu::yield_fiber() {
  if (__builtin_setjmp(g_fibers.resume[g_fibers.current].data()) == 0) jump(g_fibers.scheduler.data());
}
void emu::made_progress() { ++g_fibers.progress; }

namespace {
template <class Args>
void run_block(void (*kernel)(Args), const Args& args, dim3 grid, uint3 block_index, size_t smem_bytes,
               unsigned threads) {
  auto block_ptr = std::make_unique<emu::Block>();
  emu::Block& block = *block_ptr;
  emu::FiberBarrier block_barrier(static_cast<int>(threads));
  std::vector<emu::FiberBarrier> warp_barriers(emu::kMaxThreads / 32, emu::FiberBarrier(32));
  for (int w = 0; w < emu::kMaxThreads / 32; ++w) block.warp_barrier[w] = &warp_barriers[w];
  block.block_barrier = &block_barrier;
  block.smem = shared_memory(smem_bytes);
  block.smem_bytes = smem_bytes;
  Fibers& f = g_fibers;
  f.body = [&] { kernel(args); };
  const size_t stack_bytes = f.stacks.size() / emu::kMaxThreads;
  for (unsigned t = 0; t < threads; ++t) {
    f.done[t] = 0;
    f.started[t] = 0;
    getcontext(&f.contexts[t]);
    f.contexts[t].uc_stack.ss_sp = f.stacks.data() + t * stack_bytes;
    f.contexts[t].uc_stack.ss_size = stack_bytes;
    f.contexts[t].uc_link = nullptr;  // fiber_main never returns
    makecontext(&f.contexts[t], fiber_main, 0);
  }
  emu::block_idx = block_index;
  emu::grid_dim = grid;
  emu::block = &block;
  // Round robin: each unfinished fiber runs until it waits at a barrier or ends. A whole pass
  // in which none arrives anywhere nor ends can never finish (a barrier some thread left).
  for (unsigned remaining = threads; remaining > 0;) {
    const unsigned long before = f.progress;
    remaining = 0;
    for (unsigned t = 0; t < threads; ++t) {
      if (f.done[t]) continue;
      f.current = t;
      emu::thread_idx = uint3{t, 0, 0};
      enter_fiber(t);
      remaining += !f.done[t];
    }
    if (remaining > 0 && f.progress == before) {
      std::fprintf(stderr, "emulation: block (%u,%u,%u) deadlocked: %u threads wait at a barrier the others left\n",
                   block_index.x, block_index.y, block_index.z, remaining);
      std::abort();
    }
  }
  check_copies_done(block, threads);
  free(block.smem);
}
#else
template <class Args>
void run_block(void (*kernel)(Args), const Args& args, dim3 grid, uint3 block_index, size_t smem_bytes,
               unsigned threads) {
  auto block_ptr = std::make_unique<emu::Block>();
  emu::Block& block = *block_ptr;
  emu::ThreadBarrier block_barrier(static_cast<int>(threads));
  std::vector<std::unique_ptr<emu::ThreadBarrier>> warp_barriers;
  for (int w = 0; w < emu::kMaxThreads / 32; ++w) {
    warp_barriers.push_back(std::make_unique<emu::ThreadBarrier>(32));
    block.warp_barrier[w] = warp_barriers.back().get();
  }
  block.block_barrier = &block_barrier;
  block.smem = shared_memory(smem_bytes);
  block.smem_bytes = smem_bytes;
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      emu::thread_idx = uint3{t, 0, 0};
      emu::block_idx = block_index;
      emu::grid_dim = grid;
      emu::block = &block;
      kernel(args);
    });
  for (auto& th : workers) th.join();
  check_copies_done(block, threads);
  free(block.smem);
}
#endif
// The feature-map backward kernel of element type T, if `func` is one (it takes its own args).
template <class T>
bool is_map_backward(const void* func) {
  return func == reinterpret_cast<const void*>(&linbench::cuda_detail::feature_map_backward_kernel<T>);
}
int g_map_launches = 0;
bool is_grad_rows(const void* func) {
  return func == reinterpret_cast<const void*>(&linbench::cuda_detail::grad_rows_kernel<__nv_bfloat16>) ||
         func == reinterpret_cast<const void*>(&linbench::cuda_detail::grad_rows_kernel<__half>);
}

template <class Args>
void run_grid(const void* func, dim3 grid, void** args, size_t smem, unsigned threads) {
  auto kernel = reinterpret_cast<void (*)(Args)>(const_cast<void*>(func));
  const Args a = *static_cast<const Args*>(args[0]);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) run_block(kernel, a, grid, uint3{x, y, z}, smem, threads);
}

// The fast pass's kernels (fast_pass.cuh): their __launch_bounds__ minimum of blocks per SM, 0
// for any other function. Which launch ran last, with its plan, for the test to print.
template <int kDk, bool kNorm, class T = __nv_bfloat16>
int fast_min_blocks_of(const void* func) {
  using linbench::cuda_detail::fast_output_kernel;
  using linbench::cuda_detail::fast_state_kernel;
  const bool is = func == reinterpret_cast<const void*>(&fast_output_kernel<T, kDk, kNorm>) ||
                  func == reinterpret_cast<const void*>(&fast_state_kernel<T, kDk, kNorm>);
  return is ? linbench::cuda_detail::kFastMinBlocks<kDk> : 0;
}
int fast_min_blocks(const void* func) {
  return std::max({fast_min_blocks_of<64, false>(func), fast_min_blocks_of<128, false>(func),
                   fast_min_blocks_of<64, true>(func), fast_min_blocks_of<128, true>(func),
                   fast_min_blocks_of<64, false, __half>(func), fast_min_blocks_of<128, false, __half>(func),
                   fast_min_blocks_of<64, true, __half>(func), fast_min_blocks_of<128, true, __half>(func)});
}
int g_fast_launches = 0;
int g_last_fast_segs = 0;
}  // namespace

extern "C" {
cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = g_sm_count; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = g_smem_per_block; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = g_smem_per_sm; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = g_cc_major; return cudaSuccess;
    default: return cudaErrorInvalidValue;
  }
}
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute attr, int value) {
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return value <= 100 ? cudaSuccess : cudaErrorInvalidValue;
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value > g_smem_per_block) return cudaErrorInvalidValue;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void*) {
  *attributes = cudaFuncAttributes{};
  attributes->ptxVersion = g_ptx_version > 0 ? g_ptx_version : 10 * g_cc_major;
  attributes->binaryVersion = 10 * g_cc_major;
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) {
  ++g_scratch_allocs;
  if (g_fail_malloc) return cudaErrorMemoryAllocation;
  *ptr = malloc(bytes);  // uninitialised, as the real thing: ASan/valgrind-style reads show up as garbage
  memset(*ptr, 0xff, bytes);
  g_scratch_bytes = bytes;
  return cudaSuccess;
}
cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) {
  free(ptr);
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int threads, size_t smem) {
  const int by_smem = g_smem_per_sm / static_cast<int>(smem + 1024);
  const int by_threads = 2048 / threads;
  // Launch bounds: as many as they promise, no more.
  const int by_registers = fast_min_blocks(func) > 0 ? fast_min_blocks(func) : linbench::cuda_detail::kMinBlocksPerSm;
  *blocks = std::min({by_smem, by_threads, by_registers});
  return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t smem, cudaStream_t) {
  if (block.y != 1 || block.z != 1) return cudaErrorInvalidConfiguration;
  if (smem > static_cast<size_t>(g_smem_per_block) || smem % 128 != 0) return cudaErrorInvalidConfiguration;
  if (fast_min_blocks(func) > 0) {
    if (block.x != linbench::cuda_detail::kFastThreads) return cudaErrorInvalidConfiguration;
    const auto& a = *static_cast<const linbench::cuda_detail::FastArgs*>(args[0]);
    ++g_fast_launches;
    g_last_fast_segs = a.pass[0].n_segs;
    run_grid<linbench::cuda_detail::FastArgs>(func, grid, args, smem, block.x);
    return cudaSuccess;
  }
  if (block.x != emu::kMaxThreads) return cudaErrorInvalidConfiguration;
  if (is_map_backward<float>(func) || is_map_backward<__half>(func) || is_map_backward<__nv_bfloat16>(func)) {
    ++g_map_launches;
    run_grid<linbench::cuda_detail::MapBackwardArgs>(func, grid, args, smem, block.x);
    return cudaSuccess;
  }
  if (is_grad_rows(func)) {  // the normalised fast backward's pre-pass: part of the fast pass
    run_grid<linbench::cuda_detail::GradRowsArgs>(func, grid, args, smem, block.x);
    return cudaSuccess;
  }
  const KernelArgs a = *static_cast<const KernelArgs*>(args[0]);
  const int passes = static_cast<int>(grid.z) / a.max_segs;
  for (int z = 0; z < 3; ++z) {
    g_last_tile_cols[z] = z < passes ? a.pass[z].tile_cols : 0;
    g_last_segs[z] = z < passes ? a.pass[z].n_segs : 0;
  }
  ++g_launches;
  run_grid<KernelArgs>(func, grid, args, smem, block.x);
  return cudaSuccess;
}
}
