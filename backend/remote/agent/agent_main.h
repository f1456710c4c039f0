// File: backend/remote/agent/agent_main.h
//
// `fgds agent`: serves file extents of a local directory or a CephFS
// subtree to authenticated daemons over TCP until SIGINT or SIGTERM.
//
//   fgds agent --listen HOST:PORT --key FILE
//              (--data DIR | --ceph-conf CONF [--ceph-id NAME]
//               [--ceph-fs NAME] [--ceph-root PATH])
//              [--transport tcp] [--max-connections N]
//
// The RDMA transport is the next step of the RDMA-edge issue; until then
// `--transport rdma` is refused with a message rather than ignored.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_
#define FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_

namespace fgds::remote {

// argv[0] is "agent". Returns the process exit status.
int AgentMain(int argc, char** argv);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_
