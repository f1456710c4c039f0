/* Compiles include/fgds/fgds.h as C11 with -pedantic: a C++-only construct
 * in it breaks this build. */
#include "fgds/fgds.h"

int fgds_direct_c_build_io_size(void);
int fgds_direct_c_build_io_size(void) {
  struct fgds_io io = {0};
  io.opcode = FGDS_OP_READ;
  return (int)sizeof(io) + (int)io.opcode;
}
