# The git commit goes into a generated .cpp (not a header), so that a new commit
# recompiles one small file instead of every LibTorch translation unit. CMake
# re-runs when HEAD or the branch it points to moves.
set(DPSTUDY_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE _commit
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _commit)
    set(DPSTUDY_GIT_COMMIT "${_commit}")
  endif()
  set(_git "${PROJECT_SOURCE_DIR}/.git")
  set(_deps "${_git}/HEAD")
  file(READ "${_git}/HEAD" _head)
  if(_head MATCHES "^ref: ([^\n]+)")
    if(EXISTS "${_git}/${CMAKE_MATCH_1}")
      list(APPEND _deps "${_git}/${CMAKE_MATCH_1}")
    endif()
  endif()
  if(EXISTS "${_git}/packed-refs")
    list(APPEND _deps "${_git}/packed-refs")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_deps})
endif()

set(DPSTUDY_GENERATED_INCLUDE "${PROJECT_BINARY_DIR}/generated/include")
configure_file("${PROJECT_SOURCE_DIR}/cmake/config.hpp.in"
  "${DPSTUDY_GENERATED_INCLUDE}/dpstudy/config.hpp" @ONLY)
# build_info.cpp itself is written by dpstudy_write_build_info(), once the
# workloads are known (their names go into it).
function(dpstudy_write_build_info)
  get_property(names GLOBAL PROPERTY DPSTUDY_WORKLOADS)
  string(REPLACE ";" "\", \"" DPSTUDY_WORKLOAD_NAMES "${names}")
  if(names)
    set(DPSTUDY_WORKLOAD_NAMES "\"${DPSTUDY_WORKLOAD_NAMES}\"")
  endif()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/build_info.cpp.in"
    "${PROJECT_BINARY_DIR}/generated/build_info.cpp" @ONLY)
endfunction()
