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
  # .git is a folder in a clone but a file in a `git worktree` or a submodule:
  # git says where HEAD is (--git-dir) and where the branches are (--git-common-dir).
  set(_git "${PROJECT_SOURCE_DIR}/.git")
  set(_common "${_git}")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --git-dir --git-common-dir
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE _dirs
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _dirs MATCHES "^([^\n]+)\n([^\n]+)$")
    get_filename_component(_git "${CMAKE_MATCH_1}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
    get_filename_component(_common "${CMAKE_MATCH_2}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  endif()
  set(_deps "")
  if(EXISTS "${_git}/HEAD" AND NOT IS_DIRECTORY "${_git}/HEAD")
    list(APPEND _deps "${_git}/HEAD")
    file(READ "${_git}/HEAD" _head)
    if(_head MATCHES "^ref: ([^\n]+)")  # (CMAKE_MATCH_1 is set only once this if has run)
      if(EXISTS "${_common}/${CMAKE_MATCH_1}")
        list(APPEND _deps "${_common}/${CMAKE_MATCH_1}")
      endif()
    endif()
  endif()
  if(EXISTS "${_common}/packed-refs")
    list(APPEND _deps "${_common}/packed-refs")
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
