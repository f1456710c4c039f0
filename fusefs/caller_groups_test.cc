#include "fusefs/caller_groups.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

using Groups = std::vector<gid_t>;

TEST(ParseStatusGroupsTest, Lines) {
  struct Case {
    const char* text;
    bool ok;
    Groups groups;
  } cases[] = {
      {"Name:\tx\nUid:\t1\t1\t1\t1\nGroups:\t4 24 100 \nNStgid:\t9\n",
       true,
       {4, 24, 100}},
      {"Groups:\t4294967294\n", true, {4294967294u}},
      {"Name:\tx\nGroups:\t\nNStgid:\t9\n", true, {}},
      {"Name:\tx\nGroups:\n", true, {}},
      // Cut off by the buffer: the reader must read more.
      {"Name:\tx\nGroups:\t4 24 10", false, {}},
      {"Name:\tx\nNStgid:\t9\n", false, {}},
      {"Name:\tx\nGroups:\t4 x 10\n", false, {}},
      {"Name:\tx\nGroups:\t4 99999999999\n", false, {}},
      {"Name:\tx\nXGroups:\t4\n", false, {}},
      {"", false, {}},
  };
  for (const Case& c : cases) {
    Groups groups = {7};
    EXPECT_EQ(ParseStatusGroups(c.text, &groups), c.ok) << c.text;
    EXPECT_EQ(groups, c.groups) << c.text;
  }
}

TEST(ThreadGroupsTest, NoSuchThread) {
  Groups groups = {7};
  EXPECT_EQ(ThreadGroups(0, &groups), -ESRCH);
  EXPECT_TRUE(groups.empty());
  EXPECT_EQ(ThreadGroups(-5, &groups), -ESRCH);
}

// A thread whose groups the test sets (setgroups as a raw syscall changes
// the calling thread only), between the test's reads.
class GroupsThread {
 public:
  GroupsThread() : thread_([this] { Run(); }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return tid_ != 0; });
  }
  ~GroupsThread() { Stop(); }

  pid_t tid() const { return tid_; }
  // setgroups(groups) on the thread; its -errno or 0.
  int Set(const Groups& groups) {
    return Do([&] {
      return syscall(SYS_setgroups, groups.size(), groups.data()) == 0 ? 0
                                                                       : -errno;
    });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    Do([this] {
      stop_ = true;
      return 0;
    });
    thread_.join();
  }

 private:
  int Do(std::function<int()> job) {
    std::unique_lock<std::mutex> lock(mu_);
    job_ = std::move(job);
    cv_.notify_all();
    cv_.wait(lock, [this] { return !job_; });
    return result_;
  }
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    tid_ = static_cast<pid_t>(syscall(SYS_gettid));
    cv_.notify_all();
    while (!stop_) {
      cv_.wait(lock, [this] { return static_cast<bool>(job_); });
      result_ = job_();
      job_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  bool stop_ = false;
  std::function<int()> job_;
  int result_ = 0;
  std::thread thread_;
};

TEST(ThreadGroupsTest, ADroppedGroupIsGoneAtTheNextRead) {
  if (geteuid() != 0) GTEST_SKIP() << "setgroups needs root";
  GroupsThread caller;
  ASSERT_EQ(caller.Set({100, 200, 300}), 0);
  Groups groups;
  ASSERT_EQ(ThreadGroups(caller.tid(), &groups), 0);
  EXPECT_EQ(groups, (Groups{100, 200, 300}));
  // The second read goes through the file the first one left open: it must
  // see the thread as it is now, not as it was.
  ASSERT_EQ(caller.Set({200}), 0);
  ASSERT_EQ(ThreadGroups(caller.tid(), &groups), 0);
  EXPECT_EQ(groups, (Groups{200}));
  ASSERT_EQ(caller.Set({}), 0);
  ASSERT_EQ(ThreadGroups(caller.tid(), &groups), 0);
  EXPECT_TRUE(groups.empty());
}

TEST(ThreadGroupsTest, EachThreadHasItsOwnGroups) {
  if (geteuid() != 0) GTEST_SKIP() << "setgroups needs root";
  GroupsThread a, b;
  ASSERT_EQ(a.Set({11}), 0);
  ASSERT_EQ(b.Set({22, 23}), 0);
  Groups groups;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(ThreadGroups(a.tid(), &groups), 0);
    EXPECT_EQ(groups, (Groups{11}));
    ASSERT_EQ(ThreadGroups(b.tid(), &groups), 0);
    EXPECT_EQ(groups, (Groups{22, 23}));
  }
}

TEST(ThreadGroupsTest, AThreadThatExitedIsNotRead) {
  GroupsThread caller;
  const pid_t tid = caller.tid();
  Groups groups;
  ASSERT_EQ(ThreadGroups(tid, &groups), 0);  // its file is now kept open
  caller.Stop();
  // Joined and reaped: the kept file fails, and the number names no thread
  // (unless the pid space wrapped meanwhile).
  EXPECT_EQ(ThreadGroups(tid, &groups), -ESRCH);
  EXPECT_TRUE(groups.empty());
}

TEST(ThreadGroupsTest, MoreCallersThanOpenFiles) {
  if (geteuid() != 0) GTEST_SKIP() << "setgroups needs root";
  std::vector<std::unique_ptr<GroupsThread>> callers;
  for (int i = 0; i < kMaxOpenPerThread + 3; ++i) {
    callers.push_back(std::make_unique<GroupsThread>());
    ASSERT_EQ(callers.back()->Set({static_cast<gid_t>(1000 + i)}), 0);
  }
  Groups groups;
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < callers.size(); ++i) {
      ASSERT_EQ(ThreadGroups(callers[i]->tid(), &groups), 0);
      EXPECT_EQ(groups, (Groups{static_cast<gid_t>(1000 + i)}));
    }
  }
}

TEST(ThreadGroupsTest, ManyGroupsPastTheFirstRead) {
  if (geteuid() != 0) GTEST_SKIP() << "setgroups needs root";
  GroupsThread caller;
  Groups many;
  // 2000 groups of 8 digits: about 18 KiB of Groups line.
  for (gid_t g = 0; g < 2000; ++g) many.push_back(10000000 + g);
  ASSERT_EQ(caller.Set(many), 0);
  Groups groups;
  ASSERT_EQ(ThreadGroups(caller.tid(), &groups), 0);
  EXPECT_EQ(groups, many);
}

}  // namespace
}  // namespace fgds::fusefs
