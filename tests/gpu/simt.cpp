#include "simt.hpp"

#include <fmt/format.h>

#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>
#include <exception>
#include <vector>

thread_local simt::dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace simt {

namespace {

namespace bc = boost::context;

constexpr unsigned warp_size = 32;
constexpr size_t stack_bytes = 128 * 1024;

enum class wait_state { runnable, shuffle, barrier, block_done, exited };

struct lane {
  bc::fiber fiber;  // the lane's context while it is suspended
  bc::fiber sink;   // the scheduler's context while the lane runs
  wait_state state = wait_state::runnable;
  dim3 idx;
  uint64_t value = 0, result = 0;
  unsigned src = 0;
};

struct grid_state {
  const char* kernel = "";
  const std::function<void()>* body = nullptr;
  std::vector<std::byte> shared;
  std::vector<lane> lanes;  // declared last: destroying suspended fibers unwinds them while the rest still lives
  lane* running = nullptr;
  bool finished = false;  // no blocks left: lanes leave their loop
  std::exception_ptr error;

  ~grid_state() { lanes.clear(); }
};

thread_local grid_state* active = nullptr;

grid_state& current() {
  if (!active || !active->running) throw std::logic_error("simt: a device function was called outside a kernel");
  return *active;
}

void suspend(grid_state& g, wait_state w) {
  lane& me = *g.running;
  me.state = w;
  me.sink = std::move(me.sink).resume();
}

void resume(grid_state& g, lane& l) {
  g.running = &l;
  threadIdx = l.idx;
  l.fiber = std::move(l.fiber).resume();
  g.running = nullptr;
}

bc::fiber make_lane(grid_state& g, size_t t, bc::pooled_fixedsize_stack& stacks) {
  return bc::fiber(std::allocator_arg, stacks, [&g, t](bc::fiber&& sink) {
    lane& me = g.lanes[t];
    me.sink = std::move(sink);
    try {
      while (!g.finished) {
        (*g.body)();
        suspend(g, wait_state::block_done);
      }
    } catch (const bc::detail::forced_unwind&) {
      throw;
    } catch (...) {
      if (!g.error) g.error = std::current_exception();
    }
    me.state = wait_state::exited;
    return std::move(me.sink);
  });
}

std::string where(const grid_state& g) {
  return fmt::format("{} block ({},{},{})", g.kernel, blockIdx.x, blockIdx.y, blockIdx.z);
}

// Runs the block's lanes until every one has finished it. Lanes run until they block; then whole warps at a
// shuffle exchange values, and when no shuffle is pending, a barrier opens for all lanes still in the block.
void run_block(grid_state& g) {
  const size_t n = g.lanes.size();
  for (;;) {
    for (auto& l : g.lanes)
      if (l.state == wait_state::runnable) {
        resume(g, l);
        if (g.error) std::rethrow_exception(g.error);
      }
    bool released = false;
    for (size_t w = 0; w < n; w += warp_size) {
      unsigned at = 0;
      for (unsigned k = 0; k < warp_size; ++k) at += g.lanes[w + k].state == wait_state::shuffle;
      if (at == 0) continue;
      if (at < warp_size)
        throw kernel_fault(
            fmt::format("{} warp {}: {} of 32 lanes wait at a shuffle, the others at a barrier or "
                        "past the end (a divergent warp: a hang or garbage on a GPU)",
                        where(g), w / warp_size, at));
      for (unsigned k = 0; k < warp_size; ++k) {
        lane& l = g.lanes[w + k];
        l.result = g.lanes[w + l.src].value;
        l.state = wait_state::runnable;
      }
      released = true;
    }
    if (released) continue;
    size_t done = 0;
    for (const auto& l : g.lanes) done += l.state == wait_state::block_done || l.state == wait_state::exited;
    if (done == n) return;
    // No lane can run and none waits at a shuffle: every lane still in the block is at the barrier.
    for (auto& l : g.lanes)
      if (l.state == wait_state::barrier) l.state = wait_state::runnable;
  }
}

}  // namespace

void run_grid(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body) {
  const size_t threads = size_t(block.x) * block.y * block.z;
  if (threads == 0 || threads % warp_size)
    throw kernel_fault(fmt::format("{}: the emulator runs whole warps only ({} threads per block)", kernel, threads));
  if (active) throw std::logic_error("simt: a kernel launched from inside a kernel");
  static thread_local bc::pooled_fixedsize_stack stacks(stack_bytes);

  grid_state g;
  g.kernel = kernel;
  g.body = &body;
  g.shared.resize(shared_bytes);
  g.lanes.resize(threads);
  for (size_t t = 0; t < threads; ++t)
    g.lanes[t].idx = dim3(unsigned(t % block.x), unsigned(t / block.x % block.y), unsigned(t / (block.x * block.y)));
  active = &g;
  struct clear_active {
    ~clear_active() { active = nullptr; }
  } guard;
  blockDim = block;
  gridDim = grid;
  for (size_t t = 0; t < threads; ++t) g.lanes[t].fiber = make_lane(g, t, stacks);

  const uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  for (uint64_t b = 0; b < blocks; ++b) {
    blockIdx = dim3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y), unsigned(b / (uint64_t(grid.x) * grid.y)));
    // NaN as floats: a read before any write shows up (no shared memory: nothing to fill, and memset of
    // an empty vector's null data is undefined).
    if (!g.shared.empty()) std::memset(g.shared.data(), 0xff, g.shared.size());
    for (auto& l : g.lanes) l.state = wait_state::runnable;
    run_block(g);
  }
  g.finished = true;
  for (auto& l : g.lanes)
    if (l.fiber) resume(g, l);  // each leaves its loop and ends
  if (g.error) std::rethrow_exception(g.error);
}

void sync_threads() { suspend(current(), wait_state::barrier); }

uint64_t shuffle(uint64_t bits, unsigned src_lane, unsigned mask) {
  grid_state& g = current();
  if (mask != 0xffffffffu)
    throw kernel_fault(
        fmt::format("{}: a shuffle with the partial mask {:#x} (only full warps are emulated)", where(g), mask));
  lane& me = *g.running;
  me.value = bits;
  me.src = src_lane % warp_size;
  suspend(g, wait_state::shuffle);
  return me.result;
}

unsigned lane_id() {
  grid_state& g = current();
  return unsigned((g.running - g.lanes.data()) % warp_size);
}

void* dynamic_shared() { return current().shared.data(); }

}  // namespace simt
