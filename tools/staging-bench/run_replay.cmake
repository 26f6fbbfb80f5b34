# cmake -P script: staging-bench --backend vulkan --validate --replay TRACE [more arguments], in
# a fresh, empty HOME. Fails with a clear message when TRACE does not exist (an imported capture
# made by a fixture that did not run); exit status 77 of the bench (no Vulkan device) prints
# "no Vulkan device: skipped" (the test's SKIP_REGULAR_EXPRESSION).
#   -DBENCH=<path>       staging-bench
#   -DTRACE=<file>       the trace
#   -DWORK_DIR=<dir>     emptied, then holds HOME and the JSON report (replay.json)
#   -DARGS=<a;b;...>     more arguments (optional)
#   -DEXPECT_ROUTES=<r;...>  routes that must each have a table row (optional)
if(NOT EXISTS "${TRACE}")
  message(FATAL_ERROR "no trace at ${TRACE}: it is made by the gfxr_imports fixture "
    "(staging-sim --gfxr ... --export-trace); did that fixture run and pass?")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/home)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env HOME=${WORK_DIR}/home XDG_CACHE_HOME=${WORK_DIR}/home/.cache
    ${BENCH} --backend vulkan --validate --replay ${TRACE} --json ${WORK_DIR}/replay.json ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
message("exit status ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
if(rc EQUAL 77)
  message("no Vulkan device: skipped")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "staging-bench --replay ${TRACE} failed (exit status ${rc})")
endif()
if(out MATCHES "MISMATCH" OR NOT out MATCHES "replay")
  message(FATAL_ERROR "the replay's byte check did not pass on every row")
endif()
foreach(route ${EXPECT_ROUTES})
  if(NOT out MATCHES "\n(ring|app) +${route} ")
    message(FATAL_ERROR "no table row for the route ${route}")
  endif()
endforeach()
