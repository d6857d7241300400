# dpstudy_add_workload(<name> <sources>... MODEL <model sources>...): a workload
# (dpstudy/workload.hpp) as its two programs. dpstudy-<name>, the front end, is
# <sources> (main.cpp: the Workload and main(), no LibTorch) linked with
# dpstudy::front; dpstudy-<name>-engine is <sources> and <model sources>
# (model.cpp: the network and dpstudy::workload_model) linked with
# dpstudy::dpstudy. Both are built into one folder and installed into
# <bindir> and <libexecdir>/dpstudy, where the front end looks for the engine.
# Installed with dpstudy's package config, for workloads of one's own.
include(GNUInstallDirs)

function(dpstudy_add_workload name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "MODEL")
  if(NOT arg_UNPARSED_ARGUMENTS OR NOT arg_MODEL)
    message(FATAL_ERROR "dpstudy_add_workload(${name} ...): give the front end's sources (main.cpp) and, after "
      "MODEL, the model's (model.cpp): dpstudy_add_workload(${name} main.cpp MODEL model.cpp)")
  endif()
  set_property(GLOBAL APPEND PROPERTY DPSTUDY_WORKLOADS ${name})  # for build_info().workloads
  add_library(dpstudy-${name}-main OBJECT ${arg_UNPARSED_ARGUMENTS})
  target_link_libraries(dpstudy-${name}-main PRIVATE dpstudy::front)
  add_executable(dpstudy-${name}-engine $<TARGET_OBJECTS:dpstudy-${name}-main> ${arg_MODEL})
  target_link_libraries(dpstudy-${name}-engine PRIVATE dpstudy::dpstudy)
  add_executable(dpstudy-${name} $<TARGET_OBJECTS:dpstudy-${name}-main>)
  target_link_libraries(dpstudy-${name} PRIVATE dpstudy::front)
  add_dependencies(dpstudy-${name} dpstudy-${name}-engine)  # the front end alone cannot train
  if(COMMAND dpstudy_warnings)  # dpstudy's own build
    foreach(target dpstudy-${name}-main dpstudy-${name}-engine dpstudy-${name})
      dpstudy_warnings(${target})
    endforeach()
  endif()
  install(TARGETS dpstudy-${name} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(TARGETS dpstudy-${name}-engine RUNTIME DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/dpstudy")
endfunction()
