# cmake -DGRAMMAR=Hspmd.g4 -DOUT=generated -DANTLR4=/usr/bin/antlr4 -P regenerate.cmake
if(NOT ANTLR4)
  message(FATAL_ERROR "the antlr4 tool is not installed (apt-get install antlr4)")
endif()
get_filename_component(GRAMMAR_DIR ${GRAMMAR} DIRECTORY)
execute_process(COMMAND ${ANTLR4} -Dlanguage=Cpp -no-visitor -no-listener -package hspmd::grammar
                        -o ${OUT} -Xexact-output-dir Hspmd.g4
                WORKING_DIRECTORY ${GRAMMAR_DIR} COMMAND_ERROR_IS_FATAL ANY)
file(GLOB EXTRA ${OUT}/*.interp ${OUT}/*.tokens)
if(EXTRA)
  file(REMOVE ${EXTRA})
endif()
file(SHA256 ${GRAMMAR} HASH)
file(WRITE ${OUT}/Hspmd.g4.sha256 "${HASH}\n")
