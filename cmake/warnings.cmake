# Warnings are errors for our own targets only (fgds_target_warnings), never
# for third-party headers, which come in as SYSTEM includes.
function(fgds_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor -Wno-unused-parameter
    $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety>)
endfunction()
