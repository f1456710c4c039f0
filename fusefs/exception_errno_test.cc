#include "fusefs/exception_errno.h"

#include <cerrno>
#include <future>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace fgds::fusefs {
namespace {

template <typename E>
std::exception_ptr Thrown(E e) {
  return std::make_exception_ptr(std::move(e));
}

TEST(ExceptionErrnoTest, EachKindHasItsErrno) {
  struct Case {
    const char* name;
    std::exception_ptr exception;
    int expected;
  };
  const Case cases[] = {
      {"bad_alloc", Thrown(std::bad_alloc()), ENOMEM},
      {"bad_array_new_length", Thrown(std::bad_array_new_length()), ENOMEM},
      {"system_error, system category",
       Thrown(std::system_error(EMFILE, std::system_category())), EMFILE},
      {"system_error, generic category",
       Thrown(std::system_error(
           std::make_error_code(std::errc::resource_unavailable_try_again))),
       EAGAIN},
      {"system_error, value 0",
       Thrown(std::system_error(0, std::system_category())), EIO},
      {"system_error, future category",
       Thrown(std::future_error(std::future_errc::no_state)), EIO},
      {"runtime_error", Thrown(std::runtime_error("x")), EIO},
      {"not an std::exception", Thrown(42), EIO},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExceptionErrno(c.exception), c.expected) << c.name;
  }
}

}  // namespace
}  // namespace fgds::fusefs
