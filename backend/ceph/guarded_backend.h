// File: backend/ceph/guarded_backend.h
//
// GuardedBackend: a Backend that runs every call of another one through a
// CallGate (call_gate.h), so that no request waits more than the gate's
// timeout: the ceph backend's calls block for as long as the cluster is
// gone. Each call runs on a gate thread with copies of its arguments and
// results of its own (a call given up on may still finish later, and must
// not write where the caller's buffers were): names and values are copied
// in, results copied out, file data bounced through a buffer of the call
// (recycled: bounce_buffers.h). A data call moves its bytes in the gate
// thread that took it (the inner backend's RunIo): one hand-off each.
// Once the gate is dead, every call fails with -ENOTCONN (the daemon's
// requests with it), and the inner backend is never destroyed (its
// teardown, ceph_unmount, would wait for the parked calls).
//
// The request caller (request_caller.h) moves to the gate thread with the
// call.
//
// Reads submitted one at a time into plain memory (no MemoryRegion: the
// FUSE layer's reads) may instead run on the submitting thread, as
// ceph-fuse runs its calls (CallGate::SubmitHere): no hand-off, and the
// reply leaves from that thread. Still bounced and still watched: should
// the gate give up, the watchdog answers the request, and the thread stays
// where the call holds it. At most `here_calls` such calls at once (the
// rest go to the gate's threads), so that a dead cluster holds at most
// that many of the caller's threads (FUSE's: keep it below their number).
#ifndef FGDS_BACKEND_CEPH_GUARDED_BACKEND_H_
#define FGDS_BACKEND_CEPH_GUARDED_BACKEND_H_

#include <chrono>
#include <memory>

#include "backend/backend.h"

namespace fgds::backend {

// `threads`: the calls that may run at once (more wait in the gate's
// queue, and their wait counts towards the timeout); `here_calls`: reads
// that may run on their submitting threads at once (0: none, above).
std::unique_ptr<Backend> GuardBackend(std::unique_ptr<Backend> inner,
                                      unsigned threads,
                                      std::chrono::milliseconds timeout,
                                      unsigned here_calls = 0);

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_CEPH_GUARDED_BACKEND_H_
