#include "tests/lib/fsx.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/lib/fsx_io.h"
#include "tests/lib/fsx_model.h"
#include "tests/lib/fsx_op.h"

namespace fgds::testing {
namespace {

using fsx::Describe;
using fsx::FileModel;
using fsx::FillPattern;
using fsx::Format;
using fsx::HexBytes;
using fsx::OpRecord;
using fsx::PreadFull;
using fsx::PwriteFull;
using fsx::RandLen;
using fsx::RandOffset;
using fsx::Rng;
using fsx::ScopedFd;
using fsx::ScopedMap;
using ull = unsigned long long;  // for printf's %llx

// Op numbers are stored per byte as uint32 (FileModel::last_op).
constexpr uint64_t kMaxOps = 0xffffffffULL;
// Op descriptions kept for mismatch reports. Older ops are still named by
// number; their details can be recovered by rerunning the seed.
constexpr uint64_t kMaxHistory = 1 << 20;
// Whole-file checks read this much at a time.
constexpr uint64_t kVerifyChunk = 1 << 20;
// Bytes shown side by side in a mismatch report.
constexpr size_t kShowBytes = 16;

std::string FilePathFor(const FsxOptions& options, int file) {
  return absl::StrCat(options.dir, "/", options.file_prefix, ".", file);
}

// Engine is one run of Fsx: the files, their models and the op history.
//
// Thread safety: the writer (the thread calling Run) owns everything. In a
// reader phase it blocks joining the reader threads, which call only const
// methods, so the models and history need no lock: thread start and join
// order the writer's updates before and after the readers' reads.
class Engine {
 public:
  Engine(const FsxOptions& options, FsxStats* stats);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  absl::Status Run();

 private:
  std::string Path(int file) const { return FilePathFor(options_, file); }
  absl::Status Setup();
  OpRecord Plan(uint64_t number);
  absl::Status Execute(OpRecord& op);
  absl::Status FinalCheck();

  absl::Status DoRead(const OpRecord& op);
  absl::Status DoWrite(const OpRecord& op);
  absl::Status DoMapRead(OpRecord& op);
  absl::Status DoMapWrite(OpRecord& op);
  absl::Status DoFallocate(OpRecord& op);
  absl::Status DoCopyRange(OpRecord& op);
  absl::Status DoReopen(const OpRecord& op);
  absl::Status VerifyFile(const std::string& context, int file, int fd,
                          uint8_t* buf);

  // Thread-safe while the writer is paused (they read the models only).
  absl::Status CheckSize(const std::string& context, int file, int fd) const;
  absl::Status CheckRead(const std::string& context, int file, int fd,
                         uint64_t offset, uint64_t len, uint8_t* buf) const;
  absl::Status CheckData(const std::string& context, int file, uint64_t offset,
                         const uint8_t* actual, size_t len) const;
  absl::Status SyscallError(const std::string& context, const char* call,
                            int err) const;
  std::string MismatchReport(const std::string& context, int file,
                             uint64_t offset, const uint8_t* actual, size_t len,
                             size_t bad) const;
  std::string OpLog() const;
  std::string DescribeOp(uint64_t number) const;

  absl::Status ReaderPhase(uint64_t phase);
  absl::Status ReaderMain(uint64_t phase, int reader,
                          const std::atomic<bool>& stop,
                          std::atomic<uint64_t>& reads,
                          std::atomic<uint64_t>& bytes) const;

  // Switches `*native` off for the rest of the run, recording why.
  void Fallback(bool* native, const char* what, int err);

  const FsxOptions& options_;
  FsxStats* const stats_;
  Rng rng_;
  const uint64_t page_;
  std::vector<FileModel> models_;
  std::vector<int> fds_;  // the writer's descriptors, one per file
  // Ring of op records, slot = number % size.
  std::vector<OpRecord> history_;
  uint64_t current_op_ = 0;
  std::vector<uint8_t> buf_;
  std::vector<uint8_t> verify_buf_;
  // Whether the filesystem supports each optional call; once false, the
  // op is emulated (see fsx.h). Fallocate modes are tracked apart, indexed
  // by keep_size: a filesystem may support some and not others.
  bool mmap_native_ = true;
  bool punch_native_ = true;
  bool zero_native_[2] = {true, true};
  bool falloc_native_[2] = {true, true};
  bool copy_native_ = true;
};

Engine::Engine(const FsxOptions& options, FsxStats* stats)
    : options_(options),
      stats_(stats),
      rng_(options.seed),
      page_(static_cast<uint64_t>(sysconf(_SC_PAGESIZE))),
      models_(options.num_files),
      fds_(options.num_files, -1),
      history_(std::min(options.num_ops, kMaxHistory) + 1),
      buf_(options.max_op_size),
      verify_buf_(kVerifyChunk) {}

Engine::~Engine() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

absl::Status Engine::Setup() {
  struct stat st;
  if (stat(options_.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fsx: not a directory: ", options_.dir));
  }
  for (int i = 0; i < options_.num_files; ++i) {
    fds_[i] =
        open(Path(i).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fds_[i] < 0) return SyscallError(Path(i), "open", errno);
  }
  return absl::OkStatus();
}

absl::Status Engine::Run() {
  if (absl::Status s = Setup(); !s.ok()) return s;
  for (uint64_t n = 1; n <= options_.num_ops; ++n) {
    current_op_ = n;
    OpRecord& op = history_[n % history_.size()];
    op = Plan(n);
    if (absl::Status s = Execute(op); !s.ok()) return s;
    op.size_after =
        models_[op.type == FsxOp::kCopyRange ? op.dst : op.file].size();
    op.done = true;
    ++stats_->ops;
    ++stats_->op_counts[static_cast<int>(op.type)];
    if (options_.after_op) options_.after_op(n);
    if (options_.num_readers > 0 && n % options_.reader_phase_interval == 0) {
      if (absl::Status s = ReaderPhase(n / options_.reader_phase_interval);
          !s.ok()) {
        return s;
      }
    }
    if (options_.progress_interval > 0 && n % options_.progress_interval == 0) {
      fprintf(stderr, "fsx: %llu/%llu ops\n", static_cast<ull>(n),
              static_cast<ull>(options_.num_ops));
    }
  }
  return FinalCheck();
}

OpRecord Engine::Plan(uint64_t number) {
  const int nfiles = options_.num_files;
  const uint64_t max = options_.max_file_size;
  const uint64_t max_op = options_.max_op_size;
  OpRecord op;
  op.number = number;
  op.file = static_cast<uint8_t>(rng_.Uniform(nfiles));
  op.type = PickOp(rng_);
  const uint64_t size = models_[op.file].size();
  op.size_before = size;
  // Ops that need data in the file, a second file or room to grow become
  // plain writes when they cannot apply, so the sequence stays a function
  // of the seed alone.
  switch (op.type) {
    case FsxOp::kMapRead:
    case FsxOp::kMapWrite:
    case FsxOp::kPunchHole:
      if (size == 0) op.type = FsxOp::kWrite;
      break;
    case FsxOp::kCopyRange:
      if (size == 0 || nfiles < 2) op.type = FsxOp::kWrite;
      break;
    case FsxOp::kAppend:
      if (size >= max) op.type = FsxOp::kWrite;
      break;
    default:
      break;
  }
  switch (op.type) {
    case FsxOp::kRead:
      // One read in eight starts at or beyond EOF, to check short reads.
      op.offset = (size == 0 || rng_.OneIn(8)) ? size + rng_.Uniform(page_)
                                               : RandOffset(rng_, size, page_);
      op.length = RandLen(rng_, max_op, page_);
      break;
    case FsxOp::kWrite:
    case FsxOp::kZeroRange:
    case FsxOp::kFallocate:
      op.keep_size = op.type != FsxOp::kWrite && rng_.OneIn(2);
      op.offset = RandOffset(rng_, max, page_);
      op.length = std::min(RandLen(rng_, max_op, page_), max - op.offset);
      break;
    case FsxOp::kAppend:
      op.offset = size;
      op.length = std::min(RandLen(rng_, max_op, page_), max - size);
      break;
    case FsxOp::kTruncate:
      op.offset = rng_.OneIn(2)
                      ? RandOffset(rng_, size + 1, page_)
                      : size + RandOffset(rng_, max - size + 1, page_);
      break;
    case FsxOp::kMapRead:
    case FsxOp::kMapWrite:
    case FsxOp::kPunchHole:
      op.offset = RandOffset(rng_, size, page_);
      op.length = std::min(RandLen(rng_, max_op, page_), size - op.offset);
      break;
    case FsxOp::kCopyRange:
      op.dst = static_cast<uint8_t>((op.file + 1 + rng_.Uniform(nfiles - 1)) %
                                    nfiles);
      op.size_before = models_[op.dst].size();
      op.offset = RandOffset(rng_, size, page_);
      op.dst_offset = RandOffset(rng_, max, page_);
      op.length = std::min({RandLen(rng_, max_op, page_), size - op.offset,
                            max - op.dst_offset});
      break;
    case FsxOp::kFsync:
    case FsxOp::kFdatasync:
    case FsxOp::kReopen:
    case FsxOp::kVerify:
      break;
  }
  return op;
}

absl::Status Engine::Execute(OpRecord& op) {
  const int fd = fds_[op.file];
  FileModel& model = models_[op.file];
  const uint32_t number = static_cast<uint32_t>(op.number);
  switch (op.type) {
    case FsxOp::kRead:
      return DoRead(op);
    case FsxOp::kWrite:
    case FsxOp::kAppend:
      return DoWrite(op);
    case FsxOp::kTruncate:
      if (ftruncate(fd, op.offset) != 0) {
        return SyscallError(Describe(op), "ftruncate", errno);
      }
      model.Truncate(number, op.offset);
      return absl::OkStatus();
    case FsxOp::kMapRead:
      return DoMapRead(op);
    case FsxOp::kMapWrite:
      return DoMapWrite(op);
    case FsxOp::kFsync:
      if (fsync(fd) != 0) return SyscallError(Describe(op), "fsync", errno);
      return absl::OkStatus();
    case FsxOp::kFdatasync:
      if (fdatasync(fd) != 0) {
        return SyscallError(Describe(op), "fdatasync", errno);
      }
      return absl::OkStatus();
    case FsxOp::kReopen:
      return DoReopen(op);
    case FsxOp::kPunchHole:
    case FsxOp::kZeroRange:
    case FsxOp::kFallocate:
      return DoFallocate(op);
    case FsxOp::kCopyRange:
      return DoCopyRange(op);
    case FsxOp::kVerify:
      return VerifyFile(Describe(op), op.file, fd, verify_buf_.data());
  }
  return absl::InternalError("fsx: unknown op");
}

absl::Status Engine::DoRead(const OpRecord& op) {
  stats_->bytes_read += op.length;
  return CheckRead(Describe(op), op.file, fds_[op.file], op.offset, op.length,
                   buf_.data());
}

absl::Status Engine::DoWrite(const OpRecord& op) {
  FillPattern(options_.seed, op.number, op.offset, buf_.data(), op.length);
  if (int err = PwriteFull(fds_[op.file], buf_.data(), op.length, op.offset)) {
    return SyscallError(Describe(op), "pwrite", -err);
  }
  models_[op.file].Write(static_cast<uint32_t>(op.number), op.offset,
                         buf_.data(), op.length);
  stats_->bytes_written += op.length;
  return absl::OkStatus();
}

absl::Status Engine::DoMapRead(OpRecord& op) {
  const int fd = fds_[op.file];
  // A file shorter than the model would turn the check into SIGBUS.
  if (absl::Status s = CheckSize(Describe(op), op.file, fd); !s.ok()) return s;
  if (mmap_native_) {
    ScopedMap map(fd, op.offset, op.length, PROT_READ, page_);
    if (map.error() == 0) {
      stats_->bytes_read += op.length;
      return CheckData(Describe(op), op.file, op.offset, map.data(), op.length);
    }
    if (map.error() != ENODEV) {
      return SyscallError(Describe(op), "mmap", map.error());
    }
    Fallback(&mmap_native_, "mmap", map.error());
  }
  op.emulated = true;
  return DoRead(op);
}

absl::Status Engine::DoMapWrite(OpRecord& op) {
  const int fd = fds_[op.file];
  if (absl::Status s = CheckSize(Describe(op), op.file, fd); !s.ok()) return s;
  if (mmap_native_) {
    ScopedMap map(fd, op.offset, op.length, PROT_READ | PROT_WRITE, page_);
    if (map.error() == 0) {
      FillPattern(options_.seed, op.number, op.offset, buf_.data(), op.length);
      std::memcpy(map.data(), buf_.data(), op.length);
      if (int err = map.Sync()) return SyscallError(Describe(op), "msync", err);
      models_[op.file].Write(static_cast<uint32_t>(op.number), op.offset,
                             buf_.data(), op.length);
      stats_->bytes_written += op.length;
      return absl::OkStatus();
    }
    if (map.error() != ENODEV) {
      return SyscallError(Describe(op), "mmap", map.error());
    }
    Fallback(&mmap_native_, "mmap", map.error());
  }
  op.emulated = true;
  return DoWrite(op);
}

absl::Status Engine::DoFallocate(OpRecord& op) {
  const int fd = fds_[op.file];
  FileModel& model = models_[op.file];
  const uint32_t number = static_cast<uint32_t>(op.number);
  bool* native = &falloc_native_[op.keep_size];
  int mode = op.keep_size ? FALLOC_FL_KEEP_SIZE : 0;
  if (op.type == FsxOp::kPunchHole) {
    native = &punch_native_;
    mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  } else if (op.type == FsxOp::kZeroRange) {
    native = &zero_native_[op.keep_size];
    mode |= FALLOC_FL_ZERO_RANGE;
  }
  if (*native) {
    if (fallocate(fd, mode, op.offset, op.length) == 0) {
      if (op.type == FsxOp::kFallocate) {
        // Allocation keeps existing data; only a size change shows.
        if (!op.keep_size) {
          model.Truncate(number, std::max(model.size(), op.offset + op.length));
        }
      } else {
        model.Zero(number, op.offset, op.length,
                   !op.keep_size && op.type == FsxOp::kZeroRange);
      }
      return absl::OkStatus();
    }
    const int err = errno;
    if (err != EOPNOTSUPP) return SyscallError(Describe(op), "fallocate", err);
    Fallback(native,
             absl::StrCat(FsxOpName(op.type), op.keep_size ? " keep_size" : "")
                 .c_str(),
             err);
  }
  // Emulation: the same bytes and size through ftruncate and pwrite.
  op.emulated = true;
  uint64_t end = op.offset + op.length;
  if (op.type == FsxOp::kFallocate) {
    if (!op.keep_size && end > model.size()) {
      if (ftruncate(fd, end) != 0) {
        return SyscallError(Describe(op), "ftruncate", errno);
      }
      model.Truncate(number, end);
    }
    return absl::OkStatus();
  }
  const bool extend = op.type == FsxOp::kZeroRange && !op.keep_size;
  if (!extend) end = std::min(end, model.size());
  if (op.offset < end) {
    std::vector<uint8_t> zeros(end - op.offset, 0);
    if (int err = PwriteFull(fd, zeros.data(), zeros.size(), op.offset)) {
      return SyscallError(Describe(op), "pwrite", -err);
    }
  }
  model.Zero(number, op.offset, op.length, extend);
  return absl::OkStatus();
}

absl::Status Engine::DoCopyRange(OpRecord& op) {
  const int in_fd = fds_[op.file];
  const int out_fd = fds_[op.dst];
  loff_t in = op.offset;
  loff_t out = op.dst_offset;
  uint64_t left = op.length;
  while (left > 0 && copy_native_) {
    ssize_t n = copy_file_range(in_fd, &in, out_fd, &out, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS)) {
      Fallback(&copy_native_, "copy_file_range", errno);
      break;
    }
    if (n < 0) return SyscallError(Describe(op), "copy_file_range", errno);
    if (n == 0) {
      // The source range lies inside the source file per the model.
      return absl::DataLossError(absl::StrCat(
          "fsx: copy_file_range returned 0 with ", left,
          " bytes left in the source during ", Describe(op), "\n", OpLog()));
    }
    left -= n;
  }
  if (left > 0) {  // emulate the rest
    op.emulated = true;
    int64_t got = PreadFull(in_fd, buf_.data(), left, in);
    if (got < 0) return SyscallError(Describe(op), "pread", -got);
    if (static_cast<uint64_t>(got) != left) {
      return absl::DataLossError(
          absl::StrCat("fsx: short read of the copy source during ",
                       Describe(op), "\n", OpLog()));
    }
    if (int err = PwriteFull(out_fd, buf_.data(), left, out)) {
      return SyscallError(Describe(op), "pwrite", -err);
    }
  }
  const FileModel& src = models_[op.file];
  models_[op.dst].Write(static_cast<uint32_t>(op.number), op.dst_offset,
                        src.data() + op.offset, op.length);
  stats_->bytes_written += op.length;
  return absl::OkStatus();
}

absl::Status Engine::DoReopen(const OpRecord& op) {
  int& fd = fds_[op.file];
  // close() is where FUSE flushes, so its error matters.
  int rc = close(fd);
  fd = -1;
  if (rc != 0) return SyscallError(Describe(op), "close", errno);
  fd = open(Path(op.file).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return SyscallError(Describe(op), "open", errno);
  return CheckSize(Describe(op), op.file, fd);
}

absl::Status Engine::VerifyFile(const std::string& context, int file, int fd,
                                uint8_t* buf) {
  if (absl::Status s = CheckSize(context, file, fd); !s.ok()) return s;
  const uint64_t size = models_[file].size();
  // Read one chunk past the end too, so that trailing garbage shows up.
  for (uint64_t off = 0; off <= size; off += kVerifyChunk) {
    const uint64_t len = std::min(kVerifyChunk, size + 1 - off);
    if (absl::Status s = CheckRead(context, file, fd, off, len, buf); !s.ok()) {
      return s;
    }
    stats_->bytes_read += len;
  }
  return absl::OkStatus();
}

absl::Status Engine::FinalCheck() {
  for (int i = 0; i < options_.num_files; ++i) {
    int rc = close(fds_[i]);
    fds_[i] = -1;
    if (rc != 0) return SyscallError(Path(i), "close", errno);
    ScopedFd fd(open(Path(i).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return SyscallError(Path(i), "open", errno);
    if (absl::Status s =
            VerifyFile("final check", i, fd.get(), verify_buf_.data());
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Engine::CheckSize(const std::string& context, int file,
                               int fd) const {
  struct stat st;
  if (fstat(fd, &st) != 0) return SyscallError(context, "fstat", errno);
  const uint64_t want = models_[file].size();
  if (static_cast<uint64_t>(st.st_size) == want) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      Format("fsx: size mismatch in %s during %s: expected 0x%llx, fstat "
             "says 0x%llx\n",
             Path(file).c_str(), context.c_str(), static_cast<ull>(want),
             static_cast<ull>(st.st_size)),
      OpLog()));
}

absl::Status Engine::CheckRead(const std::string& context, int file, int fd,
                               uint64_t offset, uint64_t len,
                               uint8_t* buf) const {
  if (absl::Status s = CheckSize(context, file, fd); !s.ok()) return s;
  const uint64_t size = models_[file].size();
  const uint64_t want = offset >= size ? 0 : std::min(len, size - offset);
  const int64_t got = PreadFull(fd, buf, len, offset);
  if (got < 0) return SyscallError(context, "pread", -got);
  if (static_cast<uint64_t>(got) != want) {
    return absl::DataLossError(absl::StrCat(
        Format("fsx: pread of %s returned %lld bytes, expected %llu (file "
               "size 0x%llx) during %s\n",
               Path(file).c_str(), static_cast<long long>(got),
               static_cast<ull>(want), static_cast<ull>(size), context.c_str()),
        OpLog()));
  }
  if (want == 0) return absl::OkStatus();
  return CheckData(context, file, offset, buf, want);
}

absl::Status Engine::CheckData(const std::string& context, int file,
                               uint64_t offset, const uint8_t* actual,
                               size_t len) const {
  const int64_t bad = models_[file].FirstMismatch(offset, actual, len);
  if (bad < 0) return absl::OkStatus();
  return absl::DataLossError(
      MismatchReport(context, file, offset, actual, len, bad));
}

std::string Engine::MismatchReport(const std::string& context, int file,
                                   uint64_t offset, const uint8_t* actual,
                                   size_t len, size_t bad) const {
  const FileModel& model = models_[file];
  const uint64_t bad_off = offset + bad;
  const uint8_t* expected = model.data() + offset;
  size_t bad_bytes = 0;
  for (size_t i = bad; i < len; ++i) bad_bytes += expected[i] != actual[i];
  const size_t show = std::min(kShowBytes, len - bad);
  std::string r = Format(
      "fsx: data mismatch in %s during %s\n"
      "  first bad offset 0x%llx: expected 0x%02x, actual 0x%02x "
      "(%zu bad bytes in the %zu checked)\n",
      Path(file).c_str(), context.c_str(), static_cast<ull>(bad_off),
      expected[bad], actual[bad], bad_bytes, len);
  absl::StrAppend(&r, "  expected: ", HexBytes(expected + bad, show), "\n",
                  "  actual:   ", HexBytes(actual + bad, show), "\n",
                  "  offset last written by ",
                  DescribeOp(model.last_op(bad_off)), "\n");
  // Say where the wrong bytes came from, when that can be told.
  if (show >= 4) {
    const uint8_t* a = actual + bad;
    if (std::all_of(a, a + show, [](uint8_t b) { return b == 0; })) {
      absl::StrAppend(&r, "  actual bytes are zeros\n");
    } else if (uint64_t op = fsx::MatchingOp(options_.seed, current_op_,
                                             bad_off, a, show)) {
      absl::StrAppend(&r, "  actual bytes are what ", DescribeOp(op),
                      " wrote here (stale or lost data)\n");
    } else {
      absl::StrAppend(&r,
                      "  actual bytes match no op's data at this "
                      "offset (misplaced or corrupt)\n");
    }
  }
  absl::StrAppend(
      &r,
      Format("  file size 0x%llx; rerun: --seed %llu --ops %llu "
             "--max-size %llu --max-op-size %llu --files %d\n",
             static_cast<ull>(model.size()), static_cast<ull>(options_.seed),
             static_cast<ull>(options_.num_ops),
             static_cast<ull>(options_.max_file_size),
             static_cast<ull>(options_.max_op_size), options_.num_files),
      OpLog());
  return r;
}

std::string Engine::DescribeOp(uint64_t number) const {
  const OpRecord& op = history_[number % history_.size()];
  if (number != 0 && op.number == number) return Describe(op);
  return Format("#%llu (no longer in the history)", static_cast<ull>(number));
}

std::string Engine::OpLog() const {
  std::string log = Format("  last %d ops (of %llu):\n", options_.log_size,
                           static_cast<ull>(current_op_));
  const uint64_t first = current_op_ > static_cast<uint64_t>(options_.log_size)
                             ? current_op_ - options_.log_size + 1
                             : 1;
  for (uint64_t n = first; n <= current_op_; ++n) {
    absl::StrAppend(&log, "    ", DescribeOp(n), "\n");
  }
  return log;
}

absl::Status Engine::SyscallError(const std::string& context, const char* call,
                                  int err) const {
  return absl::ErrnoToStatus(err, absl::StrCat("fsx: ", call, " failed during ",
                                               context, "\n", OpLog()));
}

void Engine::Fallback(bool* native, const char* what, int err) {
  *native = false;
  stats_->fallbacks.push_back(
      absl::StrCat(what, ": ", strerrorname_np(err), ", emulated"));
}

absl::Status Engine::ReaderPhase(uint64_t phase) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  absl::Status first_error;  // guarded by mu
  std::vector<std::thread> threads;
  for (int r = 0; r < options_.num_readers; ++r) {
    threads.emplace_back([&, r] {
      absl::Status s = ReaderMain(phase, r, stop, reads, bytes);
      if (s.ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = s;
      stop = true;
    });
  }
  for (std::thread& t : threads) t.join();
  stats_->reader_reads += reads;
  stats_->bytes_read += bytes;
  return first_error;
}

absl::Status Engine::ReaderMain(uint64_t phase, int reader,
                                const std::atomic<bool>& stop,
                                std::atomic<uint64_t>& reads,
                                std::atomic<uint64_t>& bytes) const {
  // Own seed per (phase, reader): the ranges are reproducible even though
  // the interleaving is not.
  Rng rng(options_.seed ^
          (phase * 0x100000001b3ULL + reader + 1) * 0xd6e8feb86659fd93ULL);
  std::vector<std::unique_ptr<ScopedFd>> fds;
  for (int f = 0; f < options_.num_files; ++f) {
    fds.push_back(std::make_unique<ScopedFd>(
        open(Path(f).c_str(), O_RDONLY | O_CLOEXEC)));
    if (fds.back()->get() < 0) {
      return SyscallError(Format("reader %d", reader), "open", errno);
    }
  }
  std::vector<uint8_t> buf(options_.max_op_size);
  for (int i = 0; i < options_.reads_per_reader && !stop; ++i) {
    const int f = static_cast<int>(rng.Uniform(options_.num_files));
    const int fd = fds[f]->get();
    const uint64_t size = models_[f].size();
    absl::Status s;
    uint64_t len;
    if (mmap_native_ && size > 0 && rng.OneIn(4)) {
      const uint64_t off = RandOffset(rng, size, page_);
      len = std::min(RandLen(rng, options_.max_op_size, page_), size - off);
      const std::string context =
          Format("reader %d of phase %llu: map_read f%d [0x%llx,+0x%llx)",
                 reader, static_cast<ull>(phase), f, static_cast<ull>(off),
                 static_cast<ull>(len));
      s = CheckSize(context, f, fd);
      if (s.ok()) {
        ScopedMap map(fd, off, len, PROT_READ, page_);
        if (map.error() == 0) {
          s = CheckData(context, f, off, map.data(), len);
        } else if (map.error() == ENODEV) {
          // Not mappable (direct I/O) and the writer has not found out yet.
          s = CheckRead(context, f, fd, off, len, buf.data());
        } else {
          s = SyscallError(context, "mmap", map.error());
        }
      }
    } else {
      const uint64_t off = size == 0 ? 0 : RandOffset(rng, size, page_);
      len = RandLen(rng, options_.max_op_size, page_);
      s = CheckRead(Format("reader %d of phase %llu: read f%d "
                           "[0x%llx,+0x%llx)",
                           reader, static_cast<ull>(phase), f,
                           static_cast<ull>(off), static_cast<ull>(len)),
                    f, fd, off, len, buf.data());
    }
    if (!s.ok()) return s;
    ++reads;
    bytes += len;
  }
  return absl::OkStatus();
}

}  // namespace

std::string FsxStats::Summary() const {
  return absl::StrCat("fsx: ", ops, " ops, ", reader_reads, " reader reads, ",
                      mismatches, " mismatches");
}

std::string FsxStats::Details() const {
  std::string s;
  for (int i = 0; i < kNumFsxOps; ++i) {
    absl::StrAppend(&s, "  ", FsxOpName(static_cast<FsxOp>(i)), ": ",
                    op_counts[i], "\n");
  }
  absl::StrAppend(&s, "  bytes written: ", bytes_written,
                  ", bytes verified: ", bytes_read, "\n");
  for (const std::string& f : fallbacks) absl::StrAppend(&s, "  ", f, "\n");
  return s;
}

Fsx::Fsx(FsxOptions options) : options_(std::move(options)) {}

std::string Fsx::FilePath(int i) const { return FilePathFor(options_, i); }

absl::Status Fsx::Run() {
  const FsxOptions& o = options_;
  if (o.num_files < 1 || o.num_files > 16 || o.max_file_size == 0 ||
      o.max_op_size == 0 || o.num_ops > kMaxOps || o.num_readers < 0 ||
      (o.num_readers > 0 && o.reader_phase_interval == 0) || o.log_size < 0) {
    return absl::InvalidArgumentError("fsx: bad options");
  }
  stats_ = FsxStats();
  Engine engine(options_, &stats_);
  absl::Status s = engine.Run();
  if (absl::IsDataLoss(s)) stats_.mismatches = 1;
  return s;
}

}  // namespace fgds::testing
