/* Compiles the public usrbio headers as C11 (liburing's test_build.c): a
 * C++-only construct in them breaks this build. */
#include "fgds/usrbio.h"
#include "fgds/usrbio_ring.h"
#include "fgds/usrbio_wire.h"

int fgds_c_build_layout_entries(void);
int fgds_c_build_layout_entries(void) {
  struct fgds_ring_layout layout;
  return fgds_ring_get_layout(100, &layout) == 0 ? (int)layout.sq_entries : -1;
}

/* A DIRECT reply's kind never reads as a BOUNCE reason (the client tells
 * them apart by path, but one table of values keeps them apart too). */
FGDS_STATIC_ASSERT(FGDS_IOV_GPU_DIRECT_NIC_ONLY > FGDS_IOV_GPU_REASON_MAX,
                   "DIRECT kind collides with a bounce reason");
