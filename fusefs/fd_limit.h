// File: fusefs/fd_limit.h
//
// RaiseFdLimit: the daemon's descriptor limit, raised at start to what the
// system allows. Each open file costs the daemon two descriptors (its main
// one and an O_DIRECT twin) and each session a few more, so the inherited
// limit (a hard limit of 20,000 when started without systemd, as
// deploy/setup.sh does in containers and CI; 1,024 in many shells) would
// cap the files all users together may hold open.
#ifndef FGDS_FUSEFS_FD_LIMIT_H_
#define FGDS_FUSEFS_FD_LIMIT_H_

#include <sys/resource.h>

namespace fgds::fusefs {

// Raises RLIMIT_NOFILE, soft and hard, to fs.nr_open (the kernel's ceiling
// for any process; raising the hard limit needs CAP_SYS_RESOURCE, which the
// root daemon has). Without the privilege, raises the soft limit to the
// hard one. Returns the soft limit in effect afterwards.
rlim_t RaiseFdLimit();

}  // namespace fgds::fusefs

#endif  // FGDS_FUSEFS_FD_LIMIT_H_
