// The cuFile batch calls. A CUfileBatchHandle_t is a Batch*, looked up in
// a table so that a stale or forged handle is an error, not a crash.
#include <map>
#include <memory>
#include <mutex>

#include "dropin/cufile/batch.h"
#include "dropin/cufile/guard.h"
#include "dropin/cufile/include/cufile.h"
#include "dropin/cufile/library.h"

namespace {

using fgds::cufile::Batch;
using fgds::cufile::Status;

struct BatchTable {
  std::mutex mu;
  std::map<void*, std::shared_ptr<Batch>> batches;
};

BatchTable& Table() {
  static BatchTable* table = new BatchTable();  // never destroyed
  return *table;
}

std::shared_ptr<Batch> Find(CUfileBatchHandle_t id) {
  BatchTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.batches.find(id);
  return it == table.batches.end() ? nullptr : it->second;
}

}  // namespace

using fgds::cufile::Guard;

extern "C" {

CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t* batch_idp, unsigned nr) {
  return Guard([&] {
    if (batch_idp == nullptr) return Status(CU_FILE_INVALID_VALUE);
    CUfileDrvProps_t props;
    if (CUfileError_t status = fgds::cufile::Library::Get().OpenImplicitly();
        status.err != CU_FILE_SUCCESS) {
      return status;
    }
    fgds::cufile::Library::Get().GetProperties(&props);
    if (nr == 0 || nr > props.max_batch_io_size) {
      return Status(CU_FILE_INVALID_VALUE);
    }
    auto batch = std::make_shared<Batch>(nr);
    BatchTable& table = Table();
    std::lock_guard<std::mutex> lock(table.mu);
    table.batches[batch.get()] = batch;
    *batch_idp = batch.get();
    return fgds::cufile::Ok();
  });
}

CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
                                  CUfileIOParams_t* iocbp, unsigned int flags) {
  return Guard([&] {
    std::shared_ptr<Batch> batch = Find(batch_idp);
    if (batch == nullptr || flags != 0) return Status(CU_FILE_INVALID_VALUE);
    return batch->Submit(nr, iocbp);
  });
}

CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp,
                                     unsigned min_nr, unsigned* nr,
                                     CUfileIOEvents_t* iocbp,
                                     struct timespec* timeout) {
  return Guard([&] {
    std::shared_ptr<Batch> batch = Find(batch_idp);
    if (batch == nullptr) return Status(CU_FILE_INVALID_VALUE);
    return batch->GetStatus(min_nr, nr, iocbp, timeout);
  });
}

CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp) {
  return Guard([&] {
    std::shared_ptr<Batch> batch = Find(batch_idp);
    if (batch == nullptr) return Status(CU_FILE_INVALID_VALUE);
    return batch->Cancel();
  });
}

void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp) {
  Guard([&] {
    std::shared_ptr<Batch> batch;
    {
      BatchTable& table = Table();
      std::lock_guard<std::mutex> lock(table.mu);
      auto it = table.batches.find(batch_idp);
      if (it == table.batches.end()) return fgds::cufile::Ok();
      batch = std::move(it->second);
      table.batches.erase(it);
    }
    // The last reference waits for the entries still in flight (~Batch).
    return fgds::cufile::Ok();
  });
}

}  // extern "C"
