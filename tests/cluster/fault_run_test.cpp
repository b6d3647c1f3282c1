// docs/design.md §13, issue 14 item 3: storage and fabric faults in the middle of a run. A KV transfer's
// error completion re-runs the turn; a write-back that cannot persist (ENOSPC from the seam, EROFS from a
// real file system remounted read-only) still answers the turn, keeps what is stored and counts what is not,
// and the next turn recomputes what is missing. Never a wrong token.
#include <doctest/doctest.h>
#include <sys/mount.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "cluster/cluster.hpp"
#include "core/faults.hpp"
#include "runtime_fixtures.hpp"

using namespace runtime_fixtures;  // with dualpath, dualpath::cluster and fs

namespace {

constexpr uint32_t agents = 4, turns = 5;

run_options options(const cluster_config& c) {
  run_options o;
  o.config = c;
  o.policy = "dualpath";
  o.scripts = scripts(agents, turns, 1);
  return o;
}

// The store's block files, by path relative to the store (the name is the block's chain key).
std::set<std::string> block_files(const fs::path& dir) {
  std::set<std::string> out;
  for (auto& f : fs::recursive_directory_iterator(dir))
    if (f.is_regular_file() && f.path().extension() != ".tmp") out.insert(fs::relative(f.path(), dir).string());
  return out;
}

// `part` holds only files of `whole`, and lacks at most `missing` of them.
void check_subset(const std::set<std::string>& part, const std::set<std::string>& whole, uint64_t missing) {
  CHECK(std::includes(whole.begin(), whole.end(), part.begin(), part.end()));
  CHECK(part.size() + missing >= whole.size());
}

// A tmpfs of our own, unmounted (lazily: a node may still hold a file open) before the scratch dir goes.
struct tmpfs_mount {
  fs::path path;
  bool mounted = false;
  std::string why_not;
  explicit tmpfs_mount(fs::path p) : path(std::move(p)) {
    fs::create_directories(path);
    mounted = ::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=64m") == 0;
    if (!mounted) why_not = std::strerror(errno);
  }
  bool remount(bool read_only) {
    return ::mount("tmpfs", path.c_str(), "tmpfs", MS_REMOUNT | (read_only ? MS_RDONLY : 0), nullptr) == 0;
  }
  ~tmpfs_mount() {
    if (mounted) ::umount2(path.c_str(), MNT_DETACH);
  }
};

}  // namespace

TEST_CASE(
    "fault seam fabric_completion: KV transfers that complete with an error re-run their turns; tokens stay right") {
  test::scratch_dir dir;
  const uint64_t before = faults::fired(faults::point::fabric_completion);
  faults::scoped armed(faults::point::fabric_completion, 3, 40);  // three transfers, after the run is going
  const auto s = run_cluster(options(small_cluster(dir.path, 2)));
  const uint64_t fired = faults::fired(faults::point::fabric_completion) - before;
  CHECK(fired == 3);
  check_turns_right(s, agents * turns, agents * turns);
  CHECK(s.retried_turns >= 1);
  CHECK(s.migrated_turns == 0);
  MESSAGE(fired, " transfers failed, ", s.retried_turns, " turns retried, ", s.verified_turns, " verified");
}

TEST_CASE(
    "fault seam storage_write: write-backs failing with ENOSPC answer their turns, count the blocks, "
    "and the next turns recompute them") {
  test::scratch_dir clean_dir, dir;
  const auto clean = run_cluster(options(small_cluster(clean_dir.path, 2)));
  REQUIRE(clean.unpersisted_blocks == 0);
  const uint64_t before = faults::fired(faults::point::storage_write);
  run_summary s;
  {
    faults::scoped armed(faults::point::storage_write, 6, 10);
    s = run_cluster(options(small_cluster(dir.path, 2)));
  }
  const uint64_t fired = faults::fired(faults::point::storage_write) - before;
  CHECK(fired == 6);
  check_turns_right(s, agents * turns, agents * turns);
  CHECK(s.unpersisted_blocks == fired);
  // What was not persisted is a miss for the next turn (fewer hits than the same run without faults), which
  // recomputes and persists it again: the store ends with the clean run's blocks, less at most those six.
  CHECK(s.hit_blocks < clean.hit_blocks);
  check_subset(block_files(fs::path(dir.path) / "store"), block_files(fs::path(clean_dir.path) / "store"), fired);
  MESSAGE(s.unpersisted_blocks, " blocks not persisted; hits ", s.hit_blocks, " against ", clean.hit_blocks,
          " undisturbed");
}

TEST_CASE(
    "a store whose file system turns read-only mid-run (EROFS): every turn answered and right, "
    "nothing stored lost") {
  test::scratch_dir dir;
  tmpfs_mount fs_mount(fs::path(dir.path) / "ro");
  if (!fs_mount.mounted) {
    MESSAGE("skipped: cannot mount a tmpfs here (" << fs_mount.why_not << "); needs CAP_SYS_ADMIN");
    return;
  }
  auto c = small_cluster(dir.path, 2);
  c.store_dir = (fs_mount.path / "store").string();
  auto o = options(c);
  // Read-only from the second turn done on, seen within 50 ms: at a third of the turns, reported every 200 ms,
  // a loaded machine had finished every write-back by the time the report came (0 blocks not persisted).
  o.progress_every_s = 0.05;
  std::atomic<bool> remounted{false};
  std::set<std::string> stored_at_remount;
  o.on_progress = [&](const run_progress& p) {
    if (remounted || p.turns_done < 2) return;
    remounted = fs_mount.remount(true);
    if (remounted) stored_at_remount = block_files(c.store_dir);  // after: no write can land since
  };
  const auto s = run_cluster(o);
  REQUIRE(remounted);
  check_turns_right(s, agents * turns, agents * turns);
  CHECK(s.unpersisted_blocks > 0);
  const auto stored = block_files(c.store_dir);
  CHECK(stored == stored_at_remount);  // nothing stored is lost, nothing half-written appears
  // A run on the read-only store is refused at the start, naming the directory.
  std::string refused;
  try {
    run_cluster(options(c));
  } catch (const user_error& e) {
    refused = e.what();
  }
  CHECK(refused.find(c.store_dir) != std::string::npos);
  CHECK(refused.find("Read-only file system") != std::string::npos);
  // Writable again, the next run hits what was stored before the fault.
  REQUIRE(fs_mount.remount(false));
  const auto again = run_cluster(options(c));
  check_turns_right(again, agents * turns, agents * turns);
  CHECK(again.hit_blocks > 0);
  MESSAGE("remounted read-only with ", stored_at_remount.size(), " blocks stored; ", s.unpersisted_blocks,
          " blocks not persisted; the rerun hit ", again.hit_blocks);
}
