// File: common/log.h
//
// Minimal logging for the daemon: to stderr in the foreground, to syslog once
// daemonized (stderr is then /dev/null). Thread-safe.
#ifndef FGDS_COMMON_LOG_H_
#define FGDS_COMMON_LOG_H_

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace fgds {

enum class LogLevel { kInfo, kWarning, kError };

// Route later messages to syslog (ident "fgds") instead of stderr.
void LogToSyslog();
void LogMessage(LogLevel level, absl::string_view message);

template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogMessage(LogLevel::kInfo, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogMessage(LogLevel::kWarning, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogMessage(LogLevel::kError, absl::StrFormat(format, args...));
}

}  // namespace fgds

#endif  // FGDS_COMMON_LOG_H_
