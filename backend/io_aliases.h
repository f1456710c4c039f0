// File: backend/io_aliases.h
//
// The I/O engine (common/io/io_engine.h) under the names backend code and
// its users have always spelled: backend::IoEngine, backend::IoRequest, ...
// The engine lives in fgds_io, which the client library links too, so it
// knows nothing of backends; a backend serves its files' data through one.
// New code may name fgds::io directly.
#ifndef FGDS_BACKEND_IO_ALIASES_H_
#define FGDS_BACKEND_IO_ALIASES_H_

#include "common/io/inline_engine.h"
#include "common/io/io_engine.h"

namespace fgds::backend {

using ::fgds::io::CreateIoEngine;
using ::fgds::io::IoCompletion;
using ::fgds::io::IoEngine;
using ::fgds::io::IoEngineOptions;
using ::fgds::io::IoOp;
using ::fgds::io::IoRequest;
using ::fgds::io::IsSync;
using ::fgds::io::kMaxDefaultWorkers;
using ::fgds::io::RunBlocking;
using ::fgds::io::SubmitAndWait;

}  // namespace fgds::backend

#endif  // FGDS_BACKEND_IO_ALIASES_H_
