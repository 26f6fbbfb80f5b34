# staging_link_benchmark(<target>): links Google Benchmark into a benchmark executable, with the
# project's main() (tools/support/benchmark_main.cpp: Google Benchmark's flags and --help, an
# unknown argument or an unwritable --benchmark_out refused with exit status 2; it links
# staging_tool_cli, tools/CMakeLists.txt).
#
# Debian ships Google Benchmark only as a shared library (libbenchmark.so.1debian; libbenchmark-dev
# has no libbenchmark.a), and GPU machines that only run what was built elsewhere may lack the
# package. So the library is copied next to the executable
# (build/bin/) under its soname and found there through the executable's RUNPATH $ORIGIN: build/bin
# carries everything its benchmarks need. A static Google Benchmark (another distribution, a
# source build) is linked as it is.
function(staging_link_benchmark target)
  find_package(benchmark REQUIRED)
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tools/support/benchmark_main.cpp)
  target_link_libraries(${target} PRIVATE benchmark::benchmark staging_tool_cli)
  get_target_property(type benchmark::benchmark TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH "\$ORIGIN")
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:benchmark::benchmark>
        $<TARGET_FILE_DIR:${target}>/$<TARGET_SONAME_FILE_NAME:benchmark::benchmark>
      VERBATIM)
  endif()
endfunction()
