if(FGDS_SANITIZE STREQUAL "address")
  # -fno-sanitize=vptr: UBSan's vptr check opens a pipe the first time it
  # meets each dynamic type, so in tests that use up every descriptor on
  # purpose (the daemon must survive that) it reports false "invalid vptr"
  # errors and aborts them; the rest of UBSan stays on.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(FGDS_SANITIZE STREQUAL "thread")
  # -Wno-tsan: the ring's store-load fences (include/fgds/usrbio_ring.h) are
  # required for correctness; TSan cannot model standalone fences and says
  # so as a warning, which -Werror would turn into a build failure.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
  add_link_options(-fsanitize=thread)
elseif(NOT FGDS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "FGDS_SANITIZE must be empty, 'address' or 'thread'")
endif()
