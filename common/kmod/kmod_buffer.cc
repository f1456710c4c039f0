#include "common/kmod/kmod_buffer.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "uapi/fgds_ioctl.h"

namespace fgds::kmod {

int KmodNode::Open(const std::string& path, std::shared_ptr<KmodNode>* out,
                   std::string* message) {
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    *message =
        "cannot open " + path + ": " + std::strerror(error) +
        (error == ENOENT ? " (the fgds kernel module is not loaded)" : "");
    return -error;
  }
  std::shared_ptr<KmodNode> node(new KmodNode(path, fd));
  fgds_query query = {};
  if (ioctl(fd, FGDS_IOCTL_QUERY, &query) != 0) {
    const int error = errno;
    *message = path + ": FGDS_IOCTL_QUERY failed: " + std::strerror(error);
    return -error;
  }
  if (query.abi_version != FGDS_ABI_VERSION) {
    *message = path + ": the fgds module speaks ABI " +
               std::to_string(query.abi_version) + ", this library " +
               std::to_string(FGDS_ABI_VERSION) +
               " (install matching fgds packages)";
    return -EPROTO;
  }
  node->max_buffer_size_ = query.max_buffer_size;
  *out = std::move(node);
  return 0;
}

KmodNode::~KmodNode() { close(fd_); }

int KmodNode::Route(int storage_fd, std::string* message) const {
  fgds_query query = {};
  query.flags = FGDS_QUERY_STORAGE_FD;
  query.storage_fd = storage_fd;
  if (ioctl(fd_, FGDS_IOCTL_QUERY, &query) != 0) {
    const int error = errno;
    *message = path_ + ": route query failed: " + std::strerror(error);
    return -error;
  }
  if (query.p2p_status != 0) *message = RegisterErrorText(query.p2p_status);
  return query.p2p_status;
}

int KmodMapping::Create(std::shared_ptr<KmodNode> node, int dmabuf_fd,
                        uint64_t dmabuf_offset, uint64_t size, int storage_fd,
                        std::unique_ptr<KmodMapping>* out,
                        std::string* message) {
  fgds_reg_buffer reg = {};
  reg.dmabuf_fd = dmabuf_fd;
  reg.storage_fd = storage_fd;
  reg.dmabuf_offset = dmabuf_offset;
  reg.size = size;
  if (ioctl(node->fd(), FGDS_IOCTL_REG_BUFFER, &reg) != 0) {
    const int error = errno;
    *message = node->path() + ": registering " + std::to_string(size) +
               " bytes of GPU memory failed: " + RegisterErrorText(-error);
    return -error;
  }
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
                    node->fd(), static_cast<off_t>(reg.token));
  if (data == MAP_FAILED) {
    const int error = errno;
    fgds_unreg_buffer unreg = {};
    unreg.token = reg.token;
    ioctl(node->fd(), FGDS_IOCTL_UNREG_BUFFER, &unreg);
    *message = node->path() +
               ": mmap of a registration failed: " + std::strerror(error);
    return -error;
  }
  out->reset(new KmodMapping(std::move(node), reg.token,
                             static_cast<uint8_t*>(data), size));
  return 0;
}

KmodMapping::~KmodMapping() {
  munmap(data_, size_);
  fgds_unreg_buffer unreg = {};
  unreg.token = token_;
  // Fails only if the token is already gone (the file was closed); there
  // is nothing left to release then.
  ioctl(node_->fd(), FGDS_IOCTL_UNREG_BUFFER, &unreg);
}

std::string RegisterErrorText(int error) {
  switch (-error) {
    case EBADF:
      return "the dma-buf or the storage descriptor is not an open file";
    case ENOTBLK:
      return "the file is not on a block device (no peer-to-peer target)";
    case EREMOTEIO:
      return "no peer-to-peer route between this GPU and the storage device";
    case EOPNOTSUPP:
      return "the GPU driver refused a peer-to-peer attachment of its "
             "memory";
    case ENOSPC:
      return "too many registrations on this fgds device file";
    case E2BIG:
      return "the buffer is larger than the module's max_buffer_size";
    case ERANGE:
      return "the range runs past the end of the dma-buf";
    case EINVAL:
      return "the module rejected the request (unaligned offset or size, or "
             "not a dma-buf)";
    default:
      return std::strerror(-error);
  }
}

}  // namespace fgds::kmod
