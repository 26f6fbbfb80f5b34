# staging_test_labels(<target> <regex> <label>...)
# Gives the GoogleTest cases of <target> whose names match <regex> the labels listed (all of them,
# replacing the one staging_add_test gave; name that one again to keep it). Call it after
# staging_add_test(<target> ...): a CTest include file read after the discovered tests sets the
# property, since gtest_discover_tests takes one label only.
function(staging_test_labels target regex)
  string(REPLACE ";" "\\;" labels "${ARGN}")
  set(file "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${file}"
    "foreach(t IN LISTS ${target}_TESTS)\n"
    "  if(t MATCHES \"${regex}\")\n"
    "    set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${labels}\")\n"
    "  endif()\n"
    "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${file}")
endfunction()
