# Run by the dpstudy_build_info target at every build (cmake -P): fills the git
# commit and whether the checkout has uncommitted changes into build_info.cpp.
# configure_file rewrites the file only when its text changes, so an unchanged
# state recompiles and relinks nothing.
# -D SOURCE_DIR, BINARY_DIR, GIT (empty outside a git checkout), TEMPLATE, OUTPUT
set(DPSTUDY_GIT_COMMIT "unknown")
set(DPSTUDY_GIT_CHANGES "unknown")
if(GIT)
  execute_process(COMMAND "${GIT}" rev-parse HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    set(DPSTUDY_GIT_COMMIT "${commit}")
    # Changed or new files under the source folder, less a build folder inside
    # it that .gitignore does not name. --no-optional-locks: a build running
    # beside the user's own git commands does not take the index lock.
    set(pathspec ".")
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${BINARY_DIR}")
    if(rel AND NOT rel MATCHES "^\\.\\./")
      list(APPEND pathspec ":(exclude)${rel}")
    endif()
    execute_process(COMMAND "${GIT}" --no-optional-locks status --porcelain --untracked-files=normal -- ${pathspec}
      WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE status ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0)
      if(status STREQUAL "")
        set(DPSTUDY_GIT_CHANGES "none")
      else()
        set(DPSTUDY_GIT_CHANGES "uncommitted")
      endif()
    endif()
  endif()
endif()
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
