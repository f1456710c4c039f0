#include "fusefs/session/io_stats.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fgds/usrbio.h"
#include "gtest/gtest.h"

namespace fgds::session {
namespace {

using Kind = IoStats::Kind;
using Memory = IoStats::Memory;
using Op = IoStats::Op;
using Side = IoStats::FileSide;

TEST(IoStatsTest, CountsEachKindApart) {
  IoStats stats;
  const Kind host_direct{Op::kRead, Memory::kHost, Side::kODirect};
  const Kind bounce_cached{Op::kRead, Memory::kGpuBounce, Side::kPageCache};
  const Kind gpu_write{Op::kWrite, Memory::kGpuDirect, Side::kODirect};
  stats.Record(host_direct, 4096);
  stats.Record(host_direct, 8192);
  stats.Record(bounce_cached, 1 << 20);
  stats.Record(gpu_write, -EIO);  // an error moves no bytes
  stats.Record(gpu_write, 0);     // EOF: an entry, no bytes

  IoStats::Totals t = stats.Get(host_direct);
  EXPECT_EQ(t.entries, 2u);
  EXPECT_EQ(t.bytes, 12288u);
  EXPECT_EQ(t.errors, 0u);
  t = stats.Get(bounce_cached);
  EXPECT_EQ(t.entries, 1u);
  EXPECT_EQ(t.bytes, uint64_t{1} << 20);
  t = stats.Get(gpu_write);
  EXPECT_EQ(t.entries, 2u);
  EXPECT_EQ(t.bytes, 0u);
  EXPECT_EQ(t.errors, 1u);
  // Neighbours of the recorded kinds stay empty.
  EXPECT_EQ(stats.Get({Op::kRead, Memory::kHost, Side::kPageCache}).entries,
            0u);
  EXPECT_EQ(stats.Get({Op::kWrite, Memory::kHost, Side::kODirect}).entries, 0u);
  EXPECT_EQ(stats.Get({Op::kRead, Memory::kGpuBounce, Side::kODirect}).entries,
            0u);
  stats.RecordRejected();
  EXPECT_EQ(stats.rejected(), 1u);
}

// Every row, in a fixed order, whatever was recorded: scripts read it.
TEST(IoStatsTest, RenderHasEveryRowInOrder) {
  IoStats stats;
  stats.Record({Op::kWrite, Memory::kGpuBounce, Side::kODirect}, 65536);
  stats.Record({Op::kSync, Memory::kHost, Side::kPageCache}, 0);
  stats.RecordRejected();
  std::istringstream text(stats.Render());
  std::vector<std::string> rows;
  std::string line;
  std::vector<std::string> stage_names;
  while (std::getline(text, line)) {
    if (line.rfind("ring.", 0) == 0) {  // the stage counters, after the table
      stage_names.push_back(line.substr(0, line.find(' ')));
      continue;
    }
    EXPECT_TRUE(stage_names.empty())
        << "a table row after the stages: " << line;
    std::istringstream words(line);
    std::string op, memory, side, entries, bytes, errors;
    words >> op >> memory >> side >> entries >> bytes >> errors;
    rows.push_back(op + " " + memory + " " + side + " " + entries + " " +
                   bytes + " " + errors);
  }
  const std::vector<std::string> want = {
      "usrbio memory file entries bytes errors",
      "read host page-cache 0 0 0",
      "read host o-direct 0 0 0",
      "read gpu-bounce page-cache 0 0 0",
      "read gpu-bounce o-direct 0 0 0",
      "read gpu-direct o-direct 0 0 0",
      "write host page-cache 0 0 0",
      "write host o-direct 0 0 0",
      "write gpu-bounce page-cache 0 0 0",
      "write gpu-bounce o-direct 1 65536 0",
      "write gpu-direct o-direct 0 0 0",
      "fsync - - 1 0 0",
      "rejected - - 1 0 1",
  };
  EXPECT_EQ(rows, want);
  const std::vector<std::string> want_stages = {
      "ring.entries",   "ring.batches",        "ring.inline",
      "ring.notifies",  "ring.wakeups",        "ring.take_ns",
      "ring.submit_ns", "ring.post_ns",        "ring.notify_ns",
      "ring.engine_ns", "ring.engine_samples", "ring.helped"};
  EXPECT_EQ(stage_names, want_stages);
}

// GPU iov entries count for their GPU too, and the GPU rows say what the
// daemon knows of it: NUMA node and BAR1 from sysfs, how offers ended.
TEST(IoStatsTest, PerGpuRows) {
  char dir[] = "/tmp/io-stats-gpu-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string sys = dir;
  const std::string dev = sys + "/bus/pci/devices/0000:3b:00.0";
  ASSERT_EQ(system(("mkdir -p " + dev + " " + sys +
                    "/devices/system/node/node1 && echo 1 > " + dev +
                    "/numa_node && echo '0x2000000000 0x203fffffff 0x14220c' "
                    "> " +
                    dev + "/resource")
                       .c_str()),
            0);
  IoStats stats;
  EXPECT_EQ(stats.Render().find("gpu "), std::string::npos);  // no GPU yet
  EXPECT_EQ(stats.GpuSlot("0000:1B:00.0", sys), 0);
  EXPECT_EQ(stats.GpuSlot("3b:00.0", sys), 1);
  EXPECT_EQ(stats.GpuSlot("0000:3b:00.0", sys), 1);  // the same GPU
  EXPECT_EQ(stats.GpuSlot("not a gpu", sys), -1);
  stats.NoteGpuIov(1, FGDS_PATH_BOUNCE, FGDS_IOV_GPU_REASON_NO_MODULE);
  stats.NoteGpuIov(7, FGDS_PATH_BOUNCE, FGDS_IOV_GPU_REASON_NO_MODULE);
  stats.Record({Op::kRead, Memory::kGpuBounce, Side::kODirect, 1}, 1 << 20);
  stats.Record({Op::kRead, Memory::kGpuBounce, Side::kPageCache, 1}, 4096);
  stats.Record({Op::kWrite, Memory::kGpuDirect, Side::kODirect, 0}, -EIO);
  stats.Record({Op::kRead, Memory::kHost, Side::kODirect, 1}, 8192);   // host
  stats.Record({Op::kRead, Memory::kGpuBounce, Side::kODirect}, 512);  // none
  EXPECT_EQ(stats.GetGpu(1, Op::kRead, Memory::kGpuBounce).entries, 2u);
  EXPECT_EQ(stats.GetGpu(1, Op::kRead, Memory::kGpuBounce).bytes,
            (1u << 20) + 4096);
  EXPECT_EQ(stats.GetGpu(0, Op::kWrite, Memory::kGpuDirect).errors, 1u);
  EXPECT_EQ(stats.GetGpu(0, Op::kRead, Memory::kGpuBounce).entries, 0u);
  // The global rows still count every entry.
  EXPECT_EQ(stats.Get({Op::kRead, Memory::kGpuBounce, Side::kODirect}).bytes,
            (1u << 20) + 512);
  const std::string text = stats.Render();
  std::istringstream lines(text.substr(text.find("\ngpu ") + 1));
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string w, row;
    while (words >> w) row += (row.empty() ? "" : " ") + w;
    rows.push_back(row);
  }
  const std::vector<std::string> want = {
      "gpu pci numa bar1-bytes direct bounce why-bounce op memory entries "
      "bytes errors",
      "0 0000:1b:00.0 -1 0 0 0 - read gpu-bounce 0 0 0",
      "0 0000:1b:00.0 -1 0 0 0 - read gpu-direct 0 0 0",
      "0 0000:1b:00.0 -1 0 0 0 - write gpu-bounce 0 0 0",
      "0 0000:1b:00.0 -1 0 0 0 - write gpu-direct 1 0 1",
      "1 0000:3b:00.0 1 1073741824 0 1 no-module read gpu-bounce 2 1052672 0",
      "1 0000:3b:00.0 1 1073741824 0 1 no-module read gpu-direct 0 0 0",
      "1 0000:3b:00.0 1 1073741824 0 1 no-module write gpu-bounce 0 0 0",
      "1 0000:3b:00.0 1 1073741824 0 1 no-module write gpu-direct 0 0 0",
  };
  EXPECT_EQ(rows, want) << text;
  for (int i = 2; i < IoStats::kMaxGpus; ++i) {
    EXPECT_EQ(stats.GpuSlot("0000:c" + std::to_string(i % 10) + ":0" +
                                std::to_string(i / 10) + ".0",
                            sys),
              i);
  }
  EXPECT_EQ(stats.GpuSlot("0000:ff:00.0", sys), -1);  // the table is full
  EXPECT_EQ(system(("rm -rf " + sys).c_str()), 0);
}

// Engine threads record at once (run under TSan in CI).
TEST(IoStatsTest, ConcurrentRecordsAllCount) {
  IoStats stats;
  const Kind kind{Op::kRead, Memory::kGpuDirect, Side::kODirect};
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&stats, kind] {
      for (int j = 0; j < kEach; ++j) {
        stats.Record(kind, 4096);
        if (j % 1000 == 0) stats.RecordRejected();
      }
    });
  }
  std::string rendered;
  for (int i = 0; i < 10; ++i) rendered = stats.Render();  // while recording
  for (std::thread& t : threads) t.join();
  const IoStats::Totals t = stats.Get(kind);
  EXPECT_EQ(t.entries, uint64_t{kThreads} * kEach);
  EXPECT_EQ(t.bytes, uint64_t{kThreads} * kEach * 4096);
  EXPECT_EQ(stats.rejected(), uint64_t{kThreads} * (kEach / 1000));
  EXPECT_FALSE(rendered.empty());
}

}  // namespace
}  // namespace fgds::session
