// File: backend/remote/agent/agent_main.h
//
// `fgds agent`: serves file extents of a local directory to authenticated
// daemons over TCP until SIGINT or SIGTERM.
//
//   fgds agent --listen HOST:PORT --data DIR --key FILE
//              [--transport tcp] [--max-connections N] [--checked-only]
//
// The CephFS store (--ceph-conf) and the RDMA transport are the next steps
// of the RDMA-edge issue; until then the agent says so and exits rather
// than accepting the flags.
#ifndef FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_
#define FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_

namespace fgds::remote {

// argv[0] is "agent". Returns the process exit status.
int AgentMain(int argc, char** argv);

}  // namespace fgds::remote

#endif  // FGDS_BACKEND_REMOTE_AGENT_AGENT_MAIN_H_
