#include "usrbio/direct/options.h"

#include <cerrno>
#include <string>

#include "gtest/gtest.h"

namespace fgds::direct {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(ResolveDriverParamsTest, NullMeansDefaults) {
  DriverConfig config;
  std::string message;
  ASSERT_EQ(ResolveDriverParams(nullptr, 8, &config, &message), 0) << message;
  EXPECT_FALSE(config.primary_context);
  EXPECT_TRUE(config.use_page_cache);
  EXPECT_EQ(config.workers, 4);  // half the CPUs
  EXPECT_EQ(config.slots_per_worker, kDefaultSlotsPerWorker);
  EXPECT_EQ(config.chunk_bytes, kDefaultChunkBytes);
  EXPECT_EQ(config.staging_bytes,
            4u * kDefaultSlotsPerWorker * kDefaultChunkBytes);
}

TEST(ResolveDriverParamsTest, DefaultWorkersCapped) {
  DriverConfig config;
  std::string message;
  ASSERT_EQ(ResolveDriverParams(nullptr, 128, &config, &message), 0);
  EXPECT_EQ(config.workers, kDefaultMaxWorkers);
  for (int cpus : {0, 1, 2}) {
    ASSERT_EQ(ResolveDriverParams(nullptr, cpus, &config, &message), 0);
    EXPECT_EQ(config.workers, 1) << cpus;
  }
}

TEST(ResolveDriverParamsTest, FlagsAndExplicitValues) {
  fgds_driver_params params{};
  params.flags = FGDS_DRIVER_PRIMARY_CTX | FGDS_DRIVER_NO_PAGE_CACHE;
  params.device = 3;
  params.workers = 2;
  params.chunk_bytes = 4 * kMiB;
  DriverConfig config;
  std::string message;
  ASSERT_EQ(ResolveDriverParams(&params, 8, &config, &message), 0) << message;
  EXPECT_TRUE(config.primary_context);
  EXPECT_EQ(config.device, 3);
  EXPECT_FALSE(config.use_page_cache);
  EXPECT_EQ(config.workers, 2);
  EXPECT_EQ(config.chunk_bytes, 4 * kMiB);
}

// Staging is a hard bound: workers shrink before slots drop below two.
TEST(ResolveDriverParamsTest, StagingBoundsWorkersAndSlots) {
  struct Case {
    uint32_t workers;
    uint64_t staging_chunks;
    int want_workers;
    int want_slots;
  };
  const Case cases[] = {
      {16, 8, 4, 2},    // 8 chunks cannot give 16 workers two slots each
      {4, 100, 4, 25},  // plenty: slots grow
      {1, 1000, 1, kMaxSlotsPerWorker},
      {3, 2, 1, 2},
  };
  for (const Case& c : cases) {
    fgds_driver_params params{};
    params.workers = c.workers;
    params.chunk_bytes = kMiB;
    params.staging_bytes = c.staging_chunks * kMiB;
    DriverConfig config;
    std::string message;
    ASSERT_EQ(ResolveDriverParams(&params, 8, &config, &message), 0) << message;
    EXPECT_EQ(config.workers, c.want_workers) << c.staging_chunks;
    EXPECT_EQ(config.slots_per_worker, c.want_slots) << c.staging_chunks;
    EXPECT_LE(config.staging_bytes, params.staging_bytes);
    EXPECT_EQ(config.staging_bytes, static_cast<uint64_t>(config.workers) *
                                        config.slots_per_worker * kMiB);
  }
}

// Every rejection names the field.
TEST(ResolveDriverParamsTest, Rejections) {
  struct Case {
    const char* what;
    void (*mutate)(fgds_driver_params*);
    const char* field;
  };
  const Case cases[] = {
      {"unknown flag", [](fgds_driver_params* p) { p->flags = 1u << 31; },
       "flags"},
      {"reserved0", [](fgds_driver_params* p) { p->reserved0 = 1; },
       "reserved"},
      {"reserved[3]", [](fgds_driver_params* p) { p->reserved[3] = 1; },
       "reserved"},
      {"device without primary", [](fgds_driver_params* p) { p->device = 1; },
       "device"},
      {"negative device",
       [](fgds_driver_params* p) {
         p->flags = FGDS_DRIVER_PRIMARY_CTX;
         p->device = -1;
       },
       "device"},
      {"too many workers", [](fgds_driver_params* p) { p->workers = 257; },
       "workers"},
      {"unaligned chunk",
       [](fgds_driver_params* p) { p->chunk_bytes = kMiB + 512; },
       "chunk_bytes"},
      {"small chunk", [](fgds_driver_params* p) { p->chunk_bytes = 4096; },
       "chunk_bytes"},
      {"huge chunk", [](fgds_driver_params* p) { p->chunk_bytes = 512 * kMiB; },
       "chunk_bytes"},
      {"staging under two chunks",
       [](fgds_driver_params* p) {
         p->chunk_bytes = 2 * kMiB;
         p->staging_bytes = 3 * kMiB;
       },
       "staging_bytes"},
  };
  for (const Case& c : cases) {
    fgds_driver_params params{};
    c.mutate(&params);
    DriverConfig config;
    std::string message;
    EXPECT_EQ(ResolveDriverParams(&params, 8, &config, &message), -EINVAL)
        << c.what;
    EXPECT_NE(message.find(c.field), std::string::npos)
        << c.what << ": " << message;
  }
}

TEST(ValidateIoShapeTest, AcceptsReadAndWrite) {
  fgds_io io{};
  std::string message;
  io.opcode = FGDS_OP_READ;
  EXPECT_EQ(ValidateIoShape(io, &message), 0);
  io.opcode = FGDS_OP_WRITE;
  EXPECT_EQ(ValidateIoShape(io, &message), 0);
}

TEST(ValidateIoShapeTest, Rejections) {
  const auto base = [] {
    fgds_io io{};
    io.opcode = FGDS_OP_READ;
    return io;
  };
  fgds_io bad_opcode = base();
  bad_opcode.opcode = 7;
  fgds_io bad_flags = base();
  bad_flags.flags = 1;
  fgds_io bad_reserved0 = base();
  bad_reserved0.reserved0 = 1;
  fgds_io bad_reserved = base();
  bad_reserved.reserved[2] = 5;
  int dummy = 0;
  fgds_io in_flight = base();
  in_flight.internal = &dummy;
  for (const fgds_io& io :
       {bad_opcode, bad_flags, bad_reserved0, bad_reserved, in_flight}) {
    std::string message;
    EXPECT_EQ(ValidateIoShape(io, &message), -EINVAL);
    EXPECT_FALSE(message.empty());
  }
}

}  // namespace
}  // namespace fgds::direct
