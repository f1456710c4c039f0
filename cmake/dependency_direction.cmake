# Dependency direction (STYLE.md 14), checked twice: at configure time on
# the link graph (fgds_forbid_links), and after the build on the symbols of
# the binaries (cmake/check_no_client_symbols.cmake, the unit test
# deps.daemon_links_no_client), which also catches a client header's code
# compiled into the daemon without a link.

# fgds_link_closure(<target> <out_var>): the project's targets that
# <target> links, directly or through others. Imported targets (abseil,
# liburing, ...) end the walk; entries behind generator expressions other
# than $<LINK_ONLY:...> are not followed (the symbol test covers them).
function(fgds_link_closure target out_var)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue current)
    if(current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(libs ${current} ${property})
      if(NOT libs)
        continue()
      endif()
      foreach(lib IN LISTS libs)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" lib "${lib}")
        if(NOT TARGET "${lib}")
          continue()
        endif()
        get_target_property(aliased ${lib} ALIASED_TARGET)
        if(aliased)
          set(lib ${aliased})
        endif()
        get_target_property(imported ${lib} IMPORTED)
        if(NOT imported)
          list(APPEND queue ${lib})
        endif()
      endforeach()
    endforeach()
  endwhile()
  list(REMOVE_ITEM seen ${target})
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

# fgds_forbid_links(TARGETS <t>... FORBIDDEN <lib>... WHY <text>): a fatal
# configure error when any of TARGETS links any of FORBIDDEN.
function(fgds_forbid_links)
  cmake_parse_arguments(ARG "" "WHY" "TARGETS;FORBIDDEN" ${ARGN})
  foreach(target IN LISTS ARG_TARGETS)
    fgds_link_closure(${target} closure)
    foreach(lib IN LISTS ARG_FORBIDDEN)
      if(lib IN_LIST closure)
        message(FATAL_ERROR
          "${target} links ${lib}: ${ARG_WHY} (STYLE.md 14; the graph is "
          "in the top-level CMakeLists.txt)")
      endif()
    endforeach()
  endforeach()
endfunction()

# The client side: libfgds (direct API), the usrbio client, their GPU
# glue and the dlopen'd CUDA loader.
set(FGDS_CLIENT_LIBRARIES fgds_usrbio fgds_direct fgds_device_ops fgds_cuda)
# The daemon side and the neutral libraries both sides link.
set(FGDS_DAEMON_SIDE fgds fgds_fusefs fgds_session fgds_backend fgds_probe)
set(FGDS_NEUTRAL_LIBRARIES fgds_common fgds_page_cache fgds_kmod_client)

fgds_forbid_links(
  TARGETS ${FGDS_DAEMON_SIDE} ${FGDS_NEUTRAL_LIBRARIES}
  FORBIDDEN ${FGDS_CLIENT_LIBRARIES}
  WHY "the process that serves a mount links no client library and no CUDA loader")
# The client side may link the neutral libraries, never the daemon's.
fgds_forbid_links(
  TARGETS ${FGDS_CLIENT_LIBRARIES}
  FORBIDDEN fgds_fusefs fgds_session fgds_backend
  WHY "the client libraries do not contain the daemon")

if(FGDS_BUILD_TESTS)
  set(check_files "")
  foreach(target IN LISTS FGDS_DAEMON_SIDE FGDS_NEUTRAL_LIBRARIES)
    list(APPEND check_files "$<TARGET_FILE:${target}>")
  endforeach()
  set(client_files "")
  foreach(target IN LISTS FGDS_CLIENT_LIBRARIES)
    list(APPEND client_files "$<TARGET_FILE:${target}>")
  endforeach()
  add_test(NAME deps.daemon_links_no_client
           COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM}
                   "-DCHECK=${check_files}" "-DCLIENT=${client_files}"
                   -P ${CMAKE_CURRENT_LIST_DIR}/check_no_client_symbols.cmake)
  set_tests_properties(deps.daemon_links_no_client PROPERTIES
                       LABELS unit TIMEOUT 120)
endif()
