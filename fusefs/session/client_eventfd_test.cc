#include "fusefs/session/client_eventfd.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "gtest/gtest.h"

namespace fgds::session {
namespace {

// The watchdog rescues a completion-eventfd write only when the write
// really blocks (the client filled the counter), never one that is merely
// slow: reading the counter back takes the client's wakeup.
TEST(ClientEventfdTest, AWriteWouldBlockOnlyAtTheMaximumCount) {
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  EXPECT_FALSE(EventfdWriteWouldBlock(efd)) << "empty";
  uint64_t value = 5;
  ASSERT_EQ(write(efd, &value, sizeof(value)), 8);
  EXPECT_FALSE(EventfdWriteWouldBlock(efd)) << "5";
  value = 0xfffffffffffffffeull - 5;
  ASSERT_EQ(write(efd, &value, sizeof(value)), 8);
  EXPECT_TRUE(EventfdWriteWouldBlock(efd)) << "full";
  value = 1;
  EXPECT_EQ(write(efd, &value, sizeof(value)), -1) << "a write would block";
  EXPECT_EQ(ReadEventfdNoWait(efd), 0xfffffffffffffffeull);
  EXPECT_FALSE(EventfdWriteWouldBlock(efd)) << "read back";
  close(efd);
}

TEST(ClientEventfdTest, AnUnreadableCountCountsAsBlocking) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_TRUE(EventfdWriteWouldBlock(fds[0])) << "not an eventfd";
  close(fds[0]);
  close(fds[1]);
  EXPECT_TRUE(EventfdWriteWouldBlock(fds[0])) << "closed";
}

// A write in progress that would not block is left alone however long it
// has been pending; one that would block is rescued.
TEST(ClientEventfdTest, SignalOnAnEventfdWithRoomIsNeverRescued) {
  const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(efd, 0);
  EventfdWriteWatch watch;
  // Nothing in progress: nothing to rescue, whatever the clock says.
  watch.RescueIfStalled(UINT64_MAX, 0);
  EXPECT_TRUE(watch.Signal(efd));
  EXPECT_EQ(ReadEventfdNoWait(efd), 1u) << "the signal is the client's";
  close(efd);
}

}  // namespace
}  // namespace fgds::session
