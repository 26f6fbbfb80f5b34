# Component "cuda" of the installed staging package, loaded by stagingConfig.cmake when asked for:
# staging::cuda needs the CUDA toolkit's runtime (CUDA::cudart_static).
if(NOT TARGET CUDA::cudart_static)
  find_package(CUDAToolkit QUIET)
endif()
if(NOT TARGET CUDA::cudart_static)
  set(staging_cuda_FOUND FALSE)
  set(staging_cuda_NOT_FOUND_REASON "the CUDA toolkit was not found (set CUDAToolkit_ROOT)")
  return()
endif()
include("${CMAKE_CURRENT_LIST_DIR}/staging-cuda-targets.cmake")
set(staging_cuda_FOUND TRUE)
