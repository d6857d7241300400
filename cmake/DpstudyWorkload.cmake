# dpstudy_add_workload(<name> <sources>...): the executable dpstudy-<name>,
# linked with libdpstudy, installed. Used once in each workloads/<folder>.
function(dpstudy_add_workload name)
  add_executable(dpstudy-${name} ${ARGN})
  target_link_libraries(dpstudy-${name} PRIVATE dpstudy::dpstudy)
  dpstudy_warnings(dpstudy-${name})
  install(TARGETS dpstudy-${name} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endfunction()
