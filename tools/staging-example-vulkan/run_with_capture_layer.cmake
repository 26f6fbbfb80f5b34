# cmake -P script: runs staging-example-vulkan with the GFXReconstruct capture layer enabled the
# way users enable it (VK_INSTANCE_LAYERS), in a fresh, empty HOME. The loader then warns that the
# environment added a layer; that is not a validation finding, so the example must exit 0, and
# the capture file must have been written (the layer really ran).
#   -DEXAMPLE=<path>     staging-example-vulkan
#   -DWORK_DIR=<dir>     emptied, then holds HOME and the capture file
# Exit status 77 of the example (no Vulkan device) prints "no Vulkan device: skipped".
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/home)
set(capture ${WORK_DIR}/example.gfxr)
set(layer_found OFF)
foreach(dir /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d
    /etc/vulkan/explicit_layer.d)
  if(EXISTS ${dir}/VkLayer_gfxreconstruct.json)
    set(layer_found ON)
  endif()
endforeach()
if(NOT layer_found)
  message(FATAL_ERROR "the GFXReconstruct capture layer is not installed (Debian: gfxreconstruct)")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env HOME=${WORK_DIR}/home XDG_CACHE_HOME=${WORK_DIR}/home/.cache
    VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_gfxreconstruct GFXRECON_CAPTURE_FILE=${capture}
    GFXRECON_CAPTURE_FILE_TIMESTAMP=false ${EXAMPLE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 100)
message("exit status ${rc}\n--- stdout\n${out}--- stderr\n${err}---")
if(rc EQUAL 77)
  message("no Vulkan device: skipped")  # (the test's SKIP_REGULAR_EXPRESSION)
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the example failed with the capture layer enabled (exit status ${rc})")
endif()
if(NOT EXISTS ${capture})
  message(FATAL_ERROR "no capture file ${capture}: the capture layer did not run")
endif()
file(SIZE ${capture} bytes)
message("capture file: ${capture} (${bytes} bytes)")
