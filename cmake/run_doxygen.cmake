# cmake -P script: runs Doxygen, then prints its warnings (the log it writes) and fails on any.
#   -DDOXYGEN=<doxygen> -DDOXYFILE=<Doxyfile> -DLOG=<its WARN_LOGFILE>
file(REMOVE ${LOG})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE rc)
set(warnings "")
if(EXISTS ${LOG})
  file(READ ${LOG} warnings)
endif()
if(NOT rc EQUAL 0 OR NOT warnings STREQUAL "")
  message(FATAL_ERROR "Doxygen (exit status ${rc}) warns:\n${warnings}")
endif()
message(STATUS "API reference: no Doxygen warning")
