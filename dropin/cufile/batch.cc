#include "dropin/cufile/batch.h"

#include <cerrno>
#include <chrono>
#include <cstdint>

#include "dropin/cufile/error_map.h"
#include "dropin/cufile/raw_enum.h"
#include "dropin/cufile/transfer.h"

namespace fgds::cufile {
namespace {

int64_t MicrosecondsOf(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000 + t.tv_nsec / 1000;
}

}  // namespace

CUfileError_t Batch::Submit(unsigned nr, const CUfileIOParams_t* params) {
  if (params == nullptr && nr != 0) return Status(CU_FILE_INVALID_VALUE);
  std::lock_guard<std::mutex> lock(mu_);
  if (nr > capacity_ - pending_.size()) return Status(CU_FILE_BATCH_FULL);
  std::deque<std::unique_ptr<Entry>> entries;
  for (unsigned i = 0; i < nr; ++i) {
    const CUfileIOParams_t& p = params[i];
    const int opcode = RawEnum(p.opcode);
    if (RawEnum(p.mode) != CUFILE_BATCH ||
        (opcode != CUFILE_READ && opcode != CUFILE_WRITE) ||
        p.u.batch.devPtr_base == nullptr || p.u.batch.file_offset < 0 ||
        p.u.batch.devPtr_offset < 0) {
      return Status(CU_FILE_INVALID_VALUE);
    }
    auto entry = std::make_unique<Entry>();
    entry->cookie = p.cookie;
    entry->handle = Library::Get().FindHandle(p.fh);
    if (entry->handle == nullptr) return Status(CU_FILE_HANDLE_NOT_REGISTERED);
    entries.push_back(std::move(entry));
  }
  for (unsigned i = 0; i < nr; ++i) {
    const CUfileIOParams_t& p = params[i];
    Entry& entry = *entries[i];
    Target target;
    int cu_result = 0;
    int error = Library::Get().Resolve(
        p.u.batch.devPtr_base, static_cast<uint64_t>(p.u.batch.devPtr_offset),
        p.u.batch.size, *entry.handle, &target, &cu_result);
    if (error == 0 && target.driver != nullptr) {
      entry.io.opcode = p.opcode == CUFILE_READ ? FGDS_OP_READ : FGDS_OP_WRITE;
      entry.io.fd = entry.handle->fd;
      entry.io.devptr = p.u.batch.devPtr_base;
      entry.io.size = p.u.batch.size;
      entry.io.file_offset = p.u.batch.file_offset;
      entry.io.buf_offset = p.u.batch.devPtr_offset;
      error = fgds_io_submit(target.driver, &entry.io, 1);
      if (error >= 0) {
        entry.driver = target.driver;
        continue;
      }
    }
    entry.done = true;
    entry.result =
        error < 0
            ? error
            : Transfer(p.opcode == CUFILE_READ ? Direction::kRead
                                               : Direction::kWrite,
                       *entry.handle, p.u.batch.devPtr_base, p.u.batch.size,
                       p.u.batch.file_offset, p.u.batch.devPtr_offset);
  }
  for (auto& entry : entries) pending_.push_back(std::move(entry));
  return Ok();
}

void Batch::Poll(Entry& entry, int64_t timeout_us) {
  if (entry.done) return;
  if (fgds_io_wait(entry.driver, &entry.io, timeout_us) == 0) {
    entry.done = true;
    entry.result = entry.io.result;
  }
}

CUfileError_t Batch::GetStatus(unsigned min_nr, unsigned* nr,
                               CUfileIOEvents_t* events,
                               const struct timespec* timeout) {
  if (nr == nullptr || (events == nullptr && *nr != 0) || min_nr > *nr) {
    return Status(CU_FILE_INVALID_VALUE);
  }
  const unsigned max = *nr;
  const auto start = std::chrono::steady_clock::now();
  const int64_t limit_us = timeout == nullptr ? -1 : MicrosecondsOf(*timeout);
  std::lock_guard<std::mutex> lock(mu_);
  for (;;) {
    unsigned ready = 0;
    Entry* first_busy = nullptr;
    for (auto& entry : pending_) {
      Poll(*entry, 0);
      if (entry->done) {
        ++ready;
      } else if (first_busy == nullptr) {
        first_busy = entry.get();
      }
    }
    const int64_t waited_us =
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start)
            .count();
    const bool out_of_time = limit_us >= 0 && waited_us >= limit_us;
    if (ready >= min_nr || first_busy == nullptr || out_of_time) break;
    // Wait on the oldest busy entry: the engine serves them in order.
    Poll(*first_busy, limit_us < 0 ? -1 : limit_us - waited_us);
  }
  unsigned reported = 0;
  for (auto it = pending_.begin(); it != pending_.end() && reported < max;) {
    Entry& entry = **it;
    if (!entry.done) {
      ++it;
      continue;
    }
    CUfileIOEvents_t& event = events[reported++];
    event.cookie = entry.cookie;
    event.status = entry.result >= 0 ? CUFILE_COMPLETE : CUFILE_FAILED;
    event.ret = static_cast<size_t>(entry.result);
    it = pending_.erase(it);
  }
  *nr = reported;
  return Ok();
}

CUfileError_t Batch::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : pending_) Poll(*entry, -1);
  pending_.clear();
  return Ok();
}

}  // namespace fgds::cufile
