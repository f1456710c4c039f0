# Warnings are errors for our own targets only (fgds_target_warnings), never
# for third-party headers, which come in as SYSTEM includes.
function(fgds_target_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
    $<$<CXX_COMPILER_ID:Clang>:-Wthread-safety>)
endfunction()
