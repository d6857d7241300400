# Run by the dpstudy_build_info target at every build (cmake -P): fills the git
# commit and whether the checkout has uncommitted changes into build_info.cpp.
# configure_file rewrites the file only when its text changes, so an unchanged
# state recompiles and relinks nothing.
# -D SOURCE_DIR (the checkout's top folder), BINARY_DIR, GIT (empty outside a
# git checkout), TEMPLATE, OUTPUT
set(DPSTUDY_GIT_COMMIT "unknown")
set(DPSTUDY_GIT_CHANGES "unknown")
if(GIT)
  execute_process(COMMAND "${GIT}" rev-parse HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
    OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    set(DPSTUDY_GIT_COMMIT "${commit}")
    # Changed or new files under the source folder, less a build folder inside
    # it that .gitignore does not name. --no-optional-locks: a build running
    # beside the user's own git commands does not take the index lock. Every
    # file of a new folder, and names as they are (not quoted), for the digest.
    set(pathspec ".")
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${BINARY_DIR}")
    if(rel AND NOT rel MATCHES "^\\.\\./")
      list(APPEND pathspec ":(exclude)${rel}")
    endif()
    execute_process(COMMAND "${GIT}" -c core.quotePath=false --no-optional-locks status --porcelain
      --untracked-files=all -- ${pathspec}
      WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE status ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0)
      if(status STREQUAL "")
        set(DPSTUDY_GIT_CHANGES "none")
      else()
        # Which changes: a digest of each changed file's name and what it holds
        # now (or that it is gone), so that two sets of changes to one commit
        # are told apart, and the same changes give the same digest on any
        # machine. Porcelain paths are relative to the checkout's top folder; a
        # renamed file's line ends with its new name.
        string(REPLACE ";" "\\;" status "${status}")
        string(REPLACE "\n" ";" lines "${status}")
        set(entries "")
        foreach(line IN LISTS lines)
          if(line STREQUAL "")
            continue()
          endif()
          string(SUBSTRING "${line}" 3 -1 path)
          string(FIND "${path}" " -> " arrow REVERSE)
          if(NOT arrow EQUAL -1)
            math(EXPR arrow "${arrow} + 4")
            string(SUBSTRING "${path}" ${arrow} -1 path)
          endif()
          set(content "gone")
          if(EXISTS "${SOURCE_DIR}/${path}" AND NOT IS_DIRECTORY "${SOURCE_DIR}/${path}")
            file(SHA256 "${SOURCE_DIR}/${path}" content)
          elseif(IS_DIRECTORY "${SOURCE_DIR}/${path}")
            set(content "folder")  # a submodule's new commit or a nested checkout
          endif()
          list(APPEND entries "${path} ${content}")
        endforeach()
        list(SORT entries)
        string(SHA256 digest "${entries}")
        string(SUBSTRING "${digest}" 0 12 digest)
        set(DPSTUDY_GIT_CHANGES "uncommitted ${digest}")
      endif()
    endif()
  endif()
endif()
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
