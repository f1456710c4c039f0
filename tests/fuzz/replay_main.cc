// Runs a fuzz harness without libFuzzer (any compiler, every CI job): over
// the checked-in corpus, then over deterministic mutations of it, so the
// harness's invariants are checked on every build even where clang's
// -fsanitize=fuzzer is unavailable.
#include <dirent.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::vector<uint8_t>> LoadCorpus() {
  std::vector<std::vector<uint8_t>> corpus;
  DIR* d = opendir(FGDS_FUZZ_CORPUS);
  if (d == nullptr) return corpus;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string(FGDS_FUZZ_CORPUS) + "/" + e->d_name,
                     std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in),
                        std::istreambuf_iterator<char>());
  }
  closedir(d);
  return corpus;
}

TEST(FuzzReplayTest, CorpusRunsClean) {
  auto corpus = LoadCorpus();
  ASSERT_FALSE(corpus.empty()) << "no corpus in " << FGDS_FUZZ_CORPUS;
  for (const auto& input : corpus) {
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
}

TEST(FuzzReplayTest, MutationsRunClean) {
  auto corpus = LoadCorpus();
  ASSERT_FALSE(corpus.empty());
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> input = corpus[rng() % corpus.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0:  // flip a bit
          if (!input.empty()) input[rng() % input.size()] ^= 1 << (rng() % 8);
          break;
        case 1:  // a random byte
          if (!input.empty()) input[rng() % input.size()] = rng();
          break;
        case 2:  // truncate
          if (!input.empty()) input.resize(rng() % input.size());
          break;
        default:  // extend
          input.push_back(static_cast<uint8_t>(rng()));
      }
    }
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
}

}  // namespace
