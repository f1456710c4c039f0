#include "backend/remote/frame_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <vector>

#include "backend/remote/crc32c.h"

namespace fgds::remote {

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

int64_t DeadlineFrom(int timeout_ms) {
  return timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
}

FrameStream::FrameStream(int fd) : fd_(fd) {
  int flags = fcntl(fd_, F_GETFL);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

FrameStream::~FrameStream() {
  if (fd_ >= 0) close(fd_);
}

void FrameStream::Shutdown() { shutdown(fd_, SHUT_RDWR); }

int FrameStream::WaitFor(short events, int64_t deadline_ms) {
  for (;;) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - NowMs();
      if (left <= 0) return -ETIMEDOUT;
      timeout = static_cast<int>(left);
    }
    struct pollfd p = {fd_, events, 0};
    int n = poll(&p, 1, timeout);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -errno;
    if (n == 0) return -ETIMEDOUT;
    return 0;  // ready, or an error/hangup the next call reports
  }
}

int FrameStream::Send(FrameType type, uint64_t request_id,
                      std::span<const struct iovec> parts, int timeout_ms) {
  const int64_t deadline = DeadlineFrom(timeout_ms);
  FrameHeader header;
  header.type = type;
  header.request_id = request_id;
  uint64_t total = 0;
  uint32_t crc = 0;
  for (const struct iovec& part : parts) {
    total += part.iov_len;
    if (checked_) crc = Crc32c(crc, part.iov_base, part.iov_len);
  }
  if (total > kMaxPayloadBytes) return -EMSGSIZE;
  header.payload_len = static_cast<uint32_t>(total);
  if (checked_) {
    header.flags = kFrameChecked;
    header.payload_crc = crc;
  }
  uint8_t head[kFrameHeaderSize];
  EncodeHeader(header, head);

  std::vector<struct iovec> iov;
  iov.reserve(parts.size() + 1);
  iov.push_back({head, sizeof(head)});
  for (const struct iovec& part : parts) {
    if (part.iov_len > 0) iov.push_back(part);
  }
  size_t first = 0;
  while (first < iov.size()) {
    // sendmsg, not writev: MSG_NOSIGNAL keeps a closed peer from raising
    // SIGPIPE in a daemon that serves others.
    struct msghdr msg = {};
    msg.msg_iov = &iov[first];
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        if (int rc = WaitFor(POLLOUT, deadline); rc != 0) return rc;
        continue;
      }
      return -errno;
    }
    size_t sent = static_cast<size_t>(n);
    while (first < iov.size() && sent >= iov[first].iov_len) {
      sent -= iov[first].iov_len;
      ++first;
    }
    if (sent > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + sent;
      iov[first].iov_len -= sent;
    }
  }
  return 0;
}

int FrameStream::ReadFully(void* out, size_t size, int64_t deadline_ms) {
  auto* p = static_cast<uint8_t*>(out);
  size_t got = 0;
  while (got < size) {
    ssize_t n = recv(fd_, p + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return -ECONNRESET;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return -errno;
    if (int rc = WaitFor(POLLIN, deadline_ms); rc != 0) return rc;
  }
  return 0;
}

int FrameStream::ReceiveHeader(FrameHeader* header, uint32_t max_payload,
                               int timeout_ms) {
  if (payload_left_ != 0) return -EPROTO;  // the last payload was not read
  uint8_t head[kFrameHeaderSize];
  if (int rc = ReadFully(head, sizeof(head), DeadlineFrom(timeout_ms));
      rc != 0) {
    return rc;
  }
  if (int rc = DecodeHeader(head, header); rc != 0) return rc;
  if (header->payload_len > max_payload) return -EMSGSIZE;
  const bool has_crc = (header->flags & kFrameChecked) != 0;
  if (checked_ && !has_crc) return -EBADMSG;
  payload_left_ = header->payload_len;
  payload_is_checked_ = has_crc;
  expected_crc_ = header->payload_crc;
  crc_ = 0;
  return 0;
}

int FrameStream::ReceivePayload(void* out, size_t size, int timeout_ms) {
  if (size > payload_left_) return -EPROTO;
  if (int rc = ReadFully(out, size, DeadlineFrom(timeout_ms)); rc != 0) {
    return rc;
  }
  if (payload_is_checked_) crc_ = Crc32c(crc_, out, size);
  payload_left_ -= size;
  return 0;
}

int FrameStream::FinishPayload() {
  if (payload_left_ != 0) return -EPROTO;
  if (payload_is_checked_ && crc_ != expected_crc_) return -EBADMSG;
  return 0;
}

}  // namespace fgds::remote
