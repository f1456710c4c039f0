// File: common/kmod/kmod_buffer.h
//
// The user side of the fgds kernel module (include/uapi/fgds_ioctl.h):
// open a GPU's node, register a dma-buf of GPU memory for one storage
// device and map it, so that O_DIRECT reads and writes of files on that
// device move bytes between storage and GPU memory with no host copy.
// libc only: libfgds and the daemon both use it (the neutral library
// fgds_kmod_client, STYLE.md 14).
//
// Example:
//   std::shared_ptr<KmodNode> node;
//   KmodNode::Open("/dev/fgds_0000_3b_00_0", &node, &msg);
//   std::unique_ptr<KmodMapping> map;
//   KmodMapping::Create(node, dmabuf_fd, 0, bytes, file_fd, &map, &msg);
//   pread(o_direct_fd, map->data(), bytes, 0);  // storage -> GPU
//
// Thread safety: both classes are immutable after creation; any thread may
// do I/O into a mapping.
#ifndef FGDS_COMMON_KMOD_KMOD_BUFFER_H_
#define FGDS_COMMON_KMOD_KMOD_BUFFER_H_

#include <cstdint>
#include <memory>
#include <string>

namespace fgds::kmod {

// An open /dev/fgds_<bdf>. The module ties registrations to the open file,
// so mappings keep their node alive (shared_ptr) and closing it is the
// last step.
class KmodNode {
 public:
  // Open opens `path` and checks the module's ABI version. -ENOENT when the
  // module is not loaded (or not bound to this GPU), -EPROTO for a module
  // of another ABI, else the errno of open or QUERY; `message` says which.
  static int Open(const std::string& path, std::shared_ptr<KmodNode>* out,
                  std::string* message);
  ~KmodNode();
  KmodNode(const KmodNode&) = delete;
  KmodNode& operator=(const KmodNode&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  uint64_t max_buffer_size() const { return max_buffer_size_; }

  // Route: 0 when storage_fd's block device can reach this GPU peer to
  // peer, else -ENOTBLK or -EREMOTEIO (or QUERY's errno) and why.
  int Route(int storage_fd, std::string* message) const;

 private:
  KmodNode(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  const int fd_;
  uint64_t max_buffer_size_ = 0;
};

// A dma-buf range registered with a node for one storage device and mapped
// here. The destructor unmaps and unregisters; the module waits for I/O
// still in flight on the pages.
class KmodMapping {
 public:
  // Create registers [dmabuf_offset, dmabuf_offset + size) of `dmabuf_fd`
  // (page aligned) for I/O with files on storage_fd's device and maps it.
  // The dma-buf fd may be closed afterwards. Errors are the module's
  // (include/uapi/fgds_ioctl.h), with `message` naming the cause.
  static int Create(std::shared_ptr<KmodNode> node, int dmabuf_fd,
                    uint64_t dmabuf_offset, uint64_t size, int storage_fd,
                    std::unique_ptr<KmodMapping>* out, std::string* message);
  ~KmodMapping();
  KmodMapping(const KmodMapping&) = delete;
  KmodMapping& operator=(const KmodMapping&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  KmodMapping(std::shared_ptr<KmodNode> node, uint64_t token, uint8_t* data,
              uint64_t size)
      : node_(std::move(node)), token_(token), data_(data), size_(size) {}

  const std::shared_ptr<KmodNode> node_;
  const uint64_t token_;
  uint8_t* const data_;
  const uint64_t size_;
};

// RegisterErrorText explains a REG_BUFFER errno in the UAPI's terms.
std::string RegisterErrorText(int error);

}  // namespace fgds::kmod

#endif  // FGDS_COMMON_KMOD_KMOD_BUFFER_H_
