# Installed next to stagingConfig.cmake: what staging::cuda needs from the consumer's machine.
find_dependency(CUDAToolkit)
