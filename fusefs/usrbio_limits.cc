#include "fusefs/usrbio_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fgds::fusefs {
namespace {

void Override(uint64_t option, uint64_t* limit) {
  if (option != 0) *limit = option;
}

}  // namespace

session::UserLimitsConfig UsrbioLimits(const DaemonOptions& options,
                                       const session::MachineFacts& facts) {
  session::UserLimitsConfig config = session::SizeUserLimits(facts);
  session::Usage& user = config.per_user;
  Override(options.user_sessions, &user.sessions);
  Override(options.user_rings, &user.rings);
  Override(options.user_ring_entries, &user.ring_entries);
  Override(options.user_mappings, &user.mappings);
  Override(options.user_bytes, &user.bytes);
  Override(options.daemon_mappings, &config.daemon_mappings);
  Override(options.daemon_bytes, &config.daemon_bytes);
  Override(options.user_files, &user.files);
  Override(options.daemon_files, &config.daemon_files);
  user.mappings = std::min(user.mappings, config.daemon_mappings);
  user.bytes = std::min(user.bytes, config.daemon_bytes);
  user.files = std::min(user.files, config.daemon_files);
  return config;
}

std::string DescribeUsrbioLimits(const session::UserLimitsConfig& config) {
  const session::Usage& user = config.per_user;
  return absl::StrCat(
      "per user: ", user.sessions, " sessions, ", user.rings, " iors, ",
      user.ring_entries, " ring entries, ", user.mappings, " mappings of ",
      user.bytes >> 20, " MiB, ", user.files,
      " files; all users: ", config.daemon_mappings, " mappings of ",
      config.daemon_bytes >> 20, " MiB, ", config.daemon_files, " files");
}

}  // namespace fgds::fusefs
