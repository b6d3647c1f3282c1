# Writes the live page (docs/design.md §15) as a C++ raw string, so the binary serves it without any file:
# cmake -DINPUT=page.html -DOUTPUT=ui_page_html.hpp -DNAME=ui_page_html -P embed.cmake
file(READ "${INPUT}" text)
set(delim "dualpath_ui")
string(FIND "${text}" ")${delim}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's end marker )${delim}\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "#pragma once\n// Generated from cluster/ui/page.html by cluster/ui/embed.cmake; edit the page, not this.\n"
  "namespace dualpath::observe {\ninline constexpr const char ${NAME}[] = R\"${delim}(${text})${delim}\";\n}\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
