/* abi_layout: prints the size and every field's offset of each struct that
 * python/fgds/_abi.py mirrors, as JSON, from the C compiler's own view of
 * the public headers. test_abi.py compares them with ctypes'. */
#include <stddef.h>
#include <stdio.h>

#include "fgds/fgds.h"
#include "fgds/usrbio.h"

static int first_struct = 1;
static int first_field;

static void begin(const char* name, size_t size) {
  printf("%s\"%s\": {\"size\": %zu, \"fields\": {", first_struct ? "" : ", ",
         name, size);
  first_struct = 0;
  first_field = 1;
}

static void field(const char* name, size_t offset) {
  printf("%s\"%s\": %zu", first_field ? "" : ", ", name, offset);
  first_field = 0;
}

static void end(void) { printf("}}"); }

#define BEGIN(s) begin(#s, sizeof(struct s))
#define FIELD(s, f) field(#f, offsetof(struct s, f))

int main(void) {
  printf("{");
  BEGIN(fgds_driver_params);
  FIELD(fgds_driver_params, flags);
  FIELD(fgds_driver_params, device);
  FIELD(fgds_driver_params, workers);
  FIELD(fgds_driver_params, reserved0);
  FIELD(fgds_driver_params, chunk_bytes);
  FIELD(fgds_driver_params, staging_bytes);
  FIELD(fgds_driver_params, reserved);
  end();
  BEGIN(fgds_driver_info);
  FIELD(fgds_driver_info, device);
  FIELD(fgds_driver_info, dmabuf_supported);
  FIELD(fgds_driver_info, pci_bus_id);
  FIELD(fgds_driver_info, path);
  FIELD(fgds_driver_info, workers);
  FIELD(fgds_driver_info, chunk_bytes);
  FIELD(fgds_driver_info, staging_bytes);
  FIELD(fgds_driver_info, direct_unavailable);
  FIELD(fgds_driver_info, reserved);
  end();
  BEGIN(fgds_driver_stats);
  FIELD(fgds_driver_stats, ios);
  FIELD(fgds_driver_stats, errors);
  FIELD(fgds_driver_stats, bytes_read);
  FIELD(fgds_driver_stats, bytes_written);
  FIELD(fgds_driver_stats, bytes_bounce);
  FIELD(fgds_driver_stats, bytes_direct);
  FIELD(fgds_driver_stats, bytes_page_cache);
  FIELD(fgds_driver_stats, bytes_o_direct);
  FIELD(fgds_driver_stats, bytes_buffered);
  FIELD(fgds_driver_stats, reserved);
  end();
  BEGIN(fgds_io);
  FIELD(fgds_io, opcode);
  FIELD(fgds_io, flags);
  FIELD(fgds_io, fd);
  FIELD(fgds_io, reserved0);
  FIELD(fgds_io, devptr);
  FIELD(fgds_io, size);
  FIELD(fgds_io, file_offset);
  FIELD(fgds_io, buf_offset);
  FIELD(fgds_io, userdata);
  FIELD(fgds_io, result);
  FIELD(fgds_io, path);
  FIELD(fgds_io, source);
  FIELD(fgds_io, internal);
  FIELD(fgds_io, reserved);
  end();
  BEGIN(fgds_session_params);
  FIELD(fgds_session_params, flags);
  FIELD(fgds_session_params, reserved);
  end();
  BEGIN(fgds_session);
  FIELD(fgds_session, sock);
  FIELD(fgds_session, version);
  FIELD(fgds_session, seq);
  FIELD(fgds_session, last_limit);
  FIELD(fgds_session, lock);
  end();
  BEGIN(fgds_iov_params);
  FIELD(fgds_iov_params, size);
  FIELD(fgds_iov_params, numa_node);
  FIELD(fgds_iov_params, flags);
  FIELD(fgds_iov_params, reserved);
  end();
  BEGIN(fgds_iov);
  FIELD(fgds_iov, base);
  FIELD(fgds_iov, size);
  FIELD(fgds_iov, id);
  FIELD(fgds_iov, memfd);
  FIELD(fgds_iov, session);
  FIELD(fgds_iov, gpu);
  end();
  BEGIN(fgds_iov_gpu_params);
  FIELD(fgds_iov_gpu_params, staging_bytes);
  FIELD(fgds_iov_gpu_params, chunk_bytes);
  FIELD(fgds_iov_gpu_params, flags);
  FIELD(fgds_iov_gpu_params, device);
  FIELD(fgds_iov_gpu_params, reserved0);
  FIELD(fgds_iov_gpu_params, reserved);
  end();
  BEGIN(fgds_ior_params);
  FIELD(fgds_ior_params, entries);
  FIELD(fgds_ior_params, flags);
  FIELD(fgds_ior_params, io_depth);
  FIELD(fgds_ior_params, timeout_us);
  FIELD(fgds_ior_params, priority);
  FIELD(fgds_ior_params, spin_us);
  FIELD(fgds_ior_params, reserved);
  end();
  BEGIN(fgds_ior);
  FIELD(fgds_ior, ring);
  FIELD(fgds_ior, sqes);
  FIELD(fgds_ior, cqes);
  FIELD(fgds_ior, sq_entries);
  FIELD(fgds_ior, cq_entries);
  FIELD(fgds_ior, sq_pending);
  FIELD(fgds_ior, in_flight);
  FIELD(fgds_ior, id);
  FIELD(fgds_ior, spin_us);
  FIELD(fgds_ior, map_size);
  FIELD(fgds_ior, memfd);
  FIELD(fgds_ior, submit_efd);
  FIELD(fgds_ior, complete_efd);
  FIELD(fgds_ior, flags);
  FIELD(fgds_ior, session);
  FIELD(fgds_ior, gpu);
  end();
  BEGIN(fgds_cqe);
  FIELD(fgds_cqe, result);
  FIELD(fgds_cqe, userdata);
  FIELD(fgds_cqe, path);
  FIELD(fgds_cqe, tag);
  end();
  printf("}\n");
  return 0;
}
