// File: dropin/cufile/batch.h
//
// Batch: one cuFileBatchIOSetUp's batch. Submit starts each entry at once:
// entries on device memory become libfgds asynchronous I/Os
// (fgds_io_submit, served by the driver's workers concurrently), entries on
// host memory run synchronously at submission (pread/pwrite). GetStatus
// reports finished entries in submission order, each once.
//
// Cancel cannot stop an I/O the engine has started: it waits for every
// submitted entry to finish and drops their events (docs/dropin.md).
//
// Thread safety: calls on one batch serialize on its lock.
#ifndef FGDS_DROPIN_CUFILE_BATCH_H_
#define FGDS_DROPIN_CUFILE_BATCH_H_

#include <time.h>

#include <deque>
#include <memory>
#include <mutex>

#include "dropin/cufile/include/cufile.h"
#include "dropin/cufile/library.h"
#include "fgds/fgds.h"

namespace fgds::cufile {

class Batch {
 public:
  explicit Batch(unsigned capacity) : capacity_(capacity) {}
  ~Batch() { Cancel(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // Submit checks all `nr` entries first (mode, opcode, handle, room in
  // the batch) and starts none when one is malformed.
  CUfileError_t Submit(unsigned nr, const CUfileIOParams_t* params);
  // GetStatus waits until `min_nr` events are ready or `timeout` (relative;
  // null = no limit) passed, then returns up to *nr of them in `events` and
  // sets *nr to how many.
  CUfileError_t GetStatus(unsigned min_nr, unsigned* nr,
                          CUfileIOEvents_t* events,
                          const struct timespec* timeout);
  CUfileError_t Cancel();

 private:
  struct Entry {
    void* cookie = nullptr;
    std::shared_ptr<FileHandle> handle;  // kept alive while in flight
    fgds_driver* driver = nullptr;       // null: finished at submission
    fgds_io io = {};
    bool done = false;
    int64_t result = 0;  // bytes or -errno, once done
  };

  // Poll marks `entry` done when its I/O finished within `timeout_us`.
  static void Poll(Entry& entry, int64_t timeout_us);

  const unsigned capacity_;
  std::mutex mu_;
  std::deque<std::unique_ptr<Entry>> pending_;  // submitted, not reported
};

}  // namespace fgds::cufile

#endif  // FGDS_DROPIN_CUFILE_BATCH_H_
