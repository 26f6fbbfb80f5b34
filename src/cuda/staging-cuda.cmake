# Component "cuda" of the installed staging package, loaded by stagingConfig.cmake when asked for:
# staging::cuda needs the CUDA toolkit's runtime (CUDA::cudart_static). Sets
# _staging_missing_dependency when it is not found (stagingConfig.cmake loads the target otherwise).
if(NOT TARGET CUDA::cudart_static)
  find_package(CUDAToolkit QUIET)
endif()
if(NOT TARGET CUDA::cudart_static)
  set(_staging_missing_dependency "the CUDA toolkit was not found (set CUDAToolkit_ROOT)")
endif()
