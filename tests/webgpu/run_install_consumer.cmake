# cmake -P script: install the Emscripten sub-build into a scratch prefix, then configure and build
# an Emscripten consumer project that finds it (find_package(staging), staging::webgpu).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
macro(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "webgpu install test failed at: ${ARGN}")
  endif()
endmacro()
step(${CMAKE_COMMAND} --install ${WASM_DIR} --prefix ${prefix})
# Emscripten's toolchain searches packages only under its sysroot: name the package directly.
set(env ${CMAKE_COMMAND} -E env)
if(NODE_MODULES)
  list(APPEND env NODE_PATH=${NODE_MODULES})
endif()
step(${env} ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-build
     -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN} -DCMAKE_BUILD_TYPE=Release
     -Dstaging_DIR=${prefix}/lib/cmake/staging)
step(${env} ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build)
if(NOT EXISTS ${WORK_DIR}/consumer-build/consumer.wasm)
  message(FATAL_ERROR "the consumer page was not linked")
endif()
