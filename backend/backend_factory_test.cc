#include "backend/backend_factory.h"

#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace fgds::backend {
namespace {

TEST(BackendFactoryTest, LocalIsTheDefaultAndServesItsDirectory) {
  char dir[] = "/tmp/fgds-factory-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  BackendConfig config;
  EXPECT_EQ(config.name, "local");
  config.data_dir = dir;
  std::string warning;
  auto backend = CreateBackend(config, &warning);
  ASSERT_TRUE(backend.ok()) << backend.status();
  Entry entry;
  EXPECT_EQ((*backend)->Lookup((*backend)->root(), "missing", &entry), -ENOENT);
  EXPECT_FALSE((*backend)->EngineName().empty());
  backend->reset();
  rmdir(dir);
}

TEST(BackendFactoryTest, UnknownNameListsTheKnownOnes) {
  BackendConfig config;
  config.name = "nosuch";
  auto backend = CreateBackend(config, nullptr);
  ASSERT_FALSE(backend.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(backend.status()));
  EXPECT_NE(backend.status().message().find("nosuch"), std::string::npos);
  EXPECT_NE(backend.status().message().find("local"), std::string::npos);
}

TEST(BackendFactoryTest, CephNeedsAConfOrIsNotBuilt) {
  BackendConfig config;
  config.name = "ceph";
  auto backend = CreateBackend(config, nullptr);
  ASSERT_FALSE(backend.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(backend.status()));
#ifdef FGDS_HAVE_CEPH
  EXPECT_NE(backend.status().message().find("--ceph-conf"), std::string::npos)
      << backend.status();
  EXPECT_EQ(BackendNames().size(), 2u);
#else
  EXPECT_NE(backend.status().message().find("unknown backend"),
            std::string::npos)
      << backend.status();
  EXPECT_EQ(BackendNames().size(), 1u);
#endif
}

}  // namespace
}  // namespace fgds::backend
