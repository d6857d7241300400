# dpstudy_add_workload(<name> <sources>...): the executable dpstudy-<name>,
# linked with libdpstudy, installed. Used once in each workloads/<folder>.
function(dpstudy_add_workload name)
  set_property(GLOBAL APPEND PROPERTY DPSTUDY_WORKLOADS ${name})  # for build_info().workloads
  add_executable(dpstudy-${name} ${ARGN})
  target_link_libraries(dpstudy-${name} PRIVATE dpstudy::dpstudy)
  dpstudy_warnings(dpstudy-${name})
  install(TARGETS dpstudy-${name} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endfunction()

# dpstudy_workload_check(<name> <label> <dataset> <min-accuracy> <args>...):
# the workload's correctness mode as a CTest test (label e2e): train on the
# real <dataset> and require a final test accuracy of at least <min-accuracy>.
# Skipped, not passed, where the dataset is absent.
function(dpstudy_workload_check name label dataset min_accuracy)
  if(NOT DPSTUDY_BUILD_TESTS)
    return()
  endif()
  set(test workload_${name}_${label})
  add_test(NAME ${test} COMMAND "${PROJECT_SOURCE_DIR}/tests/e2e/with-dataset" $<TARGET_FILE:dpstudy-data>
    ${dataset} $<TARGET_FILE:dpstudy-${name}> --dataset ${dataset} --expect_accuracy ${min_accuracy} ${ARGN})
  set_tests_properties(${test} PROPERTIES LABELS e2e SKIP_RETURN_CODE 77 TIMEOUT 600)
endfunction()
