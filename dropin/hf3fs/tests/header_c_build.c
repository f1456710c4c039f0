/* hf3fs_usrbio.h compiles as strict C11. */
#include <hf3fs_usrbio.h>

int hf3fs_header_c_build(void) {
  struct hf3fs_cqe cqe = {0, 0, 0, NULL};
  return (int)cqe.result;
}
