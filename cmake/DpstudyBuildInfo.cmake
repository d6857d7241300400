# What a build is goes into a generated .cpp (not a header), so that a change
# recompiles one small file instead of every LibTorch translation unit. The git
# commit, and whether the checkout has changes not committed, are looked up at
# every build (the dpstudy_build_info target, cmake/DpstudyGitState.cmake):
# provenance must not name a commit for code that differs from it.
set(DPSTUDY_GENERATED_INCLUDE "${PROJECT_BINARY_DIR}/generated/include")
configure_file("${PROJECT_SOURCE_DIR}/cmake/config.hpp.in"
  "${DPSTUDY_GENERATED_INCLUDE}/dpstudy/config.hpp" @ONLY)

find_package(Git QUIET)
set(_dpstudy_git "")
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")  # a folder in a clone, a file in a worktree or submodule
  set(_dpstudy_git "${GIT_EXECUTABLE}")
endif()

# build_info.cpp is written by dpstudy_write_build_info(), once the workloads
# are known (their names go into it): here the parts known at configure time go
# into a template of it, and the git state goes in at each build.
function(dpstudy_write_build_info)
  get_property(names GLOBAL PROPERTY DPSTUDY_WORKLOADS)
  string(REPLACE ";" "\", \"" DPSTUDY_WORKLOAD_NAMES "${names}")
  if(names)
    set(DPSTUDY_WORKLOAD_NAMES "\"${DPSTUDY_WORKLOAD_NAMES}\"")
  endif()
  # Left as placeholders for the build-time step.
  set(DPSTUDY_GIT_COMMIT "@DPSTUDY_GIT_COMMIT@")
  set(DPSTUDY_GIT_CHANGES "@DPSTUDY_GIT_CHANGES@")
  set(template "${PROJECT_BINARY_DIR}/generated/build_info.cpp.in")
  set(output "${PROJECT_BINARY_DIR}/generated/build_info.cpp")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/build_info.cpp.in" "${template}" @ONLY)
  set(state_args "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}" "-DBINARY_DIR=${PROJECT_BINARY_DIR}" "-DGIT=${_dpstudy_git}"
      "-DTEMPLATE=${template}" "-DOUTPUT=${output}" -P "${PROJECT_SOURCE_DIR}/cmake/DpstudyGitState.cmake")
  # Once now, so that the file exists from the start; then at every build.
  execute_process(COMMAND "${CMAKE_COMMAND}" ${state_args} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake/DpstudyGitState.cmake failed (${rc})")
  endif()
  add_custom_target(dpstudy_build_info ALL COMMAND "${CMAKE_COMMAND}" ${state_args}
    BYPRODUCTS "${output}" COMMENT "dpstudy: the git state" VERBATIM)
endfunction()
