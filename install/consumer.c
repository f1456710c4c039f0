/* consumer: a C program as an application writes it against the installed
 * fgds (pkg-config or find_package(fgds)); install_test.sh builds it both
 * ways and runs it. It calls into both libraries, so a missing export or a
 * broken soname fails the link or the run. */
#include <errno.h>
#include <fgds/fgds.h>
#include <fgds/usrbio.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  struct fgds_session session;
  /* "/" is no fgds mount. */
  int ret = fgds_session_open(&session, "/", NULL);
  if (ret != -ENOTSUP) {
    fprintf(stderr, "consumer: fgds_session_open: %d, want -ENOTSUP\n", ret);
    return 1;
  }
  fgds_driver* driver = NULL;
  ret = fgds_driver_open(&driver, NULL);
  if (ret == 0) {
    fgds_driver_close(driver);
  } else if (ret != -ENODEV && ret != -EINVAL) {
    /* -ENODEV: no GPU; -EINVAL: a GPU, but no current context. */
    fprintf(stderr, "consumer: fgds_driver_open: %s (%s)\n", strerror(-ret),
            fgds_last_error());
    return 1;
  }
  struct fgds_ring_layout layout;
  if (fgds_ring_get_layout(100, &layout) != 0 || layout.sq_entries != 128) {
    fprintf(stderr, "consumer: fgds_ring_get_layout\n");
    return 1;
  }
  printf("consumer: ok\n");
  return 0;
}
