/* cufile.h compiles as strict C11 (liburing's test_build.c). */
#include <cufile.h>

int cufile_header_c_build(void) {
  CUfileDescr_t descr = {CU_FILE_HANDLE_TYPE_OPAQUE_FD, {0}, NULL};
  return descr.type == CU_FILE_HANDLE_TYPE_OPAQUE_FD ? 0 : 1;
}
