#include "common/log.h"

#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

namespace fgds {
namespace {
std::atomic<bool> use_syslog{false};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}
}  // namespace

void LogToSyslog() {
  openlog("fgds", LOG_PID, LOG_DAEMON);
  use_syslog.store(true);
}

void LogMessage(LogLevel level, absl::string_view message) {
  if (use_syslog.load()) {
    int prio = level == LogLevel::kError     ? LOG_ERR
               : level == LogLevel::kWarning ? LOG_WARNING
                                             : LOG_INFO;
    syslog(prio, "%.*s", static_cast<int>(message.size()), message.data());
    return;
  }
  // One fprintf per message keeps lines from different threads whole.
  std::fprintf(stderr, "fgds: %s: %.*s\n", LevelName(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace fgds
