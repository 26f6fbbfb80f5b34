# The backend switches: STAGING_VULKAN, STAGING_CUDA and STAGING_WEBGPU, each AUTO, ON or OFF.
#
#   AUTO (default)  the backend is built when what it needs is found, and skipped (with a status
#                   line saying what is missing) when it is not;
#   ON              what it needs must be found: configuring fails with the reason otherwise;
#   OFF             the backend is not built, and nothing of it is looked for.
#
# STAGING_CORE_ONLY=ON turns every backend off (and the tools, which need one).

foreach(_backend VULKAN CUDA WEBGPU)
  set(STAGING_${_backend} AUTO CACHE STRING
    "Build staging::${_backend}: AUTO (when its SDK is found), ON (required), OFF")
  set_property(CACHE STAGING_${_backend} PROPERTY STRINGS AUTO ON OFF)
endforeach()
unset(_backend)

# staging_backend_mode(<BACKEND> <out-var>): AUTO, ON or OFF for a backend, after STAGING_CORE_ONLY
# and the usual spellings of true and false (YES, 1, FALSE, ...). Anything else fails configuring.
function(staging_backend_mode backend out)
  string(TOUPPER "${STAGING_${backend}}" mode)
  if(mode MATCHES "^(ON|YES|TRUE|Y|1|REQUIRED)$")
    set(mode ON)
  elseif(mode MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(mode OFF)
  elseif(NOT mode STREQUAL "AUTO")
    message(FATAL_ERROR "STAGING_${backend}=${STAGING_${backend}}: use AUTO, ON or OFF")
  endif()
  if(STAGING_CORE_ONLY)
    set(mode OFF)
  endif()
  set(${out} ${mode} PARENT_SCOPE)
endfunction()

# staging_backend_missing(<BACKEND> <what is missing>): the backend cannot be built here. Fails
# configuring under STAGING_<BACKEND>=ON; says so (and the caller skips the backend) under AUTO.
function(staging_backend_missing backend what)
  staging_backend_mode(${backend} mode)
  string(TOLOWER ${backend} name)
  if(mode STREQUAL "ON")
    message(FATAL_ERROR "STAGING_${backend}=ON, but staging::${name} cannot be built: ${what}")
  endif()
  message(STATUS "staging: staging::${name} is not built: ${what} (STAGING_${backend}=AUTO)")
endfunction()

# staging_add_backend(<component> <source>...): the library of backend <component>: target
# staging_<component> (alias staging::<component>, exported as <component>), position-independent,
# on staging_core, with the project's warnings (staging_target_defaults), and installed with its
# headers and package component (staging_install_backend). The caller adds what else it needs.
function(staging_add_backend component)
  set(target staging_${component})
  add_library(${target} ${ARGN})
  add_library(staging::${component} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${component} POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(${target} PUBLIC staging_core)
  staging_target_defaults(${target})
  staging_install_backend(${target} ${component})
endfunction()

# staging_install_backend(<target> <component>): installs a backend library, its public headers
# (include/staging/<component>/ and include/staging/<component>.hpp when present), its internal
# headers that those include (include/staging/detail/<component>/ when present) and its package
# component (staging-<component>.cmake, which finds the backend's dependencies, and the exported
# target in staging-<component>-targets.cmake). find_package(staging COMPONENTS <component>)
# loads them.
function(staging_install_backend target component)
  install(TARGETS ${target} EXPORT staging_${component}_targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT staging_${component}_targets NAMESPACE staging::
    FILE staging-${component}-targets.cmake DESTINATION ${STAGING_INSTALL_CMAKEDIR})
  install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/staging-${component}.cmake
    DESTINATION ${STAGING_INSTALL_CMAKEDIR})
  set(headers ${STAGING_SOURCE_ROOT}/include/staging)
  install(DIRECTORY ${headers}/${component} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/staging)
  if(EXISTS ${headers}/detail/${component})
    install(DIRECTORY ${headers}/detail/${component}
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/staging/detail)
  endif()
  if(EXISTS ${headers}/${component}.hpp)
    install(FILES ${headers}/${component}.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/staging)
  endif()
  set_property(GLOBAL APPEND PROPERTY STAGING_INSTALLED_COMPONENTS ${component})
endfunction()

# staging_install_package(): the package files next to the exported targets: stagingConfig.cmake
# (components: core, testing and the backends this build installed) and its version file; and
# the target staging-libraries, which builds every library `cmake --install` installs (so a build
# of a few targets, e.g. scripts/demo's, plus staging-libraries can be installed).
function(staging_install_package)
  include(CMakePackageConfigHelpers)
  get_property(STAGING_COMPONENTS GLOBAL PROPERTY STAGING_INSTALLED_COMPONENTS)
  set(libraries staging_core)
  foreach(component IN LISTS STAGING_COMPONENTS)
    list(APPEND libraries staging_${component})
  endforeach()
  add_custom_target(staging-libraries)
  add_dependencies(staging-libraries ${libraries})
  configure_package_config_file(${STAGING_SOURCE_ROOT}/cmake/stagingConfig.cmake.in
    ${PROJECT_BINARY_DIR}/stagingConfig.cmake
    INSTALL_DESTINATION ${STAGING_INSTALL_CMAKEDIR})
  # From 1.0 on a major version keeps the API (SameMajorVersion); before it, each 0.x minor
  # version may break it, so only the same minor version is compatible.
  if(STAGING_VERSION VERSION_LESS 1.0)
    set(compatibility SameMinorVersion)
  else()
    set(compatibility SameMajorVersion)
  endif()
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/stagingConfigVersion.cmake
    VERSION ${STAGING_VERSION} COMPATIBILITY ${compatibility})
  install(FILES ${PROJECT_BINARY_DIR}/stagingConfig.cmake
    ${PROJECT_BINARY_DIR}/stagingConfigVersion.cmake DESTINATION ${STAGING_INSTALL_CMAKEDIR})
endfunction()
