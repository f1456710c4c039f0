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
