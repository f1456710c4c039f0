# check_no_client_symbols.cmake: fail when a daemon-side binary or library
# defines or references client-library code (STYLE.md 14, DESIGN.md: the
# process that serves a mount links no client library and no CUDA loader).
# Run as a test (cmake -P), after the build:
#
#   cmake -DNM=/usr/bin/nm -DCHECK="fgds;libfgds_session.a"
#         -DCLIENT="libfgds_cuda.a;libfgds_usrbio.a" -P <this file>
#
# CHECK: the executables and archives that must stay clean. CLIENT: the
# client libraries' archives; every strong symbol they define (T, D, B, R)
# is forbidden in CHECK, whether defined there (linked in) or referenced
# (undefined: would pull the client library in). On top of that, by name:
# the client namespaces (fgds::cuda, the dlopen'd CUDA loader;
# fgds::direct, libfgds; fgds::usrbio, the usrbio client) anywhere in a
# demangled symbol, and CUDA driver entry points (cuInit, cuMemAlloc_v2 ...)
# as symbols of their own, which would mean libcuda linked directly.

if(NOT NM OR NOT CHECK OR NOT CLIENT)
  message(FATAL_ERROR "usage: cmake -DNM=nm -DCHECK=files -DCLIENT=archives -P ${CMAKE_CURRENT_LIST_FILE}")
endif()

# Symbol names are identifier characters and '.', '$'; CMake variable names
# take them, so membership is one `if(DEFINED)`.
foreach(archive IN LISTS CLIENT)
  execute_process(COMMAND ${NM} -g --defined-only ${archive}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${archive} failed: ${err}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  set(count 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]* *[TDBR] ([^ ]+)$")
      set("client_symbol_${CMAKE_MATCH_1}" "${archive}")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
  # An empty list would make the check pass vacuously.
  if(count EQUAL 0)
    message(FATAL_ERROR "${archive} defines no symbols: wrong archive?")
  endif()
endforeach()

set(failures "")
foreach(file IN LISTS CHECK)
  execute_process(COMMAND ${NM} ${file}
                  OUTPUT_VARIABLE raw RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${file} failed: ${err}")
  endif()
  execute_process(COMMAND ${NM} -C ${file}
                  OUTPUT_VARIABLE demangled RESULT_VARIABLE rc)
  set(found "")
  string(REGEX MATCHALL "[^\n]+" lines "${raw}")
  foreach(line IN LISTS lines)
    if(line MATCHES " [A-Za-z] ([^ ]+)$")
      set(name "${CMAKE_MATCH_1}")
      if(DEFINED "client_symbol_${name}")
        list(APPEND found "${name} (from ${client_symbol_${name}})")
      elseif(name MATCHES "^cu[A-Z][A-Za-z0-9]*(_v[0-9]+)?$")
        list(APPEND found "${name} (a CUDA driver entry point)")
      endif()
    endif()
  endforeach()
  string(REGEX MATCHALL "[^\n]+" lines "${demangled}")
  foreach(line IN LISTS lines)
    if(line MATCHES "fgds::(cuda|direct|usrbio)::")
      string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" name "${line}")
      list(APPEND found "${name}")
    endif()
  endforeach()
  if(found)
    list(REMOVE_DUPLICATES found)
    list(LENGTH found n)
    list(SUBLIST found 0 20 shown)
    list(JOIN shown "\n    " shown)
    string(APPEND failures
           "\n  ${file}: ${n} client-library symbols, e.g.\n    ${shown}")
  endif()
endforeach()

if(failures)
  message(FATAL_ERROR "daemon-side code links the client library or CUDA "
                      "(STYLE.md 14; DESIGN.md):${failures}")
endif()
list(LENGTH CHECK n)
message(STATUS "${n} daemon-side files are free of client-library symbols")
