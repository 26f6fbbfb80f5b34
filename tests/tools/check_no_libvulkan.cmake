# cmake -P script: no binary of the build needs libvulkan when it starts. Runs readelf -d (or
# objdump -p) over every ELF file in BIN_DIR and every shared library under BUILD_DIR, and fails on
# a NEEDED entry naming libvulkan. The library, the tools and the tests load the Vulkan loader at
# run time, when Vulkan is asked for.
#   -DBUILD_DIR=<build tree> -DBIN_DIR=<its bin/> -DREADELF=<readelf> -DOBJDUMP=<objdump>
#   -DREQUIRED=<files that must be among them (the Vulkan binaries)>
file(GLOB candidates LIST_DIRECTORIES false ${BIN_DIR}/*)
file(GLOB_RECURSE libraries LIST_DIRECTORIES false ${BUILD_DIR}/*.so ${BUILD_DIR}/*.so.*)
list(APPEND candidates ${libraries} ${REQUIRED})
list(REMOVE_DUPLICATES candidates)
foreach(f ${REQUIRED})
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "${f} was not built")
  endif()
endforeach()
set(checked 0)
set(bad "")
foreach(f ${candidates})
  file(READ ${f} magic LIMIT 4 HEX)
  if(NOT magic STREQUAL "7f454c46")  # not ELF
    continue()
  endif()
  if(READELF)
    execute_process(COMMAND ${READELF} -d ${f} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc
      ERROR_QUIET)
  else()
    execute_process(COMMAND ${OBJDUMP} -p ${f} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc
      ERROR_QUIET)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot read ${f}")
  endif()
  math(EXPR checked "${checked} + 1")
  if(dynamic MATCHES "NEEDED[^\n]*libvulkan[^\n]*")
    list(APPEND bad "${f}: ${CMAKE_MATCH_0}")
  endif()
endforeach()
message("checked ${checked} ELF files")
if(bad)
  list(JOIN bad "\n  " bad)
  message(FATAL_ERROR "needs libvulkan at start:\n  ${bad}")
endif()
if(checked EQUAL 0)
  message(FATAL_ERROR "no ELF file found in ${BIN_DIR}")
endif()
