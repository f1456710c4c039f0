// File: fusefs/usrbio_limits.h
//
// The usrbio limits a daemon enforces (fusefs/session/user_limits.h): the
// defaults sized from the machine, with what `fgds mount` was given in
// their place. docs/limits.md lists them.
//
// Thread safety: thread-safe (pure functions).
#ifndef FGDS_FUSEFS_USRBIO_LIMITS_H_
#define FGDS_FUSEFS_USRBIO_LIMITS_H_

#include <string>

#include "fusefs/options.h"
#include "fusefs/session/limits_sizing.h"
#include "fusefs/session/user_limits.h"

namespace fgds::fusefs {

// The machine's defaults (session::SizeUserLimits) with every nonzero
// option applied. A per-user limit above its daemon-wide cap is lowered to
// it (the cap would refuse first anyway, but under another name).
session::UserLimitsConfig UsrbioLimits(const DaemonOptions& options,
                                       const session::MachineFacts& facts);

// One line for the daemon's log: every limit and its value.
std::string DescribeUsrbioLimits(const session::UserLimitsConfig& config);

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_USRBIO_LIMITS_H_
