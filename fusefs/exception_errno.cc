#include "fusefs/exception_errno.h"

#include <cerrno>
#include <new>
#include <system_error>

namespace fgds::fusefs {

int ExceptionErrno(const std::exception_ptr& exception) noexcept {
  try {
    std::rethrow_exception(exception);
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  } catch (const std::system_error& e) {
    const std::error_category& category = e.code().category();
    const int value = e.code().value();
    // Other categories (futures, iostreams) number their own errors.
    if ((category == std::generic_category() ||
         category == std::system_category()) &&
        value > 0) {
      return value;
    }
    return EIO;
  } catch (...) {
    return EIO;
  }
}

}  // namespace fgds::fusefs
