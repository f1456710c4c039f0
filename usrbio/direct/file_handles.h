// File: usrbio/direct/file_handles.h
//
// The engine needs two views of a file: O_DIRECT for aligned chunks and
// buffered for unaligned heads and tails (and for reads the page cache can
// serve). The caller hands in one descriptor; FileHandles opens the other
// through /proc/self/fd, the way kvikio opens a file twice. Registered
// files keep their twins; unregistered ones get fresh twins per I/O, closed
// when the I/O completes.
#ifndef FGDS_USRBIO_DIRECT_FILE_HANDLES_H_
#define FGDS_USRBIO_DIRECT_FILE_HANDLES_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"

namespace fgds::direct {

// Immutable after Open, apart from the page-cache probe switch.
class FileHandles {
 public:
  // Open builds the twins of `fd`. -EBADF when `fd` is not open or not a
  // regular file or block device. A twin that cannot be opened (a file
  // system without O_DIRECT, a file no longer openable by path) is left
  // out: direct_fd() or buffered_fd() is then -1, and the engine does
  // without it.
  static int Open(int fd, std::shared_ptr<FileHandles>* out,
                  std::string* message);

  ~FileHandles();
  FileHandles(const FileHandles&) = delete;
  FileHandles& operator=(const FileHandles&) = delete;

  int direct_fd() const { return direct_fd_; }
  int buffered_fd() const { return buffered_fd_; }
  bool readable() const { return readable_; }
  bool writable() const { return writable_; }
  // The block device the file's I/O reaches (kmod::StorageDevice): what the
  // direct path registers GPU memory for.
  dev_t storage_device() const { return storage_device_; }

 private:
  FileHandles() = default;
  int direct_fd_ = -1;
  int buffered_fd_ = -1;
  bool own_direct_ = false;
  bool own_buffered_ = false;
  bool readable_ = false;
  bool writable_ = false;
  dev_t storage_device_ = 0;
};

// The driver's registered files. Thread-safe.
class FileTable {
 public:
  int Register(int fd, std::string* message);
  int Deregister(int fd);

  // Get returns the registered twins of `fd`, or fresh ones for an
  // unregistered fd, and checks the access mode the I/O needs (-EBADF).
  int Get(int fd, bool write, std::shared_ptr<FileHandles>* out,
          std::string* message);

  void Clear();

 private:
  fgds::Mutex mu_;
  std::map<int, std::shared_ptr<FileHandles>> registered_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fgds::direct

#endif  // FGDS_USRBIO_DIRECT_FILE_HANDLES_H_
